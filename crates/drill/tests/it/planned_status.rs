//! Planned-failover drills (issue 13) where the lab API server refuses the run's status writes
//! mid-run (an RBAC 403 on `/status`, as the planned-failover document's "Status stalls and the
//! terminal marker" names it), on real MySQL 9.7 under a running workload, the operator
//! in-process with the document's timings divided by 10.
//!
//! In both drills the run waits in WaitingForLag with iad fenced (pdx's applier delayed), the
//! lab starts refusing every status patch of the group, and pdx's delay is removed: the next
//! record (the promotion intent) cannot be written, so the promotion must not be sent — pdx
//! stays `super_read_only` and keeps replicating from iad while the fault stands, although the
//! applier keeps trying (the lab logs its refused writes).
//!
//! - `..._resumes_once_the_api_answers`: the fault lifts within the 2-minute (scaled: 12 s)
//!   stall window; the run resumes from its durable record and Succeeds with RPO 0.
//! - `..._ends_with_the_terminal_marker`: the fault stands past the stall window; the run ends
//!   outside `/status` with the marker `SourceLeftFenced{StatusStalled}` (the
//!   `PlannedFailoverStatusStalled` Event), never promotes pdx; once the API answers, the
//!   terminal record is written from the marker, the marker deleted, and the fenced source
//!   re-asserted: iad writable again with RPO 0.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::{
    PLANNED_FAILOVER, PLANNED_FAILOVER_STALL_SINCE, PLANNED_FAILOVER_TERMINAL,
};
use bloodraven_drill::live::LiveLab;
use bloodraven_lab::Fault;
use bloodraven_sites::accounts::{self, APPLICATION, OPERATOR};
use bloodraven_sites::workload::{self, Workload, WorkloadConfig};
use mysql_async::prelude::Queryable as _;
use serde_json::Value;

use crate::planned::Scaled;
use crate::sidecar::wait_for;

/// Generous: CI shares 2 cores with other real servers.
pub(crate) const WAIT: Duration = Duration::from_secs(90);
/// The group's first settling: real mysqld starts, slow while other drills run.
pub(crate) const START: Duration = Duration::from_secs(240);
/// The whole drill, lab start included.
pub(crate) const DRILL: Duration = Duration::from_secs(540);
/// How long the fault stands in the drill that resumes: well inside the scaled 12 s stall
/// window, long enough for several refused attempts (1 s polls, prompt retries).
const SHORT_FAULT: Duration = Duration::from_secs(5);

