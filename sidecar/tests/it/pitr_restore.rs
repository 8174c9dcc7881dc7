//! The PITR restore Job's steps as sidecar subcommands on real MySQL 9.7: `backup` (mysqldump
//! into a PVC-layout store, the stamp naming the archive), writes after the dump across a
//! rotation, a whole-second target, more writes, the binlogs archived beside the backups
//! (`bloodraven_replay::local`, as the archiver lays them); then `dump-meta` → `pitr-download`
//! → `restore` (the dump into a fresh server) → `replay`: the server's `gtid_executed` is what
//! the source had executed at the target, the table holds exactly the rows written before it,
//! and the verdict is printed. A wrong backup UID is refused by dump-meta with its token.

use std::path::Path;
use std::time::Duration;

use bloodraven_archive::{Destination, SourceRef};
use bloodraven_sidecar::jobs::backup::{self, BackupArgs};
use bloodraven_sidecar::jobs::dump_meta::{self, DumpMetaArgs};
use bloodraven_sidecar::jobs::pitr_download::{self, PitrDownloadArgs};
use bloodraven_sidecar::jobs::replay::{self, PlanArgs, ReplayArgs};
use bloodraven_sidecar::jobs::restore::{self, RestoreArgs};
use bloodraven_sidecar::jobs::storage::StorageArgs;
use bloodraven_sites::accounts::BACKUP;
use bloodraven_sites::mysqld::{Instance, MysqlDist};
use bloodraven_store::{ArchiveRoot, FsStore};
use jiff::{SignedDuration, Timestamp};
use mysql_async::prelude::Queryable as _;

use crate::mysql_support::{RESTORE_PASSWORD, RESTORE_USER, creds_dir, pvc_storage, start, tool};

const GROUP_UID: &str = "6a1e0c1e-0000-4000-8000-00000000b001";

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

/// Sleeps until just after the next whole second at least `after` from now; returns it.
async fn whole_second_after(after: SignedDuration) -> Timestamp {
    let earliest = Timestamp::now().checked_add(after).unwrap();
    let target = Timestamp::from_second(earliest.as_second() + 1).unwrap();
    let wait = target.duration_since(Timestamp::now()) + SignedDuration::from_millis(200);
    tokio::time::sleep(wait.unsigned_abs()).await;
    target
}

