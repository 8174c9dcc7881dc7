//! [`super::core::decide`], table by table.

use bloodraven_crd::group::MysqlFailoverGroupStatus;
use serde_json::{Value, json};

use super::core::{
    AdminProgress, AdminView, Decision, FAILED, SUCCEEDED, decide, divergent_source,
};

const UID: &str = "6b1d9c4e-1f0a-4a57-9a0c-2a1f5e0b7c11";
/// fra's own server UUID: the source of its errant transaction.
const FRA_UUID: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
const IAD_UUID: &str = "aaaaaaaa-71ca-11e1-9e33-c80aa9429562";

fn request(site: &str) -> String {
    format!("{site}:confirm=orders:uid={UID}")
}

/// iad the writable primary, pdx converged, fra Blocked/GTIDDiverged with one errant GTID.
fn healthy() -> Value {
    json!({
        "activeSite": "iad",
        "sites": [
            {"name": "iad", "state": "writable", "gtidExecuted": format!("{IAD_UUID}:1-100")},
            {"name": "pdx", "state": "read-only", "sourceConvergenceState": "Converged"},
            {"name": "fra", "state": "read-only", "sourceConvergenceState": "Blocked",
             "sourceConvergenceReason": "GTIDDiverged", "divergentGtid": format!("{FRA_UUID}:1"),
             "divergentTransactionCount": 1},
        ],
    })
}

fn with(mut status: Value, key: &str, value: Value) -> Value {
    status[key] = value;
    status
}

fn decide_on(status: &Value, annotation: Option<&str>, progress: AdminProgress) -> Decision {
    decide_full(status, annotation, progress, false)
}

fn decide_full(
    status: &Value,
    annotation: Option<&str>,
    progress: AdminProgress,
    planned_claim: bool,
) -> Decision {
    let status: MysqlFailoverGroupStatus = serde_json::from_value(status.clone()).unwrap();
    let sites = ["iad".to_owned(), "pdx".to_owned(), "fra".to_owned()];
    decide(&AdminView {
        annotation,
        group: "orders",
        uid: UID,
        sites: &sites,
        status: Some(&status),
        planned_failover_in_flight: planned_claim,
        progress,
    })
}

#[track_caller]
fn rejected(decision: &Decision, says: &str) {
    match decision {
        Decision::Reject { note, .. } => assert!(note.contains(says), "{note:?} lacks {says:?}"),
        other => panic!("expected a refusal saying {says:?}, got {other:?}"),
    }
}

#[test]
fn a_valid_request_for_a_diverged_follower_clones_it_from_the_primary() {
    let value = request("fra");
    let decision = decide_on(&healthy(), Some(&value), AdminProgress::NotStarted);
    assert!(
        matches!(&decision, Decision::Start { site, donor, value: v, .. }
            if site == "fra" && donor == "iad" && *v == value),
        "{decision:?}"
    );
    // A healthy follower may be recloned too (a broken replica).
    let pdx = request("pdx");
    assert!(matches!(
        decide_on(&healthy(), Some(&pdx), AdminProgress::NotStarted),
        Decision::Start { .. }
    ));
}

#[test]
fn no_annotation_is_nothing_to_do() {
    assert_eq!(decide_on(&healthy(), None, AdminProgress::NotStarted), Decision::Ignore);
}

#[test]
fn bad_requests_are_rejected_naming_what_is_wrong() {
    let status = healthy();
    let cases = [
        ("fra".to_owned(), "confirm"),
        ("fra:confirm=orders".to_owned(), "uid"),
        ("fra:confirm=orders:uid=x:color=red".to_owned(), "color"),
        (format!("fra:confirm=payments:uid={UID}"), "does not name this group (orders)"),
        ("fra:confirm=orders:uid=0000".to_owned(), "not this group's metadata.uid"),
        (request("sjc"), "sjc is not in spec.sites (iad, pdx, fra)"),
        (request("iad"), "iad is the active primary"),
    ];
    for (value, says) in cases {
        rejected(&decide_on(&status, Some(&value), AdminProgress::NotStarted), says);
    }
}

#[test]
fn a_queued_site_is_refused_while_its_queue_is_armed_or_held_and_accepted_while_draining() {
    for phase in ["Armed", "Held"] {
        let status = with(
            healthy(),
            "restoreReclones",
            json!({"phase": phase, "runID": "r1", "pending": ["fra", "pdx"]}),
        );
        rejected(
            &decide_on(&status, Some(&request("fra")), AdminProgress::NotStarted),
            &format!("queue is {phase}; set status.restoreReclones.phase to Draining"),
        );
        // A site the queue does not hold is not the queue's to refuse.
        let only_pdx =
            with(healthy(), "restoreReclones", json!({"phase": phase, "pending": ["pdx"]}));
        assert!(matches!(
            decide_on(&only_pdx, Some(&request("fra")), AdminProgress::NotStarted),
            Decision::Start { .. }
        ));
    }
    let draining =
        with(healthy(), "restoreReclones", json!({"phase": "Draining", "pending": ["fra"]}));
    assert!(matches!(
        decide_on(&draining, Some(&request("fra")), AdminProgress::NotStarted),
        Decision::Start { .. }
    ));
}

