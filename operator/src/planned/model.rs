//! The values the decision core decides from: the run's durable record and this process's own
//! memory of it ([`RunRecord`]), and one pass's live view of the group ([`Observation`]).

use std::collections::BTreeMap;

use bloodraven_crd::group::{
    OnCooldown, PlannedFailoverHold, PlannedFailoverStatus, PlannedFailoverWarning, SiteRole,
};
use jiff::{SignedDuration, Timestamp};

/// The run as the next pass finds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunRecord {
    /// `status.plannedFailover` as the uncached read returned it.
    pub block: Option<PlannedFailoverStatus>,
    /// `status.plannedFailoverHold`.
    pub hold: Option<PlannedFailoverHold>,
    /// `AutomaticFailoverHeld` is True (with or without a `plannedFailoverHold`).
    pub hold_condition: bool,
    /// This operator process's own knowledge of the run; [`Memory::default`] after a restart.
    pub memory: Memory,
}

/// What this process itself did and saw for the run it names. Never durable: a restarted
/// process starts from [`Memory::default`] and re-derives what it needs from live reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    /// The run this memory belongs to; another run's memory is discarded.
    pub run_id: Option<String>,
    /// The `@@server_uuid` this process sent `SET GLOBAL super_read_only=ON` to (by its own
    /// record of the statement, not an attempt).
    pub fence_sent_to: Option<String>,
    /// A `super_read_only=OFF` may have reached the target (this process sent it, or a
    /// restarted process found the target in a state only the statement explains).
    pub write_possibly_sent: bool,
    /// The promotion statements this process sent failed before any write.
    pub promotion_failing: bool,
    /// This process confirmed the promotion by live reads, at this time.
    pub confirmed_at: Option<Timestamp>,
    /// The promotion was recorded in the topology manager, published and marked confirmed:
    /// the claim has been released.
    pub claim_released: bool,
    /// The DNS publication failed with this error.
    pub dns_error: Option<String>,
    /// The first failed source observation of the current loss window.
    pub source_failing_since: Option<Timestamp>,
    /// The first failed target observation (or identity read) of the current loss window.
    pub target_failing_since: Option<Timestamp>,
    /// The latest admission wait reason and detail this process wrote.
    pub last_wait: Option<(String, String)>,
    /// The drain's latest count of application sessions, or the error of its query.
    pub drain_remaining: Option<Result<u32, String>>,
    /// When this process first announced KillAppConnections for the run.
    pub drain_first_kill: Option<Timestamp>,
    /// The target was set back to `super_read_only=ON` and read back during the rollback.
    pub target_refenced: bool,
    /// The unfence was sent to the source during the rollback.
    pub unfence_sent: bool,
    /// The last time the hold reminder Event was emitted.
    pub hold_reminded_at: Option<Timestamp>,
    /// The manager-absence Warning Event was emitted for this run.
    pub manager_absent_warned: bool,
    /// The run's warnings gathered so far (UnreachablePeers, ...).
    pub warnings: Vec<PlannedFailoverWarning>,
    /// This process already logged that it confirms the recorded side effect.
    pub confirmed_side_effect: bool,
}

/// A site's live answer at one pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// No answer (refused, timed out, an error answer): it may still be writable.
    Unreadable,
    /// What it said.
    Answered(Reading),
}

impl Probe {
    /// The reading, when the site answered.
    pub fn reading(&self) -> Option<&Reading> {
        match self {
            Probe::Answered(reading) => Some(reading),
            Probe::Unreadable => None,
        }
    }
}

/// A site's flags, identity, set and channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    /// `@@server_uuid`; `None` when the identity read failed.
    pub server_uuid: Option<String>,
    /// `@@global.read_only`.
    pub read_only: bool,
    /// `@@global.super_read_only`.
    pub super_read_only: bool,
    /// `@@global.gtid_executed`, as the server printed it.
    pub gtid_executed: String,
    /// The replication channel, when one exists.
    pub channel: Option<Channel>,
    /// Application sessions left (the drain's count), when counted.
    pub app_sessions: Option<u32>,
}

