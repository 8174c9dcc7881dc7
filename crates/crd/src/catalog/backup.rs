//! `MysqlBackup` tokens outside artifact cleanup: the `MetadataComplete` and `Ready` reasons,
//! the backup Events, and the refusal of a read-only profile's backups.

use super::{
    Entry,
    Waiting::{Clears, Never, NothingToClear, Sometimes},
    entry,
};

/// Where a `MetadataComplete=False` backup stands when the destination is known.
const LOCATION_USABLE: &str = "The backup keeps its phase; status.artifactStorage.location remains usable, and restore, verification and cleanup use it.";

pub(super) static METADATA_REASONS: &[Entry] = &[
    entry(
        "SentinelUnavailable",
        Sometimes,
        "The completion sentinel was not collected from the backup Job's logs, so the optional observations (size, GTID, binlog position) may be absent.",
        LOCATION_USABLE,
        "Nothing for the backup's use. While the logs are temporarily unavailable the operator retries the collection every 15 seconds for up to ten minutes after completion, also across restarts.",
    ),
    entry(
        "SentinelMissing",
        Never,
        "The backup Job's logs were read but carry no usable completion sentinel, so the optional observations (size, GTID, binlog position) may be absent.",
        LOCATION_USABLE,
        "Nothing for the backup's use; logs that carry no usable sentinel end the collection.",
    ),
    entry(
        "LocationMismatch",
        Never,
        "The completion sentinel named another location than the recorded destination.",
        "The recorded destination is kept and the sentinel's is ignored; restore, verification and cleanup use status.artifactStorage.location.",
        "Do not edit status.artifactStorage.location by hand; it is the artifact's identity.",
    ),
    entry(
        "DestinationUnavailable",
        Sometimes,
        "Neither the status nor the producing Job supplied a destination for the backup's artifact (a Job whose destination depends on a Secret or field reference yields none).",
        "On first completion the backup is Ready=False and the operator retries with an error. An already-Succeeded backup records the condition once and retention and deletion proceed: deleting it runs no cleanup, releases the finalizer and emits ArtifactCleanupSkipped naming the producing Job.",
        "Inspect storage by hand for the unlocated artifact, which may remain; deletion does not guess a cleanup path.",
    ),
];

pub(super) static PROFILE_REFUSALS: &[Entry] = &[entry(
    "ProfileReadOnly",
    Sometimes,
    "The backup profile is a read-only archive profile and cannot run backups: a restore reading its archive has not succeeded, its read binding keeps another group's UID (a restore from the source group's archive), or after a successful restore its destination has no binding at all.",
    "The profile's backups do not run; its archive is only read.",
    "While the restore runs, its success lifts the refusal unless the archive belongs to another group. Otherwise give the group a profile on its own prefix for its own backups and archive; a binding that keeps another group's UID holds until you release it.",
)];

/// What the operator does while a backup waits.
const PENDING_LEFT: &str =
    "The backup stays Pending with Ready=False; no Job exists yet and nothing was written.";

