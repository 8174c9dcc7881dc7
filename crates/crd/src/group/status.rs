//! `MysqlFailoverGroup.status`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    EncryptionMode, PlannedFailoverHold, PlannedFailoverStatus, RestoreInPlaceStatus,
    RestoreOfflineFence, RestoreReclones, RestoreStatus, StorageType,
};
use crate::Extra;
use crate::backup::BackupPhase;
use crate::condition::Condition;
use crate::open_enum::open_enum;

/// Observed state of a `MysqlFailoverGroup`; written by the operator only, except
/// `restoreReclones.phase` (and the block's removal), which the spec tells humans to patch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MysqlFailoverGroupStatus {
    /// The generation the topology manager applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The unique writable PrimaryCandidate site; empty while a failover is in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_site: Option<String>,
    /// Observed per-site state, in `spec.sites` order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<SiteStatus>,
    /// Ready, Degraded, AutomaticFailoverHeld, PITRArchiveReady, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The durable record of the last failover, planned or emergency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failover: Option<LastFailover>,
    /// The latest planned failover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_failover: Option<PlannedFailoverStatus>,
    /// The automation hold of a ManualRecoveryRequired run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_failover_hold: Option<PlannedFailoverHold>,
    /// The peer reclone queue of a full-instance in-place restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_reclones: Option<RestoreReclones>,
    /// The `offline_mode` fence of a full-instance in-place restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_offline_fence: Option<RestoreOfflineFence>,
    /// The in-place restore state machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_in_place: Option<RestoreInPlaceStatus>,
    /// The bootstrap restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<RestoreStatus>,
    /// The PITR archive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pitr: Option<PitrStatus>,
    /// One rollup per backup schedule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backup_schedules: Vec<BackupScheduleStatus>,
    /// When the latest successful backup completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_backup_time: Option<Time>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

impl MysqlFailoverGroupStatus {
    /// The observed state of a site.
    pub fn site(&self, name: &str) -> Option<&SiteStatus> {
        self.sites.iter().find(|site| site.name == name)
    }

    /// The condition of a type.
    pub fn condition(&self, type_: &crate::ConditionType) -> Option<&Condition> {
        crate::condition::find(&self.conditions, type_)
    }

    /// Whether the status shows automation held: a `plannedFailoverHold` record, or an
    /// `AutomaticFailoverHeld=True` condition without one (which holds too, but names no run).
    /// A terminal marker in the group's annotations can hold as well: ask
    /// [`super::MysqlFailoverGroup::automation_held`] for the whole answer.
    pub fn automation_held(&self) -> bool {
        self.planned_failover_hold.is_some()
            || self
                .condition(&crate::ConditionType::AutomaticFailoverHeld)
                .is_some_and(Condition::is_true)
    }
}

impl super::MysqlFailoverGroup {
    /// Whether automation is held, from every durable evidence the spec names: the status
    /// ([`MysqlFailoverGroupStatus::automation_held`]), or a terminal marker that carries
    /// ManualRecoveryRequired, "also when only a terminal marker carries the hold" (a stalled
    /// run that could not write its status). A marker that proves nothing holds nothing.
    pub fn automation_held(&self) -> bool {
        self.status.as_ref().is_some_and(MysqlFailoverGroupStatus::automation_held)
            || self.terminal_marker_holds()
    }

    /// Whether the `planned-failover-terminal` marker is a ManualRecoveryRequired record.
    fn terminal_marker_holds(&self) -> bool {
        let Some(value) =
            self.metadata.annotations.as_ref().and_then(|annotations| {
                annotations.get(crate::annotations::PLANNED_FAILOVER_TERMINAL)
            })
        else {
            return false;
        };
        crate::annotations::TerminalMarker::parse(value).record().is_some_and(|record| {
            record.outcome() == super::PlannedFailoverOutcome::ManualRecoveryRequired.as_str()
        })
    }
}

open_enum! {
    /// `status.sites[].state`.
    pub enum SiteState (Open) {
        Writable = "writable",
        ReadOnly = "read-only",
        Unreachable = "unreachable",
        Unknown = "unknown",
    }
}

open_enum! {
    /// `status.sites[].sourceConvergenceState`: whether a follower replicates directly from
    /// the active primary.
    pub enum SourceConvergenceState (Open) {
        Converged = "Converged",
        Pending = "Pending",
        Blocked = "Blocked",
    }
}

