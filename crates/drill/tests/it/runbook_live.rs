//! Runbooks walked with their actions against the live lab with the operator (issue #19): the
//! console's walk (`bloodraven runbook run <id> <group> --write --yes --confirm <group>`,
//! `runbook_cli::act`) sends each step's action through the guided-operations flow (prepare,
//! preflight, review, typed confirmation, journal, send) and waits for the step's expectation,
//! which only the operator can make true. Real MySQL 9.7 (`source scripts/provision.sh`).
//!
//! The automation hold is planted in the status as a ManualRecoveryRequired run leaves it
//! (`status.plannedFailoverHold` and a True `AutomaticFailoverHeld` condition): no real fault
//! makes that outcome yet (no drill ends ManualRecoveryRequired). Everything after the plant
//! is the real flow: the runbook applies, its checks read the live group, the acknowledgement
//! is the console's annotation, and the operator clears the hold.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_console::client::{WriteSwitch, connect_guarded};
use bloodraven_console::journal::Journal;
use bloodraven_console::ops::GroupRef;
use bloodraven_console::ops::send::Session;
use bloodraven_console::runbook_cli::act::{
    ActEnd, ActOptions, ActReport, Confirm, SentAction, walk_with_actions,
};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_drill::live::LiveLab;
use bloodraven_runbook::{GroupView, Runbook, applicable};
use serde_json::{Value, json};

use crate::operator::InProcess;

/// The hold's run.
const RUN_ID: &str = "pf-runbook-live-1";

