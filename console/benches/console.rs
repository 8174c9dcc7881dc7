//! Console benchmarks: frame build (1,000-group fleet list, 16-site detail), data event to
//! frame (update + draw), cold start (in process) to the first complete `fleet-1000` frame
//! against the lab API server, and a watch event to the redrawn frame on `healthy` and on
//! `fleet-1000`. The watch benchmark also prints `BENCH` lines (p50/p99/max) that
//! `scripts/bench.sh` collects into BENCHMARKS.md; the process-level comparison with kubectl
//! and the TUI's RSS are measured by `scripts/bench/*.sh`.

use std::time::{Duration, Instant};

use bloodraven_console::lab::RunningLab;
use bloodraven_console::scenarios;
use bloodraven_console::tui::action::{Action, Change, DataEvent, Intent};
use bloodraven_console::tui::app::{Options, run};
use bloodraven_console::tui::state::{Scope, State};
use bloodraven_console::tui::update::update;
use bloodraven_console::tui::view::render;
use bloodraven_crd::MysqlFailoverGroup;
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

fn now() -> jiff::Timestamp {
    scenarios::SCENARIO_EPOCH.parse().unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

fn groups(objects: Vec<serde_json::Value>) -> Vec<MysqlFailoverGroup> {
    objects.into_iter().filter_map(|object| serde_json::from_value(object).ok()).collect()
}

fn state_with(groups: Vec<MysqlFailoverGroup>) -> State {
    let mut state = State::new(now(), "bench", Scope::All);
    update(&mut state, Action::Data(DataEvent::Groups(Change::Restarted(groups))));
    state
}

fn sixteen_sites() -> MysqlFailoverGroup {
    let names: Vec<String> = (0..16).map(|index| format!("site-{index:02}")).collect();
    let spec_sites: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(index, name)| json!({ "name": name, "serverID": index + 1, "role": if index < 2 { "PrimaryCandidate" } else { "ReadOnly" } }))
        .collect();
    let status_sites: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(index, name)| {
            json!({
                "name": name,
                "state": if index == 0 { "writable" } else { "read-only" },
                "gtidExecuted": format!("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-{}", 1_000_000 - index),
                "replicating": index != 0,
                "secondsBehindSource": index,
                "lastSeen": "2026-04-20T14:39:58Z",
            })
        })
        .collect();
    let object = json!({
        "apiVersion": "shipstream.io/v1alpha1",
        "kind": "MysqlFailoverGroup",
        "metadata": { "name": "wide", "namespace": "bench" },
        "spec": { "sites": spec_sites },
        "status": {
            "activeSite": "site-00",
            "sites": status_sites,
            "conditions": [{ "type": "Ready", "status": "True", "reason": "Healthy", "message": "fine" }],
        },
    });
    serde_json::from_value(object).unwrap_or_else(|error| panic!("16-site group: {error}"))
}

fn frames(c: &mut Criterion) {
    let fleet = state_with(groups(scenarios::fleet(scenarios::FLEET_SIZE)));
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap_or_else(|e| panic!("{e}"));
    c.bench_function("frame/fleet-1000 list 120x36", |b| {
        b.iter(|| terminal.draw(|frame| render(&fleet, frame)).map(|_| ()))
    });

    // The fleet list at 10,000 groups (goal <= 5 ms), and what holding them costs: the
    // resident set of this process after the state is built (goal <= 150 MiB; the bench
    // harness's own memory included).
    let large = state_with(groups(scenarios::fleet(10_000)));
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap_or_else(|e| panic!("{e}"));
    c.bench_function("frame/fleet-10000 list 120x36", |b| {
        b.iter(|| terminal.draw(|frame| render(&large, frame)).map(|_| ()))
    });
    if let Some(kib) = std::fs::read_to_string("/proc/self/status").ok().and_then(|status| {
        status.lines().find_map(|line| {
            line.strip_prefix("VmHWM:")?.trim().trim_end_matches("kB").trim().parse::<f64>().ok()
        })
    }) {
        #[allow(clippy::print_stdout, reason = "the benchmark reports its memory")]
        {
            println!(
                "BENCH console/fleet-10000/rss-peak-in-process {:.1} MiB source=VmHWM groups=10000",
                kib / 1024.0
            );
        }
    }
    drop(large);

    // The verdicts of 1,000 groups (goal <= 5 ms), as the fleet title computes them.
    let fleet_groups = groups(scenarios::fleet(scenarios::FLEET_SIZE));
    c.bench_function("verdict/fleet-1000", |b| {
        b.iter(|| {
            fleet_groups
                .iter()
                .map(|group| bloodraven_console::verdict::of(group, &[], &[], now()).findings.len())
                .sum::<usize>()
        })
    });

    let mut detail = state_with(vec![sixteen_sites()]);
    update(&mut detail, Action::Input(Intent::Open));
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap_or_else(|e| panic!("{e}"));
    c.bench_function("frame/16-site detail 120x36", |b| {
        b.iter(|| terminal.draw(|frame| render(&detail, frame)).map(|_| ()))
    });

    let mut state = state_with(groups(scenarios::fleet(scenarios::FLEET_SIZE)));
    let mut changed = groups(scenarios::fleet(1)).remove(0);
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap_or_else(|e| panic!("{e}"));
    let mut generation = 0_i64;
    c.bench_function("event/apply one group + redraw (fleet-1000)", |b| {
        b.iter(|| {
            generation += 1;
            changed.metadata.generation = Some(generation);
            update(
                &mut state,
                Action::Data(DataEvent::Groups(Change::Applied(Box::new(changed.clone())))),
            );
            terminal.draw(|frame| render(&state, frame)).map(|_| ())
        })
    });
}

