//! The `MysqlBackupVerification` controller (IO; the MysqlBackup controller's shape): watches
//! verifications and the Jobs they own. One reconcile observes the verification's Job, or
//! chooses the backup ([`plan::select_backup`]), records `status.backupRef` and `jobName`, and
//! creates the Job ([`job::build`]). A phase change publishes `VerificationStarted`,
//! `VerificationSucceeded` or `VerificationFailed` on the verification. With `pointInTime`
//! mode Timestamp or Latest the refusals before any Job come first ([`plan::point_in_time`]),
//! the Job gets the PITR steps, its pod's termination messages are read
//! ([`plan::next_status_pitr`]) and an accepted replay's Warning Events
//! (PITRDivergentHistoryExcluded, PITROnHistoryTransactionsExcluded) are published on the
//! verification.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bloodraven_backup::names;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::condition::ConditionStatus;
use bloodraven_crd::verification::{
    MysqlBackupVerification, MysqlBackupVerificationStatus, VerificationPhase,
};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, LogParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use super::job::{self, VerifyJobInput, VerifyPitr};
use super::plan::{self, Selection};
use crate::backup::verdict::{self, JobState, set_condition};
use crate::manager::Shared;
use crate::restore::bootstrap::pitr;

/// How often a running verification is re-read without a Job event.
pub const RUNNING_REQUEUE: Duration = Duration::from_secs(5);
/// How often a verification waiting for its backup is retried.
pub const PENDING_REQUEUE: Duration = Duration::from_secs(10);
/// After a failed reconcile (API errors).
pub const ERROR_REQUEUE: Duration = Duration::from_secs(10);

/// What every verification reconcile shares.
pub struct VerificationContext {
    /// The operator's shared state (client, recorder).
    pub shared: Arc<Shared>,
    /// The image with the sidecar binary and mysqld, when the group names none.
    pub image: String,
}

impl std::fmt::Debug for VerificationContext {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("VerificationContext")
            .field("image", &self.image)
            .finish_non_exhaustive()
    }
}

/// A reconcile that could not finish.
#[derive(Debug, thiserror::Error)]
#[error("reconciling MysqlBackupVerification {name}: {message}")]
pub struct Error {
    /// The verification.
    pub name: String,
    /// What failed (the anyhow chain, rendered).
    pub message: String,
}

/// What a reconcile did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Terminal; nothing to do.
    Done,
    /// Waiting for the named backup to finish.
    Pending(String),
    /// The Job was created.
    JobCreated(String),
    /// The Job was observed; the phase now.
    Observed(Option<VerificationPhase>),
    /// Failed before any Job (the Verified reason).
    Failed(String),
}

async fn write_status(
    api: &Api<MysqlBackupVerification>,
    name: &str,
    status: &MysqlBackupVerificationStatus,
) -> anyhow::Result<()> {
    let patch = serde_json::json!({ "status": status });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("cannot write the status of MysqlBackupVerification {name}"))?;
    Ok(())
}

/// The Job's newest pod.
async fn job_pod(pods: &Api<Pod>, job_name: &str) -> Option<Pod> {
    let list =
        pods.list(&ListParams::default().labels(&format!("job-name={job_name}"))).await.ok()?;
    list.items.into_iter().max_by_key(|pod| pod.metadata.creation_timestamp.clone())
}

/// The `verify` container's log (`None`: unreadable, or it never ran).
async fn job_log(pods: &Api<Pod>, pod: &Pod) -> Option<String> {
    let params = LogParams { container: Some(job::CONTAINER.to_owned()), ..LogParams::default() };
    pods.logs(pod.metadata.name.as_deref()?, &params).await.ok()
}

