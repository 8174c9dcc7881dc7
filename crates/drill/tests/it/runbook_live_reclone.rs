//! An administrator's reclone request on the live lab with the operator (issue #19): fra takes
//! an errant write, so the primary does not contain its set and the operator leaves it
//! Blocked/GTIDDiverged. Then
//!
//! - the `reclone-site` annotation written by hand: a request naming another group is refused
//!   (RecloneRejected, the annotation removed), the valid one (with the `gtidPrefix` of fra's
//!   own errant source) reclones fra from iad with CLONE; fra restarts, repoints and replicates,
//!   holds none of its errant transactions and no more than the primary has;
//! - the `diverged-follower` runbook walked with `--write`: its `recloneSite` action goes
//!   through the console's guarded path, the walk waits until fra converged, and the doctor no
//!   longer reports it.
//!
//! Real MySQL 9.7 (`source scripts/provision.sh`).

use std::sync::Arc;
use std::time::Duration;

use bloodraven_console::cli::{DoctorArgs, DoctorFormat};
use bloodraven_console::doctor;
use bloodraven_console::journal::Journal;
use bloodraven_console::runbook_cli::act::{ActEnd, SentAction};
use bloodraven_console::status::Scope;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_drill::live::LiveLab;
use bloodraven_gtid::GtidSet;
use bloodraven_sites::accounts::{OPERATOR, opts};
use mysql_async::prelude::Queryable as _;
use serde_json::{Value, json};

use crate::operator::InProcess;
use crate::runbook_live::{converged_on, group, start_with, wait_for, walk_confirming};

const ANNOTATION: &str = "bloodraven.shipstream.io/reclone-site";

async fn query(live: &LiveLab, site: &str, statement: &str) -> String {
    let addr = live.mysql_addr(site).unwrap();
    let mut conn = mysql_async::Conn::new(opts(&OPERATOR, addr, None)).await.unwrap();
    let text: Option<String> = conn.query_first(statement).await.unwrap();
    let _ = conn.disconnect().await;
    text.unwrap_or_default()
}

async fn gtid_executed(live: &LiveLab, site: &str) -> GtidSet {
    query(live, site, "SELECT @@global.gtid_executed").await.replace('\n', "").parse().unwrap()
}

/// One row written on `site` with `super_read_only` lifted for that moment (the operator
/// account holds CONNECTION_ADMIN, so `read_only` does not stop it): an errant transaction.
/// Returns its GTIDs.
async fn errant_write(live: &LiveLab, site: &str) -> GtidSet {
    let before = gtid_executed(live, site).await;
    let addr = live.mysql_addr(site).unwrap();
    let mut conn = mysql_async::Conn::new(opts(&OPERATOR, addr, None)).await.unwrap();
    conn.query_drop(
        "SET GLOBAL super_read_only = OFF; \
         INSERT INTO app.ledger (k, writer, written_at_us) VALUES (900000, 'errant', 0); \
         SET GLOBAL super_read_only = ON",
    )
    .await
    .unwrap();
    let _ = conn.disconnect().await;
    gtid_executed(live, site).await.difference(&before)
}

fn site<'a>(object: &'a Value, name: &str) -> &'a Value {
    object["status"]["sites"]
        .as_array()
        .and_then(|sites| sites.iter().find(|s| s["name"] == name))
        .unwrap_or(&Value::Null)
}

fn diverged(object: &Value, name: &str) -> bool {
    let s = site(object, name);
    s["sourceConvergenceState"] == "Blocked"
        && s["sourceConvergenceReason"] == "GTIDDiverged"
        && s["divergentGtid"].is_string()
}

fn converged_and_replicating(object: &Value, name: &str) -> bool {
    let s = site(object, name);
    s["sourceConvergenceState"] == "Converged" && s["replicating"] == true
}

fn annotation(object: &Value) -> Option<String> {
    object["metadata"]["annotations"][ANNOTATION].as_str().map(str::to_owned)
}

