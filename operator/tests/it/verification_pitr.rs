//! `MysqlBackupVerification` `spec.pointInTime` modes Timestamp and Latest (pure): the refusals
//! before any Job (PITRBackupIdentityUnknown, PITRTargetInvalid), the Job's PITR steps per mode
//! (the bootstrap restore's `dump-meta` → `pitr-download` with `verify` as the main container),
//! and the Job's outcome: the verdict accepted as `status.pointInTime` with Verified=True, or the
//! refusal token (a step's, or PITRCoverageInvalid) as the Verified reason.

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::condition::{ConditionStatus, ConditionType};
use bloodraven_crd::fixtures::{BackupFixture, GroupFixture};
use bloodraven_crd::group::{PointInTimeMode, PointInTimeOutcome};
use bloodraven_crd::verification::{
    MysqlBackupVerification, MysqlBackupVerificationStatus, VerificationPhase,
};
use bloodraven_operator::backup::verdict::JobState;
use bloodraven_operator::backup::verification::job::{
    POINT_IN_TIME_ENV, VerifyJobInput, VerifyPitr, build,
};
use bloodraven_operator::backup::verification::plan::{
    PitrObserved, PointInTimeRequest, next_status_pitr, pitr_warnings, point_in_time,
};
use bloodraven_operator::restore::bootstrap::pitr::{Expected, earliest_failure, main_message};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;
use sha2::{Digest as _, Sha256};

const STOP: &str = "2026-04-15T09:30:00Z";
const STOP_ENCODED: &str = "2026-04-15T09%3A30%3A00.000000Z";
const SOURCE_UID: &str = "5b0e7c8e-1111-4a3b-9c55-000000000001";
const EXECUTED: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-41:43-1276";
const EXCLUDE: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562:42";

/// Group `orders` with profile `nightly` (the backups, prefix `orders`) and its own archive
/// `archive` (prefix `orders-archive`), PITR `enabled`.
fn group(enabled: bool) -> MysqlFailoverGroup {
    let mut group =
        GroupFixture::three_sites().with_s3_profile("nightly").with_s3_profile("archive").build();
    group.metadata.uid = Some("9d1c0000-2222-4a3b-9c55-00000000000a".to_owned());
    let backup = group.spec.backup.as_mut().unwrap();
    for (profile, prefix) in [("nightly", "orders"), ("archive", "orders-archive")] {
        let found = backup.profiles.iter_mut().find(|p| p.name == profile).unwrap();
        found.storage.s3.as_mut().unwrap().prefix = Some(prefix.to_owned());
    }
    backup.pitr = Some(
        serde_json::from_value(json!({"enabled": enabled, "profileName": "archive"})).unwrap(),
    );
    group
}

fn backup(source_uid: Option<&str>) -> MysqlBackup {
    let mut backup = BackupFixture::new("orders-nightly", "orders", "nightly")
        .succeeded("2026-04-15T02:00:00Z")
        .build();
    backup.metadata.uid = Some("b0000000-3333-4a3b-9c55-00000000000b".to_owned());
    backup.status.as_mut().unwrap().failover_group_uid = source_uid.map(str::to_owned);
    backup
}

fn verification(point_in_time: serde_json::Value) -> MysqlBackupVerification {
    serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackupVerification",
        "metadata": { "name": "v1", "namespace": "orders", "uid": "uid-v1" },
        "spec": { "failoverGroupRef": { "name": "orders" }, "profileName": "nightly",
                  "backupRef": { "name": "orders-nightly" }, "pointInTime": point_in_time },
    }))
    .unwrap()
}

fn refusal(
    spec: serde_json::Value,
    backup: &MysqlBackup,
    group: Option<&MysqlFailoverGroup>,
) -> (String, String) {
    match point_in_time(&verification(spec), backup, group) {
        Err(refusal) => (refusal.reason, refusal.message),
        Ok(other) => panic!("not refused: {other:?}"),
    }
}

