//! Key press to confirm dialog drawn (issue 16: goal <= 16 ms p99), through the path the TUI's
//! runtime loop (`tui::app::run`) takes for a key: the crossterm key event turned into an intent
//! by `keymap::intent`, `update`, and the whole screen drawn by `view::render` into a 120x40
//! frame. The state holds the watched groups with the guided picker open (`a`), drawn once
//! before the clock starts, as the loop drew it after that key; then `enter` picks the
//! operation (the proposal is decided: preflight and preview on the watched group, the dialog
//! built) and the screen is drawn; then one typed character of the confirmation, updated and
//! redrawn. The reviews (SelfSubjectReview, SelfSubjectAccessReview, the fresh read) are
//! network round trips the runtime runs after the first frame: not in this figure.
//!
//! Cases: a promotion from the fleet view with 1 group and with 1,000 groups (the list drawn
//! behind the dialog), and the hold centre's acknowledgement. Prints `BENCH` lines (p50/p99/max
//! over 1,000 runs) for `scripts/bench.sh`, beside criterion's mean.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use bloodraven_console::tui::action::{Action, Change, DataEvent, Intent};
use bloodraven_console::tui::keymap;
use bloodraven_console::tui::state::{ConnectionStatus, Mode, Scope, SourceKind, State};
use bloodraven_console::tui::update::update;
use bloodraven_console::tui::view;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::fixtures::{GroupFixture, manual_recovery_hold};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// Timed runs per case for the quantiles.
const RUNS: usize = 1000;

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

/// One key as the runtime loop handles it: the intent of the key in the current mode, then
/// `update` and the redraw. A key the mode does not bind changes nothing and draws nothing.
fn press(terminal: &mut Terminal<TestBackend>, state: &mut State, code: KeyCode) {
    if let Some(intent) = keymap::intent(state.ui.mode, KeyEvent::new(code, KeyModifiers::NONE)) {
        let _ = update(state, Action::Input(intent));
        let _ = terminal.draw(|frame| view::render(state, frame));
    }
}

/// The screen before the measured key: the picker, as the loop drew it.
fn draw_picker(terminal: &mut Terminal<TestBackend>, state: &State) {
    let _ = terminal.draw(|frame| view::render(state, frame));
}

/// The measured path: the picking key updated and the screen drawn, then one typed key.
fn pick_and_type(terminal: &mut Terminal<TestBackend>, state: &mut State) {
    press(terminal, state, KeyCode::Enter);
    press(terminal, state, KeyCode::Char('p'));
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

/// The sample at quantile `q` of sorted `samples`, in milliseconds.
fn quantile(samples: &[Duration], q: f64) -> f64 {
    let index = ((samples.len().saturating_sub(1)) as f64 * q) as usize;
    samples.get(index).map_or(f64::NAN, |sample| sample.as_secs_f64() * 1000.0)
}

fn dialog(c: &mut Criterion) {
    let Ok(terminal) = Terminal::new(TestBackend::new(120, 40));
    let terminal = RefCell::new(terminal);
    for (name, picker) in cases() {
        // The case must really open a confirm dialog and take the typed key, or the figure
        // measures nothing.
        let mut check = picker.clone();
        assert!(check.guided.overlay.is_some(), "{name}: no picker ({:?})", check.ui.message);
        pick_and_type(&mut terminal.borrow_mut(), &mut check);
        assert_eq!(check.ui.mode, Mode::Dialog, "{name}: no dialog ({:?})", check.ui.message);
        let Some(dialog) = check.guided.dialog() else {
            panic!("{name}: the picking key opened no confirm dialog ({:?})", check.ui.message)
        };
        assert_eq!(dialog.dialog.typed, "p", "{name}: the typed key did not reach the dialog");
        c.bench_function(&format!("dialog/{name}/key-to-drawn"), |b| {
            b.iter_batched(
                || {
                    let state = picker.clone();
                    draw_picker(&mut terminal.borrow_mut(), &state);
                    state
                },
                |mut state| pick_and_type(&mut terminal.borrow_mut(), &mut state),
                BatchSize::SmallInput,
            );
        });
        let mut samples: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let mut state = picker.clone();
                let mut terminal = terminal.borrow_mut();
                draw_picker(&mut terminal, &state);
                let start = Instant::now();
                pick_and_type(&mut terminal, &mut state);
                start.elapsed()
            })
            .collect();
        samples.sort();
        #[allow(clippy::print_stdout, reason = "BENCH lines are the benchmark's output")]
        for (what, q) in [("p50", 0.5), ("p99", 0.99), ("max", 1.0)] {
            println!(
                "BENCH console/dialog/{name}/{what} {:.3} ms runs={RUNS} size=120x40",
                quantile(&samples, q)
            );
        }
    }
}

criterion_group!(benches, dialog);
criterion_main!(benches);
