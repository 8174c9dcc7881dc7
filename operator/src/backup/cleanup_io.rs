//! Artifact cleanup, IO: the finalizer on live backups, and one pass over a deleted backup —
//! observe (the cleanup Job and its pod, the producing Job's pods, verifications reading the
//! backup, the profile's S3 credentials), [`cleanup::decide`], apply. Events are returned for
//! the controller to publish.

use std::time::Duration;

use anyhow::Context as _;
use bloodraven_backup::names;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, DeletionPolicy, MysqlBackup};
use bloodraven_crd::condition::{Condition, ConditionStatus, ConditionType};
use bloodraven_crd::verification::{MysqlBackupVerification, VerificationPhase};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::cleanup::{self, CleanupJob, Decision, Input, Note};
use super::cleanup_job::{self, CLEANUP_LABEL};
use super::verdict::{self, set_condition};

/// What a pass over a deleted backup did.
#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    /// Events to publish on the backup.
    pub notes: Vec<Note>,
    /// Look again after this (`None`: the finalizer was released).
    pub requeue: Option<Duration>,
}

/// Adds the finalizer to a live backup that lacks it. `true` when it was added.
pub async fn ensure_finalizer(
    api: &Api<MysqlBackup>,
    backup: &MysqlBackup,
) -> anyhow::Result<bool> {
    if backup.metadata.deletion_timestamp.is_some() {
        return Ok(false);
    }
    let mut finalizers = backup.metadata.finalizers.clone().unwrap_or_default();
    if finalizers.iter().any(|f| f == names::FINALIZER) {
        return Ok(false);
    }
    finalizers.push(names::FINALIZER.to_owned());
    let name = backup.metadata.name.clone().unwrap_or_default();
    let patch = json!({ "metadata": {
        "finalizers": finalizers,
        "resourceVersion": backup.metadata.resource_version,
    }});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("cannot add the finalizer to MysqlBackup {name}"))?;
    Ok(true)
}

async fn release(api: &Api<MysqlBackup>, backup: &MysqlBackup) -> anyhow::Result<()> {
    let name = backup.metadata.name.clone().unwrap_or_default();
    let finalizers: Vec<String> = backup
        .metadata
        .finalizers
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f != names::FINALIZER)
        .collect();
    let patch = json!({ "metadata": {
        "finalizers": finalizers,
        "resourceVersion": backup.metadata.resource_version,
    }});
    match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(response)) if response.code == 404 => Ok(()),
        Err(error) => Err(error).with_context(|| format!("cannot release MysqlBackup {name}")),
    }
}

fn running(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && matches!(phase, Some("Pending" | "Running") | None)
}

async fn pods_of(pods: &Api<Pod>, selector: &str) -> anyhow::Result<Vec<Pod>> {
    Ok(pods
        .list(&ListParams::default().labels(selector))
        .await
        .with_context(|| format!("cannot list pods {selector}"))?
        .items)
}

fn owned_by(job: &Job, uid: &str) -> bool {
    job.metadata.owner_references.iter().flatten().any(|owner| owner.uid == uid)
}

