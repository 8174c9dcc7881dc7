//! A failed scheduled backup retries and reports, in the live lab (lab API server, lab kubelet
//! running real MySQL 9.7 sites, Jobs as `bloodraven-sidecar` processes and CronJobs on a
//! scaled clock, SeaweedFS for S3, the operator in this process; `source scripts/provision.sh`
//! and `cargo build -p bloodraven-sidecar`). The S3 profile's keys are wrong, so the schedule's
//! run fails: Ready=False/BackupFailed and a BackupFailed Event on it, and
//! `status.backupSchedules[]` names it Failed with its `nextRetryTime`. With
//! `retry.maxAttempts: 2` the operator creates `backup-retry-<hash>-r2` (its lineage label and
//! attempt annotation, a BackupRetryScheduled Event on the group), which fails too: the rollup
//! then shows attempt 2 and no `nextRetryTime` (retries exhausted) and no third attempt exists.
//! Fixing the keys in the same Secret and raising `maxAttempts` to 3 brings the third attempt,
//! which succeeds: the rollup's `lastSuccessfulBackupName`, `lastSuccessTime` and the group's
//! `lastBackupTime` name it.

use std::future::Future;
use std::time::{Duration, Instant};

use bloodraven_backup::names;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::condition::{ConditionStatus, ConditionType};
use bloodraven_crd::group::BackupScheduleStatus;
use bloodraven_kubelet::cronjob::CronConfig;
use bloodraven_lab::Lab;
use bloodraven_store::testing::{ACCESS_KEY, SECRET_KEY, SeaweedFs};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use super::live_lab::{LiveLab, LiveLabOptions};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
const SCHEDULE: &str = "often";
/// Generous: CI shares 2 cores with other real servers.
const BOUND: Duration = Duration::from_secs(300);

