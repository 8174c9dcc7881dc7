//! Retention: which of a profile's backups to delete.
//!
//! The spec's rules (`keepLast`, default 7, at least 1; `keepWithinDays`; `keepFailed`, default
//! 10, with `0` deleting a failed backup two minutes after its verdict was recorded or the
//! operator started, whichever is later; a schedule's latest backup always kept; a backup a
//! verification reads deferred) plus one of ours: the backup a point-in-time restore to the
//! PITR cutoff replays from (the newest success completed at or before the cutoff) is kept, and
//! so is every success after it, so pruning never removes what PITR still needs.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};

/// The default `keepLast`.
pub const DEFAULT_KEEP_LAST: u32 = 7;
/// The default `keepFailed`.
pub const DEFAULT_KEEP_FAILED: u32 = 10;
/// How long `keepFailed: 0` waits after a verdict before deleting.
pub const FAILED_GRACE: SignedDuration = SignedDuration::from_secs(120);

/// A profile's `retention`, defaults unapplied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rules {
    pub keep_last: Option<u32>,
    pub keep_within_days: Option<u32>,
    pub keep_failed: Option<u32>,
}

/// The outcome of one backup as retention sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Succeeded at `completed`.
    Succeeded { completed: Timestamp },
    /// Failed; the operator recorded the verdict at `verdict_at`.
    Failed { verdict_at: Timestamp },
    /// Pending or Running: never pruned.
    InFlight,
}

/// One backup of the profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupView {
    pub name: String,
    pub created: Timestamp,
    pub outcome: Outcome,
    /// The schedule that created it (its label), if any.
    pub schedule: Option<String>,
    /// A MysqlBackupVerification is reading it now.
    pub read_by_verification: bool,
}

/// What retention decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Delete these (names, sorted).
    pub delete: Vec<String>,
    /// Kept past their window only because a verification reads them (`RetentionDeferred`).
    pub deferred: Vec<String>,
}

/// The inputs besides the backups.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    pub now: Timestamp,
    /// When this operator process started.
    pub operator_started: Timestamp,
    /// The schedules in `spec.backup.schedules`.
    pub schedules: BTreeSet<String>,
    /// The oldest time a point-in-time restore must still reach; `None` when PITR is off.
    pub pitr_cutoff: Option<Timestamp>,
}

