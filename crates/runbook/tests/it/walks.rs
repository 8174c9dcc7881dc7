//! Every shipped runbook walked read-only (no action confirmed) over a state where it applies:
//! the steps it shows and where it stops. Steps with actions are walked up to their offer; the
//! action itself needs the live lab and the console's confirm flow.

use bloodraven_crd::fixtures::GroupFixture;
use bloodraven_runbook::{GroupView, Runbook, WalkEnd, applicable, walk};
use jiff::Timestamp;

fn now() -> Timestamp {
    "2026-04-20T15:00:00Z".parse().unwrap_or_else(|e| panic!("bad time: {e}"))
}

fn healthy() -> GroupView {
    GroupView::of(&GroupFixture::three_sites().build())
}

fn site_state(view: &mut GroupView, site: &str, state: &str) {
    for s in view.sites.iter_mut().filter(|s| s.name == site) {
        s.state = state.to_owned();
    }
}

fn planned(view: &mut GroupView, phase: &str, outcome: &str, reason: &str) {
    let run = &mut view.planned_failover;
    run.present = true;
    run.run_id = "run-1".to_owned();
    run.phase = phase.to_owned();
    run.outcome = outcome.to_owned();
    run.reason = reason.to_owned();
    run.source_site = "iad".to_owned();
    run.target_site = "pdx".to_owned();
}

fn restore_failed(reason: &str) -> GroupView {
    let mut view = healthy();
    view.active_site = String::new();
    for s in &mut view.sites {
        s.state = "read-only".to_owned();
    }
    view.restore.present = true;
    view.restore.phase = "Failed".to_owned();
    view.restore.reason = reason.to_owned();
    view.restore.message = format!("{reason}: ... add them to excludeGtids, or choose a target");
    view
}

/// A state where each runbook applies, by runbook id.
fn states() -> Vec<(&'static str, GroupView)> {
    let during = {
        let mut v = healthy();
        planned(&mut v, "WaitingForLag", "", "");
        v
    };
    let after = {
        let mut v = healthy();
        planned(&mut v, "Failed", "RolledBack", "LagTimeout");
        v
    };
    let fenced = {
        let mut v = healthy();
        planned(&mut v, "Failed", "SourceLeftFenced", "StatusStalled");
        site_state(&mut v, "iad", "read-only");
        v
    };
    let fenced_by_hand = {
        let mut v = fenced.clone();
        v.planned_failover.reason = "FenceNotAttributable".to_owned();
        v
    };
    let unconfirmed = {
        let mut v = healthy();
        planned(&mut v, "Failed", "PromotedUnconfirmed", "TargetLost");
        site_state(&mut v, "iad", "read-only");
        v
    };
    let manual = {
        let mut v = healthy();
        planned(&mut v, "Failed", "ManualRecoveryRequired", "ForeignWritable");
        for s in v.sites.iter_mut().filter(|s| s.name == "pdx") {
            s.convergence = "Blocked".to_owned();
            s.convergence_reason = "GTIDDiverged".to_owned();
        }
        v
    };
    let offline = {
        let mut v = healthy();
        v.offline_fence.present = true;
        v.offline_fence.site = "iad".to_owned();
        v.offline_fence.run_id = "restore-1".to_owned();
        v.restore_in_place.present = true;
        v.restore_in_place.phase = "Failed".to_owned();
        v
    };
    vec![
        ("planned-failover-before", healthy()),
        ("planned-failover-during", during),
        ("planned-failover-after", after),
        ("source-left-fenced", fenced),
        ("source-left-fenced", fenced_by_hand),
        ("promoted-unconfirmed", unconfirmed),
        ("manual-recovery-required", manual),
        ("failed-bootstrap-restore", restore_failed("")),
        ("pitr-divergent-history", restore_failed("PITRArchiveDivergentHistory")),
        ("pitr-archive-gap", restore_failed("PITRArchiveGap")),
        ("pitr-backup-after-target", restore_failed("PITRBackupAfterTarget")),
        ("pitr-unsafe-history", restore_failed("PITRArchiveUnsafeHistory")),
        ("release-offline-fence", offline),
    ]
}

fn describe(runbook: &Runbook, view: &GroupView) -> String {
    let walked = walk(runbook, view, now()).unwrap_or_else(|e| panic!("{}: {e}", runbook.id));
    let end = match walked.end {
        WalkEnd::Finished => "finished".to_owned(),
        WalkEnd::Offer(i) => format!("offers {}", runbook.steps[i].id),
        WalkEnd::Waits(i) => format!("waits at {}", runbook.steps[i].id),
    };
    format!("{}: {} -> {end}", runbook.id, walked.path(runbook).join(" > "))
}

#[test]
fn each_runbook_walks_in_a_state_where_it_applies() {
    let all = super::shipped();
    let mut got = Vec::new();
    for (id, view) in states() {
        let ranked = applicable(&all, &view);
        assert!(ranked.errors.is_empty(), "{id}: {:?}", ranked.errors);
        let runbook = ranked
            .runbooks
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("{id} does not apply to its state"));
        got.push(describe(runbook, &view));
    }
    let want = [
        "planned-failover-before: one-primary > target-ready > request -> offers request",
        "planned-failover-during: watch -> waits at watch",
        "planned-failover-after: source-writable > fix-reason > retry -> offers retry",
        "source-left-fenced: other-writer > automatic > wait-heal -> waits at wait-heal",
        "source-left-fenced: other-writer > automatic > manual -> waits at manual",
        "promoted-unconfirmed: read-sites > target-adopted > both-read-only -> waits at both-read-only",
        "manual-recovery-required: hold-cleared > one-writer > followers -> finished",
        "failed-bootstrap-restore: never-served > fix-cause > block-itself -> finished",
        "pitr-divergent-history: read-set > choose -> finished",
        "pitr-archive-gap: where > choose -> finished",
        "pitr-backup-after-target: frontier > choose -> finished",
        "pitr-unsafe-history: marked > choose -> finished",
        "release-offline-fence: terminal > release -> offers release",
    ];
    assert_eq!(got, want);
}

/// Every runbook a static console scenario offers walks without an evaluation error.
#[test]
fn every_runbook_offered_by_a_static_scenario_walks() {
    let all = super::shipped();
    let mut got = Vec::new();
    for scenario in super::scenarios::NAMES {
        for group in super::scenarios::groups(scenario) {
            let view = GroupView::of(&group);
            for runbook in applicable(&all, &view).runbooks {
                got.push(format!("{scenario}/{} {}", view.name, describe(runbook, &view)));
            }
        }
    }
    let want = [
        "healthy/orders planned-failover-before: one-primary > target-ready > request -> offers request",
        "healthy/carts no-primary: candidates > wait-promotion -> waits at wait-promotion",
        "healthy/ledger planned-failover-before: one-primary > target-ready > request -> offers request",
        "hold-standing/orders automation-hold: understand > one-writable -> waits at one-writable",
        "reclone-held/orders held-reclone-queue: understand > choose > keep-primary -> offers keep-primary",
        "planned-failover-waiting/orders planned-failover-during: watch -> waits at watch",
        "archive-gap/orders archive-not-ready: reason > history > recovered -> finished",
        "archive-gap/orders planned-failover-before: one-primary > target-ready > request -> offers request",
        "pitr-divergent/orders pitr-divergent-history: read-set > choose -> finished",
    ];
    assert_eq!(got, want);
}
