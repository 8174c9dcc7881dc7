//! The archive session: create or verify `archive.json`, read and save the site's manifest.
//!
//! Spec ("Archive identity"): the first writer creates the descriptor, only on an empty prefix,
//! after proving the store enforces atomic create (`.bloodraven-cas-probe-*` created twice);
//! the create itself is atomic (`If-None-Match: *` on S3, `link(2)` on a PVC), so of two racing
//! writers one wins and the other reads and verifies the winner's descriptor. Every writer
//! verifies the descriptor names its group's UID, its own archive ID and its encryption; a
//! prefix with version 2 manifests and no descriptor is `PITRArchiveDescriptorMissing`,
//! anything else there `PITRArchiveLegacy`. Each writer re-reads the descriptor before every
//! manifest save and retention delete.

use bloodraven_archive::ArchiveId;
use bloodraven_archive::descriptor::{ArchiveDescriptor, Encryption, SourceRef};
use bloodraven_archive::ident::{CAS_PROBE_PREFIX, DESCRIPTOR_NAME, manifest_name, manifest_site};
use bloodraven_archive::manifest::{MANIFEST_VERSION, Manifest, ManifestError};
use bloodraven_archive::reader::{ReaderKey, check_writer_descriptor};
use bloodraven_archive::refusal::{
    REMEDY_DAMAGED_DESCRIPTOR, REMEDY_DAMAGED_MANIFEST, Refusal, RefusalToken,
};
use bloodraven_store::{
    ArchiveRoot, ErrorKind, ObjectStore, ProbeError, list_all, probe_archive_store,
};
use jiff::Timestamp;

/// A session failure: a refusal (the archive may not be written) or a store error (retry).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The archive is refused; `lastError` starts with the token.
    #[error("{0}")]
    Refused(Refusal),
    /// The store failed; the next scan retries.
    #[error("archive store: {0}")]
    Store(#[from] bloodraven_store::Error),
    /// A save did not read back as written.
    #[error("{what}: the save did not read back as written; the next scan retries")]
    ReadBack { what: String },
}

/// Who this writer is.
#[derive(Debug, Clone)]
pub struct WriterIdentity {
    /// The group (namespace, name, uid).
    pub source: SourceRef,
    /// The archive ID derived for this group and destination.
    pub archive_id: ArchiveId,
    /// The key: `ReaderKey::None` (plaintext) or the archive passphrase (objects are sealed in
    /// the BRV1 envelope, content ids keyed).
    pub key: ReaderKey,
    /// This site (`createdBy`).
    pub site: String,
}

/// What [`establish`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Established {
    /// The descriptor exists (or was created) and verifies; its bytes for later comparison.
    Verified { descriptor: Box<ArchiveDescriptor>, bytes: Vec<u8> },
    /// No descriptor, and this site may not create it (not writable).
    AwaitingDescriptor,
}

fn descriptor_refusal(error: &bloodraven_archive::descriptor::DescriptorError) -> Refusal {
    if error.is_newer_release() {
        Refusal::new(RefusalToken::ArchiveVersionUnsupported, error.to_string())
    } else {
        Refusal::with_remedy(
            RefusalToken::ArchiveVersionUnsupported,
            error.to_string(),
            REMEDY_DAMAGED_DESCRIPTOR,
        )
    }
}

