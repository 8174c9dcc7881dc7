//! Coverage of every fixture scenario: the gaps, forks and windows the spec's examples imply.

use bloodraven_archive::coverage::{
    Coverage, EpisodeEnd, ForkCause, GapKind, NeededBy, WindowStop,
};
use bloodraven_archive::fixtures::{Fixture, Scenario, UUID_A, UUID_B, range};
use bloodraven_archive::manifest::{HistoryIntegrity, RecordKind, Violation};
use bloodraven_gtid::GtidSet;
use jiff::Timestamp;

use crate::open_fixture;

fn coverage(scenario: Scenario) -> (Fixture, Coverage) {
    let fixture = Fixture::build(scenario);
    let archive = open_fixture(&fixture).unwrap();
    let coverage = Coverage::of(&archive);
    (fixture, coverage)
}

fn set(text: &str) -> GtidSet {
    text.parse().unwrap()
}

fn a(start: u64, end: u64) -> GtidSet {
    range(UUID_A, start, end)
}

fn b(start: u64, end: u64) -> GtidSet {
    range(UUID_B, start, end)
}

fn t(fixture: &Fixture, uuid: bloodraven_gtid::Uuid, gno: u64) -> Timestamp {
    fixture.commit_time(uuid, gno).unwrap()
}

#[test]
fn healthy_planned_failover() {
    let (fixture, coverage) = coverage(Scenario::HealthyPlannedFailover);
    assert!(coverage.gaps.is_empty(), "{:?}", coverage.gaps);
    assert!(coverage.forks.is_empty(), "{:?}", coverage.forks);
    assert!(coverage.reissue_risks.is_empty());
    assert!(coverage.unsafe_sites.is_empty());
    assert_eq!(coverage.surviving_history, a(11, 30).union(&b(1, 20)).union(&a(1, 10)));
    // Three sites; c archived nothing.
    let sites: Vec<&str> = coverage.sites.iter().map(|s| s.site.as_str()).collect();
    assert_eq!(sites, ["a", "b", "c"]);
    assert_eq!(coverage.site("a").unwrap().files.len(), 2);
    assert_eq!(coverage.site("b").unwrap().files.len(), 2);
    assert!(coverage.site("c").unwrap().files.is_empty());
    assert!(coverage.files.iter().all(|f| f.complete && f.usable));
    // The planned failover: a's episode ends when b is promoted.
    assert_eq!(coverage.episodes.len(), 2);
    assert_eq!(coverage.episodes[0].ended_by, Some(EpisodeEnd::PromotionElsewhere("b#0".into())));
    assert_eq!(coverage.episodes[1].gtid_executed, a(1, 30));
    assert_eq!(coverage.head_episode, Some(1));
    // Retention: a's oldest file (A:1-10) was retired and deleted.
    let retention = &coverage.site("a").unwrap().retention;
    assert_eq!((retention.retired, retention.pending_deletes), (1, 0));
    assert_eq!(retention.retired_gtids, a(1, 10));
    assert_eq!(retention.horizon, Some(t(&fixture, UUID_A, 11)));
    assert_eq!(coverage.retention_horizon, retention.horizon);
    // A backup on replica c in the middle of a's era reaches b's newest commit across the
    // failover.
    let backup = &fixture.backups["replica-c-before-failover"];
    assert_eq!(backup.gtid_executed, a(1, 20));
    let window = coverage.window(backup, &GtidSet::new());
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.stop.token(), "PITRTargetNotCovered");
    assert_eq!(window.end, Some(t(&fixture, UUID_B, 20)));
    assert_eq!(window.backup_newest, Some(t(&fixture, UUID_A, 20)));
    assert_eq!(window.reached, a(1, 30).union(&b(1, 20)));
    // Backup taken on b after the failover: its window starts at the dump end.
    let backup = &fixture.backups["b-after-failover"];
    let window = coverage.window(backup, &GtidSet::new());
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.end, Some(t(&fixture, UUID_B, 20)));
    assert!(window.start > t(&fixture, UUID_B, 10));
}

