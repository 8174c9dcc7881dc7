//! `spec.backup`, `spec.initFromBackup` and `spec.restoreInPlace`.

// kube's KubeSchema derive re-declares each struct, `pub` fields and all, inside a private
// function to build its schema; rustc reports those copies as unreachable `pub` items.
#![allow(unreachable_pub, reason = "KubeSchema derive copies pub structs into a private scope")]

use k8s_openapi::api::core::v1::{PodSecurityContext, SecretKeySelector, SecurityContext};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::duration::Duration;
use crate::open_enum::open_enum;

/// Pattern of an RFC 3339 timestamp at whole-second precision with `Z` or a `±HH:MM` offset.
pub const WHOLE_SECOND_RFC3339: &str =
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$";

/// Backups of the group.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupSpec {
    /// The image that runs mysqlsh (default
    /// `container-registry.oracle.com/mysql/community-server:9.7`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "container-registry.oracle.com/mysql/community-server:9.7"))]
    pub image: Option<String>,
    /// A replica lagging more than this is not used as the dump source (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0), extend("default" = 300))]
    pub max_lag_seconds_for_source: Option<i64>,
    /// Operator-level retries of scheduled backups that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<BackupRetrySpec>,
    /// Named storage, dump and retention configurations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub profiles: Vec<BackupProfile>,
    /// Cron schedules, each creating MysqlBackups of one profile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub schedules: Vec<BackupSchedule>,
    /// Continuous binlog archiving for point-in-time restores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pitr: Option<PitrSpec>,
    /// The `sizeLimit` of the restore Jobs' staging volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staging_volume_size_limit: Option<Quantity>,
    /// Overrides merged over the hardened pod security context of backup, restore and cleanup
    /// Jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_security_context: Option<PodSecurityContext>,
    /// Overrides merged over the hardened container security context of those Jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_security_context: Option<SecurityContext>,
}

/// Retries of scheduled backups.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[x_kube(validation = Rule::new("!has(self.initialBackoff) || !has(self.maxBackoff) || duration(self.maxBackoff) >= duration(self.initialBackoff)")
    .message("maxBackoff must be at least initialBackoff"))]
#[serde(rename_all = "camelCase")]
pub struct BackupRetrySpec {
    /// Total attempts including the original (default 1: no retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10), extend("default" = 1))]
    pub max_attempts: Option<i32>,
    /// The first retry's delay, 1s to 1h (default 1m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "1m"))]
    #[x_kube(validation = Rule::new("duration(self) >= duration('1s') && duration(self) <= duration('1h')")
        .message("initialBackoff must be between 1s and 1h"))]
    pub initial_backoff: Option<Duration>,
    /// The cap on the exponential delay, 1s to 24h (default 30m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "30m"))]
    #[x_kube(validation = Rule::new("duration(self) >= duration('1s') && duration(self) <= duration('24h')")
        .message("maxBackoff must be between 1s and 24h"))]
    pub max_backoff: Option<Duration>,
}

/// A named backup configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupProfile {
    /// The profile's name, a DNS label.
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub name: String,
    /// Where dumps (and the PITR archive) are written.
    pub storage: BackupStorage,
    /// mysqlsh `util.dumpInstance()` options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dump: Option<DumpOptions>,
    /// Which of the profile's MysqlBackups are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<Retention>,
    /// Client-side envelope encryption of dumps and archived binlogs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<BackupEncryption>,
    /// Periodic restore tests of the profile's backups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<VerificationSpec>,
}

open_enum! {
    /// Where a profile writes.
    pub enum StorageType (Closed) {
        S3 = "S3",
        Pvc = "PVC",
    }
}

/// A tagged union: `type` says which of `s3` and `pvc` is set.
#[derive(KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[x_kube(
    validation = Rule::new("self.type != 'S3' || (has(self.s3) && !has(self.pvc))").message("type S3 needs s3 and no pvc"),
    validation = Rule::new("self.type != 'PVC' || (has(self.pvc) && !has(self.s3))").message("type PVC needs pvc and no s3")
)]
#[serde(rename_all = "camelCase")]
pub struct BackupStorage {
    /// `S3` or `PVC`.
    #[serde(rename = "type")]
    pub type_: StorageType,
    /// The S3 (or S3-compatible) destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Storage>,
    /// The claim destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pvc: Option<PvcStorage>,
}

/// An S3 location.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct S3Storage {
    /// The bucket.
    pub bucket: String,
    /// The key prefix; leading, trailing and repeated `/` are ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// An S3-compatible endpoint (MinIO, SeaweedFS); empty means AWS.
    #[serde(rename = "endpointURL", default, skip_serializing_if = "Option::is_none")]
    pub endpoint_url: Option<String>,
    /// A Secret with `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and optionally
    /// `AWS_SESSION_TOKEN`, `AWS_REGION`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret_name: Option<String>,
    /// The S3 storage class of uploaded objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
}

