//! Prometheus metrics of the topology manager (`/metrics`, OpenMetrics text).
//!
//! | Metric | Labels | Meaning |
//! | --- | --- | --- |
//! | `bloodraven_topology_polls_total` | namespace, group | polls run |
//! | `bloodraven_topology_poll_duration_seconds` | namespace, group | one poll: observe, plan, apply, publish |
//! | `bloodraven_topology_actions_total` | namespace, group, action | steps applied: `failover`, `promote`, `fence`, `repoint`, `block` |
//! | `bloodraven_topology_action_failures_total` | namespace, group, action | steps that failed (retried next poll) |
//! | `bloodraven_topology_alerts_total` | namespace, group, alert | alerts raised (counted when the set of alerts changes): `NoPrimary`, `SplitBrainUnresolved`, `FollowerDiverged`, `Cooldown`, … |
//! | `bloodraven_site_up` | namespace, group, site | 1 when the site answered the last poll |
//! | `bloodraven_failovers_total` | namespace, group, target_site | emergency promotions that succeeded (upstream's name; planned failovers are not counted) |
//! | `bloodraven_dns_flips_total` | namespace, group, site | the DNS record moved to the site (upstream's name) |
//! | `bloodraven_dns_update_failures_total` | namespace, group | a DNS publication failed or the spec cannot be published |
//! | `bloodraven_invalid_spec` | namespace, group | 1 while the group's spec is refused (`InvalidSpec`) |
//! | `bloodraven_planned_failovers_total` | namespace, group, target_site, result | planned-failover runs ended, by kebab-case outcome |
//! | `bloodraven_planned_failover_duration_seconds` | namespace, group, target_site | a run's startTime to its end |
//! | `bloodraven_planned_failover_lag_wait_seconds` | namespace, group, target_site | a run's lag wait, until the target applied the fenced set |
//! | `bloodraven_planned_failovers_deferred_total` | namespace, group, reason | runs deferred (`CooldownActive`, `DeploymentHold`) |
//! | `bloodraven_dragonfly_promotions_total` | namespace, group, target_site, result | Dragonfly promotions (registered; Dragonfly coordination is not built, so never counted) |
//!
//! [`NAMES`] lists every metric name; the catalog (`bloodraven_crd::catalog::topology`) and the
//! operator README list the same (a test checks both).

use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// A group.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupLabels {
    /// Namespace.
    pub namespace: String,
    /// Group name.
    pub group: String,
}

/// A group and an action or alert name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// Namespace.
    pub namespace: String,
    /// Group name.
    pub group: String,
    /// The action or alert.
    pub kind: String,
}

/// A site of a group.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SiteLabels {
    /// Namespace.
    pub namespace: String,
    /// Group name.
    pub group: String,
    /// Site name.
    pub site: String,
}

/// The target site of a failover.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetSiteLabels {
    /// Namespace.
    pub namespace: String,
    /// Group name.
    pub group: String,
    /// The promoted site.
    pub target_site: String,
}

/// A site queued for its post-restore reclone, by the queue's phase.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueuedSiteLabels {
    /// Namespace.
    pub namespace: String,
    /// Group name.
    pub group: String,
    /// Site name.
    pub site: String,
    /// `Armed`, `Draining` or `Held`.
    pub phase: String,
}

/// A planned-failover run's end, by target site and kebab-case outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// Namespace.
    pub namespace: String,
    /// Group name.
    pub group: String,
    /// The requested target.
    pub target_site: String,
    /// The outcome (`succeeded`, `not-started`, …) or Dragonfly's result.
    pub result: String,
}

/// A group and a reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    /// Namespace.
    pub namespace: String,
    /// Group name.
    pub group: String,
    /// The reason.
    pub reason: String,
}

/// Every metric this registry exposes (the names as scraped, counters with `_total`).
pub const NAMES: &[&str] = &[
    "bloodraven_topology_polls_total",
    "bloodraven_topology_poll_duration_seconds",
    "bloodraven_topology_actions_total",
    "bloodraven_topology_action_failures_total",
    "bloodraven_topology_alerts_total",
    "bloodraven_site_up",
    "bloodraven_failovers_total",
    "bloodraven_dns_flips_total",
    "bloodraven_dns_update_failures_total",
    "bloodraven_invalid_spec",
    "bloodraven_planned_failovers_total",
    "bloodraven_planned_failover_duration_seconds",
    "bloodraven_planned_failover_lag_wait_seconds",
    "bloodraven_planned_failovers_deferred_total",
    "bloodraven_dragonfly_promotions_total",
    "bloodraven_restore_reclone_pending",
];

