//! Replay throughput: our replay step (`bloodraven_replay::replay`: one `mysql --binary-mode`
//! session fed by `mysqlbinlog --include-gtids=<segment>` per segment, with the R2/R6 proofs)
//! against `mysqlbinlog <files> | mysql` alone, over the same archived binlogs, in the same
//! run, process against process. Each side replays into its own fresh server loaded from the
//! same dump, in the order ours, pipe, pipe, ours (each figure is the mean of its two runs).
//! Real MySQL 9.7 (`source scripts/provision.sh`).
//!
//! Scale: `BLOODRAVEN_BENCH_REPLAY_TXNS` transactions (default 20000), one row insert each,
//! in 4 binlog files. Prints `BENCH` lines (scripts/bench.sh).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "a benchmark harness")]
#![allow(clippy::print_stdout, reason = "BENCH lines on stdout")]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bloodraven_archive::reader::{ReaderKey, ReaderOptions};
use bloodraven_pitr::{BackupMeta, Input, Limits, Request, plan};
use bloodraven_replay::download::{Opened, download};
use bloodraven_replay::replay::{Tools, gtid_executed, replay};
use jiff::Timestamp;

#[path = "../tests/support/mod.rs"]
mod support;
use support::{archive_sealed, connection, started, tool};

const UID: &str = "6a1e0c1e-0000-4000-8000-00000000c001";

/// Runs `program args`, stdin from `input`, stdout to `output`; panics on failure.
async fn run(program: &Path, args: &[String], input: Option<&Path>, output: Option<&Path>) {
    let mut command = tokio::process::Command::new(program);
    command.args(args).kill_on_drop(true);
    command.stdin(match input {
        Some(path) => std::fs::File::open(path).unwrap().into(),
        None => std::process::Stdio::null(),
    });
    command.stdout(match output {
        Some(path) => std::fs::File::create(path).unwrap().into(),
        None => std::process::Stdio::null(),
    });
    command.stderr(std::process::Stdio::piped());
    let out =
        tokio::time::timeout(Duration::from_secs(600), command.spawn().unwrap().wait_with_output())
            .await
            .expect("a client tool within 600 s")
            .unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::main]
async fn main() {
    let n: u32 = std::env::var("BLOODRAVEN_BENCH_REPLAY_TXNS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(20_000);
    let mysql = tool("BLOODRAVEN_MYSQL");
    let mysqlbinlog = tool("BLOODRAVEN_MYSQLBINLOG");
    let mysqldump = tool("BLOODRAVEN_MYSQLDUMP");
    let work = tempfile::tempdir().unwrap();

    // The source: an empty table dumped, then n one-row transactions in 4 files.
    let source = started("replay-bench-src", 1).await;
    source
        .execute(&[
            "CREATE DATABASE b",
            "CREATE TABLE b.t (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL)",
        ])
        .await
        .unwrap();
    source.flush_binary_logs().await.unwrap();
    let dump = work.path().join("dump.sql");
    let mut dump_args = connection(&source);
    dump_args.extend(
        ["--single-transaction", "--set-gtid-purged=ON", "--databases", "b"].map(str::to_owned),
    );
    run(&mysqldump, &dump_args, None, Some(&dump)).await;
    let backup_gtids = source.gtid_executed().await.unwrap();
    let dump_end = Timestamp::now();
    for part in 0..4 {
        let sql = work.path().join(format!("part{part}.sql"));
        let mut text = String::new();
        for id in (part * n / 4)..((part + 1) * n / 4) {
            text.push_str(&format!(
                "INSERT INTO b.t VALUES ({id}, 'row {id} of the replay bench');\n"
            ));
        }
        std::fs::write(&sql, text).unwrap();
        run(&mysql, &connection(&source), Some(&sql), None).await;
        source.flush_binary_logs().await.unwrap();
    }
    let expected = source.gtid_executed().await.unwrap();
    let (store, root) = archive_sealed(&source, UID, "bench", &work.path().join("store")).await;
    drop(source);

    let staging = work.path().join("staging");
    let Opened::Archive(downloaded) =
        download(&store, &root, ReaderOptions::new(ReaderKey::None), Some(&staging)).await.unwrap()
    else {
        panic!("the archive was refused")
    };
    let backup = BackupMeta::complete(backup_gtids, dump_end, UID, &downloaded.history.archive_id);
    let planned = plan(Input {
        history: &downloaded.history,
        open_refusal: None,
        backup: &backup,
        request: &Request::default(),
        limits: Limits::default(),
    })
    .unwrap_or_else(|refusal| panic!("refused: {refusal}"));
    assert_eq!(planned.certified, expected, "latest certifies everything");

    let mut paths: Vec<&PathBuf> = Vec::new();
    for segment in &planned.segments {
        let path = &downloaded.staged[&segment.key];
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    let quote = |text: &str| format!("'{}'", text.replace('\'', "'\\''"));

    // Ours, pipe, pipe, ours: each into its own fresh server loaded from the same dump, so
    // neither side always runs first (cold page cache) or last (a busier machine).
    let mut ours_runs = Vec::new();
    let mut pipe_runs = Vec::new();
    for (round, is_ours) in [true, false, false, true].into_iter().enumerate() {
        let id = u32::try_from(round).unwrap() + 2;
        let site =
            started(if is_ours { "replay-bench-ours" } else { "replay-bench-pipe" }, id).await;
        run(&mysql, &connection(&site), Some(&dump), None).await;
        let tools = Tools {
            mysql: mysql.clone(),
            mysqlbinlog: mysqlbinlog.clone(),
            connection: connection(&site),
        };
        if is_ours {
            let started_at = Instant::now();
            let replayed =
                replay(&planned, &downloaded.staged, &tools, &bloodraven_gtid::GtidSet::new())
                    .await
                    .unwrap();
            ours_runs.push(started_at.elapsed().as_secs_f64());
            assert_eq!(replayed.executed, expected);
        } else {
            // mysqlbinlog | mysql alone, the same staged files in the same order.
            let script = format!(
                "{} {} | {} {} --binary-mode",
                quote(&mysqlbinlog.display().to_string()),
                paths.iter().map(|p| quote(&p.display().to_string())).collect::<Vec<_>>().join(" "),
                quote(&mysql.display().to_string()),
                connection(&site).iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "),
            );
            let started_at = Instant::now();
            let status =
                tokio::process::Command::new("sh").args(["-c", &script]).status().await.unwrap();
            pipe_runs.push(started_at.elapsed().as_secs_f64());
            assert!(status.success(), "{script}");
            assert_eq!(gtid_executed(&tools).await.unwrap(), expected);
        }
        drop(site);
    }
    let ours = ours_runs.iter().sum::<f64>() / 2.0;
    let pipe = pipe_runs.iter().sum::<f64>() / 2.0;

    let files = paths.len();
    println!(
        "BENCH pitr/replay_{n}_txns/ours {ours:.2} s files={files} txns_per_s={:.0} runs={:.2}s+{:.2}s",
        f64::from(n) / ours,
        ours_runs[0],
        ours_runs[1]
    );
    println!(
        "BENCH pitr/replay_{n}_txns/mysqlbinlog_pipe {pipe:.2} s files={files} txns_per_s={:.0} runs={:.2}s+{:.2}s",
        f64::from(n) / pipe,
        pipe_runs[0],
        pipe_runs[1]
    );
    println!(
        "BENCH pitr/replay_{n}_txns/ratio {:.2} x ours={ours:.2}s pipe={pipe:.2}s order=ours,pipe,pipe,ours",
        ours / pipe
    );
}
