//! Replay on real MySQL 9.7: a source with writes, a mysqldump with GTIDs, binlogs archived
//! with [`LocalArchive`] into a filesystem store, a plan to a target time, the replay into a
//! fresh server loaded from the dump, and the proof: `gtid_executed` equals the plan's certified
//! set, which is exactly what the source had executed at the target.
//!
//! Needs `source scripts/provision.sh` (BLOODRAVEN_MYSQL*); fails loudly naming it otherwise.

use std::path::Path;
use std::time::Duration;

use bloodraven_archive::reader::{ReaderKey, ReaderOptions};
use bloodraven_gtid::GtidSet;
use bloodraven_pitr::{BackupMeta, Input, Limits, Outcome, Request, plan};
use bloodraven_replay::download::{Opened, download};
use bloodraven_replay::lines::{VerdictSource, result_line, verdict_line};
use bloodraven_replay::local::LocalArchive;
use bloodraven_replay::replay::{Tools, replay};
use bloodraven_sites::mysqld::Instance;
use jiff::{SignedDuration, Timestamp};
use mysql_async::prelude::Queryable as _;

use crate::support::{
    archive_sealed, connection, destination, sealed, source_ref, started, tool, write_archive,
};

const UID: &str = "6a1e0c1e-0000-4000-8000-00000000a001";

/// Inserts rows `from..=to` one transaction each, `pause` apart.
async fn insert(site: &Instance, from: u32, to: u32, pause: Duration) {
    let mut conn = site.root_conn().await.unwrap();
    for id in from..=to {
        conn.exec_drop("INSERT INTO pitr.t (id, v) VALUES (?, ?)", (id, format!("row {id}")))
            .await
            .unwrap();
        tokio::time::sleep(pause).await;
    }
    conn.disconnect().await.unwrap();
}

async fn count(site: &Instance) -> u64 {
    let mut conn = site.root_conn().await.unwrap();
    let n: Option<u64> = conn.query_first("SELECT COUNT(*) FROM pitr.t").await.unwrap();
    conn.disconnect().await.unwrap();
    n.unwrap_or_default()
}

/// Runs a client tool with `args`, stdin from `input` when given, stdout to `output` when given.
pub(crate) async fn run(
    program: &Path,
    args: &[String],
    input: Option<&Path>,
    output: Option<&Path>,
) {
    let mut command = tokio::process::Command::new(program);
    command.args(args).kill_on_drop(true);
    if let Some(input) = input {
        command.stdin(std::fs::File::open(input).unwrap());
    }
    if let Some(output) = output {
        command.stdout(std::fs::File::create(output).unwrap());
    }
    // `output()` would capture stdout over the file: spawn with stderr piped instead.
    command.stderr(std::process::Stdio::piped());
    if output.is_none() {
        command.stdout(std::process::Stdio::null());
    }
    let child = command.spawn().unwrap();
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{} did not finish within 120 s", program.display()))
        .unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}\n{}",
        program.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Sleeps until just after the next whole second at least `after` from now; returns it.
