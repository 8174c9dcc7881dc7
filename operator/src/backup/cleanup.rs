//! Artifact cleanup of a deleted `MysqlBackup` (pure): what one pass does with a backup that
//! carries the `bloodraven.shipstream.io/mysqlbackup` finalizer and a deletion timestamp
//! (backup-and-restore document, "Artifact cleanup", "Keeping an artifact", "Failures and
//! retries"). [`decide`] takes what the pass observed and `now` and returns one [`Decision`];
//! [`super::cleanup_io`] observes and applies it.
//!
//! The order of the checks is the document's: a verification still reading the artifact holds
//! everything (`HeldByVerification`, also for Retain); Foreground/Orphan propagation waits for
//! the garbage collector; a backup that never succeeded first stops its producing Job; Retain
//! releases at once (`ArtifactRetained`); Delete records `cleanupStartTime` and runs the cleanup
//! Job `mysqlcleanup-<backup>` from the recorded destination, reads its verdict, and retries a
//! failed Job after 5 (transient) or 30 (refusal) minutes, forever. The finalizer goes only
//! after a verdict that the artifact is gone (or that there is nothing to delete).

use std::time::Duration;

use bloodraven_crd::backup::{ArtifactStorage, BackupPhase};
use bloodraven_crd::condition::ConditionReason;
use bloodraven_crd::group::StorageType;
use jiff::{SignedDuration, Timestamp};

/// A transient failure's retry delay (`CleanupFailed`).
pub const RETRY_TRANSIENT: SignedDuration = SignedDuration::from_mins(5);
/// A refusal's retry delay (`CleanupRejected`), also `CleanupJobInvalid`/`DestinationMismatch`.
pub const RETRY_REFUSED: SignedDuration = SignedDuration::from_mins(30);
/// How long a cleanup pod may sit unscheduled or in `ContainerCreating` before
/// `CleanupPending`.
pub const PENDING_GRACE: SignedDuration = SignedDuration::from_mins(1);
/// How long a never-succeeded backup's producer pods may take to stop before
/// `ProducerStopStuck`.
pub const PRODUCER_STOP_GRACE: SignedDuration = SignedDuration::from_mins(10);
/// The cleanup Job's `activeDeadlineSeconds`.
pub const JOB_DEADLINE_SECONDS: i64 = 600;
/// Exit code of a refusal.
pub const EXIT_REFUSED: i32 = 64;
/// The verdict line of a finished cleanup.
pub const COMPLETE: &str = "BLOODRAVEN_CLEANUP_COMPLETE";
/// The verdict line of a failed cleanup.
pub const FAILED: &str = "BLOODRAVEN_CLEANUP_FAILED";
/// The verdict line of a skipped (abandoned) cleanup.
pub const SKIPPED: &str = "BLOODRAVEN_CLEANUP_SKIPPED";

/// What the cleanup Job said on its log (or termination message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// `BLOODRAVEN_CLEANUP_COMPLETE objects=<n>`.
    Complete { objects: u64 },
    /// `BLOODRAVEN_CLEANUP_SKIPPED: <reason>`.
    Skipped(String),
    /// `BLOODRAVEN_CLEANUP_FAILED: <reason>`.
    Failed(String),
}

/// The last verdict line in `log`.
pub fn verdict(log: &str) -> Option<Verdict> {
    log.lines().rev().find_map(|line| {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix(COMPLETE) {
            let objects = rest.trim().strip_prefix("objects=")?.parse().ok()?;
            return Some(Verdict::Complete { objects });
        }
        if let Some(rest) = line.strip_prefix(SKIPPED) {
            return Some(Verdict::Skipped(rest.trim_start_matches(':').trim().to_owned()));
        }
        line.strip_prefix(FAILED)
            .map(|rest| Verdict::Failed(rest.trim_start_matches(':').trim().to_owned()))
    })
}

/// The cleanup Job as observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanupJob {
    /// No Job of the cleanup name (and none of its pods is running).
    Absent,
    /// A Job of the cleanup name that this backup does not own.
    Foreign { owner: String },
    /// Running or waiting to run. `waiting`: the pod's waiting reason (`ImagePullBackOff`,
    /// `CreateContainerConfigError`, …) or `None`; `stuck_since`: when the pod was created if it
    /// has not started.
    Active { waiting: Option<String>, stuck_since: Option<Timestamp>, started: bool },
    /// Completed; its verdict line if one could be read.
    Succeeded { verdict: Option<Verdict> },
    /// Failed at `finished`, with the container's exit code when recorded.
    Failed { exit_code: Option<i32>, message: String, finished: Timestamp },
    /// Deleted, its pods still stopping.
    Stopping,
}

