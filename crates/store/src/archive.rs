//! The archive IO adapter: drives `bloodraven-archive`'s sans-IO reader over an [`ObjectStore`].
//!
//! - [`open_archive`]: lists the archive root (its manifests and descriptor, every page; the
//!   whole root only when neither exists), reads the descriptor and the
//!   manifests with ranged reads bounded by what the reader asks for, waits the backoff the
//!   reader asks for (`tokio::time::sleep`, pausable in tests), and returns the reader's
//!   [`OpenArchive`] or [`OpenError`]. Store failures are classified by [`fetch_error`]: a
//!   permission denial becomes `PITRArchiveListFailed` with the S3-403 or the EACCES remedy,
//!   a missing object "the archive changed", and everything else a transient failure that the
//!   reader retries and never reports as damage.
//! - [`probe_archive_store`]: the spec's store-capability probe under the archive root;
//!   `ProbeVerdict::Unsupported` becomes the `PITRArchiveStoreUnsupported` refusal.
//! - [`write_objects`] and (feature `fixtures`) [`write_fixture`]: lay an archive's objects into
//!   a store, for the lab, the console tests and benchmarks.
//!
//! Keys the reader asks for are relative to the archive root (`archive.json`,
//! `manifest-<site>.json`); [`ArchiveRoot`] says where that root is inside the store.

use std::collections::BTreeMap;

use bloodraven_archive::ident::DESCRIPTOR_NAME;
use bloodraven_archive::reader::{
    ArchiveReader, FetchError, OpenArchive, OpenError, PermissionCause, ReaderOptions, Request,
};
use bloodraven_archive::refusal::{Refusal, RefusalToken};

use crate::error::{Denial, Error, ErrorKind, Result};
use crate::key::validate_key;
use crate::probe::{CAS_PROBE_PREFIX, ProbeVerdict, UnsupportedReason, probe_atomic_create};
use crate::retry::{RetryPolicy, retry_transient};
use crate::{MAX_PAGE_SIZE, ObjectStore};

/// Where an archive lives inside a store: the `binlogs` directory of a backup profile's
/// prefix, relative to the store's own root (an S3 store's bucket prefix, a PVC mount).
///
/// Leading, trailing and repeated `/` are dropped, as the archive's destination
/// normalization does; the empty root is the store's root itself.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArchiveRoot {
    path: String,
}

impl ArchiveRoot {
    /// The archive at `path` (for example `prod/binlogs`). Every segment must be a valid key
    /// segment ([`crate::key::validate_key`]); the error names the byte.
    pub fn new(path: &str) -> Result<Self> {
        let path = path.split('/').filter(|segment| !segment.is_empty()).collect::<Vec<_>>();
        let path = path.join("/");
        if !path.is_empty() {
            validate_key(&path)?;
        }
        Ok(ArchiveRoot { path })
    }

    /// The archive of a backup profile whose prefix is `profile_prefix`:
    /// `<profile_prefix>/binlogs` (just `binlogs` for an empty prefix).
    pub fn under_profile(profile_prefix: &str) -> Result<Self> {
        ArchiveRoot::new(&format!("{profile_prefix}/{}", bloodraven_archive::ARCHIVE_DIR))
    }

    /// The normalized path (`prod/binlogs`, or empty).
    pub fn as_str(&self) -> &str {
        &self.path
    }

    /// The store key of `relative` (a key relative to the archive root).
    pub fn key(&self, relative: &str) -> String {
        if self.path.is_empty() { relative.to_owned() } else { format!("{}/{relative}", self.path) }
    }

    /// The listing prefix: `prod/binlogs/`, or empty for the store's root.
    fn list_prefix(&self) -> String {
        if self.path.is_empty() { String::new() } else { format!("{}/", self.path) }
    }
}

