//! The verification Job (pure): `bloodraven-sidecar verify` reading the backup where
//! `status.artifactStorage` records it (bucket, endpoint, region and claim from the record,
//! never from the live profile; only the S3 credentials Secret comes from the profile), the
//! claim mounted read-only, a scratch `emptyDir` for the throwaway `mysqld`, the restricted
//! security context, owned by the MysqlBackupVerification. It never connects to the group's
//! MySQL, so no MySQL credentials are mounted.
//!
//! With `pointInTime` mode Timestamp or Latest ([`VerifyPitr`]) the Job also gets the bootstrap
//! restore's PITR steps ([`crate::restore::bootstrap::pitr::add_steps`]): init containers
//! `dump-meta` and `pitr-download` (the group's own archive, `spec.backup.pitr.profileName`,
//! read-only), and `verify` replays the staged plan into its scratch server after the load
//! and writes the verdict as its termination message.

use std::collections::BTreeMap;

use bloodraven_backup::layout::{PVC_MOUNT, normalize_prefix};
use bloodraven_backup::names;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::group::{BackupProfile, StorageType};
use bloodraven_crd::verification::MysqlBackupVerification;
use bloodraven_workloads::labels;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, PersistentVolumeClaimVolumeSource,
    PodSecurityContext, PodSpec, PodTemplateSpec, SeccompProfile, SecretVolumeSource,
    SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::backup::job::{self as backup_job, AWS_CREDS_DIR};
use crate::restore::bootstrap::pitr::{self, Expected};

/// The verification container's name.
pub const CONTAINER: &str = "verify";
/// Where the scratch server's folder is mounted.
pub const SCRATCH_MOUNT: &str = "/var/lib/mysql-verify";
/// The label naming the verification on its Job and pods (what "a verification reads this
/// backup" is looked up by, with [`BACKUP_LABEL`]).
pub const VERIFICATION_LABEL: &str = "bloodraven.shipstream.io/verification";
/// The label naming the backup a verification Job reads.
pub const BACKUP_LABEL: &str = "bloodraven.shipstream.io/verified-backup";
/// How long a verification Job may run.
pub const DEADLINE_SECONDS: i64 = 3600;

/// Why no Job can be built (the verification fails before it creates anything).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyJobError {
    #[error("MysqlBackup {backup} records no status.artifactStorage location; it cannot be read")]
    NoLocation { backup: String },
    #[error(
        "MysqlBackup {backup} records location {location}, whose last segment is not the backup's name"
    )]
    BadLocation { backup: String, location: String },
    #[error("MysqlBackup {backup} records an S3 location without its bucket")]
    NoBucket { backup: String },
    #[error("MysqlBackup {backup} records a PVC location without its claim")]
    NoClaim { backup: String },
    #[error("MysqlBackup {backup} records an unknown storage type {found}")]
    UnknownStorage { backup: String, found: String },
    #[error(
        "profile {profile} has no S3 credentialsSecretName; reading the backup needs the bucket's keys"
    )]
    NoS3Credentials { profile: String },
    #[error("the object has no uid; it was not read from the API server")]
    NoUid,
    #[error("group {group} has no sites; the archive's read settings cannot be rendered")]
    NoSites { group: String },
    #[error("reading the group's archive (profile {profile}): {source}")]
    Archive {
        profile: String,
        #[source]
        source: backup_job::BuildError,
    },
}

/// The replay of a point-in-time verification (after [`super::plan::point_in_time`]).
#[derive(Debug, Clone)]
pub struct VerifyPitr<'a> {
    /// The verified group (its own archive is read).
    pub group: &'a MysqlFailoverGroup,
    /// `spec.backup.pitr.profileName`'s profile.
    pub archive_profile: &'a BackupProfile,
    /// The target of mode Timestamp; empty: mode Latest.
    pub stop_time: String,
    /// `pointInTime.excludeGtids` ("" when unset).
    pub exclude_gtids: String,
}

/// Tells the `verify` step to replay the staged plan after the load.
pub const POINT_IN_TIME_ENV: &str = "BLOODRAVEN_VERIFY_POINT_IN_TIME";

/// What the Job is built from.
#[derive(Debug, Clone)]
pub struct VerifyJobInput<'a> {
    pub verification: &'a MysqlBackupVerification,
    pub backup: &'a MysqlBackup,
    /// The backup's profile, when the group still has it (only its S3 credentials are used).
    pub profile: Option<&'a BackupProfile>,
    /// The image with the sidecar binary and mysqld.
    pub image: String,
    /// Mode Timestamp or Latest: the replay (`None`: mode None, the load only).
    pub point_in_time: Option<VerifyPitr<'a>>,
}

fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar { name: name.to_owned(), value: Some(value.into()), value_from: None }
}

/// The storage root of `location` (`s3://bucket/<prefix>/<name>` → prefix, `/backups/<sub>/<name>`
/// → sub), checking its last segment is `name`.
pub fn root_of(location: &str, name: &str) -> Option<String> {
    let (root, last) = location.trim_end_matches('/').rsplit_once('/')?;
    if last != name {
        return None;
    }
    if let Some(rest) = root.strip_prefix("s3://") {
        let prefix = rest.split_once('/').map_or("", |(_, prefix)| prefix);
        return Some(normalize_prefix(prefix));
    }
    let sub = root.strip_prefix(PVC_MOUNT)?;
    (sub.is_empty() || sub.starts_with('/')).then(|| normalize_prefix(sub))
}

/// Builds the Job.
pub fn build(input: &VerifyJobInput<'_>) -> Result<Job, VerifyJobError> {
    let verification_name = input.verification.metadata.name.clone().unwrap_or_default();
    let namespace = input.verification.metadata.namespace.clone().unwrap_or_default();
    let uid = input.verification.metadata.uid.clone().ok_or(VerifyJobError::NoUid)?;
    let backup_name = input.backup.metadata.name.clone().unwrap_or_default();
    let backup_uid = input.backup.metadata.uid.clone().ok_or(VerifyJobError::NoUid)?;
    let status = input.backup.status.clone().unwrap_or_default();
    let artifact = status.artifact_storage.clone().unwrap_or_default();
    let location = artifact
        .location
        .clone()
        .ok_or_else(|| VerifyJobError::NoLocation { backup: backup_name.clone() })?;
    let root = root_of(&location, &backup_name).ok_or_else(|| VerifyJobError::BadLocation {
        backup: backup_name.clone(),
        location: location.clone(),
    })?;
    let group = input.verification.spec.failover_group_ref.name.clone();
    let job_name = names::verification_job_name(&verification_name);

    let mut labels_map = BTreeMap::new();
    labels_map.insert(VERIFICATION_LABEL.to_owned(), verification_name.clone());
    labels_map.insert(BACKUP_LABEL.to_owned(), backup_name.clone());
    labels_map.insert(labels::INSTANCE.to_owned(), group);
    labels_map.insert(labels::MANAGED_BY.to_owned(), labels::MANAGER.to_owned());

    let mut envs = vec![
        env("BLOODRAVEN_BACKUP_NAME", backup_name.clone()),
        env("BLOODRAVEN_BACKUP_UID", backup_uid),
        env("BLOODRAVEN_SOURCE_UID", status.failover_group_uid.clone().unwrap_or_default()),
        env("BLOODRAVEN_BACKUP_GTID_EXECUTED", status.gtid_executed.clone().unwrap_or_default()),
        env("BLOODRAVEN_VERIFY_SCRATCH", SCRATCH_MOUNT),
        env("TZ", "UTC"),
        env("HOME", "/tmp"),
    ];
    let mut volumes = vec![
        Volume {
            name: "scratch".to_owned(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        },
        Volume {
            name: "tmp".to_owned(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        },
    ];
    let mut mounts = vec![
        VolumeMount {
            name: "scratch".to_owned(),
            mount_path: SCRATCH_MOUNT.to_owned(),
            ..VolumeMount::default()
        },
        VolumeMount {
            name: "tmp".to_owned(),
            mount_path: "/tmp".to_owned(),
            ..VolumeMount::default()
        },
    ];
    match artifact.type_.clone() {
        Some(StorageType::S3) => {
            let bucket = artifact
                .bucket
                .clone()
                .ok_or_else(|| VerifyJobError::NoBucket { backup: backup_name.clone() })?;
            let profile_name = input.backup.spec.profile_name.clone();
            let creds = input
                .profile
                .and_then(|p| p.storage.s3.as_ref())
                .and_then(|s3| s3.credentials_secret_name.clone())
                .ok_or(VerifyJobError::NoS3Credentials { profile: profile_name })?;
            envs.extend([
                env("BLOODRAVEN_STORAGE_TYPE", "S3"),
                env("BLOODRAVEN_S3_BUCKET", bucket),
                env("BLOODRAVEN_S3_PREFIX", root),
                env("BLOODRAVEN_S3_ENDPOINT", artifact.endpoint.clone().unwrap_or_default()),
                env("BLOODRAVEN_S3_REGION", artifact.region.clone().unwrap_or_default()),
                env("BLOODRAVEN_AWS_CREDS_DIR", AWS_CREDS_DIR),
            ]);
            volumes.push(Volume {
                name: "aws-creds".to_owned(),
                secret: Some(SecretVolumeSource {
                    secret_name: Some(creds),
                    default_mode: Some(0o400),
                    ..SecretVolumeSource::default()
                }),
                ..Volume::default()
            });
            mounts.push(VolumeMount {
                name: "aws-creds".to_owned(),
                mount_path: AWS_CREDS_DIR.to_owned(),
                read_only: Some(true),
                ..VolumeMount::default()
            });
        }
        Some(StorageType::Pvc) => {
            let claim = artifact
                .claim_name
                .clone()
                .ok_or_else(|| VerifyJobError::NoClaim { backup: backup_name.clone() })?;
            envs.extend([
                env("BLOODRAVEN_STORAGE_TYPE", "PVC"),
                env("BLOODRAVEN_PVC_MOUNT", PVC_MOUNT),
                env("BLOODRAVEN_PVC_SUB_PATH", root),
            ]);
            volumes.push(Volume {
                name: "backups".to_owned(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim,
                    read_only: Some(true),
                }),
                ..Volume::default()
            });
            mounts.push(VolumeMount {
                name: "backups".to_owned(),
                mount_path: PVC_MOUNT.to_owned(),
                read_only: Some(true),
                ..VolumeMount::default()
            });
        }
        other => {
            return Err(VerifyJobError::UnknownStorage {
                backup: backup_name,
                found: other.map_or_else(|| "(none)".to_owned(), |t| t.as_str().to_owned()),
            });
        }
    }

    let runtime_default =
        || Some(SeccompProfile { type_: "RuntimeDefault".to_owned(), localhost_profile: None });
    let container = Container {
        name: CONTAINER.to_owned(),
        image: Some(input.image.clone()),
        command: Some(vec!["bloodraven-sidecar".to_owned(), "verify".to_owned()]),
        env: Some(envs),
        volume_mounts: Some(mounts),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities { drop: Some(vec!["ALL".to_owned()]), add: None }),
            seccomp_profile: runtime_default(),
            ..SecurityContext::default()
        }),
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        ..Container::default()
    };
    let mut job = Job {
        metadata: ObjectMeta {
            name: Some(job_name),
            namespace: Some(namespace),
            labels: Some(labels_map.clone()),
            owner_references: Some(vec![OwnerReference {
                api_version: "shipstream.io/v1alpha1".to_owned(),
                kind: "MysqlBackupVerification".to_owned(),
                name: verification_name,
                uid,
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            active_deadline_seconds: Some(DEADLINE_SECONDS),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels_map), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".to_owned()),
                    containers: vec![container],
                    volumes: Some(volumes),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        run_as_user: Some(27),
                        run_as_group: Some(27),
                        fs_group: Some(27),
                        seccomp_profile: runtime_default(),
                        ..PodSecurityContext::default()
                    }),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: None,
    };
    if let Some(replay) = &input.point_in_time {
        add_point_in_time(&mut job, input, replay)?;
    }
    Ok(job)
}