open_enum! {
    /// `status.sites[].sourceConvergenceReason`.
    pub enum SourceConvergenceReason (Open) {
        /// The primary does not contain the follower's executed set.
        GtidDiverged = "GTIDDiverged",
        /// The site is queued for a post-restore reclone.
        RestorePeerHold = "RestorePeerHold",
    }
}

open_enum! {
    /// `status.sites[].recoveryState`: old-primary recovery.
    pub enum RecoveryState (Open) {
        RecoveryInProgress = "RecoveryInProgress",
        /// The site holds transactions the primary does not; see `divergentGtid`.
        RecoveryBlocked = "RecoveryBlocked",
    }
}

/// Observed state of one site.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteStatus {
    /// The site's name.
    pub name: String,
    /// writable, read-only, unreachable or unknown; unset before the first poll.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SiteState>,
    /// When the site last answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<Time>,
    /// The site's `GTID_EXECUTED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gtid_executed: Option<String>,
    /// Whether both replication threads run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicating: Option<bool>,
    /// Replication lag; unset when not replicating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_behind_source: Option<i64>,
    /// Converged, Pending or Blocked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_convergence_state: Option<SourceConvergenceState>,
    /// Why convergence is pending or blocked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_convergence_reason: Option<SourceConvergenceReason>,
    /// Old-primary recovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_state: Option<RecoveryState>,
    /// The transactions that block recovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub divergent_gtid: Option<String>,
    /// How many they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub divergent_transaction_count: Option<i64>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.lastFailover`: never moves to an older time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastFailover {
    /// When the promotion was confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Time>,
    /// The promoted site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The promoted site's GTID set at promotion (the fenced set of a planned failover).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promotion_gtid_executed: Option<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

open_enum! {
    /// `status.pitr.archive.state`.
    pub enum ArchiveState (Open) {
        AwaitingDescriptor = "AwaitingDescriptor",
        /// Every site verified one archive ID.
        Verified = "Verified",
        /// A site refuses; `reason` says why.
        Refused = "Refused",
    }
}

open_enum! {
    /// `status.pitr.archive.reason`: the PITRArchiveReady reason of a writer's refusal.
    pub enum ArchiveRefusal (Open) {
        ArchiveForeign = "ArchiveForeign",
        ArchiveCopy = "ArchiveCopy",
        ArchiveLegacy = "ArchiveLegacy",
        ArchiveDescriptorMissing = "ArchiveDescriptorMissing",
        ArchiveEncryptionMismatch = "ArchiveEncryptionMismatch",
        ArchiveKeyMismatch = "ArchiveKeyMismatch",
        ArchiveVersionUnsupported = "ArchiveVersionUnsupported",
        ArchiveStoreUnsupported = "ArchiveStoreUnsupported",
        ArchiveUnsafeHistory = "ArchiveUnsafeHistory",
    }
}

/// `status.pitr`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PitrStatus {
    /// The archive identity the sidecars observed at the active destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveIdentity>,
    /// The oldest archived time across sites (bounds retention, not restorability).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_archived_time: Option<Time>,
    /// The newest archived time across sites (freshness).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_archived_time: Option<Time>,
    /// Per-site archiver summaries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<ArchiverSummary>,
    /// The group's archive encryption bindings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bindings: Vec<ArchiveBinding>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An archive identity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveIdentity {
    /// The normalized destination: `s3://<bucket>/<prefix>/binlogs?endpoint=<endpoint>` or
    /// `pvc://<namespace>/<claim>/<subPath>/binlogs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// `ar1-<26 base32 chars>`.
    #[serde(rename = "archiveID", default, skip_serializing_if = "Option::is_none")]
    pub archive_id: Option<String>,
    /// None or Passphrase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption_mode: Option<EncryptionMode>,
    /// AwaitingDescriptor, Verified or Refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ArchiveState>,
    /// Why it is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ArchiveRefusal>,
    /// The revision of the archive key snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_revision: Option<i64>,
    /// When the sidecars reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_time: Option<Time>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

open_enum! {
    /// `historyIntegrity.violation`.
    pub enum HistoryViolation (Open) {
        ReplicationFilter = "ReplicationFilter",
        BinlogFilter = "BinlogFilter",
        BinlogFormat = "BinlogFormat",
        BinlogRowImage = "BinlogRowImage",
        CommitOrder = "CommitOrder",
    }
}

