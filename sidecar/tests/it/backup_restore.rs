//! The `backup` and `restore` Job steps on real MySQL 9.7 (`mysqldump`, the `mysql` client)
//! and both stores (SeaweedFS, a PVC-layout temp dir passing the mount check through an
//! injected mount table): a backup taken while a writer commits restores into a fresh server
//! with the backup's `gtid_executed` and the source's table checksums at that GTID set; a
//! truncated chunk is refused before anything loads.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bloodraven_backup::layout::ArtifactLayout;
use bloodraven_backup::meta::{DoneJson, DumpJson, Stamp};
use bloodraven_gtid::GtidSet;
use bloodraven_sidecar::jobs::backup::{self, BackupArgs};
use bloodraven_sidecar::jobs::restore::{self, RestoreArgs};
use bloodraven_sidecar::jobs::storage::StorageArgs;
use bloodraven_sites::accounts::{self, BACKUP};
use bloodraven_sites::mysqld::{Instance, MysqlDist};
use bloodraven_store::{ObjectStore, testing::SeaweedFs};
use mysql_async::prelude::Queryable as _;

use crate::mysql_support::{RESTORE_PASSWORD, RESTORE_USER, creds_dir, pvc_storage, start, tool};

fn s3_storage(weed: &SeaweedFs, aws: &Path) -> StorageArgs {
    StorageArgs {
        storage_type: "S3".into(),
        s3_bucket: "backups".into(),
        s3_prefix: "/orders/".into(),
        s3_endpoint: weed.endpoint().to_owned(),
        s3_region: "us-east-1".into(),
        aws_creds_dir: Some(aws.to_owned()),
        pvc_mount: PathBuf::from("/nonexistent"),
        pvc_sub_path: String::new(),
        mountinfo_file: None,
    }
}

fn backup_args(name: &str, source: &Instance, creds: &Path, storage: StorageArgs) -> BackupArgs {
    BackupArgs {
        backup_name: name.into(),
        backup_uid: format!("uid-{name}"),
        namespace: "prod".into(),
        group: "orders".into(),
        group_uid: "group-uid".into(),
        pitr_archive_id: String::new(),
        site: "iad".into(),
        expect_server_id: Some(source.server_id()),
        mysql_host: "127.0.0.1".into(),
        mysql_port: source.port(),
        mysql_creds_dir: Some(creds.to_owned()),
        mysqldump: tool("BLOODRAVEN_MYSQLDUMP"),
        compression: "zstd".into(),
        // Small chunks, so the artifact has several.
        bytes_per_chunk: "64k".into(),
        include_schemas: String::new(),
        exclude_schemas: String::new(),
        expect_location: None,
        storage,
    }
}

fn restore_args(name: &str, target: &Instance, creds: &Path, storage: StorageArgs) -> RestoreArgs {
    RestoreArgs {
        backup_name: name.into(),
        backup_uid: format!("uid-{name}"),
        mysql_host: "127.0.0.1".into(),
        mysql_port: target.port(),
        mysql_creds_dir: Some(creds.to_owned()),
        mysql_client: tool("BLOODRAVEN_MYSQL"),
        in_place: false,
        storage,
    }
}

/// `CHECKSUM TABLE` of every user table, by name.
async fn checksums(site: &Instance) -> Vec<(String, Option<i64>)> {
    let mut conn = site.root_conn().await.unwrap();
    let tables: Vec<(String, String)> = conn
        .query(
            "SELECT table_schema, table_name FROM information_schema.tables \
             WHERE table_schema IN ('app', 'shop') AND table_type = 'BASE TABLE' ORDER BY 1, 2",
        )
        .await
        .unwrap();
    let mut out = Vec::new();
    for (schema, table) in tables {
        let row: (String, Option<i64>) = conn
            .query_first(format!("CHECKSUM TABLE `{schema}`.`{table}`"))
            .await
            .unwrap()
            .unwrap();
        out.push(row);
    }
    out
}

async fn gtid_executed(site: &Instance) -> GtidSet {
    let mut conn = site.root_conn().await.unwrap();
    let text: String = conn.query_first("SELECT @@GLOBAL.gtid_executed").await.unwrap().unwrap();
    text.chars().filter(|c| !c.is_whitespace()).collect::<String>().parse().unwrap()
}

