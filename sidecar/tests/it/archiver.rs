//! The archiver over real stores (PVC layout in a temp dir, SeaweedFS) with real binlog files
//! (`crates/binlog/test_data`, written by MySQL) and a role tracker fed by hand: descriptor
//! creation and the race, refusals, crash safety between object and manifest writes, and the
//! two-write retirement.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bloodraven_archive::descriptor::{ArchiveDescriptor, Encryption, SourceRef};
use bloodraven_archive::reader::{OpenArchive, OpenError, ReaderKey, ReaderOptions};
use bloodraven_archive::{ArchiveId, Destination};
use bloodraven_gtid::GtidSet;
use bloodraven_sidecar::archiver::episode::{Observation, Probe};
use bloodraven_sidecar::archiver::integrity::IntegritySettings;
use bloodraven_sidecar::archiver::local::LocalBinlogs;
use bloodraven_sidecar::archiver::retention::{
    COVERAGE_GTID_V1, CutoffError, CutoffProof, CutoffReply, CutoffSource, NoCutoff,
};
use bloodraven_sidecar::archiver::session::{self, Established, WriterIdentity};
use bloodraven_sidecar::archiver::status::ArchiveState;
use bloodraven_sidecar::archiver::{Archiver, ArchiverConfig};
use bloodraven_store::{
    ArchiveRoot, Error as StoreError, FsStore, ListPage, Object, ObjectMeta, ObjectStore,
    Operation, open_archive,
};
use jiff::{SignedDuration, Timestamp};

pub(crate) const GROUP_UID: &str = "2b0c6e5e-0d1f-4a8e-9d59-5f1c0f7a0001";
pub(crate) const SERVER_UUID: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

/// The test data binlogs: three sealed files and an active one.
const SEALED: [&str; 3] =
    ["mysql-rows.000001", "mysql-tagged-compressed.000001", "mysql-anonymous.000001"];

pub(crate) fn destination() -> Destination {
    Destination::Pvc { namespace: "prod".into(), claim: "backups".into(), sub_path: "lion".into() }
}

pub(crate) fn identity(site: &str, uid: &str) -> WriterIdentity {
    identity_for(site, uid, &destination())
}

pub(crate) fn identity_for(site: &str, uid: &str, destination: &Destination) -> WriterIdentity {
    let destination = destination.normalize().unwrap();
    WriterIdentity {
        source: SourceRef { namespace: "prod".into(), name: "lion".into(), uid: uid.into() },
        archive_id: ArchiveId::derive(uid, &destination),
        key: ReaderKey::None,
        site: site.into(),
    }
}

pub(crate) fn config(site: &str, root: &ArchiveRoot) -> ArchiverConfig {
    config_for(site, root, &destination(), "PVC")
}

pub(crate) fn config_for(
    site: &str,
    root: &ArchiveRoot,
    destination: &Destination,
    storage_type: &str,
) -> ArchiverConfig {
    ArchiverConfig {
        identity: identity_for(site, GROUP_UID, destination),
        destination: destination.normalize().unwrap(),
        root: root.clone(),
        storage_type: storage_type.into(),
        probe_interval: Duration::from_secs(5),
        retention_interval: Duration::from_secs(3600),
        key_revision: None,
    }
}

pub(crate) fn safe_settings() -> IntegritySettings {
    IntegritySettings {
        binlog_format: "ROW".into(),
        binlog_row_image: "FULL".into(),
        replica_preserve_commit_order: "1".into(),
        ..Default::default()
    }
}

fn test_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/binlog/test_data").join(name)
}

/// A data directory with `binlog.000001..3` (sealed) and `binlog.000004` (active).
pub(crate) fn datadir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut index = String::new();
    for (n, source) in SEALED.iter().enumerate() {
        let name = format!("binlog.{:06}", n + 1);
        std::fs::copy(test_data(source), dir.path().join(&name)).unwrap();
        index.push_str(&format!("./{name}\n"));
    }
    std::fs::copy(test_data("mysql-truncated.000001"), dir.path().join("binlog.000004")).unwrap();
    index.push_str("./binlog.000004\n");
    std::fs::write(dir.path().join("binlog.index"), index).unwrap();
    dir
}

