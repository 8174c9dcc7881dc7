//! The backup housekeeping loop (IO), every [`INTERVAL`]: for each group (read untyped, so one
//! unreadable group stops nothing) apply its schedules' CronJobs ([`super::schedule`]) and
//! delete the CronJobs of removed schedules, turn each schedule run (a Job with the schedule
//! labels) into its MysqlBackup, create the due retries of failed scheduled backups
//! ([`super::retry`]), report `status.backupSchedules` and `status.lastBackupTime`
//! ([`super::rollup`]) and apply retention ([`super::retention`]): deleting a MysqlBackup hands
//! it to the finalizer's artifact cleanup. A pass that fails for one group logs and goes on
//! with the next.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bloodraven_backup::names;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::verification::{MysqlBackupVerification, VerificationPhase};
use bloodraven_workloads::labels;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::Resource;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::runtime::events::{Event, EventType};
use serde_json::json;

use super::{retention, retry, rollup, schedule};
use crate::manager::Shared;

/// How often the loop runs.
pub const INTERVAL: Duration = Duration::from_secs(5);

fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

/// What the loop remembers between passes.
#[derive(Debug, Default)]
struct Memory {
    /// Backups already announced with `RetentionDeferred`.
    deferred: BTreeSet<(String, String)>,
}

/// Runs the loop until the task is dropped. `image` has the sidecar binary.
pub async fn run(shared: Arc<Shared>, namespace: Option<&str>, image: String) {
    let started = jiff::Timestamp::now();
    let mut memory = Memory::default();
    loop {
        if let Err(error) = pass(&shared, namespace, &image, started, &mut memory).await {
            tracing::warn!(error = %format!("{error:#}"), "backup housekeeping pass failed");
        }
        tokio::time::sleep(INTERVAL).await;
    }
}

async fn pass(
    shared: &Shared,
    namespace: Option<&str>,
    image: &str,
    started: jiff::Timestamp,
    memory: &mut Memory,
) -> anyhow::Result<()> {
    let client = &shared.client;
    let resource = ApiResource::erase::<MysqlFailoverGroup>(&());
    let untyped: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let groups: Vec<MysqlFailoverGroup> = untyped
        .list(&ListParams::default())
        .await
        .context("cannot list failover groups")?
        .items
        .into_iter()
        .filter_map(|object| {
            let value = serde_json::to_value(&object).ok()?;
            serde_json::from_value(value).ok()
        })
        .collect();
    let backups: Vec<MysqlBackup> = api::<MysqlBackup>(client, namespace)
        .list(&ListParams::default())
        .await
        .context("cannot list MysqlBackups")?
        .items;
    let reading: BTreeSet<(String, String)> = api::<MysqlBackupVerification>(client, namespace)
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|v| {
            let phase = v.status.as_ref().and_then(|s| s.phase.clone());
            !matches!(phase, Some(VerificationPhase::Succeeded | VerificationPhase::Failed))
        })
        .filter_map(|v| {
            let target = v
                .status
                .as_ref()
                .and_then(|s| s.backup_ref.as_ref())
                .and_then(|r| r.name.clone())
                .or_else(|| v.spec.backup_ref.as_ref().map(|r| r.name.clone()))?;
            Some((v.metadata.namespace.clone().unwrap_or_default(), target))
        })
        .collect();
    let selector = format!("{}={}", labels::MANAGED_BY, labels::MANAGER);
    let cronjobs: Vec<CronJob> = api::<CronJob>(client, namespace)
        .list(&ListParams::default().labels(&format!("{selector},{}", names::SCHEDULE_LABEL)))
        .await
        .context("cannot list CronJobs")?
        .items;
    let runs: Vec<Job> = api::<Job>(client, namespace)
        .list(&ListParams::default().labels(&format!("{selector},{}", names::SCHEDULE_LABEL)))
        .await
        .context("cannot list schedule runs")?
        .items;
    let now = jiff::Timestamp::now();
    for group in &groups {
        let name = group.metadata.name.clone().unwrap_or_default();
        let ns = group.metadata.namespace.clone().unwrap_or_default();
        if let Err(error) = schedules(client, group, image, &cronjobs).await {
            tracing::warn!(namespace = %ns, group = %name, error = %format!("{error:#}"), "backup schedules not applied");
        }
        let reading: BTreeSet<String> =
            reading.iter().filter(|(n, _)| *n == ns).map(|(_, b)| b.clone()).collect();
        let conflicts = match retries(shared, group, &backups, now).await {
            Ok(conflicts) => conflicts,
            Err(error) => {
                tracing::warn!(namespace = %ns, group = %name, error = %format!("{error:#}"), "scheduled-backup retries not applied");
                BTreeMap::new()
            }
        };
        if let Err(error) = report(shared, group, &backups, &cronjobs, &conflicts).await {
            tracing::warn!(namespace = %ns, group = %name, error = %format!("{error:#}"), "status.backupSchedules not applied");
        }
        if let Err(error) = prune(shared, group, &backups, &reading, now, started, memory).await {
            tracing::warn!(namespace = %ns, group = %name, error = %format!("{error:#}"), "retention not applied");
        }
    }
    for job in &runs {
        let group_known =
            job.metadata.labels.as_ref().and_then(|l| l.get(labels::GROUP)).is_some_and(|g| {
                groups.iter().any(|group| {
                    group.metadata.name.as_deref() == Some(g.as_str())
                        && group.metadata.namespace == job.metadata.namespace
                })
            });
        if !group_known {
            continue;
        }
        if let Err(error) = turn_run_into_backup(client, job).await {
            tracing::warn!(job = ?job.metadata.name, error = %format!("{error:#}"), "schedule run not turned into a backup");
        }
    }
    Ok(())
}

