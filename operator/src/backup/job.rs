//! The backup Job of one `MysqlBackup` (pure): a `bloodraven-sidecar backup` container reading
//! the source site's internal Service, its derived credentials Secret (mounted as files, mode
//! 0400, never `envFrom`), the profile's storage (S3 credentials Secret, or the claim at
//! `/backups`), the restricted security context, and the destination recorded in
//! `status.artifactStorage` before the Job runs.

use std::collections::BTreeMap;

use bloodraven_backup::layout::{ArtifactLayout, LayoutError, PVC_MOUNT};
use bloodraven_backup::names;
use bloodraven_crd::backup::{ArtifactStorage, MysqlBackup};
use bloodraven_crd::group::{BackupProfile, MysqlFailoverGroup, SiteSpec, StorageType};
use bloodraven_workloads::{labels, names::SiteNames, names::service_dns_name};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, PersistentVolumeClaimVolumeSource,
    PodSecurityContext, PodSpec, PodTemplateSpec, SeccompProfile, Secret, SecretVolumeSource,
    SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

/// Where the MySQL credentials are mounted.
pub const MYSQL_CREDS_DIR: &str = "/run/bloodraven/mysql-creds";
/// Where the S3 credentials are mounted.
pub const AWS_CREDS_DIR: &str = "/run/bloodraven/aws-creds";
/// The backup container's name.
pub const CONTAINER: &str = "backup";

/// Why no Job can be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Name(#[from] LayoutError),
    #[error("the MysqlBackup has no uid; it was not read from the API server")]
    NoUid,
    #[error("profile {profile} has storage type S3 but no s3 block")]
    NoS3 { profile: String },
    #[error(
        "profile {profile} has storage type PVC but names neither pvc.claimName nor pvc.provisioned"
    )]
    NoClaim { profile: String },
    #[error(
        "profile {profile} has S3 storage without credentialsSecretName; the backup Job needs the bucket's keys"
    )]
    NoS3Credentials { profile: String },
    #[error("profile {profile} has an unknown storage type {found}")]
    UnknownStorage { profile: String, found: String },
    #[error(
        "the group has no spec.credentials; the backup needs credentials.backupSecretName or operatorSecretName"
    )]
    NoCredentials,
    #[error("the credentials Secret {secret} has no {key} key")]
    MissingKey { secret: String, key: &'static str },
}

/// What the Job is built from.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    pub backup: &'a MysqlBackup,
    pub group: &'a MysqlFailoverGroup,
    pub profile: &'a BackupProfile,
    /// The selected (pinned) source site.
    pub site: &'a SiteSpec,
    /// The image with the sidecar binary.
    pub image: String,
    /// The group's active PITR archive ID ("" when PITR is off).
    pub pitr_archive_id: String,
    /// The data of the backup credentials Secret.
    pub credentials: &'a BTreeMap<String, ByteString>,
    /// The launch attempt (1 for a first run).
    pub attempt: u32,
}

/// The built objects.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    pub job: Job,
    pub secret: Secret,
    pub artifact_storage: ArtifactStorage,
}

/// The Secret the backup reads its MySQL account from.
pub fn credentials_secret_name(group: &MysqlFailoverGroup) -> Result<String, BuildError> {
    let credentials = group.spec.credentials.as_ref().ok_or(BuildError::NoCredentials)?;
    Ok(credentials
        .backup_secret_name
        .clone()
        .unwrap_or_else(|| credentials.operator_secret_name.clone()))
}

pub(crate) fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar { name: name.to_owned(), value: Some(value.into()), value_from: None }
}

