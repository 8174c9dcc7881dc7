//! Plan over 10⁶ transactions / 10⁴ files / 5 sites, forward and reverse-ordered histories
//! (goal ≤ 1 s).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmark setup")]

use std::hint::black_box;

use bloodraven_gtid::{Gtid, GtidSet, Uuid};
use bloodraven_pitr::{
    BackupMeta, File, History, Input, Limits, Record, Request, RowBytes, Txn, plan,
};
use criterion::{Criterion, criterion_group, criterion_main};
use jiff::{SignedDuration, Timestamp};

const FILES: u64 = 10_000;
const PER_FILE: u64 = 100;
const SITES: u64 = 5;

fn at(second: u64) -> Timestamp {
    Timestamp::from_second(1_793_871_000 + second as i64).unwrap()
}

fn uuid(site: u64) -> Uuid {
    Uuid::from_bytes([0x10 + site as u8; 16])
}

/// The primary moves to the next site every FILES / SITES / 4 files (planned failovers); only
/// the primary archives. Commits are one second apart.
fn history(reverse: bool) -> (History, GtidSet, u64) {
    let mut files = Vec::new();
    let mut records = Vec::new();
    let mut executed = GtidSet::new();
    let mut next = vec![1u64; SITES as usize];
    let mut second = 0u64;
    let era = FILES / SITES / 4;
    let mut backup = GtidSet::new();
    for f in 0..FILES {
        let site = (f / era) % SITES;
        if f % era == 0 {
            records.push(Record {
                site: format!("s{site}"),
                label: format!("s{site}#{f}"),
                promotion: true,
                server_uuid: uuid(site),
                gtid_executed: executed.clone(),
                observed_at: at(second + 1),
                probe_interval: Some(SignedDuration::from_secs(5)),
            });
            second += 10;
        }
        let prev = executed.clone();
        let mut txns = Vec::with_capacity(PER_FILE as usize);
        let mut hint = GtidSet::new();
        for _ in 0..PER_FILE {
            second += 1;
            let gtid = Gtid::new(uuid(site), next[site as usize]);
            next[site as usize] += 1;
            executed.insert(&gtid).unwrap();
            hint.insert(&gtid).unwrap();
            txns.push(Txn {
                gtid: Some(gtid),
                commit: Some(at(second)),
                server_id: site as u32,
                xa: false,
                empty: false,
                max_event: 200,
            });
        }
        if f == 0 {
            backup = executed.clone();
        }
        files.push(File {
            site: format!("s{site}"),
            name: format!("mysql-bin.{f:06}"),
            key: format!("s{site}/mysql-bin.{f:06}"),
            size: PER_FILE * 300,
            prev,
            hint,
            last_event: Some(at(second)),
            quarantined: false,
            divergent: false,
            bytes: RowBytes::Read(txns),
        });
    }
    if reverse {
        files.reverse();
        records.reverse();
    }
    let history = History {
        archive_id: "ar1-bench".into(),
        files,
        records,
        marked: Default::default(),
        reset_epochs: Vec::new(),
    };
    (history, backup, second)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("plan_1e6_txns_1e4_files_5_sites");
    group.sample_size(10);
    for reverse in [false, true] {
        let (history, backup_set, last) = history(reverse);
        let backup = BackupMeta::complete(backup_set, at(PER_FILE + 20), "g", "ar1-bench");
        let request = Request {
            target: Some(at(last - 50).to_string()),
            exclude_gtids: String::new(),
            allow_partial: false,
        };
        let input = Input {
            history: &history,
            open_refusal: None,
            backup: &backup,
            request: &request,
            limits: Limits::default(),
        };
        let planned = plan(input).expect("the synthetic history plans");
        assert!(planned.segments.len() >= 19, "{}", planned.segments.len());
        let name = if reverse { "reverse" } else { "forward" };
        group.bench_function(format!("timestamp_{name}"), |b| b.iter(|| black_box(plan(input))));
        let latest = Request { target: None, ..request.clone() };
        let input = Input { request: &latest, ..input };
        plan(input).expect("latest plans");
        group.bench_function(format!("latest_{name}"), |b| b.iter(|| black_box(plan(input))));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
