//! `MysqlBackupVerification` (`mbv`): restore a backup into a throwaway MySQL to prove it loads.

// kube's KubeSchema derive re-declares each struct, `pub` fields and all, inside a private
// function to build its schema; rustc reports those copies as unreachable `pub` items.
#![allow(unreachable_pub, reason = "KubeSchema derive copies pub structs into a private scope")]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Extra;
use crate::condition::Condition;
use crate::group::{LocalObjectReference, PointInTimeMode, PointInTimeResult};
use crate::open_enum::open_enum;

/// Desired state of a `MysqlBackupVerification`.
#[derive(CustomResource, JsonSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "shipstream.io",
    version = "v1alpha1",
    kind = "MysqlBackupVerification",
    namespaced,
    status = "MysqlBackupVerificationStatus",
    shortname = "mbv",
    derive = "PartialEq",
    selectable = ".spec.failoverGroupRef.name",
    selectable = ".spec.profileName",
    doc = "A restore test of one MysqlBackup, optionally replaying the PITR archive",
    printcolumn = r#"{"name":"Group","type":"string","jsonPath":".spec.failoverGroupRef.name"}"#,
    printcolumn = r#"{"name":"Profile","type":"string","jsonPath":".spec.profileName"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Started","type":"date","jsonPath":".status.startTime"}"#,
    printcolumn = r#"{"name":"Completed","type":"date","jsonPath":".status.completionTime"}"#,
    printcolumn = r#"{"name":"Backup","type":"string","priority":1,"jsonPath":".status.backupRef.name"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MysqlBackupVerificationSpec {
    /// The group whose backup is verified.
    pub failover_group_ref: LocalObjectReference,
    /// The profile whose backups are verified.
    pub profile_name: String,
    /// The backup to verify (default: the profile's latest Succeeded backup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_ref: Option<LocalObjectReference>,
    /// Replay the group's PITR archive after the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point_in_time: Option<VerificationPointInTime>,
}

/// The replay of a verification.
#[derive(KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[x_kube(validation = Rule::new("self.mode != 'Timestamp' || has(self.stopTime)")
    .message("pointInTime.stopTime is required with mode Timestamp"))]
#[serde(rename_all = "camelCase")]
pub struct VerificationPointInTime {
    /// None (default), Latest or Timestamp.
    #[schemars(extend("default" = "None"))]
    pub mode: PointInTimeMode,
    /// The target of mode Timestamp: a whole second in RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(
        pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
    ))]
    pub stop_time: Option<String>,
    /// A GTID set that is never replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_gtids: Option<String>,
}

open_enum! {
    /// `status.phase` of a verification.
    pub enum VerificationPhase (Open) {
        Pending = "Pending",
        Provisioning = "Provisioning",
        Restoring = "Restoring",
        Checking = "Checking",
        Cleaning = "Cleaning",
        Succeeded = "Succeeded",
        Failed = "Failed",
    }
}

/// Observed state of a `MysqlBackupVerification`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MysqlBackupVerificationStatus {
    /// The lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<VerificationPhase>,
    /// Verified (its reason is a PITR token on refusal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The generation the status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// The backup that was verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_ref: Option<VerifiedBackup>,
    /// The verification Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// The accepted replay verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point_in_time: Option<PointInTimeResult>,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The backup a verification read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifiedBackup {
    /// The MysqlBackup's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its UID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Its `status.artifactStorage.location`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}
