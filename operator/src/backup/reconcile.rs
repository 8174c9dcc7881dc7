//! One reconcile of a `MysqlBackup` (IO): observe its Job if it has one, else select the
//! source, build and create the credentials Secret and the Job, recording the destination in
//! `status.artifactStorage` first. The watch loop around it is [`super::controller`].

use std::collections::BTreeMap;

use anyhow::Context as _;
use bloodraven_backup::names;
use bloodraven_backup::source::{self, Selection, SiteView};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup, MysqlBackupStatus};
use bloodraven_crd::condition::{Condition, ConditionReason, ConditionStatus, ConditionType};
use bloodraven_crd::group::SiteState;
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, LogParams, Patch, PatchParams, PostParams};

use super::job::{self, Input};
use super::verdict::{self, set_condition};

/// What a reconcile did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The backup is terminal; nothing to do.
    Done,
    /// The backup waits (pending reason).
    Pending(String),
    /// The Job was created.
    JobCreated(String),
    /// The Job was observed; the backup's phase now.
    Observed(Option<BackupPhase>),
    /// The backup failed before a Job (the Ready reason).
    Failed(String),
}

fn ready(
    status: &mut MysqlBackupStatus,
    value: ConditionStatus,
    reason: ConditionReason,
    message: String,
    now: &Time,
) {
    let mut condition = Condition::new(ConditionType::Ready, value);
    condition.reason = Some(reason);
    condition.message = Some(message);
    condition.last_transition_time = Some(now.clone());
    set_condition(&mut status.conditions, condition);
}

async fn write_status(
    api: &Api<MysqlBackup>,
    name: &str,
    status: &MysqlBackupStatus,
) -> anyhow::Result<()> {
    let patch = serde_json::json!({ "status": status });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("cannot write the status of MysqlBackup {name}"))?;
    Ok(())
}

/// The group's sites as source selection sees them.
fn site_views(group: &MysqlFailoverGroup) -> Vec<SiteView> {
    let status = group.status.as_ref();
    let active = status.and_then(|s| s.active_site.clone());
    group
        .spec
        .sites
        .iter()
        .map(|site| {
            let observed = status.and_then(|s| s.sites.iter().find(|o| o.name == site.name));
            let state = observed.and_then(|o| o.state.clone());
            SiteView {
                name: site.name.clone(),
                primary: active.as_deref() == Some(site.name.as_str()),
                reachable: matches!(state, Some(SiteState::Writable | SiteState::ReadOnly)),
                replicating: observed.and_then(|o| o.replicating).unwrap_or(false),
                lag_seconds: observed.and_then(|o| o.seconds_behind_source),
            }
        })
        .collect()
}

/// The log of the Job's pod, when one can be read.
async fn job_log(pods: &Api<Pod>, job_name: &str) -> Option<String> {
    let list =
        pods.list(&ListParams::default().labels(&format!("job-name={job_name}"))).await.ok()?;
    let pod = list.items.into_iter().next()?;
    pods.logs(pod.metadata.name.as_deref()?, &LogParams::default()).await.ok()
}

