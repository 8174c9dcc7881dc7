//! `status.backupSchedules[]` and `status.lastBackupTime` (pure; backup-and-restore document,
//! "Retries for scheduled backups" and "Monitoring"): one rollup per `spec.backup.schedules[]`
//! entry, in spec order, so a removed schedule loses its entry.
//!
//! | field | from |
//! | --- | --- |
//! | `profileName` | the schedule |
//! | `lastScheduleTime` | its CronJob's `status.lastScheduleTime` |
//! | `lastBackupName`, `lastBackupPhase` | the schedule's latest backup ([`retry::latest_of_schedule`], the one a retry follows) |
//! | `lastSuccessfulBackupName`, `lastSuccessTime` | the schedule's newest Succeeded backup by completion; a record newer than every backup still present is kept (retention may have pruned it) |
//! | `lastRetryAttempt` | the latest backup's launch attempt when it is a retry (2 or more) |
//! | `nextRetryTime` | when the latest backup's retry is due ([`retry::successor`]); absent when it did not fail or used its attempts |
//! | `retryConflict` | the object blocking the retry's deterministic name, as observed this pass |
//!
//! `lastBackupTime` is the newest completion of a Succeeded backup of the group, of any profile
//! or schedule (ad-hoc included), or the recorded one when it is newer. Fields a newer operator
//! wrote into an entry are kept. The operator applies the two fields with its own field
//! manager ([`FIELD_MANAGER`]) and only when they changed ([`Rollup::differs`]).

use std::collections::BTreeMap;

use bloodraven_backup::names;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::group::{BackupScheduleStatus, MysqlFailoverGroup};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

use super::retry;

/// The field manager of the rollup's server-side apply.
pub const FIELD_MANAGER: &str = "bloodraven-operator-backup-schedules";

/// The two status fields of a group's backups.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollup {
    pub schedules: Vec<BackupScheduleStatus>,
    pub last_backup_time: Option<Time>,
}

fn of_group<'a>(
    group: &'a MysqlFailoverGroup,
    backups: &'a [MysqlBackup],
) -> impl Iterator<Item = &'a MysqlBackup> + 'a {
    let name = group.metadata.name.as_deref().unwrap_or_default();
    let namespace = group.metadata.namespace.as_deref();
    backups.iter().filter(move |b| {
        b.metadata.namespace.as_deref() == namespace && b.spec.failover_group_ref.name == name
    })
}

/// A Succeeded backup's name and completion.
fn success(backup: &MysqlBackup) -> Option<(String, Time)> {
    let status = backup.status.as_ref()?;
    if status.phase != Some(BackupPhase::Succeeded) {
        return None;
    }
    Some((backup.metadata.name.clone()?, status.completion_time.clone()?))
}