async fn observe_job(
    jobs: &Api<Job>,
    pods: &Api<Pod>,
    backup: &MysqlBackup,
    now: jiff::Timestamp,
) -> anyhow::Result<CleanupJob> {
    let name = backup.metadata.name.clone().unwrap_or_default();
    let uid = backup.metadata.uid.clone().unwrap_or_default();
    let job_name = names::cleanup_job_name(&name);
    let job_pods = pods_of(pods, &format!("job-name={job_name}")).await?;
    let Some(job) =
        jobs.get_opt(&job_name).await.with_context(|| format!("cannot read Job {job_name}"))?
    else {
        return Ok(if job_pods.iter().any(running) {
            CleanupJob::Stopping
        } else {
            CleanupJob::Absent
        });
    };
    if !owned_by(&job, &uid) {
        let owner =
            job.metadata.owner_references.iter().flatten().next().map_or_else(
                || "nothing (no owner)".to_owned(),
                |o| format!("{} {}", o.kind, o.name),
            );
        return Ok(CleanupJob::Foreign { owner });
    }
    if job.metadata.deletion_timestamp.is_some() {
        return Ok(CleanupJob::Stopping);
    }
    let pod = job_pods.iter().max_by_key(|p| p.metadata.creation_timestamp.clone());
    let container = pod
        .and_then(|p| p.status.as_ref())
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|statuses| statuses.first());
    match verdict::job_state(&job) {
        verdict::JobState::Active { .. } => {
            let waiting = container
                .and_then(|c| c.state.as_ref())
                .and_then(|s| s.waiting.as_ref())
                .and_then(|w| {
                    let reason = w.reason.clone().unwrap_or_default();
                    (!reason.is_empty()
                        && reason != "ContainerCreating"
                        && reason != "PodInitializing")
                        .then(|| {
                            [reason, w.message.clone().unwrap_or_default()]
                                .into_iter()
                                .filter(|p| !p.is_empty())
                                .collect::<Vec<_>>()
                                .join(": ")
                        })
                });
            let started = container
                .and_then(|c| c.state.as_ref())
                .is_some_and(|s| s.running.is_some() || s.terminated.is_some());
            let since = pod
                .and_then(|p| p.metadata.creation_timestamp.clone())
                .or(job.metadata.creation_timestamp.clone())
                .map_or(now, |t| t.0);
            Ok(CleanupJob::Active { waiting, stuck_since: Some(since), started })
        }
        verdict::JobState::Succeeded { .. } => {
            let message = container
                .and_then(|c| c.state.as_ref())
                .and_then(|s| s.terminated.as_ref())
                .and_then(|t| t.message.clone());
            let mut found = message.as_deref().and_then(cleanup::verdict);
            if found.is_none()
                && let Some(pod_name) = pod.and_then(|p| p.metadata.name.as_deref())
                && let Ok(log) = pods.logs(pod_name, &LogParams::default()).await
            {
                found = cleanup::verdict(&log);
            }
            Ok(CleanupJob::Succeeded { verdict: found })
        }
        verdict::JobState::Failed { completion, message, .. } => {
            let terminated =
                container.and_then(|c| c.state.as_ref()).and_then(|s| s.terminated.as_ref());
            let exit_code = terminated.map(|t| t.exit_code);
            let detail = terminated
                .and_then(|t| t.message.as_deref())
                .and_then(cleanup::verdict)
                .and_then(|v| match v {
                    cleanup::Verdict::Failed(reason) => Some(reason),
                    _ => None,
                });
            Ok(CleanupJob::Failed {
                exit_code,
                message: detail.unwrap_or(message),
                finished: completion.map_or(now, |t| t.0),
            })
        }
    }
}

async fn verification_reading(
    client: &kube::Client,
    namespace: &str,
    backup: &str,
) -> anyhow::Result<Option<String>> {
    let api: Api<MysqlBackupVerification> = Api::namespaced(client.clone(), namespace);
    let list = match api.list(&ListParams::default()).await {
        Ok(list) => list,
        // The verification CRD is not installed: nothing reads the backup.
        Err(kube::Error::Api(response)) if response.code == 404 => return Ok(None),
        Err(error) => return Err(error).context("cannot list verifications"),
    };
    Ok(list.items.into_iter().find_map(|v| {
        let target = v
            .status
            .as_ref()
            .and_then(|s| s.backup_ref.as_ref())
            .and_then(|r| r.name.clone())
            .or_else(|| v.spec.backup_ref.as_ref().map(|r| r.name.clone()));
        let phase = v.status.as_ref().and_then(|s| s.phase.clone());
        let done = matches!(phase, Some(VerificationPhase::Succeeded | VerificationPhase::Failed));
        (target.as_deref() == Some(backup) && !done)
            .then(|| v.metadata.name.clone().unwrap_or_default())
    }))
}

