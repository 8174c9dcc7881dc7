//! The refusal tokens of "Restore refusals" and the refusal order 1–10 as data.
//!
//! [`REFUSAL_ORDER`] lists every check the planner runs, in the document's order (000 lines
//! 920–931). The planner walks the table and the first check that applies wins
//! ([`crate::plan`]). Token strings equal `bloodraven-crd`'s `PitrToken` values (cross-checked
//! by a test; the library does not depend on the API crate, which would pull kube into a pure
//! crate's closure).

use std::fmt;

use serde::Serialize;

/// A restore refusal token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Token {
    /// Unparsable or fractional target, bad excludeGtids entry, excludeGtids over 64 KiB.
    #[serde(rename = "PITRTargetInvalid")]
    TargetInvalid,
    /// No stamp (no source group UID, no readable stamp).
    #[serde(rename = "PITRBackupIdentityUnknown")]
    BackupIdentityUnknown,
    /// The stamp names another backup or source group; gtidExecuted not in @.json.
    #[serde(rename = "PITRBackupIdentityMismatch")]
    BackupIdentityMismatch,
    /// No @.json, no @.done.json, no serverClock.end.
    #[serde(rename = "PITRBackupIncomplete")]
    BackupIncomplete,
    /// No gtidExecuted in @.json, or gtidExecutedInconsistent.
    #[serde(rename = "PITRBackupInconsistent")]
    BackupInconsistent,
    /// The dump was taken with schema filters.
    #[serde(rename = "PITRBackupFiltered")]
    BackupFiltered,
    /// Listing the archive was refused for permission.
    #[serde(rename = "PITRArchiveListFailed")]
    ArchiveListFailed,
    /// No descriptor and no manifests.
    #[serde(rename = "PITRArchiveNotFound")]
    ArchiveNotFound,
    /// A newer descriptor or manifest, or a damaged archive.json.
    #[serde(rename = "PITRArchiveVersionUnsupported")]
    ArchiveVersionUnsupported,
    /// Version 1 manifests.
    #[serde(rename = "PITRArchiveLegacy")]
    ArchiveLegacy,
    /// Version 2 manifests without archive.json.
    #[serde(rename = "PITRArchiveDescriptorMissing")]
    ArchiveDescriptorMissing,
    /// A manifest or the stamp names another archive or group.
    #[serde(rename = "PITRArchiveIdentityMismatch")]
    ArchiveIdentityMismatch,
    /// The read binding's encryption differs from the descriptor's.
    #[serde(rename = "PITRArchiveEncryptionMismatch")]
    ArchiveEncryptionMismatch,
    /// The key does not verify the keyCheck.
    #[serde(rename = "PITRArchiveKeyMismatch")]
    ArchiveKeyMismatch,
    /// A manifest records a reset epoch.
    #[serde(rename = "PITRArchiveHistoryReset")]
    ArchiveHistoryReset,
    /// excludeGtids intersects the backup.
    #[serde(rename = "PITRExcludeIntersectsBackup")]
    ExcludeIntersectsBackup,
    /// Two copies of one GTID differ, or a backup GTID was reissued after the dump.
    #[serde(rename = "PITRArchiveNamespaceReuse")]
    ArchiveNamespaceReuse,
    /// The target is inside the dump, or the backup holds a commit at or after it.
    #[serde(rename = "PITRBackupAfterTarget")]
    BackupAfterTarget,
    /// Nothing at or after the target is archived.
    #[serde(rename = "PITRTargetNotCovered")]
    TargetNotCovered,
    /// The target does not name one history.
    #[serde(rename = "PITRStopAmbiguous")]
    StopAmbiguous,
    /// A needed site set its history-integrity marker.
    #[serde(rename = "PITRArchiveUnsafeHistory")]
    ArchiveUnsafeHistory,
    /// The backup holds a transaction outside the target history.
    #[serde(rename = "PITRBackupNotOnLineage")]
    BackupNotOnLineage,
    /// Archived transactions inside the window are outside the target history.
    #[serde(rename = "PITRArchiveDivergentHistory")]
    ArchiveDivergentHistory,
    /// Latest mode: two heads.
    #[serde(rename = "PITRArchiveSplitBrain")]
    ArchiveSplitBrain,
    /// Two archived binlogs apply the same two transactions in opposite orders.
    #[serde(rename = "PITRArchiveOrderInversion")]
    ArchiveOrderInversion,
    /// The history needs transactions no archived file holds.
    #[serde(rename = "PITRArchiveGap")]
    ArchiveGap,
    /// Everything is archived but no binlog continues from the furthest state.
    #[serde(rename = "PITRArchiveOrderConflict")]
    ArchiveOrderConflict,
    /// The plan does not fit a limit.
    #[serde(rename = "PITRPlanTooLarge")]
    PlanTooLarge,
    /// XA, anonymous or time-less transaction in the replay.
    #[serde(rename = "PITRReplayUnsupported")]
    ReplayUnsupported,
    /// An active row's object cannot be read.
    #[serde(rename = "PITRArchiveObjectInvalid")]
    ArchiveObjectInvalid,
    /// Nothing archived beyond the backup (latest and partial).
    #[serde(rename = "PITRNoArchivedReplay")]
    NoArchivedReplay,
}

