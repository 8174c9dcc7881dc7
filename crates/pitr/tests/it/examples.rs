//! The document's worked examples (000 lines 853–862) with its own numbers.

use bloodraven_archive::fixtures::{Fixture, Scenario};
use bloodraven_pitr::{Outcome, Token};

use crate::helpers::*;

fn lossy() -> (Fixture, bloodraven_pitr::History) {
    let fixture = Fixture::build(Scenario::LossyFailoverFork);
    let history = history(&fixture);
    (fixture, history)
}

#[test]
fn lossy_failover_backup_before_target_before_the_lost_tail_is_covered_on_a() {
    let (f, h) = lossy();
    let backup = meta(&f, "b-before-failover", &h);
    let plan = run(&h, &backup, &request(Some(at(&f, A, 80)), "")).unwrap();
    assert_eq!(plan.outcome, Outcome::TargetCovered);
    assert_eq!(plan.witness.as_ref().unwrap().gtid, format!("{A}:80"));
    assert_eq!(plan.certified, range(A, 1, 79));
}

#[test]
fn lossy_failover_backup_before_target_inside_the_lost_tail_is_a_state_at_t() {
    let (f, h) = lossy();
    let backup = meta(&f, "b-before-failover", &h);
    let plan = run(&h, &backup, &request(Some(at(&f, A, 98)), "")).unwrap();
    assert_eq!(plan.witness.as_ref().unwrap().site, "a");
    // a's state at T, including transactions later lost (A:96-97).
    assert_eq!(plan.certified, range(A, 1, 97));
}

#[test]
fn lossy_failover_backup_before_target_after_b_wrote_refuses_with_d_the_lost_tail() {
    let (f, h) = lossy();
    let backup = meta(&f, "b-before-failover", &h);
    let target = at(&f, B, 10);
    let refusal = run(&h, &backup, &request(Some(target), "")).unwrap_err();
    assert_eq!(refusal.token, Token::ArchiveDivergentHistory, "{refusal}");
    let d = range(A, 96, 100);
    assert_eq!(refusal.full_set.as_deref(), Some(d.to_compact_string().as_str()));
    let expected = format!(
        "5 archived transactions committed between the backup's newest transaction ({}) and {} are not in the history of {B}:10 (site b, committed {}): {} (sites a, {}…{}). They were lost at a failover, written on a replica (errant), or belong to another branch. To restore {B}:10's history, add them to excludeGtids, or choose a target at or before {}, or use a backup taken after {}.",
        bloodraven_archive::format_timestamp(at(&f, A, 50)),
        bloodraven_archive::format_timestamp(target),
        bloodraven_archive::format_timestamp(target),
        d.to_compact_string(),
        bloodraven_archive::format_timestamp(at(&f, A, 96)),
        bloodraven_archive::format_timestamp(at(&f, A, 100)),
        bloodraven_archive::format_timestamp(at(&f, A, 96)),
        bloodraven_archive::format_timestamp(at(&f, A, 100)),
    );
    assert_eq!(refusal.message, expected);

    // With excludeGtids: "A:96-100" the restore is b's history at T.
    let exclude = d.to_compact_string();
    let plan = run(&h, &backup, &request(Some(target), &exclude)).unwrap();
    assert_eq!(plan.certified, range(A, 1, 95).union(&range(B, 1, 9)));
    assert_eq!(plan.excluded_divergent, d);
    assert!(plan.on_history_excluded.is_empty());
}

#[test]
fn lossy_failover_backup_after_covers_the_same_targets_without_exclusion() {
    let (f, h) = lossy();
    let backup = meta(&f, "b-after-failover", &h);
    let plan = run(&h, &backup, &request(Some(at(&f, B, 30)), "")).unwrap();
    assert_eq!(plan.certified, range(A, 1, 95).union(&range(B, 1, 29)));
    // Ambiguity 25: a target inside the lost tail is before this dump.
    let refusal = run(&h, &backup, &request(Some(at(&f, A, 98)), "")).unwrap_err();
    assert_eq!(refusal.token, Token::BackupAfterTarget);
}

#[test]
fn latest_after_a_lossy_failover_is_a_loss_finding_then_bs_head() {
    let (f, h) = lossy();
    let backup = meta(&f, "b-before-failover", &h);
    let refusal = run(&h, &backup, &request(None, "")).unwrap_err();
    assert_eq!(refusal.token, Token::ArchiveDivergentHistory, "{refusal}");
    assert!(refusal.message.contains("they were lost at that failover"), "{}", refusal.message);
    assert_eq!(refusal.full_set, Some(range(A, 96, 100).to_compact_string()));
    let plan = run(&h, &backup, &request(None, &range(A, 96, 100).to_compact_string())).unwrap();
    assert_eq!(plan.outcome, Outcome::Latest);
    assert_eq!(plan.certified, range(A, 1, 95).union(&range(B, 1, 50)));
}

