//! The post-restore reclone queue (`status.restoreReclones`), pure: the queue, what this
//! process observed about the current request and `now` come in; the next queue and the
//! effects (annotation writes, Events) come out. The IO layer writes the queue to status
//! before it acts on the effects, and the next poll observes the result.
//!
//! Backup-and-restore document, "Peer reclones after a full-instance restore".

use std::collections::BTreeMap;

use bloodraven_crd::annotations::RecloneRequest as RecloneAnnotation;
use bloodraven_crd::group::{
    RecloneFailure, RecloneRequest, RestoreReclones, RestoreReclonesPhase, SiteRole, SiteSpec,
};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// A failed site is retried this long after its failure (the others go first).
pub const RETRY_AFTER: SignedDuration = SignedDuration::from_mins(1);

/// A request this process watched sit unstarted this long counts as a failure.
pub const STALL_AFTER: SignedDuration = SignedDuration::from_mins(10);

/// The queue's fixed order: every site but the primary, PrimaryCandidates first (in
/// `sitePriorities` order, then declared order), then DisasterRecovery, then ReadOnly (then
/// roles this operator does not know).
pub fn queue_order(sites: &[SiteSpec], priorities: &[String], primary: &str) -> Vec<String> {
    let rank = |site: &SiteSpec| match site.effective_role() {
        SiteRole::PrimaryCandidate => 0,
        SiteRole::DisasterRecovery => 1,
        SiteRole::ReadOnly => 2,
        // A role this operator does not know: queued last.
        _ => 3,
    };
    let priority =
        |name: &str| priorities.iter().position(|p| p == name).unwrap_or(priorities.len());
    let mut peers: Vec<(usize, usize, usize, &SiteSpec)> = sites
        .iter()
        .enumerate()
        .filter(|(_, site)| site.name != primary)
        .map(|(declared, site)| {
            let by_priority = if rank(site) == 0 { priority(&site.name) } else { 0 };
            (rank(site), by_priority, declared, site)
        })
        .collect();
    peers.sort_by_key(|(rank, priority, declared, _)| (*rank, *priority, *declared));
    peers.into_iter().map(|(_, _, _, site)| site.name.clone()).collect()
}

/// What this process knows about the clone the queue's current request asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CloneProgress {
    /// No clone of the request has started (or none is known).
    NotStarted,
    /// The clone runs.
    Running,
    /// It finished and the site holds the primary's data.
    Succeeded,
    /// It failed.
    Failed {
        /// Why.
        message: String,
    },
}

/// One poll's view of the queue.
#[derive(Clone, Debug)]
pub struct QueueView<'a> {
    /// `status.restoreReclones` as read from the API server.
    pub queue: &'a RestoreReclones,
    /// `status.activeSite`.
    pub active_site: Option<&'a str>,
    /// The group's current `reclone-site` annotation value, whoever set it.
    pub annotation: Option<&'a str>,
    /// The clone of the queue's current request.
    pub progress: CloneProgress,
    /// Since when this process has watched the current request sit unstarted (process
    /// memory: a restarted operator starts watching afresh, so it never fails a running clone).
    pub watched_unstarted_since: Option<Timestamp>,
    /// A planned failover is in flight: no new request.
    pub planned_failover_in_flight: bool,
    /// The group's name and `metadata.uid` (the request confirms both).
    pub group: &'a str,
    /// The group's `metadata.uid`.
    pub uid: &'a str,
    /// Sites with recorded divergence → the divergent source's UUID (`gtidPrefix`).
    pub gtid_prefix: &'a BTreeMap<String, String>,
    /// The time of this poll.
    pub now: Timestamp,
}

/// Something the IO layer does after writing the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Set the group's `reclone-site` annotation to this value.
    WriteAnnotation(String),
    /// Remove the group's `reclone-site` annotation (only when it still has this value).
    RemoveAnnotation(String),
    /// Publish an Event on the group.
    Event {
        /// The catalog reason.
        reason: &'static str,
        /// Warning (true) or Normal.
        warning: bool,
        /// The note.
        note: String,
    },
}

/// The outcome of one poll of the queue.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueStep {
    /// The queue to write: `None` removes `status.restoreReclones`.
    pub queue: Option<RestoreReclones>,
    /// What to do after the write succeeded.
    pub effects: Vec<Effect>,
    /// Why nothing moves, when nothing does.
    pub waiting: Option<String>,
}

