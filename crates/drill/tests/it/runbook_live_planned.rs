//! The planned-failover runbooks walked with their `plannedFailover` action on the live lab with
//! the operator (issue #19), under a running workload with its ledger: "before" moves the
//! primary iad → pdx; in another lab a real run to pdx rolls back for LagTimeout (pdx's applier
//! delayed behind a `maxLagWait` it cannot meet, as `drills/planned-failover-rollback.yaml`
//! does), the delay is lifted, and "after" re-requests it, which moves the primary to pdx. Each action goes
//! through the console's guarded path (prepare, preflight, the typed confirmation — the target
//! site — journal, send); only the operator can make each step's expectation true. Every
//! acknowledged write is on the site that ends writable (RPO 0). The operator runs in-process
//! with the planned-failover document's timings divided by [`SCALE`] (a 5-minute cooldown is
//! 30 s). Each test is its own lab, under nextest's 5-minute bound. Real MySQL 9.7 (`source scripts/provision.sh`).

use std::sync::Arc;
use std::time::Duration;

use bloodraven_console::journal::Journal;
use bloodraven_console::runbook_cli::act::{ActEnd, SentAction};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::PLANNED_FAILOVER;
use bloodraven_drill::live::{
    LEASE_DURATION, LEASE_NAME, LiveError, LiveLab, OperatorEnv, OperatorLauncher, RunningOperator,
};
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::lease::{self, LeaseConfig};
use bloodraven_operator::manager::Tuning;
use bloodraven_operator::planned::Timings;
use bloodraven_runbook::{GroupView, Runbook, applicable};
use bloodraven_sites::accounts::{APPLICATION, OPERATOR, opts};
use bloodraven_sites::workload::{Workload, WorkloadConfig, verify_at};
use mysql_async::prelude::Queryable as _;
use serde_json::{Value, json};

use crate::runbook_live::{converged_on, group, start_with, wait_for, walk_confirming};

/// The divisor of every planned-failover timing (and the group's cooldown) in these tests.
const SCALE: u32 = 10;

/// The operator's `main` in-process with scaled planned-failover timings: take the Lease,
/// then run the controller while holding it.
pub(crate) struct ScaledOperator;

struct Task(tokio::task::JoinHandle<()>);

