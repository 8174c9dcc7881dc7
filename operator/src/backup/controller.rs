//! The `MysqlBackup` controller (the kube-rs controller shape of the group controller):
//! watches MysqlBackups and the Jobs they own; each reconcile is one pass of
//! [`reconcile::reconcile`] (observe the Job, or select the source and create it), and a
//! phase change publishes the catalog's backup Event (`BackupStarted`, `BackupSucceeded`,
//! `BackupFailed`, `BackupMetadataIncomplete`) on the MysqlBackup.
//!
//! Requeues: a Running backup every [`RUNNING_REQUEUE`] (the Job watch wakes it sooner), a
//! Pending one every [`PENDING_REQUEUE`], a terminal one only on change.

use std::sync::Arc;
use std::time::Duration;

use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::condition::{ConditionStatus, ConditionType};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use super::cleanup_io;
use super::reconcile::{self, Outcome};
use crate::manager::Shared;

/// How often a Running backup is re-read without a Job event.
pub const RUNNING_REQUEUE: Duration = Duration::from_secs(5);
/// How often a Pending backup is retried (source selection).
pub const PENDING_REQUEUE: Duration = Duration::from_secs(10);
/// After a failed reconcile (API errors).
pub const ERROR_REQUEUE: Duration = Duration::from_secs(10);

/// What every backup reconcile shares.
pub struct BackupContext {
    /// The operator's shared state (client, recorder).
    pub shared: Arc<Shared>,
    /// The image with the sidecar binary, when the group names none.
    pub image: String,
}

impl std::fmt::Debug for BackupContext {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("BackupContext").field("image", &self.image).finish_non_exhaustive()
    }
}

/// A reconcile that could not finish.
#[derive(Debug, thiserror::Error)]
#[error("reconciling MysqlBackup {name}: {message}")]
pub struct Error {
    /// The backup.
    pub name: String,
    /// What failed (the anyhow chain, rendered).
    pub message: String,
}

async fn publish(
    context: &BackupContext,
    backup: &MysqlBackup,
    type_: EventType,
    reason: &str,
    note: String,
) {
    crate::events::record(&context.shared.recorder, &backup.object_ref(&()), type_, reason, note)
        .await;
}

/// One reconcile: [`reconcile::reconcile`], then the Event of the phase it reached.
pub async fn reconcile(
    backup: Arc<MysqlBackup>,
    context: Arc<BackupContext>,
) -> Result<Action, Error> {
    let name = backup.name_any();
    let namespace = backup.namespace().unwrap_or_default();
    let before = backup.status.clone().unwrap_or_default();
    let now = Time(jiff::Timestamp::now());
    let fail = |error: anyhow::Error| Error { name: name.clone(), message: format!("{error:#}") };
    if backup.metadata.deletion_timestamp.is_some() {
        let ours = backup.finalizers().iter().any(|f| f == bloodraven_backup::names::FINALIZER);
        if !ours {
            return Ok(Action::await_change());
        }
        let pass = cleanup_io::pass(&context.shared.client, &backup, &context.image, now.0)
            .await
            .map_err(fail)?;
        for note in pass.notes {
            let type_ = if note.warning { EventType::Warning } else { EventType::Normal };
            publish(&context, &backup, type_, note.reason, note.message).await;
        }
        return Ok(pass.requeue.map_or_else(Action::await_change, Action::requeue));
    }
    let api: Api<MysqlBackup> = Api::namespaced(context.shared.client.clone(), &namespace);
    if cleanup_io::ensure_finalizer(&api, &backup).await.map_err(fail)? {
        // The patch wakes the watch; the next pass reconciles with the new resourceVersion.
        return Ok(Action::requeue(Duration::from_millis(200)));
    }
    let outcome =
        reconcile::reconcile(&context.shared.client, &namespace, &name, &context.image, now)
            .await
            .map_err(|error| Error { name: name.clone(), message: format!("{error:#}") })?;
    tracing::debug!(%namespace, backup = %name, ?outcome, "backup reconciled");
    let action = match &outcome {
        Outcome::Done => Action::await_change(),
        Outcome::Pending(_) => Action::requeue(PENDING_REQUEUE),
        Outcome::JobCreated(job) => {
            publish(
                &context,
                &backup,
                EventType::Normal,
                "BackupStarted",
                format!("created the backup Job {job}"),
            )
            .await;
            Action::requeue(RUNNING_REQUEUE)
        }
        Outcome::Failed(message) => {
            publish(&context, &backup, EventType::Warning, "BackupFailed", message.clone()).await;
            Action::await_change()
        }
        Outcome::Observed(phase) => {
            let was_terminal =
                matches!(before.phase, Some(BackupPhase::Succeeded | BackupPhase::Failed));
            if !was_terminal {
                observed_events(&context, &backup, phase.as_ref()).await;
            }
            match phase {
                Some(BackupPhase::Succeeded | BackupPhase::Failed) => Action::await_change(),
                _ => Action::requeue(RUNNING_REQUEUE),
            }
        }
    };
    Ok(action)
}

