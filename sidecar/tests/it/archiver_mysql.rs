//! The archiver on real MySQL 9.7 (`crates/sites` runner): binlogs rotated by `FLUSH BINARY
//! LOGS` and by size, archived to the PVC layout (a temp dir passing the mount check through
//! an injected mountinfo) and to SeaweedFS; the archive opened by `bloodraven-archive`'s
//! reader and planned by `bloodraven-pitr` covers every acknowledged write up to the last
//! sealed file.

use std::time::Duration;

use bloodraven_archive::Destination;
use bloodraven_archive::reader::OpenArchive;
use bloodraven_gtid::GtidSet;
use bloodraven_pitr::{BackupMeta, History, Limits, Request, RowBytes, RowIndex, Txn};
use bloodraven_sidecar::archiver::daemon::{self, ArchiverSettings};
use bloodraven_sidecar::archiver::local::LocalBinlogs;
use bloodraven_sidecar::archiver::mysql::{MysqlServer, Server as _};
use bloodraven_sidecar::archiver::retention::NoCutoff;
use bloodraven_sidecar::archiver::{Archiver, sample};
use bloodraven_sites::accounts::{self, APPLICATION, SIDECAR};
use bloodraven_sites::mysqld::{Instance, InstanceSpec, MysqlDist};
use bloodraven_sites::template::ensure_template_async;
use bloodraven_store::{ArchiveRoot, FsStore, MountInfoSource, ObjectStore, check_pvc_store};
use jiff::Timestamp;
use mysql_async::prelude::Queryable as _;

use crate::archiver::{GROUP_UID, config_for, open_plain};

const READY: Duration = Duration::from_secs(120);

/// The transactions of an archived object, read back and scanned (what pitr-download does).
async fn history<S: ObjectStore>(store: &S, root: &ArchiveRoot, open: &OpenArchive) -> History {
    let mut index = RowIndex::new();
    for (site, manifest) in &open.manifests {
        for row in &manifest.files {
            let key = row.object_key(site).unwrap();
            let bytes = store.get(&root.key(&key)).await.unwrap().bytes;
            assert_eq!(Some(open.content_id_key.content_id(&bytes)), row.id, "{key}: digest");
            let summary = bloodraven_binlog::scan(&bytes);
            let txns = summary
                .transactions
                .iter()
                .map(|t| Txn {
                    gtid: match t.id {
                        bloodraven_binlog::TransactionId::Gtid(gtid) => Some(gtid),
                        _ => None,
                    },
                    commit: t
                        .original_commit_us
                        .and_then(|us| Timestamp::from_microsecond(i64::try_from(us).ok()?).ok()),
                    server_id: t.server_id,
                    xa: t.xa,
                    empty: false,
                    max_event: t.end - t.start,
                })
                .collect();
            index.insert(key, RowBytes::Read(txns));
        }
    }
    History::from_archive(open, index)
}

