//! The archive refusal tokens, in one place, with their condition reasons and remedies.
//!
//! Tokens and remedy texts follow the spec's tables ("Archive identity", "Restore refusals").
//! `bloodraven-crd`'s reason catalog carries the same tokens for the operator and the console;
//! this crate keeps its own copy because it may not depend on `kube` (pure-crate invariant).

use std::fmt;

/// An archive refusal token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RefusalToken {
    /// Listing the archive was refused for permission.
    ArchiveListFailed,
    /// No descriptor and no manifests.
    ArchiveNotFound,
    /// A newer descriptor or manifest, an unknown encryption mode, or a damaged archive.json.
    ArchiveVersionUnsupported,
    /// The prefix predates archive identity (version 1 manifests).
    ArchiveLegacy,
    /// Version 2 manifests without archive.json.
    ArchiveDescriptorMissing,
    /// A manifest names another archive, or the expected archive/group differs.
    ArchiveIdentityMismatch,
    /// The descriptor's encryption mode or algorithm differs from the profile's.
    ArchiveEncryptionMismatch,
    /// The passphrase does not verify the keyCheck.
    ArchiveKeyMismatch,
    /// A site's manifest records a reset epoch.
    ArchiveHistoryReset,
    /// An archive object is invalid: a manifest key whose site is not `^[a-z0-9-]+$`.
    ArchiveObjectInvalid,
    /// Writer: the descriptor names another group.
    ArchiveForeign,
    /// Writer: this group's UID but an archive ID for another destination (a copy).
    ArchiveCopy,
    /// Writer: the store does not enforce atomic create.
    ArchiveStoreUnsupported,
    /// A site set its history-integrity marker.
    ArchiveUnsafeHistory,
}

/// Every token, in the spec's archive-open order (readers) followed by the writer-only ones.
pub const ALL_TOKENS: [RefusalToken; 14] = [
    RefusalToken::ArchiveListFailed,
    RefusalToken::ArchiveNotFound,
    RefusalToken::ArchiveVersionUnsupported,
    RefusalToken::ArchiveLegacy,
    RefusalToken::ArchiveDescriptorMissing,
    RefusalToken::ArchiveIdentityMismatch,
    RefusalToken::ArchiveEncryptionMismatch,
    RefusalToken::ArchiveKeyMismatch,
    RefusalToken::ArchiveHistoryReset,
    RefusalToken::ArchiveObjectInvalid,
    RefusalToken::ArchiveForeign,
    RefusalToken::ArchiveCopy,
    RefusalToken::ArchiveStoreUnsupported,
    RefusalToken::ArchiveUnsafeHistory,
];

/// Remedy of `PITRArchiveListFailed` for an S3 403 (AccessDenied).
pub const REMEDY_LIST_S3_FORBIDDEN: &str = "grant s3:ListBucket on the archive prefix";
/// Remedy of `PITRArchiveListFailed` for a PVC permission error (EACCES).
pub const REMEDY_LIST_EACCES: &str = "make the archive volume readable by the Job's user";
/// Remedy of `PITRArchiveVersionUnsupported` for a damaged archive.json (the spec's wording).
pub const REMEDY_DAMAGED_DESCRIPTOR: &str = "restore the original archive.json (bucket versioning, a copy) or point the profile at a new prefix";
/// Remedy of `PITRArchiveVersionUnsupported` for a damaged manifest.
pub const REMEDY_DAMAGED_MANIFEST: &str = "restore the original manifest object (bucket versioning, a copy) or point the profile at a new prefix";
/// The message prefix of a damaged archive.json.
pub const DAMAGED_DESCRIPTOR: &str = "archive.json is damaged";

