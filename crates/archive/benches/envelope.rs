//! BRV1 envelope throughput: seal and open a 16 MiB binlog-sized object in memory (the
//! archiver's upload and the restore's download each do one per archived file).
//!
//! `cargo bench -p bloodraven-archive --bench envelope` (`scripts/bench.sh envelope`).

use std::hint::black_box;

use bloodraven_archive::envelope::{EnvelopeKey, SealRandom, open, seal};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const LEN: usize = 16 << 20;

fn envelope(c: &mut Criterion) {
    let plain: Vec<u8> = (0..LEN).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let key = EnvelopeKey::from_passphrase(b"a passphrase from the key snapshot");
    let random = SealRandom::from_bytes([0x42; SealRandom::LEN]);
    let context = b"bloodraven/pitr/binlog-object/v1\0ar1-x\0iad/mysql-bin.000001.x";
    let mut group = c.benchmark_group("envelope");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(LEN as u64));
    group.bench_function("seal_16mib", |b| {
        b.iter(|| seal("bench", black_box(&plain), &key, context, &random))
    });
    let sealed = seal("bench", &plain, &key, context, &random).expect("seal");
    group.bench_function("open_16mib", |b| {
        b.iter(|| open("bench", black_box(&sealed), &key, context))
    });
    group.finish();
}

criterion_group!(benches, envelope);
criterion_main!(benches);
