//! Latest mode and partial outcomes: the unique head, split brain, losses at promotion records.

use bloodraven_gtid::GtidSet;
use jiff::Timestamp;

use crate::model::RowBytes;
use crate::plan::{Ctx, DELTA, predecessors, shorten};
use crate::refusal::{Refusal, Token};

impl Ctx<'_> {
    /// Latest mode: the unique head (ignoring X), split brain, losses at promotion records.
    pub(crate) fn latest_head(&mut self) -> Result<(), Refusal> {
        let mut states: Vec<(usize, GtidSet)> = Vec::new();
        let mut marked_states = false;
        for (index, file) in self.history().files.iter().enumerate() {
            if file.quarantined || !matches!(file.bytes, RowBytes::Read(_)) {
                continue;
            }
            if self.history().marked.contains(&file.site) {
                marked_states = true;
                continue;
            }
            states.push((index, predecessors(file, file.txns().len())));
        }
        // Maximal states.
        states.sort_by_key(|(_, state)| std::cmp::Reverse(state.count()));
        let mut heads: Vec<(usize, GtidSet)> = Vec::new();
        for (index, state) in states {
            if heads.iter().any(|(_, head)| state.is_subset(head)) {
                continue;
            }
            heads.push((index, state));
        }
        if heads.is_empty() {
            if marked_states {
                return Err(Refusal::new(
                    Token::ArchiveUnsafeHistory,
                    "no unmarked site archived a head, and a site with a history-integrity marker may hold one; its bytes cannot be used",
                ));
            }
            self.lambda = self.backup.clone();
            return Ok(());
        }
        // A head whose exclusive transactions were all lost at a promotion record is a lost
        // tail, not a rival head (ambiguity 26).
        let lost = self.lost_at_records(&heads);
        let rivals: Vec<&(usize, GtidSet)> = heads
            .iter()
            .filter(|(_, head)| {
                let others = heads
                    .iter()
                    .filter(|(_, other)| !std::ptr::eq(other, head))
                    .fold(GtidSet::new(), |acc, (_, other)| acc.union(other));
                !head.difference(&others).is_subset(&lost.union(&self.exclude))
            })
            .collect();
        if rivals.len() != 1 {
            let listing: Vec<String> = heads
                .iter()
                .map(|(index, head)| {
                    let others = heads
                        .iter()
                        .filter(|(other, _)| other != index)
                        .fold(GtidSet::new(), |acc, (_, other)| acc.union(other));
                    format!(
                        "{} ({}) holds {}",
                        self.history().files[*index].key,
                        self.history().files[*index].site,
                        shorten(&head.difference(&others))
                    )
                })
                .collect();
            return Err(Refusal::new(
                Token::ArchiveSplitBrain,
                format!(
                    "the archive has {} heads, each holding transactions the others lack: {}; exclude one side's transactions with excludeGtids",
                    heads.len(),
                    listing.join("; ")
                ),
            ));
        }
        self.lambda = rivals[0].1.clone();
        self.divergent = lost;
        Ok(())
    }

    /// Transactions of any head lost at a promotion record (000 line 912) plus audit rows.
    pub(crate) fn lost_at_records(&self, heads: &[(usize, GtidSet)]) -> GtidSet {
        let all = heads.iter().fold(GtidSet::new(), |acc, (_, head)| acc.union(head));
        let files = &self.history().files;
        let oldest: Vec<Option<Timestamp>> =
            files.iter().map(|file| file.txns().iter().filter_map(|t| t.commit).min()).collect();
        let mut lost = GtidSet::new();
        for record in self.history().records.iter().filter(|r| r.promotion) {
            let Ok(edge) = record.observed_at.checked_sub(DELTA) else { continue };
            // Transactions of a head the record does not hold, not excluded.
            let candidates = all.difference(&record.gtid_executed).difference(&self.exclude);
            if candidates.is_empty() {
                continue;
            }
            for (index, file) in files.iter().enumerate() {
                // R's own site's rows are its later history.
                if file.site == record.site
                    || oldest[index].is_none_or(|t| t >= edge)
                    || file.hint.is_disjoint(&candidates)
                {
                    continue;
                }
                for txn in file.txns() {
                    if let (Some(gtid), Some(at)) = (txn.gtid, txn.commit)
                        && at < edge
                        && candidates.contains(&gtid)
                    {
                        let _ = lost.insert(&gtid);
                    }
                }
            }
        }
        // The divergence audit's rows are loss evidence too.
        for file in files.iter().filter(|file| file.divergent) {
            for gtid in file.txns().iter().filter_map(|t| t.gtid) {
                if all.contains(&gtid) && !self.exclude.contains(&gtid) {
                    let _ = lost.insert(&gtid);
                }
            }
        }
        lost
    }
}
