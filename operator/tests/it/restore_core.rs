//! `restore::core`: the post-restore reclone queue, table by table (backup-and-restore
//! document, "Peer reclones after a full-instance restore").

use std::collections::BTreeMap;

use bloodraven_crd::group::{
    RecloneFailure, RecloneRequest, RestoreReclones, RestoreReclonesPhase, SiteRole, SiteSpec,
};
use bloodraven_operator::restore::core::{
    CloneProgress, Effect, QueueStep, QueueView, RETRY_AFTER, STALL_AFTER, drive, next_site,
    queue_order,
};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

const UID: &str = "6b1d9c4e-1f0a-4a57-9a0c-2a1f5e0b7c11";
const PREFIX: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

fn now() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

fn spec(name: &str, role: SiteRole) -> SiteSpec {
    serde_json::from_value(serde_json::json!({
        "name": name, "serverID": 1, "role": role.as_str()
    }))
    .unwrap()
}

fn queue(phase: RestoreReclonesPhase, pending: &[&str]) -> RestoreReclones {
    RestoreReclones {
        phase: Some(phase),
        run_id: Some("run-1".into()),
        pending: pending.iter().map(|s| (*s).to_owned()).collect(),
        ..RestoreReclones::default()
    }
}

fn request(site: &str) -> String {
    format!("{site}:confirm=orders:uid={UID}")
}

fn with_current(mut queue: RestoreReclones, site: &str, at: Timestamp) -> RestoreReclones {
    queue.current = Some(RecloneRequest {
        site: Some(site.into()),
        request: Some(request(site)),
        request_time: Some(Time(at)),
        ..RecloneRequest::default()
    });
    queue
}

struct View {
    queue: RestoreReclones,
    active: &'static str,
    annotation: Option<String>,
    progress: CloneProgress,
    watched: Option<Timestamp>,
    planned: bool,
    prefix: BTreeMap<String, String>,
    now: Timestamp,
}

impl View {
    fn new(queue: RestoreReclones) -> Self {
        Self {
            queue,
            active: "iad",
            annotation: None,
            progress: CloneProgress::NotStarted,
            watched: None,
            planned: false,
            prefix: BTreeMap::new(),
            now: now(),
        }
    }
    fn run(&self) -> QueueStep {
        drive(&QueueView {
            queue: &self.queue,
            active_site: Some(self.active),
            annotation: self.annotation.as_deref(),
            progress: self.progress.clone(),
            watched_unstarted_since: self.watched,
            planned_failover_in_flight: self.planned,
            group: "orders",
            uid: UID,
            gtid_prefix: &self.prefix,
            now: self.now,
        })
    }
}

fn reasons(step: &QueueStep) -> Vec<&'static str> {
    step.effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Event { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect()
}

#[test]
fn the_order_is_candidates_by_priority_then_declared_then_dr_then_readers() {
    use SiteRole::{DisasterRecovery, PrimaryCandidate, ReadOnly};
    let sites = [
        spec("rd1", ReadOnly),
        spec("iad", PrimaryCandidate),
        spec("dr1", DisasterRecovery),
        spec("pdx", PrimaryCandidate),
        spec("sea", PrimaryCandidate),
        spec("ord", PrimaryCandidate),
    ];
    let priorities = vec!["sea".to_owned(), "iad".to_owned()];
    assert_eq!(queue_order(&sites, &priorities, "iad"), ["sea", "pdx", "ord", "dr1", "rd1"]);
    assert_eq!(queue_order(&sites, &[], "pdx"), ["iad", "sea", "ord", "dr1", "rd1"]);
}

