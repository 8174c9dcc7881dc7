//! Annotation written to the first redraw of the operator's Admitting phase, in the live lab
//! (issue 16). The live lab of `bloodraven lab --live` runs in this process: the lab API
//! server, the lab kubelet with a real MySQL 9.7 per site, and the REAL operator as its own
//! process (`bloodraven-operator`: `BLOODRAVEN_OPERATOR_BIN`, else the workspace's dev build
//! `target/debug/bloodraven-operator`, which `scripts/bench.sh` builds). The console is the
//! in-process TEA loop (`tui::app::run`, its own read-only client and kube-runtime watches,
//! drawing 120x36 into a test backend), not the binary in a terminal: the figure has no tmux
//! capture in it. Every drawn frame goes to the bench with the instant its draw completed.
//!
//! Each run: once the group converged and the anti-flap cooldown after the last failover has
//! run out (`failoverCooldown: 0s` is set first, so runs go back to back), a separate writer
//! client annotates the group with a planned failover to the other PrimaryCandidate, and the
//! clock starts just before that request is sent. Two figures per run, read from the group's
//! row of the fleet list:
//! - `annotation-to-admitting-drawn`: to the first frame whose PLANNED cell reads `Admitting`
//!   (the planned-failover document: the run was given a runID and owns nothing yet);
//! - `annotation-to-first-phase-drawn`: to the first frame showing the run at all: any phase
//!   of the lifecycle before the outcome, a `Failed(..)` outcome (the run before it Succeeded)
//!   or the target in the ACTIVE cell.
//!
//! The operator writes Admitting, then Fencing as soon as the claim is granted; when the watch
//! delivered both before a redraw, no frame showed Admitting: the run counts in `skipped=` and
//! is measured only to its first phase. The next run starts after this run's record (a new
//! runID) ended Succeeded on the target and the group converged there.
//!
//! `BENCH console/admitting/<figure>/{p50,max}` (10 runs, 3 with `BLOODRAVEN_BENCH_QUICK`).
//! Needs `source scripts/provision.sh`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bloodraven_console::live;
use bloodraven_console::tui::app::{Options, run};
use bloodraven_console::tui::state::Scope;
use bloodraven_crd::MysqlFailoverGroup;
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Generous bounds: the machine is 2 cores shared with three mysqlds, the operator, the lab
/// and the console.
const READY_BOUND: Duration = Duration::from_secs(300);
const RUN_BOUND: Duration = Duration::from_secs(240);
const FRAME_BOUND: Duration = Duration::from_secs(60);
/// The planned-failover phases before the outcome (the document's lifecycle): a frame showing
/// one of them shows a run in flight.
const IN_FLIGHT: [&str; 10] = [
    "Deferred",
    "Admitting",
    "Fencing",
    "Draining",
    "WaitingForLag",
    "WaitingForDragonflySync",
    "PromotingDragonfly",
    "Promoting",
    "Publishing",
    "RollingBack",
];

/// One drawn frame: when its draw completed and its text, a line per row, a char per cell.
struct Frame {
    at: Instant,
    lines: Vec<String>,
}

fn frame_lines(buffer: &Buffer) -> Vec<String> {
    let area = buffer.area;
    (area.top()..area.bottom())
        .map(|y| {
            (area.left()..area.right())
                .map(|x| {
                    buffer.cell((x, y)).and_then(|cell| cell.symbol().chars().next()).unwrap_or(' ')
                })
                .collect()
        })
        .collect()
}

/// The group's row of the fleet list, cell by column title (the header's words: every title
/// is one word and every cell value has no space).
fn fleet_row(lines: &[String], namespace: &str, name: &str) -> Option<BTreeMap<String, String>> {
    let words = |line: &str| -> Vec<(usize, String)> {
        let chars: Vec<char> = line.chars().collect();
        let mut words = Vec::new();
        let mut start = None;
        for (index, c) in chars.iter().chain([' '].iter()).enumerate() {
            match (c.is_whitespace() || *c == '│', start) {
                (false, None) => start = Some(index),
                (true, Some(from)) => {
                    words.push((from, chars[from..index].iter().collect()));
                    start = None;
                }
                _ => {}
            }
        }
        words
    };
    let header = lines.iter().map(|line| words(line)).find(|titles| {
        ["NAMESPACE", "NAME", "ACTIVE", "PLANNED"]
            .iter()
            .all(|title| titles.iter().any(|(_, word)| word == title))
    })?;
    lines.iter().find_map(|line| {
        let chars: Vec<char> = line.chars().collect();
        let row: BTreeMap<String, String> = header
            .iter()
            .enumerate()
            .map(|(index, (from, title))| {
                let to = header.get(index + 1).map_or(chars.len(), |(next, _)| *next);
                let cell: String =
                    chars.get(*from..to.min(chars.len())).unwrap_or_default().iter().collect();
                (title.clone(), cell.trim_matches([' ', '│']).to_owned())
            })
            .collect();
        (row.get("NAMESPACE").map(String::as_str) == Some(namespace)
            && row.get("NAME").map(String::as_str) == Some(name))
        .then_some(row)
    })
}

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

