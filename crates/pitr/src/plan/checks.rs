//! Steps 9 and 10: the search's refusals, plan limits and replay support.

use std::collections::BTreeSet;

use bloodraven_gtid::GtidSet;

use crate::model::RowBytes;
use crate::plan::{Ctx, shorten};
use crate::refusal::{Refusal, Token};

impl Ctx<'_> {
    pub(crate) fn search_gap(&mut self) -> Result<(), Refusal> {
        let Some(plan) = &self.plan else { return Ok(()) };
        if plan.missing.is_empty() {
            return Ok(());
        }
        let mut archived = GtidSet::new();
        let (mut quarantined, mut unreadable) = (GtidSet::new(), Vec::new());
        for file in &self.history().files {
            let here: GtidSet =
                file.txns().iter().filter_map(|t| t.gtid).fold(GtidSet::new(), |mut acc, g| {
                    let _ = acc.insert(&g);
                    acc
                });
            if file.quarantined {
                quarantined.union_with(&file.hint.union(&here).intersection(&plan.missing));
            } else if matches!(file.bytes, RowBytes::Unreadable(_))
                && !file.hint.is_disjoint(&plan.missing)
            {
                unreadable.push(file.key.clone());
            } else {
                archived.union_with(&here);
            }
        }
        let absent = plan.missing.difference(&archived);
        if absent.is_empty() {
            return Ok(());
        }
        let mut where_ = Vec::new();
        let q = absent.intersection(&quarantined);
        if !q.is_empty() {
            where_.push(format!("{} in a quarantined row", shorten(&q)));
        }
        if !unreadable.is_empty() {
            where_.push(format!(
                "in archived rows that cannot be read ({}; restore the object)",
                unreadable.join(", ")
            ));
        }
        let never = absent.difference(&quarantined);
        if !never.is_empty() && unreadable.is_empty() {
            where_.push(format!("{} committed on a site and never archived (an unarchived tail at a failover or reclone)", shorten(&never)));
        }
        Err(Refusal::new(
            Token::ArchiveGap,
            format!(
                "the target history needs {} that no archived file holds: {}; choose a target before them, or a backup that holds them",
                shorten(&absent),
                where_.join("; ")
            ),
        ))
    }

    pub(crate) fn too_large(&mut self) -> Result<(), Refusal> {
        let Some(plan) = &self.plan else { return Ok(()) };
        let limits = self.input.limits;
        let transactions: u64 = self.history().files.iter().map(|f| f.txns().len() as u64).sum();
        let memory = transactions.saturating_mul(96);
        if memory > limits.memory_bytes {
            return Err(Refusal::new(
                Token::PlanTooLarge,
                format!(
                    "planning exceeds its memory budget ({memory} > {} bytes, BLOODRAVEN_PITR_PLAN_MEMORY_BYTES); raise the Job's memory limit, or use a backup closer to the target",
                    limits.memory_bytes
                ),
            ));
        }
        let mut staged = 0u64;
        let mut used = BTreeSet::new();
        for segment in &plan.segments {
            if used.insert(segment.file) {
                let file = &self.history().files[segment.file];
                staged = staged.saturating_add(file.size);
                if let Some(big) = file.txns().iter().map(|t| t.max_event).max()
                    && big > limits.event_bytes()
                {
                    return Err(Refusal::new(
                        Token::PlanTooLarge,
                        format!(
                            "an event of {} is {big} bytes, over the event-size limit of {} bytes; below 64 MiB raise the Job's memory limit, else choose a target or backup whose plan does not read that file",
                            file.key,
                            limits.event_bytes()
                        ),
                    ));
                }
            }
        }
        if staged > limits.staging_bytes {
            return Err(Refusal::new(
                Token::PlanTooLarge,
                format!(
                    "the staged files plus coverage.json ({staged} bytes) exceed the staging volume's sizeLimit ({} bytes); raise spec.backup.stagingVolumeSizeLimit",
                    limits.staging_bytes
                ),
            ));
        }
        if staged > limits.node_free_bytes {
            return Err(Refusal::new(
                Token::PlanTooLarge,
                format!(
                    "staging {staged} bytes would leave less than its floor free on the node ({} bytes available); run the Job on a node with more ephemeral storage",
                    limits.node_free_bytes
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn replay_unsupported(&mut self) -> Result<(), Refusal> {
        let Some(plan) = &self.plan else { return Ok(()) };
        for segment in &plan.segments {
            let file = &self.history().files[segment.file];
            for txn in &file.txns()[segment.start..segment.end] {
                let why = match (txn.gtid, txn.commit) {
                    (None, _) => Some("an anonymous transaction".to_owned()),
                    (Some(g), _) if self.exclude.contains(&g) => None,
                    (Some(g), None) => Some(format!("{g} has no original commit time")),
                    (Some(g), Some(_)) if txn.xa => Some(format!("{g} is an XA transaction")),
                    _ => None,
                };
                if let Some(why) = why {
                    return Err(Refusal::new(
                        Token::ReplayUnsupported,
                        format!(
                            "the replay of {} needs {why}, which mysqlbinlog replay does not support; choose a target before it",
                            file.key
                        ),
                    ));
                }
            }
        }
        if self.target().is_none() && plan.segments.is_empty() {
            return Err(Refusal::new(
                Token::NoArchivedReplay,
                "nothing is archived beyond the backup; wait for the archive or run FLUSH BINARY LOGS on the source",
            ));
        }
        Ok(())
    }
}
