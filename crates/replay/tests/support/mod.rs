//! Shared by the replay crate's real-MySQL test (`tests/it/real_mysql.rs`) and its benchmark
//! (`benches/replay.rs`, which includes this file by `#[path]`): the tools
//! `scripts/provision.sh` exports, a started MySQL 9.7 server, the client options reaching it,
//! and its sealed binlogs archived into a filesystem store as the archiver lays them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bloodraven_archive::{Destination, NormalizedDestination, SourceRef};
use bloodraven_replay::local::{LocalArchive, SealedFile};
use bloodraven_sites::mysqld::{Instance, InstanceSpec, MysqlDist};
use bloodraven_sites::template::ensure_template_async;
use bloodraven_store::{ArchiveRoot, FsStore};
use jiff::Timestamp;

const READY: Duration = Duration::from_secs(120);

/// The tool `var` names (exported by `scripts/provision.sh`).
pub(crate) fn tool(var: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{var} is not set: run `source scripts/provision.sh` first"))
}

/// A started server `name`.
pub(crate) async fn started(name: &str, server_id: u32) -> Instance {
    let dist = MysqlDist::from_env().unwrap_or_else(|e| panic!("{e}"));
    let template = ensure_template_async(&dist).await.unwrap_or_else(|e| panic!("{e}"));
    let mut site =
        Instance::create(&dist, &template, InstanceSpec::new(name, server_id)).await.unwrap();
    site.start_and_wait(READY).await.unwrap_or_else(|e| panic!("{e}"));
    site
}

/// The client options reaching `site` as root over its socket.
pub(crate) fn connection(site: &Instance) -> Vec<String> {
    vec![
        "--no-defaults".to_owned(),
        format!("--socket={}", site.socket_path().display()),
        "--user=root".to_owned(),
    ]
}

/// The binlogs `names` of `site`, read from its data directory.
pub(crate) fn sealed(site: &Instance, names: &[String]) -> Vec<SealedFile> {
    names
        .iter()
        .map(|name| SealedFile {
            name: name.clone(),
            bytes: std::fs::read(site.data_dir().join(name)).unwrap(),
        })
        .collect()
}

/// Archives every sealed binlog of `source` (all but the active one) for group `uid` on PVC
/// `claim`, into a filesystem store at `store_dir`; returns the store and the archive's root.
pub(crate) async fn archive_sealed(
    source: &Instance,
    uid: &str,
    claim: &str,
    store_dir: &Path,
) -> (FsStore, ArchiveRoot) {
    let mut names = source.binary_logs().await.unwrap();
    names.pop();
    let files = sealed(source, &names);
    let now = Timestamp::now();
    let mut archive = LocalArchive::new(source_ref(uid), &destination(claim), now, "iad");
    archive.add("iad", &files, now).unwrap();
    write_archive(archive, store_dir).await
}

/// PVC `claim` in namespace `prod`, sub-path `pitr`, normalized.
pub(crate) fn destination(claim: &str) -> NormalizedDestination {
    Destination::Pvc { namespace: "prod".into(), claim: claim.into(), sub_path: "pitr".into() }
        .normalize()
        .unwrap()
}

/// The group `prod/orders` with `uid`.
pub(crate) fn source_ref(uid: &str) -> SourceRef {
    SourceRef { namespace: "prod".into(), name: "orders".into(), uid: uid.into() }
}

/// Writes `archive`'s objects into a filesystem store at `store_dir` under the profile root
/// `pitr`; returns the store and the root.
pub(crate) async fn write_archive(
    archive: LocalArchive,
    store_dir: &Path,
) -> (FsStore, ArchiveRoot) {
    let objects = archive.into_objects().unwrap();
    std::fs::create_dir_all(store_dir).unwrap();
    let store = FsStore::new(store_dir).unwrap();
    let root = ArchiveRoot::under_profile("pitr").unwrap();
    bloodraven_store::archive::write_objects(&store, &root, &objects).await.unwrap();
    (store, root)
}
