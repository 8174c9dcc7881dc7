//! The engine: ranking applicable runbooks and walking one over snapshots.

use std::time::Duration;

use bloodraven_crd::fixtures::{EXAMPLE_RUN_ID, GroupFixture, manual_recovery_hold};
use bloodraven_crd::group::{
    RestoreReclones, RestoreReclonesPhase, SiteState, SiteStatus, SourceConvergenceReason,
    SourceConvergenceState,
};
use bloodraven_runbook::{
    Action, GroupView, NextStep, Offer, Progress, Runbook, Severity, Target, advance, applicable,
};
use jiff::Timestamp;

fn runbook<'a>(all: &'a [Runbook], id: &str) -> &'a Runbook {
    all.iter().find(|r| r.id == id).unwrap_or_else(|| panic!("runbook {id} not shipped"))
}

fn t(s: &str) -> Timestamp {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn held_view() -> GroupView {
    GroupView::of(&GroupFixture::three_sites().with_hold(manual_recovery_hold()).build())
}

/// A healthy group is offered only the procedure a human may choose: the planned failover.
#[test]
fn a_healthy_group_has_no_runbook_but_the_planned_failover() {
    let all = super::shipped();
    let view = GroupView::of(&GroupFixture::three_sites().build());
    let ranked = applicable(&all, &view);
    assert!(ranked.errors.is_empty(), "{:?}", ranked.errors);
    let ids: Vec<&str> = ranked.runbooks.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["planned-failover-before"]);
    assert_eq!(ranked.runbooks[0].severity, Severity::Info);
}

#[test]
fn ranking_puts_critical_first() {
    let all = super::shipped();
    let mut group = GroupFixture::three_sites().with_hold(manual_recovery_hold()).build();
    let status = group.status.as_mut().unwrap();
    status.sites.retain(|s| s.name != "fra");
    status.sites.push(SiteStatus {
        name: "fra".to_owned(),
        source_convergence_state: Some("Blocked".parse().unwrap()),
        source_convergence_reason: Some("GTIDDiverged".parse().unwrap()),
        ..Default::default()
    });
    let ranked = applicable(&all, &GroupView::of(&group));
    assert!(ranked.errors.is_empty(), "{:?}", ranked.errors);
    let ids: Vec<&str> = ranked.runbooks.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["automation-hold", "diverged-follower"]);
    assert_eq!(ranked.runbooks[0].severity, Severity::Critical);
}

#[test]
fn the_hold_runbook_walks_to_the_acknowledgement_and_waits() {
    let all = super::shipped();
    let rb = runbook(&all, "automation-hold");
    let now = t("2026-04-20T15:00:00Z");
    let view = held_view();
    let p = Progress::start(rb);

    // Step 1: the hold record is present: continue to "one-writable".
    let NextStep::Show { check, next, .. } = advance(rb, &p, &view, now).unwrap() else {
        panic!("want Show")
    };
    assert!(check.unwrap().passed);
    let p = p.moved(rb, &next);
    assert_eq!(p.step.as_deref(), Some("one-writable"));

    // Step 2: the fixture has exactly one writable site (iad).
    let NextStep::Show { check, next, .. } = advance(rb, &p, &view, now).unwrap() else {
        panic!("want Show")
    };
    assert!(check.unwrap().passed, "one writable site expected in the fixture");
    let p = p.moved(rb, &next);

    // Step 3: the acknowledgement, its run id drawn from the state.
    let step = advance(rb, &p, &view, now).unwrap();
    let NextStep::Show { offer, .. } = &step else { panic!("want Show, got {step:?}") };
    assert_eq!(
        offer.as_ref(),
        Some(&Offer {
            action: Action::AcknowledgeHold,
            params: vec![("runId".to_owned(), EXAMPLE_RUN_ID.to_owned())]
        })
    );
    let p = p.acted(now);

    // The hold still stands a minute later: waiting, with the time left.
    let later = t("2026-04-20T15:01:00Z");
    assert_eq!(
        advance(rb, &p, &view, later).unwrap(),
        NextStep::Waiting { step: 2, remaining: Duration::from_secs(60) }
    );
    // Past the timeout.
    let late = t("2026-04-20T15:02:30Z");
    assert!(matches!(advance(rb, &p, &view, late).unwrap(), NextStep::TimedOut { step: 2, .. }));

    // The operator cleared the hold: satisfied, and the runbook ends.
    let cleared = GroupView::of(&GroupFixture::three_sites().build());
    let NextStep::Satisfied { next, .. } = advance(rb, &p, &cleared, later).unwrap() else {
        panic!("want Satisfied")
    };
    assert_eq!(next, Target::Done);
    assert_eq!(advance(rb, &p.moved(rb, &next), &cleared, later).unwrap(), NextStep::Finished);
}

