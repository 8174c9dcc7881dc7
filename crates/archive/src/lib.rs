//! The PITR binlog archive: its format, its sans-IO reader and the coverage model.
//!
//! Everything here is pure: no IO, no clock, no async. Callers fetch bytes through a store
//! (`bloodraven-store`) and hand them to [`reader::ArchiveReader`]; decisions that need the time
//! take a `now` argument.
//!
//! - [`destination`]: destination normalization (what the archive ID is derived from).
//! - [`descriptor`]: `binlogs/archive.json`, the write-once archive identity, and the archive ID
//!   derivation.
//! - [`manifest`]: `manifest-<site>.json` version 2.
//! - [`ident`]: object keys, content ids and the passphrase key check.
//! - [`envelope`]: the `BRV1` object envelope of encrypted archives (AES-256-GCM).
//! - [`refusal`]: the refusal tokens (`PITRArchive…`) with their remedies.
//! - [`reader`]: the sans-IO archive open (plan, feed, finish).
//! - [`coverage`]: what the archive holds, per site and for the group, and restorable windows.
//! - `fixtures` (feature `fixtures`): in-memory archives for named scenarios.
//!
//! See `README.md` next to this crate for the format summary and the coverage definitions.

pub mod coverage;
pub mod descriptor;
pub mod destination;
pub mod envelope;
pub mod ident;
pub mod manifest;
pub mod reader;
pub mod refusal;
mod time;

#[cfg(feature = "fixtures")]
pub mod fixtures;

pub use crate::coverage::{BackupPoint, Coverage};
pub use crate::descriptor::{ArchiveDescriptor, ArchiveId, Encryption, EncryptionMode, SourceRef};
pub use crate::destination::{Destination, NormalizedDestination};
pub use crate::ident::{ContentId, ContentIdKey};
pub use crate::manifest::{FileRow, Manifest, PromotionRecord, RetirementRecord};
pub use crate::reader::{ArchiveReader, OpenArchive, OpenError};
pub use crate::refusal::{Refusal, RefusalToken};
pub use crate::time::{format_timestamp, parse_probe_interval};

/// The archive's sub-prefix under a backup profile's prefix.
pub const ARCHIVE_DIR: &str = "binlogs";

/// Errors of this crate that are not archive refusals (bad input to a constructor).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A destination could not be normalized.
    #[error("invalid archive destination: {0}")]
    InvalidDestination(String),
    /// A site name is not `^[a-z0-9-]+$` (at most 63 characters).
    #[error("invalid site name {0:?}: expected 1 to 63 characters of [a-z0-9-]")]
    InvalidSite(String),
    /// A binlog file name is not a plain file name.
    #[error(
        "invalid binlog file name {0:?}: expected 1 to 255 characters of [A-Za-z0-9._-] not starting with '.'"
    )]
    InvalidBinlogName(String),
    /// A content id is not 64 lowercase hexadecimal characters.
    #[error(
        "invalid content id {text:?} at byte {offset}: expected 64 lowercase hexadecimal characters"
    )]
    InvalidContentId {
        /// The text that was parsed.
        text: String,
        /// The byte offset of the first bad character (or the length when it is too short).
        offset: usize,
    },
    /// An archive ID is not `ar1-` followed by 26 base32 characters.
    #[error(
        "invalid archive id {text:?} at byte {offset}: expected ar1- and 26 characters of [a-z2-7]"
    )]
    InvalidArchiveId {
        /// The text that was parsed.
        text: String,
        /// The byte offset of the first bad character.
        offset: usize,
    },
    /// A duration could not be parsed.
    #[error(
        "invalid duration {text:?} at byte {offset}: expected a duration such as 5s, 1.5s or 1m30s"
    )]
    InvalidDuration {
        /// The text that was parsed.
        text: String,
        /// The byte offset of the first bad character.
        offset: usize,
    },
    /// A manifest edit would break an invariant.
    #[error("invalid manifest edit: {0}")]
    InvalidManifestEdit(String),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// True when `site` is a valid site name: 1 to 63 characters of `[a-z0-9-]`.
pub fn is_valid_site(site: &str) -> bool {
    !site.is_empty()
        && site.len() <= 63
        && site.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Checks a site name (see [`is_valid_site`]).
pub fn check_site(site: &str) -> Result<()> {
    if is_valid_site(site) { Ok(()) } else { Err(Error::InvalidSite(site.to_owned())) }
}
