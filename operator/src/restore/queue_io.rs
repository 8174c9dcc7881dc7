//! The reclone queue's IO: one poll reads the group (status and annotation, from the API
//! server), asks [`super::core::drive`] what to do, writes `status.restoreReclones` (with the
//! resourceVersion it read, so a human's concurrent patch is never overwritten), then the
//! annotation and the Events; and it runs the clone of the queue's own current request
//! ([`super::clone`]) in the background, remembering its outcome in process memory. After the
//! queue's step, the same poll decides an administrator's request
//! ([`crate::reclone::io::poll`]), on the annotation as the queue's effects left it.

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::{RECLONE_SITE, RecloneRequest as RecloneAnnotation};
use bloodraven_crd::group::RestoreReclonesPhase;
use jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::Recorder;
use kube::{Resource, ResourceExt};
use tokio::task::JoinHandle;

use super::clone::reclone_site;
use super::core::{CloneProgress, Effect, QueueView, drive};
use crate::observe::Account;

/// What this process remembers about the queue between polls.
#[derive(Debug, Default)]
pub struct RecloneMemory {
    /// The request value this process watched sit unstarted, and since when.
    watched: Option<(String, Timestamp)>,
    /// The clone this process runs, by request value.
    task: Option<(String, JoinHandle<Result<(), String>>)>,
    /// The outcome of a finished clone, by request value.
    outcome: Option<(String, CloneProgress)>,
    /// Administrators' requests (kept across the queue's comings and goings).
    admin: crate::reclone::io::AdminMemory,
}

impl RecloneMemory {
    /// What this process knows of `request`'s clone; collects a finished task.
    async fn progress(&mut self, request: &str) -> CloneProgress {
        if let Some((value, task)) = self.task.as_mut()
            && value == request
        {
            if !task.is_finished() {
                return CloneProgress::Running;
            }
            let progress = match task.await {
                Ok(Ok(())) => CloneProgress::Succeeded,
                Ok(Err(message)) => CloneProgress::Failed { message },
                Err(error) => {
                    CloneProgress::Failed { message: format!("the clone task ended: {error}") }
                }
            };
            self.task = None;
            self.outcome = Some((request.to_owned(), progress));
        }
        match &self.outcome {
            Some((value, progress)) if value == request => progress.clone(),
            _ => CloneProgress::NotStarted,
        }
    }
}