#[test]
fn archive_gap() {
    let (fixture, coverage) = coverage(Scenario::ArchiveGap);
    assert_eq!(coverage.gaps.len(), 1, "{:?}", coverage.gaps);
    let gap = &coverage.gaps[0];
    assert_eq!(gap.gtids, a(41, 60));
    assert_eq!(gap.kind, GapKind::NeverArchived);
    assert_eq!(gap.site, "b");
    assert!(matches!(gap.needed_by, NeededBy::Record(1)));
    assert!(coverage.forks.is_empty());
    // b's first row is a clone bridge row.
    let bridge = coverage.files.iter().find(|f| f.site == "b" && f.base_gtids.is_some()).unwrap();
    assert_eq!(bridge.base_gtids.as_ref(), Some(&a(1, 60)));
    // A backup from before the gap stops at the last archived commit before it.
    let window = coverage.window(&fixture.backups["b-early"], &GtidSet::new());
    match &window.stop {
        WindowStop::Gap { missing, kind, .. } => {
            assert_eq!(*missing, a(41, 60));
            assert_eq!(*kind, GapKind::NeverArchived);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(window.stop.token(), "PITRArchiveGap");
    assert_eq!(window.end, Some(t(&fixture, UUID_A, 40)));
    assert_eq!(window.reached, a(1, 40));
    // Excluding the gap lets the window continue: predecessor sets are compared minus X.
    let window = coverage.window(&fixture.backups["b-early"], &a(41, 60));
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    // A backup taken after the gap restores to the head.
    let window = coverage.window(&fixture.backups["b-after-gap"], &GtidSet::new());
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.end, Some(t(&fixture, UUID_B, 20)));
}

#[test]
fn lossy_failover_fork() {
    let (fixture, coverage) = coverage(Scenario::LossyFailoverFork);
    // a archived A:96-100, then died; b was promoted at A:1-95 and wrote Bu:1-50.
    assert_eq!(coverage.surviving_history, a(1, 95).union(&b(1, 50)));
    assert_eq!(coverage.forks.len(), 1, "{:?}", coverage.forks);
    let fork = &coverage.forks[0];
    assert_eq!(fork.site, "a");
    assert_eq!(fork.gtids, a(96, 100));
    assert_eq!(fork.cause, ForkCause::LostAtFailover("b#0".into()));
    assert_eq!(fork.start, Some(t(&fixture, UUID_A, 96)));
    assert_eq!(fork.end, Some(t(&fixture, UUID_A, 100)));
    assert!(coverage.gaps.is_empty(), "{:?}", coverage.gaps);
    // a was recloned from b: its reset record lacks A:96-100, which A may reissue.
    assert_eq!(coverage.reissue_risks.len(), 1);
    assert_eq!(coverage.reissue_risks[0].lost, a(96, 100));
    assert_eq!(coverage.episodes[coverage.reissue_risks[0].episode].kind, RecordKind::Reset);

    // Backup taken before the failover (on b at A:1-50).
    let before = &fixture.backups["b-before-failover"];
    assert_eq!(before.gtid_executed, a(1, 50));
    let window = coverage.window(before, &GtidSet::new());
    // Targets before A:96 and inside the lost tail are covered (a's history); after b started
    // writing: PITRArchiveDivergentHistory with D = A:96-100.
    assert_eq!(window.end, Some(t(&fixture, UUID_A, 100)));
    match &window.stop {
        WindowStop::DivergentHistory { ours, theirs, .. } => {
            assert_eq!(*ours, a(96, 100));
            assert_eq!(*theirs, b(1, 25));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(window.stop.token(), "PITRArchiveDivergentHistory");
    assert!(window.stop_at.unwrap() > t(&fixture, UUID_A, 100));
    assert!(window.stop_at.unwrap() <= t(&fixture, UUID_B, 1));
    // With excludeGtids A:96-100 the restore is b's history up to its newest commit.
    let window = coverage.window(before, &a(96, 100));
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.end, Some(t(&fixture, UUID_B, 50)));
    assert_eq!(window.reached, a(1, 100).union(&b(1, 50)));
    // Backup taken on b after the failover: A:96-100 are outside D, no exclusion needed.
    let after = &fixture.backups["b-after-failover"];
    let window = coverage.window(after, &GtidSet::new());
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.end, Some(t(&fixture, UUID_B, 50)));
    // A backup holding the lost tail is not on b's history.
    let dead = bloodraven_archive::BackupPoint {
        gtid_executed: a(1, 98),
        dump_end: t(&fixture, UUID_A, 98),
    };
    let window = coverage.window(&dead, &GtidSet::new());
    match &window.stop {
        WindowStop::BackupNotOnLineage { in_backup, .. } => assert_eq!(*in_backup, a(96, 98)),
        other => panic!("{other:?}"),
    }
    assert_eq!(window.end, Some(t(&fixture, UUID_A, 100)));
}

#[test]
fn history_integrity_marker() {
    let (fixture, coverage) = coverage(Scenario::HistoryIntegrityMarker);
    assert_eq!(coverage.unsafe_sites.len(), 1);
    let marked = &coverage.unsafe_sites[0];
    assert_eq!(marked.site, "a");
    assert_eq!(marked.marker.violation, Violation::BinlogFormat);
    // The marker removes every target that needs a's bytes, including those before it.
    assert_eq!(marked.removed, a(1, 20));
    assert!(coverage.files.iter().filter(|f| f.site == "a").all(|f| !f.usable));
    let kinds: Vec<(GapKind, GtidSet)> =
        coverage.gaps.iter().map(|g| (g.kind, g.gtids.clone())).collect();
    assert_eq!(kinds, [(GapKind::NeverArchived, a(21, 30)), (GapKind::UnsafeHistory, a(1, 20))]);
    // A backup before the marker cannot use a's rows.
    let window = coverage.window(&fixture.backups["b-early"], &GtidSet::new());
    assert!(matches!(window.stop, WindowStop::UnsafeHistory { .. }), "{:?}", window.stop);
    assert_eq!(window.stop.token(), "PITRArchiveUnsafeHistory");
    assert_eq!(window.end, None);
    // A backup taken on b after the failover needs nothing from a.
    let window = coverage.window(&fixture.backups["b-after-failover"], &GtidSet::new());
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.end, Some(t(&fixture, UUID_B, 20)));
}