/// Classifies a store failure for the archive reader.
///
/// - an S3 401/403 denial → `PermissionDenied { cause: S3Forbidden }` (remedy: grant
///   `s3:ListBucket`);
/// - a filesystem `EACCES`/`EPERM` → `PermissionDenied { cause: FilesystemDenied }` (remedy:
///   make the archive volume readable by the Job's user);
/// - not found (S3 404, `ENOENT`) → `NotFound`;
/// - everything else (5xx, timeouts, I/O errors, a missing bucket, a refused link, ...) →
///   `Transient`: retried by the reader and never reported as damage.
pub fn fetch_error(error: &Error) -> FetchError {
    let detail = error.to_string();
    match (error.kind(), error.denial()) {
        (ErrorKind::NotFound, _) => FetchError::NotFound,
        (ErrorKind::PermissionDenied, Some(Denial::S3 { status: 401 | 403, .. })) => {
            FetchError::PermissionDenied { cause: PermissionCause::S3Forbidden, detail }
        }
        (ErrorKind::PermissionDenied, Some(Denial::Filesystem { errno, .. }))
            if *errno == rustix::io::Errno::ACCESS.raw_os_error()
                || *errno == rustix::io::Errno::PERM.raw_os_error() =>
        {
            FetchError::PermissionDenied { cause: PermissionCause::FilesystemDenied, detail }
        }
        _ => FetchError::Transient { detail },
    }
}

/// Opens the archive at `root`: drives [`ArchiveReader`] until it has its answer.
///
/// The reader asks for the listing, then `archive.json` and every `manifest-<site>.json` it
/// found; transient failures are asked for again after the reader's backoff (1, 2, 4, 8,
/// 16 s), and a listed object that is gone makes it list again. The result is the reader's:
/// the verified archive, a [`Refusal`] with its token, or [`OpenError::Transient`] (no token)
/// when failures persisted.
pub async fn open_archive<S: ObjectStore + ?Sized>(
    store: &S,
    root: &ArchiveRoot,
    options: ReaderOptions,
) -> Result<OpenArchive, OpenError> {
    let mut reader = ArchiveReader::new(options);
    while let Some(fetch) = reader.next_fetch() {
        if !fetch.backoff.is_zero() {
            tracing::debug!(
                store = store.describe(),
                attempt = fetch.attempt,
                backoff = ?fetch.backoff,
                request = ?fetch.request,
                "retrying an archive read"
            );
            tokio::time::sleep(fetch.backoff).await;
        }
        match fetch.request {
            Request::List => reader.feed_listing(list_archive(store, root).await),
            Request::Get { key, max_bytes } => {
                reader.feed_object(read_object(store, root, &key, max_bytes).await);
            }
        }
    }
    reader.finish()
}

/// The key prefix of every `manifest-<site>.json`.
const MANIFEST_KEY_PREFIX: &str = "manifest-";

/// The listing the reader asks for, relative to the archive root, without probe objects.
///
/// The reader decides from the descriptor and the manifests; other objects (binlogs) only
/// count when there is neither (an empty prefix is `PITRArchiveNotFound`, one holding other
/// objects `PITRArchiveLegacy`). So this lists `manifest-*` and then `archive.json`, and the
/// whole root only when both are absent: an archive of 10,000 binlogs costs two small listings
/// instead of 11 pages. Manifests are listed first because a writer creates `archive.json`
/// before any manifest and never deletes it: a manifest seen here implies the descriptor
/// listing that follows sees the descriptor.
async fn list_archive<S: ObjectStore + ?Sized>(
    store: &S,
    root: &ArchiveRoot,
) -> Result<Vec<String>, FetchError> {
    let mut keys = list_under(store, root, MANIFEST_KEY_PREFIX).await?;
    keys.extend(list_under(store, root, DESCRIPTOR_NAME).await?);
    if keys.is_empty() {
        keys = list_under(store, root, "").await?;
    }
    Ok(keys)
}