impl QueueStep {
    fn unchanged(view: &QueueView<'_>, waiting: impl Into<String>) -> Self {
        Self { queue: Some(view.queue.clone()), effects: Vec::new(), waiting: Some(waiting.into()) }
    }
}

fn event(reason: &'static str, warning: bool, note: String) -> Effect {
    Effect::Event { reason, warning, note }
}

/// One poll of the queue. See the module documentation.
pub fn drive(view: &QueueView<'_>) -> QueueStep {
    let queue = view.queue;
    // A queued site that became the primary some other way abandons the rest.
    if let Some(active) = view.active_site
        && queue.pending.iter().any(|site| site == active)
    {
        let mut effects = withdraw_current(view);
        effects.push(event(
            "RestoreReclonesAbandoned",
            true,
            format!(
                "queued site {active} became the primary; the rest of the reclone queue ({}) is abandoned",
                queue.pending.iter().filter(|s| *s != active).cloned().collect::<Vec<_>>().join(", ")
            ),
        ));
        return QueueStep { queue: None, effects, waiting: None };
    }
    match queue.phase.as_ref() {
        Some(RestoreReclonesPhase::Draining) => drain(view),
        Some(RestoreReclonesPhase::Armed | RestoreReclonesPhase::Held) => refuse_clones(view),
        Some(other) => QueueStep::unchanged(
            view,
            format!(
                "status.restoreReclones.phase {} is unknown to this operator; nothing is cloned",
                other.as_str()
            ),
        ),
        None => {
            QueueStep::unchanged(view, "status.restoreReclones has no phase; nothing is cloned")
        }
    }
}

/// Armed or Held: no clone into a queued site. A reclone annotation naming one (the queue's
/// own left over, or an administrator's) is refused and removed.
fn refuse_clones(view: &QueueView<'_>) -> QueueStep {
    let mut queue = view.queue.clone();
    let mut effects = Vec::new();
    if let Some(value) = view.annotation
        && let Ok(request) = RecloneAnnotation::parse(value)
        && queue.pending.iter().any(|site| site == request.site())
    {
        effects.push(Effect::RemoveAnnotation(value.to_owned()));
        effects.push(event(
            "RecloneRejected",
            true,
            format!(
                "reclone of {} refused: it is queued for its post-restore reclone and the queue is {}; set status.restoreReclones.phase to Draining to clone it",
                request.site(),
                queue.phase.as_ref().map_or("?", |p| p.as_str())
            ),
        ));
    }
    queue.current = None;
    let phase = queue.phase.as_ref().map_or("?", |p| p.as_str()).to_owned();
    QueueStep { queue: Some(queue), effects, waiting: Some(format!("the queue is {phase}")) }
}

/// The effects that withdraw the queue's own request, when it is still on the group.
fn withdraw_current(view: &QueueView<'_>) -> Vec<Effect> {
    match (view.queue.current.as_ref().and_then(|c| c.request.as_deref()), view.annotation) {
        (Some(ours), Some(value)) if ours == value => {
            vec![Effect::RemoveAnnotation(ours.to_owned())]
        }
        _ => Vec::new(),
    }
}