async fn start() -> LiveLab {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let manifest =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("drills/manifests/operator-three-sites.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let group: MysqlFailoverGroup = serde_norway::from_str(&text).unwrap();
    LiveLab::start(&group, Some(Arc::new(InProcess))).await.unwrap_or_else(|e| panic!("{e}"))
}

fn group(live: &LiveLab) -> Value {
    live.group_object().unwrap_or_default()
}

/// Polls the group until `done` holds, or fails saying what it waited for and what it saw.
async fn wait_for(live: &LiveLab, what: &str, timeout: Duration, done: impl Fn(&Value) -> bool) {
    let started = Instant::now();
    loop {
        let object = group(live);
        if done(&object) {
            return;
        }
        assert!(
            started.elapsed() < timeout,
            "waited {} s for {what}; group status: {}",
            timeout.as_secs(),
            object["status"]
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn converged_on_iad(object: &Value) -> bool {
    let status = &object["status"];
    let sites = status["sites"].as_array().cloned().unwrap_or_default();
    status["activeSite"] == "iad"
        && sites.len() == 3
        && sites.iter().filter(|site| site["state"] == "writable").count() == 1
        && status["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn held(object: &Value) -> bool {
    object["status"]["plannedFailoverHold"]["runID"] == RUN_ID
}

fn hold_cleared(object: &Value) -> bool {
    let status = &object["status"];
    status["plannedFailoverHold"].is_null()
        && !status["conditions"].as_array().is_some_and(|conditions| {
            conditions.iter().any(|c| c["type"] == "AutomaticFailoverHeld" && c["status"] == "True")
        })
}

/// The status a ManualRecoveryRequired run leaves: the hold record and the True condition.
fn plant_hold(live: &LiveLab) {
    let mut object = group(live);
    let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    object["status"]["plannedFailoverHold"] = json!({
        "runID": RUN_ID,
        "reason": "ExecuteFailed",
        "sourceSite": "iad",
        "targetSite": "pdx",
        "ambiguousSites": ["iad", "pdx"],
        "holdTime": now,
    });
    let conditions = object["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let mut conditions: Vec<Value> =
        conditions.into_iter().filter(|c| c["type"] != "AutomaticFailoverHeld").collect();
    conditions.push(json!({
        "type": "AutomaticFailoverHeld",
        "status": "True",
        "reason": "PlannedFailoverManualRecoveryRequired",
        "message": format!("planned failover run {RUN_ID} ended ManualRecoveryRequired (planted by the test)"),
        "lastTransitionTime": now,
    }));
    object["status"]["conditions"] = Value::Array(conditions);
    live.lab().apply(object).unwrap();
}

async fn session(live: &LiveLab, journal: &Path) -> Session {
    let switch = WriteSwitch::read_only();
    switch.set(true);
    let (client, connection) =
        connect_guarded(Some(&live.kubeconfig()), None, switch.clone()).await.unwrap();
    Session {
        client,
        context: connection.context,
        switch,
        journal: Arc::new(Journal::open(journal).unwrap()),
    }
}

/// Walks `runbook` with its actions on the live lab, confirming with the group's name and
/// journaling to `journal`; fails when the walk errs or does not end within `limit`. Returns
/// the report and the walk's text.
#[expect(clippy::print_stdout, reason = "the walk is the test's record (--no-capture)")]
async fn walk(
    live: &LiveLab,
    runbook: &Runbook,
    journal: &Path,
    limit: Duration,
) -> (ActReport, String) {
    let session = session(live, journal).await;
    let reference = GroupRef::new(live.namespace(), live.group_name());
    let options = ActOptions {
        confirm: Confirm::Token(live.group_name().to_owned()),
        poll: Duration::from_millis(500),
        settle: Duration::from_secs(30),
    };
    let mut out = Vec::new();
    let walked = tokio::time::timeout(
        limit,
        walk_with_actions(runbook, &session, &reference, &options, &mut out),
    )
    .await;
    let text = String::from_utf8_lossy(&out).into_owned();
    println!("{text}");
    let report = walked
        .unwrap_or_else(|_| panic!("the walk did not end within {} s:\n{text}", limit.as_secs()))
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    (report, text)
}

/// The hold runbook, walked with its action on the live lab, ends with the hold cleared by the
/// operator; the journal records the acknowledgement with the runbook and step as origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hold_runbook_walked_with_its_action_ends_with_the_hold_cleared() {
    let live = start().await;
    wait_for(&live, "the group to converge on iad", Duration::from_secs(150), converged_on_iad)
        .await;
    plant_hold(&live);
    // The operator keeps a hold it did not write (it only clears one by acknowledgement).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(held(&group(&live)), "the planted hold was dropped: {}", group(&live)["status"]);

    let runbooks = bloodraven_runbook::shipped().unwrap();
    let decoded: MysqlFailoverGroup = serde_json::from_value(group(&live)).unwrap();
    let ranked = applicable(&runbooks, &GroupView::of(&decoded));
    assert_eq!(
        ranked.runbooks.first().map(|r| r.id.as_str()),
        Some("automation-hold"),
        "the hold runbook is offered first"
    );
    let runbook = runbooks.iter().find(|r| r.id == "automation-hold").unwrap();

    let journal = tempfile::tempdir().unwrap();
    let (report, text) = walk(&live, runbook, journal.path(), Duration::from_secs(180)).await;
    assert_eq!(report.end, ActEnd::Finished, "{text}");
    assert_eq!(report.path, ["understand", "one-writable", "acknowledge"], "{text}");
    assert!(
        matches!(report.sent.as_slice(), [SentAction { step, operation, .. }]
            if step == "acknowledge" && operation == "acknowledge-hold"),
        "{report:?}"
    );
    let after = group(&live);
    assert!(hold_cleared(&after), "the hold still stands: {}", after["status"]);
    assert!(
        !after["metadata"]["annotations"].as_object().is_some_and(
            |a| a.contains_key("bloodraven.shipstream.io/acknowledge-planned-failover-hold")
        ),
        "the operator consumed the acknowledgement annotation: {}",
        after["metadata"]
    );
    // The journal: one before/after pair, from the runbook's acknowledge step.
    let records = Journal::read_all(journal.path()).unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    for record in &records {
        assert_eq!(record["origin"], json!({"runbook": "automation-hold", "step": "acknowledge"}));
        assert_eq!(record["operation"]["op"], "acknowledgeHold", "{record}");
        assert_eq!(
            record["operation"]["run_id"].as_str().or(record["operation"]["runId"].as_str()),
            Some(RUN_ID),
            "{record}"
        );
    }
    assert_eq!(records[1]["result"], "sent", "{:?}", records[1]);
    live.stop().await;
}

/// The status a failed in-place restore leaves: the reclone queue Held with the peers pending.
async fn plant_held_queue(live: &LiveLab, pending: &[&str]) {
    let groups: kube::Api<MysqlFailoverGroup> =
        kube::Api::namespaced(live.client().clone(), live.namespace());
    let body = json!({ "status": { "restoreReclones": {
        "phase": "Held", "runID": "restore-runbook-live-1", "pending": pending,
    } } });
    groups
        .patch_status(
            live.group_name(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(body),
        )
        .await
        .unwrap();
}

/// The Held-queue runbook's "keep the primary's data", walked with its action on the live lab:
/// the console sets the queue Draining, the operator reclones the held site from the primary
/// with CLONE and the queue drains; the journal names the runbook's step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_held_queue_runbook_keep_the_primary_ends_with_the_queue_drained() {
    let live = start().await;
    wait_for(&live, "the group to converge on iad", Duration::from_secs(150), converged_on_iad)
        .await;
    plant_held_queue(&live, &["fra"]).await;
    wait_for(&live, "the planted Held queue", Duration::from_secs(30), |object| {
        object["status"]["restoreReclones"]["phase"] == "Held"
    })
    .await;
    let runbooks = bloodraven_runbook::shipped().unwrap();
    let decoded: MysqlFailoverGroup = serde_json::from_value(group(&live)).unwrap();
    let ranked = applicable(&runbooks, &GroupView::of(&decoded));
    assert!(
        ranked.runbooks.iter().any(|r| r.id == "held-reclone-queue"),
        "the Held-queue runbook applies: {:?}",
        ranked.runbooks.iter().map(|r| &r.id).collect::<Vec<_>>()
    );
    let runbook = runbooks.iter().find(|r| r.id == "held-reclone-queue").unwrap();

    let journal = tempfile::tempdir().unwrap();
    let (report, text) = walk(&live, runbook, journal.path(), Duration::from_secs(300)).await;
    assert_eq!(report.end, ActEnd::Finished, "{text}");
    assert_eq!(report.path, ["understand", "choose", "keep-primary"], "{text}");
    assert!(
        matches!(report.sent.as_slice(), [SentAction { step, operation, .. }]
            if step == "keep-primary" && operation == "reclone-queue-drain"),
        "{report:?}"
    );
    let after = group(&live);
    assert!(after["status"]["restoreReclones"].is_null(), "not drained: {}", after["status"]);
    let records = Journal::read_all(journal.path()).unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    for record in &records {
        assert_eq!(
            record["origin"],
            json!({"runbook": "held-reclone-queue", "step": "keep-primary"})
        );
    }
    live.stop().await;
}
