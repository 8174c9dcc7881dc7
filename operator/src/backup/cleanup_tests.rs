use bloodraven_crd::backup::RecordedSecretKeyRef;

use super::*;

fn t(minutes: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + minutes * 60).unwrap()
}

fn pvc() -> ArtifactStorage {
    ArtifactStorage {
        type_: Some(StorageType::Pvc),
        location: Some("/backups/b1".into()),
        claim_name: Some("backups".into()),
        ..ArtifactStorage::default()
    }
}

fn s3() -> ArtifactStorage {
    ArtifactStorage {
        type_: Some(StorageType::S3),
        location: Some("s3://bk/orders/b1".into()),
        bucket: Some("bk".into()),
        ..ArtifactStorage::default()
    }
}

fn input() -> Input {
    Input {
        backup: "b1".into(),
        retain: false,
        phase: Some(BackupPhase::Succeeded),
        artifact: Some(pvc()),
        cleanup_started: None,
        foreground: false,
        orphan: false,
        read_by: None,
        producer_running: Vec::new(),
        producer_exists: true,
        deleting_since: t(0),
        s3_credentials: Some("keys".into()),
        job: CleanupJob::Absent,
        cleanup_pod_running: false,
        now: t(1),
    }
}

fn reason(decision: &Decision) -> Option<&str> {
    match decision {
        Decision::Wait { condition: Some((reason, _)), .. } => Some(reason.as_str()),
        Decision::StopProducer { waiting: Some((reason, _)), .. } => Some(reason.as_str()),
        _ => None,
    }
}

fn released_with(decision: &Decision) -> Option<&'static str> {
    match decision {
        Decision::Release { note } => Some(note.reason),
        _ => None,
    }
}

#[test]
fn verdict_lines_are_read_from_the_end_of_the_log() {
    let log = "starting\nBLOODRAVEN_CLEANUP_COMPLETE objects=7\n";
    assert_eq!(verdict(log), Some(Verdict::Complete { objects: 7 }));
    assert_eq!(
        verdict("BLOODRAVEN_CLEANUP_FAILED: 3 objects remain"),
        Some(Verdict::Failed("3 objects remain".into()))
    );
    assert_eq!(
        verdict("BLOODRAVEN_CLEANUP_SKIPPED: no stamp"),
        Some(Verdict::Skipped("no stamp".into()))
    );
    assert_eq!(verdict("nothing here"), None);
    assert_eq!(verdict("BLOODRAVEN_CLEANUP_COMPLETE objects=x"), None);
}

#[test]
fn a_delete_backup_creates_its_cleanup_job_then_releases_on_its_verdict() {
    let first = decide(&input());
    assert!(
        matches!(&first, Decision::CreateJob { note } if note.reason == "ArtifactCleanupStarted")
    );
    let mut running = input();
    running.cleanup_started = Some(t(1));
    running.job = CleanupJob::Active { waiting: None, stuck_since: None, started: true };
    assert!(matches!(decide(&running), Decision::Wait { condition: None, .. }));
    running.job = CleanupJob::Succeeded { verdict: Some(Verdict::Complete { objects: 5 }) };
    assert_eq!(released_with(&decide(&running)), Some("ArtifactCleanupSucceeded"));
    running.job = CleanupJob::Succeeded { verdict: Some(Verdict::Complete { objects: 0 }) };
    assert_eq!(released_with(&decide(&running)), Some("ArtifactCleanupNothingFound"));
}

#[test]
fn retain_releases_without_a_job_and_names_the_snapshot() {
    let mut retain = input();
    retain.retain = true;
    let mut artifact = pvc();
    artifact.passphrase_secret_key_ref = Some(RecordedSecretKeyRef {
        name: Some("dump-key".into()),
        key: "k".into(),
        ..Default::default()
    });
    retain.artifact = Some(artifact);
    match decide(&retain) {
        Decision::Release { note } => {
            assert_eq!(note.reason, "ArtifactRetained");
            assert!(
                note.message.contains("/backups/b1") && note.message.contains("dump-key"),
                "{}",
                note.message
            );
        }
        other => panic!("{other:?}"),
    }
    // A switch to Retain after the cleanup started is not applied.
    retain.cleanup_started = Some(t(0));
    assert!(matches!(decide(&retain), Decision::CreateJob { .. }));
    // No Retain backup is released while a cleanup pod of it still runs.
    retain.cleanup_started = None;
    retain.cleanup_pod_running = true;
    assert!(matches!(decide(&retain), Decision::Wait { .. }));
}

#[test]
fn a_verification_reading_the_artifact_holds_delete_and_retain() {
    for retain in [false, true] {
        let mut held = input();
        held.retain = retain;
        held.read_by = Some("v1".into());
        assert_eq!(reason(&decide(&held)), Some("HeldByVerification"));
    }
}

