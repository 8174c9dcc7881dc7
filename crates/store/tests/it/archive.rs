//! The archive IO adapter over real stores.
//!
//! Every fixture scenario of bloodraven-archive (plus refusal variants derived from them) is
//! written to a filesystem store and to a real SeaweedFS, opened through `open_archive`, and
//! compared with the pure reader driven directly over the in-memory map: the same descriptor,
//! manifests, coverage and windows, or the same refusal. Then the failure paths: permission
//! denied listings (a real EACCES and a real S3 403) become `PITRArchiveListFailed` with their
//! remedies; transient failures are retried with the reader's backoff (paused time) and never
//! reported as damage; a server stopped mid-open ends without a token.

use std::collections::BTreeMap;
use std::ops::Range;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use bloodraven_archive::coverage::{Coverage, ForkCause, GapKind, Window, WindowStop};
use bloodraven_archive::descriptor::{ArchiveDescriptor, ArchiveId};
use bloodraven_archive::fixtures::{Fixture, PASSPHRASE, Scenario, UUID_A, UUID_B, range};
use bloodraven_archive::manifest::Manifest;
use bloodraven_archive::reader::{
    ArchiveReader, FetchError, OpenArchive, OpenError, ReaderKey, ReaderOptions, Request,
};
use bloodraven_archive::refusal::{
    REMEDY_LIST_EACCES, REMEDY_LIST_S3_FORBIDDEN, Refusal, RefusalToken,
};
use bloodraven_store::archive::{
    ArchiveRoot, open_archive, probe_archive_store, write_fixture, write_objects,
};
use bloodraven_store::{
    Denial, Error, ErrorKind, FsStore, ListPage, Object, ObjectMeta, ObjectStore, Operation,
    S3Credentials, S3Store, list_all,
};

use crate::bounded;

// ---------------------------------------------------------------------------------------------
// The reference: the pure reader over the in-memory map.

/// Drives the sans-IO reader over `objects` directly (no store, no adapter).
fn open_in_memory(
    objects: &BTreeMap<String, Vec<u8>>,
    options: ReaderOptions,
) -> Result<OpenArchive, OpenError> {
    let mut reader = ArchiveReader::new(options);
    while let Some(fetch) = reader.next_fetch() {
        match fetch.request {
            Request::List => reader.feed_listing(Ok(objects.keys().cloned().collect())),
            Request::Get { key, max_bytes } => reader.feed_object(match objects.get(&key) {
                Some(bytes) => Ok(bytes[..bytes.len().min(max_bytes as usize)].to_vec()),
                None => Err(FetchError::NotFound),
            }),
        }
    }
    reader.finish()
}

/// What an open is compared on.
#[derive(Debug, PartialEq)]
enum Outcome {
    Opened {
        descriptor: Box<ArchiveDescriptor>,
        manifests: BTreeMap<String, Manifest>,
        coverage: Box<Coverage>,
        /// The window of every named backup of the fixture.
        windows: BTreeMap<&'static str, Window>,
    },
    Failed(OpenError),
}

fn outcome(fixture: &Fixture, result: Result<OpenArchive, OpenError>) -> Outcome {
    match result {
        Ok(archive) => {
            let coverage = Coverage::of(&archive);
            let windows = fixture
                .backups
                .iter()
                .map(|(name, backup)| (*name, coverage.window(backup, &Default::default())))
                .collect();
            Outcome::Opened {
                descriptor: Box::new(archive.descriptor),
                manifests: archive.manifests,
                coverage: Box::new(coverage),
                windows,
            }
        }
        Err(error) => Outcome::Failed(error),
    }
}

// ---------------------------------------------------------------------------------------------
// The cases: every scenario, and refusal variants of them.

fn plaintext() -> ReaderOptions {
    ReaderOptions::new(ReaderKey::None)
}