/// One pass over backup `backup`, which has a deletion timestamp and our finalizer.
pub async fn pass(
    client: &kube::Client,
    backup: &MysqlBackup,
    image: &str,
    now: jiff::Timestamp,
) -> anyhow::Result<Pass> {
    let name = backup.metadata.name.clone().unwrap_or_default();
    let namespace = backup.metadata.namespace.clone().unwrap_or_default();
    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), &namespace);
    let jobs: Api<Job> = Api::namespaced(client.clone(), &namespace);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let status = backup.status.clone().unwrap_or_default();

    let producer_name = names::backup_job_name(&name);
    let producer = jobs.get_opt(&producer_name).await.context("cannot read the backup Job")?;
    let producer_running: Vec<String> = pods_of(&pods, &format!("job-name={producer_name}"))
        .await?
        .iter()
        .filter(|p| running(p))
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    let mut artifact = status.artifact_storage.clone();
    if artifact.as_ref().and_then(|a| a.location.as_ref()).is_none() {
        // A lost status write: the producing Job still says where it wrote.
        if let Some(location) = producer.as_ref().and_then(super::job::recorded_location) {
            let mut recovered = artifact.unwrap_or_default();
            recovered.location = Some(location);
            artifact = Some(recovered);
        }
    }
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), &namespace);
    let group = groups.get_opt(&backup.spec.failover_group_ref.name).await.ok().flatten();
    let s3_credentials = group
        .as_ref()
        .and_then(|g| g.spec.backup.as_ref())
        .and_then(|b| b.profiles.iter().find(|p| p.name == backup.spec.profile_name))
        .and_then(|p| p.storage.s3.as_ref())
        .and_then(|s3| s3.credentials_secret_name.clone());
    let finalizers = backup.metadata.finalizers.clone().unwrap_or_default();
    let input = Input {
        backup: name.clone(),
        retain: backup.spec.deletion_policy == Some(DeletionPolicy::Retain),
        phase: status.phase.clone(),
        artifact: artifact.clone(),
        cleanup_started: status.cleanup_start_time.as_ref().map(|t| t.0),
        foreground: finalizers.iter().any(|f| f == "foregroundDeletion"),
        orphan: finalizers.iter().any(|f| f == "orphan"),
        read_by: verification_reading(client, &namespace, &name).await?,
        producer_running,
        producer_exists: producer.as_ref().is_some_and(|j| j.metadata.deletion_timestamp.is_none()),
        deleting_since: backup.metadata.deletion_timestamp.as_ref().map_or(now, |t| t.0),
        s3_credentials: s3_credentials.clone(),
        job: observe_job(&jobs, &pods, backup, now).await?,
        cleanup_pod_running: pods_of(&pods, &format!("{CLEANUP_LABEL}={name}"))
            .await?
            .iter()
            .any(running),
        now,
    };
    let decision = cleanup::decide(&input);
    tracing::debug!(backup = %name, ?decision, "artifact cleanup pass");
    let old = status.conditions.iter().find(|c| c.type_ == ConditionType::ArtifactCleanup).cloned();
    match decision {
        Decision::Release { note } => {
            release(&backups, backup).await?;
            Ok(Pass { notes: vec![note], requeue: None })
        }
        Decision::CreateJob { note } => {
            let job = match cleanup_job::build(
                backup,
                artifact.as_ref().unwrap_or(&Default::default()),
                s3_credentials.as_deref(),
                image,
            ) {
                Ok(job) => job,
                Err(error) => {
                    let message = error.to_string();
                    write_condition(
                        &backups,
                        &name,
                        &status.conditions,
                        old.as_ref(),
                        Some((
                            bloodraven_crd::condition::ConditionReason::CleanupJobInvalid,
                            message.clone(),
                        )),
                        now,
                    )
                    .await?;
                    return Ok(Pass { notes: vec![], requeue: Some(Duration::from_secs(1800)) });
                }
            };
            if status.cleanup_start_time.is_none() {
                // Recorded against the revision that still said Delete: a concurrent switch to
                // Retain makes this write conflict, and the next pass honours it.
                let patch = json!({
                    "metadata": { "resourceVersion": backup.metadata.resource_version },
                    "status": { "cleanupStartTime": Time(now) },
                });
                backups
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .with_context(|| format!("cannot record the cleanup start of {name}"))?;
            }
            match jobs.create(&PostParams::default(), &job).await {
                Ok(_) => {}
                Err(kube::Error::Api(response)) if response.code == 409 => {}
                Err(error) => {
                    if status.cleanup_start_time.is_none() {
                        let patch = json!({ "status": { "cleanupStartTime": null } });
                        let _ = backups
                            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                            .await;
                    }
                    return Err(error).context("cannot create the cleanup Job");
                }
            }
            Ok(Pass { notes: vec![note], requeue: Some(Duration::from_secs(5)) })
        }
        Decision::ReplaceJob { note } => {
            let job_name = names::cleanup_job_name(&name);
            match jobs.delete(&job_name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(kube::Error::Api(response)) if response.code == 404 => {}
                Err(error) => return Err(error).context("cannot delete the failed cleanup Job"),
            }
            Ok(Pass { notes: vec![note], requeue: Some(Duration::from_secs(2)) })
        }
        Decision::StopProducer { waiting, note } => {
            if input.producer_exists {
                match jobs.delete(&producer_name, &DeleteParams::background()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(response)) if response.code == 404 => {}
                    Err(error) => {
                        return Err(error).context("cannot delete the producing backup Job");
                    }
                }
            }
            let changed =
                write_condition(&backups, &name, &status.conditions, old.as_ref(), waiting, now)
                    .await?;
            let notes = note.filter(|_| changed).into_iter().collect();
            Ok(Pass {
                notes,
                requeue: Some(Duration::from_secs(if input.producer_exists { 2 } else { 30 })),
            })
        }
        Decision::Wait { condition, note, requeue } => {
            let changed =
                write_condition(&backups, &name, &status.conditions, old.as_ref(), condition, now)
                    .await?;
            let notes = note.filter(|_| changed).into_iter().collect();
            Ok(Pass { notes, requeue: Some(requeue) })
        }
    }
}