#[test]
fn the_queues_own_request_is_left_to_the_queue() {
    let value = request("fra");
    let status = with(
        healthy(),
        "restoreReclones",
        json!({"phase": "Draining", "pending": ["fra"],
               "current": {"site": "fra", "request": value, "requestTime": "2026-12-01T07:00:00Z"}}),
    );
    assert_eq!(decide_on(&status, Some(&value), AdminProgress::NotStarted), Decision::Ignore);
    assert_eq!(decide_on(&status, Some(&value), AdminProgress::Running), Decision::Ignore);
}

#[test]
fn concurrent_operations_refuse_the_request() {
    let value = request("fra");
    rejected(
        &decide_full(&healthy(), Some(&value), AdminProgress::NotStarted, true),
        "planned failover is in flight",
    );
    let running = with(
        healthy(),
        "plannedFailover",
        json!({"runID": "pf-1", "phase": "Draining", "targetSite": "pdx"}),
    );
    rejected(
        &decide_on(&running, Some(&value), AdminProgress::NotStarted),
        "planned failover is in flight",
    );
    // A run that ended is no obstacle.
    let ended = with(
        healthy(),
        "plannedFailover",
        json!({"runID": "pf-1", "phase": "Succeeded", "result": {"outcome": "Succeeded"}}),
    );
    assert!(matches!(
        decide_on(&ended, Some(&value), AdminProgress::NotStarted),
        Decision::Start { .. }
    ));
    let held = with(
        healthy(),
        "plannedFailoverHold",
        json!({"runID": "pf-2", "reason": "AuthorityChanged"}),
    );
    rejected(
        &decide_on(&held, Some(&value), AdminProgress::NotStarted),
        "automation hold of planned failover pf-2",
    );
    let restoring =
        with(healthy(), "restoreInPlace", json!({"runID": "ri-1", "phase": "Restoring"}));
    rejected(
        &decide_on(&restoring, Some(&value), AdminProgress::NotStarted),
        "in-place restore ri-1",
    );
    let restored =
        with(healthy(), "restoreInPlace", json!({"runID": "ri-1", "phase": "Succeeded"}));
    assert!(matches!(
        decide_on(&restored, Some(&value), AdminProgress::NotStarted),
        Decision::Start { .. }
    ));
}

#[test]
fn no_writable_primary_means_nothing_to_clone_from() {
    let value = request("fra");
    let none = with(healthy(), "activeSite", Value::Null);
    rejected(&decide_on(&none, Some(&value), AdminProgress::NotStarted), "no active primary");
    let mut down = healthy();
    down["sites"][0]["state"] = json!("unreachable");
    rejected(
        &decide_on(&down, Some(&value), AdminProgress::NotStarted),
        "the active primary iad is not writable",
    );
}

#[test]
fn gtid_prefix_must_name_a_source_of_the_recorded_divergence() {
    let ok = format!("{}:gtidPrefix={FRA_UUID}", request("fra"));
    assert!(matches!(
        decide_on(&healthy(), Some(&ok), AdminProgress::NotStarted),
        Decision::Start { note, .. } if note.contains(&format!("divergent transactions of {FRA_UUID} are discarded"))
    ));
    // Either case.
    let upper = format!("{}:gtidPrefix={}", request("fra"), FRA_UUID.to_uppercase());
    assert!(matches!(
        decide_on(&healthy(), Some(&upper), AdminProgress::NotStarted),
        Decision::Start { .. }
    ));
    let other = format!("{}:gtidPrefix={IAD_UUID}", request("fra"));
    rejected(
        &decide_on(&healthy(), Some(&other), AdminProgress::NotStarted),
        &format!(
            "not a source of fra's recorded divergent transactions ({FRA_UUID}:1); name one of {FRA_UUID}"
        ),
    );
    let none_recorded = format!("{}:gtidPrefix={FRA_UUID}", request("pdx"));
    rejected(
        &decide_on(&healthy(), Some(&none_recorded), AdminProgress::NotStarted),
        "pdx has none recorded",
    );
    let not_uuid = format!("{}:gtidPrefix=3e11fa47", request("fra"));
    rejected(&decide_on(&healthy(), Some(&not_uuid), AdminProgress::NotStarted), "gtidPrefix");
}

#[test]
fn a_started_clone_is_waited_for_then_finished_whatever_changed_since() {
    let value = request("fra");
    assert!(matches!(
        decide_on(&healthy(), Some(&value), AdminProgress::Running),
        Decision::Wait { .. }
    ));
    // Even with a planned failover now in flight, the clone that ran is reported.
    assert!(matches!(
        decide_full(&healthy(), Some(&value), AdminProgress::Succeeded, true),
        Decision::Finish { reason, warning: false, value: v, .. } if reason == SUCCEEDED && v == value
    ));
    let failed = AdminProgress::Failed { message: "connecting to donor failed".into() };
    assert!(matches!(
        decide_on(&healthy(), Some(&value), failed),
        Decision::Finish { reason, warning: true, note, .. }
            if reason == FAILED && note.contains("connecting to donor failed")
    ));
}

#[test]
fn the_queue_writes_the_divergent_source_as_gtid_prefix() {
    let status: MysqlFailoverGroupStatus = serde_json::from_value(healthy()).unwrap();
    assert_eq!(divergent_source(&status, "fra").as_deref(), Some(FRA_UUID));
    assert_eq!(divergent_source(&status, "pdx"), None);
    assert_eq!(divergent_source(&status, "nope"), None);
}
