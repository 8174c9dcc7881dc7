//! Unit tests of the interval merges on hand-picked edge cases; the model
//! tests in `tests/it/model.rs` cover them at random.

use crate::MAX_GNO;
use crate::intervals;
use crate::set::Interval;

fn list(pairs: &[(u64, u64)]) -> Vec<Interval> {
    pairs.iter().map(|&(start, end)| Interval { start, end }).collect()
}

#[test]
fn insert_merges_touching_and_overlapping() {
    let mut intervals = Vec::new();
    for (start, end) in [(10, 12), (1, 2), (5, 6), (3, 4), (13, 13), (20, 30), (8, 25)] {
        intervals::insert(&mut intervals, Interval { start, end });
    }
    assert_eq!(intervals, list(&[(1, 6), (8, 30)]));
    intervals::insert(&mut intervals, Interval { start: MAX_GNO, end: MAX_GNO });
    intervals::insert(&mut intervals, Interval { start: 7, end: 7 });
    assert_eq!(intervals, list(&[(1, 30), (MAX_GNO, MAX_GNO)]));
}

#[test]
fn remove_splits_and_trims() {
    let mut intervals = list(&[(1, 10), (20, 30)]);
    intervals::remove(&mut intervals, Interval { start: 5, end: 5 });
    assert_eq!(intervals, list(&[(1, 4), (6, 10), (20, 30)]));
    intervals::remove(&mut intervals, Interval { start: 3, end: 25 });
    assert_eq!(intervals, list(&[(1, 2), (26, 30)]));
    intervals::remove(&mut intervals, Interval { start: 1, end: MAX_GNO });
    assert!(intervals.is_empty());
}

#[test]
fn difference_keeps_a_cover_for_the_next_interval() {
    let a = list(&[(1, 3), (5, 7), (9, 11)]);
    let b = list(&[(2, 10)]);
    assert_eq!(intervals::difference(&a, &b), list(&[(1, 1), (11, 11)]));
    assert_eq!(intervals::intersection(&a, &b), list(&[(2, 3), (5, 7), (9, 10)]));
    assert!(!intervals::is_subset(&a, &b));
    assert!(intervals::is_subset(&list(&[(2, 3), (5, 7)]), &b));
    assert!(!intervals::is_disjoint(&a, &b));
    assert!(intervals::is_disjoint(&list(&[(1, 1), (11, 11)]), &b));
    assert_eq!(intervals::union(&a, &b), list(&[(1, 11)]));
}

#[test]
fn contains_checks_bounds() {
    let a = list(&[(2, 3), (MAX_GNO, MAX_GNO)]);
    assert!(!intervals::contains(&a, 1));
    assert!(intervals::contains(&a, 2) && intervals::contains(&a, 3));
    assert!(!intervals::contains(&a, 4));
    assert!(intervals::contains(&a, MAX_GNO));
    assert!(!intervals::contains(&a, u64::MAX));
}

#[test]
fn canonicalize_sorts_and_merges_any_order() {
    let mut intervals =
        list(&[(20, 25), (1, 3), (4, 4), (10, 12), (2, 8), (26, 26), (MAX_GNO, MAX_GNO)]);
    intervals::canonicalize(&mut intervals);
    assert_eq!(intervals, list(&[(1, 8), (10, 12), (20, 26), (MAX_GNO, MAX_GNO)]));
    let mut empty = Vec::new();
    intervals::canonicalize(&mut empty);
    assert!(empty.is_empty());
}

#[test]
fn interval_count_is_total_on_hand_built_intervals() {
    assert_eq!(Interval { start: 1, end: MAX_GNO }.count(), MAX_GNO);
    assert_eq!(Interval { start: 7, end: 7 }.count(), 1);
    // Public fields allow intervals no set ever holds: no overflow, no panic.
    assert_eq!(Interval { start: 0, end: u64::MAX }.count(), u64::MAX);
    assert_eq!(Interval { start: 5, end: 1 }.count(), 0);
    assert!(!Interval { start: 5, end: 1 }.contains(3));
}
