//! Benchmarks: parsing a 1 MB `@@gtid_executed` text, and union /
//! intersection / difference / subset of two sets of 100,000 intervals over
//! 50 UUIDs (plus 10,000 and 1,000,000 to show that the cost is linear).
//!
//! Run: `cargo bench -p bloodraven-gtid --bench gtid`.

use std::hint::black_box;

use bloodraven_gtid::{GtidSet, Uuid};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const UUID_COUNT: usize = 50;
const TEXT_BYTES: usize = 1_000_000;

/// A small deterministic generator (xorshift64*), so runs compare.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

fn uuids(rng: &mut Rng) -> Vec<Uuid> {
    (0..UUID_COUNT)
        .map(|_| {
            let mut bytes = [0u8; 16];
            bytes[..8].copy_from_slice(&rng.next().to_le_bytes());
            bytes[8..].copy_from_slice(&rng.next().to_le_bytes());
            Uuid::from_bytes(bytes)
        })
        .collect()
}

/// `per_uuid` separated intervals for each UUID, with random lengths and gaps
/// and transaction numbers in the millions (realistic digit counts).
fn random_set(rng: &mut Rng, uuids: &[Uuid], per_uuid: usize) -> GtidSet {
    let mut set = GtidSet::new();
    for &uuid in uuids {
        let mut next = 1 + rng.below(1000);
        for _ in 0..per_uuid {
            let start = next;
            let end = start + rng.below(300);
            set.insert_interval(uuid, None, start, end).expect("generated intervals are valid");
            next = end + 2 + rng.below(300);
        }
    }
    set
}

/// A gtid_executed text of about `TEXT_BYTES` bytes.
fn gtid_executed_text() -> String {
    let mut per_uuid = 1000;
    loop {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let uuids = uuids(&mut rng);
        let text = random_set(&mut rng, &uuids, per_uuid).to_string();
        if text.len() >= TEXT_BYTES {
            return text;
        }
        per_uuid = per_uuid * TEXT_BYTES / text.len() + 1;
    }
}

fn parse(c: &mut Criterion) {
    let text = gtid_executed_text();
    let set: GtidSet = text.parse().expect("generated text parses");
    let mut group = c.benchmark_group("gtid_executed_1mb");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("parse", |b| b.iter(|| black_box(&text).parse::<GtidSet>()));
    group.bench_function("format", |b| b.iter(|| black_box(&set).to_string()));
    // The same set written backwards (sources and intervals in descending
    // order): the parser's worst case, one sort per source.
    let mut reversed_parts: Vec<String> = Vec::new();
    for source in set.sources() {
        let items: Vec<String> = source
            .intervals()
            .iter()
            .rev()
            .map(|interval| format!("{}-{}", interval.start, interval.end))
            .collect();
        reversed_parts.push(format!("{}:{}", source.uuid(), items.join(":")));
    }
    reversed_parts.reverse();
    let reversed = reversed_parts.join(",\n");
    assert_eq!(reversed.parse::<GtidSet>().expect("reversed text parses"), set);
    group.throughput(Throughput::Bytes(reversed.len() as u64));
    group.bench_function("parse_reversed", |b| b.iter(|| black_box(&reversed).parse::<GtidSet>()));
    group.finish();
}

fn operations(c: &mut Criterion) {
    for total_intervals in [10_000, 100_000, 1_000_000] {
        let per_uuid = total_intervals / UUID_COUNT;
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let uuids = uuids(&mut rng);
        let left = random_set(&mut rng, &uuids, per_uuid);
        let right = random_set(&mut rng, &uuids, per_uuid);
        let union = left.union(&right);
        let mut group = c.benchmark_group("two_sets_50_uuids");
        // Elements = intervals of both inputs, so time per element is ns per interval.
        group.throughput(Throughput::Elements(2 * total_intervals as u64));
        group.bench_with_input(BenchmarkId::new("union", total_intervals), &(), |b, ()| {
            b.iter(|| black_box(&left).union(black_box(&right)))
        });
        group.bench_with_input(BenchmarkId::new("intersection", total_intervals), &(), |b, ()| {
            b.iter(|| black_box(&left).intersection(black_box(&right)))
        });
        group.bench_with_input(BenchmarkId::new("difference", total_intervals), &(), |b, ()| {
            b.iter(|| black_box(&left).difference(black_box(&right)))
        });
        // A true subset walks both sets to the end (a false one can stop early).
        group.bench_with_input(BenchmarkId::new("subset_true", total_intervals), &(), |b, ()| {
            b.iter(|| black_box(&left).is_subset(black_box(&union)))
        });
        group.finish();
    }
}

criterion_group!(benches, parse, operations);
criterion_main!(benches);
