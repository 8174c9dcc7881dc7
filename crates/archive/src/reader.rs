//! The sans-IO archive open.
//!
//! [`ArchiveReader`] says what to fetch next; the caller does the IO (through a store), feeds the
//! result back, and finally calls [`ArchiveReader::finish`]:
//!
//! ```text
//! let mut reader = ArchiveReader::new(options);
//! while let Some(fetch) = reader.next_fetch() {
//!     sleep(fetch.backoff);
//!     match fetch.request {
//!         Request::List => reader.feed_listing(store.list("binlogs/")),
//!         Request::Get { key, max_bytes } => reader.feed_object(store.get("binlogs/" + key, ..max_bytes)),
//!     }
//! }
//! let archive = reader.finish()?;
//! ```
//!
//! Transient failures (and objects that vanish between the listing and the read: "the archive
//! changed") are retried by asking for the same fetch again, with a backoff; when they persist the
//! open ends with [`OpenError::Transient`], which carries no token and is never reported as damage.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::descriptor::{ArchiveDescriptor, ArchiveId, DESCRIPTOR_MAX_BYTES, EncryptionMode};
use crate::ident::{
    CAS_PROBE_PREFIX, ContentIdKey, DESCRIPTOR_NAME, manifest_site, verify_key_check,
};
use crate::manifest::{MANIFEST_MAX_BYTES, MANIFEST_VERSION, Manifest, ManifestError};
use crate::refusal::{
    DAMAGED_DESCRIPTOR, REMEDY_DAMAGED_DESCRIPTOR, REMEDY_DAMAGED_MANIFEST, REMEDY_LIST_EACCES,
    REMEDY_LIST_S3_FORBIDDEN, Refusal, RefusalToken,
};

/// Attempts per fetch before a transient failure ends the open (1 + 2 + 4 + 8 + 16 = 31 s).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 6;

/// The key a reader holds (its read binding's encryption).
#[derive(Clone, PartialEq, Eq)]
pub enum ReaderKey {
    /// The reader expects a plaintext archive.
    None,
    /// The reader expects a passphrase archive with this algorithm and holds this passphrase.
    Passphrase {
        /// The algorithm (`AES-256-GCM`).
        algorithm: String,
        /// The passphrase bytes.
        passphrase: Vec<u8>,
    },
}

impl std::fmt::Debug for ReaderKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReaderKey::None => f.write_str("ReaderKey::None"),
            ReaderKey::Passphrase { algorithm, .. } => {
                write!(f, "ReaderKey::Passphrase {{ algorithm: {algorithm:?}, .. }}")
            }
        }
    }
}

impl ReaderKey {
    /// The key of a passphrase archive with the envelope's algorithm (`AES-256-GCM`) and these
    /// passphrase bytes, exactly (a trailing newline is part of the passphrase, as the writer
    /// reads its key file).
    pub fn passphrase(passphrase: Vec<u8>) -> Self {
        ReaderKey::Passphrase { algorithm: crate::envelope::ALGORITHM.to_owned(), passphrase }
    }

    fn mode(&self) -> EncryptionMode {
        match self {
            ReaderKey::None => EncryptionMode::None,
            ReaderKey::Passphrase { .. } => EncryptionMode::Passphrase,
        }
    }

    /// The object envelope's key (`None` for a plaintext archive).
    pub fn envelope_key(&self) -> Option<crate::envelope::EnvelopeKey> {
        match self {
            ReaderKey::None => None,
            ReaderKey::Passphrase { passphrase, .. } => {
                Some(crate::envelope::EnvelopeKey::from_passphrase(passphrase))
            }
        }
    }

    /// How content ids of an archive read with this key are computed.
    pub fn content_id_key(&self) -> ContentIdKey {
        match self {
            ReaderKey::None => ContentIdKey::Plain,
            ReaderKey::Passphrase { passphrase, .. } => ContentIdKey::from_passphrase(passphrase),
        }
    }
}