pub(crate) fn writable(second: i64, gtids: &str) -> Probe {
    let at = Timestamp::from_second(1_793_871_000 + second).unwrap();
    Probe::Observed(Observation {
        read_only: false,
        server_uuid: SERVER_UUID.parse().unwrap(),
        server_id: 1,
        gtid_executed: gtids.parse().unwrap(),
        started_at: at,
        returned_at: at,
    })
}

pub(crate) async fn open_plain<S: ObjectStore>(
    store: &S,
    root: &ArchiveRoot,
) -> Result<OpenArchive, OpenError> {
    open_archive(store, root, ReaderOptions::new(ReaderKey::None)).await
}

pub(crate) fn now() -> Timestamp {
    Timestamp::from_second(1_793_871_100).unwrap()
}

/// Which operation to fail, and on which keys.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Fault {
    None,
    /// Every put of a key ending with this suffix fails.
    PutEndingWith(String),
    /// Every delete fails.
    Delete,
}

/// A store that fails chosen operations (a crash between two writes looks the same to the
/// archive: the first write landed, the second did not).
#[derive(Clone)]
struct Flaky<S> {
    inner: S,
    fault: Arc<Mutex<Fault>>,
}

impl<S> Flaky<S> {
    fn set(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
    }
    fn fault(&self) -> Fault {
        self.fault.lock().unwrap().clone()
    }
    fn injected(&self, operation: Operation, key: &str) -> StoreError {
        StoreError::Transient {
            store: "flaky".into(),
            operation,
            key: key.into(),
            detail: "injected failure".into(),
        }
    }
}

impl<S: ObjectStore> ObjectStore for Flaky<S> {
    fn describe(&self) -> &str {
        self.inner.describe()
    }
    async fn list(
        &self,
        prefix: &str,
        continuation: Option<&str>,
        page_size: u32,
    ) -> bloodraven_store::Result<ListPage> {
        self.inner.list(prefix, continuation, page_size).await
    }
    async fn head(&self, key: &str) -> bloodraven_store::Result<ObjectMeta> {
        self.inner.head(key).await
    }
    async fn get(&self, key: &str) -> bloodraven_store::Result<Object> {
        self.inner.get(key).await
    }
    async fn get_range(
        &self,
        key: &str,
        range: std::ops::Range<u64>,
    ) -> bloodraven_store::Result<Object> {
        self.inner.get_range(key, range).await
    }
    async fn put(&self, key: &str, body: Vec<u8>) -> bloodraven_store::Result<()> {
        if let Fault::PutEndingWith(suffix) = self.fault()
            && key.ends_with(&suffix)
        {
            return Err(self.injected(Operation::Put, key));
        }
        self.inner.put(key, body).await
    }
    async fn create(&self, key: &str, body: Vec<u8>) -> bloodraven_store::Result<()> {
        self.inner.create(key, body).await
    }
    async fn delete(&self, key: &str) -> bloodraven_store::Result<()> {
        if self.fault() == Fault::Delete {
            return Err(self.injected(Operation::Delete, key));
        }
        self.inner.delete(key).await
    }
}

struct Lab {
    _pvc: tempfile::TempDir,
    data: tempfile::TempDir,
    store: Flaky<FsStore>,
    root: ArchiveRoot,
}

fn lab() -> Lab {
    let pvc = tempfile::tempdir().unwrap();
    let store = FsStore::new(pvc.path()).unwrap();
    Lab {
        _pvc: pvc,
        data: datadir(),
        store: Flaky { inner: store, fault: Arc::new(Mutex::new(Fault::None)) },
        root: ArchiveRoot::under_profile("lion").unwrap(),
    }
}

async fn archiver<C: CutoffSource>(lab: &Lab, cutoff: C) -> Archiver<Flaky<FsStore>, C> {
    let local = LocalBinlogs::new(lab.data.path(), "binlog.index");
    let archiver = Archiver::open(lab.store.clone(), config("a", &lab.root), local, cutoff).await;
    archiver.tracker().lock().unwrap().observe(writable(0, &format!("{SERVER_UUID}:1-3")));
    archiver
}