pub(crate) fn group() -> MysqlFailoverGroup {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("drills/manifests/operator-three-sites.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_norway::from_str(&text).unwrap()
}

/// A string at a JSON pointer of the group, if any.
pub(crate) fn text(group: &Value, pointer: &str) -> Option<String> {
    group.pointer(pointer).and_then(Value::as_str).map(str::to_owned)
}

/// `site`'s `(read_only, super_read_only)`, read directly as the operator account.
pub(crate) async fn flags(live: &LiveLab, site: &str) -> (bool, bool) {
    let mut conn = connect(live, site).await;
    let row: (i64, i64) = conn
        .query_first("SELECT @@global.read_only, @@global.super_read_only")
        .await
        .unwrap()
        .unwrap();
    let _ = conn.disconnect().await;
    (row.0 == 1, row.1 == 1)
}

pub(crate) async fn connect(live: &LiveLab, site: &str) -> mysql_async::Conn {
    let addr = live.mysql_addr(site).unwrap();
    mysql_async::Conn::new(accounts::opts(&OPERATOR, addr, None)).await.unwrap()
}

/// `SOURCE_DELAY = seconds` on `site`'s channel, the applier stopped and started around it.
pub(crate) async fn delay_applier(live: &LiveLab, site: &str, seconds: u32) {
    let mut conn = connect(live, site).await;
    conn.query_drop("STOP REPLICA SQL_THREAD").await.unwrap();
    conn.query_drop(format!("CHANGE REPLICATION SOURCE TO SOURCE_DELAY = {seconds}"))
        .await
        .unwrap();
    conn.query_drop("START REPLICA SQL_THREAD").await.unwrap();
    let _ = conn.disconnect().await;
}

/// `site` still has its replication channel with both threads running (no STOP REPLICA or
/// RESET REPLICA ALL was sent).
pub(crate) async fn replicating(live: &LiveLab, site: &str) -> bool {
    let mut conn = connect(live, site).await;
    let row: Option<mysql_async::Row> = conn.query_first("SHOW REPLICA STATUS").await.unwrap();
    let _ = conn.disconnect().await;
    let Some(row) = row else { return false };
    let io: Option<String> = row.get("Replica_IO_Running");
    let sql: Option<String> = row.get("Replica_SQL_Running");
    io.as_deref() == Some("Yes") && sql.as_deref() == Some("Yes")
}

pub(crate) async fn annotate(live: &LiveLab, key: &str, value: &str) {
    use kube::api::{Api, Patch, PatchParams};
    let api: Api<MysqlFailoverGroup> = Api::namespaced(live.client().clone(), live.namespace());
    let patch = serde_json::json!({"metadata": {"annotations": {key: value}}});
    api.patch(live.group_name(), &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
}

pub(crate) fn has_event(live: &LiveLab, reason: &str) -> bool {
    live.group_events().iter().any(|event| event["reason"] == reason)
}

/// Waits for the group's Event `reason`: the operator records an Event after the status
/// write it reports, so a test that saw the status may not see the Event yet.
pub(crate) async fn wait_event(live: &LiveLab, reason: &str) {
    wait_for(&format!("the {reason} Event on the group"), WAIT, async || {
        has_event(live, reason).then_some(())
    })
    .await;
}

/// The status patches of the group the lab refused with 403 so far.
fn refused_status_writes(live: &LiveLab) -> usize {
    live.lab()
        .requests()
        .iter()
        .filter(|r| {
            r.verb == "patch"
                && r.subresource.as_deref() == Some("status")
                && r.name.as_deref() == Some(live.group_name())
                && r.status == 403
        })
        .count()
}

/// `site` is the active site and the only writable one, Ready.
pub(crate) fn settled_on(group: &Value, site: &str) -> bool {
    let ready = group["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
    let sites = group["status"]["sites"].as_array().cloned().unwrap_or_default();
    ready
        && text(group, "/status/activeSite").as_deref() == Some(site)
        && sites.len() == 3
        && sites.iter().all(|s| {
            let writable = s["state"] == "writable";
            if s["name"] == site { writable } else { !writable }
        })
}

/// The lab, the group settled on iad and a workload writing through the `-primary` Service;
/// then the request, the run waiting in WaitingForLag, the status fault injected and pdx's
/// delay removed. Returns the workload.
async fn run_into_the_fault(live: &LiveLab) -> Workload {
    wait_for("the group settled on iad", START, async || {
        settled_on(&live.group_object()?, "iad").then_some(())
    })
    .await;
    let mut config = WorkloadConfig::new(live.primary_addr().unwrap());
    config.rate_per_sec = 40;
    config.first_key = 1000;
    let writes = Workload::start(config);
    writes.wait_acknowledged(40, WAIT).await.expect("40 acknowledged writes before the request");

    delay_applier(live, "pdx", 60).await;
    annotate(live, PLANNED_FAILOVER, "pdx:maxLagWait=5m").await;
    wait_for("the run waiting in WaitingForLag", WAIT, async || {
        let group = live.group_object()?;
        (text(&group, "/status/plannedFailover/phase").as_deref() == Some("WaitingForLag"))
            .then_some(())
    })
    .await;
    assert_eq!(flags(live, "iad").await, (true, true), "the source is fenced");

    live.lab().inject(
        Fault::fail(403)
            .verb("patch")
            .resource("mysqlfailovergroups")
            .subresource("status")
            .name(live.group_name())
            .times(usize::MAX)
            .message("injected fault: status writes of this group are forbidden"),
    );
    delay_applier(live, "pdx", 0).await;
    // pdx applies the fenced set: the next record is the promotion intent, which is refused.
    wait_for("pdx caught up with the fenced source", WAIT, async || {
        let fenced = live_gtids(live, "iad").await?;
        let executed = live_gtids(live, "pdx").await?;
        (fenced == executed).then_some(())
    })
    .await;
    wait_for("the lab refusing the run's status writes", WAIT, async || {
        (refused_status_writes(live) >= 2).then_some(())
    })
    .await;
    writes
}

pub(crate) async fn live_gtids(live: &LiveLab, site: &str) -> Option<String> {
    let mut conn = connect(live, site).await;
    let set: Option<String> = conn.query_first("SELECT @@global.gtid_executed").await.ok()?;
    let _ = conn.disconnect().await;
    set.map(|s| s.replace('\n', ""))
}

/// While the fault stands, for `hold`: no record beyond WaitingForLag reaches the API server
/// and the promotion is never sent — pdx read-only and still replicating, iad fenced.
async fn promotion_never_sent(live: &LiveLab, hold: Duration) {
    let started = Instant::now();
    while started.elapsed() < hold {
        let group = live.group_object().unwrap();
        assert_eq!(
            text(&group, "/status/plannedFailover/phase").as_deref(),
            Some("WaitingForLag"),
            "no status write commits while the lab refuses them"
        );
        assert_eq!(flags(live, "pdx").await, (true, true), "pdx promoted without its record");
        assert!(replicating(live, "pdx").await, "STOP REPLICA sent to pdx without its record");
        assert_eq!(flags(live, "iad").await, (true, true), "iad unfenced without its record");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Writes resume on `site` (sessions left on a read-only server reset, as a pool drops it),
/// then the ledger: every acknowledged write is on `site`.
#[expect(clippy::print_stdout, reason = "the drill's numbers are its record (--no-capture)")]
pub(crate) async fn rpo_zero_on(live: &LiveLab, writes: Workload, site: &str) {
    let link = live.drill_link("app:primary").unwrap();
    let before = writes.acknowledged();
    let started = Instant::now();
    loop {
        link.reset();
        if writes.wait_acknowledged(before + 20, Duration::from_secs(10)).await.is_ok() {
            break;
        }
        assert!(
            started.elapsed() < WAIT,
            "writes did not resume on {site} within {WAIT:?} (acknowledged {}, failed {})",
            writes.acknowledged(),
            writes.failed()
        );
    }
    let ledger = writes.stop().await.expect("the ledger");
    let report =
        workload::verify_at(&ledger, live.mysql_addr(site).unwrap(), &APPLICATION).await.unwrap();
    println!(
        "ledger on {site}: {} attempts, {} acknowledged, lost {}, failures {:?}",
        report.attempts,
        report.acknowledged,
        report.lost.len(),
        report.failures
    );
    assert!(report.phantom.is_empty(), "phantom rows on {site}: {:?}", report.phantom);
    assert!(report.rpo_zero(), "RPO 0 on {site}, yet lost {:?}", report.lost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_with_status_writes_refused_resumes_once_the_api_answers() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    tokio::time::timeout(DRILL, async {
        let live = LiveLab::start(&group(), Some(Arc::new(Scaled))).await.unwrap();
        let writes = run_into_the_fault(&live).await;
        promotion_never_sent(&live, SHORT_FAULT).await;
        let stalled = live.group_object().unwrap();
        assert!(
            text(
                &stalled,
                &format!("/metadata/annotations/{}", pointer(PLANNED_FAILOVER_STALL_SINCE))
            )
            .is_some(),
            "the first refused write records planned-failover-stall-since"
        );
        assert!(!has_event(&live, "PlannedFailoverStatusStalled"), "not stalled for 2 minutes yet");

        live.lab().clear_faults();
        wait_for("the run to Succeed once the API answers", WAIT, async || {
            let group = live.group_object()?;
            (text(&group, "/status/plannedFailover/phase").as_deref() == Some("Succeeded"))
                .then_some(())
        })
        .await;
        let group = live.group_object().unwrap();
        assert_eq!(text(&group, "/status/activeSite").as_deref(), Some("pdx"));
        assert_eq!(text(&group, "/status/lastFailover/target").as_deref(), Some("pdx"));
        wait_event(&live, "PlannedFailoverSucceeded").await;
        assert!(!has_event(&live, "PlannedFailoverStatusStalled"));
        wait_for(
            "planned-failover-stall-since removed once a status write committed",
            WAIT,
            async || {
                let group = live.group_object()?;
                group["metadata"]["annotations"][PLANNED_FAILOVER_STALL_SINCE]
                    .is_null()
                    .then_some(())
            },
        )
        .await;
        wait_for("the group settled on pdx", WAIT, async || {
            settled_on(&live.group_object()?, "pdx").then_some(())
        })
        .await;
        rpo_zero_on(&live, writes, "pdx").await;
        live.stop().await;
    })
    .await
    .unwrap_or_else(|_| panic!("the drill did not finish within {DRILL:?}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_with_status_writes_refused_past_the_stall_window_ends_with_the_terminal_marker()
 {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    tokio::time::timeout(DRILL, async {
        let live = LiveLab::start(&group(), Some(Arc::new(Scaled))).await.unwrap();
        let writes = run_into_the_fault(&live).await;
        // Until the marker appears (12 s scaled from the stall-since time), the promotion is
        // never sent; poll both together.
        let marker = wait_for("the terminal marker", WAIT, async || {
            assert_eq!(flags(&live, "pdx").await, (true, true), "pdx promoted without its record");
            let group = live.group_object()?;
            let raw = group["metadata"]["annotations"][PLANNED_FAILOVER_TERMINAL].as_str()?;
            Some(serde_json::from_str::<Value>(raw).unwrap())
        })
        .await;
        assert_eq!(marker["outcome"], "SourceLeftFenced", "{marker}");
        assert_eq!(marker["reason"], "StatusStalled", "{marker}");
        assert!(
            marker["warnings"].as_array().is_some_and(|w| w.iter().any(|w| w == "StatusStalled")),
            "{marker}"
        );
        wait_event(&live, "PlannedFailoverStatusStalled").await;
        assert!(replicating(&live, "pdx").await, "pdx never lost its channel");
        assert_eq!(
            text(&live.group_object().unwrap(), "/status/plannedFailover/phase").as_deref(),
            Some("WaitingForLag"),
            "the marker ends the run outside /status"
        );

        live.lab().clear_faults();
        wait_for("the terminal record written from the marker", WAIT, async || {
            let group = live.group_object()?;
            let block = &group["status"]["plannedFailover"];
            (block["phase"] == "Failed"
                && block["result"]["outcome"] == "SourceLeftFenced"
                && block["result"]["reason"] == "StatusStalled")
                .then_some(())
        })
        .await;
        wait_for("the non-hold marker deleted once its record landed", WAIT, async || {
            let group = live.group_object()?;
            group["metadata"]["annotations"][PLANNED_FAILOVER_TERMINAL].is_null().then_some(())
        })
        .await;
        assert_eq!(flags(&live, "pdx").await, (true, true), "pdx never promoted");
        // The source was named for the re-assert: the topology manager makes it writable.
        wait_for("iad re-asserted and the group settled on it", WAIT, async || {
            settled_on(&live.group_object()?, "iad").then_some(())
        })
        .await;
        rpo_zero_on(&live, writes, "iad").await;
        live.stop().await;
    })
    .await
    .unwrap_or_else(|_| panic!("the drill did not finish within {DRILL:?}"));
}

/// An annotation key as a JSON-pointer segment (`/` escaped).
pub(crate) fn pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
