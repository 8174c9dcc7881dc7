//! `spec.initFromBackup.pointInTime` on the bootstrap restore (pure): the refusals before any
//! Job, the Job's PITR steps (dump-meta → pitr-download → the load and the replay), the
//! refusal token of a failed step in `status.restore`, and the verdict accepted as
//! `status.restore.provenance.pointInTime` (or refused PITRCoverageInvalid).

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::fixtures::{BackupFixture, GroupFixture};
use bloodraven_crd::group::{PitrToken, PointInTimeOutcome, RestorePhase, RestoreStatus};
use bloodraven_operator::restore::bootstrap::job::{BootstrapJobError, BootstrapJobInput, build};
use bloodraven_operator::restore::bootstrap::pitr::{
    Expected, PitrBuildError, STAGING_DIR, accept, refusal_in,
};
use bloodraven_operator::restore::bootstrap::plan::{
    Decision, JobState, View, build_failed, decide, record,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Container;
use serde_json::json;
use sha2::{Digest as _, Sha256};

const STOP: &str = "2026-04-15T09:30:00Z";
const SOURCE_UID: &str = "5b0e7c8e-1111-4a3b-9c55-000000000001";

/// The new group `orders-pitr`: profile `nightly` (the backup's, prefix `orders`), profile
/// `source-archive` (the source group's archive, prefix `orders-archive`), its own archive
/// `own` (prefix `orders-pitr-archive`), and `initFromBackup.pointInTime`.
fn group(point_in_time: serde_json::Value) -> MysqlFailoverGroup {
    let mut group = GroupFixture::three_sites()
        .with_s3_profile("nightly")
        .with_s3_profile("source-archive")
        .with_s3_profile("own")
        .build();
    group.metadata.name = Some("orders-pitr".to_owned());
    group.metadata.uid = Some("9d1c0000-2222-4a3b-9c55-00000000000a".to_owned());
    let backup = group.spec.backup.as_mut().unwrap();
    for (profile, prefix) in [
        ("nightly", "orders"),
        ("source-archive", "orders-archive"),
        ("own", "orders-pitr-archive"),
    ] {
        let found = backup.profiles.iter_mut().find(|p| p.name == profile).unwrap();
        found.storage.s3.as_mut().unwrap().prefix = Some(prefix.to_owned());
    }
    backup.pitr =
        Some(serde_json::from_value(json!({"enabled": true, "profileName": "own"})).unwrap());
    group.spec.init_from_backup = Some(
        serde_json::from_value(json!({
            "source": {"backupRef": {"name": "orders-nightly"}},
            "pointInTime": point_in_time,
        }))
        .unwrap(),
    );
    group
}

fn request() -> serde_json::Value {
    json!({
        "stopTime": STOP,
        "archiveProfileName": "source-archive",
        "excludeGtids": "3e11fa47-71ca-11e1-9e33-c80aa9429562:42",
    })
}

fn backup() -> MysqlBackup {
    let mut backup = BackupFixture::new("orders-nightly", "orders", "nightly")
        .succeeded("2026-04-15T02:00:00Z")
        .build();
    backup.metadata.uid = Some("b0000000-3333-4a3b-9c55-00000000000b".to_owned());
    backup.status.as_mut().unwrap().failover_group_uid = Some(SOURCE_UID.to_owned());
    backup
}

fn credentials() -> BTreeMap<String, ByteString> {
    BTreeMap::from([
        ("username".to_owned(), ByteString(b"bloodraven_operator".to_vec())),
        ("password".to_owned(), ByteString(b"secret".to_vec())),
    ])
}

fn build_for(group: &MysqlFailoverGroup) -> Result<Job, BootstrapJobError> {
    let backup = backup();
    let site = group.spec.sites.iter().find(|s| s.name == "iad").unwrap();
    build(&BootstrapJobInput {
        group,
        backup: &backup,
        site,
        image: "bloodraven-sidecar:test".to_owned(),
        operator_credentials: &credentials(),
    })
    .map(|built| built.job)
}

fn env(container: &Container, name: &str) -> Option<String> {
    container.env.as_ref()?.iter().find(|e| e.name == name)?.value.clone()
}

fn mounts(container: &Container) -> Vec<(String, String, bool)> {
    container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.name.clone(), m.mount_path.clone(), m.read_only == Some(true)))
        .collect()
}