async fn schedules(
    client: &kube::Client,
    group: &MysqlFailoverGroup,
    image: &str,
    existing: &[CronJob],
) -> anyhow::Result<()> {
    let namespace = group.metadata.namespace.clone().unwrap_or_default();
    let name = group.metadata.name.clone().unwrap_or_default();
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), &namespace);
    let image = group
        .spec
        .sidecar
        .as_ref()
        .and_then(|s| s.image.clone())
        .unwrap_or_else(|| image.to_owned());
    let desired = schedule::desired(group, &image);
    let hash = |c: &CronJob| {
        c.metadata.annotations.as_ref().and_then(|a| a.get(schedule::SPEC_HASH_ANNOTATION)).cloned()
    };
    let mine: BTreeMap<String, &CronJob> = existing
        .iter()
        .filter(|c| c.metadata.namespace.as_deref() == Some(namespace.as_str()))
        .filter(|c| c.metadata.labels.as_ref().and_then(|l| l.get(labels::GROUP)) == Some(&name))
        .filter_map(|c| Some((c.metadata.name.clone()?, c)))
        .collect();
    for cronjob in &desired {
        let cronjob_name = cronjob.metadata.name.clone().unwrap_or_default();
        if mine.get(&cronjob_name).is_some_and(|c| hash(c) == hash(cronjob)) {
            continue;
        }
        let params = PatchParams::apply("bloodraven-backup-schedules").force();
        let mut body = serde_json::to_value(cronjob).context("cannot render the CronJob")?;
        body["apiVersion"] = json!("batch/v1");
        body["kind"] = json!("CronJob");
        cronjobs
            .patch(&cronjob_name, &params, &Patch::Apply(&body))
            .await
            .with_context(|| format!("cannot apply CronJob {cronjob_name}"))?;
        tracing::info!(%namespace, cronjob = %cronjob_name, "backup schedule applied");
    }
    let wanted: BTreeSet<String> = desired.iter().filter_map(|c| c.metadata.name.clone()).collect();
    for stale in mine.keys().filter(|n| !wanted.contains(*n)) {
        match cronjobs.delete(stale, &DeleteParams::background()).await {
            Ok(_) => {
                tracing::info!(%namespace, cronjob = %stale, "removed schedule's CronJob deleted")
            }
            Err(kube::Error::Api(response)) if response.code == 404 => {}
            Err(error) => {
                return Err(error).with_context(|| format!("cannot delete CronJob {stale}"));
            }
        }
    }
    Ok(())
}

async fn turn_run_into_backup(client: &kube::Client, job: &Job) -> anyhow::Result<()> {
    let Some(backup) = schedule::backup_for_run(job) else { return Ok(()) };
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    let job_name = job.metadata.name.clone().unwrap_or_default();
    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), &namespace);
    match backups.create(&PostParams::default(), &backup).await {
        Ok(_) => tracing::info!(%namespace, backup = %job_name, "scheduled backup created"),
        Err(kube::Error::Api(response)) if response.code == 409 => {}
        Err(error) => {
            return Err(error).with_context(|| format!("cannot create MysqlBackup {job_name}"));
        }
    }
    let jobs: Api<Job> = Api::namespaced(client.clone(), &namespace);
    let patch = json!({ "metadata": { "annotations": { schedule::CREATED_ANNOTATION: "true" } } });
    jobs.patch(&job_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("cannot mark schedule run {job_name}"))?;
    Ok(())
}