#[test]
fn a_failed_check_follows_on_fail_and_offers_no_action() {
    let all = super::shipped();
    let rb = runbook(&all, "automation-hold");
    let group = GroupFixture::three_sites()
        .with_hold(manual_recovery_hold())
        .with_site_state("pdx", SiteState::Writable)
        .build();
    let p = Progress::start(rb).moved(rb, &Target::Step(1));
    let step = advance(rb, &p, &GroupView::of(&group), t("2026-04-20T15:00:00Z")).unwrap();
    let NextStep::Show { check, offer, next, .. } = step else { panic!("want Show") };
    assert!(!check.unwrap().passed, "two writable sites");
    assert_eq!(offer, None);
    assert_eq!(next, Target::Step(1), "the split-brain step repeats until resolved");
}

#[test]
fn the_held_queue_runbook_offers_keep_primary_with_the_run_id() {
    let all = super::shipped();
    let rb = runbook(&all, "held-reclone-queue");
    let group = GroupFixture::three_sites()
        .with_restore_reclones(RestoreReclones {
            phase: Some(RestoreReclonesPhase::Held),
            run_id: Some("restore-1".to_owned()),
            pending: vec!["pdx".to_owned(), "fra".to_owned()],
            ..Default::default()
        })
        .build();
    let view = GroupView::of(&group);
    let ranked = applicable(&all, &view);
    assert_eq!(
        ranked.runbooks.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["held-reclone-queue"]
    );
    let p = Progress::start(rb).moved(rb, &Target::Step(2));
    let NextStep::Show { offer, .. } = advance(rb, &p, &view, t("2026-04-20T15:00:00Z")).unwrap()
    else {
        panic!("want Show")
    };
    assert_eq!(
        offer,
        Some(Offer {
            action: Action::RecloneQueueKeepPrimary,
            params: vec![("runId".to_owned(), "restore-1".to_owned())]
        })
    );
}

#[test]
fn progress_of_another_runbook_is_refused() {
    let all = super::shipped();
    let p = Progress::start(runbook(&all, "no-primary"));
    let err =
        advance(runbook(&all, "automation-hold"), &p, &held_view(), t("2026-04-20T15:00:00Z"))
            .unwrap_err();
    assert!(err.to_string().contains("start the runbook again"), "{err}");
}

/// States where each shipped runbook applies.
fn scenarios() -> Vec<(&'static str, GroupView)> {
    use bloodraven_crd::{Condition, ConditionReason, ConditionStatus, ConditionType};
    let mut no_primary = GroupFixture::three_sites()
        .with_site_state("iad", SiteState::Unreachable)
        .with_site_state("pdx", SiteState::Unreachable)
        .with_site_state("fra", SiteState::Unreachable);
    let mut degraded = Condition::new(ConditionType::Degraded, ConditionStatus::True);
    degraded.reason = Some(ConditionReason::NoPrimary);
    no_primary = no_primary.with_condition(degraded);
    let mut diverged = GroupFixture::three_sites().build();
    for site in diverged.status.iter_mut().flat_map(|s| s.sites.iter_mut()) {
        if site.name == "fra" {
            site.source_convergence_state = Some(SourceConvergenceState::Blocked);
            site.source_convergence_reason = Some(SourceConvergenceReason::GtidDiverged);
        }
    }
    let held = GroupFixture::three_sites()
        .with_restore_reclones(RestoreReclones {
            phase: Some(RestoreReclonesPhase::Held),
            run_id: Some("restore-1".to_owned()),
            pending: vec!["pdx".to_owned()],
            ..Default::default()
        })
        .build();
    let mut archive = Condition::new(ConditionType::PitrArchiveReady, ConditionStatus::False);
    archive.reason = Some(ConditionReason::parse("ArchiverError"));
    let archive = GroupFixture::three_sites().with_condition(archive).build();
    vec![
        ("automation-hold", held_view()),
        ("no-primary", GroupView::of(&no_primary.build())),
        ("diverged-follower", GroupView::of(&diverged)),
        ("held-reclone-queue", GroupView::of(&held)),
        ("archive-not-ready", GroupView::of(&archive)),
    ]
}

