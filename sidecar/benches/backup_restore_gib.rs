//! Backup and restore throughput of the sidecar's Job steps (issue 14): a dataset of
//! `BLOODRAVEN_BENCH_BACKUP_MIB` MiB (default 1024; `bloodraven_sites::dataset`) in one InnoDB
//! table on a real MySQL 9.7 (`source scripts/provision.sh`), dumped by `backup::run`
//! (`mysqldump`, zstd chunks, the document's metadata) into each store (a PVC-layout folder,
//! SeaweedFS S3), then loaded by `restore::run` into a fresh server. Figures: MiB of table data
//! (InnoDB `data_length`) per second of wall time, one run per store. Every artifact and server
//! is removed after its store's run (the dataset exists at most three times on disk: source,
//! artifact, target).
//!
//! `scripts/bench.sh backup_restore_gib` runs it (1 GiB); a quick check of the bench itself:
//! `BLOODRAVEN_BENCH_BACKUP_MIB=64 cargo bench -p bloodraven-sidecar --bench backup_restore_gib`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "benchmark harness: it reports on stdout (BENCH lines) and panics on a broken setup"
)]

#[path = "../tests/it/mysql_support.rs"]
#[allow(dead_code, reason = "shared with the tests; the bench uses part of it")]
mod mysql_support;

use std::path::{Path, PathBuf};
use std::time::Instant;

use bloodraven_sidecar::jobs::backup::{self, BackupArgs};
use bloodraven_sidecar::jobs::restore::{self, RestoreArgs};
use bloodraven_sidecar::jobs::storage::StorageArgs;
use bloodraven_sites::accounts::BACKUP;
use bloodraven_sites::dataset;
use bloodraven_sites::mysqld::{Instance, MysqlDist};
use bloodraven_store::testing::SeaweedFs;
use mysql_support::{RESTORE_PASSWORD, RESTORE_USER, creds_dir, pvc_storage, start, tool};

/// The variable that sets the dataset's size in MiB (default 1024).
const SIZE_VAR: &str = "BLOODRAVEN_BENCH_BACKUP_MIB";

async fn load(source: &Instance, mib: u64) -> f64 {
    let mut conn = source.root_conn().await.unwrap();
    dataset::load(&mut conn, "bench-src", mib).await.unwrap_or_else(|e| panic!("the dataset: {e}"))
}

fn backup_args(name: &str, source: &Instance, creds: &Path, storage: StorageArgs) -> BackupArgs {
    BackupArgs {
        backup_name: name.into(),
        backup_uid: format!("uid-{name}"),
        namespace: "bench".into(),
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
        bytes_per_chunk: "64M".into(),
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

fn s3_storage(weed: &SeaweedFs, aws: &Path) -> StorageArgs {
    StorageArgs {
        storage_type: "S3".into(),
        s3_bucket: "backups".into(),
        s3_prefix: "/bench/".into(),
        s3_endpoint: weed.endpoint().to_owned(),
        s3_region: "us-east-1".into(),
        aws_creds_dir: Some(aws.to_owned()),
        pvc_mount: PathBuf::from("/nonexistent"),
        pvc_sub_path: String::new(),
        mountinfo_file: None,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let mib = dataset::mib_from_env(SIZE_VAR, 1024);
    let source = start(&dist, "bench-src", 41).await;
    let started = Instant::now();
    let data_mib = load(&source, mib).await;
    eprintln!("loaded {data_mib:.0} MiB in {:?}", started.elapsed());

    let backup_creds = creds_dir(BACKUP.user, BACKUP.password);
    let restore_creds = creds_dir(RESTORE_USER, RESTORE_PASSWORD);
    let aws = tempfile::tempdir().unwrap();
    std::fs::write(aws.path().join("AWS_ACCESS_KEY_ID"), bloodraven_store::testing::ACCESS_KEY)
        .unwrap();
    std::fs::write(aws.path().join("AWS_SECRET_ACCESS_KEY"), bloodraven_store::testing::SECRET_KEY)
        .unwrap();

    for store in ["pvc", "seaweedfs"] {
        let pvc = tempfile::tempdir_in("/tmp").unwrap();
        let mount = std::fs::canonicalize(pvc.path()).unwrap();
        let mountinfo = pvc.path().join("mountinfo");
        std::fs::write(
            &mountinfo,
            format!(
                "1 0 0:1 / / rw - ext4 /dev/root rw\n2 1 0:2 / {} rw - ext4 /dev/pvc rw\n",
                mount.display()
            ),
        )
        .unwrap();
        let weed = if store == "seaweedfs" {
            let weed = SeaweedFs::start().unwrap_or_else(|e| panic!("{e}"));
            weed.bucket_store("backups", "").await.unwrap_or_else(|e| panic!("{e}"));
            Some(weed)
        } else {
            None
        };
        let storage = match &weed {
            Some(weed) => s3_storage(weed, aws.path()),
            None => pvc_storage(&mount, &mountinfo),
        };
        let name = format!("bench-{store}");
        let started = Instant::now();
        let outcome =
            backup::run(backup_args(&name, &source, backup_creds.path(), storage.clone()))
                .await
                .unwrap_or_else(|e| panic!("{store}: backup: {e:#}"));
        let backup_s = started.elapsed().as_secs_f64();
        let target = start(&dist, &format!("bench-dst-{store}"), 42).await;
        let started = Instant::now();
        restore::run(restore_args(&name, &target, restore_creds.path(), storage))
            .await
            .unwrap_or_else(|e| panic!("{store}: restore: {e:#}"));
        let restore_s = started.elapsed().as_secs_f64();
        let stored_mib = outcome.stored_bytes as f64 / (1024.0 * 1024.0);
        println!(
            "BENCH sidecar/backup/{store}_mib_per_s {:.1} MiB/s data_mib={data_mib:.0} \
             seconds={backup_s:.1} stored_mib={stored_mib:.0} chunks={}",
            data_mib / backup_s,
            outcome.chunks
        );
        println!(
            "BENCH sidecar/restore/{store}_mib_per_s {:.1} MiB/s data_mib={data_mib:.0} \
             seconds={restore_s:.1}",
            data_mib / restore_s
        );
        drop(target);
        drop(weed);
        drop(pvc);
    }
    drop(source);
}