fn passphrase(bytes: &[u8]) -> ReaderOptions {
    ReaderOptions::new(ReaderKey::Passphrase {
        algorithm: "AES-256-GCM".into(),
        passphrase: bytes.to_vec(),
    })
}

/// The expectation beyond "same as in memory", so a reader bug shared by both sides still
/// fails.
enum Expect {
    Opens(fn(&Fixture, &Coverage)),
    Refused(RefusalToken),
}

struct Case {
    name: &'static str,
    fixture: Fixture,
    objects: BTreeMap<String, Vec<u8>>,
    options: ReaderOptions,
    expect: Expect,
}

fn case(
    name: &'static str,
    scenario: Scenario,
    edit: impl FnOnce(&mut BTreeMap<String, Vec<u8>>),
    options: ReaderOptions,
    expect: Expect,
) -> Case {
    let fixture = Fixture::build(scenario);
    let mut objects = fixture.objects.clone();
    edit(&mut objects);
    Case { name, fixture, objects, options, expect }
}

fn t(fixture: &Fixture, uuid: bloodraven_gtid::Uuid, gno: u64) -> Option<jiff::Timestamp> {
    Some(fixture.commit_time(uuid, gno).unwrap())
}

fn healthy(fixture: &Fixture, coverage: &Coverage) {
    assert!(coverage.gaps.is_empty() && coverage.forks.is_empty(), "{coverage:?}");
    let sites: Vec<&str> = coverage.sites.iter().map(|s| s.site.as_str()).collect();
    assert_eq!(sites, ["a", "b", "c"]);
    let window =
        coverage.window(&fixture.backups["replica-c-before-failover"], &Default::default());
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.end, t(fixture, UUID_B, 20));
}

fn gap(fixture: &Fixture, coverage: &Coverage) {
    let gaps: Vec<_> = coverage.gaps.iter().map(|g| (g.kind, g.gtids.clone())).collect();
    assert_eq!(gaps, [(GapKind::NeverArchived, range(UUID_A, 41, 60))]);
    let window = coverage.window(&fixture.backups["b-early"], &Default::default());
    assert!(matches!(window.stop, WindowStop::Gap { .. }), "{:?}", window.stop);
    assert_eq!(window.end, t(fixture, UUID_A, 40));
}

fn fork(fixture: &Fixture, coverage: &Coverage) {
    assert_eq!(coverage.forks.len(), 1, "{:?}", coverage.forks);
    assert_eq!(coverage.forks[0].gtids, range(UUID_A, 96, 100));
    assert_eq!(coverage.forks[0].cause, ForkCause::LostAtFailover("b#0".into()));
    assert_eq!(coverage.reissue_risks.len(), 1);
    let window = coverage.window(&fixture.backups["b-before-failover"], &range(UUID_A, 96, 100));
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.end, t(fixture, UUID_B, 50));
}

fn marker(fixture: &Fixture, coverage: &Coverage) {
    assert_eq!(coverage.unsafe_sites.len(), 1);
    assert_eq!(coverage.unsafe_sites[0].removed, range(UUID_A, 1, 20));
    let gaps: Vec<_> = coverage.gaps.iter().map(|g| (g.kind, g.gtids.clone())).collect();
    assert_eq!(
        gaps,
        [
            (GapKind::NeverArchived, range(UUID_A, 21, 30)),
            (GapKind::UnsafeHistory, range(UUID_A, 1, 20))
        ]
    );
    let window = coverage.window(&fixture.backups["b-after-failover"], &Default::default());
    assert_eq!(window.end, t(fixture, UUID_B, 20));
}

fn encrypted(fixture: &Fixture, coverage: &Coverage) {
    assert!(coverage.gaps.is_empty() && coverage.forks.is_empty());
    let window = coverage.window(&fixture.backups["a-early"], &Default::default());
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.end, t(fixture, UUID_A, 20));
}

const PROBE_LEFTOVER: &str = ".bloodraven-cas-probe-00000000deadbeef";