/// One pass over verification `name` in `namespace`.
pub async fn reconcile_one(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    image: &str,
    now: Time,
) -> anyhow::Result<Outcome> {
    let api: Api<MysqlBackupVerification> = Api::namespaced(client.clone(), namespace);
    let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
    let verification = api
        .get(name)
        .await
        .with_context(|| format!("cannot read MysqlBackupVerification {namespace}/{name}"))?;
    let mut status = verification.status.clone().unwrap_or_default();
    if matches!(status.phase, Some(VerificationPhase::Succeeded | VerificationPhase::Failed)) {
        return Ok(Outcome::Done);
    }
    let job_name = names::verification_job_name(name);
    if let Some(found) =
        jobs.get_opt(&job_name).await.with_context(|| format!("cannot read Job {job_name}"))?
    {
        let state = verdict::job_state(&found);
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        let pod = match state {
            JobState::Active { .. } => None,
            _ => job_pod(&pods, &job_name).await,
        };
        let log = match &pod {
            Some(pod) => job_log(&pods, pod).await,
            None => None,
        };
        status.job_name = Some(job_name.clone());
        let next = match pitr::Expected::from_job(&found) {
            None => plan::next_status(&status, &state, log.as_deref(), &now),
            Some(expected) => {
                let verdict = pod.as_ref().and_then(|pod| pitr::main_message(pod, job::CONTAINER));
                let failure = pod.as_ref().and_then(pitr::earliest_failure);
                let observed =
                    plan::PitrObserved { verdict: verdict.as_deref(), failure: failure.as_deref() };
                plan::next_status_pitr(&status, &state, &expected, log.as_deref(), observed, &now)
            }
        };
        if Some(&next) != verification.status.as_ref() {
            write_status(&api, name, &next).await?;
        }
        return Ok(Outcome::Observed(next.phase));
    }
    if let Some(lost) = status.job_name.clone() {
        let message = format!(
            "the verification Job {lost} is gone before its verdict was read; create a new verification"
        );
        let next = plan::refused(&status, plan::VERIFICATION_FAILED, message.clone(), &now);
        write_status(&api, name, &next).await?;
        return Ok(Outcome::Failed(plan::VERIFICATION_FAILED.to_owned()));
    }

    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), namespace);
    let all = backups.list(&ListParams::default()).await.context("cannot list MysqlBackups")?;
    let backup = match plan::select_backup(&verification, &all.items) {
        Selection::Backup(backup) => backup,
        Selection::Refuse { reason, message } => {
            write_status(&api, name, &plan::refused(&status, reason, message, &now)).await?;
            return Ok(Outcome::Failed(reason.to_owned()));
        }
        Selection::Wait(message) => {
            status.phase = Some(VerificationPhase::Pending);
            status.message = Some(message.clone());
            if Some(&status) != verification.status.as_ref() {
                write_status(&api, name, &status).await?;
            }
            return Ok(Outcome::Pending(message));
        }
    };
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), namespace);
    let group = groups
        .get_opt(&verification.spec.failover_group_ref.name)
        .await
        .context("cannot read the failover group")?;
    let point_in_time = match plan::point_in_time(&verification, &backup, group.as_ref()) {
        Ok(request) => request,
        Err(refusal) => {
            tracing::warn!(
                %namespace,
                verification = %name,
                reason = %refusal.reason,
                message = %refusal.message,
                "point-in-time verification refused before any Job"
            );
            let mut refused = status.clone();
            refused.backup_ref = Some(plan::verified_backup(&backup));
            let next = plan::refused(&refused, &refusal.reason, refusal.message, &now);
            write_status(&api, name, &next).await?;
            return Ok(Outcome::Failed(refusal.reason));
        }
    };
    let profile = group.as_ref().and_then(|g| {
        g.spec
            .backup
            .as_ref()
            .and_then(|b| b.profiles.iter().find(|p| p.name == backup.spec.profile_name))
            .cloned()
    });
    let image = group
        .as_ref()
        .and_then(|g| g.spec.sidecar.as_ref())
        .and_then(|s| s.image.clone())
        .unwrap_or_else(|| image.to_owned());
    let replay = match (&point_in_time, group.as_ref()) {
        (Some(request), Some(group)) => Some(VerifyPitr {
            group,
            archive_profile: &request.archive_profile,
            stop_time: request.stop_time.clone(),
            exclude_gtids: request.exclude_gtids.clone(),
        }),
        _ => None,
    };
    let built = match job::build(&VerifyJobInput {
        verification: &verification,
        backup: &backup,
        profile: profile.as_ref(),
        image,
        point_in_time: replay,
    }) {
        Ok(built) => built,
        Err(error) => {
            let next = plan::refused(&status, plan::VERIFICATION_FAILED, error.to_string(), &now);
            write_status(&api, name, &next).await?;
            return Ok(Outcome::Failed(plan::VERIFICATION_FAILED.to_owned()));
        }
    };
    // The backup read and the Job are recorded before the Job exists.
    status.phase = Some(VerificationPhase::Provisioning);
    status.backup_ref = Some(plan::verified_backup(&backup));
    status.job_name = Some(job_name.clone());
    status.start_time = Some(now.clone());
    status.message = Some(format!(
        "the Job {job_name} loads MysqlBackup {} into a scratch server",
        backup.name_any()
    ));
    let mut condition = bloodraven_crd::condition::Condition::new(
        bloodraven_crd::condition::ConditionType::Verified,
        ConditionStatus::Unknown,
    );
    condition.reason = Some(bloodraven_crd::condition::ConditionReason::parse(plan::IN_PROGRESS));
    condition.message = status.message.clone();
    condition.last_transition_time = Some(now.clone());
    set_condition(&mut status.conditions, condition);
    write_status(&api, name, &status).await?;
    match jobs.create(&PostParams::default(), &built).await {
        Ok(_) => {}
        Err(kube::Error::Api(response)) if response.code == 409 => {}
        Err(error) => return Err(error).with_context(|| format!("cannot create Job {job_name}")),
    }
    Ok(Outcome::JobCreated(job_name))
}