fn names(open: &OpenArchive, site: &str) -> Vec<String> {
    open.manifests[site].files.iter().map(|row| row.name.clone()).collect()
}

#[tokio::test]
async fn the_writable_primary_creates_the_descriptor_records_its_promotion_and_archives_sealed_files()
 {
    crate::bounded("the_writable_primary_creates_the_descriptor_records_its_promotion_and_archives_sealed_files", 120, async {
    let lab = lab();
    let mut archiver = archiver(&lab, NoCutoff).await;
    let report = archiver.scan(Ok(safe_settings()), now()).await.unwrap();
    assert_eq!(report.records_saved, 1);
    assert_eq!(report.uploaded, ["binlog.000001", "binlog.000002", "binlog.000003"]);

    let open = open_plain(&lab.store, &lab.root).await.unwrap();
    assert_eq!(open.descriptor.archive_id, identity("a", GROUP_UID).archive_id);
    assert_eq!(open.descriptor.created_by, "a");
    let manifest = &open.manifests["a"];
    assert_eq!(names(&open, "a"), ["binlog.000001", "binlog.000002", "binlog.000003"]);
    assert_eq!(manifest.promotions.len(), 1);
    // Rows are the reader's: content ids authenticate the objects, coverage from the scan.
    for row in &manifest.files {
        let key = lab.root.key(&row.object_key("a").unwrap());
        let bytes = lab.store.get(&key).await.unwrap().bytes;
        assert_eq!(Some(open.content_id_key.content_id(&bytes)), row.id, "{}", row.name);
        assert_eq!(row.gtid_coverage.as_ref().unwrap().content_id, row.id);
    }
    // The active file is never uploaded; the anonymous file's coverage is incomplete.
    assert!(manifest.files.iter().all(|row| row.name != "binlog.000004"));
    assert!(!manifest.files[2].is_complete(), "anonymous transactions are not proof");

    let status = archiver.status();
    assert_eq!(status.archive.state, ArchiveState::Verified);
    assert_eq!(status.files_archived, 3);
    assert!(status.primary && status.last_error.is_empty(), "{status:?}");
    assert!(status.promotion_recorded_at.is_some());

    // A second scan changes nothing.
    let again = archiver.scan(Ok(safe_settings()), now()).await.unwrap();
    assert!(again.uploaded.is_empty() && again.records_saved == 0, "{again:?}");
    })
    .await;
}

#[tokio::test]
async fn a_replica_uploads_nothing_and_waits_for_the_descriptor() {
    crate::bounded("a_replica_uploads_nothing_and_waits_for_the_descriptor", 120, async {
        let lab = lab();
        let local = LocalBinlogs::new(lab.data.path(), "binlog.index");
        let mut archiver =
            Archiver::open(lab.store.clone(), config("b", &lab.root), local, NoCutoff).await;
        let mut probe = writable(0, &format!("{SERVER_UUID}:1-3"));
        if let Probe::Observed(observation) = &mut probe {
            observation.read_only = true;
        }
        archiver.tracker().lock().unwrap().observe(probe);
        let report = archiver.scan(Ok(safe_settings()), now()).await.unwrap();
        assert!(report.uploaded.is_empty());
        assert_eq!(archiver.status().archive.state, ArchiveState::AwaitingDescriptor);
        let listed = bloodraven_store::list_all(&lab.store, "").await.unwrap();
        assert!(listed.is_empty(), "a replica wrote {listed:?}");
    })
    .await;
}

