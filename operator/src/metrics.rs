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
        Self {
            registry: Mutex::new(registry),
            polls,
            poll_seconds,
            actions,
            action_failures,
            alerts,
            site_up,
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
}
