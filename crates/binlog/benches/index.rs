//! GTID index pass throughput, and the ratio against MariaDB's `mariadb-binlog`.
//!
//! - `gtid_index/mysql_1gib`: `scan` over a 1 GiB in-memory MySQL-format file from
//!   the writer (row transactions of 4 rows x 200-byte BLOBs, about 1.2 KiB each,
//!   CRC32 on). Goal: at least 1 GB/s.
//! - `gtid_index/mysql_1gib_chunked_64k`: the same bytes fed to a `Scanner` in
//!   64 KiB chunks (the streaming path the sidecar uses).
//! - `gtid_index/mysql_zstd_256mib`: a file whose transactions are all zstd
//!   TRANSACTION_PAYLOADs (decompression dominates).
//! - `mariadb/*`: one MariaDB binlog written by a real MariaDB server (default
//!   about 1 GiB; `BLOODRAVEN_BENCH_MARIADB_MIB` sets the size), read from disk and
//!   scanned by us, versus `mariadb-binlog FILE > /dev/null` (default output, and
//!   `--base64-output=never`). The file is generated once and cached in
//!   `$BLOODRAVEN_BENCH_DIR` (default: the system temp dir, `bloodraven-bench/`).
//!
//! Run: `cargo bench -p bloodraven-binlog --bench index`. Generating the MariaDB
//! file takes minutes the first time.

#![allow(clippy::print_stderr)] // progress and file sizes for the person running the bench

use std::hint::black_box;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use bloodraven_binlog::{
    RowsTable, ScanOptions, Scanner, TransactionBody, TransactionSpec, Writer, WriterOptions, scan,
};
use bloodraven_gtid::{Gtid, Uuid};
use bloodraven_testkit::{MariaDb, MariaDbOptions, mariadb_binlog};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const UUID: Uuid = Uuid::from_bytes([
    0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62,
]);

/// A MySQL-format file of at least `target` bytes of row transactions.
fn mysql_file(target: usize, compress: bool) -> Vec<u8> {
    let mut writer = Writer::new(&WriterOptions::default());
    let table = RowsTable { schema: "shop".into(), table: "orders".into(), table_id: 91 };
    let mut gno = 1;
    // Compressible but not constant row data.
    let row = |seed: u64| -> Vec<u8> {
        (0..200).map(|i| b'a' + ((seed.wrapping_mul(31).wrapping_add(i)) % 26) as u8).collect()
    };
    while (writer.position() as usize) < target {
        let commit_us = 1_700_000_000_000_000 + gno * 1_000;
        let spec = TransactionSpec {
            gtid: Some(Gtid::new(UUID, gno)),
            server_id: 1,
            original_commit_us: commit_us,
            immediate_commit_us: commit_us,
            last_committed: gno as i64 - 1,
            sequence_number: gno as i64,
            body: TransactionBody::Rows {
                table: table.clone(),
                rows: (0..4).map(|i| (gno as i64 * 4 + i, row(gno * 4 + i as u64))).collect(),
            },
            compress,
        };
        // The specs are valid by construction; a failure here is a bench bug.
        if writer.transaction(&spec).is_err() {
            break;
        }
        gno += 1;
    }
    let _ = writer.rotate("binlog.000002", 1_700_000_100);
    writer.into_bytes()
}

fn index(c: &mut Criterion) {
    let mut group = c.benchmark_group("gtid_index");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));

    let bytes = mysql_file(1 << 30, false);
    let summary = scan(&bytes);
    assert!(summary.coverage.is_complete() && summary.problem.is_none(), "bench file is broken");
    eprintln!(
        "mysql_1gib: {} bytes, {} transactions, {} events",
        bytes.len(),
        summary.transactions.len(),
        summary.event_count
    );
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("mysql_1gib", |b| b.iter(|| black_box(scan(black_box(&bytes)))));
    group.bench_function("mysql_1gib_chunked_64k", |b| {
        b.iter(|| {
            let mut scanner = Scanner::new(ScanOptions::default());
            for chunk in bytes.chunks(64 << 10) {
                scanner.feed(black_box(chunk));
            }
            black_box(scanner.finish())
        })
    });
    drop(bytes);

    let bytes = mysql_file(256 << 20, true);
    assert!(scan(&bytes).coverage.is_complete(), "compressed bench file is broken");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("mysql_zstd_256mib", |b| b.iter(|| black_box(scan(black_box(&bytes)))));
    group.finish();
}

