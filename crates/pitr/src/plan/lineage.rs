//! Step 7: target history and excludeGtids (Λ, B, X, D).

use std::collections::BTreeSet;

use bloodraven_gtid::GtidSet;
use jiff::Timestamp;

use crate::plan::{Ctx, fmt_time, predecessors, shorten};
use crate::refusal::{Refusal, Token};

impl Ctx<'_> {
    pub(crate) fn lineage_ambiguous(&mut self) -> Result<(), Refusal> {
        let Some(target) = self.target() else { return Ok(()) };
        let Some(pick) = self.witness.clone() else { return Ok(()) };
        let replayed = self.lambda.difference(&self.backup).difference(&self.exclude);
        let newest_b = self.frontier.newest;
        let mut divergent = GtidSet::new();
        let window = self.lambda.union(&self.backup).union(&self.exclude);
        for file in &self.history().files {
            for (pos, txn) in file.txns().iter().enumerate() {
                let (Some(gtid), Some(at)) = (txn.gtid, txn.commit) else { continue };
                if replayed.contains(&gtid) && at >= target {
                    return Err(Refusal::new(
                        Token::StopAmbiguous,
                        format!(
                            "{gtid} is on the history of {} but committed at {}, at or after the target (clock skew); choose a target ≤ {} or > {}",
                            pick.gtid,
                            fmt_time(at),
                            fmt_time(target),
                            fmt_time(pick.at)
                        ),
                    ));
                }
                if window.contains(&gtid) || at >= target || newest_b.is_some_and(|n| at <= n) {
                    continue;
                }
                if predecessors(file, pos).contains(&pick.gtid) {
                    return Err(Refusal::new(
                        Token::StopAmbiguous,
                        format!(
                            "{gtid} committed at {} on top of the witness {} (committed {}); choose a target ≤ {} or > {}",
                            fmt_time(at),
                            pick.gtid,
                            fmt_time(pick.at),
                            fmt_time(at),
                            fmt_time(pick.at)
                        ),
                    ));
                }
                let _ = divergent.insert(&gtid);
            }
        }
        self.divergent = divergent;
        Ok(())
    }

    pub(crate) fn lineage_divergent(&mut self) -> Result<(), Refusal> {
        if self.divergent.is_empty() {
            return Ok(());
        }
        let d = self.divergent.clone();
        let mut sites = BTreeSet::new();
        let (mut min, mut max) = (None::<Timestamp>, None::<Timestamp>);
        for file in &self.history().files {
            for txn in file.txns() {
                let (Some(gtid), Some(at)) = (txn.gtid, txn.commit) else { continue };
                if d.contains(&gtid) {
                    sites.insert(file.site.clone());
                    min = Some(min.map_or(at, |m| m.min(at)));
                    max = Some(max.map_or(at, |m| m.max(at)));
                }
            }
        }
        let sites = sites.into_iter().collect::<Vec<_>>().join(", ");
        let (min, max) =
            (min.map(fmt_time).unwrap_or_default(), max.map(fmt_time).unwrap_or_default());
        let mut refusal = match (self.target(), &self.witness) {
            (Some(target), Some(pick)) => {
                let file = &self.history().files[pick.file];
                Refusal::new(
                    Token::ArchiveDivergentHistory,
                    format!(
                        "{} archived transactions committed between the backup's newest transaction ({}) and {} are not in the history of {} (site {}, committed {}): {} (sites {sites}, {min}…{max}). They were lost at a failover, written on a replica (errant), or belong to another branch. To restore {}'s history, add them to excludeGtids, or choose a target at or before {min}, or use a backup taken after {max}.",
                        d.count(),
                        self.frontier.newest.map_or_else(|| "none archived".to_owned(), fmt_time),
                        fmt_time(target),
                        pick.gtid,
                        file.site,
                        fmt_time(pick.at),
                        shorten(&d),
                        pick.gtid
                    ),
                )
            }
            _ => {
                let record = self
                    .history()
                    .records
                    .iter()
                    .filter(|r| r.promotion)
                    .max_by_key(|r| r.observed_at);
                let (site, at) = record.map_or((String::new(), String::new()), |r| {
                    (r.site.clone(), fmt_time(r.observed_at))
                });
                Refusal::new(
                    Token::ArchiveDivergentHistory,
                    format!(
                        "the newest archived state includes {}, committed before {site} was promoted at {at} without them; they were lost at that failover. Add them to excludeGtids to verify what the cluster kept.",
                        shorten(&d)
                    ),
                )
            }
        };
        refusal.full_set = Some(d.to_compact_string());
        Err(refusal)
    }
}
