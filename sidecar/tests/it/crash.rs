//! Crash safety per step (issue 18): the archiver runs in a child process (this test binary,
//! re-run on the ignored test [`crash_child`]) with `BLOODRAVEN_CRASH_AT` arming one of its
//! named crash points, so the child dies (SIGABRT: no destructor, no flush) exactly between two
//! writes; a restarted child then finishes the work. After every crash: the archive opens,
//! nothing is lost or listed twice, the restorable window is unchanged or larger, no object is
//! left that no row or pending record names.
//!
//! Steps: `sidecar.archive.after-object-write` (object written, manifest not), the
//! `sidecar.archive.after-manifest-write`, `sidecar.retire.between-writes` (:1 after the first
//! retention write, :2 after the deletes before the acknowledging write) and
//! `sidecar.descriptor.during-create` (store probed, descriptor not created; a torn temporary
//! file of the create laid beside it), after which two writers race to create the descriptor.

use std::collections::BTreeSet;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use bloodraven_archive::reader::OpenArchive;
use bloodraven_gtid::GtidSet;
use bloodraven_sidecar::archiver::local::LocalBinlogs;
use bloodraven_sidecar::archiver::retention::{
    COVERAGE_GTID_V1, CutoffError, CutoffProof, CutoffReply, CutoffSource,
};
use bloodraven_sidecar::archiver::status::ArchiveState;
use bloodraven_sidecar::archiver::{Archiver, ArchiverConfig};
use bloodraven_store::{ArchiveRoot, FsStore, ObjectStore as _, list_all};
use jiff::SignedDuration;

use crate::archiver::{
    GROUP_UID, SERVER_UUID, config, datadir, identity, now, open_plain, safe_settings, writable,
};

const CHILD_PVC: &str = "BLOODRAVEN_TEST_CRASH_PVC";
const CHILD_DATA: &str = "BLOODRAVEN_TEST_CRASH_DATA";
const CHILD_SITE: &str = "BLOODRAVEN_TEST_CRASH_SITE";
const CHILD_MODE: &str = "BLOODRAVEN_TEST_CRASH_MODE";
const SEALED: [&str; 3] = ["binlog.000001", "binlog.000002", "binlog.000003"];

fn root() -> ArchiveRoot {
    ArchiveRoot::under_profile("lion").unwrap()
}

/// The proof the test's operator serves: deferred until set.
#[derive(Clone)]
struct Proof(Arc<Mutex<CutoffReply>>);

impl CutoffSource for Proof {
    async fn fetch(&self) -> Result<CutoffReply, CutoffError> {
        Ok(self.0.lock().unwrap().clone())
    }
}

fn child_config(site: &str) -> ArchiverConfig {
    config(site, &root())
}

/// The child: one archiver life on the folders the parent names. `scan` uploads what is
/// sealed; `retain` then retires `binlog.000001` with a proof of a backup holding it (when it
/// is still live). Run only by [`run_child`].
#[tokio::test]
#[ignore = "the crash tests' child process, run by them with its environment"]
async fn crash_child() {
    let (Ok(pvc), Ok(data), Ok(site), Ok(mode)) = (
        std::env::var(CHILD_PVC),
        std::env::var(CHILD_DATA),
        std::env::var(CHILD_SITE),
        std::env::var(CHILD_MODE),
    ) else {
        panic!("crash_child runs only under the crash tests ({CHILD_PVC} etc. unset)");
    };
    let store = FsStore::new(&pvc).unwrap();
    let local = LocalBinlogs::new(Path::new(&data), "binlog.index");
    let proof = Proof(Arc::new(Mutex::new(CutoffReply::Deferred("noRetainedBackups".into()))));
    let mut archiver = Archiver::open(store, child_config(&site), local, proof.clone()).await;
    archiver.tracker().lock().unwrap().observe(writable(0, &format!("{SERVER_UUID}:1-3")));
    archiver.scan(Ok(safe_settings()), now()).await.unwrap();
    assert_eq!(archiver.status().archive.state, ArchiveState::Verified);
    if mode == "retain" {
        let first =
            archiver.manifest().unwrap().files.iter().find(|row| row.name == SEALED[0]).cloned();
        if let Some(first) = first {
            let mut covered = first.previous_gtids.clone();
            covered.union_with(first.effective_gtids());
            let later = first.last_event_time.unwrap() + SignedDuration::from_hours(48);
            *proof.0.lock().unwrap() = CutoffReply::Proof(CutoffProof {
                archive: identity(&site, GROUP_UID).archive_id.to_string(),
                coverage: COVERAGE_GTID_V1.into(),
                retained_gtids: vec![covered],
                cutoff_time: Some(later - SignedDuration::from_hours(1)),
            });
            let mut report = Default::default();
            archiver.retain(later, &mut report).await.unwrap();
        }
    }
}