impl Token {
    /// Every token of the "Restore refusals" section this planner can return.
    pub const ALL: [Token; 31] = [
        Token::TargetInvalid,
        Token::BackupIdentityUnknown,
        Token::BackupIdentityMismatch,
        Token::BackupIncomplete,
        Token::BackupInconsistent,
        Token::BackupFiltered,
        Token::ArchiveListFailed,
        Token::ArchiveNotFound,
        Token::ArchiveVersionUnsupported,
        Token::ArchiveLegacy,
        Token::ArchiveDescriptorMissing,
        Token::ArchiveIdentityMismatch,
        Token::ArchiveEncryptionMismatch,
        Token::ArchiveKeyMismatch,
        Token::ArchiveHistoryReset,
        Token::ExcludeIntersectsBackup,
        Token::ArchiveNamespaceReuse,
        Token::BackupAfterTarget,
        Token::TargetNotCovered,
        Token::StopAmbiguous,
        Token::ArchiveUnsafeHistory,
        Token::BackupNotOnLineage,
        Token::ArchiveDivergentHistory,
        Token::ArchiveSplitBrain,
        Token::ArchiveOrderInversion,
        Token::ArchiveGap,
        Token::ArchiveOrderConflict,
        Token::PlanTooLarge,
        Token::ReplayUnsupported,
        Token::ArchiveObjectInvalid,
        Token::NoArchivedReplay,
    ];

