//! One truth: the restorable window the console shows is the planner's answer. For generated
//! archives and the archive crate's fixtures, every whole-second target inside a piece of
//! `timeline` gets that piece's answer from `plan`: it plans inside the window, and outside it
//! is refused with the token the piece names.

use bloodraven_archive::fixtures::{Fixture, Scenario};
use bloodraven_gtid::{Gtid, GtidSet};
use bloodraven_pitr::{Answer, BackupMeta, History, Limits, Token, Txn, answer, timeline};
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;

use crate::helpers::*;

/// Checks every second from 20 s before the first candidate to 20 s after the last.
fn check_every_second(history: &History, backup: &BackupMeta, exclude: &str) {
    let timeline = timeline(history, None, backup, exclude, Limits::default());
    let candidates = bloodraven_pitr::candidates(history, backup);
    let first = candidates[0].as_second() - 20;
    let last = candidates[candidates.len() - 1].as_second() + 20;
    for second in first..=last {
        let at = Timestamp::from_second(second).unwrap();
        let planned = answer(history, None, backup, exclude, Limits::default(), at);
        let shown = timeline.answer_at(at);
        match (shown, &planned) {
            (Answer::Plans, Answer::Plans) => {}
            (Answer::Refused { token: a, .. }, Answer::Refused { token: b, .. }) if a == b => {}
            _ => panic!(
                "target {at} (exclude {exclude:?}): the window shows {shown:?}, the planner says {planned:?}"
            ),
        }
    }
    // The window's stop is the planner's refusal of the second after its end.
    if let Ok(window) = timeline.window() {
        let planned = answer(history, None, backup, exclude, Limits::default(), window.start);
        assert_eq!(planned, Answer::Plans, "the window's start plans");
        if let (Some(end), Some((token, _))) = (window.end, &window.stop) {
            let after = end.checked_add(SignedDuration::from_secs(1)).unwrap();
            let planned = answer(history, None, backup, exclude, Limits::default(), after);
            assert!(
                matches!(&planned, Answer::Refused { token: t, .. } if t == token),
                "after {end}: {planned:?}, the window says {token}"
            );
        }
    }
}

#[test]
fn fixture_windows_are_the_planners_answers() {
    for scenario in [
        Scenario::HealthyPlannedFailover,
        Scenario::ArchiveGap,
        Scenario::LossyFailoverFork,
        Scenario::HistoryIntegrityMarker,
    ] {
        let fixture = Fixture::build(scenario);
        let history = history(&fixture);
        for name in fixture.backups.keys() {
            let backup = meta(&fixture, name, &history);
            check_every_second(&history, &backup, "");
        }
    }
    // The lossy failover's window with D excluded reaches past b's writes.
    let fixture = Fixture::build(Scenario::LossyFailoverFork);
    let history = history(&fixture);
    let backup = meta(&fixture, "b-before-failover", &history);
    let d = range(A, 96, 100).to_compact_string();
    check_every_second(&history, &backup, &d);
    let plain = timeline(&history, None, &backup, "", Limits::default()).window().unwrap();
    assert_eq!(plain.stop.as_ref().map(|stop| stop.0), Some(Token::ArchiveDivergentHistory));
    let excluded = timeline(&history, None, &backup, &d, Limits::default()).window().unwrap();
    assert!(excluded.end > plain.end, "{excluded:?} vs {plain:?}");
}

/// A row of `site` holding `txns` (GTID, commit time in ms from the base).
fn row(history: &mut History, site: &str, prev: &GtidSet, txns: &[(Gtid, i64)]) {
    let txns: Vec<Txn> = txns
        .iter()
        .map(|&(gtid, ms)| txn_at(gtid, t(0).checked_add(SignedDuration::from_millis(ms)).unwrap()))
        .collect();
    push_read_row(history, site, prev, txns);
}

fn ms(at: i64) -> Timestamp {
    t(0).checked_add(SignedDuration::from_millis(at)).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// a writes A:1..n at random (often sub-second, sometimes equal) intervals into random
    /// rows, b copies them; optionally b is promoted having applied only A:1..k (a lossy
    /// failover) and writes B:1..m; a backup of A:1..j; excludeGtids empty or the lost tail.
    #[test]
    fn every_target_gets_the_windows_answer(
        steps in proptest::collection::vec(0i64..4000, 4..30),
        cuts in proptest::collection::btree_set(1usize..30, 0..5),
        copy in any::<bool>(),
        lossy in proptest::option::of((0.5f64..1.0, 0i64..12_000, proptest::collection::vec(1i64..3000, 1..10))),
        backup_at in 0.0f64..0.6,
        dump_extra in 0i64..3000,
        exclude_lost in any::<bool>(),
    ) {
        let mut history = History { archive_id: "ar1-lab".into(), ..History::default() };
        let mut times = Vec::new();
        let mut now = 0i64;
        for step in &steps {
            now += step;
            times.push(now);
        }
        let n = times.len() as u64;
        let a: Vec<(Gtid, i64)> = (1..=n).map(|g| (Gtid::new(A, g), times[g as usize - 1])).collect();
        lab_promotion(&mut history, "a", A, &GtidSet::new(), -1000);
        let mut bounds = vec![0usize];
        bounds.extend(cuts.iter().copied().filter(|&c| c < a.len()));
        bounds.push(a.len());
        bounds.dedup();
        let k = lossy.as_ref().map_or(n, |(share, _, _)| ((n as f64 * share) as u64).max(1));
        for w in bounds.windows(2) {
            let prev = if w[0] > 0 { range(A, 1, w[0] as u64) } else { GtidSet::new() };
            row(&mut history, "a", &prev, &a[w[0]..w[1]]);
            if copy && lossy.is_none() {
                row(&mut history, "b", &prev, &a[w[0]..w[1]]);
            }
        }
        let mut exclude = String::new();
        if let Some((_, gap, writes)) = &lossy {
            // b applied A:1..k, is promoted `gap` ms after a's last write, and writes.
            let promoted = times[n as usize - 1] + gap;
            let applied = range(A, 1, k);
            row(&mut history, "b", &GtidSet::new(), &a[..k as usize]);
            lab_promotion(&mut history, "b", B, &applied, promoted);
            let mut at = promoted;
            let b: Vec<(Gtid, i64)> = writes.iter().enumerate().map(|(i, step)| {
                at += step;
                (Gtid::new(B, i as u64 + 1), at)
            }).collect();
            row(&mut history, "b", &applied, &b);
            if exclude_lost && k < n {
                exclude = range(A, k + 1, n).to_compact_string();
            }
        }
        let j = ((n as f64 * backup_at) as u64).max(1);
        let dump_end = ms(times[j as usize - 1] + dump_extra);
        let dump_end = Timestamp::from_second(dump_end.as_second()).unwrap();
        let backup = BackupMeta::complete(range(A, 1, j), dump_end, "group", &history.archive_id);
        check_every_second(&history, &backup, &exclude);
    }
}

fn lab_promotion(
    history: &mut History,
    site: &str,
    server: bloodraven_gtid::Uuid,
    executed: &GtidSet,
    at_ms: i64,
) {
    let n = history.records.iter().filter(|r| r.site == site).count();
    history.records.push(bloodraven_pitr::Record {
        site: site.into(),
        label: format!("{site}#{n}"),
        promotion: true,
        server_uuid: server,
        gtid_executed: executed.clone(),
        observed_at: ms(at_ms),
        probe_interval: Some(SignedDuration::from_secs(5)),
    });
}
