//! Annotation written to the first redraw of the operator's Admitting phase, in the live lab
//! (issue 16). The live lab of `bloodraven lab --live` runs in this process: the lab API
//! server, the lab kubelet with a real MySQL 9.7 per site, and the REAL operator as its own
//! process (`bloodraven-operator`: `BLOODRAVEN_OPERATOR_BIN`, else the workspace's dev build
//! `target/debug/bloodraven-operator`, which `scripts/bench.sh` builds). The console is the
//! in-process TEA loop (`tui::app::run`, its own read-only client and kube-runtime watches,
//! drawing 120x36 into a test backend), not the binary in a terminal: the figure has no tmux
//! capture in it.
//!
//! Each run: a separate writer client annotates the group with a planned failover to the other
//! PrimaryCandidate (`failoverCooldown: 0s`, so runs go back to back); the clock runs until a
//! drawn frame first shows `Admitting` in the fleet list's PLANNED column. The operator writes
//! the Admitting record and then Fencing on its next pass; a frame that skipped Admitting (the
//! watch delivered both before a redraw) is counted in `skipped=` and its run measured to the
//! first frame showing the run in any later phase (`first-phase/*`). Each run waits for the
//! group to converge on the target before the next.
//!
//! `BENCH console/admitting/{p50,max}` (10 runs, 3 with `BLOODRAVEN_BENCH_QUICK`). Needs
//! `source scripts/provision.sh`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bloodraven_console::live;
use bloodraven_console::tui::app::{Options, run};
use bloodraven_console::tui::state::Scope;
use bloodraven_crd::MysqlFailoverGroup;
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};

const READY_BOUND: Duration = Duration::from_secs(300);
const RUN_BOUND: Duration = Duration::from_secs(240);
/// The phases after Admitting a frame can show while the run is in flight (not `Succeeded`:
/// the PLANNED column shows the previous run's record until the new one is written).
const LATER_PHASES: [&str; 5] = ["Fencing", "Draining", "WaitingForLag", "Promoting", "Publishing"];