/// Everything one pass looks at.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The backup's name.
    pub backup: String,
    /// `spec.deletionPolicy` is `Retain`.
    pub retain: bool,
    /// `status.phase`.
    pub phase: Option<BackupPhase>,
    /// `status.artifactStorage` (or what the producing Job recovered).
    pub artifact: Option<ArtifactStorage>,
    /// `status.cleanupStartTime`.
    pub cleanup_started: Option<Timestamp>,
    /// The metadata finalizers carry `foregroundDeletion`.
    pub foreground: bool,
    /// The metadata finalizers carry `orphan`.
    pub orphan: bool,
    /// A verification reading the artifact now (its name).
    pub read_by: Option<String>,
    /// The producing backup Job's pods still pending or running, and since when the operator
    /// asked it to stop (`None`: not asked yet).
    pub producer_running: Vec<String>,
    /// The producing backup Job still exists.
    pub producer_exists: bool,
    /// When the deletion was requested (`deletionTimestamp`).
    pub deleting_since: Timestamp,
    /// The profile's S3 credentials Secret when the recorded storage is S3 (`None`: the
    /// profile, or its `credentialsSecretName`, is gone).
    pub s3_credentials: Option<String>,
    /// The cleanup Job.
    pub job: CleanupJob,
    /// A cleanup pod labelled with this backup is still pending or running (Retain waits).
    pub cleanup_pod_running: bool,
    pub now: Timestamp,
}

/// An Event to publish on the backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
}

impl Note {
    fn normal(reason: &'static str, message: String) -> Self {
        Note { warning: false, reason, message }
    }

    fn warning(reason: &'static str, message: String) -> Self {
        Note { warning: true, reason, message }
    }
}

/// What the pass does.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Remove the finalizer (the ArtifactCleanup condition is cleared), publishing `note`.
    Release { note: Note },
    /// Record `cleanupStartTime` (when unset) and create the cleanup Job.
    CreateJob { note: Note },
    /// Delete the failed cleanup Job so a fresh one can run.
    ReplaceJob { note: Note },
    /// Delete the producing backup Job (a never-succeeded backup) and wait for its pods.
    StopProducer { waiting: Option<(ConditionReason, String)>, note: Option<Note> },
    /// Wait: set the ArtifactCleanup condition (`None`: clear it), publish `note` if the
    /// condition's message changed, and look again after `requeue`.
    Wait { condition: Option<(ConditionReason, String)>, note: Option<Note>, requeue: Duration },
}

fn minutes(delay: SignedDuration) -> String {
    format!("{} minutes", delay.as_secs() / 60)
}

fn to_std(delay: SignedDuration) -> Duration {
    Duration::from_secs(delay.as_secs().max(1).unsigned_abs())
}

/// Why no cleanup Job can be built from `artifact` (`CleanupJobInvalid`).
pub fn invalid_destination(artifact: &ArtifactStorage) -> Option<String> {
    match &artifact.type_ {
        Some(StorageType::S3) if artifact.bucket.as_deref().unwrap_or("").is_empty() => {
            Some("the recorded S3 destination has no bucket".to_owned())
        }
        Some(StorageType::Pvc) if artifact.claim_name.as_deref().unwrap_or("").is_empty() => {
            Some("the recorded PVC destination has no claim".to_owned())
        }
        Some(StorageType::S3 | StorageType::Pvc) => None,
        Some(other) => Some(format!("the recorded storage type {} is unknown", other.as_str())),
        None => Some("the recorded destination has no storage type".to_owned()),
    }
}

/// Why `artifact.location` is not this backup's (`DestinationMismatch`).
pub fn destination_mismatch(backup: &str, artifact: &ArtifactStorage) -> Option<String> {
    let location = artifact.location.as_deref().unwrap_or("");
    let last = location.rsplit('/').next().unwrap_or("");
    if last != backup {
        return Some(format!(
            "status.artifactStorage.location {location:?} does not end with the backup's name {backup}"
        ));
    }
    match &artifact.type_ {
        Some(StorageType::S3) => {
            let bucket = artifact.bucket.as_deref().unwrap_or("");
            (!location.starts_with(&format!("s3://{bucket}/"))).then(|| {
                format!("status.artifactStorage.location {location:?} is not in the recorded bucket {bucket}")
            })
        }
        Some(StorageType::Pvc) => (!location.starts_with("/backups/"))
            .then(|| format!("status.artifactStorage.location {location:?} is not under /backups")),
        _ => None,
    }
}

