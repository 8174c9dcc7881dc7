//! The topology manager's Events and Prometheus metrics (issue 12): what each means and what to
//! do, for the engineer who meets one at 3 a.m. and for dashboards and alerts.
//!
//! Names are upstream's where the older implementation has one (research `bloodraven-api.md`
//! §8 for Events, `bloodraven-tools.md` §6 for metrics): [`Origin::Upstream`]. The rest are
//! ours: [`Origin::Extension`]. The operator's tests check that every reason and metric it
//! emits is listed here and in its README, and that everything listed here is emitted.

/// Where a name comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The older public implementation uses the same name.
    Upstream,
    /// Ours: the spec and upstream name none for it.
    Extension,
}

/// A Kubernetes Event the topology manager publishes on a `MysqlFailoverGroup`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventEntry {
    /// `reason` (also the Event's `action`).
    pub reason: &'static str,
    /// `Warning` (true) or `Normal`.
    pub warning: bool,
    /// When it is published.
    pub when: &'static str,
    /// What to do.
    pub remedy: &'static str,
    /// Where the name comes from.
    pub origin: Origin,
}

/// What a metric measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetricType {
    /// Only grows.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Buckets of observations.
    Histogram,
}

/// A Prometheus metric of the operator's `/metrics`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MetricEntry {
    /// The name as scraped (counters end in `_total`).
    pub name: &'static str,
    /// Its type.
    pub kind: MetricType,
    /// Its labels.
    pub labels: &'static [&'static str],
    /// What it counts or shows.
    pub meaning: &'static str,
    /// Where the name comes from.
    pub origin: Origin,
}

const fn event(
    reason: &'static str,
    warning: bool,
    origin: Origin,
    when: &'static str,
    remedy: &'static str,
) -> EventEntry {
    EventEntry { reason, warning, when, remedy, origin }
}

use Origin::{Extension, Upstream};