#[test]
fn the_job_runs_dump_meta_then_pitr_download_then_the_load_and_the_replay() {
    let job = build_for(&group(request())).unwrap();
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let init = pod.init_containers.as_ref().expect("the PITR steps are init containers");
    let names: Vec<&str> = init.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["dump-meta", "pitr-download"]);
    let command = |c: &Container| c.command.clone().unwrap_or_default().join(" ");

    // dump-meta: the backup's storage, its identity, no MySQL account.
    let dump_meta = &init[0];
    assert_eq!(command(dump_meta), "bloodraven-sidecar dump-meta");
    assert_eq!(env(dump_meta, "BLOODRAVEN_BACKUP_NAME").as_deref(), Some("orders-nightly"));
    assert_eq!(env(dump_meta, "BLOODRAVEN_SOURCE_UID").as_deref(), Some(SOURCE_UID));
    assert_eq!(
        env(dump_meta, "BLOODRAVEN_BACKUP_GTID_EXECUTED"),
        backup().status.unwrap().gtid_executed
    );
    assert_eq!(env(dump_meta, "BLOODRAVEN_S3_PREFIX").as_deref(), Some("orders"));
    assert_eq!(
        env(dump_meta, "BLOODRAVEN_PITR_DUMP_META").as_deref(),
        Some("/pitr-dump-meta/dump.json")
    );
    assert_eq!(env(dump_meta, "MYSQL_HOST"), None);
    assert!(!mounts(dump_meta).iter().any(|(name, ..)| name == "mysql-creds"));
    assert!(mounts(dump_meta).contains(&(
        "pitr-dump-meta".to_owned(),
        "/pitr-dump-meta".to_owned(),
        false
    )));

    // pitr-download: the ARCHIVE profile's storage and the request.
    let download = &init[1];
    assert_eq!(command(download), "bloodraven-sidecar pitr-download");
    for (name, value) in [
        ("BLOODRAVEN_S3_BUCKET", "shipstream-backups"),
        ("BLOODRAVEN_S3_PREFIX", "orders-archive"),
        ("BLOODRAVEN_STORAGE_TYPE", "S3"),
        ("BLOODRAVEN_PITR_STOP_TIME", STOP),
        ("BLOODRAVEN_PITR_EXCLUDE_GTIDS", "3e11fa47-71ca-11e1-9e33-c80aa9429562:42"),
        ("BLOODRAVEN_PITR_ALLOW_PARTIAL", "false"),
        ("BLOODRAVEN_PITR_STAGING", STAGING_DIR),
        ("BLOODRAVEN_PITR_DUMP_META", "/pitr-dump-meta/dump.json"),
    ] {
        assert_eq!(env(download, name).as_deref(), Some(value), "{name}");
    }
    assert_eq!(env(download, "BLOODRAVEN_BACKUP_NAME"), None, "the archive is not the backup");
    let download_mounts = mounts(download);
    for wanted in [
        ("archive-aws-creds", "/run/bloodraven/aws-creds", true),
        ("pitr-dump-meta", "/pitr-dump-meta", true),
        ("pitr-binlogs", STAGING_DIR, false),
    ] {
        let found = download_mounts.iter().find(|(name, ..)| name == wanted.0);
        assert_eq!(
            found.map(|(_, _, read_only)| *read_only),
            Some(wanted.2),
            "{wanted:?} in {download_mounts:?}"
        );
    }

    // The main container: the load, then the replay; the verdict as termination message.
    let main = &pod.containers[0];
    assert_eq!(command(main), "bloodraven-sidecar pitr-restore");
    assert_eq!(main.termination_message_path.as_deref(), Some("/dev/termination-log"));
    for (name, value) in [
        ("BLOODRAVEN_PITR_STAGING", STAGING_DIR),
        ("BLOODRAVEN_SOURCE_NAMESPACE", "orders"),
        ("BLOODRAVEN_SOURCE_NAME", "orders"),
        ("BLOODRAVEN_PITR_ENCRYPTION_MODE", "None"),
        ("BLOODRAVEN_TERMINATION_LOG", "/dev/termination-log"),
        ("BLOODRAVEN_S3_PREFIX", "orders"),
    ] {
        assert_eq!(env(main, name).as_deref(), Some(value), "{name}");
    }
    assert!(env(main, "MYSQL_HOST").unwrap().starts_with("mysql-orders-pitr-iad"));
    assert!(mounts(main).contains(&("pitr-binlogs".to_owned(), STAGING_DIR.to_owned(), true)));

    // The pod's volumes: both emptyDirs, the archive's credentials (the profile's Secret).
    let volumes = pod.volumes.as_ref().unwrap();
    for name in ["pitr-dump-meta", "pitr-binlogs"] {
        let volume = volumes.iter().find(|v| v.name == name).unwrap();
        assert!(volume.empty_dir.is_some(), "{name}");
    }
    let archive_creds = volumes.iter().find(|v| v.name == "archive-aws-creds").unwrap();
    assert_eq!(
        archive_creds.secret.as_ref().unwrap().secret_name.as_deref(),
        Some("s3-backup-creds")
    );
    let mut names: Vec<&str> = volumes.iter().map(|v| v.name.as_str()).collect();
    let total = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), total, "duplicate volume names: {names:?}");

    // What the verdict is checked against is read back from the Job that ran.
    assert_eq!(
        Expected::from_job(&job),
        Some(Expected {
            stop_time: STOP.to_owned(),
            allow_partial: false,
            encryption_mode: "None".to_owned(),
            source_uid: Some(SOURCE_UID.to_owned()),
            source_namespace: "orders".to_owned(),
            source_name: "orders".to_owned(),
        })
    );
}

