//! Retries of scheduled backups (pure; backup-and-restore document, "Retries for scheduled
//! backups"): when a schedule's latest backup Failed and its attempt is below
//! `spec.backup.retry.maxAttempts`, its successor `backup-retry-<hash of its UID>-r<N>` is due
//! `initialBackoff · 2^(N-1)` (capped at `maxBackoff`) after its completion, where N is the
//! retry's number (the failed backup's attempt). The successor carries the schedule label,
//! `bloodraven.shipstream.io/backup-retry-of=<predecessor UID>`, the root annotations and the
//! launch attempt. Ad-hoc backups (no schedule label) are never retried.

use std::time::Duration as StdDuration;

use bloodraven_backup::names;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::group::{BackupRetrySpec, MysqlFailoverGroup};
use bloodraven_workloads::labels;
use jiff::{SignedDuration, Timestamp};
use serde_json::json;

/// The annotation naming the chain's original run.
pub const ROOT_ANNOTATION: &str = "bloodraven.shipstream.io/backup-retry-root";
/// The annotation with the original run's UID.
pub const ROOT_UID_ANNOTATION: &str = "bloodraven.shipstream.io/backup-retry-root-uid";

/// `spec.backup.retry` with defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Total attempts including the original (1: no retry).
    pub max_attempts: u32,
    pub initial: SignedDuration,
    pub max: SignedDuration,
}

fn parse(
    duration: Option<&bloodraven_crd::duration::Duration>,
    default: StdDuration,
) -> SignedDuration {
    let std = duration.and_then(|d| d.to_std().ok()).unwrap_or(default);
    SignedDuration::try_from(std).unwrap_or(SignedDuration::MAX)
}

impl Policy {
    /// The policy of `spec` (defaults: 1 attempt, 1m, 30m).
    pub fn of(spec: Option<&BackupRetrySpec>) -> Self {
        Policy {
            max_attempts: spec
                .and_then(|s| s.max_attempts)
                .map_or(1, |n| u32::try_from(n).unwrap_or(1).max(1)),
            initial: parse(
                spec.and_then(|s| s.initial_backoff.as_ref()),
                StdDuration::from_secs(60),
            ),
            max: parse(spec.and_then(|s| s.max_backoff.as_ref()), StdDuration::from_secs(1800)),
        }
    }

    /// The wait before the `n`-th retry (`n` ≥ 1): `initial · 2^(n-1)`, at most `max`.
    pub fn backoff(&self, n: u32) -> SignedDuration {
        let factor = 1_i64.checked_shl(n.saturating_sub(1)).unwrap_or(i64::MAX);
        self.initial
            .checked_mul(i32::try_from(factor).unwrap_or(i32::MAX))
            .unwrap_or(self.max)
            .min(self.max)
    }
}

/// A backup's launch attempt: the greater of the annotation and `status.attempt` (1 when
/// neither is set).
pub fn attempt(backup: &MysqlBackup) -> u32 {
    let annotated = backup
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(names::ATTEMPT_ANNOTATION))
        .and_then(|a| a.parse::<u32>().ok());
    let recorded =
        backup.status.as_ref().and_then(|s| s.attempt).and_then(|a| u32::try_from(a).ok());
    annotated.max(recorded).unwrap_or(1).max(1)
}

/// The latest backup of `schedule` in `group` (the newest by creation, then name), not
/// counting backups being deleted: the backup a retry follows and the schedule's last result
/// in `status.backupSchedules`.
pub fn latest_of_schedule<'a>(
    group: &MysqlFailoverGroup,
    backups: &'a [MysqlBackup],
    schedule: &str,
) -> Option<&'a MysqlBackup> {
    let name = group.metadata.name.as_deref().unwrap_or_default();
    let namespace = group.metadata.namespace.as_deref();
    backups
        .iter()
        .filter(|b| b.metadata.namespace.as_deref() == namespace)
        .filter(|b| {
            b.spec.failover_group_ref.name == name && b.metadata.deletion_timestamp.is_none()
        })
        .filter(|b| {
            b.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(names::SCHEDULE_LABEL))
                .map(String::as_str)
                == Some(schedule)
        })
        .max_by_key(|b| {
            (b.metadata.creation_timestamp.as_ref().map(|t| t.0), b.metadata.name.clone())
        })
}

/// The retry of a schedule's latest backup.
#[derive(Debug, Clone, PartialEq)]
pub struct Successor {
    /// When it may be created.
    pub due: Timestamp,
    /// Its launch attempt.
    pub attempt: u32,
    /// The object to create.
    pub backup: MysqlBackup,
}