pub(super) static READY_REASONS: &[Entry] = &[
    entry(
        "WaitingForHealthySource",
        Sometimes,
        "No site is a healthy dump source: every replica is unreachable, not replicating or lagging beyond maxLagSecondsForSource, and the primary is unreachable.",
        PENDING_LEFT,
        "Usually a failover window that clears by itself. Otherwise restore a replica or the primary; past 30 minutes the backup fails with NoHealthySource.",
    ),
    entry(
        "NoHealthySource",
        Never,
        "No usable dump source: a pinned spec.sourceSite cannot be used, or none became healthy within 30 minutes.",
        "The backup is Failed; no Job ran. Retention can prune it.",
        "Fix the site or drop spec.sourceSite, then create a new backup (a schedule's retry does this for scheduled backups).",
    ),
    entry(
        "BackupJobConflict",
        Sometimes,
        "A Job with the backup Job's name exists and is not owned by this backup.",
        PENDING_LEFT,
        "Delete or rename the foreign Job. Past 30 minutes pending the backup fails with PendingTimedOut.",
    ),
    entry(
        "PITRArchiveRolloutPending",
        Sometimes,
        "The group's PITR archive is still rolling out to the sites, so the backup cannot yet be tied to the archive it replays from.",
        PENDING_LEFT,
        "Wait for the sites' ordered update. Past 30 minutes pending the backup fails with PendingTimedOut.",
    ),
    entry(
        "DumpKeySnapshotConflict",
        Sometimes,
        "The dump-key snapshot Secret of an encrypted backup exists with other contents or another owner.",
        PENDING_LEFT,
        "Remove the conflicting Secret if it is not another backup's key. Past 30 minutes pending the backup fails with PendingTimedOut.",
    ),
    entry(
        "PassphraseSecretMissing",
        Sometimes,
        "The profile encrypts, and its passphrase Secret or key is missing.",
        PENDING_LEFT,
        "Create the Secret the profile names. Past 30 minutes pending the backup fails with PendingTimedOut.",
    ),
    entry(
        "PendingTimedOut",
        Never,
        "The backup waited 30 minutes for one of the pending reasons; the message names the wait (pending for <duration> (<reason>): <message>).",
        "The backup is Failed; no Job ran. Retention can prune it.",
        "Clear the named cause and create a new backup.",
    ),
    entry(
        "Running",
        Clears,
        "The backup Job is running.",
        "A Job dumps the source site into the recorded destination; status.artifactStorage is recorded.",
        "Nothing; the reason changes when the Job ends.",
    ),
    entry(
        "BuildJobFailed",
        Never,
        "No backup Job could be built: the profile is incomplete (no bucket, claim or credentials Secret), or a replacement Job would not write to the destination recorded at launch.",
        "The backup is Failed and nothing was written by a new Job.",
        "Fix the profile, then create a new backup.",
    ),
    entry(
        "DestinationMismatch",
        Never,
        "The backup Job succeeded but wrote somewhere other than the destination recorded in status.artifactStorage, which therefore holds no artifact.",
        "The backup is Failed with a BackupFailed Event.",
        "Inspect both locations, delete the stray artifact by hand, and create a new backup.",
    ),
    entry(
        "BackupFailed",
        Never,
        "The backup Job failed (our token: the spec names only the Event): mysqldump, the store, the stamp or the credentials failed; the message carries the Job's error line.",
        "The backup is Failed. The destination may hold a partial artifact without @.done.json, which readers refuse as unfinished.",
        "Read the Job's log (kubectl logs job/mysqlbackup-<name>) and fix the cause; a schedule's retry creates the next attempt, an ad-hoc backup needs a new one.",
    ),
];

pub(super) static EVENTS: &[Entry] = &[
    entry(
        "BackupStarted",
        NothingToClear,
        "The backup Job was created (Normal Event on the MysqlBackup).",
        "The Job runs against the selected source; the destination is recorded.",
        "Nothing.",
    ),
    entry(
        "BackupSucceeded",
        NothingToClear,
        "The backup Job finished and the artifact is complete (Normal Event on the MysqlBackup).",
        "The backup is Succeeded; retention runs over the profile's backups.",
        "Nothing.",
    ),
    entry(
        "BackupFailed",
        Never,
        "The backup failed (Warning Event on the MysqlBackup); the message names the cause.",
        "The backup is Failed; the Ready reason says why.",
        "Fix the cause named in the message; a schedule retries by spec.backup.retry.",
    ),
    entry(
        "BackupMetadataIncomplete",
        Sometimes,
        "The completion sentinel could not be collected or disagrees with the recorded destination (Warning Event on the MysqlBackup).",
        "The backup keeps its phase; status.artifactStorage.location remains usable.",
        "See the MetadataComplete condition's reason.",
    ),
    entry(
        "InFlightFailover",
        NothingToClear,
        "The active site changed while the backup was in flight (Warning Event on the MysqlBackup).",
        "The artifact is still a valid snapshot of the original source.",
        "Correlate with replication-gap alerts; nothing to fix in the backup.",
    ),
    entry(
        "BackupRetryScheduled",
        NothingToClear,
        "A failed scheduled backup will be retried after its backoff (Normal Event on the group).",
        "The failed backup is kept until its retry exists.",
        "Nothing; watch the retry.",
    ),
    entry(
        "BackupRetryConflict",
        Sometimes,
        "An object at a retry's deterministic name does not match the expected lineage (Warning Event on the group).",
        "That retry is skipped; other schedules continue. status.backupSchedules[].retryConflict names the object.",
        "Delete or rename the blocking object.",
    ),
];