/// The PITR steps of a verification Job: the archive profile's storage rendered as the backup
/// Job builder renders it (only its storage settings and volumes are used; it never connects to
/// MySQL, so the credentials are placeholders), then the bootstrap restore's steps with `verify`
/// as the main container.
fn add_point_in_time(
    job: &mut Job,
    input: &VerifyJobInput<'_>,
    replay: &VerifyPitr<'_>,
) -> Result<(), VerifyJobError> {
    let group = replay.group;
    let site = group.spec.sites.first().ok_or_else(|| VerifyJobError::NoSites {
        group: group.metadata.name.clone().unwrap_or_default(),
    })?;
    let placeholders: BTreeMap<String, k8s_openapi::ByteString> = ["MYSQL_USER", "MYSQL_PASSWORD"]
        .into_iter()
        .map(|key| (key.to_owned(), k8s_openapi::ByteString(Vec::new())))
        .collect();
    let archive = backup_job::build(&backup_job::Input {
        backup: input.backup,
        group,
        profile: replay.archive_profile,
        site,
        image: input.image.clone(),
        pitr_archive_id: String::new(),
        credentials: &placeholders,
        attempt: 1,
    })
    .map_err(|source| VerifyJobError::Archive {
        profile: replay.archive_profile.name.clone(),
        source,
    })?;
    let expected = Expected::of_backup(replay.stop_time.clone(), false, input.backup);
    let gtid_executed = input
        .backup
        .status
        .as_ref()
        .and_then(|status| status.gtid_executed.clone())
        .unwrap_or_default();
    pitr::add_steps(
        job,
        &pitr::Steps {
            exclude_gtids: replay.exclude_gtids.clone(),
            expected: &expected,
            main_subcommand: "verify",
            backup_gtid_executed: gtid_executed,
            archive: &archive.job,
        },
    );
    if let Some(main) = job
        .spec
        .as_mut()
        .and_then(|spec| spec.template.spec.as_mut())
        .and_then(|pod| pod.containers.first_mut())
    {
        main.env.get_or_insert_with(Vec::new).push(env(POINT_IN_TIME_ENV, "true"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_storage_root_comes_from_the_recorded_location() {
        assert_eq!(root_of("s3://bk/orders/x/b1", "b1").as_deref(), Some("orders/x"));
        assert_eq!(root_of("s3://bk/b1", "b1").as_deref(), Some(""));
        assert_eq!(root_of("/backups/b1", "b1").as_deref(), Some(""));
        assert_eq!(root_of("/backups/sub/b1", "b1").as_deref(), Some("sub"));
        assert_eq!(root_of("/backups/b10", "b1"), None);
        assert_eq!(root_of("/elsewhere/b1", "b1"), None);
        assert_eq!(root_of("/backupsx/b1", "b1"), None);
    }

    fn input_objects(artifact: serde_json::Value) -> (MysqlBackupVerification, MysqlBackup) {
        let verification = serde_json::from_value(json!({
            "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackupVerification",
            "metadata": { "name": "v1", "namespace": "orders", "uid": "uid-v1" },
            "spec": { "failoverGroupRef": { "name": "orders" }, "profileName": "pvc" },
        }))
        .unwrap();
        let backup = serde_json::from_value(json!({
            "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
            "metadata": { "name": "b1", "namespace": "orders", "uid": "uid-b1" },
            "spec": { "failoverGroupRef": { "name": "orders" }, "profileName": "pvc" },
            "status": { "phase": "Succeeded", "artifactStorage": artifact, "gtidExecuted": "a:1-3" },
        }))
        .unwrap();
        (verification, backup)
    }

    fn env_of(job: &Job) -> BTreeMap<String, String> {
        job.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0]
            .env
            .clone()
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.value.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn a_pvc_backup_is_read_from_its_recorded_claim_read_only() {
        let (verification, backup) = input_objects(
            json!({ "type": "PVC", "location": "/backups/sub/b1", "claimName": "recorded" }),
        );
        let job = build(&VerifyJobInput {
            verification: &verification,
            backup: &backup,
            profile: None,
            image: "img".to_owned(),
            point_in_time: None,
        })
        .unwrap();
        assert_eq!(job.metadata.name.as_deref(), Some("mysqlverify-v1"));
        let env = env_of(&job);
        assert_eq!(env["BLOODRAVEN_PVC_SUB_PATH"], "sub");
        assert_eq!(env["BLOODRAVEN_BACKUP_GTID_EXECUTED"], "a:1-3");
        assert!(!env.contains_key("MYSQL_HOST"), "a verification never reaches the group");
        let pod = job.spec.as_ref().unwrap().template.spec.clone().unwrap();
        let claim = pod.volumes.unwrap().into_iter().find(|v| v.name == "backups").unwrap();
        let claim = claim.persistent_volume_claim.unwrap();
        assert_eq!((claim.claim_name.as_str(), claim.read_only), ("recorded", Some(true)));
        let labels = job.metadata.labels.unwrap();
        assert_eq!(labels[BACKUP_LABEL], "b1");
        assert_eq!(labels[VERIFICATION_LABEL], "v1");
    }

    #[test]
    fn an_s3_backup_needs_the_profiles_keys_and_uses_the_recorded_bucket() {
        let (verification, backup) = input_objects(json!({
            "type": "S3", "location": "s3://recorded/pre/b1", "bucket": "recorded",
            "endpoint": "http://127.0.0.1:9000", "region": "r",
        }));
        let mut input = VerifyJobInput {
            verification: &verification,
            backup: &backup,
            profile: None,
            image: "img".to_owned(),
            point_in_time: None,
        };
        assert!(matches!(build(&input), Err(VerifyJobError::NoS3Credentials { .. })));
        let profile: BackupProfile = serde_json::from_value(json!({
            "name": "s3", "storage": { "type": "S3", "s3": {
                "bucket": "today", "prefix": "elsewhere", "credentialsSecretName": "keys" } },
        }))
        .unwrap();
        input.profile = Some(&profile);
        let env = env_of(&build(&input).unwrap());
        assert_eq!(env["BLOODRAVEN_S3_BUCKET"], "recorded");
        assert_eq!(env["BLOODRAVEN_S3_PREFIX"], "pre");
        assert_eq!(env["BLOODRAVEN_S3_ENDPOINT"], "http://127.0.0.1:9000");
    }
}