/// A claim destination: exactly one of `provisioned` and `claimName`.
#[derive(KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[x_kube(
    validation = Rule::new("has(self.provisioned) != has(self.claimName)")
        .message("set exactly one of pvc.provisioned and pvc.claimName"),
    validation = Rule::new("has(self.provisioned) == has(oldSelf.provisioned) && (!has(self.provisioned) || self.provisioned == oldSelf.provisioned)")
        .message("pvc.provisioned cannot change")
)]
#[serde(rename_all = "camelCase")]
pub struct PvcStorage {
    /// A claim the operator provisions as `mysql-<group>-backup-<profile>`; cannot change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned: Option<ProvisionedClaim>,
    /// A user-managed claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_name: Option<String>,
    /// A directory inside the claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
}

/// A claim the operator provisions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisionedClaim {
    /// The StorageClass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// The size.
    pub size: Quantity,
}

open_enum! {
    /// Dump compression.
    pub enum Compression (Closed) {
        None = "none",
        Gzip = "gzip",
        Zstd = "zstd",
    }
}

/// mysqlsh dump options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DumpOptions {
    /// Parallel dump threads (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 4))]
    pub threads: Option<i32>,
    /// Chunk size, such as `64M` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "64M"))]
    pub bytes_per_chunk: Option<String>,
    /// none, gzip or zstd (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "zstd"))]
    pub compression: Option<Compression>,
    /// A consistent dump (default true; needs BACKUP_ADMIN).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub consistent: Option<bool>,
    /// Schemas to dump (a set of at most 256 names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256), extend("x-kubernetes-list-type" = "set"))]
    pub include_schemas: Option<Vec<SchemaName>>,
    /// Schemas to leave out (a set of at most 256 names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256), extend("x-kubernetes-list-type" = "set"))]
    pub exclude_schemas: Option<Vec<SchemaName>>,
}

/// A MySQL schema name (at most 64 characters).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct SchemaName(#[schemars(length(min = 1, max = 64))] pub String);

/// Which MysqlBackups of a profile are kept. A successful backup is kept when any rule keeps
/// it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Retention {
    /// The newest this-many successful backups (default 7, at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 7))]
    pub keep_last: Option<i32>,
    /// Also every successful backup completed within this many days (at least 1; unset: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub keep_within_days: Option<i32>,
    /// The newest this-many failed backups (default 10; 0 keeps none but a schedule's latest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0), extend("default" = 10))]
    pub keep_failed: Option<i32>,
}

/// Client-side envelope encryption of a profile's artifacts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupEncryption {
    /// The cipher (default and only value AES-256-GCM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "AES-256-GCM", "enum" = ["AES-256-GCM"]))]
    pub algorithm: Option<String>,
    /// The Secret key holding the passphrase.
    pub passphrase_secret_key_ref: SecretKeySelector,
}

/// Periodic verification of a profile's backups.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationSpec {
    /// Whether verifications are scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// A five-field cron expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// An IANA zone name (default Etc/UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Etc/UTC"))]
    pub time_zone: Option<String>,
    /// Pauses the schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Which verifications are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<VerificationRetention>,
}

/// Which MysqlBackupVerifications of a profile are kept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationRetention {
    /// The newest this-many successful verifications (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0), extend("default" = 30))]
    pub keep_last: Option<i32>,
    /// The newest this-many failed verifications (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0), extend("default" = 10))]
    pub keep_failed: Option<i32>,
}

/// A cron schedule of backups.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupSchedule {
    /// The schedule's name; its CronJob is `mysql-<group>-backup-<name>`.
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub name: String,
    /// The profile the backups use.
    pub profile_name: String,
    /// A five-field cron expression.
    pub schedule: String,
    /// An IANA zone name (default Etc/UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Etc/UTC"))]
    pub time_zone: Option<String>,
    /// Pauses the schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

/// Continuous binlog archiving.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[x_kube(validation = Rule::new("!has(self.enabled) || !self.enabled || has(self.profileName)")
    .message("spec.backup.pitr.profileName is required when PITR is enabled"))]
#[serde(rename_all = "camelCase")]
pub struct PitrSpec {
    /// Whether the sidecars archive binlogs (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub enabled: Option<bool>,
    /// The profile whose storage holds the archive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_name: Option<String>,
    /// MySQL `max_binlog_size` (default 100M).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "100M"))]
    pub max_binlog_size: Option<String>,
    /// The archiver's safety-net poll (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "60s"))]
    pub archive_poll_interval: Option<Duration>,
}

