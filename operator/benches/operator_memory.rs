//! Operator memory with 100 groups whose sites do not answer (issue 12, goal ≤ 100 MiB RSS of
//! the operator process after N polls of every group), and its CPU per group per poll there.
//!
//! The lab API server (in this process) holds the example group (deploy/examples) and 99
//! copies; the operator runs as a child process (see `support`) whose Services all resolve to
//! a closed port (connection refused). N = 20 polls per group (5 with
//! BLOODRAVEN_BENCH_QUICK), at the example's pollInterval of 1 s.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "benchmark harness: it reports on stdout (BENCH lines) and panics on a broken setup"
)]

mod support;

use std::time::{Duration, Instant};

use bloodraven_lab::{Lab, LabConfig};
use support::{OperatorChild, apply_example, polls, quick, renamed, wait_until};

const GROUPS: usize = 100;

fn main() {
    support::run_child_if_asked();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let per_group = if quick() { 5 } else { 20 };
    let lab = runtime
        .block_on(Lab::start(LabConfig { request_log_limit: 1_000_000, ..LabConfig::default() }))
        .expect("the lab API server");
    let group = apply_example(&lab);
    for index in 1..GROUPS {
        lab.apply(renamed(&group, &format!("orders-{index:03}"))).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let child = OperatorChild::spawn(&lab, dir.path());
    let started = Instant::now();
    wait_until(
        "a status with three unreachable sites on every group",
        Duration::from_secs(300),
        || {
            let groups = lab.list("shipstream.io/v1alpha1", "MysqlFailoverGroup");
            groups.len() == GROUPS
                && groups.iter().all(|group| {
                    group["status"]["sites"].as_array().is_some_and(|sites| {
                        sites.len() == 3 && sites.iter().all(|site| site["state"] == "unreachable")
                    })
                })
        },
        || support::diagnose(&lab, dir.path()),
    );
    println!("every group observed after {:.1} s", started.elapsed().as_secs_f64());
    let (polls_before, cpu_before, at) = (polls(&lab), child.cpu_seconds(), Instant::now());
    wait_until(
        &format!("{per_group} more polls of every group"),
        Duration::from_secs(60 + 5 * per_group as u64),
        || polls(&lab) >= polls_before + per_group * GROUPS,
        || support::diagnose(&lab, dir.path()),
    );
    let (polls_after, cpu_after, window) = (polls(&lab), child.cpu_seconds(), at.elapsed());
    let rss = child.status_kib("VmRSS") / 1024.0;
    let peak = child.status_kib("VmHWM") / 1024.0;
    let counted = polls_after - polls_before;
    let per_poll_ms = (cpu_after - cpu_before) * 1000.0 / counted as f64;
    println!(
        "BENCH operator/memory/100_groups_unreachable_rss {rss:.1} MiB peak={peak:.1}MiB \
         polls_per_group={per_group} groups={GROUPS}"
    );
    println!(
        "BENCH operator/cpu/per_group_poll_100_unreachable_groups {per_poll_ms:.3} ms \
         polls={counted} cpu={:.2}s window={:.1}s",
        cpu_after - cpu_before,
        window.as_secs_f64()
    );
    drop(child);
    runtime.block_on(lab.stop()).expect("the lab stops");
}
