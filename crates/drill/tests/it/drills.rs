//! The shipped drills that need no operator, on real MySQL 9.7. Each drill starts its own
//! 3-site group (a drill kills, fences and promotes, so groups are not shared); nextest runs
//! the tests concurrently. Every drill carries its own `timeout`, and nextest ends any test
//! after 5 minutes.

use std::path::Path;

use bloodraven_drill::{RunOptions, load, run};

async fn play(file: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("drills").join(file);
    let drill = load(&path).unwrap_or_else(|e| panic!("{e}"));
    let report = run(&drill, &RunOptions::default()).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(report.passed, "{}", report.human());
    assert_eq!(report.steps.len(), drill.drill.steps.len(), "{}", report.human());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replication_stalls_on_a_blackholed_link_and_resumes_on_heal() {
    play("replication-stall.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_sees_a_killed_primary_as_connection_errors_and_a_frozen_one_as_timeouts() {
    play("killed-vs-frozen-primary.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_promotion_of_a_lagging_replica_loses_exactly_the_writes_the_ledger_names() {
    play("manual-promotion-lagging-replica.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errant_transaction_shows_in_gtid_subtract() {
    play("errant-transaction.yaml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drill_that_needs_the_operator_is_refused_without_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("manifests")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("drills/manifests/three-sites.yaml"),
        dir.path().join("manifests/three-sites.yaml"),
    )
    .unwrap();
    let path = dir.path().join("op.yaml");
    std::fs::write(
        &path,
        "name: op\nrequires: [operator]\nsteps:\n  - startGroup: {manifest: manifests/three-sites.yaml}\n  \
         - wait: {until: {status: {path: status.activeSite, equals: pdx}}, timeout: 30s}\n",
    )
    .unwrap();
    let drill = load(&path).unwrap();
    let err = run(&drill, &RunOptions::default()).await.unwrap_err().to_string();
    assert!(err.contains("requires the operator") && err.contains("--operator-bin"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_wait_says_what_it_waited_for_and_what_it_saw_and_stops_the_drill() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("manifests")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("drills/manifests/three-sites.yaml"),
        dir.path().join("manifests/three-sites.yaml"),
    )
    .unwrap();
    let path = dir.path().join("fails.yaml");
    std::fs::write(
        &path,
        "name: fails\nsteps:\n  - startGroup: {manifest: manifests/three-sites.yaml}\n  \
         - startWorkload: {rate: 20}\n  \
         - wait: {until: {replica: {site: iad, io: \"Yes\"}}, timeout: 1s}\n  \
         - kill: {site: pdx}\n",
    )
    .unwrap();
    let drill = load(&path).unwrap();
    let report = run(&drill, &RunOptions::default()).await.unwrap();
    assert!(!report.passed);
    assert_eq!(report.steps.len(), 3, "the drill stops at the failed step:\n{}", report.human());
    let failed = &report.steps[2];
    assert!(!failed.ok);
    assert!(
        failed.detail.contains("waited 1s for {\"replica\"")
            && failed.detail.contains("last seen: iad: no replication"),
        "{}",
        failed.detail
    );
    let error = report.error.clone().unwrap();
    assert!(error.starts_with("steps[2] (wait) failed"), "{error}");
    assert!(error.contains("workload \"workload\" at the failure"), "{error}");
    let json: serde_json::Value = serde_json::from_str(&report.json()).unwrap();
    assert_eq!(json["passed"], false);
    assert_eq!(json["steps"][2]["kind"], "wait");
    assert_eq!(json["steps"][2]["ok"], false);
    assert!(report.human().contains("FAIL steps[2] wait"), "{}", report.human());
}