/// What the reader expects.
#[derive(Debug, Clone)]
pub struct ReaderOptions {
    /// The read binding's encryption and key.
    pub key: ReaderKey,
    /// The archive the backup stamp names, when known.
    pub expected_archive_id: Option<ArchiveId>,
    /// The source group UID the backup stamp names, when known.
    pub expected_source_uid: Option<String>,
    /// Attempts per fetch (and re-listings after the archive changed) before giving up.
    pub max_attempts: u32,
}

impl ReaderOptions {
    /// Options for a reader holding `key`, expecting any archive.
    pub fn new(key: ReaderKey) -> Self {
        ReaderOptions {
            key,
            expected_archive_id: None,
            expected_source_uid: None,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        }
    }
}

/// Why a permission error happened, to pick the remedy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionCause {
    /// S3 403 AccessDenied.
    S3Forbidden,
    /// A filesystem EACCES/EPERM (PVC).
    FilesystemDenied,
}

/// The classification of a failed fetch, made by the IO side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The object (or prefix) does not exist.
    NotFound,
    /// Permission denied.
    PermissionDenied {
        /// S3 or filesystem.
        cause: PermissionCause,
        /// The store's message.
        detail: String,
    },
    /// Anything else (5xx, timeouts, IO errors, cancellation): retried.
    Transient {
        /// The store's message.
        detail: String,
    },
}

/// One fetch the caller performs. Keys are relative to the archive root (`binlogs/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// List the keys under the archive root (nested keys may be included; they are only
    /// counted as "other objects").
    List,
    /// Read at most `max_bytes` bytes of an object (a ranged get of the first bytes is enough:
    /// one byte over a bound already proves the object too large).
    Get {
        /// The key relative to the archive root.
        key: String,
        /// Read no more than this.
        max_bytes: u64,
    },
}

/// The next fetch, with its attempt number and how long to wait before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    /// What to fetch.
    pub request: Request,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// Wait this long first (zero for a first attempt).
    pub backoff: Duration,
}

/// Why an open ended without an archive.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The archive is refused; the token goes first in the message.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// A transient failure persisted: no token, the next attempt (Job retry) may succeed.
    #[error("reading {what} failed after {attempts} attempts: {detail}")]
    Transient {
        /// What was being read.
        what: String,
        /// The last failure.
        detail: String,
        /// How many attempts were made.
        attempts: u32,
    },
}

/// An opened, verified archive.
#[derive(Debug, Clone)]
pub struct OpenArchive {
    /// The descriptor.
    pub descriptor: ArchiveDescriptor,
    /// Every manifest, by site.
    pub manifests: BTreeMap<String, Manifest>,
    /// How this archive's content ids are computed.
    pub content_id_key: ContentIdKey,
}

#[derive(Debug, Default)]
struct Listing {
    descriptor: bool,
    manifests: Vec<String>,
    /// `manifest-*.json` keys whose site is not a valid site name.
    invalid_manifests: Vec<String>,
    other_objects: usize,
}

/// The sans-IO archive reader (see the module docs).
#[derive(Debug)]
pub struct ArchiveReader {
    options: ReaderOptions,
    current: Option<Request>,
    attempt: u32,
    relists: u32,
    last_failure: String,
    queue: VecDeque<String>,
    listing: Option<Listing>,
    descriptor: Option<ArchiveDescriptor>,
    manifests: BTreeMap<String, Vec<u8>>,
    outcome: Option<OpenError>,
}

fn backoff(attempt: u32) -> Duration {
    match attempt {
        0 | 1 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 2).min(8)),
    }
}

fn list_failed(cause: PermissionCause, detail: &str) -> Refusal {
    let (what, remedy) = match cause {
        PermissionCause::S3Forbidden => {
            ("S3 returned 403 (AccessDenied)", REMEDY_LIST_S3_FORBIDDEN)
        }
        PermissionCause::FilesystemDenied => ("permission denied (EACCES)", REMEDY_LIST_EACCES),
    };
    Refusal::with_remedy(
        RefusalToken::ArchiveListFailed,
        format!("listing the archive was refused: {what}: {detail}"),
        remedy,
    )
}

