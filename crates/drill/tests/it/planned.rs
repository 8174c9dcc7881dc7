//! The planned-failover drills (`drills/planned-*.yaml`, issue 13) on real MySQL 9.7 in the
//! live lab, the operator in-process with the planned-failover document's timings divided by
//! [`SCALE`] (`Timings::scaled`), so a 30-second drain takes 3 seconds and a 5-minute cooldown
//! 30. Each drill is its own test (its own lab), so nextest runs them concurrently.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bloodraven_drill::live::{
    LEASE_DURATION, LEASE_NAME, LiveError, OperatorEnv, OperatorLauncher, RunningOperator,
};
use bloodraven_drill::{RunOptions, load, run};
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::lease::{self, LeaseConfig};
use bloodraven_operator::manager::Tuning;
use bloodraven_operator::planned::Timings;

/// The divisor of every planned-failover timing in these drills.
pub(crate) const SCALE: u32 = 10;

/// The operator's `main` without the process, with scaled planned-failover timings: take the
/// Lease, then run the controller while holding it.
pub(crate) struct Scaled;

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

impl OperatorLauncher for Scaled {
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

#[expect(clippy::print_stdout, reason = "the timeline report is the test's record (--no-capture)")]
pub(crate) async fn play(file: &str) {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("drills").join(file);
    let drill = load(&path).unwrap_or_else(|e| panic!("{e}"));
    let options = RunOptions { operator_bin: None, launcher: Some(Arc::new(Scaled)) };
    // The drill's own timeout bounds it; this outer bound catches a hung teardown.
    let report =
        tokio::time::timeout(drill.timeout + Duration::from_secs(90), run(&drill, &options))
            .await
            .unwrap_or_else(|_| panic!("{file}: no report within its timeout + 90 s"))
            .unwrap_or_else(|e| panic!("{e}"));
    println!("{}", report.human());
    assert!(report.passed, "{}", report.human());
    assert_eq!(report.steps.len(), drill.drill.steps.len(), "{}", report.human());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_succeeds_with_rpo_zero_then_refuses_at_once() {
    play("planned-failover-succeeds.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_refused_for_admission_timeout_target_unhealthy_and_divergent() {
    play("planned-failover-refused.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_survives_an_operator_restart_in_admitting() {
    play("planned-failover-operator-restart.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_rolls_back_for_lag_timeout_and_for_a_target_lost_while_waiting() {
    play("planned-failover-rollback.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_leaves_the_source_fenced_when_a_foreign_site_turns_writable() {
    play("planned-failover-foreign-writer.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_survives_a_leader_change_in_waiting_for_lag() {
    play("planned-failover-leader-change.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_rolls_back_when_the_target_is_demoted_and_keeps_its_settings_snapshot() {
    play("planned-failover-spec-change.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_rolls_back_without_an_unfence_when_the_source_is_unfenced_by_hand() {
    play("planned-failover-source-unfenced.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_rolls_back_at_the_gate_when_a_peer_is_unreadable() {
    play("planned-failover-peer-unreadable.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_rolls_back_when_the_target_diverges_while_waiting() {
    play("planned-failover-divergent-target.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_failover_leaves_a_killed_source_fenced_and_emergency_failover_takes_over() {
    play("planned-failover-source-killed.yaml").await;
}