/// Every Event reason of the topology manager.
pub static EVENTS: &[EventEntry] = &[
    event(
        "FailoverExecuted",
        true,
        Upstream,
        "An emergency failover promoted a PrimaryCandidate after the active site was unreachable for spec.failureThreshold polls.",
        "Check why the old primary failed; it rejoins as a follower once it answers. Read status.lastFailover and the ledger of lost writes, if any.",
    ),
    event(
        "PrimaryPromoted",
        false,
        Extension,
        "A site was made writable other than by an emergency failover: the first primary of a new group, or the re-assert of a read-only active site.",
        "Nothing.",
    ),
    event(
        "SiteFenced",
        true,
        Extension,
        "A writable site that may not be (a DisasterRecovery or ReadOnly site, or another non-candidate writer) was set super_read_only=ON.",
        "Find what made the site writable (a human, a restore, a script) and stop it; the operator fences it on every poll.",
    ),
    event(
        "SplitBrainDetected",
        true,
        Upstream,
        "More than one site was writable: the sitePriorities winner stayed writable and the other was fenced, or no winner could be named (alert only).",
        "Compare the sites' executed GTID sets; reconcile writes the fenced site took. With no winner, set spec.splitBrainPolicy.sitePriorities or fence one by hand.",
    ),
    event(
        "FollowerRepointed",
        false,
        Extension,
        "A follower was pointed at the active primary (CHANGE REPLICATION SOURCE with auto-position) after its containment was checked twice.",
        "Nothing.",
    ),
    event(
        "NoPrimaryDetected",
        true,
        Upstream,
        "The active site failed and no PrimaryCandidate can be promoted: the operator takes no action.",
        "Restore a PrimaryCandidate site, or promote one by hand; DisasterRecovery sites are never promoted automatically.",
    ),
    event(
        "CandidatesIncomparable",
        true,
        Extension,
        "A failover is due but the candidates' executed GTID sets are incomparable (each holds transactions the other lacks): the operator does not guess.",
        "Choose the site whose transactions to keep and promote it with a planned failover; reconcile the other's transactions by hand.",
    ),
    event(
        "FailoverCooldown",
        true,
        Extension,
        "A failover is due but the anti-flap cooldown (spec.failoverCooldown after the last failover) has not run out.",
        "Wait for the cooldown, or promote by hand if the outage cannot wait.",
    ),
    event(
        "AutomationDeferred",
        true,
        Extension,
        "Automatic actions are deferred: an automation hold or a planned failover owns the group.",
        "Finish or acknowledge the planned failover (see its status block); automation resumes by itself.",
    ),
    event(
        "FollowerDiverged",
        true,
        Extension,
        "A follower holds transactions the primary lacks (sourceConvergenceState Blocked, reason GTIDDiverged); it is not repointed and its transactions are kept.",
        "Reclone the follower, or apply its divergent transactions to the primary by hand, then let it repoint.",
    ),
    event(
        "ReassertBlocked",
        true,
        Extension,
        "The active site is read-only and other sites hold transactions it lacks, so it is not made writable again.",
        "Promote the freshest site with a planned failover.",
    ),
    event(
        "RestoreInPlaceRunning",
        false,
        Extension,
        "A full-instance in-place restore runs: the topology manager is frozen (no promotion, clone or recovery action); it keeps the offline_mode fence and the held receivers.",
        "Nothing; watch status.restoreInPlace. The freeze ends when the run leaves Fencing, Restoring and Resuming.",
    ),
    event(
        "ActiveSiteUnreachable",
        true,
        Extension,
        "The active site did not answer this poll; a failover follows at spec.failureThreshold consecutive polls.",
        "Check the site's pod and network; nothing to do if it recovers.",
    ),
    event(
        "ActiveSiteNotCandidate",
        true,
        Extension,
        "The active site is no longer a PrimaryCandidate in the spec.",
        "Run a planned failover to a candidate, or restore the site's role.",
    ),
    event(
        "ActiveSiteUnknown",
        true,
        Extension,
        "The active site answered but could not be classified.",
        "Check the operator's MySQL credentials and the site's logs.",
    ),
    event(
        "DNSRecordUpdated",
        false,
        Extension,
        "The DNSEndpoint of spec.dns.hostname was written: it names the writable active site now (or was repaired after drift).",
        "Nothing; ExternalDNS publishes it to the DNS provider.",
    ),
    event(
        "DNSUpdateFailed",
        true,
        Extension,
        "The DNSEndpoint could not be read or written, or spec.dns cannot be published (bad hostname, TTL or loadBalancerIP); the record stays as it was.",
        "Read the Event's message: fix the named spec field, install the DNSEndpoint CRD or grant the operator get, create and patch on dnsendpoints.externaldns.k8s.io.",
    ),
    event(
        "InvalidSpec",
        true,
        Extension,
        "The group's spec has a problem the CRD cannot catch (fewer than two PrimaryCandidates, unknown sitePriorities names, duplicate serverIDs, bad durations or thresholds): Ready=False, and the operator takes no action on the group.",
        "Fix the fields the message names; the operator acts again on the next poll.",
    ),
    event(
        "GroupUnreadable",
        true,
        Extension,
        "The stored group does not read as a MysqlFailoverGroup (a field of the wrong type, a missing required field: a hand edit or a CRD skew); the message names the path. The operator takes no action on it; other groups are unaffected.",
        "Fix the named field (status fields with kubectl edit --subresource=status), or run an operator version that knows it.",
    ),
];

const fn metric(
    name: &'static str,
    kind: MetricType,
    labels: &'static [&'static str],
    origin: Origin,
    meaning: &'static str,
) -> MetricEntry {
    MetricEntry { name, kind, labels, meaning, origin }
}

const GROUP: &[&str] = &["namespace", "group"];
const KIND: &[&str] = &["namespace", "group", "kind"];
const SITE: &[&str] = &["namespace", "group", "site"];
const TARGET_SITE: &[&str] = &["namespace", "group", "target_site"];
const QUEUED_SITE: &[&str] = &["namespace", "group", "site", "phase"];

