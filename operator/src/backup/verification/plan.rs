//! A verification's decisions (pure): which backup it reads, whether it may start, and its
//! status from its Job's state and log's verdict.
//!
//! Verified condition reasons (the spec's PITR step-2 tokens pass through from the Job):
//!
//! | reason | status | when |
//! | --- | --- | --- |
//! | [`IN_PROGRESS`] | Unknown | the Job runs |
//! | [`RESTORE_VERIFIED`] | True | the Job succeeded and its last line is `BLOODRAVEN_VERIFY_COMPLETE` |
//! | a Job token (`PITRBackupIncomplete`, `PITRBackupIdentityMismatch`, `BackupArtifactDamaged`, `RestoreFailed`, …) | False | the Job's `BLOODRAVEN_VERIFY_FAILED <Token>: <message>` |
//! | [`VERIFICATION_FAILED`] | False | the Job failed (or succeeded) without a verdict line |
//! | [`BACKUP_NOT_FOUND`], [`BACKUP_NOT_SUCCEEDED`] | False | no backup to read (before any Job) |
//! | [`POINT_IN_TIME_UNSUPPORTED`] | False | `pointInTime.mode` Latest/Timestamp (before any Job) |

use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::condition::{Condition, ConditionReason, ConditionStatus, ConditionType};
use bloodraven_crd::group::PointInTimeMode;
use bloodraven_crd::verification::{
    MysqlBackupVerification, MysqlBackupVerificationStatus, VerificationPhase, VerifiedBackup,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::backup::verdict::{JobState, set_condition};

/// Verified=Unknown while the Job runs.
pub const IN_PROGRESS: &str = "InProgress";
/// Verified=True: the backup loaded and proved its GTID set; every table checksummed.
pub const RESTORE_VERIFIED: &str = "RestoreVerified";
/// Verified=False: the Job ended without a verdict line.
pub const VERIFICATION_FAILED: &str = "VerificationFailed";
/// Verified=False: `spec.backupRef` names no MysqlBackup, or the profile has no Succeeded one.
pub const BACKUP_NOT_FOUND: &str = "BackupNotFound";
/// Verified=False: the named backup failed, or belongs to another group or profile.
pub const BACKUP_NOT_SUCCEEDED: &str = "BackupNotSucceeded";
/// Verified=False: point-in-time verification is not built yet.
pub const POINT_IN_TIME_UNSUPPORTED: &str = "PointInTimeUnsupported";

/// The success verdict's first word (the sidecar's `verify`).
pub const VERIFY_COMPLETE: &str = "BLOODRAVEN_VERIFY_COMPLETE";
/// The failure verdict's first word.
pub const VERIFY_FAILED: &str = "BLOODRAVEN_VERIFY_FAILED";

/// Which backup a verification reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// This one (Succeeded, of the verification's group and profile).
    Backup(Box<MysqlBackup>),
    /// The named backup has not finished yet: wait.
    Wait(String),
    /// None can be read: the verification fails with this reason.
    Refuse { reason: &'static str, message: String },
}

fn succeeded(backup: &MysqlBackup) -> bool {
    backup.status.as_ref().and_then(|s| s.phase.as_ref()) == Some(&BackupPhase::Succeeded)
}

fn completion(backup: &MysqlBackup) -> Option<jiff::Timestamp> {
    backup.status.as_ref().and_then(|s| s.completion_time.as_ref()).map(|t| t.0)
}

/// Chooses the backup: `spec.backupRef`, else the profile's newest Succeeded backup (by
/// completion time, then name). `backups` are the namespace's MysqlBackups.
pub fn select_backup(verification: &MysqlBackupVerification, backups: &[MysqlBackup]) -> Selection {
    let spec = &verification.spec;
    let group = &spec.failover_group_ref.name;
    if let Some(mode) = spec.point_in_time.as_ref().map(|p| &p.mode)
        && *mode != PointInTimeMode::None
    {
        return Selection::Refuse {
            reason: POINT_IN_TIME_UNSUPPORTED,
            message: format!(
                "pointInTime.mode {} is not supported by this operator yet; verify with mode None",
                mode.as_str()
            ),
        };
    }
    let ours = |backup: &&MysqlBackup| {
        backup.spec.failover_group_ref.name == *group
            && backup.spec.profile_name == spec.profile_name
    };
    if let Some(reference) = &spec.backup_ref {
        let Some(backup) =
            backups.iter().find(|b| b.metadata.name.as_ref() == Some(&reference.name))
        else {
            return Selection::Refuse {
                reason: BACKUP_NOT_FOUND,
                message: format!(
                    "spec.backupRef names MysqlBackup {}, which does not exist",
                    reference.name
                ),
            };
        };
        if !ours(&backup) {
            return Selection::Refuse {
                reason: BACKUP_NOT_SUCCEEDED,
                message: format!(
                    "MysqlBackup {} belongs to group {} profile {}, not {group} profile {}",
                    reference.name,
                    backup.spec.failover_group_ref.name,
                    backup.spec.profile_name,
                    spec.profile_name
                ),
            };
        }
        return match backup.status.as_ref().and_then(|s| s.phase.clone()) {
            Some(BackupPhase::Succeeded) => Selection::Backup(Box::new(backup.clone())),
            Some(BackupPhase::Failed) => Selection::Refuse {
                reason: BACKUP_NOT_SUCCEEDED,
                message: format!(
                    "MysqlBackup {} failed; only a Succeeded backup can be verified",
                    reference.name
                ),
            },
            phase => Selection::Wait(format!(
                "MysqlBackup {} is {}; the verification starts once it has Succeeded",
                reference.name,
                phase.as_ref().map_or("new", |p| p.as_str())
            )),
        };
    }
    let newest = backups.iter().filter(ours).filter(|b| succeeded(b)).max_by(|a, b| {
        completion(a).cmp(&completion(b)).then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    match newest {
        Some(backup) => Selection::Backup(Box::new(backup.clone())),
        None => Selection::Refuse {
            reason: BACKUP_NOT_FOUND,
            message: format!(
                "group {group} profile {} has no Succeeded MysqlBackup",
                spec.profile_name
            ),
        },
    }
}

/// The backup record a verification keeps in `status.backupRef`.
pub fn verified_backup(backup: &MysqlBackup) -> VerifiedBackup {
    VerifiedBackup {
        name: backup.metadata.name.clone(),
        uid: backup.metadata.uid.clone(),
        location: backup
            .status
            .as_ref()
            .and_then(|s| s.artifact_storage.as_ref())
            .and_then(|a| a.location.clone()),
        ..VerifiedBackup::default()
    }
}

fn verified(status: ConditionStatus, reason: &str, message: String, now: &Time) -> Condition {
    let mut condition = Condition::new(ConditionType::Verified, status);
    condition.reason = Some(ConditionReason::parse(reason));
    condition.message = (!message.is_empty()).then_some(message);
    condition.last_transition_time = Some(now.clone());
    condition
}

/// A verification that failed before any Job.
pub fn refused(
    current: &MysqlBackupVerificationStatus,
    reason: &str,
    message: String,
    now: &Time,
) -> MysqlBackupVerificationStatus {
    let mut next = current.clone();
    next.phase = Some(VerificationPhase::Failed);
    next.completion_time = next.completion_time.clone().or(Some(now.clone()));
    next.message = Some(message.clone());
    set_condition(&mut next.conditions, verified(ConditionStatus::False, reason, message, now));
    next
}

/// What the Job's log says: the last verdict line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// `BLOODRAVEN_VERIFY_COMPLETE …` (the rest of the line).
    Complete(String),
    /// `BLOODRAVEN_VERIFY_FAILED <Token>: <message>`.
    Failed { token: String, message: String },
}

/// The last verdict line of a Job log (`None`: no verdict).
pub fn find_verdict(log: &str) -> Option<Verdict> {
    log.lines().rev().find_map(|line| {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix(VERIFY_COMPLETE) {
            return Some(Verdict::Complete(rest.trim().to_owned()));
        }
        let rest = line.strip_prefix(VERIFY_FAILED)?.trim();
        let (token, message) = rest.split_once(": ").unwrap_or((rest, ""));
        let token = token.trim();
        let valid = !token.is_empty() && token.bytes().all(|b| b.is_ascii_alphanumeric());
        Some(Verdict::Failed {
            token: if valid { token.to_owned() } else { VERIFICATION_FAILED.to_owned() },
            message: message.to_owned(),
        })
    })
}

/// The verification's next status from its Job's state and, for a finished Job, its log
/// (`None`: unreadable). A terminal status never changes.
pub fn next_status(
    current: &MysqlBackupVerificationStatus,
    state: &JobState,
    log: Option<&str>,
    now: &Time,
) -> MysqlBackupVerificationStatus {
    let mut next = current.clone();
    if matches!(current.phase, Some(VerificationPhase::Succeeded | VerificationPhase::Failed)) {
        return next;
    }
    let job = current.job_name.clone().unwrap_or_default();
    let verdict = log.and_then(find_verdict);
    match state {
        JobState::Active { start } => {
            next.phase = Some(VerificationPhase::Restoring);
            next.start_time = next.start_time.clone().or(start.clone());
            set_condition(
                &mut next.conditions,
                verified(
                    ConditionStatus::Unknown,
                    IN_PROGRESS,
                    format!(
                        "the verification Job {job} is loading the backup into a scratch server"
                    ),
                    now,
                ),
            );
            return next;
        }
        JobState::Succeeded { start, completion } | JobState::Failed { start, completion, .. } => {
            next.start_time = next.start_time.clone().or(start.clone());
            next.completion_time =
                next.completion_time.clone().or(completion.clone()).or(Some(now.clone()));
        }
    }
    let (phase, condition, message) = match (state, verdict) {
        (JobState::Succeeded { .. }, Some(Verdict::Complete(detail))) => {
            let message = format!(
                "the backup loaded into a scratch server and proved its GTID set ({detail})"
            );
            (
                VerificationPhase::Succeeded,
                verified(ConditionStatus::True, RESTORE_VERIFIED, message.clone(), now),
                message,
            )
        }
        (_, Some(Verdict::Failed { token, message })) => {
            let message = if message.is_empty() {
                format!("the verification Job {job} failed")
            } else {
                message
            };
            (
                VerificationPhase::Failed,
                verified(ConditionStatus::False, &token, message.clone(), now),
                message,
            )
        }
        (JobState::Failed { message, .. }, _) => {
            let message = format!("the verification Job {job} failed without a verdict: {message}");
            (
                VerificationPhase::Failed,
                verified(ConditionStatus::False, VERIFICATION_FAILED, message.clone(), now),
                message,
            )
        }
        (_, _) => {
            let message = format!(
                "the verification Job {job} ended without a {VERIFY_COMPLETE} line; nothing was proved"
            );
            (
                VerificationPhase::Failed,
                verified(ConditionStatus::False, VERIFICATION_FAILED, message.clone(), now),
                message,
            )
        }
    };
    next.phase = Some(phase);
    next.message = Some(message);
    set_condition(&mut next.conditions, condition);
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Time {
        Time("2026-12-01T04:00:00Z".parse().unwrap())
    }

    fn backup(name: &str, profile: &str, phase: &str, completed: &str) -> MysqlBackup {
        serde_json::from_value(json!({
            "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
            "metadata": { "name": name, "namespace": "orders", "uid": format!("uid-{name}") },
            "spec": { "failoverGroupRef": { "name": "orders" }, "profileName": profile },
            "status": { "phase": phase, "completionTime": completed,
                        "artifactStorage": { "type": "PVC", "location": format!("/backups/{name}") } },
        }))
        .unwrap()
    }

    fn verification(spec: serde_json::Value) -> MysqlBackupVerification {
        let mut base = json!({ "failoverGroupRef": { "name": "orders" }, "profileName": "pvc" });
        for (key, value) in spec.as_object().unwrap() {
            base[key] = value.clone();
        }
        serde_json::from_value(json!({
            "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackupVerification",
            "metadata": { "name": "v1", "namespace": "orders" }, "spec": base,
        }))
        .unwrap()
    }

    fn chosen(selection: Selection) -> String {
        match selection {
            Selection::Backup(b) => b.metadata.name.unwrap(),
            other => panic!("no backup chosen: {other:?}"),
        }
    }

    #[test]
    fn the_newest_succeeded_backup_of_the_profile_is_read() {
        let backups = [
            backup("old", "pvc", "Succeeded", "2026-12-01T01:00:00Z"),
            backup("new", "pvc", "Succeeded", "2026-12-01T02:00:00Z"),
            backup("newer-failed", "pvc", "Failed", "2026-12-01T03:00:00Z"),
            backup("other-profile", "s3", "Succeeded", "2026-12-01T03:30:00Z"),
        ];
        assert_eq!(chosen(select_backup(&verification(json!({})), &backups)), "new");
        let none = select_backup(&verification(json!({ "profileName": "gone" })), &backups);
        assert!(matches!(none, Selection::Refuse { reason: BACKUP_NOT_FOUND, .. }), "{none:?}");
    }

    #[test]
    fn a_named_backup_is_read_waited_for_or_refused() {
        let backups = [
            backup("ok", "pvc", "Succeeded", "2026-12-01T01:00:00Z"),
            backup("running", "pvc", "Running", "2026-12-01T01:00:00Z"),
            backup("bad", "pvc", "Failed", "2026-12-01T01:00:00Z"),
            backup("s3", "s3", "Succeeded", "2026-12-01T01:00:00Z"),
        ];
        let named = |name: &str| {
            select_backup(&verification(json!({ "backupRef": { "name": name } })), &backups)
        };
        assert_eq!(chosen(named("ok")), "ok");
        assert!(matches!(named("running"), Selection::Wait(_)));
        assert!(matches!(named("bad"), Selection::Refuse { reason: BACKUP_NOT_SUCCEEDED, .. }));
        assert!(matches!(named("s3"), Selection::Refuse { reason: BACKUP_NOT_SUCCEEDED, .. }));
        assert!(matches!(named("gone"), Selection::Refuse { reason: BACKUP_NOT_FOUND, .. }));
        let pitr = verification(json!({ "pointInTime": { "mode": "Latest" } }));
        assert!(matches!(
            select_backup(&pitr, &backups),
            Selection::Refuse { reason: POINT_IN_TIME_UNSUPPORTED, .. }
        ));
    }

    fn reason(status: &MysqlBackupVerificationStatus) -> (ConditionStatus, String) {
        let c = status.conditions.iter().find(|c| c.type_ == ConditionType::Verified).unwrap();
        (c.status.clone(), c.reason.as_ref().unwrap().as_str().to_owned())
    }

    #[test]
    fn only_a_complete_line_of_a_succeeded_job_verifies() {
        let start = MysqlBackupVerificationStatus {
            job_name: Some("mysqlverify-v1".to_owned()),
            ..Default::default()
        };
        let done = JobState::Succeeded { start: None, completion: None };
        let failed = JobState::Failed {
            start: None,
            completion: None,
            message: "BackoffLimitExceeded".into(),
        };
        let log = "x\nBLOODRAVEN_VERIFY_TABLE app.t checksum=1\nBLOODRAVEN_VERIFY_COMPLETE gtidExecuted=a:1 tables=1\n";
        let ok = next_status(&start, &done, Some(log), &now());
        assert_eq!(ok.phase, Some(VerificationPhase::Succeeded));
        assert_eq!(reason(&ok), (ConditionStatus::True, RESTORE_VERIFIED.to_owned()));
        // Terminal stays terminal.
        assert_eq!(next_status(&ok, &failed, None, &now()), ok);

        let damaged = "BLOODRAVEN_VERIFY_FAILED BackupArtifactDamaged: the dump is damaged: chunk k\nError: verify failed";
        let bad = next_status(&start, &failed, Some(damaged), &now());
        assert_eq!(bad.phase, Some(VerificationPhase::Failed));
        assert_eq!(reason(&bad), (ConditionStatus::False, "BackupArtifactDamaged".to_owned()));
        assert_eq!(bad.message.as_deref(), Some("the dump is damaged: chunk k"));

        for (state, log) in [(&failed, None), (&done, Some("no verdict")), (&done, None)] {
            let none = next_status(&start, state, log, &now());
            assert_eq!(reason(&none), (ConditionStatus::False, VERIFICATION_FAILED.to_owned()));
        }
        let running = next_status(&start, &JobState::Active { start: None }, None, &now());
        assert_eq!(running.phase, Some(VerificationPhase::Restoring));
        assert_eq!(reason(&running), (ConditionStatus::Unknown, IN_PROGRESS.to_owned()));
    }
}
