//! Linear merges of sorted, disjoint, non-adjacent closed intervals.
//!
//! Every slice handed to these functions is canonical: sorted by start, and
//! each interval ends at least two below the next one's start (touching
//! intervals are merged). Every output is canonical too. Ends are at most
//! [`crate::MAX_GNO`], so `end + 1` never overflows.

use crate::set::Interval;

/// Appends `interval` to a canonical list whose intervals all start at or before it.
#[inline]
fn push_merging(out: &mut Vec<Interval>, interval: Interval) {
    if let Some(last) = out.last_mut()
        && interval.start <= last.end + 1
    {
        if interval.end > last.end {
            last.end = interval.end;
        }
        return;
    }
    out.push(interval);
}

pub(crate) fn union(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].start <= b[j].start {
            push_merging(&mut out, a[i]);
            i += 1;
        } else {
            push_merging(&mut out, b[j]);
            j += 1;
        }
    }
    for &interval in &a[i..] {
        push_merging(&mut out, interval);
    }
    for &interval in &b[j..] {
        push_merging(&mut out, interval);
    }
    out
}

pub(crate) fn intersection(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let start = a[i].start.max(b[j].start);
        let end = a[i].end.min(b[j].end);
        if start <= end {
            out.push(Interval { start, end });
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// `a` minus `b`.
pub(crate) fn difference(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let mut out = Vec::with_capacity(a.len());
    let mut j = 0;
    for &interval in a {
        let mut start = interval.start;
        while j < b.len() && b[j].end < start {
            j += 1;
        }
        let mut covered_to_end = false;
        while j < b.len() && b[j].start <= interval.end {
            if b[j].start > start {
                out.push(Interval { start, end: b[j].start - 1 });
            }
            if b[j].end >= interval.end {
                // b[j] may also cover the next interval of `a`: keep it.
                covered_to_end = true;
                break;
            }
            start = b[j].end + 1;
            j += 1;
        }
        if !covered_to_end {
            out.push(Interval { start, end: interval.end });
        }
    }
    out
}

/// Whether every element of `a` is in `b`.
pub(crate) fn is_subset(a: &[Interval], b: &[Interval]) -> bool {
    let mut j = 0;
    for interval in a {
        while j < b.len() && b[j].end < interval.start {
            j += 1;
        }
        match b.get(j) {
            Some(cover) if cover.start <= interval.start && interval.end <= cover.end => {}
            _ => return false,
        }
    }
    true
}

pub(crate) fn is_disjoint(a: &[Interval], b: &[Interval]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].start.max(b[j].start) <= a[i].end.min(b[j].end) {
            return false;
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    true
}

/// Sorts and merges any list of valid intervals into canonical form, in O(n log n).
pub(crate) fn canonicalize(list: &mut Vec<Interval>) {
    list.sort_unstable_by_key(|interval| interval.start);
    let mut kept = 0;
    for index in 0..list.len() {
        let interval = list[index];
        if kept > 0 && interval.start <= list[kept - 1].end + 1 {
            if interval.end > list[kept - 1].end {
                list[kept - 1].end = interval.end;
            }
        } else {
            list[kept] = interval;
            kept += 1;
        }
    }
    list.truncate(kept);
}

/// Adds `interval` to a canonical list, keeping it canonical.
pub(crate) fn insert(list: &mut Vec<Interval>, interval: Interval) {
    // Fast paths: appending after the last interval, or extending it.
    match list.last_mut() {
        None => {
            list.push(interval);
            return;
        }
        Some(last) if interval.start > last.end + 1 => {
            list.push(interval);
            return;
        }
        Some(last) if interval.start >= last.start => {
            if interval.end > last.end {
                last.end = interval.end;
            }
            return;
        }
        Some(_) => {}
    }
    // First interval that touches or follows `interval`.
    let first = list.partition_point(|existing| existing.end + 1 < interval.start);
    // First interval strictly after `interval` (not touching).
    let after = list.partition_point(|existing| existing.start <= interval.end + 1);
    if first == after {
        list.insert(first, interval);
        return;
    }
    let merged = Interval {
        start: interval.start.min(list[first].start),
        end: interval.end.max(list[after - 1].end),
    };
    list[first] = merged;
    list.drain(first + 1..after);
}

/// Removes `interval` from a canonical list, keeping it canonical.
pub(crate) fn remove(list: &mut Vec<Interval>, interval: Interval) {
    let first = list.partition_point(|existing| existing.end < interval.start);
    let after = list.partition_point(|existing| existing.start <= interval.end);
    if first == after {
        return;
    }
    let head = list[first];
    let tail = list[after - 1];
    let mut replacement = [Interval { start: 0, end: 0 }; 2];
    let mut count = 0;
    if head.start < interval.start {
        replacement[count] = Interval { start: head.start, end: interval.start - 1 };
        count += 1;
    }
    if tail.end > interval.end {
        replacement[count] = Interval { start: interval.end + 1, end: tail.end };
        count += 1;
    }
    list.splice(first..after, replacement[..count].iter().copied());
}

/// Whether `gno` is in the canonical list.
pub(crate) fn contains(list: &[Interval], gno: u64) -> bool {
    let index = list.partition_point(|existing| existing.end < gno);
    list.get(index).is_some_and(|interval| interval.start <= gno)
}