impl ArchiveReader {
    /// A reader that starts by listing the archive root.
    pub fn new(options: ReaderOptions) -> Self {
        ArchiveReader {
            options,
            current: Some(Request::List),
            attempt: 1,
            relists: 0,
            last_failure: String::new(),
            queue: VecDeque::new(),
            listing: None,
            descriptor: None,
            manifests: BTreeMap::new(),
            outcome: None,
        }
    }

    /// The next fetch, or `None` when [`ArchiveReader::finish`] has its answer.
    pub fn next_fetch(&self) -> Option<Fetch> {
        if self.outcome.is_some() {
            return None;
        }
        self.current.clone().map(|request| Fetch {
            request,
            attempt: self.attempt,
            backoff: backoff(self.attempt),
        })
    }

    /// Feeds the result of [`Request::List`].
    pub fn feed_listing(&mut self, result: Result<Vec<String>, FetchError>) {
        if self.current != Some(Request::List) {
            return;
        }
        let keys = match result {
            Ok(keys) => keys,
            Err(FetchError::NotFound) => Vec::new(),
            Err(FetchError::PermissionDenied { cause, detail }) => {
                self.outcome = Some(list_failed(cause, &detail).into());
                return;
            }
            Err(FetchError::Transient { detail }) => {
                self.retry("the archive listing", detail);
                return;
            }
        };
        let mut listing = Listing::default();
        for key in &keys {
            let key = key.as_str();
            if key == DESCRIPTOR_NAME {
                listing.descriptor = true;
            } else if manifest_site(key).is_some() {
                listing.manifests.push(key.to_owned());
            } else if key.starts_with("manifest-") && key.ends_with(".json") {
                listing.invalid_manifests.push(key.to_owned());
                listing.other_objects += 1;
            } else if !key.starts_with(CAS_PROBE_PREFIX) && !key.is_empty() {
                listing.other_objects += 1;
            }
        }
        listing.manifests.sort();
        listing.manifests.dedup();
        self.queue.clear();
        if listing.descriptor {
            self.queue.push_back(DESCRIPTOR_NAME.to_owned());
        }
        self.queue.extend(listing.manifests.iter().cloned());
        self.listing = Some(listing);
        self.descriptor = None;
        self.manifests.clear();
        self.advance();
    }

    /// Feeds the result of [`Request::Get`].
    pub fn feed_object(&mut self, result: Result<Vec<u8>, FetchError>) {
        let Some(Request::Get { key, .. }) = self.current.clone() else {
            return;
        };
        match result {
            Ok(bytes) => {
                if key == DESCRIPTOR_NAME {
                    match ArchiveDescriptor::from_slice(&bytes) {
                        Ok(descriptor) => self.descriptor = Some(descriptor),
                        Err(e) => {
                            let token = RefusalToken::ArchiveVersionUnsupported;
                            let refusal = if e.is_newer_release() {
                                Refusal::new(token, e.to_string())
                            } else {
                                Refusal::with_remedy(
                                    token,
                                    e.to_string(),
                                    REMEDY_DAMAGED_DESCRIPTOR,
                                )
                            };
                            self.outcome = Some(refusal.into());
                            return;
                        }
                    }
                } else {
                    self.manifests.insert(key.clone(), bytes);
                }
                self.queue.pop_front();
                self.advance();
            }
            Err(FetchError::NotFound) => {
                // Listed, then gone: the archive changed. List again.
                self.relists += 1;
                if self.relists >= self.options.max_attempts.max(1) {
                    self.outcome = Some(OpenError::Transient {
                        what: key,
                        detail: "the archive changed during the open (listed, then gone)"
                            .to_owned(),
                        attempts: self.relists,
                    });
                    return;
                }
                self.current = Some(Request::List);
                self.attempt = 1 + self.relists;
            }
            Err(FetchError::PermissionDenied { detail, .. }) => {
                self.retry(&key, format!("permission denied: {detail}"));
            }
            Err(FetchError::Transient { detail }) => self.retry(&key, detail),
        }
    }