/// Starts the child for `site` in `mode`, armed at `crash_at` when given.
fn spawn_child(
    pvc: &Path,
    data: &Path,
    site: &str,
    mode: &str,
    crash_at: Option<&str>,
) -> std::process::Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "crash::crash_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_PVC, pvc)
        .env(CHILD_DATA, data)
        .env(CHILD_SITE, site)
        .env(CHILD_MODE, mode)
        .env_remove(bloodraven_crashpoint::ENV)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(step) = crash_at {
        command.env(bloodraven_crashpoint::ENV, step);
    }
    command.spawn().unwrap()
}

/// Waits for a child, bounded (60 s): a hung child is killed and fails the test.
fn wait_child(mut child: std::process::Child, what: &str) -> Output {
    let started = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!("{what}: the child ran over 60 s\n{}", String::from_utf8_lossy(&output.stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Runs the child armed at `step` and checks it died there.
fn crash_at(pvc: &Path, data: &Path, site: &str, mode: &str, step: &str) {
    let output = wait_child(spawn_child(pvc, data, site, mode, Some(step)), step);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.signal(), Some(6), "{step}: the child did not abort: {stderr}");
    let name = step.split(':').next().unwrap();
    assert!(stderr.contains(&format!("aborting at {name}")), "{step}: {stderr}");
}

/// Runs the child unarmed to completion.
fn restart(pvc: &Path, data: &Path, site: &str, mode: &str) {
    let output = wait_child(spawn_child(pvc, data, site, mode, None), "restart");
    assert!(
        output.status.success(),
        "the restarted child failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The restorable window of `site`: the union of its live rows' transactions.
fn window(open: &OpenArchive, site: &str) -> GtidSet {
    let mut all = GtidSet::new();
    for row in open.manifests.get(site).map(|m| m.files.as_slice()).unwrap_or_default() {
        all.union_with(row.effective_gtids());
    }
    all
}

/// Nothing listed twice (live rows and retirement records, by name); every live row's object
/// is there. Returns the objects under the site's prefix that no live row or pending record
/// names (an object written just before a crash, rewritten and listed by the next scan).
async fn check_consistent(
    store: &FsStore,
    open: &OpenArchive,
    site: &str,
    step: &str,
) -> Vec<String> {
    let manifest = &open.manifests[site];
    let mut names = BTreeSet::new();
    for name in
        manifest.files.iter().map(|r| &r.name).chain(manifest.pruned.iter().map(|r| &r.name))
    {
        assert!(names.insert(name.clone()), "{step}: {name} listed twice: {manifest:?}");
    }
    let mut named = BTreeSet::new();
    for row in &manifest.files {
        let key = root().key(&row.object_key(site).unwrap());
        assert!(store.head(&key).await.is_ok(), "{step}: {key} is listed but missing");
        named.insert(key);
    }
    for record in manifest.pruned.iter().filter(|r| !r.deleted) {
        named.insert(root().key(&format!("{site}/{}.{}", record.name, record.id.unwrap())));
    }
    list_all(store, &root().key(&format!("{site}/")))
        .await
        .unwrap()
        .into_iter()
        .map(|object| object.key)
        .filter(|key| !named.contains(key))
        .collect()
}

#[tokio::test]
async fn a_crash_at_each_upload_step_loses_nothing_and_lists_nothing_twice() {
    crate::bounded(
        "a_crash_at_each_upload_step_loses_nothing_and_lists_nothing_twice",
        240,
        async {
            for step in [
                "sidecar.archive.after-object-write:1",
                "sidecar.archive.after-object-write:3",
                "sidecar.archive.after-manifest-write:1",
                "sidecar.archive.after-manifest-write:2",
            ] {
                let pvc = tempfile::tempdir().unwrap();
                let data = datadir();
                crash_at(pvc.path(), data.path(), "a", "scan", step);
                let store = FsStore::new(pvc.path()).unwrap();
                let open = open_plain(&store, &root()).await.unwrap_or_else(|e| {
                    panic!("{step}: the archive does not open after the crash: {e}")
                });
                let orphans = check_consistent(&store, &open, "a", step).await;
                // Only the object written at the crash point is unlisted.
                let expected = usize::from(step.contains("after-object-write"));
                assert_eq!(orphans.len(), expected, "{step}: unlisted objects {orphans:?}");
                let before = window(&open, "a");
                let listed_before = open.manifests["a"].files.len();

                restart(pvc.path(), data.path(), "a", "scan");
                let open = open_plain(&store, &root()).await.unwrap();
                let orphans = check_consistent(&store, &open, "a", step).await;
                assert!(
                    orphans.is_empty(),
                    "{step}: unlisted objects after the restart {orphans:?}"
                );
                let names: Vec<_> =
                    open.manifests["a"].files.iter().map(|r| r.name.as_str()).collect();
                assert_eq!(names, SEALED, "{step}: after the restart");
                let after = window(&open, "a");
                assert!(before.is_subset(&after), "{step}: the window shrank: {before} → {after}");
                assert!(
                    listed_before < SEALED.len(),
                    "{step}: the crash came before the last upload"
                );
                // One promotion record per sidecar start: "a sidecar restart in the middle of an
                // era writes a new promotion record of the same incarnation".
                assert_eq!(open.manifests["a"].promotions.len(), 2, "{step}: promotion records");
            }
        },
    )
    .await;
}

#[tokio::test]
async fn a_crash_between_the_two_retention_writes_finishes_the_retirement_on_restart() {
    crate::bounded(
        "a_crash_between_the_two_retention_writes_finishes_the_retirement_on_restart",
        240,
        async {
            for step in ["sidecar.retire.between-writes:1", "sidecar.retire.between-writes:2"] {
                let pvc = tempfile::tempdir().unwrap();
                let data = datadir();
                crash_at(pvc.path(), data.path(), "a", "retain", step);
                let store = FsStore::new(pvc.path()).unwrap();
                let open = open_plain(&store, &root()).await.unwrap_or_else(|e| {
                    panic!("{step}: the archive does not open after the crash: {e}")
                });
                let orphans = check_consistent(&store, &open, "a", step).await;
                assert!(orphans.is_empty(), "{step}: unlisted objects {orphans:?}");
                let manifest = &open.manifests["a"];
                // The first write landed: binlog.000001 is retired (not advertised), pending.
                assert!(manifest.files.iter().all(|r| r.name != SEALED[0]), "{step}");
                assert!(
                    manifest.pruned.iter().any(|r| r.name == SEALED[0] && !r.deleted),
                    "{step}: {manifest:?}"
                );
                let before = window(&open, "a");

                restart(pvc.path(), data.path(), "a", "retain");
                let open = open_plain(&store, &root()).await.unwrap();
                let orphans = check_consistent(&store, &open, "a", step).await;
                assert!(orphans.is_empty(), "{step}: unlisted objects {orphans:?}");
                let manifest = &open.manifests["a"];
                let names: Vec<_> = manifest.files.iter().map(|r| r.name.as_str()).collect();
                assert_eq!(names, &SEALED[1..], "{step}: the retired file is not uploaded again");
                assert!(manifest.pruned.iter().all(|r| r.deleted), "{step}: {manifest:?}");
                let record = &manifest.pruned[0];
                let key = root().key(&format!("a/{}.{}", record.name, record.id.unwrap()));
                assert!(store.head(&key).await.is_err(), "{step}: {key} not deleted");
                let after = window(&open, "a");
                assert_eq!(before, after, "{step}: the window changed");
            }
        },
    )
    .await;
}

#[tokio::test]
async fn a_crash_during_descriptor_creation_then_two_writers_race_one_creates_the_other_verifies() {
    crate::bounded(
        "a_crash_during_descriptor_creation_then_two_writers_race_one_creates_the_other_verifies",
        240,
        async {
            let step = "sidecar.descriptor.during-create";
            let pvc = tempfile::tempdir().unwrap();
            let (data_a, data_b) = (datadir(), datadir());
            crash_at(pvc.path(), data_a.path(), "a", "scan", step);
            let store = FsStore::new(pvc.path()).unwrap();
            let listed = list_all(&store, "").await.unwrap();
            assert!(
                listed.iter().all(|o| !o.key.ends_with("archive.json")),
                "no descriptor yet: {listed:?}"
            );
            // A torn create: the temporary file of a descriptor write that never got linked.
            let dir = pvc.path().join(root().as_str());
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(".bloodraven-tmp-00112233aabbccdd"), b"{\"version\":").unwrap();

            // The restarted writer and a second one race to create the descriptor.
            let a = spawn_child(pvc.path(), data_a.path(), "a", "scan", None);
            let b = spawn_child(pvc.path(), data_b.path(), "b", "scan", None);
            for (child, site) in [(a, "a"), (b, "b")] {
                let output = wait_child(child, site);
                assert!(
                    output.status.success(),
                    "writer {site} failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            let open = open_plain(&store, &root()).await.unwrap();
            assert!(["a", "b"].contains(&open.descriptor.created_by.as_str()));
            assert_eq!(open.descriptor.archive_id, identity("a", GROUP_UID).archive_id);
            for site in ["a", "b"] {
                let orphans = check_consistent(&store, &open, site, step).await;
                assert!(orphans.is_empty(), "{site}: unlisted objects {orphans:?}");
                let names: Vec<_> =
                    open.manifests[site].files.iter().map(|r| r.name.as_str()).collect();
                assert_eq!(names, SEALED, "{site}");
            }
            let descriptors = list_all(&store, "")
                .await
                .unwrap()
                .into_iter()
                .filter(|o| o.key.ends_with("archive.json"))
                .count();
            assert_eq!(descriptors, 1);
        },
    )
    .await;
}