impl RunningOperator for Task {
    fn describe(&self) -> String {
        "in-process task (planned-failover timings scaled)".into()
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl OperatorLauncher for ScaledOperator {
    fn launch(&self, env: &OperatorEnv) -> Result<Box<dyn RunningOperator>, LiveError> {
        let env = env.clone();
        let task = tokio::spawn(async move {
            let config = LeaseConfig {
                namespace: env.namespace.clone(),
                name: LEASE_NAME.to_owned(),
                identity: env.name.clone(),
                duration: LEASE_DURATION,
            };
            if let Err(e) = lease::acquire(&env.client, &config).await {
                tracing::error!(operator = %env.name, error = %e, "acquiring the Lease");
                return;
            }
            let tuning = Tuning { planned: Timings::scaled(SCALE), ..Tuning::default() };
            let context = Arc::new(Context::new(
                env.client.clone(),
                Arc::new(env.resolver.clone()),
                tuning,
                &env.name,
            ));
            tokio::select! {
                () = lease::hold(&env.client, &config) => {
                    tracing::warn!(operator = %env.name, "Lease lost; stopping");
                }
                () = controller::run(context, Some(&env.namespace)) => {}
            }
        });
        Ok(Box::new(Task(task)))
    }

    fn describe(&self) -> String {
        "the operator's controller in-process, planned-failover timings / 10".into()
    }
}

/// Runs `statements` on `site` as the operator account.
pub(crate) async fn execute(live: &LiveLab, site: &str, statements: &[&str]) {
    let addr = live.mysql_addr(site).unwrap();
    let mut conn = mysql_async::Conn::new(opts(&OPERATOR, addr, None))
        .await
        .unwrap_or_else(|e| panic!("connecting to {site} at {addr}: {e}"));
    for sql in statements {
        conn.query_drop(*sql).await.unwrap_or_else(|e| panic!("{sql} on {site}: {e}"));
    }
    let _ = conn.disconnect().await;
}

/// `SOURCE_DELAY` on `site`'s channel (the applier stopped, the delay set, started again).
async fn delay_applier(live: &LiveLab, site: &str, seconds: u32) {
    let change = format!("CHANGE REPLICATION SOURCE TO SOURCE_DELAY = {seconds}");
    execute(live, site, &["STOP REPLICA SQL_THREAD", &change, "START REPLICA SQL_THREAD"]).await;
}

/// A workload writing through the `-primary` Service from key `first_key`.
pub(crate) fn start_workload(live: &LiveLab, first_key: u64) -> Workload {
    let mut config = WorkloadConfig::new(live.primary_addr().unwrap());
    config.rate_per_sec = 40;
    config.first_key = first_key;
    Workload::start(config)
}

/// Writes resume on the new primary (sessions the fence or drain killed re-dial through the
/// `-primary` Service once its link is reset, as a pool drops a read-only server); then the
/// workload stops and every acknowledged write must be on `site`.
pub(crate) async fn rpo_zero_on(live: &LiveLab, writes: Workload, site: &str) {
    let link = live.drill_link("app:primary").unwrap();
    let before = writes.acknowledged();
    let started = std::time::Instant::now();
    loop {
        link.reset();
        if writes.wait_acknowledged(before + 20, Duration::from_secs(10)).await.is_ok() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "writes did not resume on {site} within 120 s (acknowledged {}, failed {})",
            writes.acknowledged(),
            writes.failed()
        );
    }
    let ledger = writes.stop().await.unwrap();
    let report = verify_at(&ledger, live.mysql_addr(site).unwrap(), &APPLICATION).await.unwrap();
    assert!(
        report.rpo_zero(),
        "acknowledged writes missing on {site}: {:?} (of {} acknowledged)",
        report.lost_keys(),
        report.acknowledged
    );
}

fn ranked_ids(live: &LiveLab) -> Vec<String> {
    let runbooks = bloodraven_runbook::shipped().unwrap();
    let decoded: MysqlFailoverGroup = serde_json::from_value(group(live)).unwrap();
    applicable(&runbooks, &GroupView::of(&decoded)).runbooks.iter().map(|r| r.id.clone()).collect()
}

fn runbook(id: &str) -> Runbook {
    bloodraven_runbook::shipped().unwrap().into_iter().find(|r| r.id == id).unwrap()
}

/// The planned-failover block's end as `Succeeded` or `<outcome>/<reason>`.
fn planned_end(object: &Value) -> String {
    let block = &object["status"]["plannedFailover"];
    match block["phase"].as_str() {
        Some("Succeeded") => "Succeeded".to_owned(),
        Some("Failed") => format!(
            "{}/{}",
            block["result"]["outcome"].as_str().unwrap_or("?"),
            block["result"]["reason"].as_str().unwrap_or("-")
        ),
        other => format!("running ({other:?})"),
    }
}

fn replicating_caught_up(object: &Value, site: &str) -> bool {
    object["status"]["sites"].as_array().is_some_and(|sites| {
        sites.iter().any(|s| {
            s["name"] == site
                && s["replicating"] == true
                && s["secondsBehindSource"].as_i64() == Some(0)
                && s["sourceConvergenceState"] != "Blocked"
        })
    })
}

/// The lab converged on iad with a workload writing through the `-primary` Service.
async fn converged_with_writes(live: &LiveLab) -> Workload {
    wait_for(live, "the group to converge on iad", Duration::from_secs(150), |o| {
        converged_on(o, "iad")
    })
    .await;
    let writes = start_workload(live, 1000);
    writes.wait_acknowledged(40, Duration::from_secs(60)).await.unwrap();
    writes
}

/// The journal's records name `runbook` and `step` as their origin: one before/after pair.
fn journaled_from(journal: &std::path::Path, runbook: &str, step: &str) {
    let records = Journal::read_all(journal).unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    for record in &records {
        assert_eq!(record["origin"], json!({"runbook": runbook, "step": step}), "{record}");
        assert_eq!(record["operation"]["op"], "requestPlannedFailover", "{record}");
    }
    assert_eq!(records[1]["result"], "sent", "{:?}", records[1]);
}

/// "before", walked with its action on the converged group: the walk requests pdx (the
/// caught-up candidate) and the operator moves the primary there with RPO 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_before_runbook_walked_with_its_action_moves_the_primary_with_rpo_zero() {
    let live = start_with(Arc::new(ScaledOperator)).await;
    let writes = converged_with_writes(&live).await;
    assert!(ranked_ids(&live).iter().any(|id| id == "planned-failover-before"), "offered");
    let journal = tempfile::tempdir().unwrap();
    let before = runbook("planned-failover-before");
    let (report, text) =
        walk_confirming(&live, &before, "pdx", journal.path(), Duration::from_secs(180)).await;
    assert_eq!(report.end, ActEnd::Finished, "{text}");
    assert_eq!(report.path, ["one-primary", "target-ready", "request"], "{text}");
    assert!(
        matches!(report.sent.as_slice(), [SentAction { step, operation, .. }]
            if step == "request" && operation == "request-planned-failover"),
        "{report:?}"
    );
    assert_eq!(planned_end(&group(&live)), "Succeeded", "{text}");
    wait_for(&live, "the group to converge on pdx", Duration::from_secs(90), |o| {
        converged_on(o, "pdx")
    })
    .await;
    rpo_zero_on(&live, writes, "pdx").await;
    journaled_from(journal.path(), "planned-failover-before", "request");
    live.stop().await;
}

