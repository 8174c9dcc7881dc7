//! `artifact-cleanup`: the cleanup Job's step (backup-and-restore document, "Artifact
//! cleanup"). Deletes exactly the destination recorded in `status.artifactStorage` — never the
//! profile's current one — and reports one verdict line:
//!
//! - `BLOODRAVEN_CLEANUP_COMPLETE objects=<n>` (exit 0): every object under `<location>/` and the
//!   backup's own stamp are gone (`n` may be 0: nothing was there);
//! - `BLOODRAVEN_CLEANUP_SKIPPED: <reason>` (exit 0, `--abandoned` only): objects remain at the
//!   location but no stamp there names this backup, so nothing was deleted;
//! - `BLOODRAVEN_CLEANUP_FAILED: <reason>` with exit [`EXIT_REFUSED`] (64: a refused path, a
//!   bad configuration) or [`EXIT_TRANSIENT`] (75: the store failed, or objects remain after
//!   the deletes).
//!
//! Checks before anything is deleted: the location's last segment is the backup's name, an
//! `s3://` location is in the recorded bucket, a PVC location is under `/backups`. The store is
//! rooted at the location's parent, so the keys deleted are `<name>/…` (the trailing `/` means
//! `backup-1` never matches `backup-10`) and `<name>.bloodraven-backup.json` when that stamp
//! names this backup (a stamp naming another backup is left alone). PVC paths go through the
//! filesystem store (`openat`, no symlink followed), so a directory replaced by a symlink is a
//! refusal, not a deletion outside the claim; the mount root itself is never removed.

use std::path::Path;

use bloodraven_backup::layout::{ArtifactLayout, PVC_MOUNT};
use bloodraven_backup::meta::Stamp;
use bloodraven_store::{ErrorKind, ObjectStore, Store, list_all};

use super::storage::StorageArgs;

/// The line of a finished cleanup.
pub const COMPLETE: &str = "BLOODRAVEN_CLEANUP_COMPLETE";
/// The prefix of a skipped (abandoned) cleanup's line.
pub const SKIPPED: &str = "BLOODRAVEN_CLEANUP_SKIPPED";
/// The prefix of a failed cleanup's line.
pub const FAILED: &str = "BLOODRAVEN_CLEANUP_FAILED";
/// Exit code of a refusal or a configuration error.
pub const EXIT_REFUSED: i32 = 64;
/// Exit code of a transient storage error.
pub const EXIT_TRANSIENT: i32 = 75;
/// Deletes in flight at once.
const PARALLEL_DELETES: usize = 16;

/// The cleanup step's settings.
#[derive(Debug, Clone, clap::Args)]
pub struct CleanupArgs {
    /// The MysqlBackup (the location's last segment).
    #[arg(long = "backup-name", env = "BLOODRAVEN_BACKUP_NAME")]
    pub backup_name: String,
    /// The MysqlBackup's UID (a stamp naming another UID is not this backup's).
    #[arg(long = "backup-uid", env = "BLOODRAVEN_BACKUP_UID", default_value = "")]
    pub backup_uid: String,
    /// `status.artifactStorage.location`.
    #[arg(long = "location", env = "BLOODRAVEN_BACKUP_LOCATION")]
    pub location: String,
    /// A backup that never succeeded: delete only when its own stamp is there; objects
    /// without it are left (`BLOODRAVEN_CLEANUP_SKIPPED`).
    #[arg(long = "abandoned", env = "BLOODRAVEN_CLEANUP_ABANDONED", default_value_t = false)]
    pub abandoned: bool,
    /// The store (type, bucket, endpoint, region, credentials, mount).
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// What a cleanup that ran to its end did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Done {
    /// `n` objects were deleted.
    Deleted(u64),
    /// Abandoned mode: objects remain and no stamp names the backup; nothing was deleted.
    Skipped(String),
}

impl Done {
    /// The verdict line.
    pub fn line(&self) -> String {
        match self {
            Done::Deleted(objects) => format!("{COMPLETE} objects={objects}"),
            Done::Skipped(reason) => format!("{SKIPPED}: {reason}"),
        }
    }
}

/// Why a cleanup did not complete.
#[derive(Debug, thiserror::Error)]
pub enum CleanupError {
    /// Exit 64: nothing was deleted and retrying will not help.
    #[error("{0}")]
    Refused(String),
    /// Exit 75: retry later.
    #[error("{0}")]
    Transient(String),
}

