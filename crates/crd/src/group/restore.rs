//! Restore status: `status.restore`, `status.restoreInPlace`, `status.restoreReclones` and
//! `status.restoreOfflineFence`, and the PITR result and refusal tokens they carry.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Extra;
use crate::open_enum::open_enum;

open_enum! {
    /// A point-in-time restore or verification refusal, recorded as `status.restore.reason`
    /// and as the reason of a verification's `Verified` condition. The sidecar writers'
    /// archive-identity refusals are included because they share the namespace.
    pub enum PitrToken (Open) {
        PitrTargetInvalid = "PITRTargetInvalid",
        PitrBackupIdentityUnknown = "PITRBackupIdentityUnknown",
        PitrBackupIdentityMismatch = "PITRBackupIdentityMismatch",
        PitrBackupIncomplete = "PITRBackupIncomplete",
        PitrBackupInconsistent = "PITRBackupInconsistent",
        PitrBackupFiltered = "PITRBackupFiltered",
        PitrBackupAfterTarget = "PITRBackupAfterTarget",
        PitrBackupNotOnLineage = "PITRBackupNotOnLineage",
        PitrBackupDumpKeyMissing = "PITRBackupDumpKeyMissing",
        PitrArchiveListFailed = "PITRArchiveListFailed",
        PitrArchiveNotFound = "PITRArchiveNotFound",
        PitrArchiveVersionUnsupported = "PITRArchiveVersionUnsupported",
        PitrArchiveLegacy = "PITRArchiveLegacy",
        PitrArchiveDescriptorMissing = "PITRArchiveDescriptorMissing",
        PitrArchiveIdentityMismatch = "PITRArchiveIdentityMismatch",
        PitrArchiveEncryptionMismatch = "PITRArchiveEncryptionMismatch",
        PitrArchiveKeyMismatch = "PITRArchiveKeyMismatch",
        PitrArchiveHistoryReset = "PITRArchiveHistoryReset",
        PitrArchiveBindingNotReady = "PITRArchiveBindingNotReady",
        PitrArchiveDestinationShared = "PITRArchiveDestinationShared",
        PitrExcludeIntersectsBackup = "PITRExcludeIntersectsBackup",
        PitrArchiveNamespaceReuse = "PITRArchiveNamespaceReuse",
        PitrTargetNotCovered = "PITRTargetNotCovered",
        PitrStopAmbiguous = "PITRStopAmbiguous",
        PitrArchiveUnsafeHistory = "PITRArchiveUnsafeHistory",
        PitrArchiveDivergentHistory = "PITRArchiveDivergentHistory",
        PitrArchiveSplitBrain = "PITRArchiveSplitBrain",
        PitrArchiveOrderInversion = "PITRArchiveOrderInversion",
        PitrArchiveGap = "PITRArchiveGap",
        PitrArchiveOrderConflict = "PITRArchiveOrderConflict",
        PitrPlanTooLarge = "PITRPlanTooLarge",
        PitrReplayUnsupported = "PITRReplayUnsupported",
        PitrArchiveObjectInvalid = "PITRArchiveObjectInvalid",
        PitrCoverageInvalid = "PITRCoverageInvalid",
        PitrNoArchivedReplay = "PITRNoArchivedReplay",
        PitrReplayMismatch = "PITRReplayMismatch",
        PitrReplayFailed = "PITRReplayFailed",
        PitrArchiveForeign = "PITRArchiveForeign",
        PitrArchiveCopy = "PITRArchiveCopy",
        PitrArchiveStoreUnsupported = "PITRArchiveStoreUnsupported",
    }
}

open_enum! {
    /// `status.restore.phase` (the bootstrap restore of `spec.initFromBackup`).
    pub enum RestorePhase (Open) {
        Pending = "Pending",
        Running = "Running",
        Succeeded = "Succeeded",
        Failed = "Failed",
    }
}

/// `status.restore`: the bootstrap restore.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreStatus {
    /// Pending, Running, Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RestorePhase>,
    /// The refusal token of a failed (or waiting) restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PitrToken>,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The seed the dump is loaded into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_site: Option<String>,
    /// The restore Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// When the restore Job was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the restore ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// What a successful restore certified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<RestoreProvenance>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a restore certified.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreProvenance {
    /// The accepted point-in-time verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point_in_time: Option<PointInTimeResult>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

open_enum! {
    /// `pointInTime.outcome` of a replay.
    pub enum PointInTimeOutcome (Open) {
        /// The archive held a witness at or after the target.
        TargetCovered = "TargetCovered",
        /// allowPartial: replayed to the archive head, short of the target.
        Partial = "Partial",
        /// A verification's mode Latest: replayed to the archive head.
        Latest = "Latest",
    }
}

open_enum! {
    /// The replay mode of a point-in-time restore or verification.
    pub enum PointInTimeMode (Closed) {
        /// No replay: the dump only.
        None = "None",
        /// Replay to the archive head.
        Latest = "Latest",
        /// Replay to a target timestamp.
        Timestamp = "Timestamp",
    }
}

open_enum! {
    /// An archive's encryption mode.
    pub enum EncryptionMode (Open) {
        None = "None",
        Passphrase = "Passphrase",
    }
}