/// One site's archiver, as its sidecar reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArchiverSummary {
    /// The site.
    pub site: String,
    /// Whether PITR is configured on the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Whether the archive store could be built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_ready: Option<bool>,
    /// Whether the site is the writable primary (the one that uploads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<bool>,
    /// When the last scan ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scan_at: Option<Time>,
    /// Files archived since the sidecar started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_archived: Option<i64>,
    /// Sealed files not yet archived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog_files: Option<i64>,
    /// Failed uploads since the sidecar started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_failures: Option<i64>,
    /// Consecutive failed scans (ArchiverError from 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consecutive_failed_scans: Option<i64>,
    /// The last error; a refusal starts with its token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The archive store's type (S3 or PVC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // A spec enum, but status is open: an older CRD must accept a newer sidecar's value.
    #[schemars(with = "Option<String>")]
    pub storage_type: Option<StorageType>,
    /// The prefix under which the site's manifests are written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_prefix: Option<String>,
    /// The oldest archived time in the site's manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_archived_time: Option<Time>,
    /// The newest archived time in the site's manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_archived_time: Option<Time>,
    /// When the current writable episode's promotion record was saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promotion_recorded_at: Option<Time>,
    /// The site's persisted history-integrity marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_integrity: Option<HistoryIntegrity>,
    /// Divergent rows in the site's manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub divergent_rows: Option<i64>,
    /// Quarantined rows in the site's manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantined_rows: Option<i64>,
    /// The archive identity this site observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveIdentity>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A permanent history-integrity marker.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryIntegrity {
    /// Which setting was violated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<HistoryViolation>,
    /// What was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// When.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Time>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

open_enum! {
    /// Whether a binding writes the archive or only reads it.
    pub enum BindingAccess (Open) {
        Write = "Write",
        Read = "Read",
    }
}

open_enum! {
    /// `bindings[].phase`.
    pub enum BindingPhase (Open) {
        Pending = "Pending",
        Authenticating = "Authenticating",
        Bound = "Bound",
        Refused = "Refused",
    }
}

open_enum! {
    /// `bindings[].reason`.
    pub enum BindingReason (Open) {
        KeyMismatch = "KeyMismatch",
        ArchiveEncryptionMismatch = "ArchiveEncryptionMismatch",
        BindingLimitReached = "BindingLimitReached",
        ArchiveNotFound = "ArchiveNotFound",
        ArchiveDescriptorMissing = "ArchiveDescriptorMissing",
        ArchiveLegacy = "ArchiveLegacy",
        ArchiveVersionUnsupported = "ArchiveVersionUnsupported",
        ArchiveListFailed = "ArchiveListFailed",
    }
}

/// An archive encryption binding: which key a destination is read or written with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveBinding {
    /// The normalized destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// The archive found there.
    #[serde(rename = "archiveID", default, skip_serializing_if = "Option::is_none")]
    pub archive_id: Option<String>,
    /// The profile the binding came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_name: Option<String>,
    /// Write (the active PITR profile) or Read (a restore's archive profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<BindingAccess>,
    /// Pending, Authenticating, Bound or Refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BindingPhase>,
    /// Why it is not Bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<BindingReason>,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The UID of the group that created the archive.
    #[serde(rename = "sourceUID", default, skip_serializing_if = "Option::is_none")]
    pub source_uid: Option<String>,
    /// The bound encryption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<BindingEncryption>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The encryption a binding is bound to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingEncryption {
    /// None or Passphrase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<EncryptionMode>,
    /// AES-256-GCM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    /// The key snapshot Secret (key `passphrase`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_secret_name: Option<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.backupSchedules[]`: one schedule's rollup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupScheduleStatus {
    /// The schedule.
    pub name: String,
    /// Its profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_name: Option<String>,
    /// When the CronJob last fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,
    /// The schedule's latest MysqlBackup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_backup_name: Option<String>,
    /// Its phase (the schedule's last result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_backup_phase: Option<BackupPhase>,
    /// The schedule's latest Succeeded MysqlBackup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_backup_name: Option<String>,
    /// When it completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_success_time: Option<Time>,
    /// The attempt number of the latest retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_retry_attempt: Option<i32>,
    /// When the next retry is created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_time: Option<Time>,
    /// The object blocking the retry's deterministic name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_conflict: Option<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}
