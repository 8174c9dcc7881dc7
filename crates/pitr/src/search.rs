//! Segment search (000 "Segments and continuity").
//!
//! From the backup's state S, a segment may start at a position of a readable active row whose
//! predecessor set minus X is exactly S, and runs over consecutive transactions of Λ − X. The
//! predecessor set of position i of row F is prev(F) ∪ txns[..i], and prev(F) and the row's
//! transactions are disjoint, so the position is determined by counts: with
//! `base = |prev(F) − X|` and `n = |S|`, the only candidate is the (n − base)-th non-excluded
//! transaction. Rows are swept by `base` as n grows (n log n in the rows, linear in the
//! transactions). Among candidates the longest run wins (greedy furthest reach).

use bloodraven_gtid::GtidSet;

use crate::model::{History, RowBytes};

/// A planned segment: `txns[start..end]` of `history.files[file]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seg {
    pub file: usize,
    pub start: usize,
    pub end: usize,
}

/// What the search found.
#[derive(Debug, Clone, Default)]
pub(crate) struct SearchOutcome {
    pub segments: Vec<Seg>,
    /// Λ − X − reached: empty when the plan is complete.
    pub missing: GtidSet,
    /// A marked site whose row was the only continuation.
    pub unsafe_site: Option<String>,
}

struct Candidate {
    file: usize,
    prev: GtidSet,
    base: u128,
    /// Raw positions of the transactions not in X.
    kept: Vec<u32>,
    marked: bool,
}

pub(crate) fn search(
    history: &History,
    backup: &GtidSet,
    lambda: &GtidSet,
    exclude: &GtidSet,
) -> SearchOutcome {
    let goal = lambda.union(backup).difference(exclude);
    let mut rows: Vec<Candidate> = Vec::new();
    for (index, file) in history.files.iter().enumerate() {
        let RowBytes::Read(txns) = &file.bytes else { continue };
        if file.quarantined || txns.is_empty() {
            continue;
        }
        let prev = file.prev.difference(exclude);
        let kept: Vec<u32> = txns
            .iter()
            .enumerate()
            .filter(|(_, t)| t.gtid.is_some_and(|g| !exclude.contains(&g)))
            .map(|(pos, _)| pos as u32)
            .collect();
        if kept.is_empty() || !prev.is_subset(&goal) {
            continue;
        }
        rows.push(Candidate {
            file: index,
            base: prev.count(),
            prev,
            kept,
            marked: history.marked.contains(&file.site),
        });
    }
    rows.sort_by_key(|row| row.base);
    let mut state = backup.difference(exclude);
    let mut count = state.count();
    let target = goal.count();
    let mut next = 0;
    let mut active: Vec<usize> = Vec::new();
    let mut outcome = SearchOutcome::default();
    while count < target {
        while next < rows.len() && rows[next].base <= count {
            active.push(next);
            next += 1;
        }
        active.retain(|&r| rows[r].base + rows[r].kept.len() as u128 > count);
        let mut best: Option<(usize, usize, usize)> = None; // (row, i, j)
        let mut marked_candidate = None;
        for &r in &active {
            let row = &rows[r];
            let txns = history.files[row.file].txns();
            let i = (count - row.base) as usize;
            let gtid_at = |k: usize| txns[row.kept[k] as usize].gtid;
            let Some(first) = gtid_at(i) else { continue };
            if state.contains(&first) || !goal.contains(&first) || !row.prev.is_subset(&state) {
                continue;
            }
            if !(0..i).all(|k| gtid_at(k).is_some_and(|g| state.contains(&g))) {
                continue;
            }
            let mut j = i;
            while j < row.kept.len()
                && gtid_at(j).is_some_and(|g| goal.contains(&g) && !state.contains(&g))
            {
                j += 1;
            }
            if row.marked {
                marked_candidate.get_or_insert(row.file);
                continue;
            }
            if best.is_none_or(|(_, bi, bj)| j - i > bj - bi) {
                best = Some((r, i, j));
            }
        }
        let Some((r, i, j)) = best else {
            outcome.unsafe_site = marked_candidate.map(|f| history.files[f].site.clone());
            outcome.missing = goal.difference(&state);
            return outcome;
        };
        let row = &rows[r];
        let txns = history.files[row.file].txns();
        for k in i..j {
            if let Some(g) = txns[row.kept[k] as usize].gtid {
                let _ = state.insert(&g);
            }
        }
        count += (j - i) as u128;
        outcome.segments.push(Seg {
            file: row.file,
            start: row.kept[i] as usize,
            end: row.kept[j - 1] as usize + 1,
        });
    }
    outcome
}