#[test]
fn a_point_in_time_verification_is_refused_before_any_job() {
    let (enabled, disabled) = (group(true), group(false));
    let good = backup(Some(SOURCE_UID));
    let latest = json!({ "mode": "Latest" });

    // No source group UID: no stamp; refused first, even with a bad target.
    let (reason, message) = refusal(
        json!({ "mode": "Timestamp", "stopTime": "2026-04-15T09:30:00.5Z" }),
        &backup(None),
        Some(&enabled),
    );
    assert_eq!(reason, "PITRBackupIdentityUnknown");
    assert!(message.contains("take a new full backup"), "{message}");

    // PITRTargetInvalid: fractional or unparsable target, bad excludeGtids, no stopTime.
    for spec in [
        json!({ "mode": "Timestamp", "stopTime": "2026-04-15T09:30:00.5Z" }),
        json!({ "mode": "Timestamp", "stopTime": "yesterday" }),
        json!({ "mode": "Timestamp" }),
        json!({ "mode": "Latest", "excludeGtids": "42" }),
        json!({ "mode": "Latest", "excludeGtids": "orders-iad-0000-0000-0000-000000000000:1" }),
    ] {
        let (reason, message) = refusal(spec.clone(), &good, Some(&enabled));
        assert_eq!(reason, "PITRTargetInvalid", "{spec}: {message}");
    }
    // PITRTargetInvalid: the group's spec.backup.pitr is disabled, or the group is gone.
    for group in [Some(&disabled), None] {
        let (reason, message) = refusal(latest.clone(), &good, group);
        assert_eq!(reason, "PITRTargetInvalid");
        assert!(message.contains("spec.backup.pitr disabled"), "{message}");
    }

    // Accepted: the group's own archive profile; mode Latest has no target.
    let accepted = |spec: serde_json::Value| {
        point_in_time(&verification(spec), &good, Some(&enabled)).unwrap().unwrap()
    };
    let PointInTimeRequest { stop_time, exclude_gtids, archive_profile } =
        accepted(json!({ "mode": "Timestamp", "stopTime": STOP, "excludeGtids": EXCLUDE }));
    assert_eq!((stop_time.as_str(), exclude_gtids.as_str()), (STOP, EXCLUDE));
    assert_eq!(archive_profile.name, "archive");
    assert_eq!(accepted(latest).stop_time, "");
    // Mode None: no replay, nothing refused (even with a backup without a UID).
    assert_eq!(
        point_in_time(&verification(json!({ "mode": "None" })), &backup(None), None),
        Ok(None)
    );
}

fn job_for(spec: serde_json::Value) -> Job {
    let group = group(true);
    let backup = backup(Some(SOURCE_UID));
    let verification = verification(spec);
    let request = point_in_time(&verification, &backup, Some(&group)).unwrap();
    let profile = group.spec.backup.as_ref().unwrap().profiles[0].clone();
    build(&VerifyJobInput {
        verification: &verification,
        backup: &backup,
        profile: Some(&profile),
        image: "bloodraven-sidecar:test".to_owned(),
        point_in_time: request.as_ref().map(|request| VerifyPitr {
            group: &group,
            archive_profile: &request.archive_profile,
            stop_time: request.stop_time.clone(),
            exclude_gtids: request.exclude_gtids.clone(),
        }),
    })
    .unwrap()
}

fn envs<'a>(container: &'a Container, name: &str) -> Vec<&'a str> {
    container
        .env
        .iter()
        .flatten()
        .filter(|e| e.name == name)
        .map(|e| e.value.as_deref().unwrap_or(""))
        .collect()
}