async fn publish(
    context: &VerificationContext,
    verification: &MysqlBackupVerification,
    type_: EventType,
    reason: &str,
    note: String,
) {
    let regarding = verification.object_ref(&());
    crate::events::record(&context.shared.recorder, &regarding, type_, reason, note).await;
}

/// One reconcile: [`reconcile_one`], then the Event of the phase it reached.
pub async fn reconcile(
    verification: Arc<MysqlBackupVerification>,
    context: Arc<VerificationContext>,
) -> Result<Action, Error> {
    let name = verification.name_any();
    let namespace = verification.namespace().unwrap_or_default();
    let now = Time(jiff::Timestamp::now());
    let outcome = reconcile_one(&context.shared.client, &namespace, &name, &context.image, now)
        .await
        .map_err(|error| Error { name: name.clone(), message: format!("{error:#}") })?;
    tracing::debug!(%namespace, verification = %name, ?outcome, "verification reconciled");
    let terminal_event = |context: Arc<VerificationContext>| async move {
        let api: Api<MysqlBackupVerification> =
            Api::namespaced(context.shared.client.clone(), &namespace);
        let Ok(now) = api.get(&name).await else { return };
        let status = now.status.clone().unwrap_or_default();
        let message = status.message.clone().unwrap_or_default();
        match status.phase {
            Some(VerificationPhase::Succeeded) => {
                publish(&context, &now, EventType::Normal, "VerificationSucceeded", message).await;
                for (reason, note) in plan::pitr_warnings(&status) {
                    publish(&context, &now, EventType::Warning, reason, note).await;
                }
            }
            Some(VerificationPhase::Failed) => {
                let reason = status
                    .conditions
                    .iter()
                    .find(|c| c.type_ == bloodraven_crd::condition::ConditionType::Verified)
                    .and_then(|c| c.reason.as_ref())
                    .map(|r| r.as_str().to_owned())
                    .unwrap_or_default();
                publish(
                    &context,
                    &now,
                    EventType::Warning,
                    "VerificationFailed",
                    format!("{reason}: {message}"),
                )
                .await;
            }
            _ => {}
        }
    };
    let action = match &outcome {
        Outcome::Done => Action::await_change(),
        Outcome::Pending(_) => Action::requeue(PENDING_REQUEUE),
        Outcome::JobCreated(job) => {
            publish(
                &context,
                &verification,
                EventType::Normal,
                "VerificationStarted",
                format!("created the verification Job {job}"),
            )
            .await;
            Action::requeue(RUNNING_REQUEUE)
        }
        Outcome::Failed(_) => {
            terminal_event(context.clone()).await;
            Action::await_change()
        }
        Outcome::Observed(phase) => match phase {
            Some(VerificationPhase::Succeeded | VerificationPhase::Failed) => {
                terminal_event(context.clone()).await;
                Action::await_change()
            }
            _ => Action::requeue(RUNNING_REQUEUE),
        },
    };
    Ok(action)
}

/// Logs and requeues.
pub fn error_policy(
    verification: Arc<MysqlBackupVerification>,
    error: &Error,
    _context: Arc<VerificationContext>,
) -> Action {
    tracing::warn!(verification = %verification.name_any(), %error, "verification reconcile failed");
    Action::requeue(ERROR_REQUEUE)
}

/// Runs the controller until its watch ends. `namespace`: one namespace, or all.
pub async fn run(context: Arc<VerificationContext>, namespace: Option<&str>) {
    let client = context.shared.client.clone();
    let (verifications, jobs): (Api<MysqlBackupVerification>, Api<Job>) = match namespace {
        Some(namespace) => {
            (Api::namespaced(client.clone(), namespace), Api::namespaced(client, namespace))
        }
        None => (Api::all(client.clone()), Api::all(client)),
    };
    Controller::new(verifications, watcher::Config::default())
        .owns(jobs, watcher::Config::default())
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => tracing::debug!(verification = %object.name, "reconciled"),
                Err(error) => tracing::debug!(%error, "verification reconcile error"),
            }
        })
        .await;
}
