//! `status.plannedFailover` and `status.plannedFailoverHold`: the record of one planned failover.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{OnCooldown, OnSyncTimeout};
use crate::Extra;
use crate::duration::Duration;
use crate::open_enum::open_enum;

open_enum! {
    /// `status.plannedFailover.phase`.
    pub enum PlannedFailoverPhase (Open) {
        /// Given a runID; owns nothing; waiting for validation and the claim.
        Admitting = "Admitting",
        /// Cooldown with onCooldown Defer, or a deployment hold; owns nothing.
        Deferred = "Deferred",
        /// The claim is granted; the source is being fenced.
        Fencing = "Fencing",
        /// The fence is proven; application connections are being killed.
        Draining = "Draining",
        /// Waiting for the target to apply the fenced set.
        WaitingForLag = "WaitingForLag",
        /// Waiting for the target Dragonfly replica to reach the source offset.
        WaitingForDragonflySync = "WaitingForDragonflySync",
        /// Promoting the target Dragonfly with REPLTAKEOVER.
        PromotingDragonfly = "PromotingDragonfly",
        /// Clearing super_read_only on the target.
        Promoting = "Promoting",
        /// Promotion confirmed and recorded; only status bookkeeping remains.
        Publishing = "Publishing",
        /// A failure while nothing was written to the target.
        RollingBack = "RollingBack",
        /// Terminal success.
        Succeeded = "Succeeded",
        /// Terminal failure; `result` says what and why.
        Failed = "Failed",
        /// Written only by operators before v1.7; refused on read.
        Pending = "Pending",
        /// Written only by operators before v1.7; refused on read.
        Validating = "Validating",
        /// Written only by operators before v1.7; refused on read.
        Resuming = "Resuming",
    }
}