/// The Events of a backup that just reached `phase` from its Job (read back for the message).
async fn observed_events(
    context: &BackupContext,
    backup: &MysqlBackup,
    phase: Option<&BackupPhase>,
) {
    let name = backup.name_any();
    let api: Api<MysqlBackup> =
        Api::namespaced(context.shared.client.clone(), &backup.namespace().unwrap_or_default());
    let Ok(now) = api.get(&name).await else { return };
    let status = now.status.clone().unwrap_or_default();
    match phase {
        Some(BackupPhase::Succeeded) => {
            let location = status
                .artifact_storage
                .as_ref()
                .and_then(|a| a.location.clone())
                .unwrap_or_default();
            publish(
                context,
                &now,
                EventType::Normal,
                "BackupSucceeded",
                format!("the backup is complete at {location}"),
            )
            .await;
            let metadata =
                status.conditions.iter().find(|c| c.type_ == ConditionType::MetadataComplete);
            if let Some(condition) = metadata.filter(|c| c.status != ConditionStatus::True) {
                let reason = condition.reason.as_ref().map(|r| r.as_str().to_owned());
                publish(
                    context,
                    &now,
                    EventType::Warning,
                    "BackupMetadataIncomplete",
                    format!(
                        "{}: {}",
                        reason.unwrap_or_default(),
                        condition.message.clone().unwrap_or_default()
                    ),
                )
                .await;
            }
        }
        Some(BackupPhase::Failed) => {
            publish(
                context,
                &now,
                EventType::Warning,
                "BackupFailed",
                status.message.clone().unwrap_or_else(|| "the backup Job failed".to_owned()),
            )
            .await;
        }
        _ => {}
    }
}

/// Logs and requeues.
pub fn error_policy(
    backup: Arc<MysqlBackup>,
    error: &Error,
    _context: Arc<BackupContext>,
) -> Action {
    tracing::warn!(backup = %backup.name_any(), %error, "backup reconcile failed");
    Action::requeue(ERROR_REQUEUE)
}

/// Runs the controller until its watch ends. `namespace`: one namespace, or all.
pub async fn run(context: Arc<BackupContext>, namespace: Option<&str>) {
    let client = context.shared.client.clone();
    let (backups, jobs): (Api<MysqlBackup>, Api<Job>) = match namespace {
        Some(namespace) => {
            (Api::namespaced(client.clone(), namespace), Api::namespaced(client, namespace))
        }
        None => (Api::all(client.clone()), Api::all(client)),
    };
    Controller::new(backups, watcher::Config::default())
        .owns(jobs, watcher::Config::default())
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => tracing::debug!(backup = %object.name, "reconciled"),
                Err(error) => tracing::debug!(%error, "backup reconcile error"),
            }
        })
        .await;
}
