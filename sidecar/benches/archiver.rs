//! Archiver benchmarks (`cargo bench -p bloodraven-sidecar --bench archiver`): upload
//! throughput to the PVC store and to SeaweedFS, and the seal-to-archived time of one scan
//! after a rotation (p50/p99). Prints `BENCH <id> <value> <unit> [goal=…]` lines for
//! `scripts/bench.sh`.
//!
//! Files are real binlog v4 files written by `bloodraven-binlog`'s `Writer` (CRC32, rows
//! events), so each upload includes the scan (coverage), the content id and the store write.
//! The seal-to-archived time measures the scan that follows a rotation; the daemon adds at
//! most its scan floor (`ARCHIVE_SCAN_FLOOR`, 1 s) of detection delay on top.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a benchmark binary: it reports on stdout and fails loudly"
)]

use std::path::Path;
use std::time::{Duration, Instant};

use bloodraven_archive::descriptor::SourceRef;
use bloodraven_archive::reader::ReaderKey;
use bloodraven_archive::{ArchiveId, Destination};
use bloodraven_binlog::{RowsTable, TransactionBody, TransactionSpec, Writer, WriterOptions};
use bloodraven_gtid::{Gtid, GtidSet, Uuid};
use bloodraven_sidecar::archiver::episode::{Observation, Probe};
use bloodraven_sidecar::archiver::integrity::IntegritySettings;
use bloodraven_sidecar::archiver::local::LocalBinlogs;
use bloodraven_sidecar::archiver::retention::NoCutoff;
use bloodraven_sidecar::archiver::session::WriterIdentity;
use bloodraven_sidecar::archiver::{Archiver, ArchiverConfig};
use bloodraven_store::{ArchiveRoot, FsStore, ObjectStore};
use jiff::Timestamp;

const UUID: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

/// The daemon's default `ARCHIVE_SCAN_FLOOR`: how often it stats the binlog index.
const SCAN_FLOOR: Duration = Duration::from_secs(1);

/// A binlog of about `mib` MiB: transactions of one 8 KiB row, GTIDs from `first`.
fn binlog(first: u64, mib: usize) -> (Vec<u8>, u64) {
    let uuid: Uuid = UUID.parse().unwrap();
    let mut writer =
        Writer::new(&WriterOptions { create_timestamp: 1_800_000_000, ..WriterOptions::default() });
    let previous: GtidSet =
        if first > 1 { format!("{UUID}:1-{}", first - 1).parse().unwrap() } else { GtidSet::new() };
    writer.previous_gtids(&previous, 1_800_000_000).unwrap();
    let table = RowsTable { schema: "app".into(), table: "t".into(), table_id: 42 };
    let mut gno = first;
    while writer.position() < (mib as u64) << 20 {
        writer
            .transaction(&TransactionSpec {
                gtid: Some(Gtid::new(uuid, gno)),
                server_id: 1,
                original_commit_us: 1_800_000_000_000_000 + gno,
                immediate_commit_us: 1_800_000_000_000_000 + gno,
                last_committed: 0,
                sequence_number: 1,
                body: TransactionBody::Rows {
                    table: table.clone(),
                    rows: vec![(gno as i64, vec![7u8; 8192])],
                },
                compress: false,
            })
            .unwrap();
        gno += 1;
    }
    writer.rotate("next", 1_800_000_000).unwrap();
    (writer.into_bytes(), gno)
}

fn identity(destination: &Destination, key: ReaderKey) -> WriterIdentity {
    let normalized = destination.normalize().unwrap();
    WriterIdentity {
        source: SourceRef { namespace: "bench".into(), name: "g".into(), uid: "uid-bench".into() },
        archive_id: ArchiveId::derive("uid-bench", &normalized),
        key,
        site: "a".into(),
    }
}

fn settings() -> IntegritySettings {
    IntegritySettings {
        binlog_format: "ROW".into(),
        binlog_row_image: "FULL".into(),
        replica_preserve_commit_order: "1".into(),
        ..Default::default()
    }
}

/// Writes `files` (name → bytes) and an index whose last entry is an empty active file.
fn lay_out(dir: &Path, files: &[(String, Vec<u8>)], active: &str) {
    let mut index = String::new();
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
        index.push_str(&format!("./{name}\n"));
    }
    std::fs::write(dir.join(active), b"").unwrap();
    index.push_str(&format!("./{active}\n"));
    std::fs::write(dir.join("binlog.index"), index).unwrap();
}