/// Planned-failover durations: 0.1 s to about 55 minutes (a lag wait may last an hour).
fn planned_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.1, 2.0, 16))
}

fn poll_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 12))
}

/// The operator's metrics and their registry.
pub struct Metrics {
    registry: Mutex<Registry>,
    /// Polls run.
    pub polls: Family<GroupLabels, Counter>,
    /// Poll durations.
    pub poll_seconds: Family<GroupLabels, Histogram, fn() -> Histogram>,
    /// Steps applied.
    pub actions: Family<KindLabels, Counter>,
    /// Steps failed.
    pub action_failures: Family<KindLabels, Counter>,
    /// Alerts raised.
    pub alerts: Family<KindLabels, Counter>,
    /// Site answered the last poll.
    pub site_up: Family<SiteLabels, Gauge>,
    /// Emergency promotions that succeeded, by target site.
    pub failovers: Family<TargetSiteLabels, Counter>,
    /// DNS record moves, by the site it names now.
    pub dns_flips: Family<SiteLabels, Counter>,
    /// DNS publications that failed.
    pub dns_failures: Family<GroupLabels, Counter>,
    /// 1 while the group's spec is refused.
    pub invalid_spec: Family<GroupLabels, Gauge>,
    /// Planned-failover runs ended.
    pub planned_failovers: Family<ResultLabels, Counter>,
    /// Planned-failover run durations.
    pub planned_duration: Family<TargetSiteLabels, Histogram, fn() -> Histogram>,
    /// Planned-failover lag waits.
    pub planned_lag_wait: Family<TargetSiteLabels, Histogram, fn() -> Histogram>,
    /// Planned-failover runs deferred.
    pub planned_deferred: Family<ReasonLabels, Counter>,
    /// Dragonfly promotions (never counted: Dragonfly coordination is not built).
    pub dragonfly_promotions: Family<ResultLabels, Counter>,
    /// 1 per site queued for its post-restore reclone (`status.restoreReclones`).
    pub restore_reclone_pending: Family<QueuedSiteLabels, Gauge>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("bloodraven");
        let polls = Family::<GroupLabels, Counter>::default();
        let poll_seconds =
            Family::<GroupLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                poll_histogram,
            );
        let actions = Family::<KindLabels, Counter>::default();
        let action_failures = Family::<KindLabels, Counter>::default();
        let alerts = Family::<KindLabels, Counter>::default();
        let site_up = Family::<SiteLabels, Gauge>::default();
        registry.register("topology_polls", "Topology polls run", polls.clone());
        registry.register(
            "topology_poll_duration_seconds",
            "One topology poll: observe, plan, apply, publish",
            poll_seconds.clone(),
        );
        registry.register("topology_actions", "Topology steps applied", actions.clone());
        registry.register(
            "topology_action_failures",
            "Topology steps that failed (retried on the next poll)",
            action_failures.clone(),
        );
        registry.register("topology_alerts", "Topology alerts raised", alerts.clone());
        registry.register("site_up", "1 when the site answered the last poll", site_up.clone());
        let failovers = Family::<TargetSiteLabels, Counter>::default();
        registry.register(
            "failovers",
            "Emergency failovers: promotions of the target site after the active site failed",
            failovers.clone(),
        );
        let dns_flips = Family::<SiteLabels, Counter>::default();
        let dns_failures = Family::<GroupLabels, Counter>::default();
        let invalid_spec = Family::<GroupLabels, Gauge>::default();
        registry.register(
            "dns_flips",
            "The group's DNS record moved to the site",
            dns_flips.clone(),
        );
        registry.register(
            "dns_update_failures",
            "DNS publications that failed or could not be built from the spec",
            dns_failures.clone(),
        );
        registry.register(
            "invalid_spec",
            "1 while the group's spec is refused (Ready=False, InvalidSpec)",
            invalid_spec.clone(),
        );
        let planned_failovers = Family::<ResultLabels, Counter>::default();
        registry.register(
            "planned_failovers",
            "Planned-failover runs ended, by target site and outcome",
            planned_failovers.clone(),
        );
        let planned_duration =
            Family::<TargetSiteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                planned_histogram,
            );
        registry.register(
            "planned_failover_duration_seconds",
            "A planned-failover run from its startTime to its end",
            planned_duration.clone(),
        );
        let planned_lag_wait =
            Family::<TargetSiteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                planned_histogram,
            );
        registry.register(
            "planned_failover_lag_wait_seconds",
            "A planned-failover run's wait for the target to apply the fenced set",
            planned_lag_wait.clone(),
        );
        let planned_deferred = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "planned_failovers_deferred",
            "Planned-failover runs deferred (CooldownActive, DeploymentHold)",
            planned_deferred.clone(),
        );
        let dragonfly_promotions = Family::<ResultLabels, Counter>::default();
        registry.register(
            "dragonfly_promotions",
            "Dragonfly promotions of a planned failover (Dragonfly coordination is not built)",
            dragonfly_promotions.clone(),
        );
        let restore_reclone_pending = Family::<QueuedSiteLabels, Gauge>::default();
        registry.register(
            "restore_reclone_pending",
            "1 while the site is queued for its post-restore reclone, by the queue's phase",
            restore_reclone_pending.clone(),
        );
        Self {
            registry: Mutex::new(registry),
            restore_reclone_pending,
            planned_failovers,
            planned_duration,
            planned_lag_wait,
            planned_deferred,
            dragonfly_promotions,
            polls,
            poll_seconds,
            actions,
            action_failures,
            alerts,
            site_up,
            failovers,
            dns_flips,
            dns_failures,
            invalid_spec,
        }
    }
}