#[test]
fn the_job_gets_the_pitr_steps_per_mode() {
    for (spec, stop) in [
        (json!({ "mode": "Timestamp", "stopTime": STOP, "excludeGtids": EXCLUDE }), STOP),
        (json!({ "mode": "Latest", "excludeGtids": EXCLUDE }), ""),
    ] {
        let job = job_for(spec.clone());
        let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        let init = pod.init_containers.as_ref().expect("the PITR steps are init containers");
        let names: Vec<&str> = init.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["dump-meta", "pitr-download"], "{spec}");
        let (dump_meta, download, main) = (&init[0], &init[1], &pod.containers[0]);

        // dump-meta: the backup's identity, once each.
        assert_eq!(envs(dump_meta, "BLOODRAVEN_SOURCE_UID"), [SOURCE_UID]);
        assert_eq!(
            envs(dump_meta, "BLOODRAVEN_BACKUP_UID"),
            ["b0000000-3333-4a3b-9c55-00000000000b"]
        );
        assert_eq!(envs(dump_meta, "BLOODRAVEN_S3_PREFIX"), ["orders"], "the backup's storage");

        // pitr-download: the group's own archive, read-only, to the target or the head.
        assert_eq!(envs(download, "BLOODRAVEN_PITR_STOP_TIME"), [stop], "{spec}");
        assert_eq!(envs(download, "BLOODRAVEN_PITR_EXCLUDE_GTIDS"), [EXCLUDE]);
        assert_eq!(
            envs(download, "BLOODRAVEN_PITR_ALLOW_PARTIAL"),
            ["false"],
            "no partial override"
        );
        assert_eq!(
            envs(download, "BLOODRAVEN_S3_PREFIX"),
            ["orders-archive"],
            "the group's archive"
        );
        let volumes: Vec<&str> = pod.volumes.iter().flatten().map(|v| v.name.as_str()).collect();
        for volume in ["pitr-dump-meta", "pitr-binlogs", "archive-aws-creds", "scratch"] {
            assert!(volumes.contains(&volume), "{volume} in {volumes:?}");
        }

        // verify: replays the staged plan, the verdict as its termination message.
        assert_eq!(main.name, "verify");
        assert_eq!(main.command.clone().unwrap(), ["bloodraven-sidecar", "verify"]);
        assert_eq!(envs(main, POINT_IN_TIME_ENV), ["true"]);
        assert_eq!(envs(main, "BLOODRAVEN_PITR_STAGING"), ["/pitr-binlogs"]);
        assert_eq!(envs(main, "BLOODRAVEN_SOURCE_NAME"), ["orders"]);
        assert_eq!(main.termination_message_path.as_deref(), Some("/dev/termination-log"));
        let staging =
            main.volume_mounts.iter().flatten().find(|m| m.name == "pitr-binlogs").unwrap();
        assert_eq!(staging.read_only, Some(true));

        // What the verdict must match is read back from the Job.
        let expected = Expected::from_job(&job).unwrap();
        assert_eq!(expected.stop_time, stop);
        assert_eq!(expected.latest(), stop.is_empty());
        assert!(!expected.allow_partial);
        assert_eq!(expected.source_uid.as_deref(), Some(SOURCE_UID));
    }
    // Mode None: the load only.
    let job = job_for(json!({ "mode": "None" }));
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert!(pod.init_containers.is_none());
    assert!(envs(&pod.containers[0], POINT_IN_TIME_ENV).is_empty());
    assert_eq!(Expected::from_job(&job), None);
}