#[test]
fn without_point_in_time_the_job_is_the_plain_load() {
    let mut group = group(request());
    group.spec.init_from_backup.as_mut().unwrap().point_in_time = None;
    let job = build_for(&group).unwrap();
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(pod.init_containers, None);
    assert_eq!(pod.containers[0].command.clone().unwrap().join(" "), "bloodraven-sidecar restore");
    assert_eq!(Expected::from_job(&job), None);
}

#[test]
fn refusals_before_any_job_carry_the_documents_token() {
    // Schema filters: PITRBackupFiltered.
    let mut filtered = group(request());
    filtered.spec.init_from_backup.as_mut().unwrap().load_options =
        Some(serde_json::from_value(json!({"includeSchemas": ["shop"]})).unwrap());
    let error = build_for(&filtered).unwrap_err();
    assert_eq!(
        error,
        BootstrapJobError::PointInTime(PitrBuildError::Filtered { field: "includeSchemas" })
    );
    let message = error.to_string();
    assert!(message.starts_with("PITRBackupFiltered: "), "{message}");
    let patch = build_failed("iad", &message, "2026-11-30T12:00:00Z");
    assert_eq!(patch["reason"], "PITRBackupFiltered");
    assert_eq!(patch["phase"], "Failed");
    assert_eq!(patch["jobName"], serde_json::Value::Null);

    // The archive profile is the group's own PITR profile.
    let mut shared = group(json!({"stopTime": STOP, "archiveProfileName": "own"}));
    let error = build_for(&shared).unwrap_err().to_string();
    assert!(error.starts_with("PITRArchiveDestinationShared: "), "{error}");
    assert_eq!(
        build_failed("iad", &error, "2026-11-30T12:00:00Z")["reason"],
        "PITRArchiveDestinationShared"
    );
    // Another profile naming the same destination, spelled differently, is refused too.
    let backup = shared.spec.backup.as_mut().unwrap();
    let source = backup.profiles.iter_mut().find(|p| p.name == "source-archive").unwrap();
    source.storage.s3.as_mut().unwrap().prefix = Some("/orders-pitr-archive/".to_owned());
    shared.spec.init_from_backup.as_mut().unwrap().point_in_time =
        Some(serde_json::from_value(request()).unwrap());
    let error = build_for(&shared).unwrap_err().to_string();
    assert!(error.starts_with("PITRArchiveDestinationShared: "), "{error}");

    // No such profile, and skipBinlog: false: refused without a token.
    let missing = group(json!({"stopTime": STOP, "archiveProfileName": "nowhere"}));
    let error = build_for(&missing).unwrap_err().to_string();
    assert!(error.contains("\"nowhere\" names no spec.backup.profiles entry"), "{error}");
    assert_eq!(
        build_failed("iad", &error, "2026-11-30T12:00:00Z")["reason"],
        serde_json::Value::Null
    );
    let mut binlog = group(request());
    binlog.spec.init_from_backup.as_mut().unwrap().load_options =
        Some(serde_json::from_value(json!({"skipBinlog": false})).unwrap());
    assert_eq!(
        build_for(&binlog).unwrap_err(),
        BootstrapJobError::PointInTime(PitrBuildError::BinlogNotSkipped)
    );
}