impl Reading {
    /// Writable: `read_only` and `super_read_only` both OFF.
    pub fn writable(&self) -> bool {
        !self.read_only && !self.super_read_only
    }
}

/// A replication channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Channel {
    /// The site it replicates from, when its address is a site's.
    pub source_site: Option<String>,
    /// The receiver thread runs.
    pub io_running: bool,
    /// The applier thread runs.
    pub sql_running: bool,
    /// The applier reports an error.
    pub applier_error: bool,
}

impl Channel {
    /// Both threads run and the applier reports no error.
    pub fn healthy(&self) -> bool {
        self.io_running && self.sql_running && !self.applier_error
    }
}

/// One site of `spec.sites` with its live answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteView {
    /// `spec.sites[].name`.
    pub name: String,
    /// Its effective role.
    pub role: SiteRole,
    /// Its answer at this pass.
    pub probe: Probe,
}

/// The durable failover record (`status.lastFailover` or its out-of-band copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailoverRecord {
    /// When.
    pub time: Timestamp,
    /// The promoted site.
    pub target: String,
    /// The promoted set (the fenced set of a planned failover).
    pub gtid: String,
}

/// The topology manager's state for the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManagerState {
    /// Running and has completed a poll.
    Ready,
    /// No manager runs for the group.
    Absent,
    /// Running, no poll completed yet.
    NotReady,
    /// Being replaced.
    Retiring,
    /// A replaced manager's ordered update has not exited.
    PredecessorBusy,
}

/// The per-group claim slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimSlot {
    /// Nobody holds it.
    Free,
    /// A run holds it.
    Run(String),
    /// An automation hold holds it (a hold carried only by a condition names no run).
    Hold(Option<String>),
}

/// Another topology change that holds the sites (an admission wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Busy {
    /// An emergency promotion is in flight.
    Promotion,
    /// An ordered update holds the sites.
    Update,
    /// A restore holds the sites.
    Restore,
    /// A bootstrap holds the sites.
    Bootstrap,
    /// A recovery, drain or source-convergence step runs.
    Recovery,
    /// A keyring rotation of the target is being admitted.
    KeyringAdmission,
    /// A Dragonfly snapshot upgrade is in flight.
    DragonflyUpgrade,
}

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Promotion => "an emergency promotion is in flight",
            Self::Update => "an ordered update holds the sites",
            Self::Restore => "a restore holds the sites",
            Self::Bootstrap => "a bootstrap holds the sites",
            Self::Recovery => "a recovery, drain or source-convergence step runs",
            Self::KeyringAdmission => "a keyring rotation of the target is being admitted",
            Self::DragonflyUpgrade => "a Dragonfly snapshot upgrade is in flight",
        })
    }
}

/// The deployment admission reservation was refused (a deployment lease refusal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReservationRefused {
    /// A topology change is not persisted yet.
    TopologyPersistencePending,
    /// An ordered update holds the sites.
    UpdateInFlight,
    /// An in-place restore holds the sites.
    RestoreInFlight,
    /// A planned-failover claim or hold.
    ClaimHeld,
}

impl std::fmt::Display for ReservationRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::TopologyPersistencePending => "a topology change is not persisted yet",
            Self::UpdateInFlight => "an ordered update holds the sites",
            Self::RestoreInFlight => "an in-place restore holds the sites",
            Self::ClaimHeld => "a planned-failover claim or hold stands",
        })
    }
}

/// What the group says about the target beyond its live probe (admission validation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetHealth {
    /// The target is mid keyring rotation.
    pub mid_rotation: bool,
    /// The target awaits its post-restore reclone.
    pub reclone_pending: bool,
    /// The target has a divergence report.
    pub divergence_report: bool,
    /// The target is not a healthy read-only replica in `status.sites` (beyond the live probe).
    pub unhealthy: bool,
}

/// The effective knobs of `spec.plannedFailover` and `spec.failoverCooldown`, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knobs {
    /// `maxLagWait`; `Err` names the refused value.
    pub max_lag_wait: Result<SignedDuration, String>,
    /// `drainTimeout`; `Err` names the refused value.
    pub drain_timeout: Result<SignedDuration, String>,
    /// `onCooldown`.
    pub on_cooldown: OnCooldown,
    /// `failoverCooldown`.
    pub cooldown: SignedDuration,
}

