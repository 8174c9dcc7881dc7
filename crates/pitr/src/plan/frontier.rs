//! Step 5: the backup frontier (000 "The backup frontier").

use bloodraven_gtid::GtidSet;
use jiff::{SignedDuration, Timestamp};

use crate::model::RowBytes;
use crate::plan::{Ctx, DELTA, Frontier, fmt_time};
use crate::refusal::{Refusal, Token};
use crate::request::Mode;

impl Ctx<'_> {
    pub(crate) fn dump_end(&self) -> Timestamp {
        // mysqlsh truncates to the second: a whole-second end E counts as E + 0.999999 s.
        self.input.backup.dump_end.unwrap_or(Timestamp::MIN)
    }

    pub(crate) fn frontier_reuse(&mut self) -> Result<(), Refusal> {
        let mut frontier = Frontier { proven: true, ..Frontier::default() };
        let mut seen = GtidSet::new();
        let latest_allowed = self.dump_end().saturating_add(SignedDuration::from_secs(1)).ok();
        for file in &self.history().files {
            if file.hint.is_disjoint(&self.backup) && !matches!(file.bytes, RowBytes::Read(_)) {
                continue;
            }
            match &file.bytes {
                RowBytes::Read(txns) => {
                    for txn in txns {
                        let (Some(gtid), Some(at)) = (&txn.gtid, txn.commit) else { continue };
                        if !self.backup.contains(gtid) {
                            continue;
                        }
                        let _ = seen.insert(gtid);
                        if let Some(limit) = latest_allowed
                            && at > limit.saturating_add(DELTA).unwrap_or(limit)
                        {
                            return Err(Refusal::new(
                                Token::ArchiveNamespaceReuse,
                                format!(
                                    "backup transaction {gtid} was archived in {} with commit time {}, more than 5s after the dump finished ({}): the GTID was issued again later (a reclone kept the server_uuid); start a new prefix and take a full backup",
                                    file.key,
                                    fmt_time(at),
                                    fmt_time(self.dump_end())
                                ),
                            ));
                        }
                        frontier.newest = frontier.newest.max(Some(at));
                    }
                }
                RowBytes::NotRead => {
                    frontier.proven = false;
                    frontier.unread += 1;
                }
                RowBytes::Unreadable(_) => {
                    frontier.proven = false;
                    frontier.unread += 1;
                }
            }
        }
        // Backup transactions no row holds (pruned, lost, before the archive).
        let hinted = self
            .history()
            .files
            .iter()
            .fold(GtidSet::new(), |acc, file| acc.union(&file.hint.intersection(&self.backup)));
        if !self.backup.difference(&seen.union(&hinted)).is_empty() {
            frontier.missing = true;
            frontier.proven = false;
        }
        self.frontier = frontier;
        Ok(())
    }

    pub(crate) fn frontier_after_target(&mut self) -> Result<(), Refusal> {
        let Mode::Target(target) = self.mode else { return Ok(()) };
        let end = self.dump_end();
        let earliest = end.saturating_add(SignedDuration::from_secs(1)).unwrap_or(end);
        if target < earliest {
            return Err(Refusal::new(
                Token::BackupAfterTarget,
                format!(
                    "target {} is before the dump finished ({}, rounded up to {}); a dump cannot be un-applied: use a target at or after {} or an older backup",
                    fmt_time(target),
                    fmt_time(end),
                    fmt_time(earliest),
                    fmt_time(earliest)
                ),
            ));
        }
        if let Some(newest) = self.frontier.newest
            && newest >= target
        {
            return Err(Refusal::new(
                Token::BackupAfterTarget,
                format!(
                    "the backup already holds a transaction committed at {}, at or after target {}; use a later target or an older backup",
                    fmt_time(newest),
                    fmt_time(target)
                ),
            ));
        }
        let clock =
            self.input.backup.stamp.as_ref().and_then(|s| s.server_clock_end).unwrap_or(end);
        let safe = clock.saturating_add(SignedDuration::from_secs(1)).unwrap_or(clock);
        if !self.frontier.proven && target < safe {
            let why = if self.frontier.missing {
                "some of the backup's transactions are no longer archived, so its newest commit time is unknown".to_owned()
            } else {
                format!(
                    "this backup's newest commit time is proven only up to {}; {} archived rows holding its transactions were not read, and their manifest hints are unverified",
                    self.frontier.newest.map_or_else(|| "nothing".to_owned(), fmt_time),
                    self.frontier.unread
                )
            };
            return Err(Refusal::new(
                Token::BackupAfterTarget,
                format!("{why}; use a target at or after {}", fmt_time(safe)),
            ));
        }
        Ok(())
    }
}