#[tokio::test]
async fn a_crash_between_object_and_manifest_write_loses_nothing_and_lists_nothing_twice() {
    crate::bounded(
        "a_crash_between_object_and_manifest_write_loses_nothing_and_lists_nothing_twice",
        120,
        async {
            let lab = lab();
            {
                let mut archiver = archiver(&lab, NoCutoff).await;
                // First scan with no sealed file: the descriptor and the promotion record land.
                let index = lab.data.path().join("binlog.index");
                let full = std::fs::read_to_string(&index).unwrap();
                std::fs::write(&index, "./binlog.000004\n").unwrap();
                archiver.scan(Ok(safe_settings()), now()).await.unwrap();
                std::fs::write(&index, full).unwrap();
                // Then every manifest save fails: the sidecar "dies" after writing the first object.
                lab.store.set(Fault::PutEndingWith("manifest-a.json".into()));
                let error = archiver.scan(Ok(safe_settings()), now()).await.unwrap_err();
                assert!(error.to_string().contains("injected failure"), "{error}");
                let status = archiver.status();
                assert_eq!(status.consecutive_failed_scans, 1);
                assert_eq!(status.upload_failures, 1);
                assert!(status.last_error.contains("injected failure"), "{status:?}");
            }
            let open = open_plain(&lab.store, &lab.root).await.unwrap();
            assert!(open.manifests["a"].files.is_empty(), "no row may be listed before its save");
            let objects = bloodraven_store::list_all(&lab.store, "lion/binlogs/a/").await.unwrap();
            assert_eq!(objects.len(), 1, "the first object was written before the failed save");

            // Restart: a new archiver on the healthy store.
            lab.store.set(Fault::None);
            let mut restarted = archiver(&lab, NoCutoff).await;
            let report = restarted.scan(Ok(safe_settings()), now()).await.unwrap();
            assert_eq!(report.uploaded, ["binlog.000001", "binlog.000002", "binlog.000003"]);
            let open = open_plain(&lab.store, &lab.root).await.unwrap();
            let listed = names(&open, "a");
            let unique: BTreeSet<_> = listed.iter().collect();
            assert_eq!(listed.len(), unique.len(), "listed twice: {listed:?}");
            assert_eq!(listed.len(), 3);
            let objects = bloodraven_store::list_all(&lab.store, "lion/binlogs/a/").await.unwrap();
            assert_eq!(objects.len(), 3, "{objects:?}");
        },
    )
    .await;
}

#[tokio::test]
async fn two_writers_racing_to_create_the_descriptor_one_wins_the_other_verifies() {
    crate::bounded(
        "two_writers_racing_to_create_the_descriptor_one_wins_the_other_verifies",
        120,
        async {
            let pvc = tempfile::tempdir().unwrap();
            let store = FsStore::new(pvc.path()).unwrap();
            let root = ArchiveRoot::under_profile("lion").unwrap();
            let (me_a, me_b) = (identity("a", GROUP_UID), identity("b", GROUP_UID));
            for round in 0..5 {
                let root = ArchiveRoot::new(&format!("race-{round}/binlogs")).unwrap();
                let (a, b) = tokio::join!(
                    session::establish(&store, &root, &me_a, true, now()),
                    session::establish(&store, &root, &me_b, true, now()),
                );
                let (
                    Established::Verified { bytes: a, .. },
                    Established::Verified { bytes: b, .. },
                ) = (a.unwrap(), b.unwrap())
                else {
                    panic!("both writers must verify");
                };
                assert_eq!(a, b, "both verified the same descriptor");
            }
            // The same on SeaweedFS (If-None-Match: *).
            let weed =
                bloodraven_store::testing::SeaweedFs::start().unwrap_or_else(|e| panic!("{e}"));
            let s3 = weed.bucket_store("race", "").await.unwrap();
            let (a, b) = tokio::join!(
                session::establish(&s3, &root, &me_a, true, now()),
                session::establish(&s3, &root, &me_b, true, now()),
            );
            assert!(matches!(a.unwrap(), Established::Verified { .. }));
            assert!(matches!(b.unwrap(), Established::Verified { .. }));
            let open = open_plain(&s3, &root).await.unwrap();
            assert!(["a", "b"].contains(&open.descriptor.created_by.as_str()));
        },
    )
    .await;
}

