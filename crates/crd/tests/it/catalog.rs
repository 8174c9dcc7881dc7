//! The catalog holds exactly the tokens of the spec: tests/fixtures/catalog/<kind>.txt lists
//! them per kind (see the README there for how each list was extracted).

use std::collections::BTreeSet;

use bloodraven_crd::catalog::{self, Kind};
use bloodraven_crd::group::{
    AdmissionDeferReason, AdmissionWaitReason, ArchiveRefusal, ArchiveState, BindingReason,
    HistoryViolation, PitrToken, PlannedFailoverOutcome, PlannedFailoverPhase,
    PlannedFailoverReason, PlannedFailoverWarning, RestoreInPlacePhase, RestoreInPlaceReason,
    RestorePhase, RestoreReclonesPhase,
};

fn fixture_tokens(kind: Kind) -> Vec<String> {
    crate::fixture(&format!("catalog/{}.txt", kind.slug()))
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_kind_has_exactly_the_spec_tokens() {
    let mut problems = Vec::new();
    for kind in Kind::ALL {
        let listed = fixture_tokens(kind);
        let spec: BTreeSet<&str> = listed.iter().map(String::as_str).collect();
        if spec.len() != listed.len() {
            problems.push(format!("{}.txt lists a token twice", kind.slug()));
        }
        let ours: BTreeSet<&str> = kind.entries().iter().map(|entry| entry.token).collect();
        for missing in spec.difference(&ours) {
            problems.push(format!("{}: the catalog misses {missing}", kind.slug()));
        }
        for invented in ours.difference(&spec) {
            problems.push(format!("{}: the catalog invents {invented}", kind.slug()));
        }
        for token in &spec {
            if catalog::lookup(kind, token).is_none() {
                problems.push(format!("{}: lookup({token}) finds nothing", kind.slug()));
            }
        }
    }
    assert!(problems.is_empty(), "catalog and spec disagree:\n{}", problems.join("\n"));
}

#[test]
fn every_fixture_file_is_a_kind() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalog");
    let mut stems: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    stems.sort();
    let mut slugs: Vec<String> = Kind::ALL.iter().map(|kind| kind.slug().to_owned()).collect();
    slugs.sort();
    assert_eq!(stems, slugs);
}

#[test]
fn lookup_is_by_kind() {
    let reason = catalog::lookup(Kind::PlannedFailoverReason, "StatusStalled").unwrap();
    let warning = catalog::lookup(Kind::PlannedFailoverWarning, "StatusStalled").unwrap();
    assert_ne!(reason.meaning, warning.meaning);
    assert!(catalog::lookup(Kind::PlannedFailoverReason, "statusstalled").is_none());
    assert!(catalog::lookup(Kind::PitrRefusal, "PITRArchiveReady").is_none());
    let fencing: Vec<Kind> = catalog::lookup_any("Fencing").map(|(kind, _)| kind).collect();
    assert_eq!(fencing, [Kind::PlannedFailoverPhase, Kind::RestoreInPlacePhase]);
}

/// Every token the API types know has a catalog entry, so the console can explain any value
/// this version can read.
#[test]
fn the_catalog_explains_every_token_the_types_know() {
    let pairs: &[(&[&str], &[Kind])] = &[
        (
            PlannedFailoverPhase::KNOWN,
            &[Kind::PlannedFailoverPhase, Kind::PlannedFailoverLegacyPhase],
        ),
        (PlannedFailoverOutcome::KNOWN, &[Kind::PlannedFailoverOutcome]),
        (PlannedFailoverReason::KNOWN, &[Kind::PlannedFailoverReason]),
        (PlannedFailoverWarning::KNOWN, &[Kind::PlannedFailoverWarning]),
        (AdmissionWaitReason::KNOWN, &[Kind::PlannedFailoverWaitReason]),
        (AdmissionDeferReason::KNOWN, &[Kind::PlannedFailoverDeferReason]),
        (PitrToken::KNOWN, &[Kind::PitrRefusal]),
        (ArchiveRefusal::KNOWN, &[Kind::ArchiveReason]),
        (ArchiveState::KNOWN, &[Kind::ArchiveState]),
        (HistoryViolation::KNOWN, &[Kind::ArchiveHistoryViolation]),
        (BindingReason::KNOWN, &[Kind::ArchiveBindingReason]),
        (RestorePhase::KNOWN, &[Kind::RestorePhase]),
        (RestoreInPlacePhase::KNOWN, &[Kind::RestoreInPlacePhase]),
        (RestoreInPlaceReason::KNOWN, &[Kind::RestoreInPlace]),
        (RestoreReclonesPhase::KNOWN, &[Kind::RestoreReclonePhase]),
    ];
    let mut unexplained = Vec::new();
    for (known, kinds) in pairs {
        for token in *known {
            if !kinds.iter().any(|kind| catalog::lookup(*kind, token).is_some()) {
                unexplained.push(format!("{token} (looked in {kinds:?})"));
            }
        }
    }
    assert!(unexplained.is_empty(), "no catalog entry for:\n{}", unexplained.join("\n"));
}

/// Each of these tokens is filed under the kind (and with the meaning) the spec gives it.
#[test]
fn tokens_are_filed_where_the_spec_uses_them() {
    let slugs_of = |token: &str| -> Vec<&str> {
        catalog::lookup_any(token).map(|(kind, _)| kind.slug()).collect()
    };
    // backup and restore, "Archive binding and keys": the archive profile "cannot run backups
    // (ProfileReadOnly)": a refusal of the profile's backups, not a reason a binding is not
    // Bound.
    assert_eq!(slugs_of("ProfileReadOnly"), ["backup-profile-refusal"]);
    // "Backup metadata": "DestinationUnavailable means neither the status nor the producing Job
    // supplied a destination": a reason of the MetadataComplete condition, not of
    // ArtifactCleanup.
    assert_eq!(slugs_of("DestinationUnavailable"), ["backup-metadata"]);
    // "A check that cannot list the prefix keeps the binding Pending/Authenticating with an
    // ArchiveListFailed: ... message": the binding is not refused, and only a permission fix
    // clears it.
    assert_eq!(slugs_of("ArchiveListFailed"), ["archive-binding-reason"]);
    let list_failed = catalog::lookup(Kind::ArchiveBindingReason, "ArchiveListFailed").unwrap();
    assert!(list_failed.meaning.contains("Pending/Authenticating"), "{list_failed:?}");
    assert!(list_failed.meaning.contains("message"), "{list_failed:?}");
    assert_eq!(list_failed.waiting, catalog::Waiting::Never);
    // planned failover, "Admission": "ClaimHeld: Another run holds the claim." An automation
    // hold is not a wait: it refuses the request at once (ManualRecoveryPending).
    let claim_held = catalog::lookup(Kind::PlannedFailoverWaitReason, "ClaimHeld").unwrap();
    for text in [claim_held.meaning, claim_held.left_in, claim_held.remedy] {
        assert!(
            !text.contains("automation hold") && !text.contains("acknowledge"),
            "ClaimHeld speaks of an automation hold: {text}"
        );
    }
    assert_eq!(claim_held.meaning, "Another run holds the claim.");
}