fn bench_dir() -> PathBuf {
    std::env::var_os("BLOODRAVEN_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("bloodraven-bench"))
}

/// A MariaDB binlog of about `mib` MiB from a real server, cached between runs.
fn mariadb_file(mib: u64) -> PathBuf {
    let path = bench_dir().join(format!("mariadb-{mib}mib.000001"));
    if path.exists() {
        return path;
    }
    std::fs::create_dir_all(bench_dir()).expect("creating the bench directory");
    let options = MariaDbOptions {
        extra_config: vec![
            "max_binlog_size=1073741824".into(),
            "sync_binlog=0".into(),
            "innodb_flush_log_at_trx_commit=0".into(),
            "innodb_buffer_pool_size=256M".into(),
        ],
        start_timeout: Duration::from_secs(120),
        ..MariaDbOptions::default()
    };
    let server = MariaDb::start_with(&options)
        .expect("starting MariaDB (run scripts/test.sh's install step)");
    server
        .sql(
            "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, \
             a VARCHAR(255), b BLOB) ENGINE=InnoDB",
        )
        .expect("creating the bench table");
    let first = server.binlog_files().expect("listing binlogs").remove(0);
    let target = mib << 20;
    // Autocommit inserts of four ~1 KiB rows: one transaction each, 5000 per client run.
    let insert = "INSERT INTO d.t (a, b) VALUES (REPEAT('a', 200), REPEAT(UUID(), 22)), \
        (REPEAT('b', 200), REPEAT(UUID(), 22)), (REPEAT('c', 200), REPEAT(UUID(), 22)), \
        (REPEAT('d', 200), REPEAT(UUID(), 22));\n";
    let script = bench_dir().join("workload.sql");
    std::fs::write(&script, insert.repeat(5000)).expect("writing the bench workload");
    loop {
        let size = std::fs::metadata(&first).map(|m| m.len()).unwrap_or(0);
        if size >= target {
            break;
        }
        eprintln!("mariadb bench file: {} of {} MiB", size >> 20, mib);
        server.sql_file(&script).expect("bench workload");
    }
    server.flush_binary_logs().expect("FLUSH BINARY LOGS");
    std::fs::copy(&first, &path).expect("caching the bench binlog");
    path
}

fn mariadb(c: &mut Criterion) {
    let mib = std::env::var("BLOODRAVEN_BENCH_MARIADB_MIB")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1000);
    let path = mariadb_file(mib);
    let tool = mariadb_binlog().expect("mariadb-binlog (run scripts/test.sh's install step)");
    let len = std::fs::metadata(&path).expect("bench binlog").len();
    let summary = scan(&std::fs::read(&path).expect("reading the bench binlog"));
    assert!(summary.coverage.is_complete(), "{:?}", summary.coverage.incomplete);
    eprintln!(
        "mariadb file: {} bytes, {} transactions, {} events",
        len,
        summary.transactions.len(),
        summary.event_count
    );
    drop(summary);

    let mut group = c.benchmark_group("mariadb");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(60));
    group.throughput(Throughput::Bytes(len));
    group.bench_function("bloodraven_read_and_scan", |b| {
        b.iter(|| {
            let bytes = std::fs::read(&path).expect("reading the bench binlog");
            black_box(scan(&bytes))
        })
    });
    for (name, args) in [
        ("mariadb_binlog_default", &[][..]),
        ("mariadb_binlog_base64_never", &["--base64-output=never"][..]),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let status = Command::new(&tool)
                    .args(args)
                    .arg(&path)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .expect("running mariadb-binlog");
                assert!(status.success());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, index, mariadb);
criterion_main!(benches);