/// Reads `archive.json` (`None` when absent).
async fn read_descriptor<S: ObjectStore>(
    store: &S,
    root: &ArchiveRoot,
) -> Result<Option<Vec<u8>>, SessionError> {
    match store.get(&root.key(DESCRIPTOR_NAME)).await {
        Ok(object) => Ok(Some(object.bytes)),
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Decodes and verifies descriptor bytes for this writer.
pub fn verify(bytes: &[u8], me: &WriterIdentity) -> Result<ArchiveDescriptor, Refusal> {
    let descriptor = ArchiveDescriptor::from_slice(bytes).map_err(|e| descriptor_refusal(&e))?;
    check_writer_descriptor(&descriptor, &me.source.uid, &me.archive_id, &me.key)?;
    Ok(descriptor)
}

/// Classifies a prefix without a descriptor: `Ok(())` when empty (probe objects aside).
async fn check_empty_prefix<S: ObjectStore>(
    store: &S,
    root: &ArchiveRoot,
) -> Result<(), SessionError> {
    let prefix =
        if root.as_str().is_empty() { String::new() } else { format!("{}/", root.as_str()) };
    let objects = list_all(store, &prefix).await?;
    let mut v2 = Vec::new();
    let mut other = 0usize;
    for object in &objects {
        let relative = object.key.strip_prefix(&prefix).unwrap_or(&object.key);
        if relative.starts_with(CAS_PROBE_PREFIX) || relative.is_empty() {
            continue;
        }
        if manifest_site(relative).is_some() {
            let bytes = store.get(&object.key).await?.bytes;
            if Manifest::peek_version(relative, &bytes).ok() == Some(MANIFEST_VERSION) {
                v2.push(relative.to_owned());
                continue;
            }
        }
        other += 1;
    }
    if !v2.is_empty() {
        return Err(SessionError::Refused(Refusal::new(
            RefusalToken::ArchiveDescriptorMissing,
            format!("version 2 manifests ({}) without archive.json", v2.join(", ")),
        )));
    }
    if other > 0 {
        return Err(SessionError::Refused(Refusal::new(
            RefusalToken::ArchiveLegacy,
            format!("the prefix has no archive.json but {other} other objects"),
        )));
    }
    Ok(())
}

/// Creates or verifies the descriptor. Only a `writable` site creates it.
pub async fn establish<S: ObjectStore>(
    store: &S,
    root: &ArchiveRoot,
    me: &WriterIdentity,
    writable: bool,
    now: Timestamp,
) -> Result<Established, SessionError> {
    if let Some(bytes) = read_descriptor(store, root).await? {
        let descriptor = verify(&bytes, me).map_err(SessionError::Refused)?;
        return Ok(Established::Verified { descriptor: Box::new(descriptor), bytes });
    }
    check_empty_prefix(store, root).await?;
    if !writable {
        return Ok(Established::AwaitingDescriptor);
    }
    match probe_archive_store(store, root).await {
        Ok(()) => {}
        Err(ProbeError::Unsupported { refusal, .. }) => return Err(SessionError::Refused(refusal)),
        Err(ProbeError::Store(error)) => return Err(error.into()),
    }
    let encryption = match &me.key {
        ReaderKey::None => Encryption::none(),
        ReaderKey::Passphrase { passphrase, .. } => {
            Encryption::passphrase(passphrase, &me.archive_id)
        }
    };
    let descriptor =
        ArchiveDescriptor::new(me.archive_id.clone(), me.source.clone(), encryption, now, &me.site);
    // The store is probed (its probe objects may remain), the descriptor not created yet.
    bloodraven_crashpoint::hit(bloodraven_crashpoint::Step::SidecarDescriptorDuringCreate);
    match store.create(&root.key(DESCRIPTOR_NAME), descriptor.to_vec()).await {
        Ok(()) => {
            tracing::info!(archive = %me.archive_id, store = store.describe(), "archive descriptor created");
        }
        Err(error) if error.kind() == ErrorKind::AlreadyExists => {
            tracing::info!(archive = %me.archive_id, "archive descriptor created by another writer; verifying it");
        }
        Err(error) => return Err(error.into()),
    }
    let Some(bytes) = read_descriptor(store, root).await? else {
        return Err(SessionError::ReadBack { what: DESCRIPTOR_NAME.to_owned() });
    };
    let descriptor = verify(&bytes, me).map_err(SessionError::Refused)?;
    Ok(Established::Verified { descriptor: Box::new(descriptor), bytes })
}

/// Re-reads the descriptor before a manifest save or a delete: it must still verify.
pub async fn recheck<S: ObjectStore>(
    store: &S,
    root: &ArchiveRoot,
    me: &WriterIdentity,
    verified: &[u8],
) -> Result<(), SessionError> {
    let current = read_descriptor(store, root).await?;
    match current {
        Some(bytes) if bytes == verified => Ok(()),
        Some(bytes) => match verify(&bytes, me) {
            Ok(_) => Ok(()),
            Err(refusal) => {
                tracing::warn!(%refusal, "archive descriptor changed");
                Err(SessionError::Refused(refusal))
            }
        },
        None => {
            tracing::warn!("archive descriptor changed: archive.json is gone");
            Err(SessionError::Refused(Refusal::new(
                RefusalToken::ArchiveDescriptorMissing,
                "archive.json disappeared after it was verified",
            )))
        }
    }
}

/// Reads the site's manifest; a missing one is a new empty manifest. A manifest an older
/// writer left (version 1), a newer one, a damaged one, or one naming another archive is
/// refused with its token and never overwritten.
pub async fn load_manifest<S: ObjectStore>(
    store: &S,
    root: &ArchiveRoot,
    me: &WriterIdentity,
) -> Result<Manifest, SessionError> {
    let name = manifest_name(&me.site).map_err(|e| {
        SessionError::Refused(Refusal::new(RefusalToken::ArchiveVersionUnsupported, e.to_string()))
    })?;
    let bytes = match store.get(&root.key(&name)).await {
        Ok(object) => object.bytes,
        Err(error) if error.kind() == ErrorKind::NotFound => {
            return Ok(Manifest::new(me.archive_id.clone(), me.site.clone()));
        }
        Err(error) => return Err(error.into()),
    };
    let manifest = Manifest::from_slice(&name, &bytes).map_err(|error| {
        SessionError::Refused(match &error {
            ManifestError::Legacy { .. } => Refusal::new(
                RefusalToken::ArchiveLegacy,
                format!("{error} (an older writer rewrote it)"),
            ),
            ManifestError::Damaged { .. } => Refusal::with_remedy(
                RefusalToken::ArchiveVersionUnsupported,
                error.to_string(),
                REMEDY_DAMAGED_MANIFEST,
            ),
            _ => Refusal::new(RefusalToken::ArchiveVersionUnsupported, error.to_string()),
        })
    })?;
    if manifest.archive_id != me.archive_id {
        return Err(SessionError::Refused(Refusal::new(
            RefusalToken::ArchiveIdentityMismatch,
            format!("{name} names archive {}, this writer {}", manifest.archive_id, me.archive_id),
        )));
    }
    Ok(manifest)
}

/// Saves the site's manifest and reads it back.
pub async fn save_manifest<S: ObjectStore>(
    store: &S,
    root: &ArchiveRoot,
    manifest: &Manifest,
) -> Result<(), SessionError> {
    let name = manifest_name(&manifest.site).map_err(|e| {
        SessionError::Refused(Refusal::new(RefusalToken::ArchiveVersionUnsupported, e.to_string()))
    })?;
    let bytes = manifest.to_vec();
    let key = root.key(&name);
    store.put(&key, bytes.clone()).await?;
    let back = store.get(&key).await?.bytes;
    if back != bytes {
        return Err(SessionError::ReadBack { what: name });
    }
    Ok(())
}
