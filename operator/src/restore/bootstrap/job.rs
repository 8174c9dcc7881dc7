//! The bootstrap restore Job (pure): the backup Job builder's container, storage and
//! credentials mounts ([`crate::backup::job::build`]) with the new group's profile of the
//! backup's name, turned into `bloodraven-sidecar restore` (a load into an empty server, the
//! dump's `GTID_PURGED` included) against the seed's internal Service, as the operator account
//! (the restore account), owned by the group, named [`super::plan::job_name`]. With
//! `pointInTime`, [`super::pitr::add_steps`] adds the PITR steps.

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::group::SiteSpec;
use bloodraven_workloads::names::{SiteNames, service_dns_name};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::backup::job::{self as backup_job, BuildError};

/// The label naming the group on its bootstrap restore Job, its pods and its Secret.
pub const BOOTSTRAP_LABEL: &str = "bloodraven.shipstream.io/bootstrap-restore";

/// Why the bootstrap restore Job cannot be built (recorded Failed with a RestoreBuildFailed
/// Event; no Job is created).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BootstrapJobError {
    /// `spec.initFromBackup.source` names no MysqlBackup.
    #[error(
        "spec.initFromBackup.source names no backupRef; this operator restores at bootstrap only from a MysqlBackup (direct s3 and pvc sources are not built yet)"
    )]
    NoBackupRef,
    /// `spec.initFromBackup.pointInTime` is refused before any Job ([`super::pitr::check`]).
    #[error(transparent)]
    PointInTime(#[from] super::pitr::PitrBuildError),
    /// The MysqlBackup is not Succeeded.
    #[error(
        "MysqlBackup {backup} is not Succeeded (phase {phase}); restore from a finished backup"
    )]
    NotSucceeded {
        /// The backup.
        backup: String,
        /// Its phase.
        phase: String,
    },
    /// The MysqlBackup's profile is not in the group's `spec.backup.profiles`.
    #[error(
        "MysqlBackup {backup} was taken with profile {profile}, which this group's spec.backup.profiles lacks; declare a profile of that name pointing at the backup's storage"
    )]
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

/// What the Job is built from.
#[derive(Debug, Clone)]
pub struct BootstrapJobInput<'a> {
    /// The new group (its uid owns the Job).
    pub group: &'a MysqlFailoverGroup,
    /// The backup to load.
    pub backup: &'a MysqlBackup,
    /// The seed.
    pub site: &'a SiteSpec,
    /// The image with the sidecar binary.
    pub image: String,
    /// The operator account (`username`, `password`).
    pub operator_credentials: &'a BTreeMap<String, ByteString>,
}

/// The built Job and the Secret it mounts.
#[derive(Debug, Clone, PartialEq)]
pub struct BootstrapJob {
    /// The Job.
    pub job: Job,
    /// Its MySQL credentials Secret.
    pub secret: Secret,
}

/// Builds the bootstrap restore Job.
pub fn build(input: &BootstrapJobInput<'_>) -> Result<BootstrapJob, BootstrapJobError> {
    let backup_name = input.backup.metadata.name.clone().unwrap_or_default();
    let point_in_time = match input.group.spec.init_from_backup.as_ref() {
        Some(init) => match init.point_in_time.as_ref() {
            Some(point_in_time) => {
                Some((point_in_time, super::pitr::check(input.group, init, point_in_time)?))
            }
            None => None,
        },
        None => None,
    };
    let phase = input.backup.status.as_ref().and_then(|status| status.phase.clone());
    if phase != Some(bloodraven_crd::backup::BackupPhase::Succeeded) {
        return Err(BootstrapJobError::NotSucceeded {
            backup: backup_name,
            phase: phase.map_or_else(|| "unset".to_owned(), |p| p.as_str().to_owned()),
        });
    }
    let profile = input
        .group
        .spec
        .backup
        .as_ref()
        .and_then(|backup| {
            backup.profiles.iter().find(|p| p.name == input.backup.spec.profile_name)
        })
        .ok_or_else(|| BootstrapJobError::NoProfile {
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
    let archive = match point_in_time {
        Some((point_in_time, archive_profile)) => {
            let archive = backup_job::build(&backup_job::Input {
                backup: input.backup,
                group: input.group,
                profile: archive_profile,
                site: input.site,
                image: input.image.clone(),
                pitr_archive_id: String::new(),
                credentials: input.operator_credentials,
                attempt: 1,
            })?;
            Some((point_in_time, archive.job))
        }
        None => None,
    };
    let group_name = input.group.metadata.name.clone().unwrap_or_default();
    let namespace = input.group.metadata.namespace.clone().unwrap_or_default();
    let name = super::plan::job_name(&group_name);
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
    let relabel = |labels: &mut BTreeMap<String, String>| {
        // Not the backup's Job: the backup controller must not take it for its own.
        labels.remove(bloodraven_backup::names::BACKUP_LABEL);
        labels.insert(BOOTSTRAP_LABEL.to_owned(), group_name.clone());
    };
    for metadata in [&mut job.metadata, &mut secret.metadata] {
        metadata.owner_references = Some(vec![owner.clone()]);
        relabel(metadata.labels.get_or_insert_with(BTreeMap::new));
    }
    job.metadata.name = Some(name.clone());
    secret.metadata.name = Some(secret_name.clone());
    let host = service_dns_name(
        &SiteNames::new(&group_name, &input.site.name).internal_service,
        &namespace,
    );
    if let Some(spec) = job.spec.as_mut() {
        // A failed Job stays until a human deletes it (the documented retry).
        spec.ttl_seconds_after_finished = None;
        let template = &mut spec.template;
        if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            relabel(labels);
        }
        if let Some(pod) = template.spec.as_mut() {
            for volume in pod.volumes.iter_mut().flatten() {
                if let Some(source) = volume.secret.as_mut()
                    && volume.name == "mysql-creds"
                {
                    source.secret_name = Some(secret_name.clone());
                }
                // The dump source is only read.
                if let Some(claim) = volume.persistent_volume_claim.as_mut() {
                    claim.read_only = Some(true);
                }
            }
            for container in &mut pod.containers {
                container.name = "restore".to_owned();
                container.command =
                    Some(vec!["bloodraven-sidecar".to_owned(), "restore".to_owned()]);
                for mount in container.volume_mounts.iter_mut().flatten() {
                    if mount.name == "backups" {
                        mount.read_only = Some(true);
                    }
                }
                let envs = container.env.get_or_insert_with(Vec::new);
                // The dump's settings do not apply to a load; the target is the seed.
                envs.retain(|env| !env.name.starts_with("BLOODRAVEN_DUMP_"));
                for env in envs.iter_mut() {
                    if env.name == "MYSQL_HOST" {
                        env.value = Some(host.clone());
                    }
                }
            }
        }
    }
    if let Some((point_in_time, archive)) = &archive {
        let expected = super::pitr::Expected::new(point_in_time, input.backup);
        let gtid_executed = input
            .backup
            .status
            .as_ref()
            .and_then(|status| status.gtid_executed.clone())
            .unwrap_or_default();
        super::pitr::add_steps(
            &mut job,
            &super::pitr::Steps {
                exclude_gtids: point_in_time.exclude_gtids.clone().unwrap_or_default(),
                expected: &expected,
                main_subcommand: "pitr-restore",
                backup_gtid_executed: gtid_executed,
                archive,
            },
        );
    }
    Ok(BootstrapJob { job, secret })
}
