//! Step 6: the witness, and witnesses archived only on a replica (000 lines 783–902).

use std::collections::BTreeSet;

use jiff::Timestamp;

use crate::model::RowBytes;
use crate::plan::{Ctx, DELTA, WitnessPick, fmt_time, predecessors, shorten};
use crate::refusal::{Refusal, Token};
use crate::request::Mode;

impl Ctx<'_> {
    pub(crate) fn witness_covered(&mut self) -> Result<(), Refusal> {
        let Mode::Target(target) = self.mode else {
            return self.latest_head();
        };
        let skip = self.backup.union(&self.exclude);
        let mut best: Option<WitnessPick> = None;
        let mut marked_may_hold = false;
        let mut marked_earliest = None;
        for (index, file) in self.history().files.iter().enumerate() {
            let marked = self.history().marked.contains(&file.site);
            if marked {
                let earliest = match &file.bytes {
                    RowBytes::Read(txns) => txns
                        .iter()
                        .filter(|t| t.gtid.is_some_and(|g| !skip.contains(&g)))
                        .filter_map(|t| t.commit)
                        .filter(|&c| c >= target)
                        .min(),
                    // Unread: any row whose hint reaches T may hold an earlier candidate.
                    _ => file.last_event.is_none_or(|last| last >= target).then_some(target),
                };
                if let Some(earliest) = earliest {
                    marked_may_hold = true;
                    marked_earliest =
                        Some(marked_earliest.map_or(earliest, |m: Timestamp| m.min(earliest)));
                }
                continue;
            }
            // A quarantined row is evidence, never the witness (ambiguity 27).
            if file.quarantined {
                continue;
            }
            for (pos, txn) in file.txns().iter().enumerate() {
                let (Some(gtid), Some(at)) = (txn.gtid, txn.commit) else { continue };
                if at < target || skip.contains(&gtid) {
                    continue;
                }
                if best
                    .as_ref()
                    .is_none_or(|b| at < b.at || (at == b.at && pos < b.pos && b.file == index))
                {
                    best = Some(WitnessPick { file: index, pos, gtid, at });
                }
            }
        }
        self.marked_earliest = marked_earliest;
        match best {
            Some(pick) => {
                // Λ: the witness's predecessors in its row.
                let file = &self.history().files[pick.file];
                self.lambda = predecessors(file, pick.pos);
                self.witness = Some(pick);
                Ok(())
            }
            None if marked_may_hold => Err(Refusal::new(
                Token::ArchiveUnsafeHistory,
                format!(
                    "no unmarked site archived a transaction at or after {}, and a site with a history-integrity marker may hold one; its bytes cannot be used: point spec.backup.pitr at a new prefix and take a full backup",
                    fmt_time(target)
                ),
            )),
            None if self.input.request.allow_partial => {
                self.partial = true;
                self.latest_head()
            }
            None => Err(Refusal::new(
                Token::TargetNotCovered,
                format!(
                    "nothing at or after {} is archived yet; wait for the archive, run FLUSH BINARY LOGS on the source, or set allowPartial",
                    fmt_time(target)
                ),
            )),
        }
    }

    pub(crate) fn witness_ambiguous(&mut self) -> Result<(), Refusal> {
        let Some(pick) = self.witness.clone() else { return Ok(()) };
        let skip = self.backup.union(&self.exclude);
        // Other candidates at the same microsecond on a different history.
        for (index, file) in self.history().files.iter().enumerate() {
            if file.quarantined || self.history().marked.contains(&file.site) {
                continue;
            }
            for (pos, txn) in file.txns().iter().enumerate() {
                let (Some(gtid), Some(at)) = (txn.gtid, txn.commit) else { continue };
                if at != pick.at || skip.contains(&gtid) || gtid == pick.gtid {
                    continue;
                }
                let theirs = predecessors(file, pos);
                if !theirs.contains(&pick.gtid) && !self.lambda.contains(&gtid) {
                    return Err(Refusal::new(
                        Token::StopAmbiguous,
                        format!(
                            "{} ({}) and {} ({}) both committed at {} on different histories; choose a target ≠ {}",
                            pick.gtid,
                            self.history().files[pick.file].site,
                            gtid,
                            self.history().files[index].site,
                            fmt_time(pick.at),
                            fmt_time(pick.at)
                        ),
                    ));
                }
            }
        }
        // Copies of the witness that disagree on its history (ambiguity 36).
        for file in &self.history().files {
            if file.quarantined {
                continue;
            }
            if let Some(pos) = file.txns().iter().position(|t| t.gtid == Some(pick.gtid)) {
                let theirs = predecessors(file, pos).difference(&self.exclude);
                if theirs != self.lambda.difference(&self.exclude) {
                    let extra = theirs.symmetric_difference(&self.lambda.difference(&self.exclude));
                    return Err(Refusal::new(
                        Token::StopAmbiguous,
                        format!(
                            "the witness {} has copies on different histories ({} and {} differ by {}); exclude the transactions off the history you want",
                            pick.gtid,
                            self.history().files[pick.file].key,
                            file.key,
                            shorten(&extra)
                        ),
                    ));
                }
            }
        }
        self.anchor_check(&pick)
    }

    /// Witnesses archived only on a replica (000 lines 892–902).
    pub(crate) fn anchor_check(&mut self, pick: &WitnessPick) -> Result<(), Refusal> {
        let origin = pick.gtid.uuid;
        let history = self.history();
        // An origin copy: a row on a site one of whose promotion records is the origin server.
        let origin_sites: BTreeSet<&str> = history
            .records
            .iter()
            .filter(|r| r.promotion && r.server_uuid == origin)
            .map(|r| r.site.as_str())
            .collect();
        let has_origin_copy = history.files.iter().any(|file| {
            origin_sites.contains(file.site.as_str())
                && file.txns().iter().any(|t| t.gtid == Some(pick.gtid))
        });
        if has_origin_copy {
            return Ok(());
        }
        let mut explained = self.lambda.restricted_to_uuid(origin);
        explained.union_with(&self.backup);
        let mut set_aside = None;
        for record in history.records.iter().filter(|r| r.promotion && r.server_uuid == origin) {
            let early = record.observed_at.saturating_add(DELTA).is_ok_and(|t| t < pick.at);
            if !early || record.gtid_executed.contains(&pick.gtid) {
                continue;
            }
            let later = history.records.iter().find(|later| {
                later.site == record.site
                    && later.observed_at > record.observed_at
                    && match later.probe_interval {
                        None => true,
                        Some(probe) => pick
                            .at
                            .saturating_add(probe)
                            .and_then(|t| t.saturating_add(DELTA))
                            .is_ok_and(|limit| later.observed_at <= limit),
                    }
            });
            if let Some(later) = later {
                set_aside = Some((record.label.clone(), later.label.clone(), later.observed_at));
                continue;
            }
            // Another server's promotion record between the anchor and w (±δ) that does not
            // hold w: the origin lost its role and regained it in between (000 line 900).
            let from = record.observed_at.checked_sub(DELTA).unwrap_or(record.observed_at);
            let to = pick.at.checked_add(DELTA).unwrap_or(pick.at);
            let between = history.records.iter().find(|other| {
                other.promotion
                    && other.server_uuid != origin
                    && other.observed_at >= from
                    && other.observed_at <= to
                    && !other.gtid_executed.contains(&pick.gtid)
            });
            if let Some(other) = between {
                set_aside = Some((record.label.clone(), other.label.clone(), other.observed_at));
                continue;
            }
            explained.union_with(&record.gtid_executed);
        }
        let unanchored = self.lambda.difference(&explained);
        // Excluded unanchored predecessors are errant, not on-history (000 line 874).
        self.errant = unanchored.intersection(&self.exclude);
        let unexplained = unanchored.difference(&self.exclude);
        if unexplained.is_empty() {
            return Ok(());
        }
        let why = match set_aside {
            Some((anchor, later, at)) => format!(
                "; the promotion record {anchor} is not an anchor, because a later record, {later} (observed at {}), is not provably after the witness",
                fmt_time(at)
            ),
            None => String::new(),
        };
        Err(Refusal::new(
            Token::StopAmbiguous,
            format!(
                "the witness {} is archived only on a replica, and its predecessors include {}, which nothing proves preceded it on its origin{why}; exclude it, or choose another target",
                pick.gtid,
                shorten(&unexplained)
            ),
        ))
    }
}