impl CleanupError {
    /// The exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            CleanupError::Refused(_) => EXIT_REFUSED,
            CleanupError::Transient(_) => EXIT_TRANSIENT,
        }
    }

    /// The verdict line.
    pub fn line(&self) -> String {
        format!("{FAILED}: {self}")
    }
}

fn store_error(what: &str, error: &bloodraven_store::Error) -> CleanupError {
    let message = format!("{what}: {error}");
    match error.kind() {
        ErrorKind::SymlinkRefused
        | ErrorKind::InvalidKey
        | ErrorKind::InvalidConfig
        | ErrorKind::PermissionDenied => CleanupError::Refused(message),
        _ => CleanupError::Transient(message),
    }
}

/// Where the artifact's parent is, derived from the recorded location (pure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parent {
    /// The prefix inside the recorded bucket.
    S3 { prefix: String },
    /// The subPath inside the claim's mount.
    Pvc { sub_path: String },
}

/// Checks `location` against the backup's name and the recorded destination and returns the
/// artifact's parent. Every failure is a refusal.
pub fn parent_of(
    location: &str,
    backup: &str,
    storage_type: &str,
    bucket: &str,
) -> Result<Parent, CleanupError> {
    let refuse = |why: String| CleanupError::Refused(format!("location {location:?}: {why}"));
    ArtifactLayout::new(backup).map_err(|error| refuse(error.to_string()))?;
    let (parent, last) = location.rsplit_once('/').ok_or_else(|| refuse("has no '/'".into()))?;
    if last != backup {
        return Err(refuse(format!("its last segment is {last:?}, not the backup's name")));
    }
    if parent.split('/').any(|segment| segment == ".." || segment == ".") {
        return Err(refuse("has a '.' or '..' segment".into()));
    }
    match storage_type {
        "S3" => {
            if bucket.is_empty() {
                return Err(refuse("no bucket is recorded".into()));
            }
            let rest = location
                .strip_prefix(&format!("s3://{bucket}/"))
                .ok_or_else(|| refuse(format!("is not in the recorded bucket {bucket:?}")))?;
            let prefix = rest.rsplit_once('/').map(|(prefix, _)| prefix).unwrap_or_default();
            Ok(Parent::S3 { prefix: prefix.to_owned() })
        }
        "PVC" => {
            let rest = location
                .strip_prefix(&format!("{PVC_MOUNT}/"))
                .ok_or_else(|| refuse(format!("is not under {PVC_MOUNT}")))?;
            let sub_path = rest.rsplit_once('/').map(|(sub, _)| sub).unwrap_or_default();
            Ok(Parent::Pvc { sub_path: sub_path.to_owned() })
        }
        other => Err(refuse(format!("the storage type {other:?} is neither S3 nor PVC"))),
    }
}

/// Deletes the artifact.
pub async fn run(args: CleanupArgs) -> Result<Done, CleanupError> {
    let parent = parent_of(
        &args.location,
        &args.backup_name,
        &args.storage.storage_type,
        &args.storage.s3_bucket,
    )?;
    let mut storage = args.storage.clone();
    match &parent {
        Parent::S3 { prefix } => storage.s3_prefix.clone_from(prefix),
        Parent::Pvc { sub_path } => storage.pvc_sub_path.clone_from(sub_path),
    }
    let layout = ArtifactLayout::new(&args.backup_name)
        .map_err(|error| CleanupError::Refused(error.to_string()))?;
    let pvc_dir = matches!(parent, Parent::Pvc { .. }).then(|| {
        let base = storage.pvc_mount.clone();
        if storage.pvc_sub_path.is_empty() { base } else { base.join(&storage.pvc_sub_path) }
    });
    if let Some(dir) = &pvc_dir
        && !dir.is_dir()
    {
        // Nothing was ever written under this subPath (or it was removed by hand).
        tracing::warn!(dir = %dir.display(), "artifact cleanup: the artifact's parent does not exist");
        return Ok(Done::Deleted(0));
    }
    let store = storage.store(false).await.map_err(|error| {
        CleanupError::Refused(format!("cannot open the recorded store: {error:#}"))
    })?;
    let ours = match store.get(&layout.stamp()).await {
        Ok(object) => Some(Stamp::from_bytes(&object.bytes).is_ok_and(|stamp| {
            stamp.backup.name == args.backup_name
                && (args.backup_uid.is_empty() || stamp.backup.uid == args.backup_uid)
        })),
        Err(error) if error.kind() == ErrorKind::NotFound => None,
        Err(error) => return Err(store_error("cannot read the backup stamp", &error)),
    };
    if args.abandoned && ours != Some(true) {
        let left = list_all(&store, &layout.dir_prefix())
            .await
            .map_err(|error| store_error("cannot list the artifact", &error))?;
        if left.is_empty() {
            return Ok(Done::Deleted(0));
        }
        tracing::warn!(location = %args.location, objects = left.len(), "artifact cleanup skipped");
        return Ok(Done::Skipped(format!(
            "no backup stamp at {} names this backup, but {} objects remain under {}; nothing was deleted",
            layout.stamp(),
            left.len(),
            args.location
        )));
    }
    let mut deleted = delete_under(&store, &layout.dir_prefix()).await?;
    match ours {
        Some(true) => {
            store
                .delete(&layout.stamp())
                .await
                .map_err(|error| store_error("cannot delete the backup stamp", &error))?;
            deleted += 1;
        }
        Some(false) => {
            tracing::warn!(stamp = %layout.stamp(), "artifact cleanup: the stamp names another backup; kept");
        }
        None => {}
    }
    let left = list_all(&store, &layout.dir_prefix())
        .await
        .map_err(|error| store_error("cannot list the artifact after the deletes", &error))?;
    if !left.is_empty() {
        return Err(CleanupError::Transient(format!(
            "{} objects remain under {} after the deletes",
            left.len(),
            args.location
        )));
    }
    if let Some(dir) = pvc_dir {
        remove_empty_tree(&dir.join(layout.dir()))?;
    }
    tracing::info!(location = %args.location, objects = deleted, "artifact cleanup complete");
    Ok(Done::Deleted(deleted))
}

