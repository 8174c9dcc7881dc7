//! The verification Job's `verify` step with `pointInTime` on real MySQL 9.7 (`source
//! scripts/provision.sh` first): a backup, writes after it across a rotation, a whole-second
//! target, more writes, the sealed binlogs archived beside the backups
//! (`bloodraven_replay::local`, as the archiver lays them); then, as the Job's init containers
//! would, `dump-meta` and `pitr-download` stage a plan (mode Timestamp to the target, then mode
//! Latest to the archive head), and `verify --point-in-time` loads the dump into its scratch
//! server, replays the staged plan into it, proves the certified set and checksums the table:
//! the checksum is the source's at the target (at the head), the verdict names the mode and
//! outcome, and the result line and the verdict are the termination message.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bloodraven_archive::{Destination, SourceRef};
use bloodraven_gtid::GtidSet;
use bloodraven_sidecar::jobs::backup::{self, BackupArgs};
use bloodraven_sidecar::jobs::dump_meta::{self, DumpMetaArgs};
use bloodraven_sidecar::jobs::pitr_download::{self, PitrDownloadArgs};
use bloodraven_sidecar::jobs::pitr_restore::ReplayStepArgs;
use bloodraven_sidecar::jobs::replay::PlanArgs;
use bloodraven_sidecar::jobs::storage::StorageArgs;
use bloodraven_sidecar::jobs::verify::{self, Verified, VerifyArgs};
use bloodraven_sites::accounts::BACKUP;
use bloodraven_sites::mysqld::{Instance, MysqlDist};
use bloodraven_store::{ArchiveRoot, FsStore};
use jiff::{SignedDuration, Timestamp};
use mysql_async::prelude::Queryable as _;

use crate::mysql_support::{creds_dir, pvc_storage, start, tool};

const GROUP_UID: &str = "6a1e0c1e-0000-4000-8000-00000000b002";
const BACKUP_NAME: &str = "nightly";
const BACKUP_UID: &str = "uid-nightly";

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

async fn checksum(site: &Instance) -> Option<u64> {
    let mut conn = site.root_conn().await.unwrap();
    let row: Option<(String, Option<u64>)> =
        conn.query_first("CHECKSUM TABLE pitr.t").await.unwrap();
    conn.disconnect().await.unwrap();
    row.and_then(|(_, sum)| sum)
}

/// Sleeps until just after the next whole second at least `after` from now; returns it.
async fn whole_second_after(after: SignedDuration) -> Timestamp {
    let earliest = Timestamp::now().checked_add(after).unwrap();
    let target = Timestamp::from_second(earliest.as_second() + 1).unwrap();
    let wait = target.duration_since(Timestamp::now()) + SignedDuration::from_millis(200);
    tokio::time::sleep(wait.unsigned_abs()).await;
    target
}

/// One verification Job's steps: dump-meta and pitr-download (the init containers) to `stop`
/// ("" for mode Latest) under `dir`, then `verify --point-in-time`.
async fn verify_to(
    dir: &Path,
    stop: &str,
    gtid_executed: &str,
    storage: &StorageArgs,
    certified: &GtidSet,
) -> (Verified, String) {
    std::fs::create_dir_all(dir).unwrap();
    let dump_json = dir.join("dump-meta/dump.json");
    dump_meta::run(DumpMetaArgs {
        backup_name: BACKUP_NAME.into(),
        backup_uid: BACKUP_UID.into(),
        source_uid: GROUP_UID.into(),
        gtid_executed: gtid_executed.into(),
        out: dump_json.clone(),
        storage: storage.clone(),
    })
    .await
    .unwrap_or_else(|e| panic!("dump-meta: {e:#}"));
    let staging = dir.join("pitr-binlogs");
    let planned = pitr_download::run(PitrDownloadArgs {
        dump_meta: dump_json,
        stop_time: stop.into(),
        exclude_gtids: String::new(),
        allow_partial: false,
        staging: staging.clone(),
        passphrase_file: None,
        storage: storage.clone(),
    })
    .await
    .unwrap_or_else(|e| panic!("pitr-download to {stop:?}: {e:#}"));
    assert_eq!(&planned.certified, certified, "the plan to {stop:?} certifies the source's set");

    let termination = dir.join("termination-log");
    let env = |var: &str| Some(tool(var));
    let verified = verify::run(VerifyArgs {
        backup_name: BACKUP_NAME.into(),
        backup_uid: BACKUP_UID.into(),
        source_uid: GROUP_UID.into(),
        gtid_executed: gtid_executed.into(),
        mysqld: tool("BLOODRAVEN_MYSQLD"),
        mysql_client: tool("BLOODRAVEN_MYSQL"),
        basedir: env("BLOODRAVEN_MYSQL_BASEDIR"),
        lc_messages_dir: env("BLOODRAVEN_MYSQL_LC_MESSAGES_DIR"),
        plugin_dir: env("BLOODRAVEN_MYSQL_PLUGIN_DIR"),
        scratch: dir.join("scratch"),
        storage: storage.clone(),
        point_in_time: true,
        replay: ReplayStepArgs {
            plan: PlanArgs {
                staging,
                source_namespace: "prod".into(),
                source_name: "orders".into(),
                encryption_mode: "None".into(),
            },
            mysqlbinlog: tool("BLOODRAVEN_MYSQLBINLOG"),
            termination_log: termination.clone(),
            message_limit: 3_072,
        },
    })
    .await
    .unwrap_or_else(|refusal| panic!("verify to {stop:?}: {}", refusal.line()));
    let message = std::fs::read_to_string(&termination)
        .unwrap_or_else(|e| panic!("no termination message at {}: {e}", termination.display()));
    (verified, message)
}

