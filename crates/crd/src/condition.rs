//! Status conditions (`metav1.Condition` shape) with open tokens.
//!
//! This is not `k8s_openapi`'s `Condition`: there `lastTransitionTime`, `message` and `reason`
//! are required, while the spec's own hold example omits `lastTransitionTime`, and a condition
//! written by a newer operator may carry a reason this version does not know.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::Extra;
use crate::open_enum::open_enum;

open_enum! {
    /// `conditions[].type` on the three kinds.
    pub enum ConditionType (Open) {
        /// One writable primary and healthy followers (group); the backup's state (backup).
        Ready = "Ready",
        /// Replication broken or lagging, a site unreachable, or peers awaiting a reclone.
        Degraded = "Degraded",
        /// A planned failover ended ManualRecoveryRequired and automation is held.
        AutomaticFailoverHeld = "AutomaticFailoverHeld",
        /// Whether every site's binlog archiver is running.
        PitrArchiveReady = "PITRArchiveReady",
        /// Whether `spec.mysqlConf` was rendered without PITR-unsafe settings.
        PitrMysqlConfAccepted = "PITRMysqlConfAccepted",
        /// Whether the group's archive encryption bindings are bound.
        PitrArchiveBindingReady = "PITRArchiveBindingReady",
        /// The backup's completion sentinel was collected and agrees with the recorded location.
        MetadataComplete = "MetadataComplete",
        /// Why the artifact of a deleted backup has not been cleaned up yet.
        ArtifactCleanup = "ArtifactCleanup",
        /// The verification's verdict.
        Verified = "Verified",
    }
}

open_enum! {
    /// `conditions[].status`.
    pub enum ConditionStatus (Closed) {
        True = "True",
        False = "False",
        Unknown = "Unknown",
    }
}

open_enum! {
    /// `conditions[].reason`: the condition reasons the spec names for `Ready`, `Degraded`,
    /// `AutomaticFailoverHeld`, the `PITR*` conditions, `MetadataComplete` and
    /// `ArtifactCleanup`. A verification's `Verified` reason is a PITR refusal token, which
    /// this enum does not list (it reads as `Unrecognized`): parse it with
    /// [`crate::group::PitrToken::parse`] and explain it with [`crate::catalog::Kind::PitrRefusal`].
    pub enum ConditionReason (Open) {
        // Group: Ready / Degraded.
        Healthy = "Healthy",
        InitFromBackupInProgress = "InitFromBackupInProgress",
        InitFromBackupFailed = "InitFromBackupFailed",
        RestoreReclonePending = "RestoreReclonePending",
        NoPrimary = "NoPrimary",
        // Group: AutomaticFailoverHeld.
        PlannedFailoverManualRecoveryRequired = "PlannedFailoverManualRecoveryRequired",
        PlannedFailoverHoldAcknowledged = "PlannedFailoverHoldAcknowledged",
        // Group: PITRArchiveReady.
        ArchiveStoreInitFailed = "ArchiveStoreInitFailed",
        ArchiverError = "ArchiverError",
        ArchiverDisabled = "ArchiverDisabled",
        SidecarUnreachable = "SidecarUnreachable",
        SidecarOutdated = "SidecarOutdated",
        AwaitingRollout = "AwaitingRollout",
        ArchiveForeign = "ArchiveForeign",
        ArchiveCopy = "ArchiveCopy",
        ArchiveLegacy = "ArchiveLegacy",
        ArchiveDescriptorMissing = "ArchiveDescriptorMissing",
        ArchiveEncryptionMismatch = "ArchiveEncryptionMismatch",
        ArchiveKeyMismatch = "ArchiveKeyMismatch",
        ArchiveVersionUnsupported = "ArchiveVersionUnsupported",
        ArchiveStoreUnsupported = "ArchiveStoreUnsupported",
        ArchiveUnsafeHistory = "ArchiveUnsafeHistory",
        // Group: PITRMysqlConfAccepted.
        PitrUnsafeSettingRefused = "PITRUnsafeSettingRefused",
        // Backup: Ready.
        WaitingForHealthySource = "WaitingForHealthySource",
        NoHealthySource = "NoHealthySource",
        BackupJobConflict = "BackupJobConflict",
        PitrArchiveRolloutPending = "PITRArchiveRolloutPending",
        DumpKeySnapshotConflict = "DumpKeySnapshotConflict",
        PassphraseSecretMissing = "PassphraseSecretMissing",
        PendingTimedOut = "PendingTimedOut",
        Running = "Running",
        BuildJobFailed = "BuildJobFailed",
        DestinationMismatch = "DestinationMismatch",
        /// The backup Job failed (our token; the spec names only the `BackupFailed` Event).
        BackupFailed = "BackupFailed",
        // Backup: MetadataComplete.
        SentinelUnavailable = "SentinelUnavailable",
        SentinelMissing = "SentinelMissing",
        LocationMismatch = "LocationMismatch",
        DestinationUnavailable = "DestinationUnavailable",
        // Backup: ArtifactCleanup.
        CleanupFailed = "CleanupFailed",
        CleanupRejected = "CleanupRejected",
        CleanupJobInvalid = "CleanupJobInvalid",
        CleanupPending = "CleanupPending",
        CredentialsUnavailable = "CredentialsUnavailable",
        OperatorImageUnset = "OperatorImageUnset",
        CleanupJobConflict = "CleanupJobConflict",
        HeldByVerification = "HeldByVerification",
        ProducerStopStuck = "ProducerStopStuck",
        ForegroundDeletion = "ForegroundDeletion",
        OrphanDeletion = "OrphanDeletion",
    }
}

/// One status condition.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition's type.
    #[serde(rename = "type")]
    pub type_: ConditionType,
    /// `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// A CamelCase token saying why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ConditionReason>,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The object generation the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Condition {
    /// A condition with the given type and status and nothing else.
    pub fn new(type_: ConditionType, status: ConditionStatus) -> Self {
        Self {
            type_,
            status,
            reason: None,
            message: None,
            observed_generation: None,
            last_transition_time: None,
            extra: Extra::new(),
        }
    }

    /// Whether the status is `True`.
    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }
}

/// Finds the condition of a type in a list.
pub fn find<'a>(conditions: &'a [Condition], type_: &ConditionType) -> Option<&'a Condition> {
    conditions.iter().find(|condition| &condition.type_ == type_)
}
