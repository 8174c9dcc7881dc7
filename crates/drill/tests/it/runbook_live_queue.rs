//! The NoPrimary runbook's `recloneQueueRelease`, walked with its action on the live lab with
//! the operator (issue #19): the reclone queue is Held with both peers, the primary iad is
//! partitioned away (its operator and application links refuse), so only queued sites remain
//! and the operator alerts NoPrimary and promotes nothing. The walk accepts the stale copy by
//! releasing the queue through the console's guarded path; the operator then promotes pdx.
//! The ledger shows what the runbook's data-loss sentence states, no more: the writes lost are
//! exactly acknowledged writes only iad held (committed after pdx's receiver stopped).
//!
//! The Held queue is written into the status as a failed in-place restore leaves it. The
//! operator makes a real one in `runbook_live.rs`'s walk
//! (`LiveLab::hold_queue_by_failed_restore`), but its failed Job drops the primary's schemas,
//! ledger included, and this test accounts for the stale copy's loss against the primary's
//! writes. Everything after the queue is the
//! operator's: the receivers it stops, the NoPrimary alert, the promotion. Real MySQL 9.7
//! (`source scripts/provision.sh`).

use std::sync::Arc;
use std::time::Duration;

use bloodraven_console::journal::Journal;
use bloodraven_console::runbook_cli::act::{ActEnd, SentAction};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_runbook::{GroupView, applicable};
use bloodraven_sites::accounts::APPLICATION;
use bloodraven_sites::proxy::Fault;
use bloodraven_sites::workload::verify_at;
use serde_json::{Value, json};

use crate::operator::InProcess;
use crate::runbook_live::{
    converged_on, group, gtid_executed, plant_held_queue, start_with, wait_for, walk_confirming,
};
use crate::runbook_live_planned::start_workload;

/// `site` in the Held queue with its receiver stopped.
fn held_back(object: &Value, site: &str) -> bool {
    object["status"]["restoreReclones"]["phase"] == "Held"
        && object["status"]["sites"].as_array().is_some_and(|sites| {
            sites.iter().any(|s| s["name"] == site && s["replicating"] == false)
        })
}

fn offers(object: &Value, id: &str) -> bool {
    let Ok(decoded) = serde_json::from_value::<MysqlFailoverGroup>(object.clone()) else {
        return false;
    };
    let runbooks = bloodraven_runbook::shipped().unwrap();
    applicable(&runbooks, &GroupView::of(&decoded)).runbooks.iter().any(|r| r.id == id)
}

/// NoPrimary with only queued candidates: the runbook releases the queue, the operator
/// promotes pdx, and the writes lost are only those iad alone held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_no_primary_runbook_releases_the_queue_and_the_operator_promotes_the_stale_copy() {
    let live = start_with(Arc::new(InProcess)).await;
    wait_for(&live, "the group to converge on iad", Duration::from_secs(150), |o| {
        converged_on(o, "iad")
    })
    .await;
    let writes = start_workload(&live, 1000);
    writes.wait_acknowledged(40, Duration::from_secs(60)).await.unwrap();

    plant_held_queue(&live, &["pdx", "fra"]).await;
    wait_for(&live, "pdx and fra held back (receivers stopped)", Duration::from_secs(60), |o| {
        held_back(o, "pdx") && held_back(o, "fra")
    })
    .await;
    let held_pdx = gtid_executed(&live, "pdx").await;
    // Writes only iad holds from here on.
    let acknowledged = writes.acknowledged();
    writes.wait_acknowledged(acknowledged + 20, Duration::from_secs(60)).await.unwrap();
    let ledger = writes.stop().await.unwrap();
    let on_iad = gtid_executed(&live, "iad").await;

    // The primary partitioned away from the operator and the application.
    for link in ["operator:iad", "app:iad", "app:primary"] {
        live.drill_link(link).unwrap().set(Fault::Refuse).unwrap();
    }
    wait_for(&live, "the NoPrimary runbook to apply", Duration::from_secs(90), |o| {
        offers(o, "no-primary")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = group(&live);
    assert_eq!(before["status"]["activeSite"], "iad", "nothing promoted: {}", before["status"]);
    assert_eq!(before["status"]["restoreReclones"]["phase"], "Held", "{}", before["status"]);

    let runbooks = bloodraven_runbook::shipped().unwrap();
    let runbook = runbooks.iter().find(|r| r.id == "no-primary").unwrap();
    let journal = tempfile::tempdir().unwrap();
    let (report, text) = walk_confirming(
        &live,
        runbook,
        live.group_name(),
        journal.path(),
        Duration::from_secs(240),
    )
    .await;
    assert_eq!(report.end, ActEnd::Finished, "{text}");
    assert_eq!(report.path, ["candidates", "queued-only", "release-queue"], "{text}");
    // The confirmation states the loss of this choice with the primary down (the stale copy),
    // not that of releasing a hold behind a live primary.
    assert!(text.contains("data loss: Accept the stale copy"), "{text}");
    assert!(
        matches!(report.sent.as_slice(), [SentAction { step, operation, .. }]
            if step == "release-queue" && operation == "reclone-queue-release"),
        "{report:?}"
    );
    wait_for(&live, "pdx promoted", Duration::from_secs(120), |o| {
        o["status"]["activeSite"] == "pdx"
            && o["status"]["restoreReclones"].is_null()
            && o["status"]["sites"].as_array().is_some_and(|sites| {
                sites.iter().any(|s| s["name"] == "pdx" && s["state"] == "writable")
            })
    })
    .await;

    // The stale copy: every acknowledged write pdx had when it was held is there; the lost
    // ones are acknowledged writes only iad held.
    let report = verify_at(&ledger, live.mysql_addr("pdx").unwrap(), &APPLICATION).await.unwrap();
    let lost = report.lost_gtids();
    assert!(!lost.is_empty(), "writes after the hold reached only iad: {report:?}");
    let only_iad = on_iad.difference(&held_pdx);
    assert!(lost.is_subset(&only_iad), "lost {lost}, but only {only_iad} was iad's alone");

    let records = Journal::read_all(journal.path()).unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    for record in &records {
        assert_eq!(record["origin"], json!({"runbook": "no-primary", "step": "release-queue"}));
    }
    live.stop().await;
}