/// Why a queue poll failed (the next poll retries).
#[derive(Debug, thiserror::Error)]
pub enum QueueIoError {
    /// An API call failed.
    #[error("reclone queue: {what} failed: {source}; the next poll retries")]
    Kube {
        /// What was being done.
        what: &'static str,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

fn kube(what: &'static str) -> impl FnOnce(kube::Error) -> QueueIoError {
    move |source| QueueIoError::Kube { what, source }
}

/// Everything one queue poll needs from the manager.
pub struct QueueContext<'a> {
    /// The client.
    pub client: &'a kube::Client,
    /// Events.
    pub recorder: &'a Recorder,
    /// The group as just read from the API server.
    pub group: &'a MysqlFailoverGroup,
    /// Each site's address as the operator (and the sites) reach it.
    pub addresses: &'a BTreeMap<String, (String, u16)>,
    /// The operator account (CLONE_ADMIN on the recipient, BACKUP_ADMIN on the donor).
    pub account: &'a Account,
    /// A planned failover is in flight.
    pub planned_failover_in_flight: bool,
    /// The time of this poll.
    pub now: Timestamp,
}

/// One poll: the queue's step (nothing without `status.restoreReclones`), then an
/// administrator's request on the annotation the queue's step left.
pub async fn poll(ctx: &QueueContext<'_>, memory: &mut RecloneMemory) -> Result<(), QueueIoError> {
    let (annotation, version) = poll_queue(ctx, memory).await?;
    crate::reclone::io::poll(ctx, &mut memory.admin, annotation.as_deref(), version).await
}

/// The queue's step. Returns the `reclone-site` annotation as its effects left it and the
/// resourceVersion last read or written.
async fn poll_queue(
    ctx: &QueueContext<'_>,
    memory: &mut RecloneMemory,
) -> Result<(Option<String>, Option<String>), QueueIoError> {
    let group = ctx.group;
    let annotation = group.annotations().get(RECLONE_SITE).cloned();
    let Some(status) = group.status.as_ref() else {
        return Ok((annotation, group.resource_version()));
    };
    let Some(queue) = status.restore_reclones.as_ref() else {
        *memory = RecloneMemory {
            task: memory.task.take(),
            admin: std::mem::take(&mut memory.admin),
            ..RecloneMemory::default()
        };
        return Ok((annotation, group.resource_version()));
    };
    let current = queue.current.as_ref().and_then(request_key);
    let progress = match current.as_deref() {
        Some(request) => memory.progress(request).await,
        None => CloneProgress::NotStarted,
    };
    let watched = match (&current, &progress) {
        (Some(request), CloneProgress::NotStarted) => match &memory.watched {
            Some((value, since)) if value == request => Some(*since),
            _ => {
                memory.watched = Some((request.clone(), ctx.now));
                Some(ctx.now)
            }
        },
        _ => None,
    };
    let uid = group.metadata.uid.clone().unwrap_or_default();
    // The spec's `gtidPrefix`: the divergent source of a site with recorded divergence.
    let prefixes: BTreeMap<String, String> = queue
        .pending
        .iter()
        .filter_map(|site| {
            crate::reclone::core::divergent_source(status, site).map(|uuid| (site.clone(), uuid))
        })
        .collect();
    let step = drive(&QueueView {
        queue,
        active_site: status.active_site.as_deref(),
        annotation: annotation.as_deref(),
        progress,
        watched_unstarted_since: watched,
        planned_failover_in_flight: ctx.planned_failover_in_flight,
        group: &group.name_any(),
        uid: &uid,
        gtid_prefix: &prefixes,
        now: ctx.now,
    });
    if !step.effects.is_empty() {
        tracing::info!(group = %group.name_any(), effects = ?step.effects, "reclone queue");
    } else if let Some(waiting) = &step.waiting {
        tracing::debug!(group = %group.name_any(), waiting, "reclone queue waits");
    }
    let api: Api<MysqlFailoverGroup> =
        Api::namespaced(ctx.client.clone(), &group.namespace().unwrap_or_default());
    // Every write is conditional on the resourceVersion last read or written: a human's patch
    // (Draining, the queue's removal, their own annotation) in between wins, and the next poll
    // decides again.
    let mut version = group.resource_version();
    let mut left = annotation.clone();
    if step.queue.as_ref() != Some(queue) {
        let Some(queue_value) = merge_value(step.queue.as_ref()) else {
            tracing::error!(group = %group.name_any(), "reclone queue: cannot serialize the queue; nothing written");
            return Ok((None, version));
        };
        let body = serde_json::json!({
            "metadata": { "resourceVersion": version },
            "status": { "restoreReclones": queue_value },
        });
        let written = api
            .patch_status(&group.name_any(), &PatchParams::default(), &Patch::Merge(body))
            .await
            .map_err(kube("writing status.restoreReclones"))?;
        version = written.resource_version();
    }
    for effect in &step.effects {
        let value = match effect {
            Effect::WriteAnnotation(value) => {
                left = Some(value.clone());
                serde_json::Value::from(value.as_str())
            }
            Effect::RemoveAnnotation(value) if annotation.as_deref() == Some(value.as_str()) => {
                left = None;
                serde_json::Value::Null
            }
            Effect::RemoveAnnotation(_) => continue,
            Effect::Event { reason, warning, note } => {
                publish(ctx.recorder, group, *warning, reason, note.clone()).await;
                continue;
            }
        };
        let body = serde_json::json!({ "metadata": {
            "resourceVersion": version,
            "annotations": { RECLONE_SITE: value },
        }});
        let written = api
            .patch(&group.name_any(), &PatchParams::default(), &Patch::Merge(body))
            .await
            .map_err(kube("writing the reclone-site annotation"))?;
        version = written.resource_version();
    }
    // Start the clone of the queue's own request, once written and on the group.
    if let Some(next) = step.queue.as_ref()
        && next.phase == Some(RestoreReclonesPhase::Draining)
        && let Some(current) = next.current.as_ref()
        && let Some(request) = current.request.clone()
        && let Some(key) = request_key(current)
        && memory.task.is_none()
        && memory.outcome.as_ref().is_none_or(|(value, _)| *value != key)
        && let Some(active) = status.active_site.clone()
    {
        let written = step.effects.contains(&Effect::WriteAnnotation(request.clone()))
            || annotation.as_deref() == Some(request.as_str());
        if written && let Ok(parsed) = RecloneAnnotation::parse(&request) {
            let site = parsed.site().to_owned();
            match (ctx.addresses.get(&site), ctx.addresses.get(&active)) {
                (Some(recipient), Some(donor)) => {
                    let handle = tokio::spawn(reclone(
                        recipient.clone(),
                        donor.clone(),
                        ctx.account.clone(),
                    ));
                    tracing::info!(group = %group.name_any(), %site, donor = %active, "reclone starts");
                    memory.task = Some((key, handle));
                    memory.watched = None;
                }
                _ => tracing::debug!(%site, %active, "reclone waits for both sites' addresses"),
            }
        }
    }
    Ok((for_administrators(left, step.queue.as_ref()), version))
}

/// The annotation left for an administrator's request: none when it is the queue's own
/// current request (also one this poll wrote, which the status read at the start of the poll
/// does not show yet).
fn for_administrators(
    left: Option<String>,
    queue: Option<&bloodraven_crd::group::RestoreReclones>,
) -> Option<String> {
    let ours = queue.and_then(|q| q.current.as_ref()).and_then(|c| c.request.as_deref());
    left.filter(|value| Some(value.as_str()) != ours)
}

/// What this process remembers a request by: its value and when it was written (the same
/// value written again later is another request).
fn request_key(current: &bloodraven_crd::group::RecloneRequest) -> Option<String> {
    let request = current.request.as_deref()?;
    // Whole seconds: the API server keeps a time to the second.
    let time = current.request_time.as_ref().map_or(0, |t| t.0.as_second());
    Some(format!("{request}@{time}"))
}

/// `status.restoreReclones` as a JSON merge patch value: every field the queue does not carry
/// is sent as null, so a merge patch removes it (a merge patch keeps absent fields).
/// `None` when the queue cannot be serialized (never written then: a null would release
/// every guard).
pub(crate) fn merge_value(
    queue: Option<&bloodraven_crd::group::RestoreReclones>,
) -> Option<serde_json::Value> {
    let Some(queue) = queue else { return Some(serde_json::Value::Null) };
    let mut value = serde_json::to_value(queue).ok()?;
    let object = value.as_object_mut()?;
    for key in
        ["phase", "runID", "pending", "fencedGtidExecuted", "failures", "current", "replaced"]
    {
        object.entry(key).or_insert(serde_json::Value::Null);
    }
    Some(value)
}

pub(crate) async fn publish(
    recorder: &Recorder,
    group: &MysqlFailoverGroup,
    warning: bool,
    reason: &str,
    note: String,
) {
    crate::events::record(
        recorder,
        &group.object_ref(&()),
        crate::events::kind(warning),
        reason,
        note,
    )
    .await;
}

/// The clone of one request ([`reclone_site`]), its error as the queue records it.
pub(crate) async fn reclone(
    recipient: (String, u16),
    donor: (String, u16),
    account: Account,
) -> Result<(), String> {
    reclone_site(&recipient, &donor, &account.user, &account.password)
        .await
        .map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::group::{RecloneRequest, RestoreReclones};

    use super::for_administrators;

    #[test]
    fn the_queues_own_request_is_never_an_administrators() {
        let ours = "fra:confirm=orders:uid=u1".to_owned();
        let queue = RestoreReclones {
            current: Some(RecloneRequest {
                request: Some(ours.clone()),
                ..RecloneRequest::default()
            }),
            ..RestoreReclones::default()
        };
        assert_eq!(for_administrators(Some(ours.clone()), Some(&queue)), None);
        let theirs = "pdx:confirm=orders:uid=u1".to_owned();
        assert_eq!(for_administrators(Some(theirs.clone()), Some(&queue)), Some(theirs.clone()));
        assert_eq!(for_administrators(Some(ours.clone()), None), Some(ours));
        assert_eq!(for_administrators(None, Some(&queue)), None);
    }
}
