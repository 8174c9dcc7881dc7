//! The spec's lossy failover on a 3-site group of real MySQL 9.7 servers in a star, with the
//! workload and its commit ledger: a backup; the replication links to the primary `a`
//! partitioned (the TCP proxy refuses them) while `a` keeps acknowledging writes (the tail D);
//! `a` SIGKILLed; `b` promoted and written to. A target after `b` wrote refuses
//! `PITRArchiveDivergentHistory` with D exactly `a`'s lost tail; with `excludeGtids: D` it
//! replays `b`'s history, and the ledger says which acknowledged writes the restored server
//! holds: exactly those whose GTID the plan certified.

use std::time::Duration;

use bloodraven_archive::reader::{ReaderKey, ReaderOptions};
use bloodraven_gtid::GtidSet;
use bloodraven_pitr::{BackupMeta, Input, Limits, Request, plan};
use bloodraven_replay::download::{Opened, download};
use bloodraven_replay::local::LocalArchive;
use bloodraven_replay::replay::{Tools, replay};
use bloodraven_sites::group::{Group, GroupSpec, replication_link_name};
use bloodraven_sites::ledger::{Ledger, Outcome};
use bloodraven_sites::proxy::Fault;
use bloodraven_sites::workload::{Workload, WorkloadConfig};
use jiff::{SignedDuration, Timestamp};
use mysql_async::prelude::Queryable as _;

use crate::real_mysql::{run, whole_second_after};
use crate::support::{connection, destination, sealed, source_ref, started, tool, write_archive};

const UID: &str = "6a1e0c1e-0000-4000-8000-00000000b001";
const WAIT: Duration = Duration::from_secs(120);

