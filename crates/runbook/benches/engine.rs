//! Evaluating every shipped runbook for one group (issue #19's goal: at most 1 ms), and the
//! parts: building the view, converting it for CEL, one `advance`.
//!
//! `cargo bench -p bloodraven-runbook --bench engine`

use std::hint::black_box;
use std::path::Path;

use bloodraven_crd::fixtures::{GroupFixture, manual_recovery_hold};
use bloodraven_runbook::{GroupView, Progress, Snapshot, advance, applicable, load_dir};
use criterion::{Criterion, criterion_group, criterion_main};

fn engine(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../runbooks");
    let Ok(runbooks) = load_dir(&dir) else {
        panic!("the shipped runbooks must load: run the tests");
    };
    let group = GroupFixture::three_sites().with_hold(manual_recovery_hold()).build();
    let view = GroupView::of(&group);
    let now = jiff::Timestamp::UNIX_EPOCH;
    let mut bench = c.benchmark_group("runbook");
    bench.bench_function("GroupView::of", |b| b.iter(|| GroupView::of(black_box(&group))));
    bench.bench_function("Snapshot::of", |b| b.iter(|| Snapshot::of(black_box(&view))));
    bench.bench_function(format!("applicable/{} runbooks", runbooks.len()), |b| {
        b.iter(|| applicable(black_box(&runbooks), black_box(&view)).runbooks.len())
    });
    bench.bench_function("view+applicable", |b| {
        b.iter(|| applicable(&runbooks, &GroupView::of(black_box(&group))).runbooks.len())
    });
    if let Some(hold) = runbooks.iter().find(|r| r.id == "automation-hold") {
        let progress = Progress::start(hold);
        bench.bench_function("advance/automation-hold first step", |b| {
            b.iter(|| advance(hold, black_box(&progress), black_box(&view), now).is_ok())
        });
    }
    bench.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
