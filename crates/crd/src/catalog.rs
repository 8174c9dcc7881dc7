//! The reason catalog: what every phase, outcome, reason, warning, wait reason and refusal
//! token of planned failover, PITR, the archive, restores, in-place restores, artifact
//! cleanup and backup metadata means, for the engineer who meets one at 3 a.m.
//!
//! Each [`Entry`] says what the token means, what state the cluster (or the backup) was left
//! in, what to do, and whether waiting can clear it ([`Waiting`]). The text is ours, written
//! from the spec (Bloodraven v1.7): the planned-failover document for the
//! `PlannedFailover*` kinds, the backup-and-restore document for the rest.
//!
//! Lookup is by kind and token: [`lookup`]`(`[`Kind::PlannedFailoverReason`]`, "LagTimeout")`.
//! The same token can mean different things in different kinds (`StatusStalled` is a reason and
//! a warning, `Fencing` is a planned-failover phase and an in-place restore phase), so the kind
//! is part of the key. [`lookup_any`] lists every kind a token appears in.
//!
//! The catalog is static data: no IO, no allocation. The integration test
//! `tests/it/catalog.rs` holds the exact token list of every kind, extracted from the spec into
//! `tests/fixtures/catalog/<kind>.txt`, and fails when the catalog misses or invents a token.

mod artifact_cleanup;
mod backup;
mod pitr;
mod planned_failover;
pub mod planned_failover_run;
mod restore;
pub mod topology;

/// A family of tokens; each has its own fixture file, named by [`Kind::slug`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `status.plannedFailover.phase`.
    PlannedFailoverPhase,
    /// Phases of `status.plannedFailover.phase` that only operators before v1.7 wrote.
    PlannedFailoverLegacyPhase,
    /// `status.plannedFailover.result.outcome`.
    PlannedFailoverOutcome,
    /// `status.plannedFailover.result.reason` (also `rollback.reason`).
    PlannedFailoverReason,
    /// `status.plannedFailover.result.warnings[]`.
    PlannedFailoverWarning,
    /// `status.plannedFailover.admission.waitReason`.
    PlannedFailoverWaitReason,
    /// `status.plannedFailover.admission.deferReason` (and the deferral metric's `reason`).
    PlannedFailoverDeferReason,
    /// PITR restore and verification refusal tokens (`status.restore.reason`, the Verified
    /// condition's reason, the restore Job's termination message).
    PitrRefusal,
    /// Other PITR tokens: a backup's pending reason, a condition reason and the PITR Events.
    PitrSignal,
    /// Reasons of the `PITRArchiveReady` condition (and `status.pitr.archive.reason`).
    ArchiveReason,
    /// `historyIntegrity.violation` of a site's archive manifest.
    ArchiveHistoryViolation,
    /// `status.pitr.archive.state` (and the sidecar's `archive.state`).
    ArchiveState,
    /// Why an archive encryption binding is not Bound: its refusal reasons, and the
    /// `ArchiveListFailed` message of a check that cannot list the archive.
    ArchiveBindingReason,
    /// `status.restore.phase` of a bootstrap restore (`spec.initFromBackup`).
    RestorePhase,
    /// Bootstrap-restore reasons, Events and the Job's refusal tokens.
    Restore,
    /// `status.restoreInPlace.phase`.
    RestoreInPlacePhase,
    /// `status.restoreReclones.phase`, the peer reclone queue of a full-instance restore.
    RestoreReclonePhase,
    /// In-place restore reasons and Events, including the offline fence and the reclone queue.
    RestoreInPlace,
    /// Reasons of the `ArtifactCleanup` condition on a deleted `MysqlBackup`.
    ArtifactCleanup,
    /// The cleanup Job's termination-message verdicts.
    ArtifactCleanupVerdict,
    /// The Events of artifact cleanup and retention on a `MysqlBackup`.
    ArtifactCleanupEvent,
    /// Reasons of the `MetadataComplete` condition on a `MysqlBackup`.
    BackupMetadata,
    /// Why a backup profile refuses to run backups.
    BackupProfileRefusal,
    /// Reasons of the `Ready` condition on a `MysqlBackup`.
    BackupReady,
    /// The Events of a backup run (on the `MysqlBackup`, retries on the group).
    BackupEvent,
}