impl PlannedFailoverPhase {
    /// Whether the run has ended.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

open_enum! {
    /// `result.outcome`: what the cluster was left in.
    pub enum PlannedFailoverOutcome (Open) {
        Succeeded = "Succeeded",
        NotStarted = "NotStarted",
        RolledBack = "RolledBack",
        SourceLeftFenced = "SourceLeftFenced",
        PromotedUnconfirmed = "PromotedUnconfirmed",
        ManualRecoveryRequired = "ManualRecoveryRequired",
    }
}

impl PlannedFailoverOutcome {
    /// The `result` label of `bloodraven_planned_failovers_total`: the kebab-case of the outcome.
    pub fn metric_label(&self) -> String {
        let mut label = String::new();
        for (index, character) in self.as_str().char_indices() {
            if character.is_ascii_uppercase() {
                if index > 0 {
                    label.push('-');
                }
                label.push(character.to_ascii_lowercase());
            } else {
                label.push(character);
            }
        }
        label
    }
}

open_enum! {
    /// `result.reason`, `rollback.reason`, `dragonfly.reason` and `plannedFailoverHold.reason`.
    pub enum PlannedFailoverReason (Open) {
        InvalidAnnotation = "InvalidAnnotation",
        UnknownSite = "UnknownSite",
        TargetNotPromotable = "TargetNotPromotable",
        AlreadyActive = "AlreadyActive",
        TargetUnhealthy = "TargetUnhealthy",
        KeyringRotation = "KeyringRotation",
        CooldownActive = "CooldownActive",
        ConcurrentOperation = "ConcurrentOperation",
        InvalidFailoverState = "InvalidFailoverState",
        Canceled = "Canceled",
        DivergentTarget = "DivergentTarget",
        ManualRecoveryPending = "ManualRecoveryPending",
        AdmissionTimeout = "AdmissionTimeout",
        AuthorityChanged = "AuthorityChanged",
        LegacyRunRefused = "LegacyRunRefused",
        FenceFailed = "FenceFailed",
        SourceLost = "SourceLost",
        SourceUnfenced = "SourceUnfenced",
        TargetLost = "TargetLost",
        ForeignWritable = "ForeignWritable",
        PeerUnreadable = "PeerUnreadable",
        LagTimeout = "LagTimeout",
        InvalidGtid = "InvalidGTID",
        DragonflySyncTimeout = "DragonflySyncTimeout",
        DragonflyPromotionFailed = "DragonflyPromotionFailed",
        TargetChanged = "TargetChanged",
        PromotionAborted = "PromotionAborted",
        PromotionUnconfirmed = "PromotionUnconfirmed",
        ManagerUnavailable = "ManagerUnavailable",
        StatusStalled = "StatusStalled",
        ExecuteFailed = "ExecuteFailed",
        InternalError = "InternalError",
        /// Ours, not from the document: Dragonfly coordination is not built, so a request on a
        /// group with `spec.dragonfly.enabled: true` ends NotStarted with this reason.
        DragonflyUnsupported = "DragonflyUnsupported",
    }
}

open_enum! {
    /// `result.warnings[]` and `promotion.warnings[]`.
    pub enum PlannedFailoverWarning (Open) {
        DnsUpdateFailed = "DNSUpdateFailed",
        DragonflySessionsLost = "DragonflySessionsLost",
        TargetReplicationNotRestored = "TargetReplicationNotRestored",
        UnreachablePeers = "UnreachablePeers",
        FenceNotAttributable = "FenceNotAttributable",
        StatusStalled = "StatusStalled",
        SourceReplaced = "SourceReplaced",
        TargetSuperReadOnlyNotRestored = "TargetSuperReadOnlyNotRestored",
    }
}

open_enum! {
    /// `admission.waitReason`: what an Admitting (or Deferred) run waits for.
    pub enum AdmissionWaitReason (Open) {
        ManagerAbsent = "ManagerAbsent",
        ManagerNotReady = "ManagerNotReady",
        ManagerRetiring = "ManagerRetiring",
        PredecessorBusy = "PredecessorBusy",
        AuthorityUnsettled = "AuthorityUnsettled",
        PeerUnreadable = "PeerUnreadable",
        TargetNotReady = "TargetNotReady",
        PromotionInFlight = "PromotionInFlight",
        UpdateInFlight = "UpdateInFlight",
        RestoreInFlight = "RestoreInFlight",
        BootstrapInFlight = "BootstrapInFlight",
        RecoveryInFlight = "RecoveryInFlight",
        KeyringRotation = "KeyringRotation",
        DragonflyUpgradeInFlight = "DragonflyUpgradeInFlight",
        ClaimHeld = "ClaimHeld",
        /// Reserved; not written by v1.7.
        StatusUnsettled = "StatusUnsettled",
    }
}

open_enum! {
    /// `admission.deferReason`.
    pub enum AdmissionDeferReason (Open) {
        CooldownActive = "CooldownActive",
        DeploymentHold = "DeploymentHold",
    }
}

open_enum! {
    /// `fence.state`.
    pub enum FenceState (Open) {
        /// Recorded before `super_read_only=ON` is sent.
        Intended = "Intended",
        /// Proven: set, read back and the fenced set snapshotted.
        Applied = "Applied",
    }
}

open_enum! {
    /// `promotion.state`.
    pub enum PromotionState (Open) {
        /// Recorded before the target is touched.
        Intended = "Intended",
        /// Confirmed writable by live reads.
        Confirmed = "Confirmed",
    }
}

open_enum! {
    /// `dns.state`.
    pub enum DnsState (Open) {
        Applied = "Applied",
        Failed = "Failed",
    }
}

open_enum! {
    /// `dragonfly.sourceOffsetState`.
    pub enum SourceOffsetState (Open) {
        Captured = "Captured",
        Unavailable = "Unavailable",
    }
}

open_enum! {
    /// `dragonfly.takeover.state`.
    pub enum TakeoverState (Open) {
        Intended = "Intended",
        Succeeded = "Succeeded",
        Failed = "Failed",
    }
}

open_enum! {
    /// `dragonfly.takeover.method`.
    pub enum TakeoverMethod (Open) {
        ReplTakeover = "ReplTakeover",
    }
}

open_enum! {
    /// `dragonfly.sessions`.
    pub enum DragonflySessions (Open) {
        Preserved = "Preserved",
        Lost = "Lost",
    }
}

/// `status.plannedFailover`: the record of the latest planned failover.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFailoverStatus {
    /// The run's id.
    #[serde(rename = "runID", default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Bumped by every durable write of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// The lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PlannedFailoverPhase>,
    /// The site being promoted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_site: Option<String>,
    /// The active site the claim was granted against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_site: Option<String>,
    /// The effective knobs, snapshotted when the request was accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<PlannedFailoverSettings>,
    /// When the request was accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the claim was granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_time: Option<Time>,
    /// The durable failover record when the claim was granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_baseline: Option<ClaimBaseline>,
    /// Admission bookkeeping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    /// The source's fence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<Fence>,
    /// The connection drain on the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<Drain>,
    /// The wait for the target to apply the fenced set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_wait: Option<LagWait>,
    /// The Dragonfly sync and takeover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dragonfly: Option<DragonflyFailover>,
    /// The MySQL promotion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promotion: Option<Promotion>,
    /// The DNS publication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<DnsPublication>,
    /// The rollback, when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<Rollback>,
    /// The terminal result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<PlannedFailoverResult>,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Fields a newer operator wrote that this version does not know. The fields older
    /// operators wrote and this release removed ([`LEGACY_RECORD_FIELDS`]) are pruned on read,
    /// so they are never written back.
    #[serde(flatten, deserialize_with = "extra_without_legacy_fields")]
    pub extra: Extra,
}

/// Fields of `status.plannedFailover` that operators before v1.7 wrote and this release prunes
/// on read (planned failover, "Upgrading across this release": "The old sourcePrimary field is
/// pruned on read, so the record no longer names the source").
pub const LEGACY_RECORD_FIELDS: &[&str] = &["sourcePrimary"];