    /// The token text (`PITRArchiveGap`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Token::TargetInvalid => "PITRTargetInvalid",
            Token::BackupIdentityUnknown => "PITRBackupIdentityUnknown",
            Token::BackupIdentityMismatch => "PITRBackupIdentityMismatch",
            Token::BackupIncomplete => "PITRBackupIncomplete",
            Token::BackupInconsistent => "PITRBackupInconsistent",
            Token::BackupFiltered => "PITRBackupFiltered",
            Token::ArchiveListFailed => "PITRArchiveListFailed",
            Token::ArchiveNotFound => "PITRArchiveNotFound",
            Token::ArchiveVersionUnsupported => "PITRArchiveVersionUnsupported",
            Token::ArchiveLegacy => "PITRArchiveLegacy",
            Token::ArchiveDescriptorMissing => "PITRArchiveDescriptorMissing",
            Token::ArchiveIdentityMismatch => "PITRArchiveIdentityMismatch",
            Token::ArchiveEncryptionMismatch => "PITRArchiveEncryptionMismatch",
            Token::ArchiveKeyMismatch => "PITRArchiveKeyMismatch",
            Token::ArchiveHistoryReset => "PITRArchiveHistoryReset",
            Token::ExcludeIntersectsBackup => "PITRExcludeIntersectsBackup",
            Token::ArchiveNamespaceReuse => "PITRArchiveNamespaceReuse",
            Token::BackupAfterTarget => "PITRBackupAfterTarget",
            Token::TargetNotCovered => "PITRTargetNotCovered",
            Token::StopAmbiguous => "PITRStopAmbiguous",
            Token::ArchiveUnsafeHistory => "PITRArchiveUnsafeHistory",
            Token::BackupNotOnLineage => "PITRBackupNotOnLineage",
            Token::ArchiveDivergentHistory => "PITRArchiveDivergentHistory",
            Token::ArchiveSplitBrain => "PITRArchiveSplitBrain",
            Token::ArchiveOrderInversion => "PITRArchiveOrderInversion",
            Token::ArchiveGap => "PITRArchiveGap",
            Token::ArchiveOrderConflict => "PITRArchiveOrderConflict",
            Token::PlanTooLarge => "PITRPlanTooLarge",
            Token::ReplayUnsupported => "PITRReplayUnsupported",
            Token::ArchiveObjectInvalid => "PITRArchiveObjectInvalid",
            Token::NoArchivedReplay => "PITRNoArchivedReplay",
        }
    }

    /// The planner token of an archive-open refusal.
    pub fn from_archive(token: bloodraven_archive::RefusalToken) -> Token {
        use bloodraven_archive::RefusalToken as A;
        match token {
            A::ArchiveListFailed => Token::ArchiveListFailed,
            A::ArchiveNotFound => Token::ArchiveNotFound,
            A::ArchiveVersionUnsupported => Token::ArchiveVersionUnsupported,
            A::ArchiveLegacy => Token::ArchiveLegacy,
            A::ArchiveDescriptorMissing => Token::ArchiveDescriptorMissing,
            A::ArchiveEncryptionMismatch => Token::ArchiveEncryptionMismatch,
            A::ArchiveKeyMismatch => Token::ArchiveKeyMismatch,
            A::ArchiveHistoryReset => Token::ArchiveHistoryReset,
            A::ArchiveUnsafeHistory => Token::ArchiveUnsafeHistory,
            // Writer-only tokens and tokens of a newer archive crate: a reader sees them as an
            // identity problem.
            _ => Token::ArchiveIdentityMismatch,
        }
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused plan: the token and the message the document prints after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{token}: {message}")]
pub struct Refusal {
    /// The token.
    pub token: Token,
    /// The message (without the token).
    pub message: String,
    /// The complete divergent/lost set when the message had to shorten it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_set: Option<String>,
}

impl Refusal {
    /// A refusal.
    pub fn new(token: Token, message: impl Into<String>) -> Refusal {
        Refusal { token, message: message.into(), full_set: None }
    }
}

/// One check of the refusal order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Check {
    /// 1: target parse, excludeGtids syntax and size.
    RequestValid,
    /// 2: the dump's stamp and metadata, in dump-meta's order.
    DumpMeta,
    /// 3: the archive open (reader tokens, stamp's archive), then the reset epoch.
    ArchiveOpen,
    /// 3: a manifest records a reset epoch.
    HistoryReset,
    /// 3 (as soon as found): a read row's bytes disagree with its manifest hint.
    ObjectsValid,
    /// 4: X ∩ B.
    ExcludeIntersectsBackup,
    /// 5: a backup GTID archived more than δ after the dump finished.
    FrontierReuse,
    /// 5: the target against the dump's end and the backup's newest commit.
    FrontierAfterTarget,
    /// 6: nothing at or after T is archived (or only on a marked site).
    WitnessCovered,
    /// 6: two candidate witnesses at one microsecond on different histories; an unanchored
    /// predecessor of a replica-only witness.
    WitnessAmbiguous,
    /// 6: the witness (or its anchor) only on a marked site.
    WitnessUnsafe,
    /// 7: B ⊄ Λ.
    LineageBackup,
    /// 7: skew makes the target ambiguous.
    LineageAmbiguous,
    /// 7: D ≠ ∅ (or, in latest mode, a loss at a promotion record).
    LineageDivergent,
    /// 8: two copies of a GTID differ; an unreadable row overlaps the history.
    CopiesReuse,
    /// 8: two binlogs apply two transactions in opposite orders.
    CopiesInversion,
    /// 9: the search needs a marked site.
    SearchUnsafe,
    /// 9: the history needs transactions no readable active row holds.
    SearchGap,
    /// 9: all archived, but no row continues.
    SearchOrderConflict,
    /// 9: the plan exceeds a limit.
    SearchTooLarge,
    /// 10: XA (or anonymous, or time-less) in the replay.
    ReplayUnsupported,
}

