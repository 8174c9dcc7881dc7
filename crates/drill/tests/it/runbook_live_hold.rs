//! The automation-hold runbook walked with its action on a hold the operator produced
//! (issue #19): a real planned failover iad → pdx ends ManualRecoveryRequired. The in-process
//! operator is killed at the crash point `operator.planned.after-promote` (pdx was sent
//! `super_read_only=OFF`, nothing confirmed it yet); while no operator runs, a human makes the
//! DisasterRecovery site fra writable; the restarted operator finds the run after a possible
//! write with a foreign writable site and ends it ManualRecoveryRequired/ForeignWritable,
//! holding automation. The split brain is resolved as the runbook says (fra fenced again, by
//! hand or by the operator's fence of a writable DisasterRecovery site; pdx the one writable
//! site), then the walk acknowledges the hold through the
//! console's guarded path and the operator clears it. A workload runs throughout; every
//! acknowledged write is on the site that ends writable (RPO 0). Real MySQL 9.7
//! (`source scripts/provision.sh`); the crash point needs the test-only `crash-points` feature
//! (a dev-dependency of this crate).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_console::journal::Journal;
use bloodraven_console::runbook_cli::act::{ActEnd, SentAction};
use bloodraven_crashpoint::{CrashAt, Step};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::{ACKNOWLEDGE_PLANNED_FAILOVER_HOLD, PLANNED_FAILOVER};
use bloodraven_drill::DEFAULT_OPERATOR;
use bloodraven_runbook::{GroupView, applicable};
use serde_json::{Value, json};

use crate::runbook_live::{converged_on, group, start_with, wait_for, walk_confirming};
use crate::runbook_live_planned::{ScaledOperator, execute, rpo_zero_on, start_workload};

fn writable(object: &Value) -> Vec<String> {
    object["status"]["sites"]
        .as_array()
        .map(|sites| {
            sites
                .iter()
                .filter(|s| s["state"] == "writable")
                .filter_map(|s| s["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn hold_run(object: &Value) -> Option<String> {
    object["status"]["plannedFailoverHold"]["runID"].as_str().map(str::to_owned)
}

/// A real run ends ManualRecoveryRequired; the hold runbook, walked with its action, ends with
/// the hold cleared by the operator; the journal names the runbook and step; RPO 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hold_runbook_clears_a_hold_a_real_planned_failover_left() {
    let mut live = start_with(Arc::new(ScaledOperator)).await;
    wait_for(&live, "the group to converge on iad", Duration::from_secs(150), |o| {
        converged_on(o, "iad")
    })
    .await;
    let writes = start_workload(&live, 1000);
    writes.wait_acknowledged(40, Duration::from_secs(60)).await.unwrap();

    // The operator dies right after promoting pdx.
    let scope = format!("{}/{}", live.namespace(), live.group_name());
    bloodraven_crashpoint::arm(&scope, CrashAt { step: Step::OperatorPlannedAfterPromote, nth: 1 });
    let groups: kube::Api<MysqlFailoverGroup> =
        kube::Api::namespaced(live.client().clone(), live.namespace());
    let patch = json!({"metadata": {"annotations": {PLANNED_FAILOVER: "pdx"}}});
    groups
        .patch(
            live.group_name(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(patch),
        )
        .await
        .unwrap();
    let started = Instant::now();
    while bloodraven_crashpoint::fired(&scope).is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the crash point after-promote did not fire within 90 s: {}",
            group(&live)["status"]["plannedFailover"]
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    live.kill_operator(DEFAULT_OPERATOR).unwrap();
    bloodraven_crashpoint::disarm(&scope);

    // A foreign writer while no operator runs, then a fresh operator with empty memory.
    execute(&live, "fra", &["SET GLOBAL super_read_only = OFF", "SET GLOBAL read_only = OFF"])
        .await;
    live.start_operator("after-crash").unwrap();
    wait_for(
        &live,
        "the run to end ManualRecoveryRequired with a hold",
        Duration::from_secs(120),
        |o| {
            o["status"]["plannedFailover"]["result"]["outcome"] == "ManualRecoveryRequired"
                && hold_run(o).is_some()
        },
    )
    .await;
    let held = group(&live);
    let run_id = hold_run(&held).unwrap();
    assert_eq!(
        held["status"]["plannedFailover"]["result"]["reason"], "ForeignWritable",
        "{}",
        held["status"]
    );
    let runbooks = bloodraven_runbook::shipped().unwrap();
    let decoded: MysqlFailoverGroup = serde_json::from_value(group(&live)).unwrap();
    let ranked = applicable(&runbooks, &GroupView::of(&decoded));
    assert_eq!(
        ranked.runbooks.first().map(|r| r.id.as_str()),
        Some("automation-hold"),
        "the hold runbook is offered first"
    );
    let runbook = runbooks.iter().find(|r| r.id == "automation-hold").unwrap();

    // The split brain resolved as the runbook's step says: pdx holds the fenced set (every
    // acknowledged write), fra none of its own, so fra is fenced (the hold defers failover, not
    // the fence of a writable DisasterRecovery site, which the operator may already have sent).
    execute(&live, "fra", &["SET GLOBAL super_read_only = ON"]).await;
    wait_for(&live, "pdx the only writable site", Duration::from_secs(60), |o| {
        writable(o) == ["pdx"]
    })
    .await;

    let journal = tempfile::tempdir().unwrap();
    let (report, text) = walk_confirming(
        &live,
        runbook,
        live.group_name(),
        journal.path(),
        Duration::from_secs(180),
    )
    .await;
    assert_eq!(report.end, ActEnd::Finished, "{text}");
    assert_eq!(report.path, ["understand", "one-writable", "acknowledge"], "{text}");
    assert!(
        matches!(report.sent.as_slice(), [SentAction { step, operation, .. }]
            if step == "acknowledge" && operation == "acknowledge-hold"),
        "{report:?}"
    );
    let after = group(&live);
    assert!(after["status"]["plannedFailoverHold"].is_null(), "{}", after["status"]);
    assert!(
        !after["metadata"]["annotations"]
            .as_object()
            .is_some_and(|a| a.contains_key(ACKNOWLEDGE_PLANNED_FAILOVER_HOLD)),
        "the operator consumed the acknowledgement annotation: {}",
        after["metadata"]
    );
    let records = Journal::read_all(journal.path()).unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    for record in &records {
        assert_eq!(record["origin"], json!({"runbook": "automation-hold", "step": "acknowledge"}));
        assert_eq!(
            record["operation"]["run_id"].as_str().or(record["operation"]["runId"].as_str()),
            Some(run_id.as_str()),
            "{record}"
        );
    }

    // Automation resumed: the group converges on one writable active site, which holds every
    // acknowledged write.
    wait_for(&live, "the group to converge after the hold", Duration::from_secs(120), |o| {
        let active = o["status"]["activeSite"].as_str().unwrap_or_default();
        !active.is_empty() && converged_on(o, active)
    })
    .await;
    let active = group(&live)["status"]["activeSite"].as_str().unwrap_or_default().to_owned();
    rpo_zero_on(&live, writes, &active).await;
    live.stop().await;
}