async fn annotate(live: &LiveLab, value: &str) {
    let groups: kube::Api<MysqlFailoverGroup> =
        kube::Api::namespaced(live.client().clone(), live.namespace());
    let body = json!({ "metadata": { "annotations": { ANNOTATION: value } } });
    groups
        .patch(
            live.group_name(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(body),
        )
        .await
        .unwrap();
}

fn event_notes(live: &LiveLab, reason: &str) -> Vec<String> {
    live.group_events()
        .iter()
        .filter(|e| e["reason"] == reason)
        .map(|e| e["note"].as_str().or(e["message"].as_str()).unwrap_or("").to_owned())
        .collect()
}

async fn wait_for_event(live: &LiveLab, reason: &str, timeout: Duration) -> Vec<String> {
    let started = std::time::Instant::now();
    loop {
        let notes = event_notes(live, reason);
        if !notes.is_empty() {
            return notes;
        }
        assert!(
            started.elapsed() < timeout,
            "waited {} s for a {reason} Event; the group's Events: {:?}",
            timeout.as_secs(),
            live.group_events().iter().map(|e| e["reason"].clone()).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The lab converged on iad, then fra diverged by an errant write. Returns the lab and the
/// errant GTIDs.
async fn diverged_lab() -> (LiveLab, GtidSet) {
    let live = start_with(Arc::new(InProcess)).await;
    wait_for(&live, "the group to converge on iad", Duration::from_secs(150), |o| {
        converged_on(o, "iad")
    })
    .await;
    let errant = errant_write(&live, "fra").await;
    assert!(!errant.is_empty(), "the errant write made no GTID on fra");
    wait_for(&live, "fra Blocked/GTIDDiverged", Duration::from_secs(60), |o| diverged(o, "fra"))
        .await;
    (live, errant)
}

/// fra recloned: it converged on iad and replicates, holds none of its errant transactions
/// and no transaction iad lacks.
async fn assert_recloned(live: &LiveLab, errant: &GtidSet) {
    wait_for(live, "fra to converge on iad and replicate", Duration::from_secs(300), |o| {
        converged_and_replicating(o, "fra") && annotation(o).is_none()
    })
    .await;
    let on_fra = gtid_executed(live, "fra").await;
    let on_iad = gtid_executed(live, "iad").await;
    assert!(on_fra.is_subset(&on_iad), "fra holds {on_fra}, beyond the primary's {on_iad}");
    assert!(on_fra.intersection(errant).is_empty(), "fra kept its errant {errant}: {on_fra}");
}

/// The annotation written by hand: a request for another group is refused and removed; the
/// valid one, with fra's errant source as `gtidPrefix`, reclones fra.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_administrators_reclone_request_reclones_a_diverged_follower() {
    let (live, errant) = diverged_lab().await;
    let object = group(&live);
    let uid = object["metadata"]["uid"].as_str().unwrap().to_owned();
    let name = live.group_name().to_owned();

    annotate(&live, &format!("fra:confirm=payments:uid={uid}")).await;
    let notes = wait_for_event(&live, "RecloneRejected", Duration::from_secs(60)).await;
    assert!(notes.iter().any(|n| n.contains("does not name this group")), "{notes:?}");
    wait_for(&live, "the refused annotation removed", Duration::from_secs(30), |o| {
        annotation(o).is_none()
    })
    .await;
    assert!(diverged(&group(&live), "fra"), "a refused request changed nothing");

    let source = query(&live, "fra", "SELECT @@server_uuid").await;
    assert!(
        errant.uuids().any(|uuid| uuid.to_string() == source),
        "fra's errant write is its own ({source}): {errant}"
    );
    let started = std::time::Instant::now();
    annotate(&live, &format!("fra:confirm={name}:uid={uid}:gtidPrefix={source}")).await;
    let notes = wait_for_event(&live, "RecloneRequested", Duration::from_secs(60)).await;
    assert!(notes.iter().any(|n| n.contains("reclone of fra from the primary iad")), "{notes:?}");
    assert_recloned(&live, &errant).await;
    let notes = wait_for_event(&live, "RecloneSucceeded", Duration::from_secs(30)).await;
    assert!(notes.iter().any(|n| n.contains("fra was recloned")), "{notes:?}");
    tracing::warn!(elapsed = ?started.elapsed(), "annotation to fra converged");
    live.stop().await;
}

/// The diverged-follower runbook walked with its action: the console sends the reclone, the
/// walk waits until fra converged, and the doctor no longer reports it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_diverged_follower_runbook_reclones_the_follower_and_the_doctor_clears() {
    let (live, errant) = diverged_lab().await;
    let runbooks = bloodraven_runbook::shipped().unwrap();
    let runbook = runbooks.iter().find(|r| r.id == "diverged-follower").unwrap();
    let findings = doctor_findings(&live).await;
    assert!(
        findings.iter().any(|f| f["kind"] == "SiteDiverged" && f["site"] == "fra"),
        "the doctor reports fra before: {findings:?}"
    );

    let journal = tempfile::tempdir().unwrap();
    let (report, text) = walk_confirming(
        &live,
        runbook,
        live.group_name(),
        journal.path(),
        Duration::from_secs(400),
    )
    .await;
    assert_eq!(report.end, ActEnd::Finished, "{text}");
    assert_eq!(report.path, ["understand", "inspect", "reclone"], "{text}");
    assert!(
        matches!(report.sent.as_slice(), [SentAction { step, operation, .. }]
            if step == "reclone" && operation == "reclone"),
        "{report:?}"
    );
    // The walk ended only once fra converged and replicates.
    let object = group(&live);
    assert!(converged_and_replicating(&object, "fra"), "{}", object["status"]);
    assert_recloned(&live, &errant).await;
    let records = Journal::read_all(journal.path()).unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    for record in &records {
        assert_eq!(record["origin"], json!({"runbook": "diverged-follower", "step": "reclone"}));
    }
    let findings = doctor_findings(&live).await;
    assert!(
        !findings.iter().any(|f| f["kind"] == "SiteDiverged"),
        "the doctor still reports a diverged site: {findings:?}"
    );
    live.stop().await;
}

/// The console's `doctor <group> -o json` findings.
async fn doctor_findings(live: &LiveLab) -> Vec<Value> {
    let args = DoctorArgs {
        group: Some(live.group_name().to_owned()),
        output: DoctorFormat::Json,
        fail_on: None,
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    doctor::run(
        live.client().clone(),
        &Scope::Namespace(live.namespace().to_owned()),
        &args,
        jiff::Timestamp::now(),
        &mut out,
        &mut err,
    )
    .await
    .unwrap();
    let json: Value = serde_json::from_slice(&out).unwrap();
    let mut findings = Vec::new();
    collect_findings(&json, &mut findings);
    findings
}

/// Every object with a `kind` field anywhere in the doctor's JSON.
fn collect_findings(value: &Value, found: &mut Vec<Value>) {
    match value {
        Value::Object(map) => {
            if map.contains_key("kind") && map.contains_key("runbook") {
                found.push(value.clone());
            }
            map.values().for_each(|v| collect_findings(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_findings(v, found)),
        _ => {}
    }
}