/// One pass over a deleted backup.
pub fn decide(input: &Input) -> Decision {
    let now = input.now;
    if let Some(verification) = &input.read_by {
        let message = format!(
            "the verification {verification} is reading the artifact; cleanup waits for its run to stop"
        );
        return Decision::Wait {
            condition: Some((ConditionReason::HeldByVerification, message.clone())),
            note: Some(Note::normal("ArtifactCleanupDeferred", message)),
            requeue: Duration::from_secs(30),
        };
    }
    if input.foreground || input.orphan {
        let (reason, policy) = if input.foreground {
            (ConditionReason::ForegroundDeletion, "Foreground")
        } else {
            (ConditionReason::OrphanDeletion, "Orphan")
        };
        let message = format!(
            "the backup was deleted with propagationPolicy={policy}; cleanup waits for the garbage collector"
        );
        return Decision::Wait {
            condition: Some((reason, message)),
            note: None,
            requeue: Duration::from_secs(10),
        };
    }
    let succeeded = input.phase == Some(BackupPhase::Succeeded);
    if !succeeded && (input.producer_exists || !input.producer_running.is_empty()) {
        // Abandoned mode: stop the producing Job before touching its location.
        let stuck =
            now >= input.deleting_since + PRODUCER_STOP_GRACE && !input.producer_running.is_empty();
        let waiting = stuck.then(|| {
            (
                ConditionReason::ProducerStopStuck,
                format!(
                    "the producing backup Job's pods have not stopped after 10 minutes: {}",
                    input.producer_running.join(", ")
                ),
            )
        });
        let note = waiting.as_ref().map(|(_, message)| {
            Note::warning("ArtifactCleanupStalledProducerStop", message.clone())
        });
        return Decision::StopProducer { waiting, note };
    }
    if input.retain && input.cleanup_started.is_none() {
        if input.cleanup_pod_running {
            return Decision::Wait {
                condition: None,
                note: None,
                requeue: Duration::from_secs(10),
            };
        }
        let location = input
            .artifact
            .as_ref()
            .and_then(|a| a.location.clone())
            .unwrap_or_else(|| "an unrecorded location".to_owned());
        let secret = input
            .artifact
            .as_ref()
            .and_then(|a| a.passphrase_secret_key_ref.as_ref())
            .and_then(|r| r.name.clone());
        let message = match secret {
            Some(secret) => format!(
                "deletionPolicy is Retain: the artifact at {location} and the dump-key snapshot Secret {secret} are kept"
            ),
            None => format!("deletionPolicy is Retain: the artifact at {location} is kept"),
        };
        return Decision::Release { note: Note::normal("ArtifactRetained", message) };
    }
    let late_retain = if input.retain {
        "; deletionPolicy was changed to Retain after the cleanup started, so it was not applied"
    } else {
        ""
    };
    let Some(artifact) = input.artifact.as_ref().filter(|a| a.location.is_some()) else {
        let message = if succeeded {
            "no recorded artifact destination; the artifact, if any, stays in storage and needs separate inspection".to_owned()
        } else {
            "the backup never recorded a destination; nothing to clean up".to_owned()
        };
        return Decision::Release { note: Note::warning("ArtifactCleanupSkipped", message) };
    };
    if let Some(why) = invalid_destination(artifact) {
        return blocked(ConditionReason::CleanupJobInvalid, why, RETRY_REFUSED);
    }
    if let Some(why) = destination_mismatch(&input.backup, artifact) {
        return blocked(ConditionReason::DestinationMismatch, why, RETRY_REFUSED);
    }
    if artifact.type_ == Some(StorageType::S3) && input.s3_credentials.is_none() {
        return blocked(
            ConditionReason::CredentialsUnavailable,
            "the profile has no S3 credentialsSecretName; the cleanup Job needs the bucket's keys"
                .to_owned(),
            SignedDuration::from_mins(5),
        );
    }
    let location = artifact.location.clone().unwrap_or_default();
    match &input.job {
        CleanupJob::Absent => {
            let retry = input.cleanup_started.is_some();
            let message = format!("created the cleanup Job for {location}");
            let note = if retry {
                Note::normal("ArtifactCleanupRetry", message)
            } else {
                Note::normal("ArtifactCleanupStarted", message)
            };
            Decision::CreateJob { note }
        }
        CleanupJob::Stopping => {
            Decision::Wait { condition: None, note: None, requeue: Duration::from_secs(5) }
        }
        CleanupJob::Foreign { owner } => blocked(
            ConditionReason::CleanupJobConflict,
            format!("a Job named for this backup's cleanup is owned by {owner}"),
            SignedDuration::from_secs(30),
        ),
        CleanupJob::Active { waiting, stuck_since, started } => {
            if let Some(waiting) = waiting {
                let message = format!("the cleanup pod cannot start: {waiting}");
                return Decision::Wait {
                    condition: Some((ConditionReason::CleanupPending, message.clone())),
                    note: Some(Note::warning(
                        "ArtifactCleanupBlocked",
                        format!("CleanupPending: {message}"),
                    )),
                    requeue: Duration::from_secs(10),
                };
            }
            if let Some(since) =
                stuck_since.filter(|since| !started && now >= *since + PENDING_GRACE)
            {
                let message = format!("the cleanup pod has not started since {since}");
                return Decision::Wait {
                    condition: Some((ConditionReason::CleanupPending, message.clone())),
                    note: Some(Note::warning(
                        "ArtifactCleanupBlocked",
                        format!("CleanupPending: {message}"),
                    )),
                    requeue: Duration::from_secs(10),
                };
            }
            Decision::Wait { condition: None, note: None, requeue: Duration::from_secs(5) }
        }
        CleanupJob::Succeeded { verdict } => match verdict {
            Some(Verdict::Complete { objects: 0 }) => Decision::Release {
                note: Note::warning(
                    "ArtifactCleanupNothingFound",
                    format!(
                        "nothing was found at {location}; check that the backup really was written there{late_retain}"
                    ),
                ),
            },
            Some(Verdict::Complete { objects }) => Decision::Release {
                note: Note::normal(
                    "ArtifactCleanupSucceeded",
                    format!("deleted {objects} objects at {location}{late_retain}"),
                ),
            },
            Some(Verdict::Skipped(reason)) => Decision::Release {
                note: Note::warning(
                    "ArtifactCleanupSkipped",
                    format!("{reason}; nothing was deleted"),
                ),
            },
            Some(Verdict::Failed(reason)) => Decision::Release {
                note: Note::normal(
                    "ArtifactCleanupSucceeded",
                    format!("the cleanup Job completed ({reason}){late_retain}"),
                ),
            },
            None => Decision::Release {
                note: Note::normal(
                    "ArtifactCleanupSucceeded",
                    format!(
                        "the cleanup Job completed for {location} (its object count could not be read){late_retain}"
                    ),
                ),
            },
        },
        CleanupJob::Failed { exit_code, message, finished } => {
            let (reason, delay) = if *exit_code == Some(EXIT_REFUSED) {
                (ConditionReason::CleanupRejected, RETRY_REFUSED)
            } else {
                (ConditionReason::CleanupFailed, RETRY_TRANSIENT)
            };
            let next = *finished + delay;
            if now >= next {
                return Decision::ReplaceJob {
                    note: Note::normal(
                        "ArtifactCleanupRetry",
                        format!("replacing the failed cleanup Job ({})", reason.as_str()),
                    ),
                };
            }
            let exit =
                exit_code.map_or_else(|| "no recorded exit".to_owned(), |c| format!("exit {c}"));
            let text = format!(
                "the cleanup Job failed at {finished} ({exit}): {message}; the next attempt is at {next} ({}){late_retain}",
                minutes(delay)
            );
            Decision::Wait {
                condition: Some((reason, text.clone())),
                note: Some(Note::warning("ArtifactCleanupFailed", text)),
                requeue: to_std(next.duration_since(now).max(SignedDuration::from_secs(1))),
            }
        }
    }
}

fn blocked(reason: ConditionReason, message: String, every: SignedDuration) -> Decision {
    Decision::Wait {
        note: Some(Note::warning(
            "ArtifactCleanupBlocked",
            format!("{}: {message}", reason.as_str()),
        )),
        condition: Some((reason, message)),
        requeue: to_std(every),
    }
}

#[cfg(test)]
#[path = "cleanup_tests.rs"]
mod tests;
