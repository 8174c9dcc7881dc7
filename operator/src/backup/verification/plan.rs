//! A verification's decisions (pure): which backup it reads, whether it may start, and its
//! status from its Job's state and log's verdict.
//!
//! Verified condition reasons (the spec's PITR step-2 tokens pass through from the Job):
//!
//! | reason | status | when |
//! | --- | --- | --- |
//! | [`IN_PROGRESS`] | Unknown | the Job runs |
//! | [`RESTORE_VERIFIED`] | True | mode None: the Job succeeded and its last line is `BLOODRAVEN_VERIFY_COMPLETE` |
//! | the verdict's outcome (`TargetCovered`, `Latest`) | True | mode Timestamp/Latest: as above, and the main container's `BLOODRAVEN_PITR_VERDICT` accepted ([`next_status_pitr`]) |
//! | a Job token (`PITRBackupIncomplete`, `PITRBackupIdentityMismatch`, `BackupArtifactDamaged`, `RestoreFailed`, a PITR step's token, …) | False | the earliest failing step's `<Token>: <message>`, or the Job's `BLOODRAVEN_VERIFY_FAILED <Token>: <message>` |
//! | `PITRCoverageInvalid` | False | mode Timestamp/Latest: the Job succeeded without a verdict that matches what was rendered |
//! | [`VERIFICATION_FAILED`] | False | the Job failed (or succeeded) without a verdict line |
//! | [`BACKUP_NOT_FOUND`], [`BACKUP_NOT_SUCCEEDED`] | False | no backup to read (before any Job) |
//! | `PITRTargetInvalid`, `PITRBackupIdentityUnknown` | False | mode Timestamp/Latest refused before any Job ([`point_in_time`]) |

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::condition::{Condition, ConditionReason, ConditionStatus, ConditionType};
use bloodraven_crd::group::{BackupProfile, PitrToken, PointInTimeMode};
use bloodraven_crd::verification::{
    MysqlBackupVerification, MysqlBackupVerificationStatus, VerificationPhase, VerifiedBackup,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::backup::verdict::{JobState, set_condition};
use crate::restore::bootstrap::pitr::{Expected, accept, refusal_in};

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

/// What a point-in-time verification replays, once its refusals before any Job passed.
#[derive(Debug, Clone, PartialEq)]
pub struct PointInTimeRequest {
    /// `pointInTime.stopTime` of mode Timestamp; empty: mode Latest (the archive head).
    pub stop_time: String,
    /// `pointInTime.excludeGtids` as written ("" when unset).
    pub exclude_gtids: String,
    /// The group's own archive: its `spec.backup.pitr.profileName` profile.
    pub archive_profile: BackupProfile,
}

/// A point-in-time verification refused before any Job: the Verified reason and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {message}")]
pub struct PointInTimeRefusal {
    /// The Verified reason (a PITR token, or [`VERIFICATION_FAILED`]).
    pub reason: String,
    /// What failed and what to do.
    pub message: String,
}

fn pitr_refusal(token: PitrToken, message: String) -> PointInTimeRefusal {
    PointInTimeRefusal { reason: token.as_str().to_owned(), message }
}

/// The refusals of `spec.pointInTime` before any Job, in the document's order (a backup without
/// a source group UID PITRBackupIdentityUnknown; an unparsable or fractional target, a bad
/// excludeGtids, or a group whose `spec.backup.pitr` is disabled PITRTargetInvalid), and the
/// group's own archive profile. `Ok(None)`: mode None, no replay. `group` is the group
/// `spec.failoverGroupRef` names (`None`: not found).
pub fn point_in_time(
    verification: &MysqlBackupVerification,
    backup: &MysqlBackup,
    group: Option<&MysqlFailoverGroup>,
) -> Result<Option<PointInTimeRequest>, PointInTimeRefusal> {
    let Some(spec) = verification.spec.point_in_time.as_ref() else { return Ok(None) };
    let stop_time = match spec.mode {
        PointInTimeMode::None => return Ok(None),
        PointInTimeMode::Latest => String::new(),
        PointInTimeMode::Timestamp => match spec.stop_time.as_deref() {
            Some(stop) if !stop.is_empty() => stop.to_owned(),
            _ => {
                return Err(pitr_refusal(
                    PitrToken::PitrTargetInvalid,
                    "pointInTime.mode Timestamp needs pointInTime.stopTime; set a whole second in RFC 3339, e.g. 2026-04-15T09:30:00Z".to_owned(),
                ));
            }
        },
        PointInTimeMode::Unrecognized(ref other) => {
            return Err(pitr_refusal(
                PitrToken::PitrTargetInvalid,
                format!("pointInTime.mode {other:?} is not None, Latest or Timestamp; correct it"),
            ));
        }
    };
    let backup_name = backup.metadata.name.clone().unwrap_or_default();
    let source_uid = backup.status.as_ref().and_then(|s| s.failover_group_uid.as_deref());
    if source_uid.is_none_or(str::is_empty) {
        return Err(pitr_refusal(
            PitrToken::PitrBackupIdentityUnknown,
            format!(
                "MysqlBackup {backup_name} records no source failover group UID (status.failoverGroupUID), so its dump has no stamp to tie it to the archive; take a new full backup and verify that one"
            ),
        ));
    }
    let exclude_gtids = spec.exclude_gtids.clone().unwrap_or_default();
    let request = bloodraven_pitr::Request {
        target: Some(stop_time.clone()).filter(|stop| !stop.is_empty()),
        exclude_gtids: exclude_gtids.clone(),
        allow_partial: false,
    };
    if let Err(refusal) = bloodraven_pitr::check_request(&request) {
        return Err(PointInTimeRefusal {
            reason: refusal.token.as_str().to_owned(),
            message: refusal.message,
        });
    }
    let group_name = &verification.spec.failover_group_ref.name;
    let pitr = group
        .and_then(|g| g.spec.backup.as_ref())
        .and_then(|b| b.pitr.as_ref())
        .filter(|pitr| pitr.enabled == Some(true));
    let Some(profile_name) = pitr.and_then(|pitr| pitr.profile_name.clone()) else {
        return Err(pitr_refusal(
            PitrToken::PitrTargetInvalid,
            format!(
                "group {group_name} has spec.backup.pitr disabled (or is gone), so it has no archive to replay; enable PITR on the group, or verify with pointInTime.mode None"
            ),
        ));
    };
    let Some(archive_profile) = group
        .and_then(|g| g.spec.backup.as_ref())
        .and_then(|b| b.profiles.iter().find(|p| p.name == profile_name))
        .cloned()
    else {
        return Err(pitr_refusal(
            PitrToken::PitrTargetInvalid,
            format!(
                "group {group_name}'s spec.backup.pitr.profileName {profile_name} names no spec.backup.profiles entry; declare it"
            ),
        ));
    };
    if archive_profile.encryption.is_some() {
        return Err(PointInTimeRefusal {
            reason: VERIFICATION_FAILED.to_owned(),
            message: format!(
                "group {group_name}'s archive profile {profile_name} is encrypted; this operator does not build the archive's read binding (its key snapshot) for a verification yet. Verify with pointInTime.mode None"
            ),
        });
    }
    Ok(Some(PointInTimeRequest { stop_time, exclude_gtids, archive_profile }))
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

/// What a point-in-time verification's finished Job showed, besides its log.
#[derive(Debug, Clone, Copy, Default)]
pub struct PitrObserved<'a> {
    /// The main container's termination message, when it terminated with exit code 0 in the
    /// Job's pod (the `BLOODRAVEN_PITR_VERDICT`).
    pub verdict: Option<&'a str>,
    /// The earliest failing container's message (an init step's refusal first).
    pub failure: Option<&'a str>,
}

/// [`next_status`] for a Job with PITR steps (`expected`: what it rendered,
/// [`Expected::from_job`]). Succeeded only when the log's COMPLETE line is there AND the
/// verdict is accepted (status.pointInTime, Verified=True with the outcome as reason);
/// a verdict not accepted is PITRCoverageInvalid; a failed Job records the earliest failing
/// step's token, else the log's FAILED line.
pub fn next_status_pitr(
    current: &MysqlBackupVerificationStatus,
    state: &JobState,
    expected: &Expected,
    log: Option<&str>,
    observed: PitrObserved<'_>,
    now: &Time,
) -> MysqlBackupVerificationStatus {
    let terminal =
        matches!(current.phase, Some(VerificationPhase::Succeeded | VerificationPhase::Failed));
    let mut next = next_status(current, state, log, now);
    if terminal || matches!(state, JobState::Active { .. }) {
        return next;
    }
    let job = current.job_name.clone().unwrap_or_default();
    let target =
        if expected.latest() { "the archive head".to_owned() } else { expected.stop_time.clone() };
    let (phase, condition, message, result) = match state {
        JobState::Succeeded { .. } => {
            match (accept(expected, observed.verdict), log.and_then(find_verdict)) {
                (Ok(result), Some(Verdict::Complete(detail))) => {
                    let outcome = result.outcome.as_ref().map_or("", |o| o.as_str()).to_owned();
                    let message = format!(
                        "the backup loaded into a scratch server, replayed {} archived transaction(s) to {target} ({outcome}) and proved the certified GTID set ({detail})",
                        result.transactions.unwrap_or(0)
                    );
                    (
                        VerificationPhase::Succeeded,
                        verified(ConditionStatus::True, &outcome, message.clone(), now),
                        message,
                        Some(result),
                    )
                }
                (Ok(_), other) => {
                    let message = match other {
                        Some(Verdict::Failed { message, .. }) => message,
                        _ => format!(
                            "the verification Job {job} printed no {VERIFY_COMPLETE} line (tables unchecked); nothing was proved"
                        ),
                    };
                    (
                        VerificationPhase::Failed,
                        verified(ConditionStatus::False, VERIFICATION_FAILED, message.clone(), now),
                        message,
                        None,
                    )
                }
                (Err(why), _) => {
                    let token = PitrToken::PitrCoverageInvalid.as_str();
                    let message = format!(
                        "{token}: {why} (verification Job {job}); create a new verification"
                    );
                    (
                        VerificationPhase::Failed,
                        verified(ConditionStatus::False, token, message.clone(), now),
                        message,
                        None,
                    )
                }
            }
        }
        JobState::Failed { .. } => {
            let Some((token, line)) = observed.failure.and_then(refusal_in) else {
                // No PITR token in the failing step's message: the log's FAILED line (or
                // VerificationFailed), as mode None.
                return next;
            };
            let message = format!("{line} (verification Job {job})");
            (
                VerificationPhase::Failed,
                verified(ConditionStatus::False, token.as_str(), message.clone(), now),
                message,
                None,
            )
        }
        JobState::Active { .. } => return next,
    };
    next.phase = Some(phase);
    next.message = Some(message);
    next.point_in_time = result;
    set_condition(&mut next.conditions, condition);
    next
}

/// The Warning Events of an accepted replay on the verification (the bootstrap restore's).
pub fn pitr_warnings(status: &MysqlBackupVerificationStatus) -> Vec<(&'static str, String)> {
    status
        .point_in_time
        .as_ref()
        .map(crate::restore::bootstrap::io::replay_warnings)
        .unwrap_or_default()
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
        assert_eq!(chosen(select_backup(&pitr, &backups)), "ok");
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