#[test]
fn encrypted_archive() {
    let (fixture, coverage) = coverage(Scenario::Encrypted);
    assert!(coverage.gaps.is_empty() && coverage.forks.is_empty());
    let window = coverage.window(&fixture.backups["a-early"], &GtidSet::new());
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.end, Some(t(&fixture, UUID_A, 20)));
    assert_eq!(
        window.start,
        Timestamp::from_second(t(&fixture, UUID_A, 10).as_second() + 1).unwrap()
    );
}

#[test]
fn quarantined_and_divergent_rows() {
    let fixture = Fixture::build(Scenario::LossyFailoverFork);
    let mut manifests = fixture.manifests.clone();
    let a_manifest = manifests.get_mut("a").unwrap();
    let last = a_manifest.files.last_mut().unwrap();
    last.quarantined = true;
    last.divergent = true;
    let middle = &mut a_manifest.files[1];
    middle.quarantined = true;
    let coverage = Coverage::from_manifests(manifests.values());
    assert_eq!(coverage.flagged.len(), 2);
    assert_eq!(coverage.site("a").unwrap().quarantined_rows, 2);
    assert_eq!(coverage.site("a").unwrap().divergent_rows, 1);
    // A:51-95 are now only in a quarantined row (and partly in b's row: A:91-95).
    let quarantined: Vec<&GtidSet> =
        coverage.gaps.iter().filter(|g| g.kind == GapKind::Quarantined).map(|g| &g.gtids).collect();
    assert_eq!(quarantined, [&a(51, 90)]);
    let window = coverage.window(&fixture.backups["b-before-failover"], &GtidSet::new());
    match &window.stop {
        WindowStop::Gap { missing, kind: GapKind::Quarantined, .. } => {
            assert_eq!(*missing, a(51, 90))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(window.end, None);
    // The quarantined lost tail is still a fork (evidence).
    assert_eq!(coverage.forks.len(), 1);
    assert_eq!(coverage.forks[0].gtids, set(&format!("{UUID_A}:96-100")));
}

#[test]
fn synthetic_archive_is_one_history() {
    let manifests = bloodraven_archive::fixtures::synthetic_manifests(1_000, 5, 50);
    let coverage = Coverage::from_manifests(manifests.iter());
    assert_eq!(coverage.files.len(), 1_000);
    assert_eq!(coverage.episodes.len(), 20);
    assert!(
        coverage.gaps.is_empty() && coverage.forks.is_empty() && coverage.reissue_risks.is_empty()
    );
    let first = &manifests[0].files[10];
    let backup = bloodraven_archive::BackupPoint {
        gtid_executed: first.previous_gtids.clone(),
        dump_end: manifests[0].files[9].last_event_time.unwrap(),
    };
    let window = coverage.window(&backup, &GtidSet::new());
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.files.len(), 990);
    assert_eq!(window.end, coverage.files.last().unwrap().end);
}

#[test]
fn a_marked_site_does_not_stop_a_window_that_an_unmarked_copy_serves() {
    // a's rows are also archived by replica c (a replica's binlog holds the replicated
    // transactions with their original commit times); then a sets its marker. The spec removes
    // only targets that need a's bytes: c's copies serve the same history.
    let fixture = Fixture::build(Scenario::HealthyPlannedFailover);
    let mut manifests = fixture.manifests.clone();
    let copies = manifests["a"].files.clone();
    manifests.get_mut("c").unwrap().files = copies;
    manifests.get_mut("a").unwrap().history_integrity = Some(HistoryIntegrity {
        violation: Violation::BinlogFormat,
        detail: "binlog_format=MIXED".into(),
        at: t(&fixture, UUID_B, 1),
        extra: Default::default(),
    });
    let coverage = Coverage::from_manifests(manifests.values());
    assert_eq!(coverage.unsafe_sites.len(), 1);
    assert!(coverage.unsafe_sites[0].removed.is_empty());
    let window = coverage.window(&fixture.backups["replica-c-before-failover"], &GtidSet::new());
    assert_eq!(window.stop, WindowStop::ArchiveHead, "{:?}", window.stop);
    assert_eq!(window.end, Some(t(&fixture, UUID_B, 20)));
    // Without the copies, the same backup stops at a's next row.
    manifests.get_mut("c").unwrap().files.clear();
    let coverage = Coverage::from_manifests(manifests.values());
    let window = coverage.window(&fixture.backups["replica-c-before-failover"], &GtidSet::new());
    assert!(matches!(window.stop, WindowStop::UnsafeHistory { .. }), "{:?}", window.stop);
}

#[test]
fn a_quarantined_lost_tail_still_needs_its_exclusion() {
    // The spec: D counts archived transactions of active *or quarantined* rows, and a
    // quarantine is not an acknowledgement. With a's lost tail A:96-100 quarantined, a backup
    // from before the failover cannot reach b's history without excluding it.
    let fixture = Fixture::build(Scenario::LossyFailoverFork);
    let mut manifests = fixture.manifests.clone();
    manifests.get_mut("a").unwrap().files.last_mut().unwrap().quarantined = true;
    let coverage = Coverage::from_manifests(manifests.values());
    let tail = coverage.files.iter().position(|f| f.quarantined).unwrap();
    let before = &fixture.backups["b-before-failover"];
    let window = coverage.window(before, &GtidSet::new());
    match &window.stop {
        WindowStop::DivergentHistory { theirs, file, .. } => {
            assert_eq!(*theirs, a(96, 100));
            assert_eq!(*file, tail);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(window.stop.token(), "PITRArchiveDivergentHistory");
    assert_eq!(window.stop_at, Some(t(&fixture, UUID_A, 96)));
    assert_eq!(window.end, Some(t(&fixture, UUID_A, 95)));
    // Excluding the tail follows b's history to its head.
    let window = coverage.window(before, &a(96, 100));
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.end, Some(t(&fixture, UUID_B, 50)));
    // A backup taken on b after the failover needs no exclusion.
    let window = coverage.window(&fixture.backups["b-after-failover"], &GtidSet::new());
    assert_eq!(window.stop, WindowStop::ArchiveHead);
    assert_eq!(window.end, Some(t(&fixture, UUID_B, 50)));
    // A quarantined row that ends after the head (its site kept writing: split brain) is seen
    // only after every row it overlaps was applied; it still caps the window.
    let tail = manifests.get_mut("a").unwrap().files.last_mut().unwrap();
    tail.last_event_time =
        Some(t(&fixture, UUID_B, 50).checked_add(jiff::SignedDuration::from_secs(60)).unwrap());
    let coverage = Coverage::from_manifests(manifests.values());
    let window = coverage.window(before, &GtidSet::new());
    assert!(
        matches!(&window.stop, WindowStop::DivergentHistory { theirs, .. } if *theirs == a(96, 100)),
        "{:?}",
        window.stop
    );
    // Capped just before the tail's first commit: later targets have it in D.
    let just_before = t(&fixture, UUID_A, 96).checked_sub(jiff::SignedDuration::from_micros(1));
    assert_eq!(window.end, Some(just_before.unwrap()));
}

#[test]
fn excluded_transactions_do_not_date_the_backup() {
    // The backup holds A:1-96; A:97-100 (the rest of a's last row) are excluded. The backup's
    // newest archived commit is A:96's (that row's start), not the row's end: an excluded
    // transaction is not the backup's, and a later date would hide divergent rows committed
    // in between (they would count as "before the backup").
    let fixture = Fixture::build(Scenario::LossyFailoverFork);
    let coverage = Coverage::from_manifests(fixture.manifests.values());
    let backup = bloodraven_archive::BackupPoint {
        gtid_executed: a(1, 96),
        dump_end: t(&fixture, UUID_A, 96),
    };
    let window = coverage.window(&backup, &a(97, 100));
    assert_eq!(window.backup_newest, Some(t(&fixture, UUID_A, 96)));
}