    fn retry(&mut self, what: &str, detail: String) {
        self.last_failure = detail;
        if self.attempt >= self.options.max_attempts.max(1) {
            self.outcome = Some(OpenError::Transient {
                what: what.to_owned(),
                detail: std::mem::take(&mut self.last_failure),
                attempts: self.attempt,
            });
        } else {
            self.attempt += 1;
        }
    }

    fn advance(&mut self) {
        self.attempt = 1;
        self.current = self.queue.front().map(|key| Request::Get {
            key: key.clone(),
            max_bytes: if key == DESCRIPTOR_NAME {
                DESCRIPTOR_MAX_BYTES as u64 + 1
            } else {
                MANIFEST_MAX_BYTES + 1
            },
        });
    }

    /// The outcome. Call when [`ArchiveReader::next_fetch`] returns `None`.
    pub fn finish(self) -> Result<OpenArchive, OpenError> {
        if let Some(outcome) = self.outcome {
            return Err(outcome);
        }
        let Some(listing) = self.listing.as_ref().filter(|_| self.current.is_none()) else {
            return Err(OpenError::Transient {
                what: "the archive".to_owned(),
                detail: "the open was finished before its fetches".to_owned(),
                attempts: 0,
            });
        };
        let Some(descriptor) = self.descriptor.clone() else {
            return Err(classify_without_descriptor(listing, &self.manifests).into());
        };
        let mut refusals: Vec<Refusal> = Vec::new();
        for name in &listing.invalid_manifests {
            refusals.push(Refusal::new(
                RefusalToken::ArchiveObjectInvalid,
                format!(
                    "{name} is a manifest key whose site is not [a-z0-9-]+ (1 to 63 characters)"
                ),
            ));
        }
        let mut manifests = BTreeMap::new();
        for (name, bytes) in &self.manifests {
            match Manifest::from_slice(name, bytes) {
                Ok(manifest) => {
                    if manifest.archive_id != descriptor.archive_id {
                        refusals.push(Refusal::new(
                            RefusalToken::ArchiveIdentityMismatch,
                            format!(
                                "{name} names archive {}, the descriptor {}",
                                manifest.archive_id, descriptor.archive_id
                            ),
                        ));
                    }
                    manifests.insert(manifest.site.clone(), manifest);
                }
                Err(e @ ManifestError::Legacy { .. }) => {
                    refusals.push(Refusal::new(RefusalToken::ArchiveLegacy, e.to_string()));
                }
                Err(e @ ManifestError::Damaged { .. }) => refusals.push(Refusal::with_remedy(
                    RefusalToken::ArchiveVersionUnsupported,
                    e.to_string(),
                    REMEDY_DAMAGED_MANIFEST,
                )),
                Err(e) => {
                    refusals
                        .push(Refusal::new(RefusalToken::ArchiveVersionUnsupported, e.to_string()));
                }
            }
        }
        if let Some(expected) = &self.options.expected_archive_id
            && *expected != descriptor.archive_id
        {
            refusals.push(Refusal::new(
                RefusalToken::ArchiveIdentityMismatch,
                format!(
                    "the backup stamp names archive {expected}, the descriptor {}",
                    descriptor.archive_id
                ),
            ));
        }
        if let Some(uid) = &self.options.expected_source_uid
            && *uid != descriptor.source.uid
        {
            refusals.push(Refusal::new(
                RefusalToken::ArchiveIdentityMismatch,
                format!(
                    "the backup stamp names source group uid {uid}, the descriptor {}",
                    descriptor.source.uid
                ),
            ));
        }
        if let Err(refusal) = check_encryption(&descriptor, &self.options.key) {
            refusals.push(refusal);
        }
        for manifest in manifests.values() {
            if manifest.reset_epoch > 0 {
                refusals.push(Refusal::new(
                    RefusalToken::ArchiveHistoryReset,
                    format!(
                        "manifest-{}.json records reset epoch {}",
                        manifest.site, manifest.reset_epoch
                    ),
                ));
            }
        }
        if let Some(first) = refusals.into_iter().min_by_key(|r| r.token) {
            return Err(first.into());
        }
        Ok(OpenArchive { descriptor, manifests, content_id_key: self.options.key.content_id_key() })
    }
}

