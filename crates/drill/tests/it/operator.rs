//! The operator drills (`drills/operator-*.yaml`) on real MySQL 9.7 in the live lab: the lab
//! API server, the lab kubelet (a real `mysqld` per site Deployment, behind the fault proxy)
//! and the operator. Each drill is its own test, so nextest runs them concurrently (bounded by
//! its test threads).
//!
//! The operator runs in-process here (its controller, topology manager and Lease code, with
//! the lab kubelet's resolver), started and killed through `bloodraven_drill::live`'s launcher
//! seam: the binary dials Services through the cluster DNS, which the lab has not.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bloodraven_drill::live::{
    LEASE_DURATION, LEASE_NAME, LiveError, OperatorEnv, OperatorLauncher, RunningOperator,
};
use bloodraven_drill::{RunOptions, load, run_with};
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::lease::{self, LeaseConfig};
use bloodraven_operator::manager::Tuning;

use crate::runbook_doctor::{Expect, doctor_at_end};

/// The operator's `main` without the process: take the Lease, then run the controller while
/// holding it; the task's end (abort) drops the context and with it every topology manager.
pub(crate) struct InProcess;

struct Task(tokio::task::JoinHandle<()>);

impl RunningOperator for Task {
    fn describe(&self) -> String {
        "in-process task".into()
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl OperatorLauncher for InProcess {
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
            let context = Arc::new(Context::new(
                env.client.clone(),
                Arc::new(env.resolver.clone()),
                Tuning::default(),
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
        "the operator's controller in-process".into()
    }
}

#[expect(clippy::print_stdout, reason = "the timeline report is the test's record (--no-capture)")]
/// Plays `file`; with `doctor`, the console's `doctor` must find exactly that at the end
/// (`runbook_doctor.rs`).
async fn play(file: &str, doctor: Option<Expect>) {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("drills").join(file);
    let drill = load(&path).unwrap_or_else(|e| panic!("{e}"));
    let options = RunOptions { operator_bin: None, launcher: Some(Arc::new(InProcess)) };
    let ran = Arc::new(AtomicBool::new(false));
    let hook = doctor.map(|expect| doctor_at_end(expect, ran.clone()));
    // The drill's own timeout bounds it; this outer bound catches a hung teardown.
    let report = tokio::time::timeout(
        drill.timeout + Duration::from_secs(90),
        run_with(&drill, &options, hook.as_deref()),
    )
    .await
    .unwrap_or_else(|_| panic!("{file}: no report within its timeout + 90 s"))
    .unwrap_or_else(|e| panic!("{e}"));
    println!("{}", report.human());
    assert!(report.passed, "{}", report.human());
    assert_eq!(report.steps.len(), drill.drill.steps.len(), "{}", report.human());
    assert!(
        hook.is_none() || ran.load(Ordering::SeqCst),
        "the runner never called the doctor hook"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_primary_sigkill_promotes_the_freshest_candidate_and_lists_lost_writes() {
    play(
        "operator-primary-sigkill.yaml",
        Some(
            // iad stays refused to the operator: unreachable; a follower may rightly end
            // Blocked/GTIDDiverged after an asynchronous failover.
            Expect::healthy()
                .finding("SiteUnreachable", Some("iad"), None)
                .tolerating(&["SiteDiverged"]),
        ),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_dns_follows_failover_and_the_workload_resumes_on_pdx() {
    play(
        "operator-dns-follows-failover.yaml",
        Some(
            Expect::healthy()
                .finding("SiteUnreachable", Some("iad"), None)
                .tolerating(&["SiteDiverged"]),
        ),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_primary_frozen_is_unreachable_replaced_and_fenced_when_it_thaws() {
    play(
        "operator-primary-frozen.yaml",
        Some(Expect::healthy().tolerating(&["SiteDiverged", "SummaryDisagrees"])),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_primary_partitioned_is_replaced_and_fenced_when_the_partition_heals() {
    play(
        "operator-primary-partitioned.yaml",
        Some(Expect::healthy().tolerating(&["SiteDiverged", "SummaryDisagrees"])),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_no_candidate_alerts_no_primary_and_promotes_nothing() {
    play(
        "operator-no-candidate.yaml",
        Some(
            // Both candidates dead: no writer (pointing to no-primary), each candidate unreachable
            // since its status.sites[].lastSeen.
            Expect::healthy()
                .finding("NoWriter", None, Some("no-primary"))
                .finding("SiteUnreachable", Some("iad"), None)
                .finding("SiteUnreachable", Some("pdx"), None),
        ),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_split_brain_keeps_the_priority_winner_and_fences_the_other() {
    play("operator-split-brain.yaml", Some(Expect::healthy())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_writable_reader_is_fenced() {
    play("operator-writable-reader.yaml", Some(Expect::healthy())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_chained_follower_is_repointed_at_the_primary() {
    play("operator-chained-follower.yaml", Some(Expect::healthy())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_errant_follower_is_blocked_and_keeps_its_transactions() {
    play(
        "operator-errant-follower.yaml",
        // The operator keeps Ready=True while fra is Blocked/GTIDDiverged, which the verdict
        // calls SummaryDisagrees (seen live; reported to the coordinator).
        Some(
            Expect::healthy()
                .finding("SiteDiverged", Some("fra"), Some("diverged-follower"))
                .tolerating(&["SummaryDisagrees"]),
        ),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_failover_cooldown_stops_a_second_failover() {
    play(
        "operator-failover-cooldown.yaml",
        // pdx dead inside the cooldown: no writer, pdx unreachable, nothing promoted.
        Some(
            Expect::healthy()
                .finding("NoWriter", None, Some("no-primary"))
                .finding("SiteUnreachable", Some("pdx"), None)
                .tolerating(&["SiteDiverged"]),
        ),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_two_replicas_only_the_lease_holder_acts() {
    play(
        "operator-two-replicas.yaml",
        Some(
            Expect::healthy()
                .finding("SiteUnreachable", Some("iad"), None)
                .tolerating(&["SiteDiverged"]),
        ),
    )
    .await;
}