async fn prune(
    shared: &Shared,
    group: &MysqlFailoverGroup,
    backups: &[MysqlBackup],
    reading: &BTreeSet<String>,
    now: jiff::Timestamp,
    started: jiff::Timestamp,
    memory: &mut Memory,
) -> anyhow::Result<()> {
    let namespace = group.metadata.namespace.clone().unwrap_or_default();
    let api: Api<MysqlBackup> = Api::namespaced(shared.client.clone(), &namespace);
    for profile in retention::plan(group, backups, reading, now, started) {
        for name in &profile.plan.delete {
            match api.delete(name, &DeleteParams::background()).await {
                Ok(_) => {
                    tracing::info!(%namespace, backup = %name, profile = %profile.profile, "retention deleted a backup")
                }
                Err(kube::Error::Api(response)) if response.code == 404 => {}
                Err(error) => {
                    return Err(error).with_context(|| format!("cannot delete MysqlBackup {name}"));
                }
            }
        }
        for name in &profile.plan.deferred {
            if !memory.deferred.insert((namespace.clone(), name.clone())) {
                continue;
            }
            let Some(backup) =
                backups.iter().find(|b| b.metadata.name.as_deref() == Some(name.as_str()))
            else {
                continue;
            };
            let event = Event {
                type_: EventType::Normal,
                reason: "RetentionDeferred".to_owned(),
                note: Some(format!(
                    "retention keeps {name} past its window: a verification is reading it; it is pruned on the next pass after the run stops"
                )),
                action: "RetentionDeferred".to_owned(),
                secondary: None,
            };
            if let Err(error) = shared.recorder.publish(&event, &backup.object_ref(&())).await {
                tracing::debug!(%error, "event not recorded");
            }
        }
    }
    Ok(())
}

async fn publish_on_group(
    shared: &Shared,
    group: &MysqlFailoverGroup,
    warning: bool,
    reason: &str,
    note: String,
) {
    crate::restore::queue_io::publish(&shared.recorder, group, warning, reason, note).await;
}

/// Applies `status.backupSchedules` and `status.lastBackupTime` ([`rollup`]) when they
/// changed, after announcing each new retry conflict with a `BackupRetryConflict` warning.
async fn report(
    shared: &Shared,
    group: &MysqlFailoverGroup,
    backups: &[MysqlBackup],
    cronjobs: &[CronJob],
    conflicts: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let rollup = rollup::rollup(group, backups, cronjobs, conflicts);
    for (schedule, blocking) in rollup.new_conflicts(group) {
        let retry_of = retry::latest_of_schedule(group, backups, &schedule)
            .and_then(|b| b.metadata.name.clone())
            .unwrap_or_default();
        tracing::warn!(group = ?group.metadata.name, %schedule, %blocking, "backup retry conflict");
        publish_on_group(
            shared,
            group,
            true,
            "BackupRetryConflict",
            format!(
                "MysqlBackup {blocking} exists and is not the retry of {retry_of} (schedule {schedule}); that retry is skipped until the object is removed"
            ),
        )
        .await;
    }
    if !rollup.differs(group) {
        return Ok(());
    }
    let namespace = group.metadata.namespace.clone().unwrap_or_default();
    let name = group.metadata.name.clone().unwrap_or_default();
    let api: Api<MysqlFailoverGroup> = Api::namespaced(shared.client.clone(), &namespace);
    api.patch_status(
        &name,
        &PatchParams::apply(rollup::FIELD_MANAGER).force(),
        &Patch::Apply(rollup.body()),
    )
    .await
    .with_context(|| format!("cannot apply status.backupSchedules of group {name}"))?;
    tracing::debug!(%namespace, group = %name, "status.backupSchedules applied");
    Ok(())
}

/// Creates the due retries of the group's schedules (`spec.backup.retry`); returns the
/// schedules whose retry name is taken by another object, with that object's name.
async fn retries(
    shared: &Shared,
    group: &MysqlFailoverGroup,
    backups: &[MysqlBackup],
    now: jiff::Timestamp,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut conflicts = BTreeMap::new();
    let Some(spec) = group.spec.backup.as_ref() else { return Ok(conflicts) };
    let policy = retry::Policy::of(spec.retry.as_ref());
    if policy.max_attempts <= 1 {
        return Ok(conflicts);
    }
    let namespace = group.metadata.namespace.clone().unwrap_or_default();
    let api: Api<MysqlBackup> = Api::namespaced(shared.client.clone(), &namespace);
    for schedule in &spec.schedules {
        let latest = retry::latest_of_schedule(group, backups, &schedule.name);
        let Some(latest) = latest else { continue };
        let Some(next) = retry::successor(latest, &policy) else { continue };
        if now < next.due {
            continue;
        }
        let retry_name = next.backup.metadata.name.clone().unwrap_or_default();
        let predecessor = latest.metadata.uid.clone().unwrap_or_default();
        match api.create(&PostParams::default(), &next.backup).await {
            Ok(_) => {
                publish_on_group(
                    shared,
                    group,
                    false,
                    "BackupRetryScheduled",
                    format!(
                        "created {retry_name}, attempt {} of schedule {}, retrying the failed backup {}",
                        next.attempt,
                        schedule.name,
                        latest.metadata.name.clone().unwrap_or_default()
                    ),
                )
                .await;
            }
            Err(kube::Error::Api(response)) if response.code == 409 => {
                let existing = api.get_opt(&retry_name).await.ok().flatten();
                let ours =
                    existing.as_ref().is_some_and(|b| retry::matches_lineage(b, &predecessor));
                if !ours {
                    conflicts.insert(schedule.name.clone(), retry_name.clone());
                }
            }
            Err(error) => {
                return Err(error).with_context(|| format!("cannot create retry {retry_name}"));
            }
        }
    }
    Ok(conflicts)
}