#[test]
fn a_failed_steps_token_is_found_in_its_message() {
    // As the sidecar's main prints an anyhow error, and as FallbackToLogsOnError keeps it
    // after the step's log lines.
    let cases = [
        (
            "2026-04-15T09:31:00Z ERROR read dump metadata token=PITRBackupIdentityUnknown\nError: dump-meta failed\n\nCaused by:\n    PITRBackupIdentityUnknown: the backup has no stamp; take a new backup\n",
            Some((
                PitrToken::PitrBackupIdentityUnknown,
                "PITRBackupIdentityUnknown: the backup has no stamp; take a new backup",
            )),
        ),
        (
            "Error: pitr-download failed\n\nCaused by:\n    0: planning\n    1: PITRArchiveDivergentHistory: the newest archived state includes a:1-3\n",
            Some((
                PitrToken::PitrArchiveDivergentHistory,
                "PITRArchiveDivergentHistory: the newest archived state includes a:1-3",
            )),
        ),
        (
            "Error: pitr-restore failed\n\nCaused by:\n    BLOODRAVEN_PITR_FAILED: mysql exit=1 segment=2 (ERROR 1062)\n",
            Some((
                PitrToken::PitrReplayFailed,
                "BLOODRAVEN_PITR_FAILED: mysql exit=1 segment=2 (ERROR 1062)",
            )),
        ),
        ("Error: restore failed\n\nCaused by:\n    NotAToken: no\n", None),
        ("", None),
    ];
    for (message, wanted) in cases {
        let found = refusal_in(message);
        assert_eq!(
            found.as_ref().map(|(token, line)| (token.clone(), line.as_str())),
            wanted,
            "{message}"
        );
    }
}

fn restore(phase: Option<RestorePhase>) -> RestoreStatus {
    RestoreStatus {
        phase,
        target_site: Some("iad".to_owned()),
        job_name: Some("mysql-orders-pitr-restore".to_owned()),
        ..RestoreStatus::default()
    }
}

fn expected() -> Expected {
    Expected::from_job(&build_for(&group(request())).unwrap()).unwrap()
}

fn view<'a>(
    restore: &'a RestoreStatus,
    job: &'a JobState,
    expected: &'a Expected,
    verdict: Option<&'a str>,
) -> View<'a> {
    static ROLLOUTS: std::sync::LazyLock<
        BTreeMap<String, bloodraven_operator::restore::bootstrap::plan::Rollout>,
    > = std::sync::LazyLock::new(BTreeMap::new);
    View {
        group: "orders-pitr",
        namespace: "orders",
        restore,
        active_site: Some("iad"),
        facts: &[],
        seed: Some("iad"),
        rollouts: &ROLLOUTS,
        job,
        pitr: Some(expected),
        verdict,
    }
}