/// Reads the unknown fields of a planned-failover record, less [`LEGACY_RECORD_FIELDS`].
fn extra_without_legacy_fields<'de, D>(deserializer: D) -> Result<Extra, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let mut extra = Extra::deserialize(deserializer)?;
    for field in LEGACY_RECORD_FIELDS {
        extra.remove(*field);
    }
    Ok(extra)
}

/// The effective knobs of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFailoverSettings {
    /// The lag-wait bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lag_wait: Option<Duration>,
    /// The drain bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_timeout: Option<Duration>,
    /// The cooldown policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // A spec enum, but status is open: an older CRD must accept a newer operator's value.
    #[schemars(with = "Option<String>")]
    pub on_cooldown: Option<OnCooldown>,
    /// Dragonfly's knobs, when Dragonfly was enabled at acceptance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dragonfly: Option<DragonflySettings>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Dragonfly's effective knobs of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DragonflySettings {
    /// The sync and REPLTAKEOVER budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sync_wait: Option<Duration>,
    /// Proceed or Fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // A spec enum, but status is open: an older CRD must accept a newer operator's value.
    #[schemars(with = "Option<String>")]
    pub on_sync_timeout: Option<OnSyncTimeout>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A durable failover record: when, and which site was promoted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimBaseline {
    /// The record's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Time>,
    /// The record's target site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Admission bookkeeping.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    /// When an Admitting run ends `NotStarted{AdmissionTimeout}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_time: Option<Time>,
    /// What the run is waiting for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_reason: Option<AdmissionWaitReason>,
    /// Why a Deferred run is deferred.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_reason: Option<AdmissionDeferReason>,
    /// When a Deferred run retries admission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_time: Option<Time>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The source's fence.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Fence {
    /// Intended, then Applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<FenceState>,
    /// When the intent became durable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent_time: Option<Time>,
    /// The source's `@@server_uuid`.
    #[serde(rename = "sourceServerUUID", default, skip_serializing_if = "Option::is_none")]
    pub source_server_uuid: Option<String>,
    /// When the fence was proven.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_time: Option<Time>,
    /// The fenced source's `GTID_EXECUTED` (may be empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gtid_set: Option<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The connection drain.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Drain {
    /// When the drain started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Application sessions left at the end; unset when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_connections: Option<i64>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The lag wait.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LagWait {
    /// When the wait started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the target held the fenced set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up_time: Option<Time>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The Dragonfly part of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DragonflyFailover {
    /// When the sync wait started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_wait_start_time: Option<Time>,
    /// Whether the source offset was captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_offset_state: Option<SourceOffsetState>,
    /// The source's replication offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_offset: Option<i64>,
    /// How long the sync took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_wait_seconds: Option<i64>,
    /// The REPLTAKEOVER.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub takeover: Option<Takeover>,
    /// Whether sessions were preserved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<DragonflySessions>,
    /// Why sessions were lost (DragonflySyncTimeout or DragonflyPromotionFailed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PlannedFailoverReason>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The Dragonfly takeover.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Takeover {
    /// Intended, Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<TakeoverState>,
    /// When the intent became durable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent_time: Option<Time>,
    /// When the takeover finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// How the target was promoted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<TakeoverMethod>,
    /// The target's offset after the takeover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_offset: Option<i64>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The MySQL promotion.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Promotion {
    /// Intended, then Confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<PromotionState>,
    /// When the intent became durable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent_time: Option<Time>,
    /// The target's `@@server_uuid`.
    #[serde(rename = "targetServerUUID", default, skip_serializing_if = "Option::is_none")]
    pub target_server_uuid: Option<String>,
    /// When the promotion was confirmed (also `status.lastFailover.time`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_time: Option<Time>,
    /// The run's warnings so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<PlannedFailoverWarning>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The DNS publication.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DnsPublication {
    /// Applied or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<DnsState>,
    /// When it was attempted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_time: Option<Time>,
    /// The error of a failed update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The rollback.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rollback {
    /// Why the run rolled back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PlannedFailoverReason>,
    /// When the intent became durable (the 30-second deadline counts from here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent_time: Option<Time>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The terminal result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFailoverResult {
    /// What the cluster was left in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<PlannedFailoverOutcome>,
    /// Why (absent on a clean success).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PlannedFailoverReason>,
    /// What qualifies the outcome.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<PlannedFailoverWarning>,
    /// When the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.plannedFailoverHold`: the automation hold a ManualRecoveryRequired run left.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFailoverHold {
    /// The run to acknowledge.
    #[serde(rename = "runID", default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The run's result reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PlannedFailoverReason>,
    /// The run's source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_site: Option<String>,
    /// The run's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_site: Option<String>,
    /// Target, source and every site the failing step classified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ambiguous_sites: Vec<String>,
    /// When the hold was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_time: Option<Time>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}
