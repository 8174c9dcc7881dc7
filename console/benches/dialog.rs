//! Key press to confirm dialog drawn (issue 16: goal <= 16 ms p99), through the TUI's own TEA
//! loop: a `State` holding the watched groups with the guided picker open (`a`), then the key
//! that picks the operation (`enter`) goes through `update` (the proposal is decided: preflight
//! and preview on the watched group, the dialog built) and the whole screen is drawn by
//! `view::render` into a 120x40 frame; then one typed character of the confirmation, updated
//! and redrawn. The reviews (SelfSubjectReview, SelfSubjectAccessReview, the fresh read) are
//! network round trips the runtime runs after the first frame: not in this figure.
//!
//! Cases: a promotion from the fleet view with 1 group and with 1,000 groups (the list drawn
//! behind the dialog), and the hold centre's acknowledgement. Prints `BENCH` lines (p50/p99/max
//! over 1,000 runs) for `scripts/bench.sh`, beside criterion's mean.

use std::time::{Duration, Instant};

use bloodraven_console::ops::confirm::DialogKey;
use bloodraven_console::tui::action::{Action, Change, DataEvent, Intent};
use bloodraven_console::tui::state::{ConnectionStatus, Mode, Scope, SourceKind, State};
use bloodraven_console::tui::update::update;
use bloodraven_console::tui::view;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::fixtures::{GroupFixture, manual_recovery_hold};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn now() -> jiff::Timestamp {
    "2026-04-20T14:40:00Z".parse().unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// A state watching `groups`, every source connected, after `keys`.
fn state(groups: Vec<MysqlFailoverGroup>, keys: &[Intent]) -> State {
    let mut state = State::new(now(), "lab", Scope::All);
    update(&mut state, Action::Data(DataEvent::Groups(Change::Restarted(groups))));
    for source in SourceKind::ALL {
        let status = ConnectionStatus::Connected;
        update(&mut state, Action::Data(DataEvent::Connection { source, status, at: now() }));
    }
    update(&mut state, Action::Tick(now()));
    for key in keys {
        update(&mut state, Action::Input(key.clone()));
    }
    state
}

/// The measured path: the picking key updated and the screen drawn, then one typed key.
fn pick_and_draw(terminal: &mut Terminal<TestBackend>, state: &mut State) {
    let _ = update(state, Action::Input(Intent::Dialog(DialogKey::Enter)));
    let _ = terminal.draw(|frame| view::render(state, frame));
    let _ = update(state, Action::Input(Intent::Dialog(DialogKey::Char('p'))));
    let _ = terminal.draw(|frame| view::render(state, frame));
}

fn cases() -> Vec<(&'static str, State)> {
    let fleet: Vec<MysqlFailoverGroup> = (0..1000)
        .map(|n| {
            GroupFixture::three_sites()
                .with_namespace(&format!("team-{:02}", n % 50))
                .with_name(&format!("db-{n:04}"))
                .build()
        })
        .collect();
    vec![
        ("promote", state(vec![GroupFixture::three_sites().build()], &[Intent::Guided])),
        ("promote-fleet-1000", state(fleet, &[Intent::Guided])),
        (
            "ack-hold",
            state(
                vec![GroupFixture::three_sites().with_hold(manual_recovery_hold()).build()],
                &[Intent::Open, Intent::Tab(2), Intent::Guided],
            ),
        ),
    ]
}

fn dialog(c: &mut Criterion) {
    let Ok(mut terminal) = Terminal::new(TestBackend::new(120, 40));
    for (name, picker) in cases() {
        // The case must really open a confirm dialog, or the figure measures nothing.
        let mut check = picker.clone();
        pick_and_draw(&mut terminal, &mut check);
        assert_eq!(check.ui.mode, Mode::Dialog, "{name}: no dialog ({:?})", check.ui.message);
        assert!(check.guided.dialog().is_some(), "{name}: no confirm dialog");
        c.bench_function(&format!("console/dialog/{name}/key-to-drawn"), |b| {
            b.iter_batched(
                || picker.clone(),
                |mut state| pick_and_draw(&mut terminal, &mut state),
                BatchSize::SmallInput,
            );
        });
        let mut samples: Vec<Duration> = (0..1000)
            .map(|_| {
                let mut state = picker.clone();
                let start = Instant::now();
                pick_and_draw(&mut terminal, &mut state);
                start.elapsed()
            })
            .collect();
        samples.sort();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
        #[allow(clippy::print_stdout, reason = "BENCH lines are the benchmark's output")]
        for (what, value) in [("p50", at(0.5)), ("p99", at(0.99)), ("max", at(1.0))] {
            println!("BENCH console/dialog/{name}/{what} {value:.3} ms runs=1000 size=120x40");
        }
    }
}

criterion_group!(benches, dialog);
criterion_main!(benches);
