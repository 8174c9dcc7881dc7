//! The workload and its ledger against one real site.

use std::time::Duration;

use bloodraven_sites::accounts::APPLICATION;
use bloodraven_sites::mysqld::{Instance, InstanceSpec};
use bloodraven_sites::workload::{Workload, WorkloadConfig, verify_at};

use crate::mysqld::{READY, dist_and_template};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_carry_their_gtids_and_a_fence_opens_the_outage_window() {
    let (dist, template) = dist_and_template().await;
    let mut site =
        Instance::create(&dist, &template, InstanceSpec::new("ledger", 31)).await.unwrap();
    site.start_and_wait(READY).await.unwrap();
    let mut config = WorkloadConfig::new(site.addr());
    config.rate_per_sec = 100;
    let workload = Workload::start(config);
    workload.wait_acknowledged(30, Duration::from_secs(60)).await.unwrap();
    site.set_super_read_only(true).await.unwrap();
    workload.wait_failed(5, Duration::from_secs(60)).await.unwrap();
    site.set_super_read_only(false).await.unwrap();
    let acked = workload.acknowledged();
    workload.wait_acknowledged(acked + 10, Duration::from_secs(60)).await.unwrap();
    let ledger = workload.stop().await.unwrap();

    // Every acknowledgement came with the GTID of its own COMMIT, and those are exactly what
    // the server executed (the workload is the only writer).
    let acknowledged: Vec<_> = ledger.acknowledged().collect();
    assert!(acknowledged.iter().all(|a| matches!(
        &a.outcome,
        bloodraven_sites::ledger::Outcome::Acknowledged { gtid: Some(_) }
    )));
    assert_eq!(ledger.acknowledged_gtids(), site.gtid_executed().await.unwrap());
    assert_eq!(
        ledger.acknowledged_gtids().count(),
        acknowledged.len() as u128,
        "one GTID per write"
    );

    let report = verify_at(&ledger, site.addr(), &APPLICATION).await.unwrap();
    assert!(report.rpo_zero(), "{:?}", report.lost);
    assert!(report.phantom.is_empty());
    let details: Vec<_> = ledger
        .attempts
        .iter()
        .filter_map(|a| match &a.outcome {
            bloodraven_sites::ledger::Outcome::Failed { detail, .. } => Some(detail.as_str()),
            _ => None,
        })
        .take(5)
        .collect();
    assert!(report.outage.map_or(0, |w| w.rejected) >= 5, "{:?} {details:?}", report.failures);
    let w = report.outage.unwrap();
    assert!(w.first < w.last);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_sessions_share_one_schedule_and_one_ledger_verifies_them_all() {
    let (dist, template) = dist_and_template().await;
    let mut site =
        Instance::create(&dist, &template, InstanceSpec::new("ledger-sessions", 32)).await.unwrap();
    site.start_and_wait(READY).await.unwrap();
    let mut config = WorkloadConfig::new(site.addr());
    config.rate_per_sec = 200;
    config.sessions = 4;
    config.first_key = 500;
    let workload = Workload::start(config);
    workload.wait_acknowledged(120, Duration::from_secs(60)).await.unwrap();
    let ledger = workload.stop().await.unwrap();

    let keys: Vec<u64> = ledger.attempts.iter().map(|a| a.key).collect();
    let distinct: std::collections::HashSet<u64> = keys.iter().copied().collect();
    assert_eq!(distinct.len(), keys.len(), "no key written twice");
    // One schedule deals the keys from 500: at most one write per session was taken and not
    // attempted when the workload stopped.
    let highest = keys.iter().copied().max().unwrap();
    assert!((500..500 + keys.len() as u64 + 4).contains(&highest), "highest key {highest}");
    assert!(keys.iter().all(|k| *k >= 500));
    assert!(ledger.attempts.windows(2).all(|w| w[0].started_at <= w[1].started_at));
    // The merged ledger's GTIDs are every transaction the server executed.
    assert_eq!(ledger.acknowledged_gtids(), site.gtid_executed().await.unwrap());
    let report = verify_at(&ledger, site.addr(), &APPLICATION).await.unwrap();
    assert!(report.rpo_zero(), "{:?}", report.lost);
    assert_eq!(report.present, report.acknowledged);
    assert!(report.phantom.is_empty());
}