/// Cold start inside this process: a new client, watchers and the app, until a frame lists all
/// 1,000 groups. The fair comparison with kubectl (both as new processes) is
/// `scripts/bench/process.sh`, run by `scripts/bench.sh`.
fn cold_start(c: &mut Criterion) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let running = runtime
        .block_on(RunningLab::start("fleet-1000", jiff::Timestamp::now()))
        .unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = running.kubeconfig();
    let mut group = c.benchmark_group("cold start fleet-1000 (in process)");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("console: connect to first complete frame", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let started = Instant::now();
                runtime.block_on(async {
                    let (client, _) = bloodraven_console::client::connect(Some(&kubeconfig), None)
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                    let (done_sender, done) = tokio::sync::oneshot::channel::<()>();
                    let mut done_sender = Some(done_sender);
                    let mut terminal =
                        Terminal::new(TestBackend::new(120, 36)).unwrap_or_else(|e| panic!("{e}"));
                    let options = bench_options();
                    let on_draw = move |buffer: &ratatui::buffer::Buffer| {
                        let first_row: String =
                            buffer.content().iter().take(240).map(|cell| cell.symbol()).collect();
                        if first_row.contains("(1000 of 1000)")
                            && let Some(sender) = done_sender.take()
                        {
                            let _ = sender.send(());
                        }
                    };
                    let shutdown = async move {
                        let _ = done.await;
                    };
                    run(
                        &mut terminal,
                        client,
                        options,
                        futures::stream::pending(),
                        on_draw,
                        shutdown,
                    )
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                });
                total += started.elapsed();
            }
            total
        })
    });
    group.finish();
    let _ = runtime.block_on(running.stop());
}

/// How many status patches the watch-to-frame benchmark makes (p50/p99 over all of them).
const WATCH_EVENTS: usize = 200;

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let last = sorted.len() - 1;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an index into a short list"
    )]
    let index = ((last as f64) * fraction).round() as usize;
    sorted[index.min(last)]
}

/// A watch event to a redrawn frame on `healthy` (4 groups) and on `fleet-1000`.
fn watch_to_frame(c: &mut Criterion) {
    watch_to_frame_on(c, "healthy");
    watch_to_frame_on(c, "fleet-1000");
}

/// The first frame `scenario` is complete in, and the group a status patch shows up for in
/// that frame: `healthy`'s orders/orders; on `fleet-1000` the first `db-NNNN` row of the
/// fleet list (its namespace is `team-<NNNN mod 20>`, `scenarios::fleet`).
fn complete_and_patched(scenario: &str, frame: &str) -> Option<(String, String)> {
    if scenario != "fleet-1000" {
        return frame.contains("ledger").then(|| ("orders".to_owned(), "orders".to_owned()));
    }
    if !frame.contains("(1000 of 1000)") {
        return None;
    }
    let at = frame.find("db-")?;
    let digits = frame.get(at + 3..at + 7)?;
    let index: usize = digits.parse().ok()?;
    Some((format!("team-{:02}", index % 20), format!("db-{digits}")))
}

