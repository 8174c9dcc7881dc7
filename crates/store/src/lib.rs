//! Object stores for the PITR archive: the only IO layer under `bloodraven-archive`.
//!
//! One trait, [`ObjectStore`], with two implementations: [`FsStore`] (the PVC layout: a root
//! directory, atomic create by `link(2)`, writes by rename, every path resolved inside the
//! root without following symbolic links) and [`S3Store`] (`aws-sdk-s3`, path style, custom
//! endpoint, atomic create by `If-None-Match: *`). [`Store`] picks one at run time.
//! [`probe_atomic_create`] is the spec's store-capability probe, written once over the trait.
//! [`check_pvc_store`] is the PVC volume check (mount point in an injectable mountinfo, and
//! write access under the archive prefix) a writer runs at store construction.
//!
//! [`archive`] drives `bloodraven-archive`'s sans-IO reader over a store (`open_archive`),
//! maps the probe's verdict to the archive's refusal, and writes fixture archives.
//!
//! Keys are `/`-separated relative paths validated by [`key::validate_key`]; both stores
//! interpret them relative to their root (a directory, or a bucket plus prefix).

pub mod archive;
pub mod error;
pub mod fs;
pub mod key;
pub mod mount;
pub mod probe;
pub mod retry;
pub mod s3;
#[cfg(feature = "test-support")]
pub mod testing;

pub mod random;

use std::future::Future;
use std::ops::Range;

pub use archive::{ArchiveRoot, ProbeError, open_archive, probe_archive_store};
pub use error::{Denial, Error, ErrorKind, Operation, Result};
pub use fs::FsStore;
pub use mount::{MountCheckError, MountInfoSource, check_pvc_store};
pub use probe::{CAS_PROBE_PREFIX, ProbeVerdict, UnsupportedReason, probe_atomic_create};
pub use retry::{RetryPolicy, retry_transient};
pub use s3::{S3Config, S3Credentials, S3Store};

/// The most keys one listing page returns (S3's `max-keys` limit).
pub const MAX_PAGE_SIZE: u32 = 1000;

/// One object in a listing, or the answer to a head request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectMeta {
    pub key: String,
    pub size: u64,
}

/// One page of a listing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListPage {
    /// Objects in lexicographic (byte) order of their keys.
    pub objects: Vec<ObjectMeta>,
    /// Pass to the next [`ObjectStore::list`] call to continue; `None` on the last page. The
    /// token is opaque and only valid for the same store and prefix.
    pub next: Option<String>,
}

/// The bytes of a (ranged) read and the object's total size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    pub bytes: Vec<u8>,
    pub total_size: u64,
}

/// An object store. Every method validates its key or prefix first ([`ErrorKind::InvalidKey`])
/// and classifies every failure (see [`Error`]). Methods are safe to call concurrently.
///
/// Contract, identical for both implementations (the integration tests run one test body
/// against both):
/// - `list`: keys starting with `prefix` (a plain string prefix; `a/b` matches `a/bc`), at
///   most `page_size` per page (clamped to `1..=`[`MAX_PAGE_SIZE`]), continued with the
///   returned token; every key exactly once. A prefix with no objects (or a missing
///   directory) is an empty page, not an error. Order: lexicographic by bytes on the
///   filesystem store and on AWS S3, but some S3-compatible stores (SeaweedFS) walk their
///   directory tree instead, so `a/x` may come after `a-b/y`; callers that need an order
///   sort (as [`list_all`] does).
/// - `get` / `get_range`: the whole object, or the bytes of `range` clipped to the object's
///   size (empty when `range.start >= size`), plus the total size. `NotFound` when missing.
///   An empty range (`start >= end`) is [`ErrorKind::InvalidRange`].
/// - `put`: writes or replaces the object; readers see the old or the new body, never a mix.
/// - `create`: writes the object only if the key is free, atomically;
///   [`ErrorKind::AlreadyExists`] otherwise (the existing body is untouched).
/// - `delete`: idempotent: deleting a missing key succeeds.
/// - `head`: the object's size; `NotFound` when missing.
pub trait ObjectStore: Send + Sync {
    /// A short description for messages: `s3://bucket/prefix?endpoint=...` or `pvc:/mnt/x`.
    fn describe(&self) -> &str;