/// A row of the refusal order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderRow {
    /// The step, 1–10.
    pub step: u8,
    /// The check.
    pub check: Check,
    /// The tokens the check can return.
    pub tokens: &'static [Token],
    /// When it applies (the document's words) and the message template.
    pub when: &'static str,
}

/// The refusal order 1–10 (000 lines 920–931). The planner runs these rows top to bottom; the
/// first row that applies wins.
pub const REFUSAL_ORDER: &[OrderRow] = &[
    OrderRow {
        step: 1,
        check: Check::RequestValid,
        tokens: &[Token::TargetInvalid],
        when: "an unparsable or fractional target, an excludeGtids entry without a server UUID, a canonical excludeGtids over 64 KiB: \"target <T> is invalid: …\"",
    },
    OrderRow {
        step: 2,
        check: Check::DumpMeta,
        tokens: &[
            Token::BackupIdentityUnknown,
            Token::BackupIdentityMismatch,
            Token::BackupIncomplete,
            Token::BackupInconsistent,
            Token::BackupFiltered,
        ],
        when: "dump-meta: no stamp; stamp of another backup/group; no @.json; no gtidExecuted; gtidExecuted not in @.json; inconsistent; filtered; no @.done.json or serverClock.end",
    },
    OrderRow {
        step: 3,
        check: Check::ArchiveOpen,
        tokens: &[
            Token::ArchiveListFailed,
            Token::ArchiveNotFound,
            Token::ArchiveVersionUnsupported,
            Token::ArchiveLegacy,
            Token::ArchiveDescriptorMissing,
            Token::ArchiveIdentityMismatch,
            Token::ArchiveEncryptionMismatch,
            Token::ArchiveKeyMismatch,
        ],
        when: "pitr-download's archive open (the reader's refusal), or the stamp names another archive than the descriptor",
    },
    OrderRow {
        step: 3,
        check: Check::HistoryReset,
        tokens: &[Token::ArchiveHistoryReset],
        when: "a manifest records a reset epoch: \"site <s> records reset epoch <n> …\"",
    },
    OrderRow {
        step: 3,
        check: Check::ObjectsValid,
        tokens: &[Token::ArchiveObjectInvalid],
        when: "\"refuses as soon as it is found\": the index pass read a row whose GTIDs differ from its manifest hint (ambiguity 33)",
    },
    OrderRow {
        step: 4,
        check: Check::ExcludeIntersectsBackup,
        tokens: &[Token::ExcludeIntersectsBackup],
        when: "X ∩ B ≠ ∅: \"excludeGtids intersects the backup: <set> …\"",
    },
    OrderRow {
        step: 5,
        check: Check::FrontierReuse,
        tokens: &[Token::ArchiveNamespaceReuse],
        when: "a member of B archived with a commit time more than δ after the dump finished",
    },
    OrderRow {
        step: 5,
        check: Check::FrontierAfterTarget,
        tokens: &[Token::BackupAfterTarget],
        when: "T before the dump's end rounded up; B holds a commit at or after T; B's newest commit unknown or a lower bound and T < serverClock.end + 1 s",
    },
    OrderRow {
        step: 6,
        check: Check::WitnessCovered,
        tokens: &[Token::TargetNotCovered, Token::ArchiveUnsafeHistory],
        when: "nothing at or after T archived (UnsafeHistory first when a marked site may hold it); allowPartial turns it into latest mode",
    },
    OrderRow {
        step: 6,
        check: Check::WitnessAmbiguous,
        tokens: &[Token::StopAmbiguous],
        when: "candidates on different histories at the earliest microsecond (\"choose a target ≠ <τ>\"); an unanchored predecessor of a replica-only witness",
    },
    OrderRow {
        step: 6,
        check: Check::WitnessUnsafe,
        tokens: &[Token::ArchiveUnsafeHistory],
        when: "the witness is archived only on a site with a history-integrity marker",
    },
    OrderRow {
        step: 7,
        check: Check::LineageBackup,
        tokens: &[Token::BackupNotOnLineage],
        when: "B holds a transaction not on Λ",
    },
    OrderRow {
        step: 7,
        check: Check::LineageAmbiguous,
        tokens: &[Token::StopAmbiguous],
        when: "a replayed transaction committed at or after T, or a member of D committed on top of the witness (\"choose a target ≤ … or > …\")",
    },
    OrderRow {
        step: 7,
        check: Check::LineageDivergent,
        tokens: &[Token::ArchiveDivergentHistory, Token::ArchiveSplitBrain],
        when: "D ≠ ∅ (the document's message, D up to 1 KiB); latest mode: two heads, or a loss at a promotion record",
    },
    OrderRow {
        step: 8,
        check: Check::CopiesReuse,
        tokens: &[Token::ArchiveNamespaceReuse, Token::ArchiveObjectInvalid],
        when: "two copies of one GTID differ; an unreadable row overlaps the target history (active: ObjectInvalid)",
    },
    OrderRow {
        step: 8,
        check: Check::CopiesInversion,
        tokens: &[Token::ArchiveOrderInversion],
        when: "two archived binlogs apply the same two transactions in opposite orders",
    },
    OrderRow {
        step: 9,
        check: Check::SearchUnsafe,
        tokens: &[Token::ArchiveUnsafeHistory],
        when: "the only continuation is a marked site's file",
    },
    OrderRow {
        step: 9,
        check: Check::SearchGap,
        tokens: &[Token::ArchiveGap],
        when: "the history needs transactions no readable active row holds",
    },
    OrderRow {
        step: 9,
        check: Check::SearchOrderConflict,
        tokens: &[Token::ArchiveOrderConflict],
        when: "every transaction archived, but no archived binlog continues from the furthest state",
    },
    OrderRow {
        step: 9,
        check: Check::SearchTooLarge,
        tokens: &[Token::PlanTooLarge],
        when: "memory budget, event-size limit, staging sizeLimit, node free space",
    },
    OrderRow {
        step: 10,
        check: Check::ReplayUnsupported,
        tokens: &[Token::ReplayUnsupported, Token::NoArchivedReplay],
        when: "XA, anonymous or time-less transaction in the replay; nothing to replay in latest or partial mode",
    },
];

/// The step of a check.
pub fn step_of(check: Check) -> u8 {
    REFUSAL_ORDER.iter().find(|row| row.check == check).map_or(0, |row| row.step)
}

/// Runs `run` over the order and returns the first refusal: "the first applicable refusal
/// wins".
pub fn first_refusal<E>(
    mut run: impl FnMut(Check) -> Result<Option<Refusal>, E>,
) -> Result<Option<Refusal>, E> {
    for row in REFUSAL_ORDER {
        if let Some(refusal) = run(row.check)? {
            return Ok(Some(refusal));
        }
    }
    Ok(None)
}