/// Every key under `<root>/<start>` (all pages), relative to the root, without probe objects;
/// one failed page fails the listing (the reader asks for all of it again).
async fn list_under<S: ObjectStore + ?Sized>(
    store: &S,
    root: &ArchiveRoot,
    start: &str,
) -> Result<Vec<String>, FetchError> {
    let base = root.list_prefix();
    let prefix = format!("{base}{start}");
    let mut keys = Vec::new();
    let mut continuation: Option<String> = None;
    loop {
        let page = store
            .list(&prefix, continuation.as_deref(), MAX_PAGE_SIZE)
            .await
            .map_err(|error| failed(store, &error))?;
        keys.extend(page.objects.into_iter().filter_map(|object| {
            let relative = object.key.strip_prefix(&base)?;
            let ignored = relative.is_empty() || relative.starts_with(CAS_PROBE_PREFIX);
            (!ignored).then(|| relative.to_owned())
        }));
        match page.next {
            Some(next) => continuation = Some(next),
            None => return Ok(keys),
        }
    }
}

/// At most `max_bytes` of the object at `relative` (a ranged read: one byte over a bound
/// already proves the object too large).
async fn read_object<S: ObjectStore + ?Sized>(
    store: &S,
    root: &ArchiveRoot,
    relative: &str,
    max_bytes: u64,
) -> Result<Vec<u8>, FetchError> {
    if max_bytes == 0 {
        return Ok(Vec::new());
    }
    match store.get_range(&root.key(relative), 0..max_bytes).await {
        Ok(object) => Ok(object.bytes),
        Err(error) => Err(failed(store, &error)),
    }
}

fn failed<S: ObjectStore + ?Sized>(store: &S, error: &Error) -> FetchError {
    let classified = fetch_error(error);
    tracing::debug!(store = store.describe(), %error, ?classified, "archive read failed");
    classified
}

/// Why [`probe_archive_store`] did not certify the store.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The store does not enforce atomic create: the refusal's token is
    /// `PITRArchiveStoreUnsupported` and its message names the store and the reason.
    #[error("{refusal}")]
    Unsupported {
        /// The refusal (token, message, remedy).
        refusal: Refusal,
        /// What the probe saw.
        reason: UnsupportedReason,
    },
    /// The probe could not run (transient, permission, missing bucket...): no verdict, so no
    /// refusal; [`Error::is_transient`] says whether to try again later.
    #[error(transparent)]
    Store(#[from] Error),
}

impl ProbeError {
    /// The refusal, when the store was found unsupported.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            ProbeError::Unsupported { refusal, .. } => Some(refusal),
            ProbeError::Store(_) => None,
        }
    }
}

/// The spec's store-capability probe under the archive root: creates
/// `.bloodraven-cas-probe-<16 hex>` twice and deletes it. `Ok` certifies the store; an
/// unsupported store is refused `PITRArchiveStoreUnsupported`. A writer runs it before it
/// creates `archive.json`.
pub async fn probe_archive_store<S: ObjectStore + ?Sized>(
    store: &S,
    root: &ArchiveRoot,
) -> Result<(), ProbeError> {
    match probe_atomic_create(store, root.as_str()).await? {
        ProbeVerdict::Certified => Ok(()),
        ProbeVerdict::Unsupported(reason) => {
            let refusal = Refusal::new(
                RefusalToken::ArchiveStoreUnsupported,
                format!(
                    "{} does not enforce atomic create under {:?}: {reason}",
                    store.describe(),
                    root.as_str()
                ),
            );
            Err(ProbeError::Unsupported { refusal, reason })
        }
    }
}

/// Writes every object (`key` relative to the archive root → bytes) with `put`, retrying
/// transient failures with [`RetryPolicy::ARCHIVE`].
pub async fn write_objects<S: ObjectStore + ?Sized>(
    store: &S,
    root: &ArchiveRoot,
    objects: &BTreeMap<String, Vec<u8>>,
) -> Result<()> {
    for (relative, bytes) in objects {
        let key = root.key(relative);
        retry_transient(RetryPolicy::ARCHIVE, || store.put(&key, bytes.clone())).await?;
    }
    Ok(())
}

