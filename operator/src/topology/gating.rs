//! Client endpoint gating (multi-site topology document: "Reader client endpoints have stricter
//! health gating than other site Services"): whether a site's pod carries the `healthy` label
//! its client Service (and the `-replicas` Service) select on.
//!
//! Pure: one site's facts, the active site and the lag thresholds in, a verdict out.
//!
//! - The active site is healthy when it answers writable.
//! - A follower is healthy when it answers read-only, both replication threads run and its
//!   `Seconds_Behind_Source` is known and within the threshold: `spec.replication.
//!   readOnlyMaxLagSeconds` for readers (default 30 s, the topology document's example),
//!   `spec.replication.maxLagSeconds` for every other follower (default 300 s, the CRD's).
//!   A stopped or broken channel, an unknown lag (`NULL` while the receiver reconnects), no
//!   channel at all, or a site that does not answer: not healthy.
//! - `offline_mode` (an in-place restore's fence): not healthy.

use bloodraven_crd::group::{ReplicationSpec, SiteState};
use bloodraven_facts::SiteFacts;

/// The default of `spec.replication.maxLagSeconds` (the CRD's).
pub const DEFAULT_MAX_LAG_SECONDS: u64 = 300;
/// The default of `spec.replication.readOnlyMaxLagSeconds` for readers.
pub const DEFAULT_READER_MAX_LAG_SECONDS: u64 = 30;

/// The lag thresholds of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LagThresholds {
    /// Followers that are not readers.
    pub follower: u64,
    /// Readers (role ReadOnly).
    pub reader: u64,
}

impl Default for LagThresholds {
    fn default() -> Self {
        Self { follower: DEFAULT_MAX_LAG_SECONDS, reader: DEFAULT_READER_MAX_LAG_SECONDS }
    }
}

impl LagThresholds {
    /// The thresholds `spec.replication` sets (defaults for what it leaves out; a negative
    /// value, which the CRD refuses, counts as 0). A reader threshold above the follower
    /// threshold is capped by it: readers are never gated more loosely.
    pub fn from_spec(spec: Option<&ReplicationSpec>) -> Self {
        let seconds = |value: Option<i64>, default: u64| {
            value.map_or(default, |value| u64::try_from(value).unwrap_or(0))
        };
        let follower = seconds(spec.and_then(|spec| spec.max_lag_seconds), DEFAULT_MAX_LAG_SECONDS);
        let reader = seconds(
            spec.and_then(|spec| spec.read_only_max_lag_seconds),
            DEFAULT_READER_MAX_LAG_SECONDS,
        );
        Self { follower, reader: reader.min(follower) }
    }
}

/// Whether `fact`'s pod is fit for client traffic (the `healthy` label).
pub fn endpoint_healthy(fact: &SiteFacts, active: Option<&str>, thresholds: LagThresholds) -> bool {
    if fact.offline_mode {
        return false;
    }
    if active == Some(fact.name.as_str()) {
        return fact.state == SiteState::Writable;
    }
    if fact.state != SiteState::ReadOnly {
        return false;
    }
    let Some(replica) = fact.replica.as_ref() else { return false };
    let threshold = if fact.is_reader() { thresholds.reader } else { thresholds.follower };
    replica.io_running
        && replica.sql_running
        && replica
            .seconds_behind_source
            .is_some_and(|lag| u64::try_from(lag).is_ok_and(|lag| lag <= threshold))
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::group::SiteRole;
    use bloodraven_facts::ReplicaObservation;

    use super::*;

    fn site(role: SiteRole, state: SiteState, lag: Option<i64>, running: bool) -> SiteFacts {
        SiteFacts {
            name: "s".into(),
            role,
            state,
            unreachable: None,
            offline_mode: false,
            gtid_executed: None,
            replica: Some(ReplicaObservation {
                io_running: running,
                sql_running: running,
                seconds_behind_source: lag,
                ..ReplicaObservation::default()
            }),
            observed_at: None,
        }
    }

    #[test]
    fn readers_are_gated_on_the_stricter_threshold() {
        let t = LagThresholds { follower: 300, reader: 30 };
        let reader = |lag| site(SiteRole::ReadOnly, SiteState::ReadOnly, lag, true);
        assert!(endpoint_healthy(&reader(Some(30)), Some("p"), t));
        assert!(!endpoint_healthy(&reader(Some(31)), Some("p"), t), "over the reader threshold");
        assert!(!endpoint_healthy(&reader(None), Some("p"), t), "unknown lag");
        let dr = |lag| site(SiteRole::DisasterRecovery, SiteState::ReadOnly, lag, true);
        assert!(endpoint_healthy(&dr(Some(31)), Some("p"), t), "followers use maxLagSeconds");
        assert!(!endpoint_healthy(&dr(Some(301)), Some("p"), t));
    }

    #[test]
    fn stopped_replication_or_no_answer_is_not_healthy() {
        let t = LagThresholds::default();
        assert!(!endpoint_healthy(
            &site(SiteRole::ReadOnly, SiteState::ReadOnly, Some(0), false),
            Some("p"),
            t
        ));
        let mut no_channel = site(SiteRole::PrimaryCandidate, SiteState::ReadOnly, Some(0), true);
        no_channel.replica = None;
        assert!(!endpoint_healthy(&no_channel, Some("p"), t));
        for state in [SiteState::Unreachable, SiteState::Unknown, SiteState::Writable] {
            let fact = site(SiteRole::ReadOnly, state.clone(), Some(0), true);
            assert!(!endpoint_healthy(&fact, Some("p"), t), "{state:?}");
        }
        let mut offline = site(SiteRole::ReadOnly, SiteState::ReadOnly, Some(0), true);
        offline.offline_mode = true;
        assert!(!endpoint_healthy(&offline, Some("p"), t));
    }

    #[test]
    fn the_active_site_is_healthy_when_writable() {
        let t = LagThresholds::default();
        let mut primary = site(SiteRole::PrimaryCandidate, SiteState::Writable, None, false);
        primary.replica = None;
        assert!(endpoint_healthy(&primary, Some("s"), t));
        primary.state = SiteState::ReadOnly;
        assert!(!endpoint_healthy(&primary, Some("s"), t), "a fenced active site takes no traffic");
    }

    #[test]
    fn thresholds_come_from_the_spec_and_readers_are_never_looser() {
        assert_eq!(LagThresholds::from_spec(None), LagThresholds { follower: 300, reader: 30 });
        let spec = ReplicationSpec { max_lag_seconds: Some(20), read_only_max_lag_seconds: None };
        assert_eq!(
            LagThresholds::from_spec(Some(&spec)),
            LagThresholds { follower: 20, reader: 20 }
        );
        let spec = ReplicationSpec { max_lag_seconds: None, read_only_max_lag_seconds: Some(-5) };
        assert_eq!(
            LagThresholds::from_spec(Some(&spec)),
            LagThresholds { follower: 300, reader: 0 }
        );
    }
}