/// a archives A:1-5 and dies with A:6-10 unarchived; replica b applied A:1-5, wrote errant
/// Bu:1, applied A:6-10, was promoted and wrote Bu:2-5.
fn errant() -> Lab {
    let mut lab = Lab::new();
    lab.promotion("a", A, &bloodraven_gtid::GtidSet::new(), 0);
    lab.file("a", &bloodraven_gtid::GtidSet::new(), &seq(A, 1, 5, 10, 1));
    let mut b = seq(A, 1, 5, 10, 1);
    b.push((B, 1, 16));
    b.extend(seq(A, 6, 10, 20, 1));
    lab.promotion("b", B, &range(A, 1, 10).union(&range(B, 1, 1)), 40);
    b.extend(seq(B, 2, 5, 50, 1));
    lab.file("b", &bloodraven_gtid::GtidSet::new(), &b);
    lab
}

#[test]
fn errant_transaction_refuses_stop_ambiguous_and_exclusion_restores_as_history() {
    let lab = errant();
    let backup = lab.backup(&range(A, 1, 3), 12);
    let target = Some(t(22)); // A:8, archived only through b
    let refusal = run(&lab.history, &backup, &request(target, "")).unwrap_err();
    assert_eq!(refusal.token, Token::StopAmbiguous, "{refusal}");
    assert!(
        refusal.message.contains(&format!("predecessors include {B}:1")),
        "{}",
        refusal.message
    );
    assert!(refusal.message.contains("exclude it"));

    let plan = run(&lab.history, &backup, &request(target, &format!("{B}:1"))).unwrap();
    assert_eq!(plan.certified, range(A, 1, 7));
    // The fewest segments: b's row continues from the backup through A:7 in one run.
    assert_eq!(plan.segments.len(), 1, "{:?}", plan.segments);
    // An errant exclusion is not an on-history exclusion (000 line 874).
    assert!(plan.on_history_excluded.is_empty());
    assert_eq!(plan.excluded_divergent, range(B, 1, 1));
}

#[test]
fn errant_transaction_once_b_continued_from_it_needs_no_exclusion() {
    let lab = errant();
    let backup = lab.backup(&range(A, 1, 3), 12);
    let plan = run(&lab.history, &backup, &request(Some(t(52)) /* Bu:4 */, "")).unwrap();
    assert_eq!(plan.certified, range(A, 1, 10).union(&range(B, 1, 3)));
}

#[test]
fn errant_transaction_held_by_the_backup_cannot_be_excluded() {
    let lab = errant();
    let backup = lab.backup(&range(A, 1, 5).union(&range(B, 1, 1)), 17);
    let refusal = run(&lab.history, &backup, &request(Some(t(22)), &format!("{B}:1"))).unwrap_err();
    assert_eq!(refusal.token, Token::ExcludeIntersectsBackup);
}

/// Both sites wrote after a fork at A:100.
fn branch() -> Lab {
    let mut lab = Lab::new();
    lab.promotion("a", A, &bloodraven_gtid::GtidSet::new(), 0);
    lab.file("a", &bloodraven_gtid::GtidSet::new(), &seq(A, 1, 100, 1, 1));
    lab.promotion("b", B, &range(A, 1, 100), 110);
    lab.file("a", &range(A, 1, 100), &seq(A, 101, 120, 120, 2));
    lab.file("b", &range(A, 1, 100), &seq(B, 1, 20, 121, 2));
    lab
}

#[test]
fn branch_target_in_the_overlap_refuses_and_either_exclusion_keeps_the_other_branch() {
    let lab = branch();
    let backup = lab.backup(&range(A, 1, 50), 50);
    let target = Some(t(140));
    let refusal = run(&lab.history, &backup, &request(target, "")).unwrap_err();
    assert_eq!(refusal.token, Token::ArchiveDivergentHistory, "{refusal}");
    // Excluding a's post-fork GTIDs keeps b's branch …
    let plan =
        run(&lab.history, &backup, &request(target, &range(A, 101, 120).to_compact_string()))
            .unwrap();
    assert!(
        plan.certified.is_superset(&range(B, 1, 9))
            && plan.certified.is_disjoint(&range(A, 101, 120))
    );
    // … and b's post-fork GTIDs keeps a's.
    let plan =
        run(&lab.history, &backup, &request(target, &range(B, 1, 20).to_compact_string())).unwrap();
    assert_eq!(plan.certified, range(A, 1, 110));
}

#[test]
fn branch_latest_is_split_brain_listing_each_heads_exclusive_set() {
    let lab = branch();
    let backup = lab.backup(&range(A, 1, 50), 50);
    let refusal = run(&lab.history, &backup, &request(None, "")).unwrap_err();
    assert_eq!(refusal.token, Token::ArchiveSplitBrain, "{refusal}");
    assert!(refusal.message.contains(&range(A, 101, 120).to_compact_string()));
    assert!(refusal.message.contains(&range(B, 1, 20).to_compact_string()));
}