/// Writes through the group's primary link, keys from `first_key`, until `acknowledged` writes
/// were acknowledged; returns the ledger.
async fn write(group: &Group, first_key: u64, writer: &str, acknowledged: u64) -> Ledger {
    let mut config = WorkloadConfig::new(group.primary_link().addr());
    config.first_key = first_key;
    config.writer = writer.to_owned();
    let workload = Workload::start(config);
    workload
        .wait_acknowledged(acknowledged, WAIT)
        .await
        .unwrap_or_else(|e| panic!("{writer}: {acknowledged} acknowledged writes: {e}"));
    workload.stop().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_then_a_kill_loses_d_and_the_ledger_confirms_the_replayed_writes() {
    let mysql = tool("BLOODRAVEN_MYSQL");
    let mysqlbinlog = tool("BLOODRAVEN_MYSQLBINLOG");
    let mysqldump = tool("BLOODRAVEN_MYSQLDUMP");
    let work = tempfile::tempdir().unwrap();
    let mut spec = GroupSpec::new(&["a", "b", "c"]);
    spec.first_server_id = 31;
    let mut group = Group::start(spec).await.unwrap_or_else(|e| panic!("{e}"));
    let mut ledgers = Vec::new();

    // Writes, then the backup of a (quiet while it is taken, so its GTID set is exact).
    ledgers.push(write(&group, 1, "before-backup", 40).await);
    let a = &group.site("a").unwrap().instance;
    let dump = work.path().join("dump.sql");
    let mut dump_args = connection(a);
    dump_args.extend(
        ["--single-transaction", "--set-gtid-purged=ON", "--databases", "app"].map(str::to_owned),
    );
    run(&mysqldump, &dump_args, None, Some(&dump)).await;
    let backup_gtids = a.gtid_executed().await.unwrap();
    let dump_end = Timestamp::now();
    tokio::time::sleep(Duration::from_millis(1200)).await;

    // Writes every site receives.
    ledgers.push(write(&group, 100_000, "shared", 40).await);
    group.wait_caught_up(&["b", "c"], WAIT).await.unwrap_or_else(|e| panic!("{e}"));

    // The partition: b and c stop receiving from a, which keeps acknowledging writes (D).
    for follower in ["b", "c"] {
        group.replication_link(follower, "a").unwrap().set(Fault::Refuse).unwrap();
    }
    ledgers.push(write(&group, 200_000, "lost-tail", 30).await);
    let a = &group.site("a").unwrap().instance;
    a.flush_binary_logs().await.unwrap();
    let a_final = a.gtid_executed().await.unwrap();
    let mut a_binlogs = a.binary_logs().await.unwrap();
    a_binlogs.pop();
    // Then the kill.
    group.site_mut("a").unwrap().instance.kill().await.unwrap();
    let b = &group.site("b").unwrap().instance;
    let received = b.gtid_executed().await.unwrap();
    let lost = a_final.difference(&received);
    assert!(!lost.is_empty(), "a acknowledged writes b never received");
    println!("partitioned {}; lost tail D = {lost:#}", replication_link_name("b", "a"));

    // The promotion, observed more than δ after the tail's last commit; b takes writes.
    tokio::time::sleep(Duration::from_secs(6)).await;
    group.promote("b").await.unwrap_or_else(|e| panic!("{e}"));
    let b = &group.site("b").unwrap().instance;
    let b_uuid: bloodraven_gtid::Uuid = b.server_uuid().await.unwrap().parse().unwrap();
    let record = bloodraven_archive::PromotionRecord {
        kind: bloodraven_archive::manifest::RecordKind::Promotion,
        server_uuid: b_uuid,
        server_id: 32,
        gtid_executed: b.gtid_executed().await.unwrap(),
        observed_at: Timestamp::now(),
        probe_interval: Some(SignedDuration::from_secs(1)),
        read_only_gtid_executed: None,
        extra: Default::default(),
    };
    tokio::time::sleep(Duration::from_millis(1200)).await;
    ledgers.push(write(&group, 300_000, "promoted", 30).await);
    let b = &group.site("b").unwrap().instance;
    let at_target = b.gtid_executed().await.unwrap();
    let target = whole_second_after(SignedDuration::from_millis(100)).await;
    ledgers.push(write(&group, 400_000, "after-target", 20).await);
    let b = &group.site("b").unwrap().instance;
    b.flush_binary_logs().await.unwrap();
    let mut b_binlogs = b.binary_logs().await.unwrap();
    b_binlogs.pop();

    // a's binlogs (read from its data directory: it is dead) and b's, with b's promotion.
    let now = Timestamp::now();
    let mut archive = LocalArchive::new(source_ref(UID), &destination("orders-pitr"), now, "a");
    archive.add("a", &sealed(&group.site("a").unwrap().instance, &a_binlogs), now).unwrap();
    archive.add("b", &sealed(b, &b_binlogs), now).unwrap();
    archive.record("b", record);
    let (store, root) = write_archive(archive, &work.path().join("store")).await;
    let staging = work.path().join("staging");
    let Opened::Archive(downloaded) =
        download(&store, &root, ReaderOptions::new(ReaderKey::None), Some(&staging)).await.unwrap()
    else {
        panic!("the archive was refused")
    };

    // The plan: refused with D exactly a's lost tail; with `excludeGtids: D`, b's history.
    let backup = BackupMeta::complete(backup_gtids, dump_end, UID, &downloaded.history.archive_id);
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

    // The replay into a fresh server loaded from the backup.
    let restored = started("pitr-lossy-dst", 39).await;
    let local = restored.gtid_executed().await.unwrap();
    run(&mysql, &connection(&restored), Some(&dump), None).await;
    let tools = Tools { mysql, mysqlbinlog, connection: connection(&restored) };
    let replayed = replay(&planned, &downloaded.staged, &tools, &local)
        .await
        .unwrap_or_else(|error| panic!("{error}\n{}", restored.error_log_tail(20)));
    assert_eq!(replayed.executed, at_target.union(&local));

    // The ledger: an acknowledged write is on the restored server exactly when the plan
    // certified its GTID; D's acknowledged writes are not, every other write before the
    // target is.
    let mut conn = restored.root_conn().await.unwrap();
    let keys: Vec<u64> = conn.query("SELECT k FROM app.ledger").await.unwrap();
    conn.disconnect().await.unwrap();
    let keys: std::collections::HashSet<u64> = keys.into_iter().collect();
    let mut present = 0;
    let mut absent_in_d: u128 = 0;
    let mut absent_after_target = 0;
    for ledger in &ledgers {
        for attempt in &ledger.attempts {
            let Outcome::Acknowledged { gtid } = &attempt.outcome else { continue };
            let gtid = gtid.as_ref().unwrap_or_else(|| {
                panic!("{}: key {} acknowledged without a GTID", ledger.writer, attempt.key)
            });
            let certified = planned.certified.contains(gtid);
            assert_eq!(
                keys.contains(&attempt.key),
                certified,
                "{}: key {} ({gtid}) present must equal certified",
                ledger.writer,
                attempt.key
            );
            match (certified, lost.contains(gtid)) {
                (true, _) => present += 1,
                (false, true) => absent_in_d += 1,
                (false, false) => absent_after_target += 1,
            }
        }
    }
    let acknowledged_in_d = ledgers[2].acknowledged_gtids();
    assert_eq!(acknowledged_in_d.difference(&lost), GtidSet::new(), "D holds the tail's writes");
    assert_eq!(absent_in_d, acknowledged_in_d.count(), "every acknowledged write of D is gone");
    assert!(absent_after_target > 0, "the writes after the target are not replayed");
    println!(
        "ledger: {present} acknowledged writes present, {absent_in_d} lost with D, \
         {absent_after_target} after the target"
    );
    drop(group);
}