/// `PointInTimeResult`: the verdict of a replay, as the operator accepted it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PointInTimeResult {
    /// TargetCovered or Partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<PointInTimeOutcome>,
    /// Latest or Timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // A spec enum, but status is open: an older CRD must accept a newer operator's value.
    #[schemars(with = "Option<String>")]
    pub mode: Option<PointInTimeMode>,
    /// The requested target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_time: Option<String>,
    /// The archive replayed from.
    #[serde(rename = "archiveID", default, skip_serializing_if = "Option::is_none")]
    pub archive_id: Option<String>,
    /// The archive's encryption mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption_mode: Option<EncryptionMode>,
    /// The UID of the group that wrote the archive.
    #[serde(rename = "sourceUID", default, skip_serializing_if = "Option::is_none")]
    pub source_uid: Option<String>,
    /// Its namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_namespace: Option<String>,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_name: Option<String>,
    /// Replayed segments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<i64>,
    /// Replayed files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<i64>,
    /// Replayed transactions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<i64>,
    /// The last replayed file, `<site>/<binlog>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_file: Option<String>,
    /// The newest replayed commit time (RFC 3339, microsecond precision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // Kept as written, so a read-modify-write changes no byte (and a value this version cannot
    // parse does not make the status unreadable); `newest_replayed_commit_timestamp` parses it.
    pub newest_replayed_commit_time: Option<String>,
    /// Transactions off the target history that excludeGtids left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_divergent_transaction_count: Option<i64>,
    /// Excluded transactions on the target history that precede a replayed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_history_exclusions: Option<String>,
    /// How many there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_history_exclusion_count: Option<i64>,
    /// The certified executed set (empty when longer than 2048 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gtid_executed: Option<String>,
    /// The SHA-256 of the certified executed set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gtid_executed_sha256: Option<String>,
    /// The sites whose archived files were replayed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

impl PointInTimeResult {
    /// [`PointInTimeResult::newest_replayed_commit_time`] as an instant: `None` when unset, an
    /// error when it is not an RFC 3339 timestamp.
    pub fn newest_replayed_commit_timestamp(&self) -> Option<Result<jiff::Timestamp, jiff::Error>> {
        self.newest_replayed_commit_time.as_deref().map(str::parse)
    }
}

open_enum! {
    /// `status.restoreInPlace.phase`.
    pub enum RestoreInPlacePhase (Open) {
        Preflight = "Preflight",
        Fencing = "Fencing",
        Restoring = "Restoring",
        Resuming = "Resuming",
        Succeeded = "Succeeded",
        Failed = "Failed",
    }
}

open_enum! {
    /// `status.restoreInPlace.reason`: why a run failed or waits.
    pub enum RestoreInPlaceReason (Open) {
        RestoreInPlaceRejected = "RestoreInPlaceRejected",
        RestoreInPlaceCanceled = "RestoreInPlaceCanceled",
        RestoreInPlaceJobLost = "RestoreInPlaceJobLost",
        RestoreInPlacePeerStopFailed = "RestoreInPlacePeerStopFailed",
        RestoreInPlaceDeferredPreviousQueue = "RestoreInPlaceDeferredPreviousQueue",
    }
}

open_enum! {
    /// What an in-place restore replaces.
    pub enum RestoreScope (Open) {
        /// Every user schema; every peer is recloned afterwards.
        FullInstance = "FullInstance",
        /// One schema; replication carries it to the peers.
        Schema = "Schema",
    }
}

/// `status.restoreInPlace`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreInPlaceStatus {
    /// Preflight, Fencing, Restoring, Resuming, Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RestoreInPlacePhase>,
    /// Why a run failed or waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<RestoreInPlaceReason>,
    /// The run's id; the offline fence names it.
    #[serde(rename = "runID", default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The last `confirm` that ran (or may have).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_token_used: Option<String>,
    /// The `confirm` of the run in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_confirm: Option<String>,
    /// Recorded before the restore Job is created: the Job may exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_creating: Option<bool>,
    /// The restore Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// The primary being restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_site: Option<String>,
    /// FullInstance or Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<RestoreScope>,
    /// The schema of a per-schema restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// When the run was accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

open_enum! {
    /// `status.restoreReclones.phase`. A human may patch it to Draining, or remove the block.
    pub enum RestoreReclonesPhase (Open) {
        /// The restore runs; nothing is cloned into queued sites.
        Armed = "Armed",
        /// The restore succeeded (or a human accepted the primary); sites are recloned in order.
        Draining = "Draining",
        /// A failed restore may have changed the primary; queued sites keep their data.
        Held = "Held",
    }
}

/// `status.restoreReclones`: the peer reclone queue of a full-instance restore.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreReclones {
    /// Armed, Draining or Held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RestoreReclonesPhase>,
    /// The restore run that fixed the queue.
    #[serde(rename = "runID", default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Sites still to be recloned, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
    /// The primary's `gtid_executed` once the offline fence was up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fenced_gtid_executed: Option<String>,
    /// Sites whose clone failed or did not start, with their retry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<RecloneFailure>,
    /// The reclone request the queue wrote and is waiting for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<RecloneRequest>,
    /// The earlier restore's queue this run replaced while it was still draining or held: put
    /// back when this run fails (drains again when this run never started creating its Job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<ReplacedQueue>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.restoreReclones.replaced`: an earlier queue a newer restore took over.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplacedQueue {
    /// Its phase when it was replaced (Draining or Held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RestoreReclonesPhase>,
    /// The run that fixed it.
    #[serde(rename = "runID", default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Its sites still queued, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A failed reclone of a queued site.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecloneFailure {
    /// The site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// Failed attempts so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<i64>,
    /// When the last attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure_time: Option<Time>,
    /// When the site is retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_time: Option<Time>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `reclone-site` request the queue wrote.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecloneRequest {
    /// The site being recloned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// The annotation value written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// When it was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_time: Option<Time>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.restoreOfflineFence`: the `offline_mode` fence of a full-instance restore.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreOfflineFence {
    /// The restore run that owns the fence.
    #[serde(rename = "runID", default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The fenced primary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// The `offline_mode` read before the fence; put back when the restore ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_offline_mode: Option<bool>,
    /// When the fence was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_time: Option<Time>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}