/// Applies `rules` to one profile's `backups`.
pub fn plan(rules: Rules, backups: &[BackupView], context: &Context) -> Plan {
    let keep_last = rules.keep_last.unwrap_or(DEFAULT_KEEP_LAST).max(1) as usize;
    let keep_failed = rules.keep_failed.unwrap_or(DEFAULT_KEEP_FAILED) as usize;
    let within = rules
        .keep_within_days
        .map(|days| context.now - SignedDuration::from_hours(24 * i64::from(days.max(1))));

    // A schedule's latest backup (by creation, then name) is always kept.
    let mut latest_of_schedule: BTreeMap<&str, &BackupView> = BTreeMap::new();
    for backup in backups {
        if let Some(schedule) =
            backup.schedule.as_deref().filter(|s| context.schedules.contains(*s))
        {
            let entry = latest_of_schedule.entry(schedule).or_insert(backup);
            if (backup.created, &backup.name) > (entry.created, &entry.name) {
                *entry = backup;
            }
        }
    }
    let protected: BTreeSet<&str> = latest_of_schedule.values().map(|b| b.name.as_str()).collect();

    let mut succeeded: Vec<(&BackupView, Timestamp)> = backups
        .iter()
        .filter_map(|b| match b.outcome {
            Outcome::Succeeded { completed } => Some((b, completed)),
            _ => None,
        })
        .collect();
    succeeded.sort_by(|a, b| (b.1, &b.0.name).cmp(&(a.1, &a.0.name)));
    // The PITR base: the newest success completed at or before the cutoff.
    let pitr_base = context.pitr_cutoff.and_then(|cutoff| {
        succeeded.iter().find(|(_, completed)| *completed <= cutoff).map(|(_, c)| *c)
    });

    let mut out = Plan::default();
    for (rank, (backup, completed)) in succeeded.iter().enumerate() {
        let kept = rank < keep_last
            || within.is_some_and(|since| *completed >= since)
            || pitr_base.is_some_and(|base| *completed >= base)
            || protected.contains(backup.name.as_str());
        if kept {
            continue;
        }
        if backup.read_by_verification {
            out.deferred.push(backup.name.clone());
        } else {
            out.delete.push(backup.name.clone());
        }
    }

    let mut failed: Vec<(&BackupView, Timestamp)> = backups
        .iter()
        .filter_map(|b| match b.outcome {
            Outcome::Failed { verdict_at } => Some((b, verdict_at)),
            _ => None,
        })
        .collect();
    failed.sort_by(|a, b| (b.0.created, &b.0.name).cmp(&(a.0.created, &a.0.name)));
    let grace_from_start = context.operator_started + FAILED_GRACE;
    for (rank, (backup, verdict_at)) in failed.iter().enumerate() {
        if rank < keep_failed || protected.contains(backup.name.as_str()) {
            continue;
        }
        if keep_failed == 0
            && (context.now < *verdict_at + FAILED_GRACE || context.now < grace_from_start)
        {
            continue;
        }
        out.delete.push(backup.name.clone());
    }
    out.delete.sort();
    out.deferred.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(minutes: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + minutes * 60).unwrap()
    }

    fn ok(name: &str, minute: i64) -> BackupView {
        BackupView {
            name: name.into(),
            created: t(minute),
            outcome: Outcome::Succeeded { completed: t(minute + 1) },
            schedule: None,
            read_by_verification: false,
        }
    }

    fn failed(name: &str, minute: i64) -> BackupView {
        BackupView {
            name: name.into(),
            created: t(minute),
            outcome: Outcome::Failed { verdict_at: t(minute + 1) },
            schedule: None,
            read_by_verification: false,
        }
    }

    fn context(now: i64) -> Context {
        Context { now: t(now), operator_started: t(0), ..Context::default() }
    }

    #[test]
    fn keep_last_keeps_the_newest_successes() {
        let backups: Vec<_> = (0..5).map(|i| ok(&format!("b{i}"), i * 10)).collect();
        let plan = plan(Rules { keep_last: Some(2), ..Rules::default() }, &backups, &context(1000));
        assert_eq!(plan.delete, vec!["b0", "b1", "b2"]);
    }

    #[test]
    fn keep_last_is_at_least_one_and_failures_never_push_a_success_out() {
        let mut backups = vec![ok("good", 0)];
        backups.extend((1..20).map(|i| failed(&format!("f{i:02}"), i)));
        let plan = plan(
            Rules { keep_last: Some(0), keep_failed: Some(3), ..Rules::default() },
            &backups,
            &context(1000),
        );
        assert!(!plan.delete.contains(&"good".to_owned()));
        assert_eq!(plan.delete.len(), 16);
        assert!(!plan.delete.contains(&"f19".to_owned()));
    }

    #[test]
    fn keep_within_days_keeps_recent_successes() {
        let backups = vec![ok("old", 0), ok("recent", 60 * 24 * 3), ok("newest", 60 * 24 * 4)];
        let rules = Rules { keep_last: Some(1), keep_within_days: Some(2), ..Rules::default() };
        let plan = plan(rules, &backups, &context(60 * 24 * 5));
        assert_eq!(plan.delete, vec!["old"]);
    }

    #[test]
    fn keep_failed_zero_waits_two_minutes_after_the_verdict_and_the_start() {
        let backups = vec![ok("good", 0), failed("f", 10)];
        let rules = Rules { keep_failed: Some(0), ..Rules::default() };
        assert!(plan(rules, &backups, &context(12)).delete.is_empty());
        assert_eq!(plan(rules, &backups, &context(13)).delete, vec!["f"]);
        let mut late_start = context(13);
        late_start.operator_started = t(12);
        assert!(plan(rules, &backups, &late_start).delete.is_empty());
    }

    #[test]
    fn a_schedules_latest_failed_backup_is_kept_until_it_is_removed() {
        let mut f = failed("f", 10);
        f.schedule = Some("nightly".into());
        let backups = vec![ok("good", 0), f];
        let rules = Rules { keep_failed: Some(0), ..Rules::default() };
        let mut ctx = context(100);
        ctx.schedules.insert("nightly".into());
        assert!(plan(rules, &backups, &ctx).delete.is_empty());
        ctx.schedules.clear();
        assert_eq!(plan(rules, &backups, &ctx).delete, vec!["f"]);
    }

    #[test]
    fn the_pitr_base_and_later_backups_are_kept() {
        let backups: Vec<_> = (0..5).map(|i| ok(&format!("b{i}"), i * 10)).collect();
        let mut ctx = context(1000);
        // b1 completed at minute 11: the newest success at or before minute 15.
        ctx.pitr_cutoff = Some(t(15));
        let plan = plan(Rules { keep_last: Some(1), ..Rules::default() }, &backups, &ctx);
        assert_eq!(plan.delete, vec!["b0"]);
    }

    #[test]
    fn a_backup_a_verification_reads_is_deferred() {
        let mut backups: Vec<_> = (0..3).map(|i| ok(&format!("b{i}"), i * 10)).collect();
        backups[0].read_by_verification = true;
        let plan = plan(Rules { keep_last: Some(1), ..Rules::default() }, &backups, &context(1000));
        assert_eq!(plan.delete, vec!["b1"]);
        assert_eq!(plan.deferred, vec!["b0"]);
    }

    #[test]
    fn in_flight_backups_are_never_pruned() {
        let mut running = ok("running", 0);
        running.outcome = Outcome::InFlight;
        let backups = vec![running, ok("b1", 10), ok("b2", 20)];
        let plan = plan(Rules { keep_last: Some(1), ..Rules::default() }, &backups, &context(1000));
        assert_eq!(plan.delete, vec!["b1"]);
    }
}