impl Metrics {
    /// The OpenMetrics text of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Ok(registry) = self.registry.lock() {
            let _ = encode(&mut out, &registry);
        }
        out
    }

    /// Counts one `kind` of `family` for a group.
    pub fn count(family: &Family<KindLabels, Counter>, namespace: &str, group: &str, kind: &str) {
        family
            .get_or_create(&KindLabels {
                namespace: namespace.to_owned(),
                group: group.to_owned(),
                kind: kind.to_owned(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_actions_appear_in_the_text() {
        let metrics = Metrics::default();
        Metrics::count(&metrics.actions, "orders", "orders", "failover");
        Metrics::count(&metrics.actions, "orders", "orders", "failover");
        let text = metrics.render();
        assert!(
            text.contains(
                r#"bloodraven_topology_actions_total{namespace="orders",group="orders",kind="failover"} 2"#
            ),
            "{text}"
        );
        assert!(text.contains("# TYPE bloodraven_topology_actions counter"), "{text}");
    }

    #[test]
    fn failovers_are_counted_by_target_site_under_upstreams_name() {
        let metrics = Metrics::default();
        let labels = TargetSiteLabels {
            namespace: "orders".to_owned(),
            group: "orders".to_owned(),
            target_site: "pdx".to_owned(),
        };
        metrics.failovers.get_or_create(&labels).inc();
        let text = metrics.render();
        assert!(
            text.contains(
                r#"bloodraven_failovers_total{namespace="orders",group="orders",target_site="pdx"} 1"#
            ),
            "{text}"
        );
    }

    /// String literals of Rust source before its `#[cfg(test)]` module (comments skipped).
    fn literals(source: &str) -> Vec<String> {
        let source = source.split("#[cfg(test)]").next().unwrap_or_default();
        let mut out = Vec::new();
        let mut chars = source.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '/' if chars.peek() == Some(&'/') => {
                    for c in chars.by_ref() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                '\'' => {
                    // A char literal ('"', '\'') or a lifetime: skip to its end.
                    let mut taken = String::new();
                    while let Some(&next) = chars.peek() {
                        if next.is_alphanumeric() || next == '_' {
                            taken.push(next);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    if taken.is_empty() {
                        if chars.next() == Some('\\') {
                            chars.next();
                        }
                        chars.next();
                    }
                }
                '"' => {
                    let mut text = String::new();
                    while let Some(c) = chars.next() {
                        match c {
                            '\\' => {
                                chars.next();
                            }
                            '"' => break,
                            c => text.push(c),
                        }
                    }
                    out.push(text);
                }
                _ => {}
            }
        }
        out
    }

    /// A literal shaped like an Event reason: `CamelCase`, letters only, two humps or more.
    fn reason_like(text: &str) -> bool {
        text.len() >= 6
            && text.starts_with(|c: char| c.is_ascii_uppercase())
            && text.chars().all(|c| c.is_ascii_alphabetic())
            && text.chars().filter(char::is_ascii_uppercase).count() >= 2
    }

    /// Every Event reason and metric the operator emits is in the catalog
    /// (`bloodraven_crd::catalog::topology`) and in the README, and vice versa.
    #[test]
    fn events_and_metrics_match_the_catalog_and_the_readme() {
        use bloodraven_crd::catalog::topology::{EVENTS, METRICS};
        let root = env!("CARGO_MANIFEST_DIR");
        // Reason-shaped literals that are not Event reasons: condition reasons, kinds, roles.
        let not_events = [
            "MysqlFailoverGroup",
            "DNSEndpoint",
            "SecretNotFound",
            "NoPrimary",
            "PrimaryCandidate",
            "DisasterRecovery",
            "ReadOnly",
        ];
        let mut emitted = std::collections::BTreeSet::new();
        for file in ["manager", "dns", "publish", "validate", "controller", "status"] {
            let source = std::fs::read_to_string(format!("{root}/src/{file}.rs")).unwrap();
            for literal in literals(&source) {
                if reason_like(&literal) && !not_events.contains(&literal.as_str()) {
                    emitted.insert(literal);
                }
            }
        }
        let catalogued: std::collections::BTreeSet<String> =
            EVENTS.iter().map(|entry| entry.reason.to_owned()).collect();
        assert_eq!(
            emitted, catalogued,
            "Event reasons in operator/src (left) and in the catalog (right) differ"
        );
        let planned = bloodraven_crd::catalog::planned_failover_run::METRICS;
        let mut names: Vec<&str> = METRICS
            .iter()
            .map(|entry| entry.name)
            .chain(planned.iter().map(|entry| entry.name))
            .collect();
        names.sort_unstable();
        let mut ours = NAMES.to_vec();
        ours.sort_unstable();
        assert_eq!(ours, names, "metrics::NAMES (left) and the catalogs (right) differ");

        let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
        for entry in EVENTS {
            assert!(
                readme.contains(&format!("`{}`", entry.reason)),
                "README lacks {}",
                entry.reason
            );
        }
        for name in NAMES {
            assert!(readme.contains(&format!("| `{name}`")), "README's table lacks {name}");
        }
        for line in readme.lines().filter(|line| line.starts_with("| `bloodraven_")) {
            let name = line.trim_start_matches("| `").split('`').next().unwrap_or_default();
            assert!(NAMES.contains(&name), "README lists {name}, which the operator lacks");
        }
    }

    /// `NAMES` is exactly what the registry exposes once every family has a sample.
    #[test]
    fn names_are_every_registered_metric() {
        let metrics = Metrics::default();
        let group = GroupLabels { namespace: "n".to_owned(), group: "g".to_owned() };
        let site =
            SiteLabels { namespace: "n".to_owned(), group: "g".to_owned(), site: "s".to_owned() };
        metrics.polls.get_or_create(&group).inc();
        metrics.poll_seconds.get_or_create(&group).observe(0.1);
        for family in [&metrics.actions, &metrics.action_failures, &metrics.alerts] {
            Metrics::count(family, "n", "g", "k");
        }
        metrics.site_up.get_or_create(&site).set(1);
        metrics
            .failovers
            .get_or_create(&TargetSiteLabels {
                namespace: "n".to_owned(),
                group: "g".to_owned(),
                target_site: "s".to_owned(),
            })
            .inc();
        metrics.dns_flips.get_or_create(&site).inc();
        metrics.dns_failures.get_or_create(&group).inc();
        metrics.invalid_spec.get_or_create(&group).set(1);
        let target = TargetSiteLabels {
            namespace: "n".to_owned(),
            group: "g".to_owned(),
            target_site: "s".to_owned(),
        };
        let result = ResultLabels {
            namespace: "n".to_owned(),
            group: "g".to_owned(),
            target_site: "s".to_owned(),
            result: "succeeded".to_owned(),
        };
        metrics.planned_failovers.get_or_create(&result).inc();
        metrics.planned_duration.get_or_create(&target).observe(1.0);
        metrics.planned_lag_wait.get_or_create(&target).observe(1.0);
        metrics
            .planned_deferred
            .get_or_create(&ReasonLabels {
                namespace: "n".to_owned(),
                group: "g".to_owned(),
                reason: "CooldownActive".to_owned(),
            })
            .inc();
        metrics.dragonfly_promotions.get_or_create(&result).inc();
        metrics
            .restore_reclone_pending
            .get_or_create(&QueuedSiteLabels {
                namespace: "n".to_owned(),
                group: "g".to_owned(),
                site: "s".to_owned(),
                phase: "Held".to_owned(),
            })
            .set(1);
        let text = metrics.render();
        let mut scraped: Vec<&str> = text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| line.split(['{', ' ']).next())
            .map(|name| {
                ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|suffix| name.strip_suffix(suffix))
                    .filter(|_| name.contains("_seconds"))
                    .unwrap_or(name)
            })
            .collect();
        scraped.sort_unstable();
        scraped.dedup();
        let mut names = NAMES.to_vec();
        names.sort_unstable();
        assert_eq!(scraped, names);
    }
}