#[test]
fn a_refused_step_fails_the_restore_with_its_token_once() {
    let running = restore(Some(RestorePhase::Running));
    let job = JobState::Failed {
        detail: "Error: pitr-download failed\n\nCaused by:\n    PITRTargetNotCovered: nothing archived at or after 2026-04-15T09:30:00Z\n".to_owned(),
    };
    let expected = expected();
    let v = view(&running, &job, &expected, None);
    let decision = decide(&v);
    let Decision::Refused { reason, message } = &decision else { panic!("{decision:?}") };
    assert_eq!(reason, &PitrToken::PitrTargetNotCovered);
    assert!(
        message.starts_with("PITRTargetNotCovered: nothing archived at or after 2026-04-15T09:30:00Z (restore Job mysql-orders-pitr-restore). "),
        "{message}"
    );
    let patch = record(&v, &decision, "2026-11-30T12:05:00Z").unwrap();
    assert_eq!(patch["phase"], "Failed");
    assert_eq!(patch["reason"], "PITRTargetNotCovered");
    assert_eq!(patch["message"], message.as_str());
    // Recorded once.
    let failed = restore(Some(RestorePhase::Failed));
    assert_eq!(decide(&view(&failed, &job, &expected, None)), Decision::Idle);
    // A failure without a token stays the plain failure.
    let plain = JobState::Failed {
        detail: "BackoffLimitExceeded: Job has reached the specified backoff limit".to_owned(),
    };
    assert!(matches!(decide(&view(&running, &plain, &expected, None)), Decision::Failed { .. }));
}

/// The verdict and result lines as `bloodraven-replay` prints them (000, "the verdict").
fn verdict(outcome: &str, stop: &str, executed: &str, divergent: u64) -> String {
    let sha: String =
        Sha256::digest(executed.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "BLOODRAVEN_PITR_RESULT v=1 executed={executed}\nBLOODRAVEN_PITR_VERDICT v=2 mode=timestamp stop={stop} outcome={outcome} archive=ar1-abc encryptionMode=None sourceUID={SOURCE_UID} sourceNamespace=orders sourceName=orders segments=2 files=2 transactions=1234 lastFile=iad%2Fmysql-bin.000042 newest=2026-04-15T09%3A29%3A59.981204Z divergent={divergent} onHistoryExcluded=0 executedSha256={sha} sites=iad%2Cpdx\n"
    )
}

const EXECUTED: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-41:43-1276";
const STOP_ENCODED: &str = "2026-04-15T09%3A30%3A00.000000Z";