/// The successor of `latest` (a schedule's newest backup), or `None` when it did not fail, is
/// not scheduled, or used its attempts.
pub fn successor(latest: &MysqlBackup, policy: &Policy) -> Option<Successor> {
    let status = latest.status.as_ref()?;
    if status.phase != Some(BackupPhase::Failed) {
        return None;
    }
    let labels_map = latest.metadata.labels.clone().unwrap_or_default();
    let schedule = labels_map.get(names::SCHEDULE_LABEL)?;
    let uid = latest.metadata.uid.clone()?;
    let tried = attempt(latest);
    if tried >= policy.max_attempts {
        return None;
    }
    let completed = status.completion_time.as_ref()?.0;
    let due = completed.checked_add(policy.backoff(tried)).unwrap_or(completed);
    let annotations = latest.metadata.annotations.clone().unwrap_or_default();
    let name = latest.metadata.name.clone().unwrap_or_default();
    let root = annotations.get(ROOT_ANNOTATION).cloned().unwrap_or_else(|| name.clone());
    let root_uid = annotations.get(ROOT_UID_ANNOTATION).cloned().unwrap_or_else(|| uid.clone());
    let next = tried + 1;
    let backup = serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1",
        "kind": "MysqlBackup",
        "metadata": {
            "name": names::retry_name(&uid, next),
            "namespace": latest.metadata.namespace,
            "labels": {
                labels::MANAGED_BY: labels::MANAGER,
                labels::GROUP: latest.spec.failover_group_ref.name,
                names::SCHEDULE_LABEL: schedule,
                names::RETRY_OF_LABEL: uid,
            },
            "annotations": {
                ROOT_ANNOTATION: root,
                ROOT_UID_ANNOTATION: root_uid,
                names::ATTEMPT_ANNOTATION: next.to_string(),
            },
        },
        "spec": {
            "failoverGroupRef": { "name": latest.spec.failover_group_ref.name },
            "profileName": latest.spec.profile_name,
        },
    }))
    .ok()?;
    Some(Successor { due, attempt: next, backup })
}

/// Whether `existing` (found at the successor's name) is the expected successor of the
/// predecessor with UID `predecessor_uid`.
pub fn matches_lineage(existing: &MysqlBackup, predecessor_uid: &str) -> bool {
    existing.metadata.labels.as_ref().and_then(|l| l.get(names::RETRY_OF_LABEL)).map(String::as_str)
        == Some(predecessor_uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(attempt: Option<&str>, schedule: Option<&str>) -> MysqlBackup {
        let mut labels = serde_json::Map::new();
        if let Some(schedule) = schedule {
            labels.insert(names::SCHEDULE_LABEL.into(), json!(schedule));
        }
        let mut annotations = serde_json::Map::new();
        if let Some(attempt) = attempt {
            annotations.insert(names::ATTEMPT_ANNOTATION.into(), json!(attempt));
        }
        serde_json::from_value(json!({
            "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
            "metadata": { "name": "nightly-1", "namespace": "orders", "uid": "u-1", "labels": labels, "annotations": annotations },
            "spec": { "failoverGroupRef": { "name": "orders" }, "profileName": "p" },
            "status": { "phase": "Failed", "completionTime": "2026-01-01T00:00:00Z" },
        }))
        .unwrap()
    }

    fn policy(max_attempts: i32) -> Policy {
        let spec: BackupRetrySpec = serde_json::from_value(json!({
            "maxAttempts": max_attempts, "initialBackoff": "1m", "maxBackoff": "3m",
        }))
        .unwrap();
        Policy::of(Some(&spec))
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = policy(5);
        let minutes: Vec<i64> = (1..=4).map(|n| policy.backoff(n).as_secs() / 60).collect();
        assert_eq!(minutes, vec![1, 2, 3, 3]);
        assert_eq!(
            Policy::of(None),
            Policy {
                max_attempts: 1,
                initial: SignedDuration::from_mins(1),
                max: SignedDuration::from_mins(30)
            }
        );
    }

    #[test]
    fn a_failed_scheduled_backup_gets_its_retry_with_lineage() {
        let next = successor(&failed(None, Some("nightly")), &policy(3)).expect("a retry");
        assert_eq!(next.attempt, 2);
        assert_eq!(next.due, "2026-01-01T00:01:00Z".parse::<Timestamp>().unwrap());
        let meta = &next.backup.metadata;
        assert_eq!(meta.name.as_deref(), Some(names::retry_name("u-1", 2).as_str()));
        let labels = meta.labels.as_ref().unwrap();
        assert_eq!(labels[names::RETRY_OF_LABEL], "u-1");
        assert_eq!(labels[names::SCHEDULE_LABEL], "nightly");
        let annotations = meta.annotations.as_ref().unwrap();
        assert_eq!(annotations[ROOT_ANNOTATION], "nightly-1");
        assert_eq!(annotations[names::ATTEMPT_ANNOTATION], "2");
        assert!(matches_lineage(&next.backup, "u-1"));
        assert!(!matches_lineage(&next.backup, "u-2"));
        // The second retry waits twice as long.
        let second = successor(&failed(Some("2"), Some("nightly")), &policy(3)).unwrap();
        assert_eq!(second.due, "2026-01-01T00:02:00Z".parse::<Timestamp>().unwrap());
    }

    #[test]
    fn no_retry_for_ad_hoc_backups_or_past_max_attempts() {
        assert!(successor(&failed(None, None), &policy(3)).is_none());
        assert!(successor(&failed(Some("3"), Some("nightly")), &policy(3)).is_none());
        assert!(successor(&failed(None, Some("nightly")), &Policy::of(None)).is_none());
    }
}