/// Deletes every object under `prefix`, page by page, [`PARALLEL_DELETES`] at a time.
async fn delete_under(store: &Store, prefix: &str) -> Result<u64, CleanupError> {
    let mut deleted = 0;
    loop {
        // Always the first page: what was deleted is gone from the next listing.
        let page = store
            .list(prefix, None, 1000)
            .await
            .map_err(|error| store_error("cannot list the artifact", &error))?;
        if page.objects.is_empty() {
            return Ok(deleted);
        }
        for batch in page.objects.chunks(PARALLEL_DELETES) {
            let results = futures::future::join_all(
                batch.iter().map(|object| async move { store.delete(&object.key).await }),
            )
            .await;
            for (object, result) in batch.iter().zip(results) {
                result.map_err(|error| {
                    store_error(&format!("cannot delete {}", object.key), &error)
                })?;
                deleted += 1;
            }
        }
    }
}

/// Removes the (now file-free) directory tree at `dir`, refusing a symlink anywhere in it.
fn remove_empty_tree(dir: &Path) -> Result<(), CleanupError> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => {
            return Err(CleanupError::Transient(format!("cannot stat {}: {error}", dir.display())));
        }
    };
    if meta.file_type().is_symlink() {
        return Err(CleanupError::Refused(format!(
            "{} is a symbolic link; nothing outside the claim is deleted",
            dir.display()
        )));
    }
    if !meta.is_dir() {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|error| {
        CleanupError::Transient(format!("cannot read {}: {error}", dir.display()))
    })?;
    for entry in entries {
        let entry = entry.map_err(|error| CleanupError::Transient(error.to_string()))?;
        remove_empty_tree(&entry.path())?;
    }
    std::fs::remove_dir(dir).map_err(|error| {
        CleanupError::Transient(format!("cannot remove {}: {error}", dir.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_comes_from_the_recorded_location() {
        assert_eq!(
            parent_of("s3://bk/orders/x/b1", "b1", "S3", "bk").unwrap(),
            Parent::S3 { prefix: "orders/x".into() }
        );
        assert_eq!(
            parent_of("s3://bk/b1", "b1", "S3", "bk").unwrap(),
            Parent::S3 { prefix: "".into() }
        );
        assert_eq!(
            parent_of("/backups/sub/b1", "b1", "PVC", "").unwrap(),
            Parent::Pvc { sub_path: "sub".into() }
        );
        assert_eq!(
            parent_of("/backups/b1", "b1", "PVC", "").unwrap(),
            Parent::Pvc { sub_path: "".into() }
        );
    }

    #[test]
    fn a_location_that_is_not_this_backups_is_refused() {
        for (location, kind, bucket) in [
            ("s3://bk/orders/b10", "S3", "bk"),
            ("s3://other/orders/b1", "S3", "bk"),
            ("s3://bk/orders/b1", "S3", ""),
            ("/elsewhere/b1", "PVC", ""),
            ("/backups/../b1", "PVC", ""),
            ("/backups/b1", "GCS", ""),
        ] {
            let error = parent_of(location, "b1", kind, bucket).unwrap_err();
            assert_eq!(error.exit_code(), EXIT_REFUSED, "{location}");
        }
    }

    fn pvc_args(mount: &std::path::Path, location: &str, abandoned: bool) -> CleanupArgs {
        CleanupArgs {
            backup_name: "b1".into(),
            backup_uid: "u-1".into(),
            location: location.into(),
            abandoned,
            storage: StorageArgs {
                storage_type: "PVC".into(),
                s3_bucket: String::new(),
                s3_prefix: String::new(),
                s3_endpoint: String::new(),
                s3_region: String::new(),
                aws_creds_dir: None,
                pvc_mount: mount.to_owned(),
                pvc_sub_path: String::new(),
                mountinfo_file: None,
            },
        }
    }

    fn stamp(name: &str, uid: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "kind": "BloodravenBackupStamp", "version": 1,
            "backup": { "namespace": "orders", "name": name, "uid": uid },
            "source": { "namespace": "orders", "name": "orders", "uid": "g" },
            "site": "iad", "serverID": 1,
            "serverClock": { "start": "2026-01-01T00:00:00Z" },
            "createdAt": "2026-01-01T00:00:00Z",
        }))
        .unwrap()
    }

    fn write(path: &std::path::Path, bytes: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    #[tokio::test]
    async fn a_pvc_cleanup_deletes_the_backup_and_nothing_beside_it() {
        let mount = tempfile::tempdir().unwrap();
        let sub = mount.path().join("sub");
        write(&sub.join("b1/@.json"), b"{}");
        write(&sub.join("b1/dump-00000.sql"), b"select 1;");
        write(&sub.join("b1.bloodraven-backup.json"), &stamp("b1", "u-1"));
        write(&sub.join("b10/@.json"), b"{}");
        write(&sub.join("b10.bloodraven-backup.json"), &stamp("b10", "u-2"));
        let done = run(pvc_args(mount.path(), "/backups/sub/b1", false)).await.unwrap();
        assert_eq!(done, Done::Deleted(3));
        assert_eq!(done.line(), "BLOODRAVEN_CLEANUP_COMPLETE objects=3");
        assert!(!sub.join("b1").exists() && !sub.join("b1.bloodraven-backup.json").exists());
        assert!(
            sub.join("b10/@.json").is_file() && sub.join("b10.bloodraven-backup.json").is_file()
        );
        // Again: nothing is left, nothing found.
        assert_eq!(
            run(pvc_args(mount.path(), "/backups/sub/b1", false)).await.unwrap(),
            Done::Deleted(0)
        );
    }

    #[tokio::test]
    async fn an_abandoned_cleanup_deletes_only_under_its_own_stamp() {
        let mount = tempfile::tempdir().unwrap();
        write(&mount.path().join("b1/dump-00000.sql"), b"partial");
        let skipped = run(pvc_args(mount.path(), "/backups/b1", true)).await.unwrap();
        assert!(
            matches!(&skipped, Done::Skipped(reason) if reason.contains("1 objects remain")),
            "{skipped:?}"
        );
        assert!(mount.path().join("b1/dump-00000.sql").is_file(), "nothing deleted");
        // A stamp of another backup of the same name (another uid) is not ours either.
        write(&mount.path().join("b1.bloodraven-backup.json"), &stamp("b1", "someone-else"));
        assert!(matches!(
            run(pvc_args(mount.path(), "/backups/b1", true)).await.unwrap(),
            Done::Skipped(_)
        ));
        write(&mount.path().join("b1.bloodraven-backup.json"), &stamp("b1", "u-1"));
        assert_eq!(
            run(pvc_args(mount.path(), "/backups/b1", true)).await.unwrap(),
            Done::Deleted(2)
        );
    }

    #[tokio::test]
    async fn a_symlinked_directory_is_a_refusal() {
        let mount = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        write(&outside.path().join("precious"), b"keep me");
        std::os::unix::fs::symlink(outside.path(), mount.path().join("b1")).unwrap();
        let error = run(pvc_args(mount.path(), "/backups/b1", false)).await.unwrap_err();
        assert_eq!(error.exit_code(), EXIT_REFUSED, "{error}");
        assert!(outside.path().join("precious").is_file());
    }
}
