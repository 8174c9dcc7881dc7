//! pitr-download: open the archive, download and authenticate its rows, index them, and stage
//! the files a plan replays.
//!
//! Simplification: every row (active and quarantined) is downloaded and indexed, so every
//! manifest hint is verified; the document's "only the files the plan and its proofs need" is
//! an optimisation this does not make yet.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bloodraven_archive::envelope::open_binlog_object;
use bloodraven_archive::reader::ReaderOptions;
use bloodraven_archive::{OpenArchive, OpenError, Refusal};
use bloodraven_pitr::{History, RowBytes, RowIndex, index_row};
use bloodraven_store::{ArchiveRoot, ErrorKind, ObjectStore, RetryPolicy, retry_transient};

use crate::ReplayError;

/// The opened, downloaded and indexed archive.
#[derive(Debug)]
pub struct Downloaded {
    /// The reader's archive.
    pub archive: OpenArchive,
    /// The planner's view, every row read.
    pub history: History,
    /// Object key → the staged file, for rows whose bytes authenticated (empty without staging).
    pub staged: BTreeMap<String, PathBuf>,
    /// Bytes downloaded.
    pub bytes: u64,
}

/// What opening gave.
#[derive(Debug)]
pub enum Opened {
    /// The archive opened and its rows were downloaded.
    Archive(Box<Downloaded>),
    /// The reader refused the archive (the planner's step 3).
    Refused(Refusal),
}

/// Opens the archive at `root` in `store`, downloads every row, indexes it and, with
/// `staging`, writes each authenticated row to `staging/<key>` (a planner that only plans,
/// such as `bloodraven pitr plan`, passes `None`).
pub async fn download<S: ObjectStore + ?Sized>(
    store: &S,
    root: &ArchiveRoot,
    options: ReaderOptions,
    staging: Option<&Path>,
) -> Result<Opened, ReplayError> {
    let reader_key = options.key.clone();
    let archive = match bloodraven_store::open_archive(store, root, options).await {
        Ok(archive) => archive,
        Err(OpenError::Refused(refusal)) => return Ok(Opened::Refused(refusal)),
        Err(other) => return Err(ReplayError::Open(other.to_string())),
    };
    let mut index = RowIndex::new();
    let mut staged = BTreeMap::new();
    let mut total = 0u64;
    for (site, manifest) in &archive.manifests {
        for row in &manifest.files {
            let Ok(key) = row.object_key(site) else {
                index.insert(
                    row.key.clone(),
                    RowBytes::Unreadable(format!("{}: no valid object key", row.name)),
                );
                continue;
            };
            let full = root.key(&key);
            let got = retry_transient(RetryPolicy::ARCHIVE, || store.get(&full)).await;
            let bytes = match got {
                Ok(object) => object.bytes,
                Err(error) if error.kind() == ErrorKind::NotFound => {
                    index.insert(
                        key.clone(),
                        RowBytes::Unreadable(format!("{key}: the object is missing")),
                    );
                    continue;
                }
                Err(source) => {
                    return Err(ReplayError::Store { key: full, source: Box::new(source) });
                }
            };
            total += bytes.len() as u64;
            // Encrypted archives: the BRV1 envelope is opened (bound to the archive and the
            // key) before the content id authenticates the plaintext.
            let bytes = match open_binlog_object(
                &reader_key,
                &archive.descriptor.archive_id,
                &key,
                bytes,
            ) {
                Ok(plain) => plain,
                Err(error) => {
                    index.insert(key.clone(), RowBytes::Unreadable(error.to_string()));
                    continue;
                }
            };
            let indexed = index_row(row, &archive.content_id_key, &bytes);
            if let Some(staging) = staging
                && matches!(indexed, RowBytes::Read(_))
            {
                let path = staging.join(&key);
                write_file(&path, &bytes).await?;
                staged.insert(key.clone(), path);
            }
            tracing::debug!(site = %site, file = %row.name, bytes = bytes.len(), "downloaded row");
            index.insert(key, indexed);
        }
    }
    let history = History::from_archive(&archive, index);
    Ok(Opened::Archive(Box::new(Downloaded { archive, history, staged, bytes: total })))
}

async fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReplayError> {
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent).await.map_err(|source| ReplayError::Io {
            what: "creating the staging folder",
            path: parent.to_owned(),
            source,
        })?;
    }
    tokio::fs::write(path, bytes).await.map_err(|source| ReplayError::Io {
        what: "staging",
        path: path.to_owned(),
        source,
    })
}
