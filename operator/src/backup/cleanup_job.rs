//! The cleanup Job `mysqlcleanup-<backup>` (pure): `bloodraven-sidecar artifact-cleanup` with
//! the destination recorded in `status.artifactStorage` (never the profile's current one), the
//! profile's current S3 credentials Secret or the recorded claim at `/backups`, the hardened
//! security context, a 10-minute deadline and no in-Job retries (the operator retries). It
//! never connects to MySQL, so no MySQL credentials are mounted.

use std::collections::BTreeMap;

use bloodraven_backup::layout::PVC_MOUNT;
use bloodraven_backup::names;
use bloodraven_crd::backup::{ArtifactStorage, MysqlBackup};
use bloodraven_crd::group::StorageType;
use bloodraven_workloads::labels;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, PersistentVolumeClaimVolumeSource,
    PodSecurityContext, PodSpec, PodTemplateSpec, SeccompProfile, SecurityContext, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::cleanup::{JOB_DEADLINE_SECONDS, invalid_destination};
use super::job::{AWS_CREDS_DIR, env, secret_volume};

/// The label every cleanup Job and pod carries: the backup's name.
pub const CLEANUP_LABEL: &str = "bloodraven.shipstream.io/backup-cleanup";
/// The cleanup container's name.
pub const CONTAINER: &str = "cleanup";

/// Why no cleanup Job can be built (`CleanupJobInvalid`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CleanupBuildError {
    #[error("{0}")]
    Destination(String),
    #[error("the MysqlBackup has no uid; it was not read from the API server")]
    NoUid,
}