fn dump_meta_args(
    name: &str,
    uid: &str,
    gtids: &str,
    out: &Path,
    storage: StorageArgs,
) -> DumpMetaArgs {
    DumpMetaArgs {
        backup_name: name.into(),
        backup_uid: uid.into(),
        source_uid: GROUP_UID.into(),
        gtid_executed: gtids.into(),
        out: out.to_owned(),
        storage,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dump_meta_pitr_download_restore_and_replay_reach_the_target() {
    crate::bounded("dump_meta_pitr_download_restore_and_replay_reach_the_target", 600, async {
        let dist = MysqlDist::from_env().unwrap_or_else(|e| panic!("{e}"));
        let work = tempfile::tempdir().unwrap();
        let mount = std::fs::canonicalize(work.path()).unwrap().join("pvc");
        std::fs::create_dir_all(&mount).unwrap();
        let mountinfo = work.path().join("mountinfo");
        std::fs::write(
            &mountinfo,
            format!(
                "1 0 0:1 / / rw - ext4 /dev/root rw\n2 1 0:2 / {} rw - ext4 /dev/pvc rw\n",
                mount.display()
            ),
        )
        .unwrap();
        let storage = pvc_storage(&mount, &mountinfo);
        let backup_creds = creds_dir(BACKUP.user, BACKUP.password);
        let restore_creds = creds_dir(RESTORE_USER, RESTORE_PASSWORD);

        // The archive's identity first: the backup's stamp names it.
        let destination = Destination::Pvc {
            namespace: "prod".into(),
            claim: "orders-backups".into(),
            sub_path: "orders".into(),
        }
        .normalize()
        .unwrap();
        let group =
            SourceRef { namespace: "prod".into(), name: "orders".into(), uid: GROUP_UID.into() };
        let mut archive = bloodraven_replay::local::LocalArchive::new(
            group,
            &destination,
            Timestamp::now(),
            "iad",
        );

        let source = start(&dist, "pitr-iad", 41).await;
        source
            .execute(&[
                "CREATE DATABASE pitr",
                "CREATE TABLE pitr.t (id INT PRIMARY KEY, v VARCHAR(32) NOT NULL)",
            ])
            .await
            .unwrap();
        insert(&source, 1, 20, Duration::ZERO).await;
        source.flush_binary_logs().await.unwrap();
        let name = "nightly";
        let outcome = backup::run(BackupArgs {
            backup_name: name.into(),
            backup_uid: "uid-nightly".into(),
            namespace: "prod".into(),
            group: "orders".into(),
            group_uid: GROUP_UID.into(),
            pitr_archive_id: archive.archive_id.to_string(),
            site: "iad".into(),
            expect_server_id: Some(source.server_id()),
            mysql_host: "127.0.0.1".into(),
            mysql_port: source.port(),
            mysql_creds_dir: Some(backup_creds.path().to_owned()),
            mysqldump: tool("BLOODRAVEN_MYSQLDUMP"),
            compression: "zstd".into(),
            bytes_per_chunk: "64k".into(),
            include_schemas: String::new(),
            exclude_schemas: String::new(),
            expect_location: None,
            storage: storage.clone(),
        })
        .await
        .unwrap_or_else(|e| panic!("backup: {e:#}"));

        // Writes after the dump (a rotation in the middle), the target, more writes.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        insert(&source, 21, 30, Duration::from_millis(30)).await;
        source.flush_binary_logs().await.unwrap();
        insert(&source, 31, 40, Duration::from_millis(30)).await;
        let at_target = source.gtid_executed().await.unwrap();
        let target = whole_second_after(SignedDuration::from_millis(100)).await;
        insert(&source, 41, 60, Duration::from_millis(20)).await;
        source.flush_binary_logs().await.unwrap();

        // The sealed binlogs archived under the profile, as the archiver lays them.
        let mut names = source.binary_logs().await.unwrap();
        names.pop();
        let files: Vec<bloodraven_replay::local::SealedFile> = names
            .iter()
            .map(|name| bloodraven_replay::local::SealedFile {
                name: name.clone(),
                bytes: std::fs::read(source.data_dir().join(name)).unwrap(),
            })
            .collect();
        archive.add("iad", &files, Timestamp::now()).unwrap();
        let objects = archive.into_objects().unwrap();
        let store = FsStore::new(mount.join("orders")).unwrap();
        let root = ArchiveRoot::under_profile("").unwrap();
        bloodraven_store::archive::write_objects(&store, &root, &objects).await.unwrap();

        // dump-meta refuses a stamp naming another backup, with the document's token.
        let dump_json = work.path().join("dump-meta/dump.json");
        let refused = dump_meta::run(dump_meta_args(
            name,
            "uid-other",
            &outcome.gtid_executed,
            &dump_json,
            storage.clone(),
        ))
        .await
        .expect_err("a stamp naming another backup");
        assert!(format!("{refused:#}").starts_with("PITRBackupIdentityMismatch: "), "{refused:#}");
        assert!(!dump_json.exists(), "nothing written on refusal");

        // The three steps and the load.
        dump_meta::run(dump_meta_args(
            name,
            "uid-nightly",
            &outcome.gtid_executed,
            &dump_json,
            storage.clone(),
        ))
        .await
        .unwrap_or_else(|e| panic!("dump-meta: {e:#}"));
        let staging = work.path().join("pitr-binlogs");
        let planned = pitr_download::run(PitrDownloadArgs {
            dump_meta: dump_json.clone(),
            stop_time: target.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            exclude_gtids: String::new(),
            allow_partial: false,
            staging: staging.clone(),
            passphrase_file: None,
            storage: storage.clone(),
        })
        .await
        .unwrap_or_else(|e| panic!("pitr-download: {e:#}"));
        assert_eq!(
            planned.certified, at_target,
            "the plan certifies the source's set at the target"
        );
        assert!(staging.join("coverage.json").is_file() && staging.join("plan.json").is_file());

        let restored = start(&dist, "pitr-dst", 42).await;
        restore::run(RestoreArgs {
            backup_name: name.into(),
            backup_uid: "uid-nightly".into(),
            mysql_host: "127.0.0.1".into(),
            mysql_port: restored.port(),
            mysql_creds_dir: Some(restore_creds.path().to_owned()),
            mysql_client: tool("BLOODRAVEN_MYSQL"),
            in_place: false,
            storage: storage.clone(),
        })
        .await
        .unwrap_or_else(|e| panic!("restore: {e:#}"));
        let replayed = replay::run(ReplayArgs {
            plan: PlanArgs {
                staging: staging.clone(),
                source_namespace: "prod".into(),
                source_name: "orders".into(),
                encryption_mode: "None".into(),
            },
            target_local: String::new(),
            mysql_host: "127.0.0.1".into(),
            mysql_port: restored.port(),
            mysql_creds_dir: Some(restore_creds.path().to_owned()),
            mysql_client: tool("BLOODRAVEN_MYSQL"),
            mysqlbinlog: tool("BLOODRAVEN_MYSQLBINLOG"),
        })
        .await
        .unwrap_or_else(|e| panic!("replay: {e:#}\n{}", restored.error_log_tail(20)));
        assert_eq!(replayed.executed, at_target);
        assert_eq!(restored.gtid_executed().await.unwrap(), at_target);
        let mut conn = restored.root_conn().await.unwrap();
        let rows: Option<u64> = conn.query_first("SELECT COUNT(*) FROM pitr.t").await.unwrap();
        assert_eq!(rows, Some(40), "rows 1..=40: the writes before the target");
        conn.disconnect().await.unwrap();
        let verdict = replayed.lines.last().unwrap();
        assert!(verdict.starts_with("BLOODRAVEN_PITR_VERDICT v=2 mode=timestamp"), "{verdict}");
        assert!(verdict.contains("outcome=TargetCovered"), "{verdict}");
        assert!(replayed.lines.iter().any(|line| line.starts_with("BLOODRAVEN_PITR_SEGMENT k=1 ")));
        assert!(replayed.lines.iter().any(|line| line.starts_with("BLOODRAVEN_PITR_RESULT v=1 ")));
    })
    .await;
}