#[tokio::test]
async fn foreign_damaged_and_legacy_prefixes_are_refused_with_their_tokens_and_kept() {
    crate::bounded(
        "foreign_damaged_and_legacy_prefixes_are_refused_with_their_tokens_and_kept",
        120,
        async {
            let cases: Vec<Case> = vec![
                ("foreign", vec![("archive.json", foreign_descriptor())], "PITRArchiveForeign"),
                (
                    "damaged",
                    vec![("archive.json", b"{\"kind\":".to_vec())],
                    "PITRArchiveVersionUnsupported",
                ),
                (
                    "legacy",
                    vec![("manifest-a.json", br#"{"version":1,"files":[]}"#.to_vec())],
                    "PITRArchiveLegacy",
                ),
                (
                    "missing",
                    vec![(
                        "manifest-b.json",
                        bloodraven_archive::Manifest::new(identity("b", GROUP_UID).archive_id, "b")
                            .to_vec(),
                    )],
                    "PITRArchiveDescriptorMissing",
                ),
                (
                    "older-writer",
                    vec![
                        ("archive.json", own_descriptor()),
                        ("manifest-a.json", br#"{"version":1,"files":[]}"#.to_vec()),
                    ],
                    "PITRArchiveLegacy",
                ),
            ];
            for (name, objects, token) in cases {
                let lab = lab();
                for (key, bytes) in &objects {
                    lab.store.put(&lab.root.key(key), bytes.clone()).await.unwrap();
                }
                let mut archiver = archiver(&lab, NoCutoff).await;
                let error = archiver.scan(Ok(safe_settings()), now()).await.unwrap_err();
                assert!(error.to_string().starts_with(token), "{name}: {error}");
                let status = archiver.status();
                assert!(status.last_error.starts_with(token), "{name}: {status:?}");
                assert_eq!(status.archive.state, ArchiveState::Refused, "{name}");
                assert_eq!(status.archive.reason.as_deref(), token.strip_prefix("PITR"), "{name}");
                // Nothing overwritten, nothing uploaded.
                for (key, bytes) in &objects {
                    assert_eq!(
                        &lab.store.get(&lab.root.key(key)).await.unwrap().bytes,
                        bytes,
                        "{name}: {key}"
                    );
                }
                let all = bloodraven_store::list_all(&lab.store, "").await.unwrap();
                assert_eq!(all.len(), objects.len(), "{name}: {all:?}");
            }
        },
    )
    .await;
}

/// A refusal case: name, objects laid into the prefix, the expected token.
type Case = (&'static str, Vec<(&'static str, Vec<u8>)>, &'static str);

fn own_descriptor() -> Vec<u8> {
    let me = identity("a", GROUP_UID);
    ArchiveDescriptor::new(me.archive_id, me.source, Encryption::none(), now(), "a").to_vec()
}

fn foreign_descriptor() -> Vec<u8> {
    let other = identity("a", "another-group-uid");
    ArchiveDescriptor::new(other.archive_id, other.source, Encryption::none(), now(), "x").to_vec()
}

/// A cutoff source whose reply the test sets.
#[derive(Clone)]
struct Proofs(Arc<Mutex<CutoffReply>>);

impl CutoffSource for Proofs {
    async fn fetch(&self) -> Result<CutoffReply, CutoffError> {
        Ok(self.0.lock().unwrap().clone())
    }
}

#[tokio::test]
async fn retirement_is_two_writes_and_a_failed_delete_is_retried_by_the_next_sweep() {
    crate::bounded(
        "retirement_is_two_writes_and_a_failed_delete_is_retried_by_the_next_sweep",
        120,
        async {
            let lab = lab();
            let proofs =
                Proofs(Arc::new(Mutex::new(CutoffReply::Deferred("noRetainedBackups".into()))));
            let mut archiver = archiver(&lab, proofs.clone()).await;
            archiver.scan(Ok(safe_settings()), now()).await.unwrap();
            assert_eq!(
                archiver.status().retention_deferred_reason.as_deref(),
                Some("noRetainedBackups")
            );
            let manifest = archiver.manifest().unwrap().clone();
            let first = &manifest.files[0];
            // A backup that holds exactly the first file's transactions (and the previous ones).
            let mut covered = first.previous_gtids.clone();
            covered.union_with(first.effective_gtids());
            let later = first.last_event_time.unwrap() + SignedDuration::from_hours(48);
            *proofs.0.lock().unwrap() = CutoffReply::Proof(CutoffProof {
                archive: identity("a", GROUP_UID).archive_id.to_string(),
                coverage: COVERAGE_GTID_V1.into(),
                retained_gtids: vec![covered.clone()],
                cutoff_time: Some(later - SignedDuration::from_hours(1)),
            });
            // The deletes fail: the first write happened, the rows are pending.
            lab.store.set(Fault::Delete);
            let mut report = Default::default();
            archiver.retain(later, &mut report).await.unwrap();
            let retired: Vec<String> = report.retired.clone();
            assert!(retired.contains(&first.name), "{report:?}");
            assert!(report.deleted.is_empty());
            let open = open_plain(&lab.store, &lab.root).await.unwrap();
            let manifest = &open.manifests["a"];
            assert!(
                manifest.files.iter().all(|row| !retired.contains(&row.name)),
                "retired rows are not advertised"
            );
            assert!(manifest.pruned.iter().all(|r| !r.deleted));
            // Every retired row's transactions are in the retained backup: nothing a backup needs.
            for record in &manifest.pruned {
                let row = archiver_row(&open, &record.name);
                assert!(row.is_none(), "{} still live", record.name);
            }
            // Restart with the operator unreachable: the pending deletes still finish.
            lab.store.set(Fault::None);
            *proofs.0.lock().unwrap() = CutoffReply::Deferred("backupInFlight".into());
            let mut restarted = archiver_with(&lab, proofs.clone()).await;
            let mut report = Default::default();
            restarted.retain(later, &mut report).await.unwrap();
            assert_eq!(report.deleted.len(), retired.len(), "{report:?}");
            let open = open_plain(&lab.store, &lab.root).await.unwrap();
            assert!(open.manifests["a"].pruned.iter().all(|r| r.deleted));
            for record in &open.manifests["a"].pruned {
                let key = lab.root.key(&format!("a/{}.{}", record.name, record.id.unwrap()));
                assert!(lab.store.head(&key).await.is_err(), "{key} still there");
            }
            // The retired file stays retired: the next scan does not upload it again.
            let report = restarted.scan(Ok(safe_settings()), later).await.unwrap();
            assert!(report.uploaded.is_empty(), "{report:?}");
        },
    )
    .await;
}

fn archiver_row<'a>(open: &'a OpenArchive, name: &str) -> Option<&'a bloodraven_archive::FileRow> {
    open.manifests["a"].files.iter().find(|row| row.name == name)
}

async fn archiver_with<C: CutoffSource>(lab: &Lab, cutoff: C) -> Archiver<Flaky<FsStore>, C> {
    archiver(lab, cutoff).await
}

#[tokio::test]
async fn a_history_violation_is_persisted_once_and_stops_uploads_for_good() {
    crate::bounded(
        "a_history_violation_is_persisted_once_and_stops_uploads_for_good",
        120,
        async {
            let lab = lab();
            let mut archiver = archiver(&lab, NoCutoff).await;
            let mut unsafe_settings = safe_settings();
            unsafe_settings.binlog_format = "MIXED".into();
            let report = archiver.scan(Ok(unsafe_settings), now()).await.unwrap();
            assert!(report.uploaded.is_empty());
            let status = archiver.status();
            assert!(status.last_error.starts_with("PITRArchiveUnsafeHistory"), "{status:?}");
            let open = open_plain(&lab.store, &lab.root).await.unwrap();
            let marker = open.manifests["a"].history_integrity.clone().unwrap();
            assert_eq!(marker.detail, "binlog_format=MIXED (ROW is required)");
            // Fixed setting: the marker stays and nothing is uploaded.
            let report = archiver.scan(Ok(safe_settings()), now()).await.unwrap();
            assert!(report.uploaded.is_empty());
            assert!(archiver.status().history_integrity.is_some());
        },
    )
    .await;
}

#[allow(dead_code, reason = "shared with archiver_mysql.rs")]
pub(crate) fn gtid_union<'a>(sets: impl IntoIterator<Item = &'a GtidSet>) -> GtidSet {
    let mut all = GtidSet::new();
    for set in sets {
        all.union_with(set);
    }
    all
}