/// Builds the cleanup Job of `backup` from `artifact`; `s3_credentials` is the profile's
/// current `credentialsSecretName` (S3 only), `image` the image with the sidecar binary.
pub fn build(
    backup: &MysqlBackup,
    artifact: &ArtifactStorage,
    s3_credentials: Option<&str>,
    image: &str,
) -> Result<Job, CleanupBuildError> {
    if let Some(why) = invalid_destination(artifact) {
        return Err(CleanupBuildError::Destination(why));
    }
    let name = backup.metadata.name.clone().unwrap_or_default();
    let namespace = backup.metadata.namespace.clone().unwrap_or_default();
    let uid = backup.metadata.uid.clone().ok_or(CleanupBuildError::NoUid)?;
    let location = artifact.location.clone().unwrap_or_default();
    let succeeded = backup.status.as_ref().and_then(|s| s.phase.clone())
        == Some(bloodraven_crd::backup::BackupPhase::Succeeded);
    let mut envs = vec![
        // A backup that never succeeded: only what its own stamp vouches for is deleted.
        env("BLOODRAVEN_CLEANUP_ABANDONED", if succeeded { "false" } else { "true" }),
        env("BLOODRAVEN_BACKUP_NAME", name.clone()),
        env("BLOODRAVEN_BACKUP_UID", uid.clone()),
        env("BLOODRAVEN_BACKUP_LOCATION", location),
        env("TZ", "UTC"),
        env("HOME", "/tmp"),
    ];
    let mut volumes = vec![Volume {
        name: "tmp".to_owned(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }];
    let mut mounts = vec![VolumeMount {
        name: "tmp".to_owned(),
        mount_path: "/tmp".to_owned(),
        ..VolumeMount::default()
    }];
    match &artifact.type_ {
        Some(StorageType::S3) => {
            envs.extend([
                env("BLOODRAVEN_STORAGE_TYPE", "S3"),
                env("BLOODRAVEN_S3_BUCKET", artifact.bucket.clone().unwrap_or_default()),
                env("BLOODRAVEN_S3_ENDPOINT", artifact.endpoint.clone().unwrap_or_default()),
                env("BLOODRAVEN_S3_REGION", artifact.region.clone().unwrap_or_default()),
            ]);
            if let Some(secret) = s3_credentials {
                envs.push(env("BLOODRAVEN_AWS_CREDS_DIR", AWS_CREDS_DIR));
                volumes.push(secret_volume("aws-creds", secret));
                mounts.push(VolumeMount {
                    name: "aws-creds".to_owned(),
                    mount_path: AWS_CREDS_DIR.to_owned(),
                    read_only: Some(true),
                    ..VolumeMount::default()
                });
            }
        }
        _ => {
            envs.extend([
                env("BLOODRAVEN_STORAGE_TYPE", "PVC"),
                env("BLOODRAVEN_PVC_MOUNT", PVC_MOUNT),
            ]);
            volumes.push(Volume {
                name: "backups".to_owned(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: artifact.claim_name.clone().unwrap_or_default(),
                    read_only: Some(false),
                }),
                ..Volume::default()
            });
            mounts.push(VolumeMount {
                name: "backups".to_owned(),
                mount_path: PVC_MOUNT.to_owned(),
                ..VolumeMount::default()
            });
        }
    }
    let mut labels_map = BTreeMap::new();
    labels_map.insert(names::BACKUP_LABEL.to_owned(), name.clone());
    labels_map.insert(CLEANUP_LABEL.to_owned(), name.clone());
    labels_map.insert(labels::MANAGED_BY.to_owned(), labels::MANAGER.to_owned());
    let runtime_default =
        || Some(SeccompProfile { type_: "RuntimeDefault".to_owned(), localhost_profile: None });
    let container = Container {
        name: CONTAINER.to_owned(),
        image: Some(image.to_owned()),
        command: Some(vec!["bloodraven-sidecar".to_owned(), "artifact-cleanup".to_owned()]),
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
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(names::cleanup_job_name(&name)),
            namespace: Some(namespace),
            labels: Some(labels_map.clone()),
            owner_references: Some(vec![OwnerReference {
                api_version: "shipstream.io/v1alpha1".to_owned(),
                kind: "MysqlBackup".to_owned(),
                name,
                uid,
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            active_deadline_seconds: Some(JOB_DEADLINE_SECONDS),
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backup() -> MysqlBackup {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
            "metadata": { "name": "b1", "namespace": "orders", "uid": "u-1" },
            "spec": { "failoverGroupRef": { "name": "orders" }, "profileName": "p" },
        }))
        .unwrap()
    }

    fn env_of(job: &Job) -> BTreeMap<String, String> {
        let container = &job.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0];
        container
            .env
            .iter()
            .flatten()
            .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn the_job_deletes_the_recorded_destination() {
        let artifact = ArtifactStorage {
            type_: Some(StorageType::S3),
            location: Some("s3://old-bucket/orders/b1".into()),
            bucket: Some("old-bucket".into()),
            endpoint: Some("http://127.0.0.1:9000".into()),
            region: Some("us-east-1".into()),
            ..ArtifactStorage::default()
        };
        let job = build(&backup(), &artifact, Some("keys"), "img").unwrap();
        assert_eq!(job.metadata.name.as_deref(), Some("mysqlcleanup-b1"));
        let env = env_of(&job);
        assert_eq!(env["BLOODRAVEN_BACKUP_LOCATION"], "s3://old-bucket/orders/b1");
        assert_eq!(env["BLOODRAVEN_S3_BUCKET"], "old-bucket");
        assert_eq!(env["BLOODRAVEN_S3_ENDPOINT"], "http://127.0.0.1:9000");
        assert!(!env.contains_key("BLOODRAVEN_MYSQL_CREDS_DIR"), "no MySQL credentials");
        let spec = job.spec.unwrap();
        assert_eq!(spec.active_deadline_seconds, Some(600));
        assert_eq!(spec.backoff_limit, Some(0));
    }

    #[test]
    fn a_pvc_job_mounts_the_recorded_claim() {
        let artifact = ArtifactStorage {
            type_: Some(StorageType::Pvc),
            location: Some("/backups/sub/b1".into()),
            claim_name: Some("recorded".into()),
            ..ArtifactStorage::default()
        };
        let job = build(&backup(), &artifact, None, "img").unwrap();
        let pod = job.spec.unwrap().template.spec.unwrap();
        let claim = pod.volumes.unwrap().into_iter().find_map(|v| v.persistent_volume_claim);
        assert_eq!(claim.unwrap().claim_name, "recorded");
        let bad = ArtifactStorage { claim_name: None, ..artifact };
        assert!(build(&backup(), &bad, None, "img").is_err());
    }
}
