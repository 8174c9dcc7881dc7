//! Ledger verification of 100,000 acknowledged writes (the pure core, no IO). Goal (issue 11):
//! ≤ 1 s. `cargo bench -p bloodraven-sites --bench ledger`.

use std::time::{Duration, SystemTime};

use bloodraven_sites::ledger::{Attempt, Ledger, Outcome, verify};
use criterion::{Criterion, criterion_group, criterion_main};

const WRITES: u64 = 100_000;
/// Acknowledged writes the site misses (every 1000th).
const LOST_EVERY: u64 = 1_000;

fn ledger() -> (Ledger, Vec<u64>) {
    let mut ledger = Ledger::new("bench");
    let mut keys = Vec::new();
    for k in 1..=WRITES {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(k);
        let gtid = format!("3e11fa47-71ca-11e1-9e33-c80aa9429562:{k}").parse().ok();
        ledger.record(Attempt {
            key: k,
            started_at: at,
            ended_at: at,
            outcome: Outcome::Acknowledged { gtid },
        });
        if k % LOST_EVERY != 0 {
            keys.push(k);
        }
    }
    // The site returns its keys in its own order.
    keys.reverse();
    (ledger, keys)
}

fn bench(c: &mut Criterion) {
    let (ledger, keys) = ledger();
    let report = verify(&ledger, &keys);
    assert_eq!(report.lost.len() as u64, WRITES / LOST_EVERY);
    assert_eq!(report.lost_gtids().count(), u128::from(WRITES / LOST_EVERY));
    c.bench_function("ledger/verify_100k_acknowledged", |b| {
        b.iter(|| {
            let r = verify(std::hint::black_box(&ledger), std::hint::black_box(&keys));
            r.lost_gtids()
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
