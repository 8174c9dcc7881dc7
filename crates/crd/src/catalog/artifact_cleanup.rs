//! Artifact cleanup of deleted `MysqlBackup`s: condition reasons, Job verdicts and Events.

use super::{
    Entry,
    Waiting::{Clears, Never, NothingToClear, Sometimes},
    entry,
};

/// Where a blocked cleanup leaves the backup.
const TERMINATING: &str =
    "The MysqlBackup stays Terminating with its finalizer; the artifact is still in storage.";

pub(super) static REASONS: &[Entry] = &[
    entry(
        "CleanupFailed",
        Sometimes,
        "The cleanup Job failed transiently: exit 75, a crash, its deadline, an eviction, OOM, or no recorded exit.",
        "The artifact may be partly deleted; the backup stays Terminating.",
        "Usually nothing: a fresh Job runs 5 minutes after the failure. If it repeats, read the Job log (storage errors, permissions).",
    ),
    entry(
        "CleanupRejected",
        Never,
        "The cleanup Job refused (exit 64): a refused path (a symlink out of the claim, say), missing credential keys, or a bad endpoint.",
        TERMINATING,
        "Fix the credentials Secret, endpoint or path the log names; the Job is retried every 30 minutes, so the fix is picked up without touching the backup.",
    ),
    entry(
        "CleanupJobInvalid",
        Never,
        "No cleanup Job can be built from the recorded destination (unknown storage type, no bucket or claim); no Job ran and no failure is counted.",
        TERMINATING,
        "Inspect status.artifactStorage and storage by hand; delete the artifact yourself, then remove the finalizer.",
    ),
    entry(
        "CleanupPending",
        Sometimes,
        "The cleanup pod cannot start: a waiting reason such as ImagePullBackOff or CreateContainerConfigError, or stuck unscheduled or in ContainerCreating (a missing Secret volume, an unbound claim, a ReadWriteOnce claim attached elsewhere).",
        TERMINATING,
        "Fix what the message names (image, Secret, claim attachment); the condition clears once the pod starts, or the Job fails at its 10-minute deadline and is retried.",
    ),
    entry(
        "CredentialsUnavailable",
        Never,
        "The backup's profile has no S3 credentialsSecretName.",
        TERMINATING,
        "Set credentialsSecretName on the profile; retried every 5 minutes.",
    ),
    entry(
        "OperatorImageUnset",
        Never,
        "The operator cannot name its own image, which the cleanup Job runs.",
        TERMINATING,
        "Fix the operator deployment so it knows its image; retried every 5 minutes.",
    ),
    entry(
        "DestinationMismatch",
        Never,
        "The recorded status.artifactStorage.location fails the identity checks (last segment not the backup name, outside the recorded bucket or /backups, or unlike what the producing Job wrote), so cleanup could delete another backup's data.",
        TERMINATING,
        "Inspect storage, delete the artifact by hand if it still exists, then remove the bloodraven.shipstream.io/mysqlbackup finalizer. Never remove the finalizer while the artifact is still there.",
    ),
    entry(
        "CleanupJobConflict",
        Sometimes,
        "A Job with the cleanup name (mysqlcleanup-<backup>) is owned by something else.",
        TERMINATING,
        "Find and remove the conflicting Job if it is not needed; retried every 30 seconds.",
    ),
    entry(
        "HeldByVerification",
        Clears,
        "A MysqlBackupVerification is still reading the artifact.",
        TERMINATING,
        "Nothing; cleanup starts once the verification's pods stop (checked every 30 seconds).",
    ),
    entry(
        "ProducerStopStuck",
        Never,
        "Releasing an abandoned backup waits for its producing backup Job's pods to stop, and one has not stopped after 10 minutes, usually because its node is unreachable.",
        "The deletion stays held because the pod might still write.",
        "Once the pod's node is confirmed down, run kubectl delete pod <pod> -n <ns> --force --grace-period=0. Never force-delete a pod on a live node.",
    ),
    entry(
        "ForegroundDeletion",
        Clears,
        "The backup was deleted with propagationPolicy=Foreground; the garbage collector would delete a cleanup Job created now.",
        TERMINATING,
        "Nothing; retried every 10 seconds until the garbage collector finishes.",
    ),
    entry(
        "OrphanDeletion",
        Clears,
        "The backup was deleted with propagationPolicy=Orphan; a cleanup Job created now would be orphaned.",
        TERMINATING,
        "Nothing; retried every 10 seconds until the garbage collector finishes.",
    ),
    entry(
        "PassphraseSecretMissing",
        Never,
        "An encrypted backup's stamp must be read with its recorded dump-key snapshot Secret (status.artifactStorage.passphraseSecretKeyRef), and that Secret is missing.",
        TERMINATING,
        "Restore the named Secret; the profile's live Secret is never substituted.",
    ),
];