/// Source data: a few tables of several types, a view, a routine and a trigger.
async fn seed(source: &Instance) {
    let mut conn = source.root_conn().await.unwrap();
    for statement in [
        "CREATE DATABASE shop",
        "CREATE TABLE shop.items (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(64) CHARACTER SET utf8mb4, \
         price DECIMAL(10,2), data BLOB, at DATETIME(6), doc JSON)",
        "CREATE TABLE shop.audit (id INT PRIMARY KEY AUTO_INCREMENT, item INT)",
        "CREATE TRIGGER shop.items_ai AFTER INSERT ON shop.items FOR EACH ROW INSERT INTO shop.audit (item) VALUES (NEW.id)",
        "CREATE VIEW shop.cheap AS SELECT id, name FROM shop.items WHERE price < 10",
        "CREATE PROCEDURE shop.touch() SELECT 1",
        "CREATE TABLE app.writes (id INT PRIMARY KEY AUTO_INCREMENT, payload VARCHAR(200))",
    ] {
        conn.query_drop(statement).await.unwrap();
    }
    for batch in 0..20 {
        let mut values = Vec::new();
        for i in 0..100 {
            let n = batch * 100 + i;
            values.push(format!(
                "('item ✓ {n}', {}.{:02}, UNHEX(SHA2('{n}', 256)), '2026-11-05 09:30:{:02}.{:06}', '{{\"n\": {n}}}')",
                n % 50,
                n % 100,
                n % 60,
                n
            ));
        }
        conn.query_drop(format!(
            "INSERT INTO shop.items (name, price, data, at, doc) VALUES {}",
            values.join(",")
        ))
        .await
        .unwrap();
    }
}