/// Every metric of the operator's `/metrics`.
pub static METRICS: &[MetricEntry] = &[
    metric(
        "bloodraven_topology_polls_total",
        MetricType::Counter,
        GROUP,
        Extension,
        "Topology polls run.",
    ),
    metric(
        "bloodraven_topology_poll_duration_seconds",
        MetricType::Histogram,
        GROUP,
        Extension,
        "One poll: observe, plan, apply, publish.",
    ),
    metric(
        "bloodraven_topology_actions_total",
        MetricType::Counter,
        KIND,
        Extension,
        "Steps applied, by kind: failover (emergency promotion), promote, fence, repoint, block (a diverged follower). kind=failover counts the same promotions as bloodraven_failovers_total.",
    ),
    metric(
        "bloodraven_topology_action_failures_total",
        MetricType::Counter,
        KIND,
        Extension,
        "Steps that failed, by kind (retried on the next poll).",
    ),
    metric(
        "bloodraven_topology_alerts_total",
        MetricType::Counter,
        KIND,
        Extension,
        "Alerts raised, by Event reason (counted when the set of alerts changes): NoPrimaryDetected, SplitBrainDetected, FailoverCooldown, FollowerDiverged and the others of EVENTS.",
    ),
    metric(
        "bloodraven_site_up",
        MetricType::Gauge,
        SITE,
        Extension,
        "1 when the site answered the last poll.",
    ),
    metric(
        "bloodraven_failovers_total",
        MetricType::Counter,
        TARGET_SITE,
        Upstream,
        "Emergency failovers that promoted the target site, once per promotion (upstream labels it by target_site only; planned failovers count in bloodraven_planned_failovers_total instead).",
    ),
    metric(
        "bloodraven_dns_flips_total",
        MetricType::Counter,
        SITE,
        Upstream,
        "The DNS record of spec.dns.hostname moved to the site (upstream labels it by site only).",
    ),
    metric(
        "bloodraven_dns_update_failures_total",
        MetricType::Counter,
        GROUP,
        Extension,
        "DNS publications that failed or could not be built from the spec (the DNSUpdateFailed Event).",
    ),
    metric(
        "bloodraven_invalid_spec",
        MetricType::Gauge,
        GROUP,
        Extension,
        "1 while the group's spec is refused (Ready=False, reason InvalidSpec).",
    ),
    metric(
        "bloodraven_restore_reclone_pending",
        MetricType::Gauge,
        QUEUED_SITE,
        Extension,
        "1 while the site is queued for its post-restore reclone (status.restoreReclones), by the queue's phase (Armed, Draining, Held); exclude queued sites from replication alerts with it.",
    ),
];

/// The Event entry of `reason`.
pub fn event_entry(reason: &str) -> Option<&'static EventEntry> {
    EVENTS.iter().find(|entry| entry.reason == reason)
}

/// The metric entry of `name`.
pub fn metric_entry(name: &str) -> Option<&'static MetricEntry> {
    METRICS.iter().find(|entry| entry.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_texts_are_sentences() {
        let mut reasons: Vec<&str> = EVENTS.iter().map(|entry| entry.reason).collect();
        reasons.sort_unstable();
        reasons.dedup();
        assert_eq!(reasons.len(), EVENTS.len(), "a reason is listed twice");
        let mut names: Vec<&str> = METRICS.iter().map(|entry| entry.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), METRICS.len(), "a metric is listed twice");
        let texts = EVENTS
            .iter()
            .flat_map(|entry| [entry.when, entry.remedy])
            .chain(METRICS.iter().map(|entry| entry.meaning));
        for text in texts {
            assert!(text.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit()), "{text}");
            assert!(text.ends_with('.'), "{text}");
        }
        for entry in METRICS {
            assert!(entry.name.starts_with("bloodraven_"), "{}", entry.name);
            assert_eq!(
                entry.name.ends_with("_total"),
                entry.kind == MetricType::Counter,
                "{}: counters, and only counters, end in _total",
                entry.name
            );
        }
        assert_eq!(event_entry("NoPrimaryDetected").map(|e| e.origin), Some(Upstream));
        assert!(metric_entry("bloodraven_dns_flips_total").is_some());
    }
}