impl Kind {
    /// Every kind, in declaration order.
    pub const ALL: [Kind; 25] = [
        Kind::PlannedFailoverPhase,
        Kind::PlannedFailoverLegacyPhase,
        Kind::PlannedFailoverOutcome,
        Kind::PlannedFailoverReason,
        Kind::PlannedFailoverWarning,
        Kind::PlannedFailoverWaitReason,
        Kind::PlannedFailoverDeferReason,
        Kind::PitrRefusal,
        Kind::PitrSignal,
        Kind::ArchiveReason,
        Kind::ArchiveHistoryViolation,
        Kind::ArchiveState,
        Kind::ArchiveBindingReason,
        Kind::RestorePhase,
        Kind::Restore,
        Kind::RestoreInPlacePhase,
        Kind::RestoreReclonePhase,
        Kind::RestoreInPlace,
        Kind::ArtifactCleanup,
        Kind::ArtifactCleanupVerdict,
        Kind::ArtifactCleanupEvent,
        Kind::BackupMetadata,
        Kind::BackupProfileRefusal,
        Kind::BackupReady,
        Kind::BackupEvent,
    ];

    /// The kind's name in kebab case; also its fixture file's stem.
    pub const fn slug(self) -> &'static str {
        match self {
            Kind::PlannedFailoverPhase => "planned-failover-phase",
            Kind::PlannedFailoverLegacyPhase => "planned-failover-legacy-phase",
            Kind::PlannedFailoverOutcome => "planned-failover-outcome",
            Kind::PlannedFailoverReason => "planned-failover-reason",
            Kind::PlannedFailoverWarning => "planned-failover-warning",
            Kind::PlannedFailoverWaitReason => "planned-failover-wait-reason",
            Kind::PlannedFailoverDeferReason => "planned-failover-defer-reason",
            Kind::PitrRefusal => "pitr-refusal",
            Kind::PitrSignal => "pitr-signal",
            Kind::ArchiveReason => "archive-reason",
            Kind::ArchiveHistoryViolation => "archive-history-violation",
            Kind::ArchiveState => "archive-state",
            Kind::ArchiveBindingReason => "archive-binding-reason",
            Kind::RestorePhase => "restore-phase",
            Kind::Restore => "restore",
            Kind::RestoreInPlacePhase => "restore-in-place-phase",
            Kind::RestoreReclonePhase => "restore-reclone-phase",
            Kind::RestoreInPlace => "restore-in-place",
            Kind::ArtifactCleanup => "artifact-cleanup",
            Kind::ArtifactCleanupVerdict => "artifact-cleanup-verdict",
            Kind::ArtifactCleanupEvent => "artifact-cleanup-event",
            Kind::BackupMetadata => "backup-metadata",
            Kind::BackupProfileRefusal => "backup-profile-refusal",
            Kind::BackupReady => "backup-ready",
            Kind::BackupEvent => "backup-event",
        }
    }

    /// The kind whose slug is `slug`.
    pub fn from_slug(slug: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.slug() == slug)
    }

    /// Every entry of the kind.
    pub const fn entries(self) -> &'static [Entry] {
        match self {
            Kind::PlannedFailoverPhase => planned_failover::PHASES,
            Kind::PlannedFailoverLegacyPhase => planned_failover::LEGACY_PHASES,
            Kind::PlannedFailoverOutcome => planned_failover::OUTCOMES,
            Kind::PlannedFailoverReason => planned_failover::REASONS,
            Kind::PlannedFailoverWarning => planned_failover::WARNINGS,
            Kind::PlannedFailoverWaitReason => planned_failover::WAIT_REASONS,
            Kind::PlannedFailoverDeferReason => planned_failover::DEFER_REASONS,
            Kind::PitrRefusal => pitr::REFUSALS,
            Kind::PitrSignal => pitr::SIGNALS,
            Kind::ArchiveReason => pitr::ARCHIVE_REASONS,
            Kind::ArchiveHistoryViolation => pitr::HISTORY_VIOLATIONS,
            Kind::ArchiveState => pitr::ARCHIVE_STATES,
            Kind::ArchiveBindingReason => pitr::BINDING_REASONS,
            Kind::RestorePhase => restore::RESTORE_PHASES,
            Kind::Restore => restore::RESTORE,
            Kind::RestoreInPlacePhase => restore::RESTORE_IN_PLACE_PHASES,
            Kind::RestoreReclonePhase => restore::RECLONE_PHASES,
            Kind::RestoreInPlace => restore::RESTORE_IN_PLACE,
            Kind::ArtifactCleanup => artifact_cleanup::REASONS,
            Kind::ArtifactCleanupVerdict => artifact_cleanup::VERDICTS,
            Kind::ArtifactCleanupEvent => artifact_cleanup::EVENTS,
            Kind::BackupMetadata => backup::METADATA_REASONS,
            Kind::BackupProfileRefusal => backup::PROFILE_REFUSALS,
            Kind::BackupReady => backup::READY_REASONS,
            Kind::BackupEvent => backup::EVENTS,
        }
    }
}