pub(super) static VERDICTS: &[Entry] = &[
    entry(
        "BLOODRAVEN_CLEANUP_COMPLETE",
        NothingToClear,
        "The cleanup Job deleted the artifact; objects=<n> counts what it removed (0 for a foreign stamp or an empty location).",
        "The artifact (and for an encrypted backup its dump-key snapshot) is gone; the finalizer is released.",
        "Nothing. On a versioned bucket, expire the delete markers and noncurrent versions with a lifecycle rule.",
    ),
    entry(
        "BLOODRAVEN_CLEANUP_FAILED",
        Sometimes,
        "The cleanup Job failed; the reason follows the token. Exit 64 is a refusal (CleanupRejected), 75 a transient storage error (CleanupFailed).",
        "The artifact may be partly deleted; the backup stays Terminating and a new Job follows.",
        "Act on the ArtifactCleanup condition's reason.",
    ),
    entry(
        "BLOODRAVEN_CLEANUP_SKIPPED",
        Never,
        "Abandoned-backup cleanup found objects at the location but no backup stamp naming this backup, so it deleted nothing.",
        "The finalizer is released; the objects and the dump-key snapshot are kept (a Warning ArtifactCleanupSkipped names them).",
        "Inspect the location: delete the objects by hand if they are this backup's, then the kept snapshot once none remain.",
    ),
];

pub(super) static EVENTS: &[Entry] = &[
    entry(
        "ArtifactCleanupStarted",
        NothingToClear,
        "A cleanup Job was created for the deleted MysqlBackup.",
        "The MysqlBackup is Terminating while the Job deletes its artifact.",
        "Nothing; ArtifactCleanupSucceeded, ArtifactCleanupNothingFound or ArtifactCleanupFailed follows.",
    ),
    entry(
        "ArtifactCleanupSucceeded",
        NothingToClear,
        "The cleanup Job deleted the artifact; the message counts the objects removed.",
        "The artifact is gone and the finalizer is released, so the MysqlBackup disappears.",
        "Nothing. If the message says deletionPolicy was changed to Retain after the cleanup started, the change came too late to keep the artifact.",
    ),
    entry(
        "ArtifactCleanupNothingFound",
        NothingToClear,
        "The cleanup found nothing at the recorded destination (a Warning): the artifact may have been removed by hand, or never written there.",
        "The finalizer is released; nothing was deleted.",
        "Check that the backup really was written to the recorded location; if it went elsewhere, delete it there by hand.",
    ),
    entry(
        "ArtifactCleanupFailed",
        Sometimes,
        "A cleanup Job failed (a Warning, once per Job); the message gives the cause and when the next Job runs.",
        "The artifact may be partly deleted; the MysqlBackup stays Terminating with its finalizer.",
        "Transient failures are retried on their own; for a refusal, fix the credentials, endpoint or path the ArtifactCleanup condition names.",
    ),
    entry(
        "ArtifactCleanupRetry",
        Clears,
        "A failed cleanup Job is being replaced by a new one.",
        "The MysqlBackup stays Terminating while the new Job runs.",
        "Nothing; watch for ArtifactCleanupSucceeded or another ArtifactCleanupFailed.",
    ),
    entry(
        "ArtifactCleanupDeferred",
        Clears,
        "A verification is still reading the artifact, so the cleanup waits until its run stops.",
        "The MysqlBackup stays Terminating and its artifact stays in storage.",
        "Nothing; the cleanup starts once the verification's pods have stopped.",
    ),
    entry(
        "RetentionDeferred",
        Clears,
        "Retention kept a backup past its keepLast and keepWithinDays windows because a verification is reading it.",
        "The backup and its artifact stay until the verification's run stops.",
        "Nothing; the backup is pruned on the next retention pass after the run stops.",
    ),
    entry(
        "ArtifactCleanupBlocked",
        Sometimes,
        "The cleanup cannot start (a Warning); the message carries the ArtifactCleanup condition's reason.",
        TERMINATING,
        "Act on the named reason (see the ArtifactCleanup reasons): some clear on their own, others need the destination, credentials or a Secret fixed.",
    ),
    entry(
        "ArtifactCleanupStalledProducerStop",
        Never,
        "An abandoned backup's producer pod has not stopped 10 minutes after its Job was deleted (a Warning naming the pod); the condition reads ProducerStopStuck.",
        "The deletion stays held, because the pod may still write to the artifact.",
        "Find out why the pod does not stop. Only once its node is confirmed down, force-delete the pod (kubectl delete pod --force --grace-period=0); never on a live node.",
    ),
    entry(
        "ArtifactCleanupSkipped",
        Never,
        "The cleanup could not or would not run: the failover group or profile is gone, no artifact destination could be recovered, a never-succeeded backup's best-effort cleanup failed, or objects remain at the location with no stamp naming this backup (BLOODRAVEN_CLEANUP_SKIPPED).",
        "The finalizer is released without deleting anything the message names: the objects left in storage and, for an encrypted backup, its dump-key snapshot Secret.",
        "Inspect the location the message names and delete what belongs to the backup by hand; delete the kept dump-key snapshot once no encrypted artifact of the backup remains.",
    ),
    entry(
        "ArtifactRetained",
        NothingToClear,
        "A MysqlBackup with deletionPolicy: Retain was deleted, so no cleanup Job ran; the message names the location and the dump-key snapshot Secret.",
        "The artifact, its backup stamp and (for an encrypted backup) its dump-key snapshot, the only copy of its key, stay in storage; nothing tracks them any more.",
        "Keep the snapshot Secret as long as you need the artifact, and delete both by hand when they are no longer needed.",
    ),
];