#[test]
fn armed_and_held_queues_refuse_a_reclone_of_a_queued_site_and_remove_it() {
    for phase in [RestoreReclonesPhase::Armed, RestoreReclonesPhase::Held] {
        let mut view = View::new(with_current(queue(phase.clone(), &["pdx", "fra"]), "pdx", now()));
        view.annotation = Some(request("pdx"));
        let step = view.run();
        assert_eq!(step.effects.first(), Some(&Effect::RemoveAnnotation(request("pdx"))));
        assert_eq!(reasons(&step), ["RecloneRejected"]);
        let queue = step.queue.unwrap();
        assert_eq!(queue.phase, Some(phase));
        assert_eq!(queue.pending, ["pdx", "fra"], "nothing leaves the queue");
        assert!(queue.current.is_none(), "an Armed or Held queue has no request");
        // A reclone of a site that is not queued is none of the queue's business.
        view.annotation = Some(request("sea"));
        view.queue.current = None;
        assert!(view.run().effects.is_empty());
    }
}

#[test]
fn draining_requests_the_first_site_with_the_spec_annotation() {
    let mut view = View::new(queue(RestoreReclonesPhase::Draining, &["pdx", "fra"]));
    view.prefix.insert("pdx".into(), PREFIX.into());
    let step = view.run();
    let value = format!("pdx:confirm=orders:uid={UID}:gtidPrefix={PREFIX}");
    assert_eq!(step.effects.first(), Some(&Effect::WriteAnnotation(value.clone())));
    assert_eq!(reasons(&step), ["RestoreRecloneRequested"]);
    let current = step.queue.unwrap().current.unwrap();
    assert_eq!(current.site.as_deref(), Some("pdx"));
    assert_eq!(current.request.as_deref(), Some(value.as_str()));
    assert_eq!(current.request_time, Some(Time(now())));
}

#[test]
fn a_succeeded_clone_leaves_the_queue_and_the_last_one_drains_it() {
    let mut view = View::new(with_current(
        queue(RestoreReclonesPhase::Draining, &["pdx", "fra"]),
        "pdx",
        now(),
    ));
    view.annotation = Some(request("pdx"));
    view.progress = CloneProgress::Succeeded;
    let step = view.run();
    assert_eq!(step.effects.first(), Some(&Effect::RemoveAnnotation(request("pdx"))));
    assert_eq!(reasons(&step), ["RestoreRecloneSucceeded"]);
    let left = step.queue.unwrap();
    assert_eq!(left.pending, ["fra"]);
    assert!(left.current.is_none());

    let mut view = View::new(with_current(left, "fra", now()));
    view.annotation = Some(request("fra"));
    view.progress = CloneProgress::Succeeded;
    let step = view.run();
    assert_eq!(reasons(&step), ["RestoreRecloneSucceeded", "RestoreReclonesDrained"]);
    assert_eq!(step.queue, None, "a drained queue is removed");
}

#[test]
fn a_failed_site_is_retried_a_minute_later_after_the_others() {
    let mut view = View::new(with_current(
        queue(RestoreReclonesPhase::Draining, &["pdx", "fra"]),
        "pdx",
        now(),
    ));
    view.annotation = Some(request("pdx"));
    view.progress = CloneProgress::Failed { message: "donor refused".into() };
    let step = view.run();
    assert_eq!(reasons(&step), ["RestoreRecloneFailed"]);
    let queue = step.queue.unwrap();
    assert_eq!(queue.pending, ["pdx", "fra"], "a failed site stays queued");
    let failure = queue.failures.first().unwrap();
    assert_eq!(failure.site.as_deref(), Some("pdx"));
    assert_eq!(failure.attempts, Some(1));
    assert_eq!(failure.retry_time, Some(Time(now() + RETRY_AFTER)));
    assert_eq!(failure.message.as_deref(), Some("donor refused"));
    // The other site goes first.
    assert_eq!(next_site(&queue, now()).as_deref(), Some("fra"));
    // With only the failed site left, it waits for its retry time, not a second less.
    let mut only = queue.clone();
    only.pending = vec!["pdx".into()];
    let mut view = View::new(only.clone());
    view.now = now() + RETRY_AFTER - SignedDuration::from_secs(1);
    let step = view.run();
    assert!(step.effects.is_empty(), "{step:?}");
    assert!(step.waiting.unwrap().contains("next retry"));
    view.now = now() + RETRY_AFTER;
    let step = view.run();
    assert_eq!(reasons(&step), ["RestoreRecloneRequested"]);
    assert_eq!(step.queue.unwrap().failures.len(), 1, "the failure record stays until success");
}

