//! The in-place restore Job (pure): the backup Job builder's container, storage and
//! credentials mounts ([`crate::backup::job::build`]), turned into `bloodraven-sidecar restore
//! --in-place` against the primary's internal Service, as the operator account (the restore
//! account), owned by the group, named after the run.

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::group::SiteSpec;
use bloodraven_workloads::names::{SiteNames, service_dns_name};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{EnvVar, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::backup::job::{self as backup_job, BuildError};

/// The label naming the run on the Job, its pods and its Secret.
pub const RUN_LABEL: &str = "bloodraven.shipstream.io/restore-run";

/// Why the restore Job cannot be built (the run fails before it creates anything).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreJobError {
    /// `spec.restoreInPlace.source` names no MysqlBackup.
    #[error(
        "spec.restoreInPlace.source names no backupRef; this operator restores in place only from a MysqlBackup"
    )]
    NoBackupRef,
    /// The MysqlBackup's profile is not in `spec.backup.profiles`.
    #[error("MysqlBackup {backup} names profile {profile}, which spec.backup.profiles lacks")]
    NoProfile {
        /// The backup.
        backup: String,
        /// Its profile.
        profile: String,
    },
    /// The backup Job builder refused.
    #[error("building the restore Job: {0}")]
    Build(#[from] BuildError),
}

/// The restore Job's name: `mysql-<group>-<site>-inplace-restore-<run>` (the run's first
/// eight characters), cut to 63.
pub fn job_name(group: &str, site: &str, run_id: &str) -> String {
    let run: String = run_id.chars().filter(char::is_ascii_alphanumeric).take(8).collect();
    let mut name = format!("mysql-{group}-{site}-inplace-restore-{}", run.to_ascii_lowercase());
    name.truncate(63);
    name.trim_end_matches('-').to_owned()
}

/// What the Job is built from.
#[derive(Debug, Clone)]
pub struct RestoreJobInput<'a> {
    /// The group (its uid owns the Job).
    pub group: &'a MysqlFailoverGroup,
    /// The backup to load.
    pub backup: &'a MysqlBackup,
    /// The primary.
    pub site: &'a SiteSpec,
    /// The run.
    pub run_id: &'a str,
    /// The image with the sidecar binary.
    pub image: String,
    /// The operator credentials Secret's data (the restore account).
    pub operator_credentials: &'a BTreeMap<String, ByteString>,
}

/// The built Job and the Secret it mounts.
#[derive(Debug, Clone, PartialEq)]
pub struct RestoreJob {
    /// The Job.
    pub job: Job,
    /// Its MySQL credentials Secret (the operator account).
    pub secret: Secret,
}

/// Builds the restore Job.
pub fn build(input: &RestoreJobInput<'_>) -> Result<RestoreJob, RestoreJobError> {
    let backup_name = input.backup.metadata.name.clone().unwrap_or_default();
    let profile = input
        .group
        .spec
        .backup
        .as_ref()
        .and_then(|backup| {
            backup.profiles.iter().find(|p| p.name == input.backup.spec.profile_name)
        })
        .ok_or_else(|| RestoreJobError::NoProfile {
            backup: backup_name.clone(),
            profile: input.backup.spec.profile_name.clone(),
        })?;
    let built = backup_job::build(&backup_job::Input {
        backup: input.backup,
        group: input.group,
        profile,
        site: input.site,
        image: input.image.clone(),
        pitr_archive_id: String::new(),
        credentials: input.operator_credentials,
        attempt: 1,
    })?;
    let group_name = input.group.metadata.name.clone().unwrap_or_default();
    let namespace = input.group.metadata.namespace.clone().unwrap_or_default();
    let name = job_name(&group_name, &input.site.name, input.run_id);
    let secret_name = format!("{name}-creds");
    let owner = OwnerReference {
        api_version: "shipstream.io/v1alpha1".to_owned(),
        kind: "MysqlFailoverGroup".to_owned(),
        name: group_name.clone(),
        uid: input.group.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let mut job = built.job;
    let mut secret = built.secret;
    for metadata in [&mut job.metadata, &mut secret.metadata] {
        metadata.owner_references = Some(vec![owner.clone()]);
        metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(RUN_LABEL.to_owned(), input.run_id.to_owned());
    }
    job.metadata.name = Some(name.clone());
    secret.metadata.name = Some(secret_name.clone());
    let host = service_dns_name(
        &SiteNames::new(&group_name, &input.site.name).internal_service,
        &namespace,
    );
    if let Some(template) = job.spec.as_mut().map(|spec| &mut spec.template) {
        if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.insert(RUN_LABEL.to_owned(), input.run_id.to_owned());
        }
        if let Some(pod) = template.spec.as_mut() {
            for volume in pod.volumes.iter_mut().flatten() {
                if let Some(source) = volume.secret.as_mut()
                    && volume.name == "mysql-creds"
                {
                    source.secret_name = Some(secret_name.clone());
                }
            }
            for container in &mut pod.containers {
                container.name = "restore".to_owned();
                container.command = Some(vec![
                    "bloodraven-sidecar".to_owned(),
                    "restore".to_owned(),
                    "--in-place".to_owned(),
                ]);
                let envs = container.env.get_or_insert_with(Vec::new);
                // The dump's settings do not apply to a load; the target is the primary.
                envs.retain(|env| !env.name.starts_with("BLOODRAVEN_DUMP_"));
                for env in envs.iter_mut() {
                    if env.name == "MYSQL_HOST" {
                        env.value = Some(host.clone());
                    }
                }
                envs.push(EnvVar {
                    name: "BLOODRAVEN_RESTORE_IN_PLACE".to_owned(),
                    value: Some("true".to_owned()),
                    value_from: None,
                });
                envs.push(EnvVar {
                    name: "BLOODRAVEN_RESTORE_RUN".to_owned(),
                    value: Some(input.run_id.to_owned()),
                    value_from: None,
                });
            }
        }
    }
    Ok(RestoreJob { job, secret })
}
