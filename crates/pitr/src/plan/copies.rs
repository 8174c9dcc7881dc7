//! Steps 3 and 8: row validity, identity and order across copies.

use std::collections::HashMap;

use bloodraven_gtid::{Gtid, GtidSet};
use jiff::Timestamp;

use crate::model::RowBytes;
use crate::plan::{Ctx, shorten};
use crate::refusal::{Refusal, Token};

impl Ctx<'_> {
    /// Read rows whose bytes disagree with their manifest hint refuse as soon as found
    /// (000 line 933); also finds the GTIDs with more than one copy.
    pub(crate) fn objects_valid(&mut self) -> Result<(), Refusal> {
        // GTIDs with more than one copy: only they can differ or be applied in other orders.
        let (mut seen, mut dup) = (GtidSet::new(), GtidSet::new());
        for file in &self.history().files {
            let RowBytes::Read(txns) = &file.bytes else { continue };
            let mut actual = GtidSet::new();
            for gtid in txns.iter().filter_map(|t| t.gtid.as_ref()) {
                let _ = actual.insert(gtid);
            }
            if actual != file.hint {
                return Err(Refusal::new(
                    Token::ArchiveObjectInvalid,
                    format!(
                        "{}'s manifest hint ({}) does not match its bytes ({}); restore the object or the manifest",
                        file.key,
                        shorten(&file.hint),
                        shorten(&actual)
                    ),
                ));
            }
            dup.union_with(&actual.intersection(&seen));
            seen.union_with(&actual);
        }
        self.duplicated = dup;
        Ok(())
    }

    pub(crate) fn copies_reuse(&mut self) -> Result<(), Refusal> {
        let needed = self.lambda.difference(&self.backup).difference(&self.exclude);
        if self.duplicated.is_empty() {
            return self.unreadable_on_history(&needed);
        }
        let mut copies: HashMap<Gtid, (Option<Timestamp>, u32, bool, usize)> = HashMap::new();
        for (index, file) in self.history().files.iter().enumerate() {
            match &file.bytes {
                RowBytes::Unreadable(why) if !file.hint.is_disjoint(&needed) => {
                    let token = if file.quarantined {
                        Token::ArchiveNamespaceReuse
                    } else {
                        Token::ArchiveObjectInvalid
                    };
                    return Err(Refusal::new(
                        token,
                        format!(
                            "cannot read {} ({why}), and it overlaps the target history; restore the object, or quarantine the row at the source with bloodraven pitr-quarantine",
                            file.key
                        ),
                    ));
                }
                RowBytes::Read(txns) => {
                    for txn in txns {
                        let Some(gtid) = txn.gtid.filter(|g| self.duplicated.contains(g)) else {
                            continue;
                        };
                        let entry = copies.entry(gtid).or_insert((
                            txn.commit,
                            txn.server_id,
                            txn.empty,
                            index,
                        ));
                        if entry.0 != txn.commit || entry.1 != txn.server_id || entry.2 != txn.empty
                        {
                            return Err(Refusal::new(
                                Token::ArchiveNamespaceReuse,
                                format!(
                                    "two archived copies of {gtid} differ (in {} and {}: commit time, origin server, or one copy is empty); verified GTID reuse needs a new prefix and a full backup",
                                    self.history().files[entry.3].key,
                                    file.key
                                ),
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    pub(crate) fn unreadable_on_history(&self, needed: &GtidSet) -> Result<(), Refusal> {
        for file in &self.history().files {
            if let RowBytes::Unreadable(why) = &file.bytes
                && !file.hint.is_disjoint(needed)
            {
                let token = if file.quarantined {
                    Token::ArchiveNamespaceReuse
                } else {
                    Token::ArchiveObjectInvalid
                };
                return Err(Refusal::new(
                    token,
                    format!(
                        "cannot read {} ({why}), and it overlaps the target history; restore the object, or quarantine the row at the source with bloodraven pitr-quarantine",
                        file.key
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn copies_inversion(&mut self) -> Result<(), Refusal> {
        if self.duplicated.is_empty() {
            return Ok(());
        }
        // Position of each GTID's first copy; files compared pairwise through shared GTIDs.
        let mut first: HashMap<Gtid, (usize, usize)> = HashMap::new();
        let mut last_seen: HashMap<(usize, usize), (usize, Gtid)> = HashMap::new();
        for (index, file) in self.history().files.iter().enumerate() {
            for (pos, txn) in file.txns().iter().enumerate() {
                let Some(gtid) = txn.gtid.filter(|g| self.duplicated.contains(g)) else {
                    continue;
                };
                match first.get(&gtid) {
                    None => {
                        first.insert(gtid, (index, pos));
                    }
                    Some(&(other, other_pos)) if other != index => {
                        if let Some(&(prev_pos, prev_gtid)) = last_seen.get(&(index, other))
                            && other_pos < prev_pos
                            && !self.exclude.contains(&gtid)
                            && !self.exclude.contains(&prev_gtid)
                        {
                            return Err(Refusal::new(
                                Token::ArchiveOrderInversion,
                                format!(
                                    "{} and {} apply {prev_gtid} and {gtid} in opposite orders, so equal GTID sets may hold different data; exclude the errant transaction, or use a backup and archive that start after it",
                                    self.history().files[other].key,
                                    file.key
                                ),
                            ));
                        }
                        last_seen.insert((index, other), (other_pos, gtid));
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }
}