fn classify_without_descriptor(
    listing: &Listing,
    manifests: &BTreeMap<String, Vec<u8>>,
) -> Refusal {
    if listing.manifests.is_empty() {
        if listing.other_objects == 0 {
            return Refusal::new(
                RefusalToken::ArchiveNotFound,
                "the prefix has no archive.json and no manifests",
            );
        }
        return Refusal::new(
            RefusalToken::ArchiveLegacy,
            format!(
                "the prefix has no archive.json and no manifests, but {} other objects",
                listing.other_objects
            ),
        );
    }
    let mut newer = None;
    let mut current = Vec::new();
    for (name, bytes) in manifests {
        match Manifest::peek_version(name, bytes) {
            Ok(MANIFEST_VERSION) => current.push(name.as_str()),
            Ok(version) if version > MANIFEST_VERSION => newer = Some((name.as_str(), version)),
            _ => {}
        }
    }
    if let Some((name, version)) = newer {
        return Refusal::new(
            RefusalToken::ArchiveVersionUnsupported,
            format!("{name} is version {version}; this release reads version {MANIFEST_VERSION}"),
        );
    }
    if !current.is_empty() {
        return Refusal::new(
            RefusalToken::ArchiveDescriptorMissing,
            format!("version 2 manifests ({}) without archive.json", current.join(", ")),
        );
    }
    Refusal::new(
        RefusalToken::ArchiveLegacy,
        format!(
            "the prefix has no archive.json and its manifests ({}) are not version 2",
            listing.manifests.join(", ")
        ),
    )
}

fn check_encryption(descriptor: &ArchiveDescriptor, key: &ReaderKey) -> Result<(), Refusal> {
    let archive = &descriptor.encryption;
    if archive.mode != key.mode() {
        return Err(Refusal::new(
            RefusalToken::ArchiveEncryptionMismatch,
            format!(
                "the archive's encryption mode is {}, the reader's {}",
                archive.mode,
                key.mode()
            ),
        ));
    }
    if let ReaderKey::Passphrase { algorithm, passphrase } = key {
        if *algorithm != archive.algorithm {
            return Err(Refusal::new(
                RefusalToken::ArchiveEncryptionMismatch,
                format!(
                    "the archive's algorithm is {:?}, the reader's {algorithm:?}",
                    archive.algorithm
                ),
            ));
        }
        let check = archive.key_check.as_deref().unwrap_or_default();
        if !verify_key_check(passphrase, &descriptor.archive_id, check) {
            return Err(Refusal::new(
                RefusalToken::ArchiveKeyMismatch,
                format!(
                    "the passphrase does not verify the keyCheck of archive {}",
                    descriptor.archive_id
                ),
            ));
        }
    }
    Ok(())
}

/// The writer's acceptance check: a sidecar or `pitr-quarantine` accepts a descriptor only when it
/// names its own group's UID, the archive ID derived for its own destination, and its profile's
/// encryption mode, algorithm and key.
pub fn check_writer_descriptor(
    descriptor: &ArchiveDescriptor,
    group_uid: &str,
    own_archive_id: &ArchiveId,
    key: &ReaderKey,
) -> Result<(), Refusal> {
    if descriptor.source.uid != group_uid {
        return Err(Refusal::new(
            RefusalToken::ArchiveForeign,
            format!(
                "{DESCRIPTOR_NAME} names group {}/{} (uid {}), not this group (uid {group_uid})",
                descriptor.source.namespace, descriptor.source.name, descriptor.source.uid
            ),
        ));
    }
    if descriptor.archive_id != *own_archive_id {
        return Err(Refusal::new(
            RefusalToken::ArchiveCopy,
            format!(
                "{DESCRIPTOR_NAME} names archive {}, derived for another destination than this one ({own_archive_id})",
                descriptor.archive_id
            ),
        ));
    }
    check_encryption(descriptor, key)
}

/// True when a descriptor error message is the damaged form.
pub fn is_damaged_message(message: &str) -> bool {
    message.starts_with(DAMAGED_DESCRIPTOR)
}