/// Sets (or clears) the ArtifactCleanup condition; `true` when its reason or message changed.
async fn write_condition(
    api: &Api<MysqlBackup>,
    name: &str,
    conditions: &[Condition],
    old: Option<&Condition>,
    wanted: Option<(bloodraven_crd::condition::ConditionReason, String)>,
    now: jiff::Timestamp,
) -> anyhow::Result<bool> {
    let same = match (&wanted, old) {
        (None, None) => true,
        (Some((reason, message)), Some(old)) => {
            old.reason.as_ref() == Some(reason) && old.message.as_deref() == Some(message.as_str())
        }
        _ => false,
    };
    if same {
        return Ok(false);
    }
    let mut next: Vec<Condition> =
        conditions.iter().filter(|c| c.type_ != ConditionType::ArtifactCleanup).cloned().collect();
    if let Some((reason, message)) = wanted {
        let mut condition = Condition::new(ConditionType::ArtifactCleanup, ConditionStatus::False);
        condition.reason = Some(reason);
        condition.message = Some(message);
        condition.last_transition_time = Some(Time(now));
        set_condition(&mut next, condition);
    }
    let patch = json!({ "status": { "conditions": next } });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("cannot write the ArtifactCleanup condition of {name}"))?;
    Ok(true)
}

/// Whether `phase` is terminal.
pub fn terminal(phase: Option<&BackupPhase>) -> bool {
    matches!(phase, Some(BackupPhase::Succeeded | BackupPhase::Failed))
}