/// Whether waiting can clear the cause a token reports. A terminal record (a `NotStarted` run,
/// a failed restore) is never re-run by waiting: once its cause has cleared, the request has to
/// be made again, as [`Entry::remedy`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Waiting {
    /// Normal progress or a good end: there is nothing to clear.
    NothingToClear,
    /// The operator retries or moves on by itself; waiting clears it.
    Clears,
    /// Waiting clears it in some cases, named in [`Entry::remedy`], not in others.
    Sometimes,
    /// Only a human action clears it.
    Never,
}

/// What one token means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The token exactly as the operator writes it.
    pub token: &'static str,
    /// What it means.
    pub meaning: &'static str,
    /// What the cluster (or the backup, or the restore) was left in.
    pub left_in: &'static str,
    /// What to do about it.
    pub remedy: &'static str,
    /// Whether waiting can clear it.
    pub waiting: Waiting,
}

/// Shorthand for the data modules.
const fn entry(
    token: &'static str,
    waiting: Waiting,
    meaning: &'static str,
    left_in: &'static str,
    remedy: &'static str,
) -> Entry {
    Entry { token, meaning, left_in, remedy, waiting }
}

/// The entry for `token` in `kind`.
pub fn lookup(kind: Kind, token: &str) -> Option<&'static Entry> {
    kind.entries().iter().find(|entry| entry.token == token)
}

/// Every kind in which `token` appears, with its entry there.
pub fn lookup_any(token: &str) -> impl Iterator<Item = (Kind, &'static Entry)> + '_ {
    Kind::ALL.into_iter().filter_map(move |kind| lookup(kind, token).map(|entry| (kind, entry)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_round_trip() {
        for kind in Kind::ALL {
            assert_eq!(Kind::from_slug(kind.slug()), Some(kind));
        }
        assert_eq!(Kind::from_slug("nope"), None);
    }

    #[test]
    fn lookup_finds_by_kind_and_token() {
        let entry = lookup(Kind::PlannedFailoverReason, "LagTimeout").unwrap();
        assert_eq!(entry.token, "LagTimeout");
        assert_eq!(lookup(Kind::PlannedFailoverWarning, "LagTimeout"), None);
        let kinds: Vec<Kind> = lookup_any("StatusStalled").map(|(kind, _)| kind).collect();
        assert_eq!(kinds, [Kind::PlannedFailoverReason, Kind::PlannedFailoverWarning]);
    }

    #[test]
    fn entries_are_complete_sentences() {
        for kind in Kind::ALL {
            let mut tokens: Vec<&str> = kind.entries().iter().map(|e| e.token).collect();
            tokens.sort_unstable();
            let before = tokens.len();
            tokens.dedup();
            assert_eq!(tokens.len(), before, "{} has a duplicate token", kind.slug());
            for entry in kind.entries() {
                for (field, text) in [
                    ("meaning", entry.meaning),
                    ("left_in", entry.left_in),
                    ("remedy", entry.remedy),
                ] {
                    let what = format!("{}/{} {field}", kind.slug(), entry.token);
                    assert!(text.len() >= "Nothing.".len(), "{what} is too short");
                    assert!(
                        text.starts_with(|c: char| c.is_uppercase()
                            || c.is_ascii_digit()
                            || c == '`'),
                        "{what}"
                    );
                    assert!(
                        text.ends_with('.') || text.ends_with(".)"),
                        "{what} does not end with a full stop"
                    );
                    assert!(!text.contains("  "), "{what} has a double space");
                }
            }
        }
    }
}