#[test]
fn an_accepted_verdict_records_what_the_replay_certified() {
    let running = restore(Some(RestorePhase::Running));
    let expected = expected();
    let message = verdict("TargetCovered", STOP_ENCODED, EXECUTED, 1);
    let v = view(&running, &JobState::Succeeded, &expected, Some(&message));
    let decision = decide(&v);
    let Decision::Replayed { point_in_time } = &decision else { panic!("{decision:?}") };
    assert_eq!(point_in_time.outcome, Some(PointInTimeOutcome::TargetCovered));
    assert_eq!(point_in_time.gtid_executed.as_deref(), Some(EXECUTED));
    assert_eq!(point_in_time.transactions, Some(1234));
    assert_eq!(point_in_time.last_file.as_deref(), Some("iad/mysql-bin.000042"));
    assert_eq!(point_in_time.sites, ["iad", "pdx"]);
    assert_eq!(point_in_time.excluded_divergent_transaction_count, Some(1));
    let patch = record(&v, &decision, "2026-11-30T12:05:00Z").unwrap();
    assert_eq!(patch["phase"], "Succeeded");
    assert_eq!(patch["reason"], serde_json::Value::Null);
    let recorded = &patch["provenance"]["pointInTime"];
    assert_eq!(recorded["gtidExecuted"], EXECUTED);
    assert_eq!(recorded["stopTime"], STOP);
    assert_eq!(recorded["archiveID"], "ar1-abc");
    assert_eq!(recorded["sourceUID"], SOURCE_UID);
    assert_eq!(recorded["newestReplayedCommitTime"], "2026-04-15T09:29:59.981204Z");
    let warnings = bloodraven_operator::restore::bootstrap::io::replay_warnings(point_in_time);
    assert_eq!(
        warnings.iter().map(|(reason, _)| *reason).collect::<Vec<_>>(),
        ["PITRDivergentHistoryExcluded"]
    );
    // A set longer than 2048 characters is left empty; its digest stays.
    let long = (1..400)
        .map(|n| format!("{}:{}", "3e11fa47-71ca-11e1-9e33-c80aa9429562", n * 2))
        .collect::<Vec<_>>()
        .join(",");
    let long_verdict = verdict("TargetCovered", STOP_ENCODED, &long, 0);
    let accepted = accept(&expected, Some(&long_verdict)).unwrap();
    assert_eq!(accepted.gtid_executed.as_deref(), Some(""));
    assert_eq!(accepted.gtid_executed_sha256.map(|s| s.len()), Some(64));
}

#[test]
fn a_verdict_that_does_not_match_what_was_rendered_fails_coverage_invalid() {
    let running = restore(Some(RestorePhase::Running));
    let expected = expected();
    let tampered = verdict("TargetCovered", STOP_ENCODED, EXECUTED, 0).replace(
        "executed=3e11fa47-71ca-11e1-9e33-c80aa9429562:1-41",
        "executed=3e11fa47-71ca-11e1-9e33-c80aa9429562:1-42",
    );
    let cases = [
        (None, "without a BLOODRAVEN_PITR_VERDICT"),
        (Some("Error: something\n".to_owned()), "without a BLOODRAVEN_PITR_VERDICT"),
        (Some(verdict("TargetCovered", "2026-04-15T09%3A31%3A00.000000Z", EXECUTED, 0)), "stop"),
        (Some(verdict("Partial", STOP_ENCODED, EXECUTED, 0)), "outcome"),
        (
            Some(
                verdict("TargetCovered", STOP_ENCODED, EXECUTED, 0)
                    .replace("sourceName=orders", "sourceName=billing"),
            ),
            "sourceName",
        ),
        (Some(tampered), "executedSha256"),
    ];
    for (message, names) in cases {
        let v = view(&running, &JobState::Succeeded, &expected, message.as_deref());
        let decision = decide(&v);
        let Decision::Refused { reason, message: text } = &decision else {
            panic!("{message:?}: {decision:?}")
        };
        assert_eq!(reason, &PitrToken::PitrCoverageInvalid, "{text}");
        assert!(text.starts_with("PITRCoverageInvalid: "), "{text}");
        assert!(text.contains(names), "{names}: {text}");
        assert_eq!(
            record(&v, &decision, "2026-11-30T12:05:00Z").unwrap()["reason"],
            "PITRCoverageInvalid"
        );
    }
    // Once recorded, a succeeded Job's verdict is not read again.
    let failed = restore(Some(RestorePhase::Failed));
    assert_eq!(decide(&view(&failed, &JobState::Succeeded, &expected, None)), Decision::Idle);
    // allowPartial accepts a Partial outcome, with its Warning.
    let partial = Expected { allow_partial: true, ..expected.clone() };
    let accepted = accept(&partial, Some(&verdict("Partial", STOP_ENCODED, EXECUTED, 0))).unwrap();
    assert_eq!(accepted.outcome, Some(PointInTimeOutcome::Partial));
    let warnings = bloodraven_operator::restore::bootstrap::io::replay_warnings(&accepted);
    assert_eq!(
        warnings.iter().map(|(reason, _)| *reason).collect::<Vec<_>>(),
        ["PITRReplayTruncated"]
    );
}