/// The active site once the group converged: Ready, the active site writable, both others
/// replicating from it with no lag, and no planned failover in flight.
fn converged(group: &Value) -> Option<String> {
    let status = &group["status"];
    let ready = status["conditions"]
        .as_array()?
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    let active = status["activeSite"].as_str()?.to_owned();
    let sites = status["sites"].as_array()?;
    let caught_up = sites.len() == 3
        && sites.iter().all(|site| {
            if site["name"] == active.as_str() {
                site["state"] == "writable"
            } else {
                site["replicating"] == true && site["secondsBehindSource"].as_i64() == Some(0)
            }
        });
    let idle = !matches!(
        status["plannedFailover"]["phase"].as_str(),
        Some(phase) if IN_FLIGHT.contains(&phase)
    );
    (ready && caught_up && idle).then_some(active)
}

/// Polls the group every 200 ms until `check` answers; gives up after `bound`, naming what it
/// waited for and the status it last saw.
async fn wait_group<T>(
    live: &bloodraven_drill::live::LiveLab,
    what: &str,
    bound: Duration,
    mut check: impl FnMut(&Value) -> Option<T>,
) -> T {
    let started = Instant::now();
    loop {
        let group = live.group_object().unwrap_or_default();
        if let Some(found) = check(&group) {
            return found;
        }
        assert!(
            started.elapsed() < bound,
            "waited {bound:?} for {what}; the group's status: {:#}",
            group["status"]
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// How long the anti-flap cooldown after the last failover still runs (zero once it ran out):
/// a planned failover within `spec.failoverCooldown` of the last failover is refused.
fn cooldown_left(group: &Value) -> Duration {
    let Ok(typed) = serde_json::from_value::<MysqlFailoverGroup>(group.clone()) else {
        return Duration::ZERO;
    };
    let cooldown = typed.spec.effective_failover_cooldown().unwrap_or_default();
    let last = group["status"]["lastFailover"]["time"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let Some(last) = last.map(|at| at.as_millisecond()) else {
        return Duration::ZERO;
    };
    let now = jiff::Timestamp::now().as_millisecond();
    let ends = last.saturating_add(i64::try_from(cooldown.as_millis()).unwrap_or(i64::MAX));
    Duration::from_millis(u64::try_from(ends.saturating_sub(now)).unwrap_or(0))
}

/// What one run saw: since the annotation request started, the first frame showing Admitting
/// (if any did) and the first showing the run, with the PLANNED cell it showed.
struct Drawn {
    admitting: Option<Duration>,
    first: Duration,
    first_phase: String,
}

/// Reads frames until one shows the run of a planned failover to `target`.
async fn follow(
    frames: &mut mpsc::UnboundedReceiver<Frame>,
    (namespace, name, target): (&str, &str, &str),
    started: Instant,
    index: usize,
) -> Drawn {
    let deadline = tokio::time::Instant::now() + RUN_BOUND;
    let mut admitting = None;
    let mut last_seen = None;
    loop {
        let frame = match tokio::time::timeout_at(deadline, frames.recv()).await {
            Ok(Some(frame)) => frame,
            Ok(None) => panic!("run {index}: the console stopped drawing"),
            Err(_) => panic!(
                "run {index}: waited {RUN_BOUND:?} for a frame showing the planned failover to \
                 {target}; the group's row last read {last_seen:?}"
            ),
        };
        let Some(row) = fleet_row(&frame.lines, namespace, name) else { continue };
        let phase = row.get("PLANNED").cloned().unwrap_or_default();
        let active = row.get("ACTIVE").map(String::as_str);
        let elapsed = frame.at.saturating_duration_since(started);
        if phase == "Admitting" && admitting.is_none() {
            admitting = Some(elapsed);
        }
        if IN_FLIGHT.contains(&phase.as_str())
            || phase.starts_with("Failed")
            || active == Some(target)
        {
            return Drawn { admitting, first: elapsed, first_phase: phase };
        }
        last_seen = Some(row);
    }
}

/// `BENCH` lines of one figure: p50 and max of `samples`, every run listed.
#[allow(clippy::print_stdout, reason = "the BENCH lines are the benchmark's output")]
fn report(what: &str, samples: &mut [Duration], runs: usize, skipped: usize) {
    samples.sort();
    let (Some(p50), Some(max)) = (samples.get((samples.len().max(1) - 1) / 2), samples.last())
    else {
        println!("console/admitting/{what}: no sample ({runs} runs, {skipped} skipped)");
        return;
    };
    let listed: Vec<String> =
        samples.iter().map(|d| format!("{:.0}", d.as_secs_f64() * 1000.0)).collect();
    for (quantile, value) in [("p50", p50), ("max", max)] {
        println!(
            "BENCH console/admitting/{what}/{quantile} {:.1} ms runs={runs} skipped={skipped} \
             size=120x36 operator=process all_ms={}",
            value.as_secs_f64() * 1000.0,
            listed.join(",")
        );
    }
}

#[allow(clippy::print_stdout, reason = "the runs are the benchmark's output")]
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
    let mut active =
        runtime.block_on(wait_group(&live, "the group to converge", READY_BOUND, converged));

    // The console: its own client and watches, every frame sent with its draw's instant.
    let (frames_sender, mut frames) = mpsc::unbounded_channel::<Frame>();
    let (stop_sender, stop) = tokio::sync::oneshot::channel::<()>();
    let kubeconfig = live.kubeconfig();
    let app = runtime.spawn(async move {
        let (client, _) = bloodraven_console::client::connect(Some(&kubeconfig), None)
            .await
            .unwrap_or_else(|e| panic!("the console's client: {e}"));
        let mut terminal =
            Terminal::new(TestBackend::new(120, 36)).unwrap_or_else(|e| panic!("{e}"));
        let options = Options {
            context: "bench".to_owned(),
            scope: Scope::All,
            no_color: true,
            archive_root: None,
            archive_credentials_from_secret: false,
            archive_passphrase_file: None,
            kubeconfig: None,
            write: None,
        };
        let on_draw = move |buffer: &Buffer| {
            let _ = frames_sender.send(Frame { at: Instant::now(), lines: frame_lines(buffer) });
        };
        run(&mut terminal, client, options, futures::stream::pending(), on_draw, async move {
            let _ = stop.await;
        })
        .await
        .unwrap_or_else(|e| panic!("the console: {e:#}"));
    });
    runtime.block_on(async {
        let deadline = tokio::time::Instant::now() + FRAME_BOUND;
        let mut last = None;
        loop {
            match tokio::time::timeout_at(deadline, frames.recv()).await {
                Ok(Some(frame)) => {
                    let row = fleet_row(&frame.lines, &namespace, &name);
                    if row.as_ref().and_then(|row| row.get("ACTIVE")) == Some(&active) {
                        break;
                    }
                    last = Some(frame.lines.join("\n"));
                }
                Ok(None) => panic!("the console stopped drawing"),
                Err(_) => panic!(
                    "waited {FRAME_BOUND:?} for a console frame listing {namespace}/{name} on \
                     {active}; the last frame:\n{}",
                    last.unwrap_or_default()
                ),
            }
        }
    });

    let runs = if std::env::var_os("BLOODRAVEN_BENCH_QUICK").is_some() { 3 } else { 10 };
    let mut to_admitting = Vec::new();
    let mut to_first_phase = Vec::new();
    let mut skipped = 0;
    for index in 0..runs {
        let target = if active == "iad" { "pdx" } else { "iad" };
        let group = live.group_object().unwrap_or_default();
        let previous_run = group["status"]["plannedFailover"]["runID"].clone();
        let cooldown = cooldown_left(&group);
        if !cooldown.is_zero() {
            println!("run {index}: waiting {cooldown:?} for the failover cooldown");
            runtime.block_on(tokio::time::sleep(cooldown + Duration::from_millis(100)));
        }
        // Only frames drawn after the request count.
        while frames.try_recv().is_ok() {}
        let started = Instant::now();
        let drawn = runtime.block_on(async {
            let patch = kube::api::Patch::Merge(json!({
                "metadata": {"annotations": {"bloodraven.shipstream.io/planned-failover": target}}
            }));
            groups
                .patch(&name, &kube::api::PatchParams::default(), &patch)
                .await
                .unwrap_or_else(|e| panic!("run {index}: the planned-failover annotation: {e}"));
            follow(&mut frames, (&namespace, &name, target), started, index).await
        });
        match drawn.admitting {
            Some(elapsed) => to_admitting.push(elapsed),
            None => skipped += 1,
        }
        to_first_phase.push(drawn.first);
        println!(
            "run {index}: {active} -> {target}: Admitting drawn after {:?}; the run first drawn \
             after {:?} ({})",
            drawn.admitting, drawn.first, drawn.first_phase
        );
        // This run's record (another runID than the last one) ends, then the group converges.
        let outcome = runtime.block_on(wait_group(
            &live,
            &format!("run {index}'s terminal record (not run {previous_run})"),
            RUN_BOUND,
            |group| {
                let record = &group["status"]["plannedFailover"];
                let terminal = matches!(record["phase"].as_str(), Some("Succeeded" | "Failed"));
                (terminal && !record["runID"].is_null() && record["runID"] != previous_run)
                    .then(|| record.clone())
            },
        ));
        assert!(
            outcome["phase"] == "Succeeded" && outcome["targetSite"] == target,
            "run {index}: the planned failover to {target} did not succeed: {outcome:#}"
        );
        active = runtime.block_on(wait_group(
            &live,
            &format!("run {index}: the group to converge on {target}"),
            RUN_BOUND,
            |group| converged(group).filter(|site| site == target),
        ));
    }
    report("annotation-to-admitting-drawn", &mut to_admitting, runs, skipped);
    report("annotation-to-first-phase-drawn", &mut to_first_phase, runs, skipped);
    let _ = stop_sender.send(());
    let _ = runtime.block_on(app);
    runtime.block_on(live.stop());
}

criterion_group!(benches, admitting);
criterion_main!(benches);