fn operator_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("BLOODRAVEN_OPERATOR_BIN") {
        return PathBuf::from(bin);
    }
    let bin =
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/debug/bloodraven-operator"));
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build -p bloodraven-operator` or set BLOODRAVEN_OPERATOR_BIN",
        bin.display()
    );
    bin
}

/// The active site once the group converged (Ready, both others replicating, no lag).
fn converged(group: &Value) -> Option<String> {
    let status = &group["status"];
    let ready = status["conditions"]
        .as_array()?
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    let active = status["activeSite"].as_str()?.to_owned();
    let sites = status["sites"].as_array()?;
    let caught_up = sites.len() == 3
        && sites.iter().filter(|site| site["name"] != active.as_str()).all(|site| {
            site["replicating"] == true && site["secondsBehindSource"].as_i64() == Some(0)
        });
    let idle = !matches!(
        status["plannedFailover"]["phase"].as_str(),
        Some(phase) if !matches!(phase, "Succeeded" | "Failed")
    );
    (ready && caught_up && idle).then_some(active)
}

async fn wait_converged(live: &bloodraven_drill::live::LiveLab) -> String {
    let started = Instant::now();
    loop {
        if let Some(active) = live.group_object().as_ref().and_then(converged) {
            return active;
        }
        assert!(
            started.elapsed() < READY_BOUND,
            "waited {READY_BOUND:?} for the group to converge; status: {:#}",
            live.group_object().unwrap_or_default()["status"]
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether the fleet row of the frame shows `phase` (the PLANNED column).
fn shows(frame: &str, phase: &str) -> bool {
    frame.contains(phase)
}

#[allow(clippy::print_stdout, reason = "the runs and the BENCH lines are the benchmark's output")]
fn admitting(_: &mut Criterion) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let live = runtime
        .block_on(live::start(operator_bin()))
        .unwrap_or_else(|e| panic!("the live lab: {e:#} (source scripts/provision.sh)"));
    runtime.block_on(live::wait_ready(&live, READY_BOUND)).unwrap_or_else(|e| panic!("{e:#}"));
    let namespace = live.namespace().to_owned();
    let name = live.group_name().to_owned();
    let groups: kube::Api<MysqlFailoverGroup> =
        kube::Api::namespaced(live.client().clone(), &namespace);
    // Back-to-back runs: no cooldown.
    runtime.block_on(async {
        let patch = kube::api::Patch::Merge(json!({ "spec": { "failoverCooldown": "0s" } }));
        groups
            .patch(&name, &kube::api::PatchParams::default(), &patch)
            .await
            .unwrap_or_else(|e| panic!("the cooldown patch: {e}"));
    });
    let mut active = runtime.block_on(wait_converged(&live));

    // The console: its own client and watches, every frame's text published.
    let (frames_sender, frames) = tokio::sync::watch::channel(String::new());
    let (stop_sender, stop) = tokio::sync::oneshot::channel::<()>();
    let kubeconfig = live.kubeconfig();
    let app = runtime.spawn(async move {
        let (client, _) = bloodraven_console::client::connect(Some(&kubeconfig), None)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut terminal =
            Terminal::new(TestBackend::new(120, 36)).unwrap_or_else(|e| panic!("{e}"));
        let options = Options {
            context: "bench".to_owned(),
            scope: Scope::All,
            no_color: true,
            archive_root: None,
            archive_credentials_from_secret: false,
            kubeconfig: None,
            write: None,
        };
        let on_draw = move |buffer: &ratatui::buffer::Buffer| {
            frames_sender.send_replace(buffer.content().iter().map(|cell| cell.symbol()).collect());
        };
        run(&mut terminal, client, options, futures::stream::pending(), on_draw, async move {
            let _ = stop.await;
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    });
    runtime.block_on(async {
        let mut frames = frames.clone();
        let found = tokio::time::timeout(
            Duration::from_secs(60),
            frames.wait_for(|frame| frame.contains(&name) && frame.contains(&active)),
        )
        .await;
        assert!(found.is_ok(), "no console frame listed {namespace}/{name} within 60 s");
    });

    let runs = if std::env::var_os("BLOODRAVEN_BENCH_QUICK").is_some() { 3 } else { 10 };
    let mut to_admitting = Vec::new();
    let mut to_first_phase = Vec::new();
    let mut skipped = 0;
    for index in 0..runs {
        let target = if active == "iad" { "pdx" } else { "iad" };
        let mut frames = frames.clone();
        frames.mark_unchanged();
        let started = Instant::now();
        let (admitted, first) = runtime.block_on(async {
            let patch = kube::api::Patch::Merge(json!({
                "metadata": {"annotations": {"bloodraven.shipstream.io/planned-failover": target}}
            }));
            groups
                .patch(&name, &kube::api::PatchParams::default(), &patch)
                .await
                .unwrap_or_else(|e| panic!("the planned-failover annotation: {e}"));
            let (mut admitted, mut first) = (None, None);
            while first.is_none() {
                let changed = tokio::time::timeout(RUN_BOUND, frames.changed()).await;
                assert!(
                    matches!(changed, Ok(Ok(()))),
                    "run {index}: no frame showed the run within {RUN_BOUND:?}"
                );
                let frame = frames.borrow_and_update().clone();
                if admitted.is_none() && shows(&frame, "Admitting") {
                    admitted = Some(started.elapsed());
                }
                if admitted.is_some() || LATER_PHASES.iter().any(|phase| shows(&frame, phase)) {
                    first = Some(started.elapsed());
                }
            }
            (admitted, first.unwrap_or_default())
        });
        match admitted {
            Some(elapsed) => to_admitting.push(elapsed),
            None => skipped += 1,
        }
        to_first_phase.push(first);
        println!(
            "run {index}: {active} -> {target}: Admitting drawn after {:?}, first phase drawn after {first:?}",
            admitted
        );
        let outcome = runtime.block_on(async {
            let started = Instant::now();
            loop {
                let group = live.group_object().unwrap_or_default();
                let phase = group["status"]["plannedFailover"]["phase"].as_str().map(str::to_owned);
                if matches!(phase.as_deref(), Some("Succeeded" | "Failed"))
                    && group["status"]["plannedFailover"]["target"] == target
                {
                    return group["status"]["plannedFailover"].clone();
                }
                assert!(
                    started.elapsed() < RUN_BOUND,
                    "run {index}: no terminal record; {group:#}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        assert_eq!(outcome["phase"], "Succeeded", "run {index}: {outcome:#}");
        active = runtime.block_on(wait_converged(&live));
        assert_eq!(active, target, "run {index}: the group converged on another site");
    }
    let report = |what: &str, samples: &mut Vec<Duration>| {
        samples.sort();
        if samples.is_empty() {
            return;
        }
        let p50 = samples[(samples.len() - 1) / 2];
        let max = samples[samples.len() - 1];
        let listed: Vec<String> =
            samples.iter().map(|d| format!("{:.0}", d.as_secs_f64() * 1000.0)).collect();
        for (quantile, value) in [("p50", p50), ("max", max)] {
            println!(
                "BENCH console/admitting/{what}/{quantile} {:.1} ms runs={runs} skipped={skipped} size=120x36 operator=process all_ms={}",
                value.as_secs_f64() * 1000.0,
                listed.join(",")
            );
        }
    };
    report("annotation-to-admitting-drawn", &mut to_admitting);
    report("annotation-to-first-phase-drawn", &mut to_first_phase);
    let _ = stop_sender.send(());
    let _ = runtime.block_on(app);
    runtime.block_on(live.stop());
}

criterion_group!(benches, admitting);
criterion_main!(benches);