/// The rollup of `group`. `backups` and `cronjobs` may span namespaces and groups; `conflicts`
/// maps a schedule to the object this pass found at its retry's name.
pub fn rollup(
    group: &MysqlFailoverGroup,
    backups: &[MysqlBackup],
    cronjobs: &[CronJob],
    conflicts: &BTreeMap<String, String>,
) -> Rollup {
    let group_name = group.metadata.name.as_deref().unwrap_or_default();
    let previous = group.status.as_ref();
    let spec = group.spec.backup.as_ref();
    let policy = retry::Policy::of(spec.and_then(|s| s.retry.as_ref()));
    let schedules = spec
        .map(|s| s.schedules.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|schedule| {
            let before =
                previous.and_then(|s| s.backup_schedules.iter().find(|e| e.name == schedule.name));
            let cronjob_name = names::cronjob_name(group_name, &schedule.name);
            let last_schedule_time = cronjobs
                .iter()
                .filter(|c| c.metadata.namespace == group.metadata.namespace)
                .find(|c| c.metadata.name.as_deref() == Some(cronjob_name.as_str()))
                .and_then(|c| c.status.as_ref()?.last_schedule_time.clone());
            let latest = retry::latest_of_schedule(group, backups, &schedule.name);
            let observed = of_group(group, backups)
                .filter(|b| {
                    b.metadata.labels.as_ref().and_then(|l| l.get(names::SCHEDULE_LABEL))
                        == Some(&schedule.name)
                })
                .filter_map(success)
                .max_by_key(|(name, at)| (at.0, name.clone()));
            let recorded = before.and_then(|e| {
                Some((e.last_successful_backup_name.clone()?, e.last_success_time.clone()?))
            });
            let last_success = match (observed, recorded) {
                (Some(seen), Some(kept)) if kept.1.0 > seen.1.0 => Some(kept),
                (Some(seen), _) => Some(seen),
                (None, kept) => kept,
            };
            let attempt = latest.map(retry::attempt).filter(|a| *a >= 2);
            BackupScheduleStatus {
                name: schedule.name.clone(),
                profile_name: Some(schedule.profile_name.clone()),
                last_schedule_time,
                last_backup_name: latest.and_then(|b| b.metadata.name.clone()),
                last_backup_phase: latest.and_then(|b| b.status.as_ref()?.phase.clone()),
                last_successful_backup_name: last_success.as_ref().map(|(name, _)| name.clone()),
                last_success_time: last_success.map(|(_, at)| at),
                last_retry_attempt: attempt.map(|a| i32::try_from(a).unwrap_or(i32::MAX)),
                next_retry_time: latest
                    .and_then(|b| retry::successor(b, &policy))
                    .map(|next| Time(next.due)),
                retry_conflict: conflicts.get(&schedule.name).cloned(),
                extra: before.map(|e| e.extra.clone()).unwrap_or_default(),
            }
        })
        .collect();
    let newest = of_group(group, backups).filter_map(success).map(|(_, at)| at).max_by_key(|t| t.0);
    let recorded = previous.and_then(|s| s.last_backup_time.clone());
    let last_backup_time = match (newest, recorded) {
        (Some(seen), Some(kept)) => Some(if kept.0 > seen.0 { kept } else { seen }),
        (seen, kept) => seen.or(kept),
    };
    Rollup { schedules, last_backup_time }
}

impl Rollup {
    /// Whether the group's status records something else (compared as the API server stores
    /// it, so a re-read record equals the one rendered from the same objects).
    pub fn differs(&self, group: &MysqlFailoverGroup) -> bool {
        let status = group.status.as_ref();
        let schedules = status.map(|s| s.backup_schedules.as_slice()).unwrap_or_default();
        let last = status.and_then(|s| s.last_backup_time.as_ref());
        serde_json::to_value(&self.schedules).ok() != serde_json::to_value(schedules).ok()
            || serde_json::to_value(&self.last_backup_time).ok() != serde_json::to_value(last).ok()
    }

    /// The schedules whose `retryConflict` is set and differs from the recorded one, with the
    /// blocking object: each is announced once with a `BackupRetryConflict` warning, so an
    /// unchanged conflict is not announced again across passes or operator restarts.
    pub fn new_conflicts(&self, group: &MysqlFailoverGroup) -> Vec<(String, String)> {
        let recorded = group.status.as_ref().map(|s| s.backup_schedules.as_slice());
        self.schedules
            .iter()
            .filter_map(|entry| {
                let conflict = entry.retry_conflict.clone()?;
                let before = recorded
                    .unwrap_or_default()
                    .iter()
                    .find(|e| e.name == entry.name)
                    .and_then(|e| e.retry_conflict.as_ref());
                (before != Some(&conflict)).then(|| (entry.name.clone(), conflict))
            })
            .collect()
    }

    /// The server-side apply body: both fields, always sent, so the manager keeps owning them
    /// (an empty list when no schedule is left).
    pub fn body(&self) -> serde_json::Value {
        let mut status = json!({ "backupSchedules": self.schedules });
        if let Some(at) = &self.last_backup_time {
            status["lastBackupTime"] = json!(at);
        }
        json!({
            "apiVersion": format!("{}/{}", bloodraven_crd::API_GROUP, bloodraven_crd::API_VERSION),
            "kind": "MysqlFailoverGroup",
            "status": status,
        })
    }
}

#[cfg(test)]
#[path = "rollup_tests.rs"]
mod tests;