/// Reconciles MysqlBackup `name` in `namespace`; `image` is the image with the sidecar binary.
pub async fn reconcile(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    image: &str,
    now: Time,
) -> anyhow::Result<Outcome> {
    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), namespace);
    let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
    let backup = backups
        .get(name)
        .await
        .with_context(|| format!("cannot read MysqlBackup {namespace}/{name}"))?;
    let mut status = backup.status.clone().unwrap_or_default();
    if matches!(status.phase, Some(BackupPhase::Succeeded | BackupPhase::Failed)) {
        return Ok(Outcome::Done);
    }
    let job_name = names::backup_job_name(name);

    if let Some(job) =
        jobs.get_opt(&job_name).await.with_context(|| format!("cannot read Job {job_name}"))?
    {
        let state = verdict::job_state(&job);
        let log = match state {
            verdict::JobState::Active { .. } => None,
            _ => job_log(&Api::namespaced(client.clone(), namespace), &job_name).await,
        };
        if status.artifact_storage.is_none() {
            // The status write of the launch was lost: recover the destination from the Job.
            status.artifact_storage = job::recorded_location(&job).map(|location| {
                bloodraven_crd::backup::ArtifactStorage {
                    location: Some(location),
                    ..Default::default()
                }
            });
        }
        let next = verdict::next_status(&status, &state, log.as_deref(), &now);
        if next != status {
            write_status(&backups, name, &next).await?;
        }
        return Ok(Outcome::Observed(next.phase));
    }

    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), namespace);
    let group_name = backup.spec.failover_group_ref.name.clone();
    let fail = |mut status: MysqlBackupStatus, reason: ConditionReason, message: String| {
        status.phase = Some(BackupPhase::Failed);
        status.completion_time = Some(now.clone());
        status.message = Some(message.clone());
        ready(&mut status, ConditionStatus::False, reason, message, &now);
        status
    };
    let Some(group) =
        groups.get_opt(&group_name).await.context("cannot read the failover group")?
    else {
        let message = format!("the failover group {group_name} does not exist");
        write_status(
            &backups,
            name,
            &fail(status, ConditionReason::BuildJobFailed, message.clone()),
        )
        .await?;
        return Ok(Outcome::Failed(message));
    };
    let profile = group
        .spec
        .backup
        .as_ref()
        .and_then(|b| b.profiles.iter().find(|p| p.name == backup.spec.profile_name))
        .cloned();
    let Some(profile) = profile else {
        let message =
            format!("the group {group_name} has no backup profile {}", backup.spec.profile_name);
        write_status(
            &backups,
            name,
            &fail(status, ConditionReason::BuildJobFailed, message.clone()),
        )
        .await?;
        return Ok(Outcome::Failed(message));
    };
    let max_lag = group.spec.backup.as_ref().and_then(|b| b.max_lag_seconds_for_source);
    let site_name = match source::select_source(
        &site_views(&group),
        backup.spec.source_site.as_deref(),
        max_lag,
    ) {
        Selection::Site { site, .. } => site,
        Selection::Fail { message } => {
            write_status(
                &backups,
                name,
                &fail(status, ConditionReason::NoHealthySource, message.clone()),
            )
            .await?;
            return Ok(Outcome::Failed(message));
        }
        Selection::Wait { message } => {
            let since = backup.metadata.creation_timestamp.clone().map_or(now.0, |t| t.0);
            if let Some(timeout) =
                source::pending_timed_out(since, now.0, "WaitingForHealthySource", &message)
            {
                write_status(
                    &backups,
                    name,
                    &fail(status, ConditionReason::NoHealthySource, timeout.clone()),
                )
                .await?;
                return Ok(Outcome::Failed(timeout));
            }
            status.phase = Some(BackupPhase::Pending);
            ready(
                &mut status,
                ConditionStatus::False,
                ConditionReason::WaitingForHealthySource,
                message.clone(),
                &now,
            );
            write_status(&backups, name, &status).await?;
            return Ok(Outcome::Pending(message));
        }
    };
    let site = group
        .spec
        .sites
        .iter()
        .find(|s| s.name == site_name)
        .cloned()
        .context("the selected site vanished")?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret_name = job::credentials_secret_name(&group)?;
    let secret = secrets
        .get(&secret_name)
        .await
        .with_context(|| format!("cannot read the credentials Secret {secret_name}"))?;
    let mut credentials: BTreeMap<String, ByteString> = secret.data.unwrap_or_default();
    // An API server folds stringData into data; the lab keeps it as written.
    for (key, value) in secret.string_data.unwrap_or_default() {
        credentials.entry(key).or_insert_with(|| ByteString(value.into_bytes()));
    }
    let attempt = backup
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(names::ATTEMPT_ANNOTATION))
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    // The group's active PITR archive, pinned on the Job and stamped with the dump (empty when
    // PITR is off): a point-in-time restore or verification replays only that archive.
    let pitr_archive_id = match bloodraven_workloads::pitr::render(&group) {
        Ok(render) => render.map(|render| render.archive_id.to_string()).unwrap_or_default(),
        Err(error) => {
            tracing::warn!(
                %namespace,
                backup = %name,
                %error,
                "cannot resolve the group's PITR archive; the backup's stamp names none, so it cannot seed a point-in-time restore"
            );
            String::new()
        }
    };
    let built = match job::build(&Input {
        backup: &backup,
        group: &group,
        profile: &profile,
        site: &site,
        image: group
            .spec
            .sidecar
            .as_ref()
            .and_then(|sidecar| sidecar.image.clone())
            .unwrap_or_else(|| image.to_owned()),
        pitr_archive_id: pitr_archive_id.clone(),
        credentials: &credentials,
        attempt,
    }) {
        Ok(built) => built,
        Err(error) => {
            let message = error.to_string();
            write_status(
                &backups,
                name,
                &fail(status, ConditionReason::BuildJobFailed, message.clone()),
            )
            .await?;
            return Ok(Outcome::Failed(message));
        }
    };
    // The destination is recorded before the Job exists.
    status.phase = Some(BackupPhase::Running);
    status.job_name = Some(job_name.clone());
    status.source_site = Some(site_name.clone());
    status.artifact_storage = Some(built.artifact_storage.clone());
    status.failover_group_uid = group.metadata.uid.clone();
    status.pitr_archive_id = Some(pitr_archive_id);
    status.attempt = Some(i32::try_from(attempt).unwrap_or(i32::MAX));
    ready(
        &mut status,
        ConditionStatus::False,
        ConditionReason::Running,
        format!("the backup Job {job_name} dumps site {site_name}"),
        &now,
    );
    write_status(&backups, name, &status).await?;
    match secrets.create(&PostParams::default(), &built.secret).await {
        Ok(_) => {}
        Err(kube::Error::Api(response)) if response.code == 409 => {}
        Err(error) => return Err(error).context("cannot create the backup's credentials Secret"),
    }
    jobs.create(&PostParams::default(), &built.job)
        .await
        .with_context(|| format!("cannot create Job {job_name}"))?;
    Ok(Outcome::JobCreated(job_name))
}
