//! Key press to confirm dialog drawn (issue 16: goal <= 16 ms p99): from a proposed
//! `WriteOp` on an observed group, the preflight and the preview are decided, the dialog state
//! is built and drawn into a 120x40 frame; then one typed character redrawn. Prints `BENCH`
//! lines (p50/p99/max over 1,000 runs) for `scripts/bench.sh`, beside criterion's mean.

use std::time::{Duration, Instant};

use bloodraven_console::ops::confirm::{ConfirmDialog, DialogKey, Origin};
use bloodraven_console::ops::send::{Access, decide};
use bloodraven_console::ops::{GroupRef, Observed, WriteOp};
use bloodraven_console::tui::view::dialog::render_dialog;
use bloodraven_crd::fixtures::{GroupFixture, manual_recovery_hold};
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn now() -> jiff::Timestamp {
    "2026-04-20T14:40:00Z".parse().unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

fn open_and_draw(terminal: &mut Terminal<TestBackend>, op: &WriteOp, observed: &Observed) {
    let prepared = decide(op.clone(), observed.clone(), now());
    let mut dialog = ConfirmDialog::new(prepared, Origin::Screen("group orders".to_owned()), true);
    dialog.access =
        Some(Access { user: Some("alice".to_owned()), allowed: Some(true), reason: None });
    let _ = terminal.draw(|frame| render_dialog(&dialog, frame.area(), true, frame));
    dialog.key(DialogKey::Char('p'));
    let _ = terminal.draw(|frame| render_dialog(&dialog, frame.area(), true, frame));
}

fn cases() -> Vec<(&'static str, WriteOp, Observed)> {
    let orders = GroupRef::new("orders", "orders");
    vec![
        (
            "promote",
            WriteOp::RequestPlannedFailover {
                group: orders.clone(),
                target: "pdx".to_owned(),
                max_lag_wait: None,
            },
            Observed::group(GroupFixture::three_sites().build()),
        ),
        (
            "ack-hold",
            WriteOp::AcknowledgeHold {
                group: orders,
                run_id: manual_recovery_hold().run_id.unwrap_or_default(),
            },
            Observed::group(GroupFixture::three_sites().with_hold(manual_recovery_hold()).build()),
        ),
    ]
}

fn dialog(c: &mut Criterion) {
    let Ok(mut terminal) = Terminal::new(TestBackend::new(120, 40));
    for (name, op, observed) in cases() {
        c.bench_function(&format!("console/dialog/{name}/key-to-drawn"), |b| {
            b.iter(|| open_and_draw(&mut terminal, &op, &observed));
        });
        let mut samples: Vec<Duration> = (0..1000)
            .map(|_| {
                let start = Instant::now();
                open_and_draw(&mut terminal, &op, &observed);
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