impl RefusalToken {
    /// The token (`PITRArchiveLegacy`): the start of `lastError` and termination messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            RefusalToken::ArchiveListFailed => "PITRArchiveListFailed",
            RefusalToken::ArchiveNotFound => "PITRArchiveNotFound",
            RefusalToken::ArchiveVersionUnsupported => "PITRArchiveVersionUnsupported",
            RefusalToken::ArchiveLegacy => "PITRArchiveLegacy",
            RefusalToken::ArchiveDescriptorMissing => "PITRArchiveDescriptorMissing",
            RefusalToken::ArchiveIdentityMismatch => "PITRArchiveIdentityMismatch",
            RefusalToken::ArchiveEncryptionMismatch => "PITRArchiveEncryptionMismatch",
            RefusalToken::ArchiveKeyMismatch => "PITRArchiveKeyMismatch",
            RefusalToken::ArchiveHistoryReset => "PITRArchiveHistoryReset",
            RefusalToken::ArchiveObjectInvalid => "PITRArchiveObjectInvalid",
            RefusalToken::ArchiveForeign => "PITRArchiveForeign",
            RefusalToken::ArchiveCopy => "PITRArchiveCopy",
            RefusalToken::ArchiveStoreUnsupported => "PITRArchiveStoreUnsupported",
            RefusalToken::ArchiveUnsafeHistory => "PITRArchiveUnsafeHistory",
        }
    }

    /// The `PITRArchiveReady` condition reason (the token without `PITR`).
    pub const fn reason(self) -> &'static str {
        match self {
            RefusalToken::ArchiveListFailed => "ArchiveListFailed",
            RefusalToken::ArchiveNotFound => "ArchiveNotFound",
            RefusalToken::ArchiveVersionUnsupported => "ArchiveVersionUnsupported",
            RefusalToken::ArchiveLegacy => "ArchiveLegacy",
            RefusalToken::ArchiveDescriptorMissing => "ArchiveDescriptorMissing",
            RefusalToken::ArchiveIdentityMismatch => "ArchiveIdentityMismatch",
            RefusalToken::ArchiveEncryptionMismatch => "ArchiveEncryptionMismatch",
            RefusalToken::ArchiveKeyMismatch => "ArchiveKeyMismatch",
            RefusalToken::ArchiveHistoryReset => "ArchiveHistoryReset",
            RefusalToken::ArchiveObjectInvalid => "ArchiveObjectInvalid",
            RefusalToken::ArchiveForeign => "ArchiveForeign",
            RefusalToken::ArchiveCopy => "ArchiveCopy",
            RefusalToken::ArchiveStoreUnsupported => "ArchiveStoreUnsupported",
            RefusalToken::ArchiveUnsafeHistory => "ArchiveUnsafeHistory",
        }
    }

    /// The token for a string (`PITRArchiveLegacy` or the reason `ArchiveLegacy`).
    pub fn from_token(text: &str) -> Option<RefusalToken> {
        ALL_TOKENS.into_iter().find(|token| token.as_str() == text || token.reason() == text)
    }

    /// The general remedy (a refusal may carry a more specific one).
    pub const fn remedy(self) -> &'static str {
        match self {
            RefusalToken::ArchiveListFailed => {
                "grant list permission on the archive prefix (S3: s3:ListBucket; PVC: make the archive volume readable by the Job's user)"
            }
            RefusalToken::ArchiveNotFound => {
                "check the archive profile: it names no archive (wrong profile, or an empty archive)"
            }
            RefusalToken::ArchiveVersionUnsupported => {
                "run the release that wrote the archive; for a damaged archive.json restore the original object (bucket versioning, a copy) or point the profile at a new prefix"
            }
            RefusalToken::ArchiveLegacy => {
                "the prefix predates archive identity: restore it with a pre-v1.7.0 image, or give the profile a new prefix and take a full backup"
            }
            RefusalToken::ArchiveDescriptorMissing => {
                "restore archive.json, or wait for a replicated copy to receive it"
            }
            RefusalToken::ArchiveIdentityMismatch => {
                "every manifest and the backup stamp must name this archive: restore the original manifest, or use a backup of this archive's group"
            }
            RefusalToken::ArchiveEncryptionMismatch => {
                "make the profile's encryption mode and algorithm match the archive's descriptor"
            }
            RefusalToken::ArchiveKeyMismatch => "mount the passphrase the archive was written with",
            RefusalToken::ArchiveHistoryReset => "start a new prefix and take a full backup",
            RefusalToken::ArchiveObjectInvalid => {
                "remove or rename the object: manifest keys must be manifest-<site>.json with a site of [a-z0-9-] (restore the original from versioning or a copy)"
            }
            RefusalToken::ArchiveForeign => "point the profile at a new prefix",
            RefusalToken::ArchiveCopy => {
                "copies are read-only: point the profile at this group's own prefix"
            }
            RefusalToken::ArchiveStoreUnsupported => {
                "use a store that enforces atomic create (S3 If-None-Match: *, or a PVC filesystem with link(2))"
            }
            RefusalToken::ArchiveUnsafeHistory => {
                "fix the setting, point spec.backup.pitr at a new prefix and take a full backup"
            }
        }
    }
}

impl fmt::Display for RefusalToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: the token, what was seen, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{token}: {message}; {remedy}")]
pub struct Refusal {
    /// The token.
    pub token: RefusalToken,
    /// What was seen (lowercase, names the object).
    pub message: String,
    /// What to do.
    pub remedy: &'static str,
}

impl Refusal {
    /// A refusal with the token's general remedy.
    pub fn new(token: RefusalToken, message: impl Into<String>) -> Self {
        Refusal { token, message: message.into(), remedy: token.remedy() }
    }

    /// A refusal with a specific remedy.
    pub fn with_remedy(
        token: RefusalToken,
        message: impl Into<String>,
        remedy: &'static str,
    ) -> Self {
        Refusal { token, message: message.into(), remedy }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        for token in ALL_TOKENS {
            assert_eq!(RefusalToken::from_token(token.as_str()), Some(token));
            assert_eq!(RefusalToken::from_token(token.reason()), Some(token));
            assert_eq!(format!("PITR{}", token.reason()), token.as_str());
            assert!(!token.remedy().is_empty());
        }
        assert_eq!(RefusalToken::from_token("PITRArchiveGap"), None);
    }

    #[test]
    fn display_starts_with_the_token() {
        let refusal = Refusal::new(RefusalToken::ArchiveLegacy, "manifest-a.json is version 1");
        assert!(
            refusal.to_string().starts_with("PITRArchiveLegacy: manifest-a.json is version 1; ")
        );
    }
}