/// The verified checksum of `pitr.t` (the site template's own tables are checksummed too).
fn table_sum(verified: &Verified) -> Option<u64> {
    let found = verified.tables.iter().find(|(table, _)| table == "pitr.t");
    found.unwrap_or_else(|| panic!("pitr.t not checksummed: {:?}", verified.tables)).1
}

fn short_tempdir() -> (tempfile::TempDir, PathBuf) {
    // The scratch server's unix socket path must stay under 107 bytes.
    let work = tempfile::Builder::new().prefix("vp").tempdir_in("/tmp").unwrap();
    let path = std::fs::canonicalize(work.path()).unwrap();
    (work, path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_replays_the_archive_to_a_timestamp_and_to_the_head() {
    crate::bounded("verify_replays_the_archive_to_a_timestamp_and_to_the_head", 900, async {
        let dist = MysqlDist::from_env().unwrap_or_else(|e| panic!("{e}"));
        let (_work, work) = short_tempdir();
        let mount = work.join("pvc");
        std::fs::create_dir_all(&mount).unwrap();
        let mountinfo = work.join("mountinfo");
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

        let source = start(&dist, "vpitr-iad", 51).await;
        source
            .execute(&[
                "CREATE DATABASE pitr",
                "CREATE TABLE pitr.t (id INT PRIMARY KEY, v VARCHAR(32) NOT NULL)",
            ])
            .await
            .unwrap();
        insert(&source, 1, 20, Duration::ZERO).await;
        source.flush_binary_logs().await.unwrap();
        let outcome = backup::run(BackupArgs {
            backup_name: BACKUP_NAME.into(),
            backup_uid: BACKUP_UID.into(),
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
        let sum_at_target = checksum(&source).await;
        let target = whole_second_after(SignedDuration::from_millis(100)).await;
        insert(&source, 41, 60, Duration::from_millis(20)).await;
        source.flush_binary_logs().await.unwrap();
        let at_head = source.gtid_executed().await.unwrap();
        let sum_at_head = checksum(&source).await;
        assert_ne!(sum_at_target, sum_at_head, "rows 41..=60 change the checksum");

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

        // Mode Timestamp: the source's state at the target.
        let stop = target.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let (verified, message) =
            verify_to(&work.join("ts"), &stop, &outcome.gtid_executed, &storage, &at_target).await;
        assert_eq!(verified.gtid_executed, at_target.to_compact_string());
        assert_eq!(table_sum(&verified), sum_at_target, "{:?}", verified.tables);
        let lines = verified.lines();
        assert!(lines.last().unwrap().starts_with("BLOODRAVEN_VERIFY_COMPLETE "), "{lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("BLOODRAVEN_PITR_SEGMENT k=1 ")), "{lines:?}");
        let (result, verdict) = message.trim_end().split_once('\n').unwrap();
        assert_eq!(
            result,
            format!("BLOODRAVEN_PITR_RESULT v=1 executed={}", at_target.to_compact_string())
        );
        assert!(
            verdict.starts_with("BLOODRAVEN_PITR_VERDICT v=2 mode=timestamp stop="),
            "{verdict}"
        );
        assert!(verdict.contains(" outcome=TargetCovered "), "{verdict}");
        assert!(verdict.contains(&format!(" sourceUID={GROUP_UID} ")), "{verdict}");

        // Mode Latest: the archive head.
        let (verified, message) =
            verify_to(&work.join("head"), "", &outcome.gtid_executed, &storage, &at_head).await;
        assert_eq!(verified.gtid_executed, at_head.to_compact_string());
        assert_eq!(table_sum(&verified), sum_at_head, "{:?}", verified.tables);
        let verdict = message.trim_end().lines().last().unwrap();
        assert!(
            verdict.starts_with("BLOODRAVEN_PITR_VERDICT v=2 mode=latest outcome=Latest "),
            "{verdict}"
        );
        assert!(!verdict.contains(" stop="), "{verdict}");
        assert!(
            !work.join("ts/scratch/data").exists() && !work.join("head/scratch/data").exists(),
            "the scratch servers' data is removed"
        );
    })
    .await;
}