/// "after", walked with its action once a real run rolled back: pdx's applier runs 5 s behind
/// a 10 s maxLagWait (1 s scaled), the run to pdx ends RolledBack/LagTimeout with iad writable;
/// the delay is lifted (the reason fixed) and the walk re-requests pdx, which the operator
/// then promotes with RPO 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_after_runbook_walked_with_its_action_retries_a_rolled_back_run_with_rpo_zero() {
    let live = start_with(Arc::new(ScaledOperator)).await;
    let writes = converged_with_writes(&live).await;
    delay_applier(&live, "pdx", 5).await;
    let groups: kube::Api<MysqlFailoverGroup> =
        kube::Api::namespaced(live.client().clone(), live.namespace());
    let patch = json!({"metadata": {"annotations": {PLANNED_FAILOVER: "pdx:maxLagWait=10s"}}});
    groups
        .patch(
            live.group_name(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(patch),
        )
        .await
        .unwrap();
    wait_for(&live, "the run to pdx to roll back (LagTimeout)", Duration::from_secs(90), |o| {
        o["status"]["plannedFailover"]["targetSite"] == "pdx"
            && planned_end(o) == "RolledBack/LagTimeout"
    })
    .await;
    // The reason fixed: the delay lifted, pdx caught up with iad.
    delay_applier(&live, "pdx", 0).await;
    wait_for(&live, "pdx to replicate caught up with iad", Duration::from_secs(90), |o| {
        converged_on(o, "iad") && replicating_caught_up(o, "pdx")
    })
    .await;
    assert!(ranked_ids(&live).iter().any(|id| id == "planned-failover-after"), "offered");

    let journal = tempfile::tempdir().unwrap();
    let after = runbook("planned-failover-after");
    let (report, text) =
        walk_confirming(&live, &after, "pdx", journal.path(), Duration::from_secs(180)).await;
    assert_eq!(report.end, ActEnd::Finished, "{text}");
    assert_eq!(report.path, ["source-writable", "fix-reason", "retry"], "{text}");
    assert!(
        matches!(report.sent.as_slice(), [SentAction { step, operation, .. }]
            if step == "retry" && operation == "request-planned-failover"),
        "{report:?}"
    );
    wait_for(&live, "the group to converge on pdx", Duration::from_secs(90), |o| {
        converged_on(o, "pdx")
    })
    .await;
    rpo_zero_on(&live, writes, "pdx").await;
    journaled_from(journal.path(), "planned-failover-after", "retry");
    live.stop().await;
}