impl Default for Knobs {
    fn default() -> Knobs {
        Knobs {
            max_lag_wait: Ok(SignedDuration::from_mins(5)),
            drain_timeout: Ok(SignedDuration::from_secs(30)),
            on_cooldown: OnCooldown::Reject,
            cooldown: SignedDuration::from_mins(5),
        }
    }
}

/// What the announced side effect did, as the applier reports it to the next pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// `SET GLOBAL super_read_only=ON` was sent to the server with this `@@server_uuid`.
    FenceSent {
        /// The server it reached.
        server_uuid: String,
    },
    /// The drain's count of application sessions left, or why the query failed.
    Drained(Result<u32, String>),
    /// The promotion statements ran up to `SET GLOBAL super_read_only=OFF` (it may have
    /// reached the target).
    WriteSent,
    /// A promotion statement failed before any write.
    PromotionFailed(String),
    /// The target was set back to `super_read_only=ON` and read back.
    TargetRefenced,
    /// The unfence was sent to the source.
    UnfenceSent,
    /// The promotion was recorded in the topology manager, DNS was published (or failed
    /// with this error), and the planned-failover-confirmed annotation was written (or not).
    Published {
        /// The DNS error, when the update failed.
        dns_error: Option<String>,
        /// The planned-failover-confirmed annotation committed.
        marked: bool,
    },
}

/// One pass's view of the group: metadata, spec, status and live probes.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    /// The object's resourceVersion from the uncached read; every write is conditioned on it.
    pub resource_version: String,
    /// `metadata.generation`.
    pub generation: i64,
    /// `metadata.annotations` (only the `bloodraven.shipstream.io/*` ones matter).
    pub annotations: BTreeMap<String, String>,
    /// A fresh run ID for a new request (the applier draws a UUID; the core stays pure).
    pub new_run_id: String,
    /// `spec.sites` in declared order, each with its live answer.
    pub sites: Vec<SiteView>,
    /// `status.activeSite`.
    pub active_site: Option<String>,
    /// The durable failover record; `Err` when it cannot be read (InvalidFailoverState).
    pub last_failover: Result<Option<FailoverRecord>, String>,
    /// `spec.dragonfly.enabled`.
    pub dragonfly_enabled: bool,
    /// The knobs.
    pub knobs: Knobs,
    /// The topology manager.
    pub manager: ManagerState,
    /// The claim slot.
    pub claim: ClaimSlot,
    /// Other topology changes holding the sites.
    pub busy: Vec<Busy>,
    /// An in-place restore or ordered update is in progress (validation: ConcurrentOperation).
    pub concurrent_operation: bool,
    /// The deployment admission reservation was refused.
    pub reservation_refused: Option<ReservationRefused>,
    /// An unexpired deployment failover-hold: its earliest expiry and what it names.
    pub deployment_hold: Option<(Timestamp, String)>,
    /// The target's health beyond its probe.
    pub target_health: TargetHealth,
    /// The run's latest status write failed (RBAC, 422, webhook, conflicts on every attempt).
    pub status_write_failing: bool,
    /// What the announced side effect did since the last pass.
    pub reports: Vec<Report>,
}

impl Observation {
    /// The site named `name`.
    pub fn site(&self, name: &str) -> Option<&SiteView> {
        self.sites.iter().find(|site| site.name == name)
    }

    /// The annotation `key`.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }

    /// The failover record, when it reads.
    pub fn failover_record(&self) -> Option<&FailoverRecord> {
        self.last_failover.as_ref().ok().and_then(Option::as_ref)
    }
}

#[cfg(test)]
mod display_tests {
    use super::*;

    #[test]
    fn admission_waits_read_as_plain_words() {
        assert_eq!(Busy::Promotion.to_string(), "an emergency promotion is in flight");
        assert_eq!(
            ReservationRefused::TopologyPersistencePending.to_string(),
            "a topology change is not persisted yet"
        );
    }
}