async fn run<S: ObjectStore>(label: &str, store: S, destination: Destination, key: ReaderKey) {
    let data = tempfile::tempdir().unwrap();
    // Throughput: 8 files of 16 MiB in one scan.
    let mut files = Vec::new();
    let mut next = 1;
    for n in 1..=8 {
        let (bytes, after) = binlog(next, 16);
        next = after;
        files.push((format!("binlog.{n:06}"), bytes));
    }
    let total: usize = files.iter().map(|(_, b)| b.len()).sum();
    lay_out(data.path(), &files, "binlog.000009");
    let config = ArchiverConfig {
        identity: identity(&destination, key),
        destination: destination.normalize().unwrap(),
        root: ArchiveRoot::under_profile("bench").unwrap(),
        storage_type: label.to_uppercase(),
        probe_interval: Duration::from_secs(5),
        retention_interval: Duration::from_secs(3600),
        key_revision: None,
    };
    let mut archiver =
        Archiver::open(store, config, LocalBinlogs::new(data.path(), "binlog.index"), NoCutoff)
            .await;
    let now = Timestamp::now();
    archiver.tracker().lock().unwrap().observe(Probe::Observed(Observation {
        read_only: false,
        server_uuid: UUID.parse().unwrap(),
        server_id: 1,
        gtid_executed: format!("{UUID}:1-{}", next - 1).parse().unwrap(),
        started_at: now,
        returned_at: now,
    }));
    // The first scan creates the descriptor and saves the promotion record, then uploads.
    let started = Instant::now();
    let report = archiver.scan(Ok(settings()), Timestamp::now()).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(report.uploaded.len(), 8);
    let mb_s = total as f64 / 1e6 / elapsed.as_secs_f64();
    // Goals live in scripts/bench/goals.tsv (with their units).
    println!("BENCH archiver/upload-throughput/{label} {mb_s:.1} MB/s files=8 file_mib=16");

    // Seal-to-archived: 40 rotations of a 1 MiB file, one scan each.
    let mut times = Vec::new();
    for n in 10..50 {
        let (bytes, after) = binlog(next, 1);
        next = after;
        files.push((format!("binlog.{n:06}"), bytes));
        lay_out(data.path(), &files, &format!("binlog.{:06}", n + 1));
        let started = Instant::now();
        let report = archiver.scan(Ok(settings()), Timestamp::now()).await.unwrap();
        times.push(started.elapsed());
        assert_eq!(report.uploaded.len(), 1);
    }
    times.sort();
    let pct = |p: f64| {
        times[((times.len() as f64 * p).ceil() as usize).saturating_sub(1)].as_secs_f64() * 1000.0
    };
    println!("BENCH archiver/seal-to-archived-scan/{label}/p50 {:.1} ms file_mib=1", pct(0.5));
    println!("BENCH archiver/seal-to-archived-scan/{label}/p99 {:.1} ms file_mib=1", pct(0.99));
    // The daemon notices a rotation with a stat of the index every scan floor (1 s by
    // default): the worst case from seal to archived is the floor plus the scan.
    let floor_ms = SCAN_FLOOR.as_secs_f64() * 1000.0;
    println!(
        "BENCH archiver/seal-to-archived/{label}/p99 {:.1} ms floor_ms={floor_ms:.0} file_mib=1",
        floor_ms + pct(0.99)
    );
}

fn main() {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let pvc = tempfile::tempdir().unwrap();
    runtime.block_on(run(
        "pvc",
        FsStore::new(pvc.path()).unwrap(),
        Destination::Pvc { namespace: "bench".into(), claim: "c".into(), sub_path: String::new() },
        ReaderKey::None,
    ));
    // Encrypted mode: keyed content ids and the BRV1 envelope on every upload.
    let encrypted = tempfile::tempdir().unwrap();
    runtime.block_on(run(
        "pvc-encrypted",
        FsStore::new(encrypted.path()).unwrap(),
        Destination::Pvc { namespace: "bench".into(), claim: "c".into(), sub_path: String::new() },
        ReaderKey::Passphrase {
            algorithm: "AES-256-GCM".into(),
            passphrase: b"a passphrase from the key snapshot".to_vec(),
        },
    ));
    let weed = bloodraven_store::testing::SeaweedFs::start().unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(async {
        let s3 = weed.bucket_store("bench", "").await.unwrap();
        let destination = Destination::S3 {
            bucket: "bench".into(),
            prefix: String::new(),
            endpoint: weed.endpoint().to_owned(),
        };
        run("seaweedfs", s3, destination, ReaderKey::None).await;
    });
}