fn cases() -> Vec<Case> {
    use Expect::{Opens, Refused};
    use RefusalToken as T;
    let keep = |_: &mut BTreeMap<String, Vec<u8>>| {};
    let other_archive =
        ArchiveId::derive("another-group", &Fixture::destination().normalize().unwrap());
    let mut stamped = plaintext();
    stamped.expected_archive_id = Some(other_archive);
    vec![
        case("healthy", Scenario::HealthyPlannedFailover, keep, plaintext(), Opens(healthy)),
        case("gap", Scenario::ArchiveGap, keep, plaintext(), Opens(gap)),
        case("fork", Scenario::LossyFailoverFork, keep, plaintext(), Opens(fork)),
        case("marker", Scenario::HistoryIntegrityMarker, keep, plaintext(), Opens(marker)),
        case("legacy-v1", Scenario::LegacyV1, keep, plaintext(), Refused(T::ArchiveLegacy)),
        case("encrypted", Scenario::Encrypted, keep, passphrase(PASSPHRASE), Opens(encrypted)),
        // A probe object left behind by a failed cleanup is ignored.
        case(
            "healthy-with-probe-leftover",
            Scenario::HealthyPlannedFailover,
            |objects| {
                objects.insert(PROBE_LEFTOVER.into(), b"probe".to_vec());
            },
            plaintext(),
            Opens(healthy),
        ),
        case(
            "descriptor-missing",
            Scenario::ArchiveGap,
            |objects| {
                objects.remove("archive.json");
            },
            plaintext(),
            Refused(T::ArchiveDescriptorMissing),
        ),
        case(
            "probe-objects-only",
            Scenario::HealthyPlannedFailover,
            |objects| {
                objects.clear();
                objects.insert(PROBE_LEFTOVER.into(), b"probe".to_vec());
            },
            plaintext(),
            Refused(T::ArchiveNotFound),
        ),
        case(
            "binlogs-without-manifests",
            Scenario::HealthyPlannedFailover,
            |objects| objects.retain(|key, _| key.contains('/')),
            plaintext(),
            Refused(T::ArchiveLegacy),
        ),
        case(
            "damaged-descriptor",
            Scenario::HealthyPlannedFailover,
            |objects| {
                objects.insert("archive.json".into(), b"{\"kind\":".to_vec());
            },
            plaintext(),
            Refused(T::ArchiveVersionUnsupported),
        ),
        case(
            "descriptor-over-64-kib",
            Scenario::HealthyPlannedFailover,
            |objects| {
                let descriptor = objects.get_mut("archive.json").unwrap();
                descriptor.resize(64 * 1024 + 1, b' ');
            },
            plaintext(),
            Refused(T::ArchiveVersionUnsupported),
        ),
        case(
            "stamp-names-another-archive",
            Scenario::LossyFailoverFork,
            keep,
            stamped,
            Refused(T::ArchiveIdentityMismatch),
        ),
        case(
            "encrypted-read-as-plaintext",
            Scenario::Encrypted,
            keep,
            plaintext(),
            Refused(T::ArchiveEncryptionMismatch),
        ),
        case(
            "encrypted-wrong-passphrase",
            Scenario::Encrypted,
            keep,
            passphrase(b"not the passphrase"),
            Refused(T::ArchiveKeyMismatch),
        ),
    ]
}