/// A reference by name to an object in the same namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocalObjectReference {
    /// The object's name.
    pub name: String,
}

/// Where a restore reads its dump: exactly one of the three.
#[derive(KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[x_kube(validation = Rule::new("(has(self.backupRef) ? 1 : 0) + (has(self.s3) ? 1 : 0) + (has(self.pvc) ? 1 : 0) == 1")
    .message("set exactly one of source.backupRef, source.s3 and source.pvc"))]
#[serde(rename_all = "camelCase")]
pub struct BackupSource {
    /// A MysqlBackup in the same namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_ref: Option<LocalObjectReference>,
    /// A dump in S3, by its prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Storage>,
    /// A dump on a claim, mounted read-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pvc: Option<ClaimSource>,
}

/// A dump on a claim.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimSource {
    /// The claim.
    pub claim_name: String,
    /// The dump's directory inside the claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
}

/// mysqlsh `util.loadDump()` options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadOptions {
    /// Parallel load threads (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 4))]
    pub threads: Option<i32>,
    /// Ignore the load progress of an earlier attempt (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub reset_progress: Option<bool>,
    /// Load without writing the binlog (default true when the block is present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub skip_binlog: Option<bool>,
    /// Build secondary indexes during the load (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub load_indexes: Option<bool>,
    /// Schemas to load (a set of at most 256 names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256), extend("x-kubernetes-list-type" = "set"))]
    pub include_schemas: Option<Vec<SchemaName>>,
    /// Schemas to leave out (a set of at most 256 names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256), extend("x-kubernetes-list-type" = "set"))]
    pub exclude_schemas: Option<Vec<SchemaName>>,
}

/// The passphrase that decrypts an encrypted dump.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decryption {
    /// The Secret key holding the passphrase.
    pub passphrase_secret_key_ref: SecretKeySelector,
}

/// A bootstrap restore of a new group. Schema filters or `loadOptions.skipBinlog: false`
/// beside `pointInTime` are refused by the operator (PITRBackupFiltered, RestoreBuildFailed),
/// not by the API server.
///
/// Fixed at creation: the transition rules compare the block by value (see `init_rules`), so a
/// re-encoded `stopTime` offset or a dropped `allowPartial: false` is no change.
#[derive(KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[x_kube(
    validation = Rule::new(super::init_rules::source()).message(super::init_rules::FIXED_AT_CREATION),
    validation = Rule::new(super::init_rules::load_options()).message(super::init_rules::FIXED_AT_CREATION),
    validation = Rule::new(super::init_rules::point_in_time()).message(super::init_rules::FIXED_AT_CREATION),
    validation = Rule::new(super::init_rules::decryption()).message(super::init_rules::FIXED_AT_CREATION)
)]
#[serde(rename_all = "camelCase")]
pub struct InitFromBackupSpec {
    /// The dump to load.
    pub source: BackupSource,
    /// Load options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_options: Option<LoadOptions>,
    /// Replay the archive to a point in time after the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point_in_time: Option<PointInTimeSpec>,
    /// Decrypts the dump; defaults to the backup's recorded dump-key snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decryption: Option<Decryption>,
}

/// The target of a point-in-time restore.
#[derive(KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[x_kube(validation = Rule::new("has(self.archiveProfileName)").message(
    "pointInTime.archiveProfileName is required: name the backup profile whose PITR archive the restore reads"
))]
#[serde(rename_all = "camelCase")]
pub struct PointInTimeSpec {
    /// The target T: a whole second in RFC 3339 with `Z` or a `±HH:MM` offset.
    #[schemars(regex(
        pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
    ))]
    pub stop_time: String,
    /// The backup profile whose PITR archive the restore reads (required; optional in the type
    /// so that the API server answers with the spec's message when it is missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub archive_profile_name: Option<String>,
    /// Replay to the archive head when nothing is archived at or after the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_partial: Option<bool>,
    /// A GTID set that is never replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_gtids: Option<String>,
}

/// A destructive restore into the live primary; runs once per new `confirm`.
#[derive(KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreInPlaceSpec {
    /// An RFC 3339 timestamp that must be newer than `status.restoreInPlace.confirmTokenUsed`.
    #[schemars(extend("format" = "date-time"))]
    pub confirm: String,
    /// The dump to load.
    pub source: BackupSource,
    /// Load options; `includeSchemas` empty restores the full instance, one entry one schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("!has(self.includeSchemas) || size(self.includeSchemas) <= 1")
        .message("restoreInPlace restores the full instance or exactly one schema: loadOptions.includeSchemas takes at most one entry"))]
    pub load_options: Option<LoadOptions>,
    /// Decrypts the dump; defaults to the backup's recorded dump-key snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decryption: Option<Decryption>,
}
