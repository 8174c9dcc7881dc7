//! Planned-failover drill (issue 13): the source's mysqld SIGKILLed mid-run and restarted by
//! the lab kubelet, which boots every server fenced (`super_read_only = ON` in the managed
//! my.cnf), on real MySQL 9.7 under a running workload, the operator in-process with the
//! document's timings divided by 10. Unlike `planned-failover-source-killed.yaml`, the
//! operator's link to iad is never refused: the restarted server answers again, read-only,
//! as the same server (`@@server_uuid` lives in its datadir).
//!
//! The run waits in WaitingForLag (pdx's applier 8 s behind) when iad is killed. What the
//! document decides depends on how long iad stays silent:
//!
//! - silent past the 10-second source-loss window (1 s scaled; a mysqld restart with crash
//!   recovery takes longer here): RollingBack{SourceLost}, then at once SourceLeftFenced{SourceLost}
//!   ("A source lost for 10 seconds (SourceLost) is left fenced with no unfence retries");
//! - back within it: the same server, read-only, holding no transaction past the fenced set,
//!   is still the run's fenced source, and the run Succeeds on pdx.
//!
//! Either way: exactly one writable site at the end, never two at once (sampled throughout),
//! and every acknowledged write on the writable site (RPO 0, the ledger).

use std::sync::Arc;

use bloodraven_crd::annotations::PLANNED_FAILOVER;
use bloodraven_drill::live::LiveLab;
use bloodraven_sites::workload::{Workload, WorkloadConfig};
use serde_json::Value;

use crate::planned::Scaled;
use crate::planned_ambiguous::WritableWatch;
use crate::planned_status::{
    DRILL, START, WAIT, annotate, delay_applier, group, has_event, rpo_zero_on, settled_on, text,
    wait_event,
};
use crate::sidecar::wait_for;

/// The writable site of a settled group, if it settled on one.
fn settled_site(group: &Value) -> Option<String> {
    ["iad", "pdx"].into_iter().find(|site| settled_on(group, site)).map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::print_stdout, reason = "the drill's numbers are its record (--no-capture)")]
async fn planned_failover_with_the_source_killed_and_restarted_fenced_ends_per_spec_with_rpo_zero()
{
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

        delay_applier(&live, "pdx", 8).await;
        annotate(&live, PLANNED_FAILOVER, "pdx:maxLagWait=5m").await;
        wait_for("the run waiting in WaitingForLag", WAIT, async || {
            let group = live.group_object()?;
            (text(&group, "/status/plannedFailover/phase").as_deref() == Some("WaitingForLag"))
                .then_some(())
        })
        .await;
        let pid = live.pid("iad").unwrap();
        let killed = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        assert!(killed.is_ok_and(|status| status.success()), "kill -KILL {pid} (iad)");
        delay_applier(&live, "pdx", 0).await;

        wait_for("the kubelet restarted iad's mysqld", WAIT, async || {
            live.pid("iad").ok().filter(|new| *new != pid)
        })
        .await;
        let ended = wait_for("the run's terminal record", WAIT, async || {
            let group = live.group_object()?;
            let block = &group["status"]["plannedFailover"];
            (block["phase"] == "Succeeded" || block["phase"] == "Failed").then(|| block.clone())
        })
        .await;
        let outcome = ended["result"]["outcome"].as_str().unwrap_or_default().to_owned();
        let reason = ended["result"]["reason"].as_str().map(str::to_owned);
        println!("outcome: {outcome} {reason:?}");
        match (outcome.as_str(), reason.as_deref()) {
            ("SourceLeftFenced", Some("SourceLost")) => {
                wait_event(&live, "PlannedFailoverRollbackStarted").await;
                wait_event(&live, "PlannedFailoverFailed").await;
                assert_eq!(
                    ended["rollback"]["reason"], "SourceLost",
                    "the rollback's reason: {ended}"
                );
            }
            ("Succeeded", None) => {
                wait_event(&live, "PlannedFailoverSucceeded").await;
            }
            other => panic!(
                "not the document's outcome for a source killed in WaitingForLag: {other:?} {ended}"
            ),
        }
        assert!(!has_event(&live, "PlannedFailoverManualRecoveryRequired"));

        // The group settles on one writable site (pdx after success; after SourceLost, iad
        // re-asserted or pdx promoted by the topology manager, whichever it decides).
        let site = wait_for("the group settled on one writable site", WAIT, async || {
            settled_site(&live.group_object()?)
        })
        .await;
        if outcome == "Succeeded" {
            assert_eq!(site, "pdx");
        }
        println!("settled on {site}");
        rpo_zero_on(&live, writes, &site).await;
        watch.finish().await;
        live.stop().await;
    })
    .await
    .unwrap_or_else(|_| panic!("the drill did not finish within {DRILL:?}"));
}