/// Writes every case under `<case>/binlogs` of `store`, opens it through the adapter and
/// compares with the in-memory reference and the case's expectation.
async fn every_case_opens_as_in_memory<S: ObjectStore>(store: &S) {
    let cases = cases();
    for scenario in Scenario::ALL {
        let unedited = cases
            .iter()
            .any(|case| case.fixture.scenario == scenario && case.objects == case.fixture.objects);
        assert!(unedited, "no case writes scenario {} as built", scenario.name());
    }
    for case in cases {
        let root = ArchiveRoot::under_profile(case.name).unwrap();
        if case.objects == case.fixture.objects {
            write_fixture(store, &root, &case.fixture).await.unwrap();
        } else {
            write_objects(store, &root, &case.objects).await.unwrap();
        }
        let expected = outcome(&case.fixture, open_in_memory(&case.objects, case.options.clone()));
        let opened = open_archive(store, &root, case.options.clone()).await;
        let found = outcome(&case.fixture, opened);
        assert_eq!(found, expected, "case {}: the store open differs from in-memory", case.name);
        match (&case.expect, &found) {
            (Expect::Opens(check), Outcome::Opened { coverage, .. }) => {
                check(&case.fixture, coverage)
            }
            (Expect::Refused(token), Outcome::Failed(OpenError::Refused(refusal))) => {
                assert_eq!(refusal.token, *token, "case {}: {refusal}", case.name);
                assert!(refusal.to_string().starts_with(token.as_str()), "{refusal}");
            }
            (_, found) => panic!("case {}: unexpected outcome {found:?}", case.name),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_every_scenario_opens_as_in_memory() {
    let (root, store) = crate::fs::fresh_store();
    bounded(every_case_opens_as_in_memory(&store)).await;
    // The filesystem layout is the PVC layout: plain files at <root>/<profile>/binlogs/<key>.
    let fixture = Fixture::build(Scenario::HealthyPlannedFailover);
    for (key, bytes) in &fixture.objects {
        assert_eq!(&std::fs::read(root.path().join("healthy/binlogs").join(key)).unwrap(), bytes);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_every_scenario_opens_as_in_memory() {
    let server = crate::s3::server();
    let store = crate::s3::store(&server, "archives", "profiles").await;
    bounded(async {
        every_case_opens_as_in_memory(&store).await;
        // Keys land under the store's bucket prefix.
        let keys = list_all(&store, "encrypted/binlogs/").await.unwrap();
        let keys: Vec<&str> = keys.iter().map(|object| object.key.as_str()).collect();
        assert_eq!(keys, ["encrypted/binlogs/archive.json", "encrypted/binlogs/manifest-a.json"]);
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// The capability probe under the archive root.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_certifies_real_stores_and_leaves_nothing() {
    let (_dir, fs) = crate::fs::fresh_store();
    let server = crate::s3::server();
    let s3 = crate::s3::store(&server, "probe", "").await;
    bounded(async {
        let root = ArchiveRoot::under_profile("prod").unwrap();
        probe_archive_store(&fs, &root).await.unwrap();
        probe_archive_store(&s3, &root).await.unwrap();
        assert!(list_all(&fs, "").await.unwrap().is_empty());
        assert!(list_all(&s3, "").await.unwrap().is_empty());
    })
    .await;
}

/// A store whose `create` overwrites (as a store ignoring `If-None-Match` does).
struct CreateOverwrites<S>(S);

impl<S: ObjectStore> ObjectStore for CreateOverwrites<S> {
    fn describe(&self) -> &str {
        self.0.describe()
    }
    async fn list(&self, prefix: &str, next: Option<&str>, size: u32) -> Result<ListPage, Error> {
        self.0.list(prefix, next, size).await
    }
    async fn head(&self, key: &str) -> Result<ObjectMeta, Error> {
        self.0.head(key).await
    }
    async fn get(&self, key: &str) -> Result<Object, Error> {
        self.0.get(key).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Object, Error> {
        self.0.get_range(key, range).await
    }
    async fn put(&self, key: &str, body: Vec<u8>) -> Result<(), Error> {
        self.0.put(key, body).await
    }
    async fn create(&self, key: &str, body: Vec<u8>) -> Result<(), Error> {
        self.0.put(key, body).await
    }
    async fn delete(&self, key: &str) -> Result<(), Error> {
        self.0.delete(key).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_refuses_a_store_without_atomic_create() {
    let (_dir, fs) = crate::fs::fresh_store();
    let store = CreateOverwrites(fs);
    let root = ArchiveRoot::under_profile("prod").unwrap();
    let error = bounded(probe_archive_store(&store, &root)).await.unwrap_err();
    let refusal = error.refusal().unwrap();
    assert_eq!(refusal.token, RefusalToken::ArchiveStoreUnsupported);
    assert_eq!(refusal.remedy, RefusalToken::ArchiveStoreUnsupported.remedy());
    let text = error.to_string();
    assert!(text.starts_with("PITRArchiveStoreUnsupported: pvc:"), "{text}");
    assert!(text.contains("accepted a second atomic create of the same key"), "{text}");
    // The probe object is gone whatever the verdict.
    assert!(list_all(&store, "").await.unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Permission-denied listings.

fn healthy_objects() -> BTreeMap<String, Vec<u8>> {
    Fixture::build(Scenario::HealthyPlannedFailover).objects
}

fn refusal_of(result: Result<OpenArchive, OpenError>) -> Refusal {
    match result {
        Err(OpenError::Refused(refusal)) => refusal,
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(archive) => panic!("expected a refusal, the archive opened: {:?}", archive.descriptor),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_forbidden_listing_is_list_failed_with_the_s3_remedy() {
    let server = crate::s3::server();
    let good = crate::s3::store(&server, "locked", "").await;
    bounded(async {
        let root = ArchiveRoot::under_profile("prod").unwrap();
        write_objects(&good, &root, &healthy_objects()).await.unwrap();
        let mut config = server.config("locked", "");
        config.credentials = S3Credentials::Static {
            access_key_id: bloodraven_store::testing::ACCESS_KEY.into(),
            secret_access_key: "not-the-secret".into(),
            session_token: None,
        };
        let denied = Counting::new(S3Store::connect(config).await.unwrap());
        let refusal = refusal_of(open_archive(&denied, &root, plaintext()).await);
        assert_eq!(refusal.token, RefusalToken::ArchiveListFailed);
        assert_eq!(refusal.remedy, REMEDY_LIST_S3_FORBIDDEN);
        let text = refusal.to_string();
        assert!(
            text.starts_with(
                "PITRArchiveListFailed: listing the archive was refused: S3 returned 403"
            ),
            "{text}"
        );
        assert!(text.contains("S3 403 SignatureDoesNotMatch"), "{text}");
        assert!(text.ends_with("; grant s3:ListBucket on the archive prefix"), "{text}");
        // A permission refusal is final: one listing, no retries, no reads.
        assert_eq!(denied.calls(), ["list prod/binlogs/manifest-"]);
    })
    .await;
}

/// Set in the unprivileged child of `fs_denied_listing_is_list_failed_with_the_eacces_remedy`.
const DENIED_CHILD: &str = "BLOODRAVEN_STORE_TEST_DENIED_ROOT";
/// The child prints each refusal after this marker.
const REFUSAL_MARK: &str = "archive-open-refusal: ";

/// Opens the two denied archives of the EACCES test and checks the refusals; returns them.
async fn open_denied(dir: &Path) -> Vec<Refusal> {
    let store = FsStore::new(dir).unwrap();
    let mut refusals = Vec::new();
    // The archive directory itself is unreadable; then, in a prefix holding only binlogs
    // (listed whole because it has neither descriptor nor manifests), a site directory.
    for profile in ["denied-root", "denied-site"] {
        let root = ArchiveRoot::under_profile(profile).unwrap();
        let refusal = refusal_of(open_archive(&store, &root, plaintext()).await);
        assert_eq!(refusal.token, RefusalToken::ArchiveListFailed, "{refusal}");
        assert_eq!(refusal.remedy, REMEDY_LIST_EACCES);
        let text = refusal.to_string();
        assert!(
            text.starts_with(
                "PITRArchiveListFailed: listing the archive was refused: permission denied (EACCES)"
            ),
            "{text}"
        );
        assert!(text.contains("EACCES (errno 13)"), "{text}");
        assert!(text.ends_with("; make the archive volume readable by the Job's user"), "{text}");
        refusals.push(refusal);
    }
    refusals
}

#[allow(clippy::print_stdout, reason = "the parent process reads the child's stdout")]
fn report_to_parent(line: &str) {
    println!("{line}");
}

/// A real `EACCES`: the archive directory (and, in a second prefix, a site directory) is
/// mode 000. Root ignores modes (CAP_DAC_OVERRIDE), so when the test runs as root it re-runs
/// itself as a child process with uid/gid 65534 (nobody), which opens the archives; the
/// parent checks the child's exit status and the refusals it printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_denied_listing_is_list_failed_with_the_eacces_remedy() {
    if let Some(dir) = std::env::var_os(DENIED_CHILD) {
        for refusal in bounded(open_denied(Path::new(&dir))).await {
            report_to_parent(&format!("{REFUSAL_MARK}{refusal}"));
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path()).unwrap();
    let mut objects = healthy_objects();
    let root = ArchiveRoot::under_profile("denied-root").unwrap();
    bounded(write_objects(&store, &root, &objects)).await.unwrap();
    objects.retain(|key, _| key.starts_with("a/"));
    let root = ArchiveRoot::under_profile("denied-site").unwrap();
    bounded(write_objects(&store, &root, &objects)).await.unwrap();
    let locked = [dir.path().join("denied-root/binlogs"), dir.path().join("denied-site/binlogs/a")];
    for path in &locked {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o000)).unwrap();
    }
    if std::fs::read_dir(&locked[0]).is_err() {
        // Unprivileged: the modes deny this process.
        bounded(open_denied(dir.path())).await;
    } else {
        // Privileged: run the open as nobody. The temporary directory is 0700; let nobody in.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "archive::fs_denied_listing_is_list_failed_with_the_eacces_remedy",
                "--nocapture",
            ])
            .env(DENIED_CHILD, dir.path())
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "unprivileged child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let refusals: Vec<&str> =
            stdout.lines().filter_map(|line| line.strip_prefix(REFUSAL_MARK)).collect();
        assert_eq!(refusals.len(), 2, "the child must have opened both archives:\n{stdout}");
        for refusal in refusals {
            assert!(refusal.starts_with("PITRArchiveListFailed: "), "{refusal}");
            assert!(refusal.ends_with(REMEDY_LIST_EACCES), "{refusal}");
        }
    }
    for path in &locked {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Transient failures: retried with the reader's backoff, never reported as damage.

/// A store wrapper that records every call and fails scripted ones: `faults[pattern]` is the
/// list of errors the next calls whose description (`list <prefix>`, `get <key>`) ends with
/// `pattern` get, in order; once used up, calls pass through.
struct Counting<S> {
    inner: S,
    faults: Mutex<BTreeMap<String, Vec<ErrorKind>>>,
    log: Mutex<Vec<String>>,
    before_read: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl<S: ObjectStore> Counting<S> {
    fn new(inner: S) -> Self {
        Counting {
            inner,
            faults: Mutex::default(),
            log: Mutex::default(),
            before_read: Mutex::default(),
        }
    }

    fn fail(self, pattern: &str, kinds: &[ErrorKind]) -> Self {
        self.faults.lock().unwrap().insert(pattern.to_owned(), kinds.to_vec());
        self
    }

    /// Runs `hook` once, before the first ranged read.
    fn before_first_read(self, hook: impl FnOnce() + Send + 'static) -> Self {
        *self.before_read.lock().unwrap() = Some(Box::new(hook));
        self
    }

    fn calls(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Records the call and returns the scripted error for it, if any.
    fn call(&self, operation: Operation, key: &str) -> Result<(), Error> {
        let call = format!("{operation} {key}");
        self.log.lock().unwrap().push(call.clone());
        let mut faults = self.faults.lock().unwrap();
        let scripted = faults
            .iter_mut()
            .find(|(pattern, kinds)| call.ends_with(pattern.as_str()) && !kinds.is_empty())
            .map(|(_, kinds)| kinds.remove(0));
        let (store, key) = (self.inner.describe().to_owned(), key.to_owned());
        match scripted {
            None => Ok(()),
            Some(ErrorKind::NotFound) => Err(Error::NotFound { store, operation, key }),
            Some(ErrorKind::PermissionDenied) => Err(Error::PermissionDenied {
                store,
                operation,
                key,
                denial: Denial::Filesystem { errno: 13, name: "EACCES" },
            }),
            Some(_) => Err(Error::Transient {
                store,
                operation,
                key,
                detail: "injected: connection reset by peer".into(),
            }),
        }
    }
}

impl<S: ObjectStore> ObjectStore for Counting<S> {
    fn describe(&self) -> &str {
        self.inner.describe()
    }
    async fn list(&self, prefix: &str, next: Option<&str>, size: u32) -> Result<ListPage, Error> {
        self.call(Operation::List, prefix)?;
        self.inner.list(prefix, next, size).await
    }
    async fn head(&self, key: &str) -> Result<ObjectMeta, Error> {
        self.call(Operation::Head, key)?;
        self.inner.head(key).await
    }
    async fn get(&self, key: &str) -> Result<Object, Error> {
        self.call(Operation::Get, key)?;
        self.inner.get(key).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Object, Error> {
        let hook = self.before_read.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        self.call(Operation::Get, key)?;
        self.inner.get_range(key, range).await
    }
    async fn put(&self, key: &str, body: Vec<u8>) -> Result<(), Error> {
        self.call(Operation::Put, key)?;
        self.inner.put(key, body).await
    }
    async fn create(&self, key: &str, body: Vec<u8>) -> Result<(), Error> {
        self.call(Operation::Create, key)?;
        self.inner.create(key, body).await
    }
    async fn delete(&self, key: &str) -> Result<(), Error> {
        self.call(Operation::Delete, key)?;
        self.inner.delete(key).await
    }
}

/// A filesystem store holding `objects` under `prod/binlogs`.
async fn fs_archive(
    objects: &BTreeMap<String, Vec<u8>>,
) -> (tempfile::TempDir, FsStore, ArchiveRoot) {
    let (dir, store) = crate::fs::fresh_store();
    let root = ArchiveRoot::under_profile("prod").unwrap();
    write_objects(&store, &root, objects).await.unwrap();
    (dir, store, root)
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_retried_with_backoff() {
    use ErrorKind::{NotFound, Transient};
    let fixture = Fixture::build(Scenario::LossyFailoverFork);
    let (_dir, fs, root) = fs_archive(&fixture.objects).await;
    // Three failed manifest listings, then a failed descriptor listing (the whole listing is
    // asked for again), two failed reads of manifest-b.json, and archive.json listed and then
    // gone once ("the archive changed": list again).
    let store = Counting::new(fs)
        .fail("list prod/binlogs/manifest-", &[Transient, Transient, Transient])
        .fail("list prod/binlogs/archive.json", &[Transient])
        .fail("get prod/binlogs/manifest-b.json", &[Transient, Transient])
        .fail("get prod/binlogs/archive.json", &[NotFound]);
    let started = tokio::time::Instant::now();
    let opened = bounded(open_archive(&store, &root, plaintext())).await;
    let elapsed = started.elapsed();
    let expected = outcome(&fixture, open_in_memory(&fixture.objects, plaintext()));
    assert_eq!(outcome(&fixture, opened), expected);
    // Backoffs: listing 1 + 2 + 4 + 8 s; the re-listing after the vanished descriptor is its
    // second attempt (1 s); manifest-b.json 1 + 2 s.
    assert_eq!(elapsed, Duration::from_secs(15 + 1 + 3));
    let calls = store.calls();
    let count = |call: &str| calls.iter().filter(|c| *c == call).count();
    assert_eq!(count("list prod/binlogs/manifest-"), 6, "{calls:?}");
    assert_eq!(count("list prod/binlogs/archive.json"), 3, "{calls:?}");
    // An archive with manifests is never listed whole (its binlogs are not walked).
    assert_eq!(count("list prod/binlogs/"), 0, "{calls:?}");
    assert_eq!(count("get prod/binlogs/archive.json"), 2, "{calls:?}");
    assert_eq!(count("get prod/binlogs/manifest-b.json"), 3, "{calls:?}");
    // Only the descriptor and the manifests are read, never a binlog.
    assert!(calls.iter().all(|c| c.starts_with("list ") || !c.contains("mysql-bin")), "{calls:?}");
}

#[tokio::test(start_paused = true)]
async fn persistent_transient_failures_end_without_a_token() {
    // No descriptor, and the only manifest cannot be read: the prefix cannot be classified,
    // so the open fails without a token (never PITRArchiveLegacy or DescriptorMissing).
    let mut objects = healthy_objects();
    objects.remove("archive.json");
    let (_dir, fs, root) = fs_archive(&objects).await;
    let store =
        Counting::new(fs).fail("get prod/binlogs/manifest-a.json", &[ErrorKind::Transient; 10]);
    let started = tokio::time::Instant::now();
    let error = bounded(open_archive(&store, &root, plaintext())).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(31));
    match &error {
        OpenError::Transient { what, detail, attempts } => {
            assert_eq!(what, "manifest-a.json");
            assert_eq!(*attempts, 6);
            assert!(detail.contains("injected: connection reset by peer"), "{detail}");
        }
        other => panic!("expected a transient failure, got {other:?}"),
    }
    assert!(!error.to_string().contains("PITR"), "{error}");

    // A listing that keeps failing transiently (and a permission error on a read, which is
    // not a listing refusal) ends the same way.
    let (_dir, fs, root) = fs_archive(&healthy_objects()).await;
    let store = Counting::new(fs).fail("list prod/binlogs/manifest-", &[ErrorKind::Transient; 6]);
    let error = bounded(open_archive(&store, &root, plaintext())).await.unwrap_err();
    assert!(matches!(error, OpenError::Transient { attempts: 6, .. }), "{error:?}");
    let (_dir, fs, root) = fs_archive(&healthy_objects()).await;
    let store = Counting::new(fs)
        .fail("get prod/binlogs/manifest-b.json", &[ErrorKind::PermissionDenied; 6]);
    let error = bounded(open_archive(&store, &root, plaintext())).await.unwrap_err();
    assert!(matches!(error, OpenError::Transient { attempts: 6, .. }), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_server_stopped_mid_open_is_transient() {
    let server = crate::s3::server();
    let s3 = crate::s3::store(&server, "stopping", "").await;
    let root = ArchiveRoot::under_profile("prod").unwrap();
    bounded(write_objects(&s3, &root, &healthy_objects())).await.unwrap();
    // The listing succeeds; then the server is killed before the descriptor is read.
    let server = Mutex::new(Some(server));
    let store = Counting::new(s3).before_first_read(move || drop(server.lock().unwrap().take()));
    let mut options = plaintext();
    options.max_attempts = 3;
    let error = bounded(open_archive(&store, &root, options)).await.unwrap_err();
    match &error {
        OpenError::Transient { what, attempts, .. } => {
            assert_eq!(what, "archive.json");
            assert_eq!(*attempts, 3);
        }
        other => panic!("expected a transient failure, got {other:?}"),
    }
    assert!(!error.to_string().contains("PITR"), "{error}");
    assert_eq!(
        store.calls(),
        [
            "list prod/binlogs/manifest-",
            "list prod/binlogs/archive.json",
            "get prod/binlogs/archive.json",
            "get prod/binlogs/archive.json",
            "get prod/binlogs/archive.json"
        ]
    );
}
