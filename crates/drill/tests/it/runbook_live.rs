//! Runbooks walked with their actions against the live lab with the operator (issue #19): the
//! console's walk (`bloodraven runbook run <id> <group> --write --yes --confirm <name>`,
//! `runbook_cli::act`) sends each step's action through the guided-operations flow (prepare,
//! preflight, review, typed confirmation, journal, send) and waits for the step's expectation,
//! which only the operator can make true. Real MySQL 9.7 (`source scripts/provision.sh`).
//!
//! This file holds the shared harness and the Held-queue "keep the primary's data" walk; the
//! planned-failover walks are in `runbook_live_planned.rs`, the automation hold a real planned
//! failover leaves in `runbook_live_hold.rs`, NoPrimary's queue release in
//! `runbook_live_queue.rs`.
//!
//! The Held queue of the walk here is the operator's own: the lab runs the operator's backup
//! and restore Jobs (`LiveOptions::jobs`, the `bloodraven-sidecar` binary: `cargo build -p
//! bloodraven-sidecar`), and an in-place restore of a backup with a damaged chunk fails after
//! its DROP (`LiveLab::hold_queue_by_failed_restore`).

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
use bloodraven_drill::live::{LiveLab, LiveOptions, OperatorLauncher};
use bloodraven_gtid::GtidSet;
use bloodraven_kubelet::SidecarConfig;
use bloodraven_runbook::{GroupView, Runbook, applicable};
use bloodraven_sites::accounts::{OPERATOR, opts};
use mysql_async::prelude::Queryable as _;
use serde_json::{Value, json};

use crate::operator::InProcess;
use crate::runbook_live_planned::start_workload;

/// The three-site lab (`operator-three-sites.yaml`) with the operator `launcher` starts.
pub(crate) async fn start_with(launcher: Arc<dyn OperatorLauncher>) -> LiveLab {
    start_with_options(launcher, LiveOptions::default()).await
}

/// [`start_with`], with the lab's opt-in parts `options`.
async fn start_with_options(launcher: Arc<dyn OperatorLauncher>, options: LiveOptions) -> LiveLab {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let manifest =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("drills/manifests/operator-three-sites.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let group: MysqlFailoverGroup = serde_norway::from_str(&text).unwrap();
    LiveLab::start_with(&group, Some(launcher), options).await.unwrap_or_else(|e| panic!("{e}"))
}

/// `site`'s `gtid_executed`, read on its mysqld.
pub(crate) async fn gtid_executed(live: &LiveLab, site: &str) -> GtidSet {
    let addr = live.mysql_addr(site).unwrap();
    let mut conn = mysql_async::Conn::new(opts(&OPERATOR, addr, None)).await.unwrap();
    let text: Option<String> = conn.query_first("SELECT @@global.gtid_executed").await.unwrap();
    let _ = conn.disconnect().await;
    text.unwrap_or_default().replace('\n', "").parse().unwrap()
}

pub(crate) fn group(live: &LiveLab) -> Value {
    live.group_object().unwrap_or_default()
}

/// Polls the group until `done` holds, or fails saying what it waited for and what it saw.
pub(crate) async fn wait_for(
    live: &LiveLab,
    what: &str,
    timeout: Duration,
    done: impl Fn(&Value) -> bool,
) {
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
    converged_on(object, "iad")
}

/// `site` the active site, the only writable one of three, and the group Ready.
pub(crate) fn converged_on(object: &Value, site: &str) -> bool {
    let status = &object["status"];
    let sites = status["sites"].as_array().cloned().unwrap_or_default();
    status["activeSite"] == site
        && sites.len() == 3
        && sites.iter().filter(|site| site["state"] == "writable").count() == 1
        && status["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
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
async fn walk(
    live: &LiveLab,
    runbook: &Runbook,
    journal: &Path,
    limit: Duration,
) -> (ActReport, String) {
    walk_confirming(live, runbook, live.group_name(), journal, limit).await
}

/// [`walk`], confirming with `token` (the target site of a planned failover).
#[expect(clippy::print_stdout, reason = "the walk is the test's record (--no-capture)")]
pub(crate) async fn walk_confirming(
    live: &LiveLab,
    runbook: &Runbook,
    token: &str,
    journal: &Path,
    limit: Duration,
) -> (ActReport, String) {
    let session = session(live, journal).await;
    let reference = GroupRef::new(live.namespace(), live.group_name());
    let options = ActOptions {
        confirm: Confirm::Token(token.to_owned()),
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

/// The status a failed in-place restore leaves: the reclone queue Held with the peers pending.
pub(crate) async fn plant_held_queue(live: &LiveLab, pending: &[&str]) {
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

/// The Held-queue runbook's "keep the primary's data", walked with its action on a queue the
/// operator held: a backup of the primary, an in-place restore of it whose Job fails after its
/// DROP (a damaged chunk), both peers held with their pre-restore data. The console sets the
/// queue Draining; the walk ends once the operator recloned every peer from the primary with
/// CLONE and removed the queue; the peers then hold the primary's set and replicate; the
/// journal names the runbook's step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_held_queue_runbook_keep_the_primary_ends_with_the_queue_drained() {
    let sidecar = SidecarConfig::locate()
        .expect("the sidecar binary: run `cargo build -p bloodraven-sidecar` first");
    let options = LiveOptions { jobs: Some(sidecar), ..LiveOptions::default() };
    let live = start_with_options(Arc::new(InProcess), options).await;
    wait_for(&live, "the group to converge on iad", Duration::from_secs(150), converged_on_iad)
        .await;
    // Data the backup holds (the failed restore drops it on the primary).
    let writes = start_workload(&live, 1);
    writes.wait_acknowledged(20, Duration::from_secs(60)).await.unwrap();
    writes.stop().await.unwrap();

    let held = live
        .hold_queue_by_failed_restore("nightly-1", Duration::from_secs(240))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut peers = held.queue.pending.clone();
    peers.sort();
    assert_eq!(peers, ["fra", "pdx"], "every peer is held: {:?}", held.queue);
    let mut held_sets = Vec::new();
    for peer in &peers {
        held_sets.push(gtid_executed(&live, peer).await);
    }
    assert_ne!(
        gtid_executed(&live, "iad").await,
        held_sets[0],
        "the failed Job changed the primary (dropped), the held peers kept their data"
    );
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

    // Every peer recloned from the primary: its set is the primary's (not the one it was held
    // with) and its replication resumed.
    let primary = gtid_executed(&live, "iad").await;
    for (peer, held_set) in peers.iter().zip(&held_sets) {
        let started = Instant::now();
        loop {
            let set = gtid_executed(&live, peer).await;
            let object = group(&live);
            let replicating = object["status"]["sites"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["name"] == **peer && s["replicating"] == true));
            if replicating && set == primary {
                assert_ne!(&set, held_set, "{peer} still holds its pre-restore data");
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "waited 120 s for {peer} to hold the primary's {primary} and replicate; it \
                 holds {set}; group status: {}",
                object["status"]
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    live.stop().await;
}
