//! Retention over a group's MysqlBackups (pure): the profile's `retention` (`keepLast`,
//! `keepWithinDays`, `keepFailed`, the document's table, applied by
//! [`bloodraven_backup::retention::plan`]) to each profile's backups, plus the two holds the
//! document and the issue add:
//!
//! - a backup a running MysqlBackupVerification reads is never pruned (`RetentionDeferred`);
//! - the backup the PITR archive rests on is never pruned: with `spec.backup.pitr.enabled`, the
//!   newest successful backup with a known `gtidExecuted` that completed at or before the
//!   archive's newest archived time (`status.pitr.newestArchivedTime`, else the newest the
//!   sites report in `status.pitr.sites`: the newest base a point-in-time restore can replay
//!   forward from; without an archived time yet, the newest such backup), and every success
//!   after it. Older backups go as the table says, so the archive can still release binlogs
//!   (the archive follows backup retention, not the reverse).
//!
//! Backups already being deleted and backups of other groups are not counted.

use std::collections::BTreeSet;

use bloodraven_backup::names;
use bloodraven_backup::retention::{self, BackupView, Context, Outcome, Plan, Rules};
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::condition::ConditionType;
use bloodraven_crd::group::MysqlFailoverGroup;
use jiff::Timestamp;

/// One profile's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfilePlan {
    pub profile: String,
    pub plan: Plan,
}

fn group_backups<'a>(
    group: &'a MysqlFailoverGroup,
    backups: &'a [MysqlBackup],
) -> impl Iterator<Item = &'a MysqlBackup> + 'a {
    let name = group.metadata.name.clone().unwrap_or_default();
    let namespace = group.metadata.namespace.clone();
    backups.iter().filter(move |b| {
        b.spec.failover_group_ref.name == name
            && b.metadata.namespace == namespace
            && b.metadata.deletion_timestamp.is_none()
    })
}

/// What retention sees of one backup.
pub fn view(backup: &MysqlBackup, reading: &BTreeSet<String>) -> BackupView {
    let status = backup.status.clone().unwrap_or_default();
    let created =
        backup.metadata.creation_timestamp.as_ref().map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    let outcome = match status.phase {
        Some(BackupPhase::Succeeded) => Outcome::Succeeded {
            completed: status.completion_time.as_ref().map_or(created, |t| t.0),
        },
        Some(BackupPhase::Failed) => {
            // The verdict's time: the later of the completion and the Ready condition's last
            // transition (a Job the operator observed late is not deleted at once).
            let ready = status
                .conditions
                .iter()
                .find(|c| c.type_ == ConditionType::Ready)
                .and_then(|c| c.last_transition_time.as_ref())
                .map(|t| t.0);
            let completed = status.completion_time.as_ref().map(|t| t.0);
            Outcome::Failed { verdict_at: ready.max(completed).unwrap_or(created) }
        }
        _ => Outcome::InFlight,
    };
    let name = backup.metadata.name.clone().unwrap_or_default();
    BackupView {
        read_by_verification: reading.contains(&name),
        name,
        created,
        outcome,
        schedule: backup
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(names::SCHEDULE_LABEL))
            .cloned(),
    }
}

/// The archive's newest archived time: `status.pitr.newestArchivedTime`, or, when that is not
/// set, the newest of the sites' `status.pitr.sites[].newestArchivedTime` (what the PITR
/// roll-up publishes from the sidecars' `/archiver/status`).
fn newest_archived(group: &MysqlFailoverGroup) -> Option<Timestamp> {
    let pitr = group.status.as_ref()?.pitr.as_ref()?;
    pitr.newest_archived_time.as_ref().map(|t| t.0).or_else(|| {
        pitr.sites.iter().filter_map(|site| site.newest_archived_time.as_ref()).map(|t| t.0).max()
    })
}

/// The PITR hold's cutoff (see the module documentation); `None` when PITR is off or no
/// backup can be a base.
pub fn pitr_cutoff(group: &MysqlFailoverGroup, backups: &[MysqlBackup]) -> Option<Timestamp> {
    let enabled = group
        .spec
        .backup
        .as_ref()
        .and_then(|b| b.pitr.as_ref())
        .and_then(|p| p.enabled)
        .unwrap_or(false);
    if !enabled {
        return None;
    }
    let newest_archived = newest_archived(group);
    group_backups(group, backups)
        .filter_map(|b| {
            let status = b.status.as_ref()?;
            let gtids = status.gtid_executed.as_deref().is_some_and(|g| !g.trim().is_empty());
            (status.phase == Some(BackupPhase::Succeeded) && gtids)
                .then_some(status.completion_time.as_ref()?.0)
        })
        .filter(|completed| newest_archived.is_none_or(|newest| *completed <= newest))
        .max()
}

/// Retention's plan for every profile of `group`. `reading`: the backups a running
/// verification reads; `operator_started`: when this operator process started.
pub fn plan(
    group: &MysqlFailoverGroup,
    backups: &[MysqlBackup],
    reading: &BTreeSet<String>,
    now: Timestamp,
    operator_started: Timestamp,
) -> Vec<ProfilePlan> {
    let Some(spec) = group.spec.backup.as_ref() else { return Vec::new() };
    let context = Context {
        now,
        operator_started,
        schedules: spec.schedules.iter().map(|s| s.name.clone()).collect(),
        pitr_cutoff: pitr_cutoff(group, backups),
    };
    spec.profiles
        .iter()
        .map(|profile| {
            let retention = profile.retention.clone().unwrap_or_default();
            let rules = Rules {
                keep_last: retention.keep_last.map(|n| u32::try_from(n).unwrap_or(1)),
                keep_within_days: retention.keep_within_days.map(|n| u32::try_from(n).unwrap_or(1)),
                keep_failed: retention.keep_failed.map(|n| u32::try_from(n).unwrap_or(0)),
            };
            let views: Vec<BackupView> = group_backups(group, backups)
                .filter(|b| b.spec.profile_name == profile.name)
                .map(|b| view(b, reading))
                .collect();
            ProfilePlan {
                profile: profile.name.clone(),
                plan: retention::plan(rules, &views, &context),
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
