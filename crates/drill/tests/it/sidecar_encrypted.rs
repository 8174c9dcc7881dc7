//! The encrypted PITR archive in the live lab (issue 18): the group's archive profile encrypts
//! (`encryption.passphraseSecretKeyRef`), the operator renders the passphrase Secret as the
//! sidecar's key file (volume `pitr-key`, mode 0440, group the pod's fsGroup, `BLOODRAVEN_PITR_PASSPHRASE_FILE`) and the
//! lab kubelet projects it into the pod's folder. First without the Secret: mysqld runs, the
//! sidecars build no store and upload nothing (`storeReady: false`, the missing key named), and
//! the operator reports `PITRArchiveReady=False/ArchiveStoreInitFailed`. Then the Secret is
//! created: the primary's sidecar seals what it uploads, the archive at rest holds no plaintext
//! (a marker written by the workload is in the server's binlog, never in the archive), and the
//! reader the console and the planner use opens it with the passphrase, covering every
//! acknowledged write up to the last sealed file, while without the key it refuses. Needs MySQL
//! 9.7 (`source scripts/provision.sh`) and the sidecar binary (`cargo build -p
//! bloodraven-sidecar`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bloodraven_archive::reader::{ReaderKey, ReaderOptions};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::{
    BackupEncryption, BackupProfile, BackupStorage, PitrSpec, PvcStorage, StorageType,
};
use bloodraven_drill::live::{LiveLab, LiveOptions};
use bloodraven_gtid::GtidSet;
use bloodraven_kubelet::SidecarConfig;
use bloodraven_replay::download::{Opened, download};
use bloodraven_sites::accounts::{self, OPERATOR};
use bloodraven_store::{ArchiveRoot, FsStore, open_archive};
use k8s_openapi::api::core::v1::SecretKeySelector;
use mysql_async::prelude::Queryable as _;

use crate::sidecar::{InProcessWithHttp, wait_for};

/// The passphrase Secret the profile names.
const SECRET: &str = "orders-archive-key";
/// Its key.
const KEY: &str = "passphrase";
/// The passphrase (a trailing newline, as `kubectl create secret --from-file` keeps it).
const PASSPHRASE: &str = "correct horse battery staple\n";
/// Written in every row: it reaches the server's binlog, and must not reach the archive.
const MARKER: &str = "BLOODRAVEN-PLAINTEXT-MARKER-4f1c9e";

fn group() -> MysqlFailoverGroup {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("drills/manifests/operator-three-sites.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut group: MysqlFailoverGroup = serde_norway::from_str(&text).unwrap();
    let backup = group.spec.backup.get_or_insert_with(Default::default);
    backup.profiles.push(BackupProfile {
        name: "sealed".to_owned(),
        storage: BackupStorage {
            type_: StorageType::Pvc,
            s3: None,
            pvc: Some(PvcStorage {
                provisioned: None,
                claim_name: Some("pitr".to_owned()),
                sub_path: Some("orders".to_owned()),
            }),
        },
        dump: None,
        retention: None,
        encryption: Some(BackupEncryption {
            algorithm: None,
            passphrase_secret_key_ref: SecretKeySelector {
                name: SECRET.to_owned(),
                key: KEY.to_owned(),
                optional: None,
            },
        }),
        verification: None,
    });
    backup.pitr = Some(PitrSpec {
        enabled: Some(true),
        profile_name: Some("sealed".to_owned()),
        // A store that could not be built is retried every poll interval.
        archive_poll_interval: Some(bloodraven_crd::Duration::new("3s")),
        ..PitrSpec::default()
    });
    group
}

/// `site`'s `/archiver/status` body (`None` while its sidecar does not answer).
async fn archiver_status(live: &LiveLab, site: &str) -> Option<serde_json::Value> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let resolver = live.resolver().ok()?;
    let service = bloodraven_workloads::SiteNames::new(live.group_name(), site).internal_service;
    let addr = resolver.upstream(live.namespace(), &service, 8080)?;
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream.write_all(b"GET /archiver/status HTTP/1.0\r\n\r\n").await.ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await.ok()?;
    let (_, body) = text.split_once("\r\n\r\n")?;
    serde_json::from_str(body).ok()
}

