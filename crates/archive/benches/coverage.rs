//! Coverage of a 10,000-file, 5-site archive from already-parsed manifests.
//!
//! `cargo bench -p bloodraven-archive --features fixtures --bench coverage`

use std::hint::black_box;

use bloodraven_archive::coverage::{BackupPoint, Coverage};
use bloodraven_archive::fixtures::synthetic_manifests;
use bloodraven_gtid::GtidSet;
use criterion::{Criterion, criterion_group, criterion_main};

fn coverage(c: &mut Criterion) {
    let manifests = synthetic_manifests(10_000, 5, 200);
    let mut group = c.benchmark_group("coverage");
    group.sample_size(20);
    group.bench_function("from_manifests/10000 files/5 sites", |b| {
        b.iter(|| Coverage::from_manifests(black_box(&manifests).iter()))
    });
    let coverage = Coverage::from_manifests(manifests.iter());
    // A backup holding the first 100 files: the window walks the other 9,900.
    let early = manifests[0].files[99].last_event_time.unwrap_or_default();
    let point = BackupPoint {
        gtid_executed: manifests[0].files[100].previous_gtids.clone(),
        dump_end: early,
    };
    group.bench_function("window/10000 files/5 sites", |b| {
        b.iter(|| coverage.window(black_box(&point), &GtidSet::new()))
    });
    group.bench_function("from_manifests+window/10000 files/5 sites", |b| {
        b.iter(|| {
            let coverage = Coverage::from_manifests(black_box(&manifests).iter());
            coverage.window(&point, &GtidSet::new())
        })
    });
    group.finish();
}

criterion_group!(benches, coverage);
criterion_main!(benches);