fn drain(view: &QueueView<'_>) -> QueueStep {
    let mut queue = view.queue.clone();
    let now = view.now;
    if let Some(current) = queue.current.clone() {
        let site = current.site.clone().unwrap_or_default();
        let ours = current.request.as_deref();
        let still_ours = ours.is_some() && ours == view.annotation;
        let failure = match (&view.progress, still_ours) {
            (CloneProgress::Succeeded, _) => {
                queue.pending.retain(|s| *s != site);
                queue.failures.retain(|f| f.site.as_deref() != Some(site.as_str()));
                queue.current = None;
                let mut effects = withdraw_current(view);
                effects.push(event(
                    "RestoreRecloneSucceeded",
                    false,
                    format!("{site} was recloned from the restored primary and left the queue"),
                ));
                if queue.pending.is_empty() {
                    effects.push(event(
                        "RestoreReclonesDrained",
                        false,
                        "every queued site was recloned; status.restoreReclones is removed"
                            .to_owned(),
                    ));
                    return QueueStep { queue: None, effects, waiting: None };
                }
                return QueueStep { queue: Some(queue), effects, waiting: None };
            }
            (CloneProgress::Failed { message }, _) => message.clone(),
            (CloneProgress::Running, _) => {
                return QueueStep::unchanged(view, format!("waiting for the reclone of {site}"));
            }
            (CloneProgress::NotStarted, false) => {
                "the reclone request was removed or replaced before its clone started".to_owned()
            }
            (CloneProgress::NotStarted, true) => match view.watched_unstarted_since {
                Some(since) if now.duration_since(since) >= STALL_AFTER => {
                    "the clone did not start within ten minutes".to_owned()
                }
                _ => {
                    return QueueStep::unchanged(
                        view,
                        format!("waiting for the reclone of {site} to start"),
                    );
                }
            },
        };
        let mut effects = withdraw_current(view);
        record_failure(&mut queue, &site, &failure, now);
        queue.current = None;
        effects.push(event(
            "RestoreRecloneFailed",
            true,
            format!("the reclone of {site} failed: {failure}; it stays queued and is retried after the others, no sooner than a minute from now"),
        ));
        return QueueStep { queue: Some(queue), effects, waiting: None };
    }
    if queue.pending.is_empty() {
        let effects = vec![event(
            "RestoreReclonesDrained",
            false,
            "every queued site was recloned; status.restoreReclones is removed".to_owned(),
        )];
        return QueueStep { queue: None, effects, waiting: None };
    }
    if let Some(value) = view.annotation {
        return QueueStep::unchanged(
            view,
            format!("waiting for the reclone request someone else set ({value}) to finish"),
        );
    }
    if view.planned_failover_in_flight {
        return QueueStep::unchanged(
            view,
            "no reclone is requested while a planned failover is in flight",
        );
    }
    let Some(site) = next_site(&queue, now) else {
        let next_retry = queue
            .failures
            .iter()
            .filter_map(|f| f.retry_time.as_ref().map(|t| t.0))
            .min()
            .map_or_else(|| "?".to_owned(), |t| t.to_string());
        return QueueStep::unchanged(
            view,
            format!("every queued site failed; the next retry is at {next_retry}"),
        );
    };
    let request = RecloneAnnotation::new(site.clone(), view.group, view.uid).and_then(|request| {
        match view.gtid_prefix.get(&site) {
            Some(uuid) => request.with_gtid_prefix(uuid.clone()),
            None => Ok(request),
        }
    });
    let value = match request {
        Ok(request) => request.to_string(),
        Err(error) => {
            record_failure(
                &mut queue,
                &site,
                &format!("the reclone request cannot be written: {error}"),
                now,
            );
            return QueueStep { queue: Some(queue), effects: Vec::new(), waiting: None };
        }
    };
    queue.current = Some(RecloneRequest {
        site: Some(site.clone()),
        request: Some(value.clone()),
        request_time: Some(Time(now)),
        ..RecloneRequest::default()
    });
    let effects = vec![
        Effect::WriteAnnotation(value.clone()),
        event(
            "RestoreRecloneRequested",
            false,
            format!("reclone of {site} from the primary requested ({value})"),
        ),
    ];
    QueueStep { queue: Some(queue), effects, waiting: None }
}

/// The next site: the first queued site without a failure, else the failed site whose retry
/// is due earliest (and is due).
pub fn next_site(queue: &RestoreReclones, now: Timestamp) -> Option<String> {
    let failure = |site: &str| queue.failures.iter().find(|f| f.site.as_deref() == Some(site));
    if let Some(site) = queue.pending.iter().find(|site| failure(site).is_none()) {
        return Some(site.clone());
    }
    queue
        .pending
        .iter()
        .filter_map(|site| {
            let retry = failure(site).and_then(|f| f.retry_time.as_ref()).map_or(now, |t| t.0);
            (retry <= now).then_some((retry, site))
        })
        .min_by_key(|(retry, _)| *retry)
        .map(|(_, site)| site.clone())
}

fn record_failure(queue: &mut RestoreReclones, site: &str, message: &str, now: Timestamp) {
    let index = match queue.failures.iter().position(|f| f.site.as_deref() == Some(site)) {
        Some(index) => index,
        None => {
            queue
                .failures
                .push(RecloneFailure { site: Some(site.to_owned()), ..RecloneFailure::default() });
            queue.failures.len() - 1
        }
    };
    if let Some(failure) = queue.failures.get_mut(index) {
        failure.attempts = Some(failure.attempts.unwrap_or(0) + 1);
        failure.last_failure_time = Some(Time(now));
        failure.retry_time = Some(Time(now + RETRY_AFTER));
        failure.message = Some(message.to_owned());
    }
}
