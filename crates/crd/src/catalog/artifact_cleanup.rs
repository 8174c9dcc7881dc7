//! Artifact cleanup of deleted `MysqlBackup`s: condition reasons and Job verdicts.

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
    entry(
        "DestinationUnavailable",
        Never,
        "Recorded once by repair on a Succeeded backup whose artifact destination cannot be recovered (no status.artifactStorage and no producing Job to recover it from).",
        "The backup remains, but deleting it runs no cleanup (ArtifactCleanupSkipped): its artifact, if any, stays in storage.",
        "Find the artifact by hand (the producing Job's name is in the Event) and delete it yourself when the backup goes.",
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
