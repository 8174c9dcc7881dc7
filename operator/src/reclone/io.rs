//! The IO of an administrator's reclone request: [`poll`] asks [`super::core::decide`], then
//! removes the annotation (a merge patch conditional on the resourceVersion last read or
//! written, and only while it still has the decided value), publishes the Event and runs the
//! clone in a background task (the reclone queue's clone: [`crate::restore::queue_io`]).
//!
//! The request is remembered by its value in process memory. A restarted operator that finds
//! an accepted request still on the group starts its clone again (see the README).

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::RECLONE_SITE;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use tokio::task::JoinHandle;

use super::core::{AdminProgress, AdminView, Decision, REJECTED, REQUESTED, decide};
use crate::restore::queue_io::{QueueContext, QueueIoError, publish, reclone};

/// What this process remembers of administrators' requests between polls.
#[derive(Debug, Default)]
pub struct AdminMemory {
    /// The clone this process runs, by request value.
    task: Option<(String, JoinHandle<Result<(), String>>)>,
    /// The outcome of a finished clone, by request value, until the annotation is gone.
    outcome: Option<(String, AdminProgress)>,
}

impl AdminMemory {
    /// What this process knows of `request`'s clone; collects a finished task.
    async fn progress(&mut self, request: &str) -> AdminProgress {
        if let Some((value, task)) = self.task.as_mut()
            && value == request
        {
            if !task.is_finished() {
                return AdminProgress::Running;
            }
            let progress = match task.await {
                Ok(Ok(())) => AdminProgress::Succeeded,
                Ok(Err(message)) => AdminProgress::Failed { message },
                Err(error) => {
                    AdminProgress::Failed { message: format!("the clone task ended: {error}") }
                }
            };
            self.task = None;
            self.outcome = Some((request.to_owned(), progress));
        }
        match &self.outcome {
            Some((value, progress)) if value == request => progress.clone(),
            _ => AdminProgress::NotStarted,
        }
    }

    /// Forgets a finished request once its annotation is gone (the same value written again
    /// later is a new request).
    fn forget_unless(&mut self, annotation: Option<&str>) {
        if self.outcome.as_ref().is_some_and(|(value, _)| Some(value.as_str()) != annotation) {
            self.outcome = None;
        }
    }
}

/// One poll of an administrator's request. `annotation` is the `reclone-site` value after the
/// reclone queue's own effects of this poll; `version` the resourceVersion last read or written.
pub async fn poll(
    ctx: &QueueContext<'_>,
    memory: &mut AdminMemory,
    annotation: Option<&str>,
    version: Option<String>,
) -> Result<(), QueueIoError> {
    let group = ctx.group;
    memory.forget_unless(annotation);
    let progress = match annotation {
        Some(value) => memory.progress(value).await,
        None => AdminProgress::NotStarted,
    };
    let sites: Vec<String> = group.spec.sites.iter().map(|s| s.name.clone()).collect();
    let uid = group.metadata.uid.clone().unwrap_or_default();
    let name = group.name_any();
    let decision = decide(&AdminView {
        annotation,
        group: &name,
        uid: &uid,
        sites: &sites,
        status: group.status.as_ref(),
        planned_failover_in_flight: ctx.planned_failover_in_flight,
        progress,
    });
    match decision {
        Decision::Ignore => Ok(()),
        Decision::Wait { why } => {
            tracing::debug!(group = %name, why, "reclone request waits");
            Ok(())
        }
        Decision::Reject { value, note } => {
            tracing::warn!(group = %name, value, note, "reclone request refused");
            remove(ctx.client, group, &value, version).await?;
            publish(ctx.recorder, group, true, REJECTED, note).await;
            Ok(())
        }
        Decision::Finish { value, reason, warning, note } => {
            tracing::info!(group = %name, value, reason, note, "reclone request finished");
            remove(ctx.client, group, &value, version).await?;
            publish(ctx.recorder, group, warning, reason, note).await;
            Ok(())
        }
        Decision::Start { value, site, donor, note } => {
            if memory.task.is_some() {
                tracing::debug!(group = %name, "another reclone request's clone still runs");
                return Ok(());
            }
            let (Some(recipient), Some(source)) =
                (ctx.addresses.get(&site), ctx.addresses.get(&donor))
            else {
                tracing::debug!(%site, %donor, "reclone request waits for both sites' addresses");
                return Ok(());
            };
            tracing::info!(group = %name, %site, %donor, value, "reclone request accepted; the clone starts");
            let handle =
                tokio::spawn(reclone(recipient.clone(), source.clone(), ctx.account.clone()));
            memory.task = Some((value, handle));
            publish(ctx.recorder, group, false, REQUESTED, note).await;
            Ok(())
        }
    }
}

/// Removes the annotation while it still has `value`: the patch is conditional on `version`,
/// so someone's newer value in between wins and the next poll decides again.
async fn remove(
    client: &kube::Client,
    group: &MysqlFailoverGroup,
    value: &str,
    version: Option<String>,
) -> Result<(), QueueIoError> {
    if group.annotations().get(RECLONE_SITE).map(String::as_str) != Some(value) {
        return Ok(());
    }
    let api: Api<MysqlFailoverGroup> =
        Api::namespaced(client.clone(), &group.namespace().unwrap_or_default());
    let body = serde_json::json!({ "metadata": {
        "resourceVersion": version,
        "annotations": { RECLONE_SITE: serde_json::Value::Null },
    }});
    api.patch(&group.name_any(), &PatchParams::default(), &Patch::Merge(body)).await.map_err(
        |source| QueueIoError::Kube { what: "removing the reclone-site annotation", source },
    )?;
    Ok(())
}