/// Polls `check` every half second until it answers `Ok`; after [`BOUND`] fails naming what it
/// waited for and the last thing `check` saw (its `Err`).
async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let start = Instant::now();
    loop {
        let seen = match check().await {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        assert!(
            start.elapsed() < BOUND,
            "gave up after {BOUND:?} waiting for {what}; last saw: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The Events about `kind` `name`: (reason, note).
fn events(lab: &Lab, kind: &str, name: &str) -> Vec<(String, String)> {
    lab.list("events.k8s.io/v1", "Event")
        .iter()
        .filter(|event| event["regarding"]["kind"] == kind && event["regarding"]["name"] == name)
        .filter_map(|event| {
            Some((
                event["reason"].as_str()?.to_owned(),
                event["note"].as_str().unwrap_or("").to_owned(),
            ))
        })
        .collect()
}

/// The schedule's rollup entry, or what the status shows instead.
async fn rollup(groups: &Api<MysqlFailoverGroup>) -> Result<BackupScheduleStatus, String> {
    let group = groups.get_status(GROUP).await.map_err(|error| error.to_string())?;
    let schedules = group.status.map(|s| s.backup_schedules).unwrap_or_default();
    schedules
        .iter()
        .find(|entry| entry.name == SCHEDULE)
        .cloned()
        .ok_or_else(|| format!("status.backupSchedules = {schedules:?}"))
}

/// Backup `name` once it reached a terminal phase.
async fn terminal(backups: &Api<MysqlBackup>, name: &str) -> MysqlBackup {
    wait_for(&format!("backup {name} to end"), || async {
        let found = backups.get_opt(name).await.map_err(|e| e.to_string())?;
        let found = found.ok_or_else(|| format!("no MysqlBackup {name} yet"))?;
        match found.status.as_ref().and_then(|s| s.phase.clone()) {
            Some(BackupPhase::Succeeded | BackupPhase::Failed) => Ok(found),
            phase => Err(format!("phase {phase:?}")),
        }
    })
    .await
}

fn phase(backup: &MysqlBackup) -> Option<BackupPhase> {
    backup.status.as_ref().and_then(|s| s.phase.clone())
}

/// Checks a failed backup's Ready condition and its BackupFailed Event.
async fn assert_reported_failed(lab: &Lab, backup: &MysqlBackup) {
    let name = backup.metadata.name.clone().unwrap_or_default();
    assert_eq!(phase(backup), Some(BackupPhase::Failed), "{name}: {:#?}", backup.status);
    let ready = backup
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == ConditionType::Ready).cloned());
    let ready = ready.unwrap_or_else(|| panic!("{name} has no Ready condition"));
    assert_eq!(ready.status, ConditionStatus::False, "{name}: {ready:?}");
    assert_eq!(
        ready.reason.as_ref().map(|r| r.as_str()),
        Some("BackupFailed"),
        "{name}: {ready:?}"
    );
    wait_for(&format!("a BackupFailed Event on {name}"), || async {
        let seen = events(lab, "MysqlBackup", &name);
        if seen.iter().any(|(reason, _)| reason == "BackupFailed") {
            Ok(())
        } else {
            Err(format!("{seen:?}"))
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_scheduled_backup_retries_reports_exhausts_and_succeeds_once_fixed() {
    let weed = SeaweedFs::start().unwrap_or_else(|error| panic!("SeaweedFS: {error}"));
    let _bucket = weed.bucket_store("backups", "").await.unwrap_or_else(|error| panic!("{error}"));
    let live = LiveLab::start(LiveLabOptions {
        namespace: NAMESPACE,
        crds: &["mysqlfailovergroups", "mysqlbackups", "mysqlbackupverifications"],
        job_env: Some(&["BLOODRAVEN_MYSQLDUMP"]),
        // Three cron minutes per real minute: `* * * * *` fires every 20 s.
        cronjobs: Some(CronConfig::new().speedup(3)),
    })
    .await;
    let (lab, client) = (&live.lab, live.client.clone());

    // The keys are wrong: SeaweedFS refuses every request (403), so each backup fails.
    live.create_s3_keys(ACCESS_KEY, "not-the-key").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);
    let profiles = json!({ "spec": { "backup": {
        "retry": { "maxAttempts": 2, "initialBackoff": "15s", "maxBackoff": "15s" },
        "profiles": [
            { "name": "s3", "storage": { "type": "S3", "s3": {
                "bucket": "backups", "prefix": "orders", "endpointURL": weed.endpoint(),
                "region": "us-east-1", "credentialsSecretName": "s3-keys" } } },
        ],
    }}});
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&profiles))
        .await
        .expect("the backup profile and retry policy");
    let operator = live.operator("test");

    wait_for("the group to converge", || async {
        let status = groups.get(GROUP).await.map_err(|e| e.to_string())?.status;
        let status = status.ok_or("no status")?;
        let active = status.active_site.clone().ok_or("no active site")?;
        let replicating: Vec<(String, Option<bool>)> = status
            .sites
            .iter()
            .filter(|site| site.name != active)
            .map(|site| (site.name.clone(), site.replicating))
            .collect();
        let all = replicating.iter().all(|(_, r)| *r == Some(true));
        if all && status.sites.len() == 3 { Ok(()) } else { Err(format!("{replicating:?}")) }
    })
    .await;

    // One run of the schedule: suspended as soon as its CronJob fired (the next run would be
    // 20 s later), so the chain below is the only one.
    let schedule = |suspend: bool| {
        json!({ "spec": { "backup": { "schedules": [
            { "name": SCHEDULE, "profileName": "s3", "schedule": "* * * * *", "suspend": suspend },
        ]}}})
    };
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&schedule(false)))
        .await
        .expect("the schedule");
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), NAMESPACE);
    let cronjob_name = names::cronjob_name(GROUP, SCHEDULE);
    wait_for(&format!("CronJob {cronjob_name} to fire"), || async {
        let cronjob = cronjobs.get_opt(&cronjob_name).await.map_err(|e| e.to_string())?;
        let cronjob = cronjob.ok_or("no CronJob yet")?;
        cronjob
            .status
            .and_then(|s| s.last_schedule_time)
            .map(|_| ())
            .ok_or_else(|| "not fired yet".to_owned())
    })
    .await;
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&schedule(true)))
        .await
        .expect("suspend the schedule");

    // The run fails and reports; the rollup names it with its retry time (15 s later, so the
    // record stays readable for at least two housekeeping passes).
    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NAMESPACE);
    let first_name = wait_for("the schedule's MysqlBackup", || async {
        let selector = format!("{}={SCHEDULE}", names::SCHEDULE_LABEL);
        let list = backups.list(&ListParams::default().labels(&selector)).await;
        let list = list.map_err(|e| e.to_string())?.items;
        match list.as_slice() {
            [one] => Ok(one.metadata.name.clone().unwrap_or_default()),
            other => Err(format!("{} scheduled backups", other.len())),
        }
    })
    .await;
    let first = terminal(&backups, &first_name).await;
    assert_reported_failed(lab, &first).await;
    let first_uid = first.metadata.uid.clone().expect("a UID");
    let reported = wait_for("the rollup to report the failed run", || async {
        let entry = rollup(&groups).await?;
        if entry.last_backup_name.as_deref() == Some(first_name.as_str())
            && entry.last_backup_phase == Some(BackupPhase::Failed)
        {
            Ok(entry)
        } else {
            Err(format!("{entry:?}"))
        }
    })
    .await;
    assert_eq!(reported.profile_name.as_deref(), Some("s3"));
    assert!(reported.last_schedule_time.is_some(), "{reported:?}");
    assert_eq!(reported.last_retry_attempt, None, "the run itself is no retry: {reported:?}");
    assert_eq!(reported.last_successful_backup_name, None, "{reported:?}");
    let completed =
        first.status.as_ref().and_then(|s| s.completion_time.clone()).expect("completionTime");
    assert_eq!(
        reported.next_retry_time.as_ref().map(|t| t.0),
        Some(completed.0 + Duration::from_secs(15)),
        "the retry is due initialBackoff after the failure: {reported:?}"
    );

    // Its retry: the deterministic name, lineage and attempt; it fails too.
    let second_name = names::retry_name(&first_uid, 2);
    let second = terminal(&backups, &second_name).await;
    let labels = second.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get(names::RETRY_OF_LABEL), Some(&first_uid), "{labels:?}");
    assert_eq!(labels.get(names::SCHEDULE_LABEL).map(String::as_str), Some(SCHEDULE));
    let annotations = second.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations.get(names::ATTEMPT_ANNOTATION).map(String::as_str), Some("2"));
    assert_eq!(
        annotations.get("bloodraven.shipstream.io/backup-retry-root"),
        Some(&first_name),
        "{annotations:?}"
    );
    assert_reported_failed(lab, &second).await;
    let scheduled = events(lab, "MysqlFailoverGroup", GROUP);
    assert!(
        scheduled
            .iter()
            .any(|(reason, note)| reason == "BackupRetryScheduled" && note.contains(&second_name)),
        "{scheduled:?}"
    );

    // maxAttempts 2 is used up: the rollup says so and no third attempt is created.
    let exhausted = wait_for("the rollup to report the exhausted chain", || async {
        let entry = rollup(&groups).await?;
        if entry.last_backup_name.as_deref() == Some(second_name.as_str())
            && entry.last_backup_phase == Some(BackupPhase::Failed)
        {
            Ok(entry)
        } else {
            Err(format!("{entry:?}"))
        }
    })
    .await;
    assert_eq!(exhausted.last_retry_attempt, Some(2), "{exhausted:?}");
    assert_eq!(exhausted.next_retry_time, None, "no retry after maxAttempts: {exhausted:?}");
    let second_uid = second.metadata.uid.clone().expect("a UID");
    let third_name = names::retry_name(&second_uid, 3);
    assert!(backups.get_opt(&third_name).await.expect("a read").is_none(), "{third_name} exists");
    let retries: Vec<_> = events(lab, "MysqlFailoverGroup", GROUP)
        .into_iter()
        .filter(|(reason, _)| reason == "BackupRetryScheduled")
        .collect();
    assert_eq!(retries.len(), 1, "one retry only: {retries:?}");

    // The keys fixed in the same Secret and one more attempt allowed: the third attempt
    // succeeds, and the rollup and lastBackupTime name it.
    let fixed = json!({ "stringData": { "AWS_SECRET_ACCESS_KEY": SECRET_KEY } });
    secrets
        .patch("s3-keys", &PatchParams::default(), &Patch::Merge(&fixed))
        .await
        .expect("fix the keys");
    let more = json!({ "spec": { "backup": { "retry": { "maxAttempts": 3 } } } });
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&more))
        .await
        .expect("maxAttempts 3");
    let third = terminal(&backups, &third_name).await;
    assert_eq!(phase(&third), Some(BackupPhase::Succeeded), "{third_name}: {:#?}", third.status);
    let succeeded_at =
        third.status.as_ref().and_then(|s| s.completion_time.clone()).expect("completionTime");
    let recovered = wait_for("the rollup to report the success", || async {
        let entry = rollup(&groups).await?;
        if entry.last_successful_backup_name.as_deref() == Some(third_name.as_str()) {
            Ok(entry)
        } else {
            Err(format!("{entry:?}"))
        }
    })
    .await;
    assert_eq!(recovered.last_backup_name.as_deref(), Some(third_name.as_str()));
    assert_eq!(recovered.last_backup_phase, Some(BackupPhase::Succeeded));
    assert_eq!(recovered.last_success_time.as_ref().map(|t| t.0), Some(succeeded_at.0));
    assert_eq!(recovered.last_retry_attempt, Some(3));
    assert_eq!(recovered.next_retry_time, None);
    let status = groups.get_status(GROUP).await.expect("the group").status.expect("a status");
    assert_eq!(status.last_backup_time.map(|t| t.0), Some(succeeded_at.0));
    let succeeded = events(lab, "MysqlBackup", &third_name);
    assert!(succeeded.iter().any(|(reason, _)| reason == "BackupSucceeded"), "{succeeded:?}");

    operator.stop().await;
    live.stop().await;
    drop(weed);
}