/// Archived transactions: the union of every live row's complete coverage.
fn archived(open: &OpenArchive) -> GtidSet {
    let mut all = GtidSet::new();
    for manifest in open.manifests.values() {
        for row in &manifest.files {
            assert!(
                row.is_complete(),
                "{}: coverage incomplete: {:?}",
                row.name,
                row.gtid_coverage
            );
            all.union_with(row.effective_gtids());
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binlogs_rotated_by_flush_and_size_are_archived_to_pvc_and_seaweedfs_covering_every_acknowledged_write()
 {
    crate::bounded("binlogs_rotated_by_flush_and_size_are_archived_to_pvc_and_seaweedfs_covering_every_acknowledged_write", 300, async {
    let weed = bloodraven_store::testing::SeaweedFs::start().unwrap_or_else(|e| panic!("{e}"));
    let dist = MysqlDist::from_env().unwrap_or_else(|e| panic!("{e}"));
    let template = ensure_template_async(&dist).await.unwrap_or_else(|e| panic!("{e}"));
    let mut spec = InstanceSpec::new("archiver", 21);
    // Size rotation after a few kilobytes (MySQL's minimum is 4096).
    spec.extra_options.push(("max-binlog-size".into(), "8192".into()));
    let mut site = Instance::create(&dist, &template, spec).await.unwrap_or_else(|e| panic!("{e}"));
    site.start_and_wait(READY).await.unwrap_or_else(|e| panic!("{e}\n{}", site.error_log_tail(30)));
    let server = MysqlServer::new(accounts::opts(&SIDECAR, site.addr(), None));

    // The PVC store: a temp dir that the injected mount table lists as a mount point.
    let pvc = tempfile::tempdir().unwrap();
    let mount = std::fs::canonicalize(pvc.path()).unwrap();
    let mountinfo = format!(
        "1 0 0:1 / / rw - ext4 /dev/root rw\n2 1 0:2 / {} rw - ext4 /dev/pvc rw\n",
        mount.display()
    );
    let pvc_root = ArchiveRoot::under_profile("prod/backups/lion").unwrap();
    check_pvc_store(&mount, &mount.join(pvc_root.as_str()), &MountInfoSource::Text(mountinfo))
        .unwrap();
    let pvc_destination = Destination::Pvc {
        namespace: "prod".into(),
        claim: "backups".into(),
        sub_path: "lion".into(),
    };
    let s3_destination = Destination::S3 {
        bucket: "pitr".into(),
        prefix: "prod".into(),
        endpoint: weed.endpoint().to_owned(),
    };
    let s3 = weed.bucket_store("pitr", "prod").await.unwrap_or_else(|e| panic!("{e}"));
    let s3_root = ArchiveRoot::under_profile("").unwrap();
    let local = || LocalBinlogs::new(site.data_dir(), "binlog.index");
    let mut to_pvc = Archiver::open(
        FsStore::new(&mount).unwrap(),
        config_for("a", &pvc_root, &pvc_destination, "PVC"),
        local(),
        NoCutoff,
    )
    .await;
    let mut to_s3 = Archiver::open(
        s3.clone(),
        config_for("a", &s3_root, &s3_destination, "S3"),
        local(),
        NoCutoff,
    )
    .await;

    let mut app = mysql_async::Conn::new(accounts::opts(&APPLICATION, site.addr(), Some("app")))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    app.query_drop("CREATE TABLE archived (id INT AUTO_INCREMENT PRIMARY KEY, v TEXT)")
        .await
        .unwrap();
    let dump_end = Timestamp::now() - jiff::SignedDuration::from_secs(5);
    let mut acknowledged = GtidSet::new();
    let mut before: String = app.query_first("SELECT @@gtid_executed").await.unwrap().unwrap();
    let filler = "x".repeat(600);
    for round in 0..4 {
        for _ in 0..25 {
            app.exec_drop("INSERT INTO archived (v) VALUES (?)", (&filler,)).await.unwrap();
            // Acknowledged: COMMIT returned OK; its GTID is what gtid_executed gained.
            let after: String = app.query_first("SELECT @@gtid_executed").await.unwrap().unwrap();
            let gained = after
                .replace('\n', "")
                .parse::<GtidSet>()
                .unwrap()
                .difference(&before.replace('\n', "").parse::<GtidSet>().unwrap());
            assert!(!gained.is_empty(), "round {round}: the write gained no GTID");
            acknowledged.union_with(&gained);
            before = after;
        }
        site.flush_binary_logs().await.unwrap();
        sample(&server, &to_pvc.tracker()).await;
        sample(&server, &to_s3.tracker()).await;
        let settings = server.integrity().await.unwrap();
        let pvc_report = to_pvc.scan(Ok(settings.clone()), Timestamp::now()).await.unwrap();
        let s3_report = to_s3.scan(Ok(settings), Timestamp::now()).await.unwrap();
        assert!(!pvc_report.uploaded.is_empty(), "round {round}: nothing archived: {pvc_report:?}");
        assert_eq!(pvc_report.uploaded, s3_report.uploaded, "round {round}");
    }
    let sealed = local().sealed().unwrap();
    assert!(sealed.len() > 4, "size rotation sealed more files than the flushes: {sealed:?}");

    let pvc_open = open_plain(to_pvc.store(), &pvc_root).await.unwrap();
    let pvc_history = history(to_pvc.store(), &pvc_root, &pvc_open).await;
    covers("pvc", &pvc_open, &pvc_history, &acknowledged, sealed.len(), dump_end);
    let s3_open = open_plain(&s3, &s3_root).await.unwrap();
    let s3_history = history(&s3, &s3_root, &s3_open).await;
    covers("s3", &s3_open, &s3_history, &acknowledged, sealed.len(), dump_end);
    let status = to_s3.status();
    assert_eq!(status.files_archived as usize, sealed.len());
    assert!(status.last_error.is_empty(), "{status:?}");
    drop(app);
    server.close().await;
    })
    .await;
}

/// The reader's archive and the planner's latest-mode plan hold every acknowledged write.
fn covers(
    label: &str,
    open: &OpenArchive,
    history: &History,
    acknowledged: &GtidSet,
    sealed: usize,
    dump_end: Timestamp,
) {
    let archived = archived(open);
    assert!(
        acknowledged.is_subset(&archived),
        "{label}: acknowledged writes missing from the archive: {}",
        acknowledged.difference(&archived)
    );
    assert_eq!(open.manifests["a"].files.len(), sealed, "{label}: every sealed file once");
    assert_eq!(open.manifests["a"].promotions.len(), 1, "{label}");
    let backup = BackupMeta::complete(
        GtidSet::new(),
        dump_end,
        GROUP_UID,
        open.descriptor.archive_id.as_str(),
    );
    let request = Request { target: None, exclude_gtids: String::new(), allow_partial: false };
    let plan = bloodraven_pitr::plan(bloodraven_pitr::Input {
        history,
        open_refusal: None,
        backup: &backup,
        request: &request,
        limits: Limits::default(),
    })
    .unwrap_or_else(|refusal| panic!("{label}: the planner refused: {refusal:?}"));
    assert!(
        acknowledged.is_subset(&plan.certified),
        "{label}: the plan misses acknowledged writes: {}",
        acknowledged.difference(&plan.certified)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_archives_every_rotation_and_publishes_its_status() {
    crate::bounded("the_daemon_archives_every_rotation_and_publishes_its_status", 300, async {
        let dist = MysqlDist::from_env().unwrap_or_else(|e| panic!("{e}"));
        let template = ensure_template_async(&dist).await.unwrap_or_else(|e| panic!("{e}"));
        let mut site = Instance::create(&dist, &template, InstanceSpec::new("daemon", 22))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        site.start_and_wait(READY)
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", site.error_log_tail(30)));

        let pvc = tempfile::tempdir().unwrap();
        let mount = std::fs::canonicalize(pvc.path()).unwrap();
        let mountinfo = MountInfoSource::Text(format!(
            "1 0 0:1 / / rw - ext4 /dev/root rw\n2 1 0:2 / {} rw - ext4 /dev/pvc rw\n",
            mount.display()
        ));
        let destination = Destination::Pvc {
            namespace: "prod".into(),
            claim: "backups".into(),
            sub_path: "lion".into(),
        };
        let normalized = destination.normalize().unwrap();
        let archive_id = bloodraven_archive::ArchiveId::derive(GROUP_UID, &normalized);
        let vars: std::collections::HashMap<&str, String> = [
            ("BLOODRAVEN_PITR_ARCHIVE_ID", archive_id.to_string()),
            ("BLOODRAVEN_FAILOVER_GROUP_UID", GROUP_UID.to_owned()),
            ("BLOODRAVEN_PITR_DESTINATION", normalized.to_string()),
            ("SITE_NAME", "a".to_owned()),
            ("BLOODRAVEN_GROUP_NAMESPACE", "prod".to_owned()),
            ("BLOODRAVEN_GROUP_NAME", "lion".to_owned()),
            ("BLOODRAVEN_MYSQL_DATA_DIR", site.data_dir().display().to_string()),
            ("PEER_CHECK_INTERVAL", "200ms".to_owned()),
            ("ARCHIVE_SCAN_FLOOR", "100ms".to_owned()),
        ]
        .into_iter()
        .collect();
        let settings =
            ArchiverSettings::from_vars(|name| vars.get(name).cloned()).unwrap().unwrap();
        let server = MysqlServer::new(accounts::opts(&SIDECAR, site.addr(), None));
        let (status, mut published) = tokio::sync::watch::channel(None);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let daemon = tokio::spawn(async move {
            daemon::run_with(
                settings,
                server,
                status,
                async {
                    let _ = stopped.await;
                },
                &mountinfo,
                &mount,
            )
            .await;
        });

        let mut app =
            mysql_async::Conn::new(accounts::opts(&APPLICATION, site.addr(), Some("app")))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        app.query_drop("CREATE TABLE daemon (id INT AUTO_INCREMENT PRIMARY KEY)").await.unwrap();
        for round in 1..=3u64 {
            app.query_drop("INSERT INTO daemon () VALUES ()").await.unwrap();
            site.flush_binary_logs().await.unwrap();
            // Wait (bounded) for the status to list every sealed file.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            loop {
                let last = published.borrow_and_update().clone();
                let archived = last.as_ref().and_then(|v| v["filesArchived"].as_u64());
                if archived == Some(round) {
                    let status = last.unwrap();
                    assert_eq!(status["primary"], true, "{status}");
                    assert_eq!(status["archive"]["state"], "Verified", "{status}");
                    assert_eq!(status["lastError"], "", "{status}");
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "round {round}: waited 60 s for filesArchived={round}; last status: {last:?}"
                );
                let _ = tokio::time::timeout(Duration::from_millis(200), published.changed()).await;
            }
        }
        let _ = stop.send(());
        daemon.await.unwrap();
        let store = FsStore::new(mount_path(&pvc)).unwrap();
        // The claim's root holds `<subPath>/binlogs`, where the restore Job reads it.
        let root = ArchiveRoot::under_profile("lion").unwrap();
        let open = open_plain(&store, &root).await.unwrap();
        assert_eq!(open.manifests["a"].files.len(), 3);
        drop(app);
    })
    .await;
}

fn mount_path(pvc: &tempfile::TempDir) -> std::path::PathBuf {
    std::fs::canonicalize(pvc.path()).unwrap()
}