#[test]
fn a_request_counts_as_stalled_only_after_this_process_watched_it_ten_minutes() {
    let requested = now() - SignedDuration::from_hours(2);
    let mut view =
        View::new(with_current(queue(RestoreReclonesPhase::Draining, &["pdx"]), "pdx", requested));
    view.annotation = Some(request("pdx"));
    // A restarted operator has watched nothing yet: an old request_time alone does not fail it.
    assert!(view.run().effects.is_empty());
    view.watched = Some(now() - STALL_AFTER + SignedDuration::from_secs(1));
    assert!(view.run().effects.is_empty());
    view.watched = Some(now() - STALL_AFTER);
    let step = view.run();
    assert_eq!(reasons(&step), ["RestoreRecloneFailed"]);
    assert_eq!(step.effects.first(), Some(&Effect::RemoveAnnotation(request("pdx"))));
    let failed = step.queue.unwrap();
    assert!(failed.failures[0].message.as_deref().unwrap().contains("ten minutes"));
    // A running clone is never stalled.
    let mut view =
        View::new(with_current(queue(RestoreReclonesPhase::Draining, &["pdx"]), "pdx", requested));
    view.annotation = Some(request("pdx"));
    view.progress = CloneProgress::Running;
    view.watched = Some(now() - SignedDuration::from_hours(1));
    assert!(view.run().effects.is_empty());
}

#[test]
fn someone_elses_request_is_never_overwritten_and_planned_failovers_hold_requests() {
    let mut view = View::new(queue(RestoreReclonesPhase::Draining, &["pdx"]));
    view.annotation = Some(request("sea"));
    let step = view.run();
    assert!(step.effects.is_empty());
    assert!(step.waiting.unwrap().contains("someone else"));
    view.annotation = None;
    view.planned = true;
    let step = view.run();
    assert!(step.effects.is_empty());
    assert!(step.waiting.unwrap().contains("planned failover"));
}

#[test]
fn a_removed_request_counts_as_a_failure() {
    let mut view =
        View::new(with_current(queue(RestoreReclonesPhase::Draining, &["pdx"]), "pdx", now()));
    view.annotation = None;
    let step = view.run();
    assert_eq!(reasons(&step), ["RestoreRecloneFailed"]);
    assert!(step.effects.iter().all(|e| !matches!(e, Effect::RemoveAnnotation(_))));
}

#[test]
fn a_queued_site_that_became_primary_abandons_the_queue() {
    let mut view =
        View::new(with_current(queue(RestoreReclonesPhase::Held, &["pdx", "fra"]), "pdx", now()));
    view.active = "pdx";
    let step = view.run();
    assert_eq!(step.queue, None);
    assert_eq!(reasons(&step), ["RestoreReclonesAbandoned"]);
}

#[test]
fn a_human_setting_draining_on_a_held_queue_starts_the_reclones() {
    let mut held = queue(RestoreReclonesPhase::Held, &["pdx", "fra"]);
    held.failures.push(RecloneFailure { site: Some("fra".into()), ..RecloneFailure::default() });
    let view = View::new(held.clone());
    assert!(view.run().effects.is_empty(), "Held: nothing is cloned");
    held.phase = Some(RestoreReclonesPhase::Draining);
    let step = View::new(held).run();
    assert_eq!(step.effects.first(), Some(&Effect::WriteAnnotation(request("pdx"))));
}

#[test]
fn an_unknown_phase_changes_nothing() {
    let mut odd = queue(RestoreReclonesPhase::Draining, &["pdx"]);
    odd.phase = Some(RestoreReclonesPhase::from("Paused"));
    let step = View::new(odd.clone()).run();
    assert_eq!(step.queue, Some(odd));
    assert!(step.effects.is_empty());
}