pub(crate) async fn whole_second_after(after: SignedDuration) -> Timestamp {
    let earliest = Timestamp::now().checked_add(after).unwrap();
    let target = Timestamp::from_second(earliest.as_second() + 1).unwrap();
    let wait = target.duration_since(Timestamp::now()) + SignedDuration::from_millis(200);
    tokio::time::sleep(wait.unsigned_abs()).await;
    target
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_covered_target_replays_and_gtid_executed_equals_the_certified_set() {
    let mysql = tool("BLOODRAVEN_MYSQL");
    let mysqlbinlog = tool("BLOODRAVEN_MYSQLBINLOG");
    let mysqldump = tool("BLOODRAVEN_MYSQLDUMP");
    let work = tempfile::tempdir().unwrap();

    // The source: a table, writes before the backup, the dump, writes after it.
    let source = started("pitr-src", 1).await;
    source
        .execute(&[
            "CREATE DATABASE pitr",
            "CREATE TABLE pitr.t (id INT PRIMARY KEY, v VARCHAR(32) NOT NULL)",
        ])
        .await
        .unwrap();
    insert(&source, 1, 20, Duration::ZERO).await;
    source.flush_binary_logs().await.unwrap();
    let dump = work.path().join("dump.sql");
    let mut dump_args = connection(&source);
    dump_args.extend(
        ["--single-transaction", "--set-gtid-purged=ON", "--databases", "pitr"].map(str::to_owned),
    );
    run(&mysqldump, &dump_args, None, Some(&dump)).await;
    let backup_gtids = source.gtid_executed().await.unwrap();
    let dump_end = Timestamp::now();
    // Writes after the dump (one file rotation in the middle), then the target, then more.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    insert(&source, 21, 30, Duration::from_millis(30)).await;
    source.flush_binary_logs().await.unwrap();
    insert(&source, 31, 40, Duration::from_millis(30)).await;
    let at_target = source.gtid_executed().await.unwrap();
    let target = whole_second_after(SignedDuration::from_millis(100)).await;
    insert(&source, 41, 60, Duration::from_millis(20)).await;
    source.flush_binary_logs().await.unwrap();

    // Archive every sealed binlog (all but the active one).
    let (store, root) =
        archive_sealed(&source, UID, "orders-pitr", &work.path().join("store")).await;

    // pitr-download and the plan.
    let staging = work.path().join("staging");
    let Opened::Archive(downloaded) =
        download(&store, &root, ReaderOptions::new(ReaderKey::None), Some(&staging)).await.unwrap()
    else {
        panic!("the archive was refused")
    };
    let backup =
        BackupMeta::complete(backup_gtids.clone(), dump_end, UID, &downloaded.history.archive_id);
    let target_text = target.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let request = Request { target: Some(target_text.clone()), ..Request::default() };
    let planned = plan(Input {
        history: &downloaded.history,
        open_refusal: None,
        backup: &backup,
        request: &request,
        limits: Limits::default(),
    })
    .unwrap_or_else(|refusal| panic!("refused: {refusal:?}"));
    assert_eq!(planned.outcome, Outcome::TargetCovered);
    assert_eq!(
        planned.certified, at_target,
        "the certified set is what the source had executed at the target"
    );
    assert!(planned.segments.len() >= 2, "two files after the dump: {:?}", planned.segments);

    // The restore: a fresh server, its own transactions, the dump, the replay, the proof.
    let restored = started("pitr-dst", 2).await;
    let local: GtidSet = restored.gtid_executed().await.unwrap();
    run(&mysql, &connection(&restored), Some(&dump), None).await;
    let tools = Tools { mysql: mysql.clone(), mysqlbinlog, connection: connection(&restored) };
    let replayed = replay(&planned, &downloaded.staged, &tools, &local)
        .await
        .unwrap_or_else(|error| panic!("{error}\n{}", restored.error_log_tail(20)));
    assert_eq!(replayed.executed, at_target.union(&local));
    assert_eq!(replayed.lines.len(), planned.segments.len());
    assert_eq!(count(&restored).await, 40, "rows 1..=40: the writes before the target");
    let verdict = verdict_line(
        &planned,
        Some(target),
        &VerdictSource {
            archive: downloaded.history.archive_id.clone(),
            encryption_mode: "None".into(),
            source_uid: UID.into(),
            source_namespace: "prod".into(),
            source_name: "orders".into(),
        },
        &replayed.executed,
    );
    assert!(verdict.contains("outcome=TargetCovered"), "{verdict}");
    println!("{}", replayed.lines.join("\n"));
    println!("{}", result_line(&replayed.executed));
    println!("{verdict}");

    // A session that fails mid-stream (a row the replay inserts is already there) ends the
    // replay with mysql's own error and exit, never a success or a hang.
    let clashing = started("pitr-clash", 3).await;
    run(&mysql, &connection(&clashing), Some(&dump), None).await;
    clashing.execute(&["INSERT INTO pitr.t (id, v) VALUES (25, 'already here')"]).await.unwrap();
    let local = clashing.gtid_executed().await.unwrap().difference(&backup_gtids);
    let tools = Tools { connection: connection(&clashing), ..tools };
    let failed = tokio::time::timeout(
        Duration::from_secs(120),
        replay(&planned, &downloaded.staged, &tools, &local),
    )
    .await
    .expect("a failing replay ends within 120 s");
    let error = failed.expect_err("the duplicate row stops the replay").to_string();
    assert!(error.starts_with("BLOODRAVEN_PITR_FAILED: mysql exit=1 segment="), "{error}");
    assert!(error.contains("Duplicate entry '25'"), "{error}");
}

/// Waits until `replica` has executed everything in `set`.
async fn caught_up(replica: &Instance, set: &GtidSet) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let executed = replica.gtid_executed().await.unwrap();
        if set.difference(&executed).is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} did not apply {set:#} within 60 s (has {executed:#})",
            replica.name()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The spec's lossy failover on real servers: a replicates to b; the backup is taken on a; b is
/// cut off and a writes a tail (D) that b never receives; b is promoted (a promotion record
/// more than δ after D) and writes. A target after b wrote refuses
/// `PITRArchiveDivergentHistory` with D exactly a's lost tail; with `excludeGtids: D` it
/// replays b's history and the restored server holds exactly a's rows before the cut and b's
/// rows before the target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lost_tail_is_refused_as_d_and_excluding_it_replays_the_promoted_history() {
    let mysql = tool("BLOODRAVEN_MYSQL");
    let mysqlbinlog = tool("BLOODRAVEN_MYSQLBINLOG");
    let mysqldump = tool("BLOODRAVEN_MYSQLDUMP");
    let work = tempfile::tempdir().unwrap();
    let a = started("pitr-a", 11).await;
    let b = started("pitr-b", 12).await;
    b.replicate_from(a.addr(), &bloodraven_sites::accounts::REPLICATION).await.unwrap();
    a.execute(&[
        "CREATE DATABASE pitr",
        "CREATE TABLE pitr.t (id INT PRIMARY KEY, v VARCHAR(32) NOT NULL)",
    ])
    .await
    .unwrap();
    insert(&a, 1, 20, Duration::ZERO).await;
    let dump = work.path().join("dump.sql");
    let mut dump_args = connection(&a);
    dump_args.extend(
        ["--single-transaction", "--set-gtid-purged=ON", "--databases", "pitr"].map(str::to_owned),
    );
    run(&mysqldump, &dump_args, None, Some(&dump)).await;
    let backup_gtids = a.gtid_executed().await.unwrap();
    let dump_end = Timestamp::now();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    insert(&a, 21, 30, Duration::from_millis(20)).await;
    let shared = a.gtid_executed().await.unwrap();
    caught_up(&b, &shared).await;
    // The partition: b stops receiving; a's tail is lost.
    b.stop_replica().await.unwrap();
    insert(&a, 31, 35, Duration::from_millis(20)).await;
    let lost = a.gtid_executed().await.unwrap().difference(&shared);
    assert_eq!(lost.count(), 5);
    // The promotion, observed more than δ after the tail's last commit.
    tokio::time::sleep(Duration::from_secs(6)).await;
    b.reset_replica_all().await.unwrap();
    let b_uuid: bloodraven_gtid::Uuid = b.server_uuid().await.unwrap().parse().unwrap();
    let record = bloodraven_archive::PromotionRecord {
        kind: bloodraven_archive::manifest::RecordKind::Promotion,
        server_uuid: b_uuid,
        server_id: 12,
        gtid_executed: b.gtid_executed().await.unwrap(),
        observed_at: Timestamp::now(),
        probe_interval: Some(SignedDuration::from_secs(1)),
        read_only_gtid_executed: None,
        extra: Default::default(),
    };
    tokio::time::sleep(Duration::from_millis(1200)).await;
    insert(&b, 36, 45, Duration::from_millis(20)).await;
    let at_target = b.gtid_executed().await.unwrap();
    let target = whole_second_after(SignedDuration::from_millis(100)).await;
    insert(&b, 46, 50, Duration::from_millis(20)).await;
    for site in [&a, &b] {
        site.flush_binary_logs().await.unwrap();
    }

    // Both sites' binlogs and b's promotion record, archived.
    let now = Timestamp::now();
    let mut archive = LocalArchive::new(source_ref(UID), &destination("orders-pitr"), now, "a");
    for (name, site) in [("a", &a), ("b", &b)] {
        let mut names = site.binary_logs().await.unwrap();
        names.pop();
        archive.add(name, &sealed(site, &names), now).unwrap();
    }
    archive.record("b", record);
    let (store, root) = write_archive(archive, &work.path().join("store")).await;
    let staging = work.path().join("staging");
    let Opened::Archive(downloaded) =
        download(&store, &root, ReaderOptions::new(ReaderKey::None), Some(&staging)).await.unwrap()
    else {
        panic!("the archive was refused")
    };
    let backup =
        BackupMeta::complete(backup_gtids.clone(), dump_end, UID, &downloaded.history.archive_id);
    let target_text = target.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let plan_with = |exclude: &str| {
        let request = Request {
            target: Some(target_text.clone()),
            exclude_gtids: exclude.to_owned(),
            allow_partial: false,
        };
        plan(Input {
            history: &downloaded.history,
            open_refusal: None,
            backup: &backup,
            request: &request,
            limits: Limits::default(),
        })
    };
    let refusal = plan_with("").unwrap_err();
    assert_eq!(refusal.token, bloodraven_pitr::Token::ArchiveDivergentHistory, "{refusal}");
    assert_eq!(
        refusal.full_set.as_deref(),
        Some(lost.to_compact_string().as_str()),
        "D is exactly a's lost tail: {refusal}"
    );
    let planned = plan_with(&lost.to_compact_string()).unwrap_or_else(|r| panic!("{r}"));
    assert_eq!(planned.certified, at_target, "b's history at the target");
    assert_eq!(planned.excluded_divergent, lost);

    let restored = started("pitr-dst2", 13).await;
    let local = restored.gtid_executed().await.unwrap();
    run(&mysql, &connection(&restored), Some(&dump), None).await;
    let tools = Tools { mysql, mysqlbinlog, connection: connection(&restored) };
    let replayed = replay(&planned, &downloaded.staged, &tools, &local)
        .await
        .unwrap_or_else(|error| panic!("{error}\n{}", restored.error_log_tail(20)));
    assert_eq!(replayed.executed, at_target.union(&local));
    let mut conn = restored.root_conn().await.unwrap();
    let ids: Vec<u32> = conn.query("SELECT id FROM pitr.t ORDER BY id").await.unwrap();
    conn.disconnect().await.unwrap();
    let expected: Vec<u32> = (1..=30).chain(36..=45).collect();
    assert_eq!(ids, expected, "a's rows before the cut and b's before the target; no lost tail");
}
