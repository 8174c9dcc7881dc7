//! The refusal tokens and violation names this crate writes exist in bloodraven-crd's catalog.

use bloodraven_archive::manifest::Violation;
use bloodraven_archive::refusal::{ALL_TOKENS, RefusalToken};
use bloodraven_crd::catalog::{Kind, lookup};

#[test]
fn every_refusal_token_is_in_the_catalog() {
    for token in ALL_TOKENS {
        assert!(
            lookup(Kind::PitrRefusal, token.as_str()).is_some(),
            "{token} is not a PITR refusal in the catalog"
        );
    }
}

#[test]
fn archive_ready_reasons_are_in_the_catalog() {
    // The writer-side refusals are PITRArchiveReady reasons (the spec's table).
    for token in [
        RefusalToken::ArchiveForeign,
        RefusalToken::ArchiveCopy,
        RefusalToken::ArchiveLegacy,
        RefusalToken::ArchiveDescriptorMissing,
        RefusalToken::ArchiveEncryptionMismatch,
        RefusalToken::ArchiveKeyMismatch,
        RefusalToken::ArchiveVersionUnsupported,
        RefusalToken::ArchiveStoreUnsupported,
        RefusalToken::ArchiveUnsafeHistory,
    ] {
        assert!(
            lookup(Kind::ArchiveReason, token.reason()).is_some(),
            "{} is not an archive reason",
            token.reason()
        );
    }
}

#[test]
fn violations_are_in_the_catalog() {
    for violation in [
        Violation::ReplicationFilter,
        Violation::BinlogFilter,
        Violation::BinlogFormat,
        Violation::BinlogRowImage,
        Violation::CommitOrder,
    ] {
        let name = serde_json::to_value(&violation).unwrap();
        let name = name.as_str().unwrap();
        assert!(lookup(Kind::ArchiveHistoryViolation, name).is_some(), "{name}");
    }
}