#[test]
fn failed_jobs_are_retried_after_5_or_30_minutes() {
    let mut failed = input();
    failed.cleanup_started = Some(t(0));
    failed.job =
        CleanupJob::Failed { exit_code: Some(75), message: "s3 timeout".into(), finished: t(1) };
    failed.now = t(3);
    assert_eq!(reason(&decide(&failed)), Some("CleanupFailed"));
    failed.now = t(6);
    assert!(matches!(decide(&failed), Decision::ReplaceJob { .. }));
    failed.job =
        CleanupJob::Failed { exit_code: Some(64), message: "symlink".into(), finished: t(1) };
    assert_eq!(reason(&decide(&failed)), Some("CleanupRejected"));
    failed.now = t(31);
    assert!(matches!(decide(&failed), Decision::ReplaceJob { .. }));
    // A crash (no exit recorded) is transient.
    failed.job =
        CleanupJob::Failed { exit_code: None, message: "OOMKilled".into(), finished: t(30) };
    assert_eq!(reason(&decide(&failed)), Some("CleanupFailed"));
    // The replacement after the old Job is gone is a retry.
    failed.job = CleanupJob::Absent;
    assert!(
        matches!(decide(&failed), Decision::CreateJob { note } if note.reason == "ArtifactCleanupRetry")
    );
}

#[test]
fn blocked_reasons() {
    let mut bad = input();
    bad.artifact = Some(ArtifactStorage { claim_name: None, ..pvc() });
    assert_eq!(reason(&decide(&bad)), Some("CleanupJobInvalid"));
    bad.artifact = Some(ArtifactStorage { location: Some("/backups/b10".into()), ..pvc() });
    assert_eq!(reason(&decide(&bad)), Some("DestinationMismatch"));
    bad.artifact = Some(ArtifactStorage { location: Some("s3://other/b1".into()), ..s3() });
    assert_eq!(reason(&decide(&bad)), Some("DestinationMismatch"));
    bad.artifact = Some(s3());
    bad.s3_credentials = None;
    assert_eq!(reason(&decide(&bad)), Some("CredentialsUnavailable"));
    bad.s3_credentials = Some("keys".into());
    bad.job = CleanupJob::Foreign { owner: "MysqlBackup/b1-cleanup".into() };
    assert_eq!(reason(&decide(&bad)), Some("CleanupJobConflict"));
    bad.job = CleanupJob::Active {
        waiting: Some("CreateContainerConfigError: secret keys not found".into()),
        stuck_since: Some(t(0)),
        started: false,
    };
    assert_eq!(reason(&decide(&bad)), Some("CleanupPending"));
    bad.job = CleanupJob::Active { waiting: None, stuck_since: Some(t(0)), started: false };
    bad.now = t(0);
    assert_eq!(reason(&decide(&bad)), None);
    bad.now = t(2);
    assert_eq!(reason(&decide(&bad)), Some("CleanupPending"));
    let mut propagation = input();
    propagation.foreground = true;
    assert_eq!(reason(&decide(&propagation)), Some("ForegroundDeletion"));
    propagation.foreground = false;
    propagation.orphan = true;
    assert_eq!(reason(&decide(&propagation)), Some("OrphanDeletion"));
}

#[test]
fn a_never_succeeded_backup_stops_its_producer_first() {
    let mut abandoned = input();
    abandoned.phase = Some(BackupPhase::Running);
    abandoned.producer_running = vec!["mysqlbackup-b1-abcde".into()];
    assert!(matches!(decide(&abandoned), Decision::StopProducer { waiting: None, .. }));
    abandoned.now = t(11);
    assert_eq!(reason(&decide(&abandoned)), Some("ProducerStopStuck"));
    abandoned.producer_running.clear();
    abandoned.producer_exists = false;
    assert!(matches!(decide(&abandoned), Decision::CreateJob { .. }));
    // Never recorded a destination: released, skipped.
    abandoned.artifact = None;
    assert_eq!(released_with(&decide(&abandoned)), Some("ArtifactCleanupSkipped"));
    // A succeeded backup's Job is not stopped (it has finished; it is kept while the CR exists).
    let succeeded = input();
    assert!(matches!(decide(&succeeded), Decision::CreateJob { .. }));
}

/// Every Event reason and ArtifactCleanup condition reason the cleanup and housekeeping code
/// emits is in the catalog (`bloodraven_crd::catalog`), and every Event the catalog lists for
/// artifact cleanup is emitted.
#[test]
fn emitted_reasons_are_catalogued() {
    use bloodraven_crd::catalog::{Kind, lookup};
    let sources = [include_str!("cleanup.rs"), include_str!("housekeeping.rs")].concat();
    let mut emitted = std::collections::BTreeSet::new();
    for piece in sources.split('"').skip(1).step_by(2) {
        if (piece.starts_with("Artifact") || piece == "RetentionDeferred")
            && piece.chars().all(|c| c.is_ascii_alphanumeric())
        {
            emitted.insert(piece.to_owned());
        }
    }
    for reason in &emitted {
        assert!(lookup(Kind::ArtifactCleanupEvent, reason).is_some(), "{reason} is not catalogued");
    }
    let catalogued: std::collections::BTreeSet<String> =
        Kind::ArtifactCleanupEvent.entries().iter().map(|e| e.token.to_owned()).collect();
    assert_eq!(emitted, catalogued, "emitted (left) and catalogued (right) differ");
    for reason in [
        ConditionReason::CleanupFailed,
        ConditionReason::CleanupRejected,
        ConditionReason::CleanupJobInvalid,
        ConditionReason::CleanupPending,
        ConditionReason::CredentialsUnavailable,
        ConditionReason::DestinationMismatch,
        ConditionReason::CleanupJobConflict,
        ConditionReason::HeldByVerification,
        ConditionReason::ProducerStopStuck,
        ConditionReason::ForegroundDeletion,
        ConditionReason::OrphanDeletion,
    ] {
        assert!(lookup(Kind::ArtifactCleanup, reason.as_str()).is_some(), "{}", reason.as_str());
    }
}