/// Every regular file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.is_file() {
                found.push(path);
            }
        }
    }
    found
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

fn group_condition(live: &LiveLab, kind: &str) -> Option<(String, String, String)> {
    let group = live.group_object()?;
    let condition =
        group["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)?.clone();
    Some((
        condition["status"].as_str()?.to_owned(),
        condition["reason"].as_str().unwrap_or_default().to_owned(),
        condition["message"].as_str().unwrap_or_default().to_owned(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_archive_waits_for_its_key_then_holds_no_plaintext_and_opens_with_it() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let binary = SidecarConfig::locate()
        .expect("the sidecar binary: run `cargo build -p bloodraven-sidecar` first");
    let live = LiveLab::start_with(
        &group(),
        Some(Arc::new(InProcessWithHttp)),
        LiveOptions { sidecar: Some(binary), ..LiveOptions::default() },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let store = FsStore::new(live.pvc_archive_dir()).unwrap();
    let root = ArchiveRoot::under_profile("orders/pitr/orders").unwrap();
    let run = async {
        // Without the Secret: mysqld runs and the group gets its primary (the key volume is
        // optional, so a missing key never keeps the database down)...
        let active = wait_for("an active site", Duration::from_secs(150), async || {
            let group = live.group_object()?;
            let ready = group["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            ready.then(|| group["status"]["activeSite"].as_str().map(str::to_owned)).flatten()
        })
        .await;
        // ...but no sidecar archives without its key: no store, the missing key named.
        for site in live.sites() {
            let status = wait_for(
                &format!("{site}'s archiver refusing to build a store without its key"),
                Duration::from_secs(60),
                async || {
                    let status = archiver_status(&live, site).await?;
                    (status["enabled"] == true && status["storeReady"] == false).then_some(status)
                },
            )
            .await;
            let error = status["lastError"].as_str().unwrap_or_default();
            assert!(
                error.starts_with("archive store init: cannot read the archive passphrase file"),
                "{site}: {status}"
            );
            assert!(error.contains("passphraseSecretKeyRef) is missing"), "{site}: {status}");
        }
        let (_, reason, message) = wait_for(
            "PITRArchiveReady=False/ArchiveStoreInitFailed",
            Duration::from_secs(120),
            async || {
                let condition = group_condition(&live, "PITRArchiveReady")?;
                (condition.0 == "False" && condition.1 == "ArchiveStoreInitFailed")
                    .then_some(condition)
            },
        )
        .await;
        assert!(message.contains("passphrase"), "{reason}: {message}");
        assert!(
            files_under(&live.pvc_archive_dir()).is_empty(),
            "nothing is written without the key: {:?}",
            files_under(&live.pvc_archive_dir())
        );

        // The Secret appears: the kubelet projects it, the sidecars build their stores.
        live.lab()
            .apply(serde_json::json!({
                "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": SECRET, "namespace": live.namespace()},
                "stringData": {KEY: PASSPHRASE},
            }))
            .unwrap();

        // The workload: acknowledged writes carrying the marker, then a rotation.
        let primary = live.primary_addr().unwrap();
        let pool = mysql_async::Pool::new(accounts::opts(&OPERATOR, primary, None));
        let mut conn = pool.get_conn().await.unwrap();
        conn.query_drop("CREATE TABLE IF NOT EXISTS app.sealed (id INT PRIMARY KEY, note TEXT)")
            .await
            .unwrap();
        for id in 0..50 {
            conn.exec_drop(
                "INSERT INTO app.sealed VALUES (?, ?)",
                (id, format!("{MARKER} row {id}")),
            )
            .await
            .unwrap();
        }
        let acknowledged: String =
            conn.query_first("SELECT @@global.gtid_executed").await.unwrap().unwrap();
        let acknowledged: GtidSet = acknowledged.replace('\n', "").parse().unwrap();
        conn.query_drop("FLUSH BINARY LOGS").await.unwrap();
        drop(conn);
        pool.disconnect().await.unwrap();

        // The reader the console and the planner use, with the passphrase, covers every
        // acknowledged write up to the sealed file.
        let key = ReaderKey::Passphrase {
            algorithm: "AES-256-GCM".to_owned(),
            passphrase: PASSPHRASE.as_bytes().to_vec(),
        };
        let archived = wait_for(
            "the sealed binlog in the encrypted archive",
            Duration::from_secs(90),
            async || {
                let open =
                    open_archive(&store, &root, ReaderOptions::new(key.clone())).await.ok()?;
                let manifest = open.manifests.get(&active)?;
                let mut all = GtidSet::new();
                for row in &manifest.files {
                    all.union_with(row.effective_gtids());
                }
                acknowledged.is_subset(&all).then_some(all)
            },
        )
        .await;
        assert!(acknowledged.is_subset(&archived));
        match download(&store, &root, ReaderOptions::new(key.clone()), None).await.unwrap() {
            Opened::Archive(downloaded) => {
                // Every row decrypted, authenticated and indexed: the transactions read back.
                let mut all = GtidSet::new();
                for file in &downloaded.history.files {
                    for gtid in file.txns().iter().filter_map(|txn| txn.gtid.as_ref()) {
                        all.insert(gtid).unwrap();
                    }
                }
                assert!(
                    acknowledged.is_subset(&all),
                    "pitr-download's index covers the acknowledged writes: {all} vs {acknowledged}"
                );
            }
            Opened::Refused(refusal) => panic!("the keyed download refused: {refusal:?}"),
        }
        // Without the key the same reader refuses with the spec's token, never plaintext.
        match download(&store, &root, ReaderOptions::new(ReaderKey::None), None).await.unwrap() {
            Opened::Refused(refusal) => assert!(
                refusal.token.as_str().starts_with("PITRArchive"),
                "{}: {}",
                refusal.token.as_str(),
                refusal.message
            ),
            Opened::Archive(_) => panic!("an encrypted archive opened without its key"),
        }

        // At rest: the marker is in the server's binlogs (so this check can fail), and in no
        // object, manifest or descriptor of the archive.
        let binlogs: Vec<PathBuf> = files_under(&live.dir().join("claims"))
            .into_iter()
            .filter(|path| {
                path.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("mysql-bin.0"))
            })
            .collect();
        assert!(
            binlogs.iter().any(|path| contains(&std::fs::read(path).unwrap(), MARKER.as_bytes())),
            "the marker reached a server binlog: {binlogs:?}"
        );
        let stored = files_under(&live.pvc_archive_dir());
        assert!(stored.len() >= 3, "descriptor, manifest and objects: {stored:?}");
        for path in &stored {
            let bytes = std::fs::read(path).unwrap();
            assert!(
                !contains(&bytes, MARKER.as_bytes()),
                "plaintext at rest in {}",
                path.display()
            );
            assert!(
                !contains(&bytes, PASSPHRASE.trim_end().as_bytes()),
                "the passphrase at rest in {}",
                path.display()
            );
        }

        // The operator's roll-up recovers: every site verified the one archive, Passphrase.
        wait_for(
            "PITRArchiveReady=True and a Verified Passphrase archive",
            Duration::from_secs(120),
            async || {
                let group = live.group_object()?;
                let archive = &group["status"]["pitr"]["archive"];
                let verified =
                    archive["state"] == "Verified" && archive["encryptionMode"] == "Passphrase";
                let ready = group_condition(&live, "PITRArchiveReady")?.0 == "True";
                (verified && ready).then_some(())
            },
        )
        .await;
    };
    tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .unwrap_or_else(|_| panic!("the encrypted live archive test did not finish within 600 s"));
    live.stop().await;
}
