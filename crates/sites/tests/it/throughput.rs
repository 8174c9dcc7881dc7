//! How many acknowledged writes per second the workload reaches on a durable 3-site star
//! (`sync_binlog = 1`, `innodb_flush_log_at_trx_commit = 1`, as the operator's sites run), and
//! how far the replicas fall behind. A measurement, not a check: it is `#[ignore]`d and prints
//! its numbers; run it by hand on an otherwise quiet machine:
//!
//! ```text
//! source scripts/provision.sh
//! BLOODRAVEN_THROUGHPUT_SESSIONS=8,16,32 cargo nextest run -p bloodraven-sites \
//!     --run-ignored only --no-capture throughput
//! ```
//!
//! `BLOODRAVEN_THROUGHPUT_RATE` (default 1000) is the rate asked of every step,
//! `BLOODRAVEN_THROUGHPUT_SECONDS` (default 8) the length of each step,
//! `BLOODRAVEN_THROUGHPUT_OPTIONS` (`key=value,…`) more `[mysqld]` options for every site.

use std::time::{Duration, Instant};

use bloodraven_sites::accounts::APPLICATION;
use bloodraven_sites::group::{Group, GroupSpec};
use bloodraven_sites::workload::{Workload, WorkloadConfig, verify_at};

use crate::mysqld::dist_and_template;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::print_stdout, reason = "a measurement run by hand: its numbers are its output")]
#[ignore = "a measurement: prints the workload's rate on a durable star; run by hand on a quiet machine"]
async fn workload_rate_on_a_durable_star() {
    let rate: u32 = env_or("BLOODRAVEN_THROUGHPUT_RATE", 1000);
    let seconds: u64 = env_or("BLOODRAVEN_THROUGHPUT_SECONDS", 8);
    let steps: Vec<u32> = std::env::var("BLOODRAVEN_THROUGHPUT_SESSIONS")
        .unwrap_or_else(|_| "8,16,32".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let (dist, template) = dist_and_template().await;
    let mut spec = GroupSpec::new(&["a", "b", "c"]);
    spec.extra_options = vec![
        ("sync_binlog".into(), "1".into()),
        ("innodb_flush_log_at_trx_commit".into(), "1".into()),
        ("replica_preserve_commit_order".into(), "ON".into()),
    ];
    for option in std::env::var("BLOODRAVEN_THROUGHPUT_OPTIONS").unwrap_or_default().split(',') {
        if let Some((key, value)) = option.split_once('=') {
            spec.extra_options.push((key.trim().into(), value.trim().into()));
        }
    }
    let group = Group::start_with(&dist, &template, spec).await.unwrap_or_else(|e| panic!("{e}"));
    let mut first_key = 1;
    for sessions in steps {
        let mut config = WorkloadConfig::new(group.primary_link().addr());
        config.rate_per_sec = rate;
        config.sessions = sessions;
        config.first_key = first_key;
        let workload = Workload::start(config);
        workload.wait_acknowledged(50, Duration::from_secs(60)).await.unwrap();
        let (before, started) = (workload.acknowledged(), Instant::now());
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        let achieved = (workload.acknowledged() - before) as f64 / started.elapsed().as_secs_f64();
        let ledger = workload.stop().await.unwrap();
        let stopped = Instant::now();
        group.wait_caught_up(&["b", "c"], Duration::from_secs(300)).await.unwrap();
        let catch_up = stopped.elapsed().as_secs_f64();
        let mut latencies: Vec<f64> = ledger
            .acknowledged()
            .filter_map(|a| a.ended_at.duration_since(a.started_at).ok())
            .map(|d| d.as_secs_f64() * 1e3)
            .collect();
        latencies.sort_by(f64::total_cmp);
        let report = verify_at(&ledger, group.primary_link().addr(), &APPLICATION).await.unwrap();
        assert!(report.rpo_zero(), "lost: {:?}", report.lost_keys());
        println!(
            "THROUGHPUT sessions={sessions} asked={rate}w/s achieved={achieved:.0}w/s \
             commit_ms p50={:.1} p90={:.1} p99={:.1} failed={} {:?} replicas_caught_up_after={catch_up:.2}s load={}",
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.9),
            percentile(&latencies, 0.99),
            report.attempts - report.acknowledged,
            report.failures,
            std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
        );
        first_key += ledger.attempts.len() as u64 * 2 + 1_000;
    }
}