#[test]
fn each_runbook_applies_to_its_scenario_alone() {
    let all = super::shipped();
    for (id, view) in scenarios() {
        let ranked = applicable(&all, &view);
        assert!(ranked.errors.is_empty(), "{id}: {:?}", ranked.errors);
        // The planned failover's "before" is offered wherever one primary writes (info).
        let ids: Vec<&str> = ranked
            .runbooks
            .iter()
            .map(|r| r.id.as_str())
            .filter(|id| *id != "planned-failover-before")
            .collect();
        assert_eq!(ids, [id], "scenario {id}");
    }
}

/// Every expression of every step evaluates (no run-time type error) where the runbook applies,
/// before and after its action.
#[test]
fn every_step_evaluates_in_its_scenario() {
    let all = super::shipped();
    let now = t("2026-04-20T15:00:00Z");
    for (id, view) in scenarios() {
        let rb = runbook(&all, id);
        for step in &rb.steps {
            let p = Progress {
                runbook: rb.id.clone(),
                step: Some(step.id.clone()),
                acted_at: None,
                before: None,
            };
            advance(rb, &p, &view, now).unwrap_or_else(|e| panic!("{id}/{}: {e}", step.id));
            advance(rb, &p.acted(now), &view, now)
                .unwrap_or_else(|e| panic!("{id}/{} acted: {e}", step.id));
        }
    }
}

#[test]
fn the_diverged_follower_runbook_names_the_site_to_reclone() {
    let all = super::shipped();
    let rb = runbook(&all, "diverged-follower");
    let (_, view) = scenarios().remove(2);
    let p = Progress::start(rb).moved(rb, &Target::Step(2));
    let NextStep::Show { offer, .. } = advance(rb, &p, &view, t("2026-04-20T15:00:00Z")).unwrap()
    else {
        panic!("want Show")
    };
    assert_eq!(
        offer,
        Some(Offer {
            action: Action::RecloneSite,
            params: vec![("site".to_owned(), "fra".to_owned())]
        })
    );
}

#[test]
fn a_check_shows_the_values_it_read() {
    let all = super::shipped();
    let rb = runbook(&all, "held-reclone-queue");
    let (_, view) = scenarios().remove(3);
    let p = Progress::start(rb).moved(rb, &Target::Step(1));
    let NextStep::Show { check, .. } = advance(rb, &p, &view, t("2026-04-20T15:00:00Z")).unwrap()
    else {
        panic!("want Show")
    };
    let check = check.unwrap();
    assert!(check.passed);
    assert_eq!(check.reads, [("group.activeSite".to_owned(), "iad".to_owned())]);
}

/// The planned-failover-before runbook's wait ends on this request's run, not on the previous
/// run's terminal status still present when the request is sent (until the operator admits
/// the new one, `status.plannedFailover` is the old, Succeeded run).
#[test]
fn the_planned_failover_wait_does_not_end_on_the_previous_runs_result() {
    use bloodraven_crd::fixtures::succeeded_planned_failover;
    let all = super::shipped();
    let rb = runbook(&all, "planned-failover-before");
    let now = t("2026-04-20T15:00:00Z");
    let previous = succeeded_planned_failover();
    let before =
        GroupView::of(&GroupFixture::three_sites().with_planned_failover(previous.clone()).build());
    assert!(applicable(&all, &before).runbooks.iter().any(|r| r.id == rb.id));
    let step = rb.step_index("request").unwrap();
    let p = Progress::start(rb).moved(rb, &Target::Step(step)).acted_on(now, &before);
    let later = t("2026-04-20T15:00:05Z");
    // The request was sent; the old run's Succeeded is all the group shows yet.
    assert!(
        matches!(advance(rb, &p, &before, later).unwrap(), NextStep::Waiting { .. }),
        "the previous run's outcome ended the wait"
    );
    // The new run is admitted (no outcome yet): still waiting.
    let mut running = previous.clone();
    running.run_id = Some("a-new-run".to_owned());
    running.result = None;
    let admitted =
        GroupView::of(&GroupFixture::three_sites().with_planned_failover(running.clone()).build());
    assert!(matches!(advance(rb, &p, &admitted, later).unwrap(), NextStep::Waiting { .. }));
    // The new run ends: satisfied.
    let mut ended = previous;
    ended.run_id = Some("a-new-run".to_owned());
    let done = GroupView::of(&GroupFixture::three_sites().with_planned_failover(ended).build());
    assert!(matches!(
        advance(rb, &p, &done, later).unwrap(),
        NextStep::Satisfied { next: Target::Done, .. }
    ));
    // The progress, with the group it acted on, survives leaving the view (serialized).
    let text = serde_json::to_string(&p).unwrap();
    let back: Progress = serde_json::from_str(&text).unwrap();
    assert_eq!(back, p);
}