    fn list(
        &self,
        prefix: &str,
        continuation: Option<&str>,
        page_size: u32,
    ) -> impl Future<Output = Result<ListPage>> + Send;

    fn head(&self, key: &str) -> impl Future<Output = Result<ObjectMeta>> + Send;

    fn get(&self, key: &str) -> impl Future<Output = Result<Object>> + Send;

    fn get_range(
        &self,
        key: &str,
        range: Range<u64>,
    ) -> impl Future<Output = Result<Object>> + Send;

    fn put(&self, key: &str, body: Vec<u8>) -> impl Future<Output = Result<()>> + Send;

    fn create(&self, key: &str, body: Vec<u8>) -> impl Future<Output = Result<()>> + Send;

    fn delete(&self, key: &str) -> impl Future<Output = Result<()>> + Send;
}

/// Lists every object under `prefix`, page by page ([`MAX_PAGE_SIZE`] per page), sorted by
/// key.
pub async fn list_all<S: ObjectStore + ?Sized>(store: &S, prefix: &str) -> Result<Vec<ObjectMeta>> {
    let mut objects = Vec::new();
    let mut continuation: Option<String> = None;
    loop {
        let page = store.list(prefix, continuation.as_deref(), MAX_PAGE_SIZE).await?;
        objects.extend(page.objects);
        match page.next {
            Some(next) => continuation = Some(next),
            None => {
                objects.sort_unstable_by(|left, right| left.key.cmp(&right.key));
                return Ok(objects);
            }
        }
    }
}

/// Either store, chosen at run time from the archive's destination (`pvc://` or `s3://`).
///
/// An enum rather than `dyn ObjectStore`: the trait's methods are `async` (return
/// `impl Future`), which is not object-safe, and the set of stores is closed. Generic code
/// takes `S: ObjectStore` and works with either, or with a test double.
#[derive(Clone, Debug)]
pub enum Store {
    Fs(FsStore),
    S3(S3Store),
}

impl From<FsStore> for Store {
    fn from(store: FsStore) -> Self {
        Store::Fs(store)
    }
}

impl From<S3Store> for Store {
    fn from(store: S3Store) -> Self {
        Store::S3(store)
    }
}

impl ObjectStore for Store {
    fn describe(&self) -> &str {
        match self {
            Store::Fs(store) => store.describe(),
            Store::S3(store) => store.describe(),
        }
    }

    async fn list(
        &self,
        prefix: &str,
        continuation: Option<&str>,
        page_size: u32,
    ) -> Result<ListPage> {
        match self {
            Store::Fs(store) => store.list(prefix, continuation, page_size).await,
            Store::S3(store) => store.list(prefix, continuation, page_size).await,
        }
    }

    async fn head(&self, key: &str) -> Result<ObjectMeta> {
        match self {
            Store::Fs(store) => store.head(key).await,
            Store::S3(store) => store.head(key).await,
        }
    }

    async fn get(&self, key: &str) -> Result<Object> {
        match self {
            Store::Fs(store) => store.get(key).await,
            Store::S3(store) => store.get(key).await,
        }
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Object> {
        match self {
            Store::Fs(store) => store.get_range(key, range).await,
            Store::S3(store) => store.get_range(key, range).await,
        }
    }

    async fn put(&self, key: &str, body: Vec<u8>) -> Result<()> {
        match self {
            Store::Fs(store) => store.put(key, body).await,
            Store::S3(store) => store.put(key, body).await,
        }
    }

    async fn create(&self, key: &str, body: Vec<u8>) -> Result<()> {
        match self {
            Store::Fs(store) => store.create(key, body).await,
            Store::S3(store) => store.create(key, body).await,
        }
    }

    async fn delete(&self, key: &str) -> Result<()> {
        match self {
            Store::Fs(store) => store.delete(key).await,
            Store::S3(store) => store.delete(key).await,
        }
    }
}

/// Clamps a requested page size to what both stores accept.
pub(crate) fn clamp_page_size(page_size: u32) -> u32 {
    page_size.clamp(1, MAX_PAGE_SIZE)
}

/// Rejects an empty byte range before any request is made.
pub(crate) fn check_range(key: &str, range: &Range<u64>) -> Result<()> {
    if range.start >= range.end {
        return Err(Error::InvalidRange {
            key: key.to_owned(),
            start: range.start,
            end: range.end,
        });
    }
    Ok(())
}
