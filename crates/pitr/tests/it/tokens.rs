//! Every token of "Restore refusals" reached, one table row each.

use std::collections::BTreeSet;

use bloodraven_archive::RefusalToken;
use bloodraven_archive::fixtures::{Fixture, Scenario};
use bloodraven_gtid::GtidSet;
use bloodraven_pitr::{
    BackupMeta, History, Input, Limits, Outcome, Plan, Refusal, Request, RowBytes, Token, plan,
};

use crate::helpers::*;

/// a writes A:1-30 (t1..t30) and A:31-60 (t31..t60) in two rows; promotion a#0 at t0.
fn simple() -> Lab {
    let mut lab = Lab::new();
    lab.promotion("a", A, &GtidSet::new(), 0);
    lab.file("a", &GtidSet::new(), &seq(A, 1, 30, 1, 1));
    lab.file("a", &range(A, 1, 30), &seq(A, 31, 60, 31, 1));
    lab
}

struct Case {
    history: History,
    backup: BackupMeta,
    request: Request,
    open: Option<bloodraven_archive::Refusal>,
    limits: Limits,
}

impl Case {
    fn new(lab: Lab) -> Case {
        let backup = lab.backup(&range(A, 1, 10), 10);
        Case {
            history: lab.history,
            backup,
            request: request(Some(t(40)), ""),
            open: None,
            limits: Limits::default(),
        }
    }

    fn run(&self) -> Result<Plan, Refusal> {
        plan(Input {
            history: &self.history,
            open_refusal: self.open.as_ref(),
            backup: &self.backup,
            request: &self.request,
            limits: self.limits,
        })
    }
}

fn with(f: impl FnOnce(&mut Case)) -> Case {
    let mut case = Case::new(simple());
    f(&mut case);
    case
}

fn fixture_case(scenario: Scenario, backup: &str, target: (bloodraven_gtid::Uuid, u64)) -> Case {
    let fixture = Fixture::build(scenario);
    let history = history(&fixture);
    let backup = meta(&fixture, backup, &history);
    let target = at(&fixture, target.0, target.1);
    Case {
        history,
        backup,
        request: request(Some(target), ""),
        open: None,
        limits: Limits::default(),
    }
}

fn open_refusal(token: RefusalToken) -> Case {
    with(|c| c.open = Some(bloodraven_archive::Refusal::new(token, "from the reader")))
}