fn owner(backup: &MysqlBackup, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: "shipstream.io/v1alpha1".to_owned(),
        kind: "MysqlBackup".to_owned(),
        name: backup.metadata.name.clone().unwrap_or_default(),
        uid: uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

pub(crate) fn secret_volume(name: &str, secret: &str) -> Volume {
    Volume {
        name: name.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_owned()),
            default_mode: Some(0o400),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// Builds the Job, its Secret and the destination to record.
pub fn build(input: &Input<'_>) -> Result<Built, BuildError> {
    let backup_name = input.backup.metadata.name.clone().unwrap_or_default();
    let namespace = input.backup.metadata.namespace.clone().unwrap_or_default();
    let uid = input.backup.metadata.uid.clone().ok_or(BuildError::NoUid)?;
    let group_name = input.group.metadata.name.clone().unwrap_or_default();
    let group_uid = input.group.metadata.uid.clone().unwrap_or_default();
    let layout = ArtifactLayout::new(&backup_name)?;
    let profile = input.profile;
    let job_name = names::backup_job_name(&backup_name);
    let secret_name = names::credentials_secret_name(&backup_name);

    let source_secret = credentials_secret_name(input.group)?;
    let mut data = BTreeMap::new();
    for key in ["MYSQL_USER", "MYSQL_PASSWORD"] {
        // The username may also be stored as `username`/`password` in older Secrets.
        let alternative = if key == "MYSQL_USER" { "username" } else { "password" };
        let value = input
            .credentials
            .get(key)
            .or_else(|| input.credentials.get(alternative))
            .ok_or(BuildError::MissingKey { secret: source_secret.clone(), key })?;
        data.insert(key.to_owned(), value.clone());
    }

    let mut labels_map = BTreeMap::new();
    labels_map.insert(names::BACKUP_LABEL.to_owned(), backup_name.clone());
    labels_map.insert(labels::INSTANCE.to_owned(), group_name.clone());
    labels_map.insert(labels::MANAGED_BY.to_owned(), labels::MANAGER.to_owned());
    let mut annotations = BTreeMap::new();
    annotations.insert(names::GROUP_UID_ANNOTATION.to_owned(), group_uid.clone());
    annotations.insert(names::ARCHIVE_ID_ANNOTATION.to_owned(), input.pitr_archive_id.clone());
    annotations.insert(names::ATTEMPT_ANNOTATION.to_owned(), input.attempt.to_string());

    let site_names = SiteNames::new(&group_name, &input.site.name);
    let mut envs = vec![
        env("BLOODRAVEN_BACKUP_NAME", backup_name.clone()),
        env("BLOODRAVEN_BACKUP_UID", uid.clone()),
        env("POD_NAMESPACE", namespace.clone()),
        env("BLOODRAVEN_GROUP", group_name.clone()),
        env("BLOODRAVEN_GROUP_UID", group_uid),
        env("BLOODRAVEN_PITR_ARCHIVE_ID", input.pitr_archive_id.clone()),
        env("BLOODRAVEN_SITE", input.site.name.clone()),
        env("BLOODRAVEN_SOURCE_SERVER_ID", input.site.server_id.to_string()),
        env("MYSQL_HOST", service_dns_name(&site_names.internal_service, &namespace)),
        env("MYSQL_PORT", bloodraven_workloads::ports::MYSQL.to_string()),
        env("BLOODRAVEN_MYSQL_CREDS_DIR", MYSQL_CREDS_DIR),
        env("TZ", "UTC"),
        env("HOME", "/tmp"),
    ];
    let dump = profile.dump.as_ref();
    if let Some(compression) = dump.and_then(|d| d.compression.as_ref()) {
        // Chunks are zstd frames or plain SQL; gzip is written as zstd (crate README).
        let value = if compression.as_str() == "none" { "none" } else { "zstd" };
        envs.push(env("BLOODRAVEN_DUMP_COMPRESSION", value));
    }
    if let Some(bytes) = dump.and_then(|d| d.bytes_per_chunk.clone()) {
        envs.push(env("BLOODRAVEN_DUMP_BYTES_PER_CHUNK", bytes));
    }
    let join = |schemas: Option<&Vec<bloodraven_crd::group::SchemaName>>| {
        schemas
            .map(|list| list.iter().map(|s| s.0.as_str()).collect::<Vec<_>>().join(","))
            .unwrap_or_default()
    };
    envs.push(env(
        "BLOODRAVEN_DUMP_INCLUDE_SCHEMAS",
        join(dump.and_then(|d| d.include_schemas.as_ref())),
    ));
    envs.push(env(
        "BLOODRAVEN_DUMP_EXCLUDE_SCHEMAS",
        join(dump.and_then(|d| d.exclude_schemas.as_ref())),
    ));

    let mut volumes = vec![
        secret_volume("mysql-creds", &secret_name),
        Volume {
            name: "tmp".to_owned(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        },
    ];
    let mut mounts = vec![
        VolumeMount {
            name: "mysql-creds".to_owned(),
            mount_path: MYSQL_CREDS_DIR.to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        },
        VolumeMount {
            name: "tmp".to_owned(),
            mount_path: "/tmp".to_owned(),
            ..VolumeMount::default()
        },
    ];
    let mut artifact = ArtifactStorage {
        type_: Some(profile.storage.type_.clone()),
        ..ArtifactStorage::default()
    };
    let profile_name = profile.name.clone();
    match &profile.storage.type_ {
        StorageType::S3 => {
            let s3 = profile
                .storage
                .s3
                .as_ref()
                .ok_or(BuildError::NoS3 { profile: profile_name.clone() })?;
            let creds = s3
                .credentials_secret_name
                .clone()
                .ok_or(BuildError::NoS3Credentials { profile: profile_name.clone() })?;
            let prefix = s3.prefix.clone().unwrap_or_default();
            let location = layout.s3_location(&s3.bucket, &prefix);
            envs.extend([
                env("BLOODRAVEN_STORAGE_TYPE", "S3"),
                env("BLOODRAVEN_S3_BUCKET", s3.bucket.clone()),
                env("BLOODRAVEN_S3_PREFIX", prefix),
                env("BLOODRAVEN_S3_ENDPOINT", s3.endpoint_url.clone().unwrap_or_default()),
                env("BLOODRAVEN_S3_REGION", s3.region.clone().unwrap_or_default()),
                env("BLOODRAVEN_AWS_CREDS_DIR", AWS_CREDS_DIR),
                env("BLOODRAVEN_BACKUP_LOCATION", location.clone()),
            ]);
            volumes.push(secret_volume("aws-creds", &creds));
            mounts.push(VolumeMount {
                name: "aws-creds".to_owned(),
                mount_path: AWS_CREDS_DIR.to_owned(),
                read_only: Some(true),
                ..VolumeMount::default()
            });
            artifact.location = Some(location);
            artifact.bucket = Some(s3.bucket.clone());
            artifact.endpoint = Some(s3.endpoint_url.clone().unwrap_or_default());
            artifact.region = s3.region.clone();
        }
        StorageType::Pvc => {
            let pvc = profile
                .storage
                .pvc
                .as_ref()
                .ok_or(BuildError::NoClaim { profile: profile_name.clone() })?;
            let claim = match (&pvc.claim_name, &pvc.provisioned) {
                (Some(claim), _) => claim.clone(),
                (None, Some(_)) => names::provisioned_claim_name(&group_name, &profile_name),
                (None, None) => return Err(BuildError::NoClaim { profile: profile_name }),
            };
            let sub_path = pvc.sub_path.clone().unwrap_or_default();
            let location = layout.pvc_location(Some(&sub_path));
            envs.extend([
                env("BLOODRAVEN_STORAGE_TYPE", "PVC"),
                env("BLOODRAVEN_PVC_MOUNT", PVC_MOUNT),
                env("BLOODRAVEN_PVC_SUB_PATH", sub_path),
                env("BLOODRAVEN_BACKUP_LOCATION", location.clone()),
            ]);
            volumes.push(Volume {
                name: "backups".to_owned(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim.clone(),
                    read_only: Some(false),
                }),
                ..Volume::default()
            });
            mounts.push(VolumeMount {
                name: "backups".to_owned(),
                mount_path: PVC_MOUNT.to_owned(),
                ..VolumeMount::default()
            });
            artifact.location = Some(location);
            artifact.claim_name = Some(claim);
        }
        other => {
            return Err(BuildError::UnknownStorage {
                profile: profile_name,
                found: other.as_str().to_owned(),
            });
        }
    }

    let owner = owner(input.backup, &uid);
    let metadata = |name: &str| ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.clone()),
        labels: Some(labels_map.clone()),
        annotations: Some(annotations.clone()),
        owner_references: Some(vec![owner.clone()]),
        ..ObjectMeta::default()
    };
    let runtime_default =
        || Some(SeccompProfile { type_: "RuntimeDefault".to_owned(), localhost_profile: None });
    let container = Container {
        name: CONTAINER.to_owned(),
        image: Some(input.image.clone()),
        command: Some(vec!["bloodraven-sidecar".to_owned(), "backup".to_owned()]),
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
    let job = Job {
        metadata: metadata(&job_name),
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels_map.clone()),
                    ..ObjectMeta::default()
                }),
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
    let secret = Secret {
        metadata: metadata(&secret_name),
        data: Some(data),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    };
    Ok(Built { job, secret, artifact_storage: artifact })
}

/// The destination the Job writes, read back from its main container's environment (for a
/// backup whose `status.artifactStorage` write was lost). `None` when the Job has no literal
/// `BLOODRAVEN_BACKUP_LOCATION`.
pub fn recorded_location(job: &Job) -> Option<String> {
    let container = job
        .spec
        .as_ref()?
        .template
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == CONTAINER)?;
    let var = container.env.as_ref()?.iter().find(|e| e.name == "BLOODRAVEN_BACKUP_LOCATION")?;
    if var.value_from.is_some() {
        return None;
    }
    var.value.clone()
}
