//! A backup Job's state and its log's completion sentinel → the backup's status (pure).
//!
//! Terminal observations are stable: a backup that already has a `completionTime` keeps it,
//! so re-reconciling a terminal backup changes nothing (the basis for emitting terminal
//! Events and metrics exactly once: emit when the phase changes).

use bloodraven_backup::sentinel::Sentinel;
use bloodraven_crd::backup::{BackupPhase, MysqlBackupStatus};
use bloodraven_crd::condition::{Condition, ConditionReason, ConditionStatus, ConditionType};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The reason of a backup whose Job failed.
pub const JOB_FAILED: &str = "BackupFailed";

/// What the backup Job is doing.
#[derive(Debug, Clone, PartialEq)]
pub enum JobState {
    /// Created, not finished.
    Active { start: Option<Time> },
    /// The `Complete` condition is True.
    Succeeded { start: Option<Time>, completion: Option<Time> },
    /// The `Failed` condition is True.
    Failed { start: Option<Time>, completion: Option<Time>, message: String },
}

/// Reads a Job's status.
pub fn job_state(job: &Job) -> JobState {
    let status = job.status.clone().unwrap_or_default();
    let start = status.start_time.clone();
    for condition in status.conditions.unwrap_or_default() {
        if condition.status != "True" {
            continue;
        }
        match condition.type_.as_str() {
            "Complete" => {
                let completion =
                    status.completion_time.clone().or(condition.last_transition_time.clone());
                return JobState::Succeeded { start, completion };
            }
            "Failed" => {
                let message =
                    [condition.reason.unwrap_or_default(), condition.message.unwrap_or_default()]
                        .into_iter()
                        .filter(|part| !part.is_empty())
                        .collect::<Vec<_>>()
                        .join(": ");
                return JobState::Failed {
                    start,
                    completion: condition.last_transition_time,
                    message,
                };
            }
            _ => {}
        }
    }
    JobState::Active { start }
}

fn condition(
    type_: ConditionType,
    status: ConditionStatus,
    reason: Option<ConditionReason>,
    message: String,
    now: &Time,
) -> Condition {
    let mut condition = Condition::new(type_, status);
    condition.reason = reason;
    condition.message = (!message.is_empty()).then_some(message);
    condition.last_transition_time = Some(now.clone());
    condition
}

/// Sets `new` in `conditions`, keeping the old transition time when the status is unchanged.
pub fn set_condition(conditions: &mut Vec<Condition>, mut new: Condition) {
    if let Some(old) = conditions.iter_mut().find(|c| c.type_ == new.type_) {
        if old.status == new.status {
            new.last_transition_time = old.last_transition_time.clone();
        }
        *old = new;
    } else {
        conditions.push(new);
    }
}

/// The backup's next status from its Job's state and, for a finished Job, its log (`None`:
/// the log could not be read).
pub fn next_status(
    current: &MysqlBackupStatus,
    state: &JobState,
    log: Option<&str>,
    now: &Time,
) -> MysqlBackupStatus {
    let mut next = current.clone();
    let terminal = matches!(current.phase, Some(BackupPhase::Succeeded | BackupPhase::Failed));
    match state {
        JobState::Active { start } => {
            if terminal {
                return next;
            }
            next.phase = Some(BackupPhase::Running);
            next.start_time = next.start_time.clone().or(start.clone());
            let message = format!(
                "the backup Job {} is running",
                current.job_name.clone().unwrap_or_default()
            );
            set_condition(
                &mut next.conditions,
                condition(
                    ConditionType::Ready,
                    ConditionStatus::False,
                    Some(ConditionReason::Running),
                    message,
                    now,
                ),
            );
        }
        JobState::Failed { start, completion, message } => {
            next.phase = Some(BackupPhase::Failed);
            next.start_time = next.start_time.clone().or(start.clone());
            next.completion_time =
                next.completion_time.clone().or(completion.clone()).or(Some(now.clone()));
            let detail = log.and_then(last_error).unwrap_or_default();
            let message = [format!("the backup Job failed: {message}"), detail]
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            next.message = Some(message.clone());
            set_condition(
                &mut next.conditions,
                condition(
                    ConditionType::Ready,
                    ConditionStatus::False,
                    Some(ConditionReason::parse(JOB_FAILED)),
                    message,
                    now,
                ),
            );
        }
        JobState::Succeeded { start, completion } => {
            let Some(location) = current.artifact_storage.as_ref().and_then(|a| a.location.clone())
            else {
                set_condition(
                    &mut next.conditions,
                    condition(
                        ConditionType::MetadataComplete,
                        ConditionStatus::False,
                        Some(ConditionReason::DestinationUnavailable),
                        "no recorded artifact destination".to_owned(),
                        now,
                    ),
                );
                return next;
            };
            next.phase = Some(BackupPhase::Succeeded);
            next.start_time = next.start_time.clone().or(start.clone());
            next.completion_time =
                next.completion_time.clone().or(completion.clone()).or(Some(now.clone()));
            set_condition(
                &mut next.conditions,
                condition(
                    ConditionType::Ready,
                    ConditionStatus::True,
                    None,
                    format!("the backup is at {location}"),
                    now,
                ),
            );
            let metadata = match log.map(Sentinel::find_in) {
                None => condition(
                    ConditionType::MetadataComplete,
                    ConditionStatus::False,
                    Some(ConditionReason::SentinelUnavailable),
                    "the backup Job's log could not be read".to_owned(),
                    now,
                ),
                Some(None) => condition(
                    ConditionType::MetadataComplete,
                    ConditionStatus::False,
                    Some(ConditionReason::SentinelMissing),
                    "the backup Job's log carries no completion sentinel".to_owned(),
                    now,
                ),
                Some(Some(sentinel)) if sentinel.location != location => condition(
                    ConditionType::MetadataComplete,
                    ConditionStatus::False,
                    Some(ConditionReason::LocationMismatch),
                    format!(
                        "the sentinel names {}, the recorded destination is {location}",
                        sentinel.location
                    ),
                    now,
                ),
                Some(Some(sentinel)) => {
                    next.gtid_executed = sentinel.gtid_executed;
                    next.binlog_file = sentinel.binlog_file;
                    next.binlog_pos = sentinel.binlog_pos.and_then(|p| i64::try_from(p).ok());
                    next.size_bytes = sentinel.size_bytes.and_then(|s| i64::try_from(s).ok());
                    condition(
                        ConditionType::MetadataComplete,
                        ConditionStatus::True,
                        None,
                        String::new(),
                        now,
                    )
                }
            };
            set_condition(&mut next.conditions, metadata);
        }
    }
    next
}

/// The last `Error:` line of a failed step's log (anyhow's report), for the message.
fn last_error(log: &str) -> Option<String> {
    log.lines().rev().find(|line| line.starts_with("Error:")).map(|line| line.trim().to_owned())
}