fn cases() -> Vec<(&'static str, Case, Token)> {
    let big_exclude =
        (1..=20_000u64).map(|n| format!("{A}:{}", n * 2)).collect::<Vec<_>>().join(",");
    vec![
        (
            "fractional target",
            with(|c| c.request.target = Some("2026-11-05T09:30:40.5Z".into())),
            Token::TargetInvalid,
        ),
        (
            "target without zone",
            with(|c| c.request.target = Some("2026-11-05T09:30:40".into())),
            Token::TargetInvalid,
        ),
        (
            "exclude without uuid",
            with(|c| c.request.exclude_gtids = "A:1".into()),
            Token::TargetInvalid,
        ),
        (
            "exclude over 64 KiB",
            with(|c| c.request.exclude_gtids = big_exclude),
            Token::TargetInvalid,
        ),
        ("no source uid", with(|c| c.backup.source_uid.clear()), Token::BackupIdentityUnknown),
        ("no stamp", with(|c| c.backup.stamp = None), Token::BackupIdentityUnknown),
        (
            "stamp of another backup",
            with(|c| c.backup.backup_uid = "other".into()),
            Token::BackupIdentityMismatch,
        ),
        ("no @.json", with(|c| c.backup.dump_json = false), Token::BackupIncomplete),
        ("no gtidExecuted", with(|c| c.backup.gtid_executed = None), Token::BackupInconsistent),
        (
            "gtidExecuted not in @.json",
            with(|c| c.backup.gtid_matches_status = false),
            Token::BackupIdentityMismatch,
        ),
        (
            "gtidExecutedInconsistent",
            with(|c| c.backup.inconsistent = true),
            Token::BackupInconsistent,
        ),
        ("filtered dump", with(|c| c.backup.filtered = true), Token::BackupFiltered),
        ("no @.done.json", with(|c| c.backup.dump_end = None), Token::BackupIncomplete),
        ("list refused", open_refusal(RefusalToken::ArchiveListFailed), Token::ArchiveListFailed),
        ("not found", open_refusal(RefusalToken::ArchiveNotFound), Token::ArchiveNotFound),
        (
            "newer version",
            open_refusal(RefusalToken::ArchiveVersionUnsupported),
            Token::ArchiveVersionUnsupported,
        ),
        (
            "descriptor missing",
            open_refusal(RefusalToken::ArchiveDescriptorMissing),
            Token::ArchiveDescriptorMissing,
        ),
        (
            "encryption mismatch",
            open_refusal(RefusalToken::ArchiveEncryptionMismatch),
            Token::ArchiveEncryptionMismatch,
        ),
        ("key mismatch", open_refusal(RefusalToken::ArchiveKeyMismatch), Token::ArchiveKeyMismatch),
        (
            "legacy prefix (the reader on the fixture)",
            with(|c| {
                c.open = Some(open(&Fixture::build(Scenario::LegacyV1)).unwrap_err());
            }),
            Token::ArchiveLegacy,
        ),
        (
            "stamp names another archive",
            with(|c| c.history.archive_id = "ar1-other".into()),
            Token::ArchiveIdentityMismatch,
        ),
        (
            "reset epoch",
            with(|c| c.history.reset_epochs.push(("a".into(), 1))),
            Token::ArchiveHistoryReset,
        ),
        (
            "exclude in backup",
            with(|c| c.request.exclude_gtids = format!("{A}:5")),
            Token::ExcludeIntersectsBackup,
        ),
        (
            "backup GTID reissued after the dump",
            with(|c| c.backup.dump_end = Some(t(3))),
            Token::ArchiveNamespaceReuse,
        ),
        (
            "target inside the dump",
            with(|c| c.request.target = Some(text(t(10)))),
            Token::BackupAfterTarget,
        ),
        (
            "backup newest only a lower bound",
            with(|c| {
                c.history.files[0].bytes = RowBytes::NotRead;
                c.request.target = Some(text(t(11)));
                if let Some(stamp) = c.backup.stamp.as_mut() {
                    stamp.server_clock_end = Some(t(20));
                }
            }),
            Token::BackupAfterTarget,
        ),
        (
            "nothing at or after T",
            with(|c| c.request.target = Some(text(t(100)))),
            Token::TargetNotCovered,
        ),
        (
            "two histories at one microsecond",
            with(|c| {
                let mut lab = Lab { history: std::mem::take(&mut c.history) };
                lab.file("b", &range(A, 1, 30), &[(B, 1, 40)]);
                c.history = lab.history;
            }),
            Token::StopAmbiguous,
        ),
        (
            "only a marked site holds T",
            with(|c| {
                c.history.marked.insert("a".into());
            }),
            Token::ArchiveUnsafeHistory,
        ),
        (
            "backup off the target history",
            with(|c| {
                c.backup.gtid_executed = Some(range(A, 1, 10).union(&range(B, 99, 99)));
            }),
            Token::BackupNotOnLineage,
        ),
        (
            "another branch inside the window",
            with(|c| {
                let mut lab = Lab { history: std::mem::take(&mut c.history) };
                lab.file("b", &range(A, 1, 30), &[(B, 1, 35)]);
                c.history = lab.history;
            }),
            Token::ArchiveDivergentHistory,
        ),
        (
            "two heads in latest mode",
            with(|c| {
                let mut lab = Lab { history: std::mem::take(&mut c.history) };
                lab.file("b", &range(A, 1, 30), &[(B, 1, 35)]);
                c.history = lab.history;
                c.request.target = None;
            }),
            Token::ArchiveSplitBrain,
        ),
        (
            "copies differ",
            with(|c| {
                let mut lab = Lab { history: std::mem::take(&mut c.history) };
                lab.file("b", &range(A, 1, 19), &[(A, 20, 21)]);
                c.history = lab.history;
            }),
            Token::ArchiveNamespaceReuse,
        ),
        (
            "unreadable active row on the history",
            with(|c| {
                let mut lab = Lab { history: std::mem::take(&mut c.history) };
                let f = lab.file("c", &range(A, 1, 30), &seq(A, 31, 35, 31, 1));
                lab.history.files[f].bytes = RowBytes::Unreadable("digest mismatch".into());
                c.history = lab.history;
            }),
            Token::ArchiveObjectInvalid,
        ),
        (
            "opposite orders",
            with(|c| {
                let mut lab = Lab { history: std::mem::take(&mut c.history) };
                lab.file("b", &range(A, 1, 19), &[(A, 21, 21), (A, 20, 20)]);
                c.history = lab.history;
            }),
            Token::ArchiveOrderInversion,
        ),
        (
            "needed row never archived",
            with(|c| {
                c.history.files.truncate(1);
                let mut lab = Lab { history: std::mem::take(&mut c.history) };
                lab.file("a", &range(A, 1, 35), &seq(A, 36, 60, 36, 1));
                c.history = lab.history;
            }),
            Token::ArchiveGap,
        ),
        (
            "archive-gap fixture",
            fixture_case(Scenario::ArchiveGap, "b-early", (B, 5)),
            Token::ArchiveGap,
        ),
        (
            "all archived, no row continues",
            with(|c| {
                let mut lab = Lab { history: std::mem::take(&mut c.history) };
                lab.history.files.truncate(1);
                lab.file("a", &range(A, 1, 31), &seq(A, 32, 60, 32, 1));
                lab.file("c", &range(A, 1, 29), &[(A, 31, 31)]);
                c.history = lab.history;
            }),
            Token::ArchiveOrderConflict,
        ),
        (
            "marker fixture: the search needs the marked site",
            fixture_case(Scenario::HistoryIntegrityMarker, "b-early", (B, 5)),
            Token::ArchiveUnsafeHistory,
        ),
        ("staging limit", with(|c| c.limits.staging_bytes = 1), Token::PlanTooLarge),
        ("memory budget", with(|c| c.limits.memory_bytes = 100), Token::PlanTooLarge),
        (
            "XA in the replay",
            with(|c| {
                if let RowBytes::Read(txns) = &mut c.history.files[1].bytes {
                    txns[4].xa = true;
                }
            }),
            Token::ReplayUnsupported,
        ),
        (
            "latest with nothing beyond the backup",
            with(|c| {
                c.backup = BackupMeta::complete(range(A, 1, 60), t(60), "group", "ar1-lab");
                c.request.target = None;
            }),
            Token::NoArchivedReplay,
        ),
    ]
}

