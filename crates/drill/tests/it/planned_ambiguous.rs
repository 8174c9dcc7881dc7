//! Planned-failover drills (issue 13) with AMBIGUOUS status writes: the lab API server
//! applies the run's durable record (its resourceVersion moves) but the operator never gets a
//! clean answer — a 500 after the apply, or the connection held past the operator's write
//! bound and then dropped. On real MySQL 9.7 under a running workload, the operator in-process
//! with the document's timings divided by 10.
//!
//! The operator must settle each write before anything else (re-read uncached, compare the
//! record, bump the status fence if nothing moved), run the effect the record announced once
//! it proved the record committed (never skip it, never repeat it), and the run still ends
//! Succeeded with RPO 0 (the ledger) and never two writable sites (sampled throughout).
//!
//! - `..._fencing_5xx_promoting_timeout`: the first Fencing write fails unapplied (a plain
//!   500: settlement fences the object, the status-fence annotation appears, the grant is
//!   decided again), the second is applied then answered 500; the promotion intent is
//!   applied and its answer held for 120 s (far past the 0.5 s scaled write bound, and past
//!   the drill's 90 s wait, so an operator that waited for the answer fails the drill).
//! - `..._fencing_timeout_promoting_5xx`: the other way round.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bloodraven_crd::annotations::{PLANNED_FAILOVER, PLANNED_FAILOVER_STATUS_FENCE};
use bloodraven_drill::live::LiveLab;
use bloodraven_lab::Fault;
use bloodraven_sites::accounts::{self, OPERATOR};
use bloodraven_sites::workload::{Workload, WorkloadConfig};
use mysql_async::prelude::Queryable as _;

use crate::planned::Scaled;
use crate::planned_status::{
    DRILL, START, WAIT, annotate, group, rpo_zero_on, settled_on, text, wait_event,
};
use crate::sidecar::wait_for;

/// How long an answer held by `Fault::drop_after_serving` stays held: past the drill's wait.
const HELD: Duration = Duration::from_secs(120);

/// Samples every site's flags until stopped; records every sample with two writable sites.
pub(crate) struct WritableWatch {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<String>>>,
    samples: Arc<Mutex<u64>>,
    task: tokio::task::JoinHandle<()>,
}

impl WritableWatch {
    pub(crate) fn start(live: &LiveLab) -> WritableWatch {
        let sites: Vec<(String, SocketAddr)> = live
            .sites()
            .iter()
            .map(|site| (site.clone(), live.mysql_addr(site).unwrap()))
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let samples = Arc::new(Mutex::new(0_u64));
        let task = tokio::spawn({
            let (stop, seen, samples) = (stop.clone(), seen.clone(), samples.clone());
            async move {
                while !stop.load(Ordering::Relaxed) {
                    let mut writable = Vec::new();
                    for (site, addr) in &sites {
                        if is_writable(*addr).await == Some(true) {
                            writable.push(site.clone());
                        }
                    }
                    if writable.len() > 1 {
                        seen.lock()
                            .unwrap()
                            .push(format!("{:?}: {writable:?}", jiff::Timestamp::now()));
                    }
                    *samples.lock().unwrap() += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        });
        WritableWatch { stop, seen, samples, task }
    }

    /// Stops sampling; panics if two sites were ever writable at once.
    #[expect(clippy::print_stdout, reason = "the drill's numbers are its record (--no-capture)")]
    pub(crate) async fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(30), self.task).await;
        let samples = *self.samples.lock().unwrap();
        println!("writable-site samples: {samples}");
        assert!(samples > 10, "too few writable-site samples ({samples}) to mean anything");
        let seen = self.seen.lock().unwrap();
        assert!(seen.is_empty(), "two writable sites at once: {seen:?}");
    }
}

/// Whether the server at `addr` is writable (`None`: it did not answer within 2 s).
async fn is_writable(addr: SocketAddr) -> Option<bool> {
    let read = async {
        let mut conn = mysql_async::Conn::new(accounts::opts(&OPERATOR, addr, None)).await.ok()?;
        let row: Option<(i64, i64)> =
            conn.query_first("SELECT @@global.read_only, @@global.super_read_only").await.ok()?;
        let _ = conn.disconnect().await;
        row.map(|(read_only, super_read_only)| read_only == 0 && super_read_only == 0)
    };
    tokio::time::timeout(Duration::from_secs(2), read).await.ok().flatten()
}

/// How the lab answers one of the run's status writes.
#[derive(Clone, Copy, Debug)]
enum Ambiguity {
    /// Applied, then answered 500.
    AppliedThen5xx,
    /// Applied, the answer held for [`HELD`] (the operator's bound passes), then dropped.
    AppliedThenTimeout,
}