/// Commits one row per transaction into `app.writes` until `stop`.
async fn writer(source: std::net::SocketAddr, stop: Arc<AtomicBool>) -> u64 {
    let mut conn =
        mysql_async::Conn::new(accounts::opts(&accounts::APPLICATION, source, Some("app")))
            .await
            .unwrap();
    let mut written = 0;
    while !stop.load(Ordering::Relaxed) {
        conn.query_drop(format!("INSERT INTO writes (payload) VALUES ('row {written}')"))
            .await
            .unwrap();
        written += 1;
    }
    written
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_to_each_store_restores_with_its_gtid_set_and_the_sources_checksums() {
    crate::bounded("a_backup_to_each_store_restores_with_its_gtid_set_and_the_sources_checksums", 600, async {
        let weed = SeaweedFs::start().unwrap_or_else(|e| panic!("{e}"));
        weed.bucket_store("backups", "").await.unwrap_or_else(|e| panic!("{e}"));
        let dist = MysqlDist::from_env().unwrap_or_else(|e| panic!("{e}"));
        let source = start(&dist, "iad", 31).await;
        seed(&source).await;

        let aws = tempfile::tempdir().unwrap();
        std::fs::write(aws.path().join("AWS_ACCESS_KEY_ID"), bloodraven_store::testing::ACCESS_KEY).unwrap();
        std::fs::write(aws.path().join("AWS_SECRET_ACCESS_KEY"), bloodraven_store::testing::SECRET_KEY).unwrap();
        let backup_creds = creds_dir(BACKUP.user, BACKUP.password);
        let restore_creds = creds_dir(RESTORE_USER, RESTORE_PASSWORD);
        let pvc = tempfile::tempdir().unwrap();
        let mount = std::fs::canonicalize(pvc.path()).unwrap();
        let mountinfo_dir = tempfile::tempdir().unwrap();
        let mountinfo = mountinfo_dir.path().join("mountinfo");
        std::fs::write(
            &mountinfo,
            format!("1 0 0:1 / / rw - ext4 /dev/root rw\n2 1 0:2 / {} rw - ext4 /dev/pvc rw\n", mount.display()),
        )
        .unwrap();

        for (name, storage, server_id) in [
            ("nightly-s3", s3_storage(&weed, aws.path()), 32),
            ("nightly-pvc", pvc_storage(&mount, &mountinfo), 33),
        ] {
            // A writer commits throughout the dump: the artifact must be one consistent
            // snapshot whose GTID set matches its data.
            let before_writer = gtid_executed(&source).await;
            let rows_before: u64 = {
                let mut conn = source.root_conn().await.unwrap();
                conn.query_first("SELECT COUNT(*) FROM app.writes").await.unwrap().unwrap()
            };
            let stop = Arc::new(AtomicBool::new(false));
            let writes = tokio::spawn(writer(source.addr(), stop.clone()));
            tokio::time::sleep(Duration::from_millis(300)).await;
            let outcome = backup::run(backup_args(name, &source, backup_creds.path(), storage.clone()))
                .await
                .unwrap_or_else(|e| panic!("{name}: backup: {e:#}"));
            stop.store(true, Ordering::Relaxed);
            let written = writes.await.unwrap();
            assert!(outcome.chunks > 1, "{name}: {} chunks; the 64k chunking was not exercised", outcome.chunks);
            assert!(outcome.sentinel.starts_with("BLOODRAVEN_DUMP_COMPLETE v=2 location="), "{}", outcome.sentinel);

            // The metadata documents.
            let store = storage.store(false).await.unwrap();
            let layout = ArtifactLayout::new(name).unwrap();
            let dump = DumpJson::from_bytes(&store.get(&layout.dump_json()).await.unwrap().bytes).unwrap();
            let done = DoneJson::from_bytes(&store.get(&layout.done_json()).await.unwrap().bytes).unwrap();
            let stamp = Stamp::from_bytes(&store.get(&layout.stamp()).await.unwrap().bytes).unwrap();
            assert_eq!(dump.gtid_executed.as_deref(), Some(outcome.gtid_executed.as_str()));
            assert!(dump.binlog_file.is_some() && dump.binlog_position.is_some(), "{dump:?}");
            assert_eq!(dump.schemas, vec!["app".to_owned(), "shop".to_owned()]);
            assert_eq!(stamp.server_id, 31);
            let end = stamp.server_clock.end.expect("the stamp records serverClock.end");
            assert!(stamp.server_clock.start <= end && end == done.end);

            let backup_set: GtidSet = outcome.gtid_executed.parse().unwrap();
            // Restore into a fresh server and compare with the source at the backup's set:
            // the source's rows of app.writes are those of the transactions in the set.
            let target = start(&dist, &format!("restore-{name}"), server_id).await;
            let restored = restore::run(restore_args(name, &target, restore_creds.path(), storage.clone()))
                .await
                .unwrap_or_else(|e| panic!("{name}: restore: {e:#}"));
            assert_eq!(gtid_executed(&target).await, backup_set, "{name}: restored gtid_executed");
            assert_eq!(restored.gtid_executed, backup_set.to_string());
            assert_eq!(restored.chunks, outcome.chunks);

            let mut conn = target.root_conn().await.unwrap();
            let restored_rows: u64 = conn.query_first("SELECT COUNT(*) FROM app.writes").await.unwrap().unwrap();
            let max_id: Option<u64> = conn.query_first("SELECT MAX(id) FROM app.writes").await.unwrap().unwrap();
            assert_eq!(Some(restored_rows), max_id.or(Some(0)), "{name}: restored rows are a prefix");
            assert!(restored_rows <= rows_before + written, "{name}");
            // The source truncated to the backup's snapshot: delete later rows on a copy of its
            // checksums by comparing everything but app.writes, and app.writes by its rows.
            let mut src = source.root_conn().await.unwrap();
            let source_prefix: Vec<(u64, String)> = src
                .query(format!("SELECT id, payload FROM app.writes WHERE id <= {restored_rows} ORDER BY id"))
                .await
                .unwrap();
            let restored_prefix: Vec<(u64, String)> =
                conn.query("SELECT id, payload FROM app.writes ORDER BY id").await.unwrap();
            assert_eq!(source_prefix, restored_prefix, "{name}: app.writes at the backup's set");
            let source_sums: Vec<_> = checksums(&source).await.into_iter().filter(|(t, _)| t != "app.writes").collect();
            let target_sums: Vec<_> = checksums(&target).await.into_iter().filter(|(t, _)| t != "app.writes").collect();
            assert_eq!(source_sums, target_sums, "{name}: table checksums");
            assert!(source_sums.iter().any(|(t, _)| t == "shop.items"), "{source_sums:?}");
            // Consistency: the set holds exactly the writer's transactions whose rows the data
            // holds (one row per transaction).
            let writer_txns = backup_set.difference(&before_writer).count();
            assert_eq!(
                writer_txns,
                u128::from(restored_rows - rows_before),
                "{name}: the dump's GTID set and its data disagree"
            );
            assert!(writer_txns > 0, "{name}: the writer committed nothing before the snapshot");
            let routines: u64 = conn
                .query_first("SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = 'shop'")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(routines, 1, "{name}: the procedure was restored");
            drop(conn);
            drop(src);
            drop(target);
        }

        // A truncated chunk is refused before anything loads.
        let storage = pvc_storage(&mount, &mountinfo);
        // The last chunk: without the check before loading, the earlier chunks would load.
        let done = std::fs::read(mount.join("orders/nightly-pvc/@.done.json")).unwrap();
        let last = DoneJson::from_bytes(&done).unwrap().chunks.last().unwrap().file.clone();
        let chunk = mount.join("orders/nightly-pvc").join(last);
        let bytes = std::fs::read(&chunk).unwrap();
        std::fs::write(&chunk, &bytes[..bytes.len() / 2]).unwrap();
        let target = start(&dist, "restore-damaged", 34).await;
        let error = restore::run(restore_args("nightly-pvc", &target, restore_creds.path(), storage))
            .await
            .expect_err("a truncated chunk must be refused");
        assert!(format!("{error:#}").contains("the dump is damaged"), "{error:#}");
        assert!(gtid_executed(&target).await.is_empty(), "nothing was loaded");
    })
    .await;
}