#[test]
fn every_refusal_token_is_reached() {
    let mut reached = BTreeSet::new();
    let mut failures = Vec::new();
    for (name, case, token) in cases() {
        match case.run() {
            Err(refusal) if refusal.token == token => {
                assert!(!refusal.message.is_empty(), "{name}: empty message");
                reached.insert(token);
            }
            other => failures.push(format!("{name}: expected {token}, got {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let missing: Vec<Token> = Token::ALL.into_iter().filter(|t| !reached.contains(t)).collect();
    assert!(missing.is_empty(), "tokens no case reaches: {missing:?}");
}

#[test]
fn the_simple_lab_plans_when_nothing_is_wrong() {
    let plan = Case::new(simple()).run().unwrap();
    assert_eq!(plan.outcome, Outcome::TargetCovered);
    assert_eq!(plan.certified, range(A, 1, 39));
    assert_eq!(plan.segments.len(), 2);
    assert_eq!(plan.segments[0].gtids, range(A, 11, 30));
}

#[test]
fn allow_partial_replays_to_the_head() {
    let case = with(|c| {
        c.request.target = Some(text(t(100)));
        c.request.allow_partial = true;
    });
    let plan = case.run().unwrap();
    assert_eq!(plan.outcome, Outcome::Partial);
    assert_eq!(plan.certified, range(A, 1, 60));
}

#[test]
fn an_earlier_step_wins_over_a_later_one() {
    // The backup is after the target (step 5) and the archive diverges (step 7): step 5 wins.
    let case = with(|c| {
        let mut lab = Lab { history: std::mem::take(&mut c.history) };
        lab.file("b", &range(A, 1, 30), &[(B, 1, 35)]);
        c.history = lab.history;
        c.request.target = Some(text(t(5)));
    });
    assert_eq!(case.run().unwrap_err().token, Token::BackupAfterTarget);
}

#[test]
fn divergent_message_prints_at_most_one_kib_of_d_and_keeps_the_full_set() {
    let mut lab = simple();
    // 400 single GTIDs of b, every other one, committed inside the window.
    let txns: Vec<_> = (1..=400u64).map(|n| (B, n * 2, 35)).collect();
    lab.file("b", &range(A, 1, 30), &txns);
    let case = Case::new(lab);
    let refusal = case.run().unwrap_err();
    assert_eq!(refusal.token, Token::ArchiveDivergentHistory);
    let full = refusal.full_set.clone().unwrap();
    assert!(full.len() > 1024);
    assert!(!refusal.message.contains(&full));
    assert!(refusal.message.contains("(400 transactions in all)"), "{}", refusal.message);
}

#[test]
fn coverage_json_is_version_2_for_plans_and_refusals() {
    let case = Case::new(simple());
    let result = case.run();
    let doc = bloodraven_pitr::coverage_json("ar1-lab", &case.request, &result);
    let value = serde_json::to_value(&doc).unwrap();
    assert_eq!(value["version"], 2);
    assert_eq!(value["outcome"], "TargetCovered");
    assert_eq!(value["certified"], range(A, 1, 39).to_compact_string());
    let refused = with(|c| c.request.target = Some(text(t(100))));
    let doc = bloodraven_pitr::coverage_json("ar1-lab", &refused.request, &refused.run());
    let value = serde_json::to_value(&doc).unwrap();
    assert_eq!(value["refusal"], "PITRTargetNotCovered");
}

#[test]
fn a_read_row_whose_hint_disagrees_with_its_bytes_is_object_invalid() {
    let case = with(|c| c.history.files[1].bytes = RowBytes::Read(Vec::new()));
    assert_eq!(case.run().unwrap_err().token, Token::ArchiveObjectInvalid);
}

#[test]
fn quarantined_rows_are_evidence_for_d_but_never_the_witness() {
    let mut lab = simple();
    let f = lab.file("b", &range(A, 1, 30), &[(B, 1, 35)]);
    lab.history.files[f].quarantined = true;
    let case = Case::new(lab);
    let refusal = case.run().unwrap_err();
    assert_eq!(refusal.token, Token::ArchiveDivergentHistory, "{refusal}");

    let mut lab = simple();
    let f = lab.file("b", &range(A, 1, 60), &[(A, 61, 100)]);
    lab.history.files[f].quarantined = true;
    let mut case = Case::new(lab);
    case.request.target = Some(text(t(100)));
    assert_eq!(case.run().unwrap_err().token, Token::TargetNotCovered);
}

#[test]
fn a_marked_site_holding_an_earlier_candidate_refuses_at_the_witness_step() {
    // a's second row starts at t51; marked c committed C:1 at t45, between T (t40) and it.
    let mut lab = Lab::new();
    lab.promotion("a", A, &GtidSet::new(), 0);
    lab.file("a", &GtidSet::new(), &seq(A, 1, 30, 1, 1));
    lab.file("a", &range(A, 1, 30), &seq(A, 31, 60, 51, 1));
    lab.file("c", &range(A, 1, 30), &[(bloodraven_archive::fixtures::UUID_C, 1, 45)]);
    lab.history.marked.insert("c".into());
    let refusal = Case::new(lab).run().unwrap_err();
    assert_eq!(refusal.token, Token::ArchiveUnsafeHistory, "{refusal}");
    assert!(refusal.message.contains("before the unmarked candidate"), "{}", refusal.message);
}

#[test]
fn backup_transactions_no_longer_archived_need_the_server_clock_check() {
    let case = with(|c| {
        c.backup.gtid_executed = Some(range(A, 1, 10).union(&range(B, 1, 3)));
        c.request.target = Some(text(t(11)));
        if let Some(stamp) = c.backup.stamp.as_mut() {
            stamp.server_clock_end = Some(t(20));
        }
    });
    let refusal = case.run().unwrap_err();
    assert_eq!(refusal.token, Token::BackupAfterTarget);
    assert!(refusal.message.contains("no longer archived"), "{}", refusal.message);
    assert!(refusal.message.contains("use a target at or after 2026-11-05T09:30:21.000000Z"));
    // At serverClock.end + 1 s the frontier accepts it (B is then off Λ: step 7).
    let later = with(|c| {
        c.backup.gtid_executed = Some(range(A, 1, 10).union(&range(B, 1, 3)));
        c.request.target = Some(text(t(21)));
        if let Some(stamp) = c.backup.stamp.as_mut() {
            stamp.server_clock_end = Some(t(20));
        }
    });
    assert_eq!(later.run().unwrap_err().token, Token::BackupNotOnLineage);
}

#[test]
fn an_on_history_exclusion_is_skipped_and_reported() {
    let case = with(|c| c.request.exclude_gtids = format!("{A}:35"));
    let plan = case.run().unwrap();
    assert_eq!(plan.certified, range(A, 1, 39).difference(&range(A, 35, 35)));
    assert_eq!(plan.on_history_excluded, range(A, 35, 35));
    assert!(plan.excluded_divergent.is_empty());
    assert!(plan.segments.iter().all(|s| !s.gtids.contains(&bloodraven_gtid::Gtid::new(A, 35))));
}