/// The fault for the first status write of the group whose record carries `phase`.
fn fault(live: &LiveLab, phase: &str, how: Ambiguity) -> Fault {
    let fault = match how {
        Ambiguity::AppliedThen5xx => Fault::fail_after_serving(500),
        Ambiguity::AppliedThenTimeout => Fault::drop_after_serving(HELD),
    };
    fault
        .verb("patch")
        .resource("mysqlfailovergroups")
        .subresource("status")
        .name(live.group_name())
        .body_contains(&format!("\"phase\":\"{phase}\""))
}

/// The status patches of the group the lab answered `status` (0: dropped unanswered).
fn status_writes_answered(live: &LiveLab, status: u16) -> usize {
    live.lab()
        .requests()
        .iter()
        .filter(|r| {
            r.verb == "patch"
                && r.subresource.as_deref() == Some("status")
                && r.name.as_deref() == Some(live.group_name())
                && r.status == status
        })
        .count()
}

/// The drill: settled on iad, a workload, the faults armed, the request; the run must
/// Succeed on pdx with RPO 0 and never two writable sites.
#[expect(clippy::print_stdout, reason = "the drill's numbers are its record (--no-capture)")]
async fn drill(fencing: Ambiguity, promoting: Ambiguity, unapplied_first: bool) {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    tokio::time::timeout(DRILL, async {
        let live = LiveLab::start(&group(), Some(Arc::new(Scaled))).await.unwrap();
        wait_for("the group settled on iad", START, async || {
            settled_on(&live.group_object()?, "iad").then_some(())
        })
        .await;
        let watch = WritableWatch::start(&live);
        let mut config = WorkloadConfig::new(live.primary_addr().unwrap());
        config.rate_per_sec = 40;
        config.first_key = 1000;
        let writes = Workload::start(config);
        writes
            .wait_acknowledged(40, WAIT)
            .await
            .expect("40 acknowledged writes before the request");

        if unapplied_first {
            // A plain 500, not applied: the object does not move until the status fence does.
            live.lab().inject(
                Fault::fail(500)
                    .verb("patch")
                    .resource("mysqlfailovergroups")
                    .subresource("status")
                    .name(live.group_name())
                    .body_contains("\"phase\":\"Fencing\""),
            );
        }
        live.lab().inject(fault(&live, "Fencing", fencing));
        live.lab().inject(fault(&live, "Promoting", promoting));
        annotate(&live, PLANNED_FAILOVER, "pdx").await;

        wait_for("the run to Succeed", WAIT, async || {
            let group = live.group_object()?;
            let phase = text(&group, "/status/plannedFailover/phase");
            assert_ne!(phase.as_deref(), Some("Failed"), "{}", group["status"]["plannedFailover"]);
            (phase.as_deref() == Some("Succeeded")).then_some(())
        })
        .await;
        let group = live.group_object().unwrap();
        assert_eq!(text(&group, "/status/activeSite").as_deref(), Some("pdx"));
        assert_eq!(text(&group, "/status/lastFailover/target").as_deref(), Some("pdx"));
        wait_event(&live, "PlannedFailoverSucceeded").await;
        let expected_500 = [fencing, promoting]
            .iter()
            .filter(|how| matches!(how, Ambiguity::AppliedThen5xx))
            .count()
            + usize::from(unapplied_first);
        let expected_dropped = 2 + usize::from(unapplied_first) - expected_500;
        assert_eq!(status_writes_answered(&live, 500), expected_500, "every armed 500 was reached");
        assert_eq!(
            status_writes_answered(&live, 0),
            expected_dropped,
            "every armed timeout was reached"
        );
        let fence = text(
            &group,
            &format!(
                "/metadata/annotations/{}",
                crate::planned_status::pointer(PLANNED_FAILOVER_STATUS_FENCE)
            ),
        );
        if unapplied_first {
            assert!(fence.is_some(), "the unapplied write was settled by the status fence");
        }
        println!("status fence: {fence:?}");
        wait_for("the group settled on pdx", WAIT, async || {
            settled_on(&live.group_object()?, "pdx").then_some(())
        })
        .await;
        rpo_zero_on(&live, writes, "pdx").await;
        watch.finish().await;
        live.stop().await;
    })
    .await
    .unwrap_or_else(|_| panic!("the drill did not finish within {DRILL:?}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_settles_ambiguous_writes_fencing_5xx_promoting_timeout() {
    drill(Ambiguity::AppliedThen5xx, Ambiguity::AppliedThenTimeout, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_settles_ambiguous_writes_fencing_timeout_promoting_5xx() {
    drill(Ambiguity::AppliedThenTimeout, Ambiguity::AppliedThen5xx, false).await;
}