/// A watch event to a redrawn frame, through the lab API server: a SEPARATE writer client
/// patches `status.activeSite` of one group; the clock runs until the console (its own
/// read-only client, watchers and runtime, drawing 120x36) shows the new value.
fn watch_to_frame_on(c: &mut Criterion, scenario: &str) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let running = runtime
        .block_on(RunningLab::start(scenario, jiff::Timestamp::now()))
        .unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = running.kubeconfig();
    let (frames_sender, frames) = tokio::sync::watch::channel(String::new());
    let (stop_sender, stop) = tokio::sync::oneshot::channel::<()>();
    let app = runtime.spawn({
        let kubeconfig = kubeconfig.clone();
        async move {
            let (client, _) = bloodraven_console::client::connect(Some(&kubeconfig), None)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let mut terminal =
                Terminal::new(TestBackend::new(120, 36)).unwrap_or_else(|e| panic!("{e}"));
            let options = bench_options();
            let on_draw = move |buffer: &ratatui::buffer::Buffer| {
                frames_sender
                    .send_replace(buffer.content().iter().map(|cell| cell.symbol()).collect());
            };
            run(&mut terminal, client, options, futures::stream::pending(), on_draw, async move {
                let _ = stop.await;
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        }
    });
    let writer = runtime.block_on(async {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(&kubeconfig).unwrap_or_else(|e| panic!("{e}")),
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        kube::Client::try_from(config).unwrap_or_else(|e| panic!("{e}"))
    });
    // The first complete frame names the group to patch.
    let (namespace, name) = runtime.block_on(async {
        let mut frames = frames.clone();
        let mut found = None;
        let _ = tokio::time::timeout(
            Duration::from_secs(60),
            frames.wait_for(|frame| {
                found = complete_and_patched(scenario, frame);
                found.is_some()
            }),
        )
        .await;
        found.unwrap_or_else(|| panic!("no complete {scenario} frame within 60 s"))
    });
    let groups: kube::Api<MysqlFailoverGroup> = kube::Api::namespaced(writer, &namespace);
    let mut sequence = 0_usize;
    let mut event = |samples: &mut Vec<Duration>| {
        sequence += 1;
        let site = format!("w{:04}", sequence % 10_000);
        let mut frames = frames.clone();
        let started = Instant::now();
        runtime.block_on(async {
            let patch = kube::api::Patch::Merge(json!({ "status": { "activeSite": site } }));
            groups
                .patch_status(&name, &kube::api::PatchParams::default(), &patch)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            tokio::time::timeout(
                Duration::from_secs(20),
                frames.wait_for(|frame| frame.contains(&site)),
            )
            .await
            .unwrap_or_else(|_| panic!("no frame showed {site} within 20 s"))
            .unwrap_or_else(|e| panic!("{e}"));
        });
        let elapsed = started.elapsed();
        samples.push(elapsed);
        elapsed
    };
    let mut samples = Vec::new();
    // scripts/bench.sh --quick sets BLOODRAVEN_BENCH_QUICK: fewer events.
    let events =
        if std::env::var_os("BLOODRAVEN_BENCH_QUICK").is_some() { 50 } else { WATCH_EVENTS };
    for _ in 0..events {
        event(&mut samples);
    }
    samples.sort();
    let p50 = percentile(&samples, 0.50);
    let p99 = percentile(&samples, 0.99);
    let max = samples.last().copied().unwrap_or_default();
    #[allow(clippy::print_stdout, reason = "the benchmark reports its percentiles")]
    {
        println!(
            "watch event to redrawn frame ({scenario}, lab, separate writer, {} events): p50 {p50:?}, p99 {p99:?}, max {max:?}",
            samples.len(),
        );
        // Machine-readable lines for scripts/bench.sh (BENCHMARKS.md).
        for (what, value) in [("p50", p50), ("p99", p99), ("max", max)] {
            println!(
                "BENCH console/watch-to-frame/{scenario}/{what} {:.3} ms events={} group={namespace}/{name}",
                value.as_secs_f64() * 1000.0,
                samples.len(),
            );
        }
    }
    let mut group = c.benchmark_group(format!("watch event to redrawn frame/{scenario}"));
    group.sample_size(20);
    group.bench_function("status patch by another client to frame (lab)", |b| {
        b.iter_custom(|iterations| {
            let mut scratch = Vec::new();
            (0..iterations).map(|_| event(&mut scratch)).sum()
        })
    });
    group.finish();
    let _ = stop_sender.send(());
    let _ = runtime.block_on(app);
    let _ = runtime.block_on(running.stop());
}

criterion_group!(benches, frames, cold_start, watch_to_frame);
criterion_main!(benches);

/// The console's options for every benchmark: all namespaces, no colour, no archive.
fn bench_options() -> Options {
    Options {
        context: "bench".to_owned(),
        scope: Scope::All,
        no_color: true,
        archive_root: None,
        archive_credentials_from_secret: false,
        archive_passphrase_file: None,
        kubeconfig: None,
        write: None,
    }
}