fn verdict(
    mode: &str,
    stop: Option<&str>,
    outcome: &str,
    source_uid: &str,
    divergent: u64,
) -> String {
    let sha: String =
        Sha256::digest(EXECUTED.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let stop = stop.map(|stop| format!(" stop={stop}")).unwrap_or_default();
    format!(
        "BLOODRAVEN_PITR_RESULT v=1 executed={EXECUTED}\nBLOODRAVEN_PITR_VERDICT v=2 mode={mode}{stop} outcome={outcome} archive=ar1-abc encryptionMode=None sourceUID={source_uid} sourceNamespace=orders sourceName=orders segments=2 files=2 transactions=1234 lastFile=iad%2Fmysql-bin.000042 newest=2026-04-15T09%3A29%3A59.981204Z divergent={divergent} onHistoryExcluded=0 executedSha256={sha} sites=iad\n"
    )
}

const COMPLETE: &str = "BLOODRAVEN_VERIFY_TABLE app.t checksum=7\nBLOODRAVEN_VERIFY_COMPLETE gtidExecuted=x tables=1\n";

fn now() -> Time {
    Time("2026-12-01T04:00:00Z".parse().unwrap())
}

fn running() -> MysqlBackupVerificationStatus {
    MysqlBackupVerificationStatus {
        phase: Some(VerificationPhase::Restoring),
        job_name: Some("mysqlverify-v1".to_owned()),
        ..MysqlBackupVerificationStatus::default()
    }
}

fn verified(status: &MysqlBackupVerificationStatus) -> (ConditionStatus, String, String) {
    let c = status.conditions.iter().find(|c| c.type_ == ConditionType::Verified).unwrap();
    (
        c.status.clone(),
        c.reason.as_ref().unwrap().as_str().to_owned(),
        c.message.clone().unwrap_or_default(),
    )
}

#[test]
fn the_verdict_is_accepted_or_its_refusal_recorded() {
    let timestamp =
        Expected::from_job(&job_for(json!({ "mode": "Timestamp", "stopTime": STOP }))).unwrap();
    let latest = Expected::from_job(&job_for(json!({ "mode": "Latest" }))).unwrap();
    let done = JobState::Succeeded { start: None, completion: None };
    let observe = |expected: &Expected,
                   state: &JobState,
                   log: Option<&str>,
                   verdict: Option<&str>,
                   failure: Option<&str>| {
        next_status_pitr(
            &running(),
            state,
            expected,
            log,
            PitrObserved { verdict, failure },
            &now(),
        )
    };

    // Mode Timestamp: accepted, status.pointInTime, Verified=True/TargetCovered.
    let message = verdict("timestamp", Some(STOP_ENCODED), "TargetCovered", SOURCE_UID, 1);
    let ok = observe(&timestamp, &done, Some(COMPLETE), Some(&message), None);
    assert_eq!(ok.phase, Some(VerificationPhase::Succeeded));
    let (status, reason, text) = verified(&ok);
    assert_eq!((status, reason.as_str()), (ConditionStatus::True, "TargetCovered"));
    assert!(
        text.contains("replayed 1234 archived transaction(s) to 2026-04-15T09:30:00Z"),
        "{text}"
    );
    let result = ok.point_in_time.clone().unwrap();
    assert_eq!(result.mode, Some(PointInTimeMode::Timestamp));
    assert_eq!(result.stop_time.as_deref(), Some(STOP));
    assert_eq!(result.gtid_executed.as_deref(), Some(EXECUTED));
    assert_eq!(result.source_uid.as_deref(), Some(SOURCE_UID));
    let warnings: Vec<&str> = pitr_warnings(&ok).into_iter().map(|(reason, _)| reason).collect();
    assert_eq!(warnings, ["PITRDivergentHistoryExcluded"]);

    // Mode Latest: the archive head, no target.
    let message = verdict("latest", None, "Latest", SOURCE_UID, 0);
    let head = observe(&latest, &done, Some(COMPLETE), Some(&message), None);
    let (status, reason, _) = verified(&head);
    assert_eq!((status, reason.as_str()), (ConditionStatus::True, "Latest"));
    let result = head.point_in_time.clone().unwrap();
    assert_eq!(result.mode, Some(PointInTimeMode::Latest));
    assert_eq!(result.outcome, Some(PointInTimeOutcome::Latest));
    assert_eq!(result.stop_time, None);
    assert!(pitr_warnings(&head).is_empty());

    // PITRCoverageInvalid: no verdict, another mode, another source group, a target in a
    // Latest verdict.
    for (expected, message) in [
        (&timestamp, None),
        (&latest, Some(verdict("timestamp", Some(STOP_ENCODED), "TargetCovered", SOURCE_UID, 0))),
        (&timestamp, Some(verdict("latest", None, "Latest", SOURCE_UID, 0))),
        (
            &timestamp,
            Some(verdict("timestamp", Some(STOP_ENCODED), "TargetCovered", "other-uid", 0)),
        ),
        (&timestamp, Some(verdict("timestamp", Some(STOP_ENCODED), "Partial", SOURCE_UID, 0))),
        (&latest, Some(verdict("latest", Some(STOP_ENCODED), "Latest", SOURCE_UID, 0))),
    ] {
        let bad = observe(expected, &done, Some(COMPLETE), message.as_deref(), None);
        assert_eq!(bad.phase, Some(VerificationPhase::Failed));
        let (status, reason, text) = verified(&bad);
        assert_eq!(
            (status, reason.as_str()),
            (ConditionStatus::False, "PITRCoverageInvalid"),
            "{message:?}"
        );
        assert!(text.starts_with("PITRCoverageInvalid: "), "{text}");
        assert_eq!(bad.point_in_time, None);
    }
    // An accepted verdict without the COMPLETE line proves nothing.
    let message = verdict("timestamp", Some(STOP_ENCODED), "TargetCovered", SOURCE_UID, 0);
    let unchecked = observe(&timestamp, &done, Some("no verdict"), Some(&message), None);
    assert_eq!(verified(&unchecked).1, "VerificationFailed");

    // A failed step's token is the Verified reason: pitr-download's refusal first.
    let failed =
        JobState::Failed { start: None, completion: None, message: "BackoffLimitExceeded".into() };
    let refused = observe(
        &timestamp,
        &failed,
        None,
        None,
        Some(
            "Error: pitr-download failed\n\nCaused by:\n    PITRTargetNotCovered: nothing archived at or after 2026-04-15T09:30:00Z\n",
        ),
    );
    assert_eq!(refused.phase, Some(VerificationPhase::Failed));
    let (status, reason, text) = verified(&refused);
    assert_eq!((status, reason.as_str()), (ConditionStatus::False, "PITRTargetNotCovered"));
    assert!(text.ends_with("(verification Job mysqlverify-v1)"), "{text}");
    // The replay's failure, kept whole.
    let replay = observe(
        &latest,
        &failed,
        Some(
            "BLOODRAVEN_VERIFY_FAILED PITRReplayFailed: BLOODRAVEN_PITR_FAILED: mysql exit=1 segment=1 (x)",
        ),
        None,
        Some(
            "Error: verify failed\n\nCaused by:\n    BLOODRAVEN_PITR_FAILED: mysql exit=1 segment=1 (x)\n",
        ),
    );
    assert_eq!(verified(&replay).1, "PITRReplayFailed");
    // No PITR token in the failing step: the log's FAILED line, as mode None.
    let damaged = observe(
        &timestamp,
        &failed,
        Some("BLOODRAVEN_VERIFY_FAILED BackupArtifactDamaged: the dump is damaged: chunk k"),
        None,
        Some("Error: verify failed"),
    );
    assert_eq!(verified(&damaged).1, "BackupArtifactDamaged");
    // Terminal stays terminal; a running Job is InProgress.
    assert_eq!(
        observe(&timestamp, &failed, None, None, Some("PITRArchiveGap: x")).phase,
        Some(VerificationPhase::Failed)
    );
    assert_eq!(
        next_status_pitr(&ok, &failed, &timestamp, None, PitrObserved::default(), &now()),
        ok
    );
    let active = observe(&timestamp, &JobState::Active { start: None }, None, None, None);
    assert_eq!(verified(&active).1, "InProgress");
}

#[test]
fn the_verdict_and_the_failure_are_read_from_the_pod() {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": "mysqlverify-v1-x" },
        "status": {
            "initContainerStatuses": [
                { "name": "dump-meta", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
                  "state": { "terminated": { "exitCode": 0, "message": "" } } },
                { "name": "pitr-download", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
                  "state": { "terminated": { "exitCode": 1, "message": "PITRArchiveGap: the history needs a:5" } } },
            ],
            "containerStatuses": [
                { "name": "verify", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
                  "state": { "terminated": { "exitCode": 0, "message": "BLOODRAVEN_PITR_VERDICT v=2" } } },
            ],
        },
    }))
    .unwrap();
    assert_eq!(earliest_failure(&pod).as_deref(), Some("PITRArchiveGap: the history needs a:5"));
    assert_eq!(main_message(&pod, "verify").as_deref(), Some("BLOODRAVEN_PITR_VERDICT v=2"));
    assert_eq!(main_message(&pod, "restore"), None);
}