/// Lays a fixture archive (`bloodraven_archive::fixtures`) into a store under `root`: the
/// descriptor, the manifests and the binlog objects, as a real writer leaves them.
#[cfg(feature = "fixtures")]
pub async fn write_fixture<S: ObjectStore + ?Sized>(
    store: &S,
    root: &ArchiveRoot,
    fixture: &bloodraven_archive::fixtures::Fixture,
) -> Result<()> {
    write_objects(store, root, &fixture.objects).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Operation;

    #[test]
    fn names_agree_with_the_archive() {
        assert_eq!(CAS_PROBE_PREFIX, bloodraven_archive::ident::CAS_PROBE_PREFIX);
        let name = bloodraven_archive::ident::manifest_name("site-0").unwrap();
        assert!(name.starts_with(MANIFEST_KEY_PREFIX), "{name}");
        assert_eq!(bloodraven_archive::ident::manifest_site(&name), Some("site-0"));
    }

    #[test]
    fn roots_are_normalized() {
        assert_eq!(ArchiveRoot::new("/prod//binlogs/").unwrap().as_str(), "prod/binlogs");
        assert_eq!(ArchiveRoot::new("").unwrap().as_str(), "");
        assert_eq!(ArchiveRoot::new("///").unwrap().key("archive.json"), "archive.json");
        let root = ArchiveRoot::under_profile("/prod/").unwrap();
        assert_eq!(root.as_str(), "prod/binlogs");
        assert_eq!(root.key("manifest-a.json"), "prod/binlogs/manifest-a.json");
        assert_eq!(root.list_prefix(), "prod/binlogs/");
        assert_eq!(ArchiveRoot::under_profile("").unwrap().as_str(), "binlogs");
        let error = ArchiveRoot::new("prod/../binlogs").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidKey, "{error}");
        assert!(ArchiveRoot::new("prod/a\0b").is_err());
    }

    fn store_error(kind: ErrorKind, denial: Option<Denial>) -> Error {
        let (store, operation, key) = ("s".to_owned(), Operation::List, "binlogs/".to_owned());
        match (kind, denial) {
            (_, Some(denial)) => Error::PermissionDenied { store, operation, key, denial },
            (ErrorKind::NotFound, None) => Error::NotFound { store, operation, key },
            (ErrorKind::Transient, None) => {
                Error::Transient { store, operation, key, detail: "EIO".into() }
            }
            (ErrorKind::SymlinkRefused, None) => {
                Error::SymlinkRefused { store, operation, key, component: "binlogs".into() }
            }
            (ErrorKind::InvalidConfig, None) => Error::InvalidConfig { detail: "x".into() },
            (_, None) => Error::Permanent { store, operation, key, detail: "400".into() },
        }
    }

    #[test]
    fn store_errors_are_classified_for_the_reader() {
        let s3 = |status| Denial::S3 { status, code: Some("AccessDenied".into()), message: None };
        let fs = |errno, name| Denial::Filesystem { errno, name };
        let cause = |error: Error| match fetch_error(&error) {
            FetchError::PermissionDenied { cause, detail } => {
                assert_eq!(detail, error.to_string());
                Some(cause)
            }
            _ => None,
        };
        let denied = |denial| store_error(ErrorKind::PermissionDenied, Some(denial));
        assert_eq!(cause(denied(s3(403))), Some(PermissionCause::S3Forbidden));
        assert_eq!(cause(denied(s3(401))), Some(PermissionCause::S3Forbidden));
        assert_eq!(cause(denied(fs(13, "EACCES"))), Some(PermissionCause::FilesystemDenied));
        assert_eq!(cause(denied(fs(1, "EPERM"))), Some(PermissionCause::FilesystemDenied));
        // A read-only filesystem cannot refuse a read for permission: not a listing remedy.
        assert!(matches!(fetch_error(&denied(fs(30, "EROFS"))), FetchError::Transient { .. }));
        assert_eq!(fetch_error(&store_error(ErrorKind::NotFound, None)), FetchError::NotFound);
        for kind in [
            ErrorKind::Transient,
            ErrorKind::SymlinkRefused,
            ErrorKind::InvalidConfig,
            ErrorKind::Permanent,
        ] {
            let error = store_error(kind, None);
            assert_eq!(
                fetch_error(&error),
                FetchError::Transient { detail: error.to_string() },
                "{kind:?}"
            );
        }
    }
}
