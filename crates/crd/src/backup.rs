//! `MysqlBackup` (`mb`): one backup run.

// kube's KubeSchema derive re-declares each struct, `pub` fields and all, inside a private
// function to build its schema; rustc reports those copies as unreachable `pub` items.
#![allow(unreachable_pub, reason = "KubeSchema derive copies pub structs into a private scope")]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Extra;
use crate::condition::Condition;
use crate::group::{LocalObjectReference, StorageType};
use crate::open_enum::open_enum;

open_enum! {
    /// What deleting the MysqlBackup does to its artifact.
    pub enum DeletionPolicy (Closed) {
        /// A cleanup Job deletes the artifact (the default).
        Delete = "Delete",
        /// The artifact, its stamp and its dump-key snapshot stay in storage.
        Retain = "Retain",
    }
}

/// Desired state of a `MysqlBackup`.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "shipstream.io",
    version = "v1alpha1",
    kind = "MysqlBackup",
    namespaced,
    status = "MysqlBackupStatus",
    shortname = "mb",
    derive = "PartialEq",
    selectable = ".spec.failoverGroupRef.name",
    selectable = ".spec.profileName",
    doc = "One mysqlsh dump of a MysqlFailoverGroup to a backup profile's storage",
    validation = Rule::new(
        "!has(oldSelf.status) || !has(oldSelf.status.artifactStorage) || (has(self.status) && has(self.status.artifactStorage) && self.status.artifactStorage == oldSelf.status.artifactStorage)"
    ).message("status.artifactStorage cannot change or be removed once recorded"),
    printcolumn = r#"{"name":"Group","type":"string","jsonPath":".spec.failoverGroupRef.name"}"#,
    printcolumn = r#"{"name":"Profile","type":"string","jsonPath":".spec.profileName"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Started","type":"date","jsonPath":".status.startTime"}"#,
    printcolumn = r#"{"name":"Completed","type":"date","jsonPath":".status.completionTime"}"#,
    printcolumn = r#"{"name":"Location","type":"string","priority":1,"jsonPath":".status.artifactStorage.location"}"#,
    printcolumn = r#"{"name":"Size","type":"integer","priority":1,"jsonPath":".status.sizeBytes"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MysqlBackupSpec {
    /// The group to back up.
    pub failover_group_ref: LocalObjectReference,
    /// The group's backup profile to use.
    pub profile_name: String,
    /// Pins the dump source; fails at once with NoHealthySource when it cannot be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_site: Option<String>,
    /// Delete (default) or Retain the artifact when the MysqlBackup is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Delete"))]
    pub deletion_policy: Option<DeletionPolicy>,
}

open_enum! {
    /// `status.phase` of a MysqlBackup.
    pub enum BackupPhase (Open) {
        Pending = "Pending",
        Running = "Running",
        Succeeded = "Succeeded",
        Failed = "Failed",
    }
}

/// Observed state of a `MysqlBackup`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MysqlBackupStatus {
    /// Pending, Running, Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BackupPhase>,
    /// Ready, MetadataComplete, ArtifactCleanup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The generation the status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the backup Job started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When it ended (includes the upload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// The attempt number in a scheduled retry chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i32>,
    /// The site the dump was taken from (pinned once the Job exists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_site: Option<String>,
    /// The backup Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// Where the Job writes; recorded at Job creation and immutable once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_storage: Option<ArtifactStorage>,
    /// The source's `GTID_EXECUTED` before the dump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gtid_executed: Option<String>,
    /// The source's binlog file at the dump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binlog_file: Option<String>,
    /// The position in that file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binlog_pos: Option<i64>,
    /// The artifact's size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<i64>,
    /// The source group's UID, pinned on the Job.
    #[serde(rename = "failoverGroupUID", default, skip_serializing_if = "Option::is_none")]
    pub failover_group_uid: Option<String>,
    /// The group's active PITR archive when the Job was built; empty when PITR was off.
    #[serde(rename = "pitrArchiveID", default, skip_serializing_if = "Option::is_none")]
    pub pitr_archive_id: Option<String>,
    /// Recorded just before the first cleanup Job is created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_start_time: Option<Time>,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.artifactStorage`: the exact destination the backup Job writes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactStorage {
    /// S3 or PVC.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    // A spec enum, but status is open: an older CRD must accept a newer operator's value.
    #[schemars(with = "Option<String>")]
    pub type_: Option<StorageType>,
    /// The artifact location; its last segment is the backup's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The bucket (S3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
    /// The endpoint (S3; empty means AWS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The region (S3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// The claim (PVC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_name: Option<String>,
    /// The dump-key snapshot Secret of an encrypted backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passphrase_secret_key_ref: Option<RecordedSecretKeyRef>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.artifactStorage.passphraseSecretKeyRef`: a key of a Secret, as the operator recorded
/// it. The shape of `SecretKeySelector`, but a status record: a newer operator's fields survive.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordedSecretKeyRef {
    /// The Secret's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The key in the Secret.
    pub key: String,
    /// Whether the Secret or its key may be absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
    /// Fields a newer operator wrote that this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}
