use jiff::Timestamp;
use serde_json::json;

use super::*;

fn at(minute: i64) -> String {
    Timestamp::from_second(1_800_000_000 + minute * 60).unwrap().to_string()
}

fn group(status: serde_json::Value) -> MysqlFailoverGroup {
    serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlFailoverGroup",
        "metadata": { "name": "orders", "namespace": "orders", "uid": "g" },
        "spec": {
            "sites": [],
            "backup": {
                "retry": { "maxAttempts": 3, "initialBackoff": "1m", "maxBackoff": "30m" },
                "profiles": [{ "name": "p", "storage": { "type": "PVC", "pvc": { "claimName": "c" } } }],
                "schedules": [
                    { "name": "nightly", "profileName": "p", "schedule": "0 2 * * *" },
                    { "name": "hourly", "profileName": "p", "schedule": "0 * * * *" },
                ],
            },
        },
        "status": status,
    }))
    .unwrap()
}

/// A backup created at `created`; `phase` with its completion at `done`; `schedule` labels it,
/// `attempt` annotates its launch attempt.
fn backup(
    name: &str,
    schedule: Option<&str>,
    attempt: Option<u32>,
    created: i64,
    phase: &str,
    done: Option<i64>,
) -> MysqlBackup {
    let mut labels = serde_json::Map::new();
    if let Some(schedule) = schedule {
        labels.insert(names::SCHEDULE_LABEL.into(), json!(schedule));
    }
    let mut annotations = serde_json::Map::new();
    if let Some(attempt) = attempt {
        annotations.insert(names::ATTEMPT_ANNOTATION.into(), json!(attempt.to_string()));
    }
    let mut status = json!({ "phase": phase });
    if let Some(done) = done {
        status["completionTime"] = json!(at(done));
    }
    serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": {
            "name": name, "namespace": "orders", "uid": format!("uid-{name}"),
            "creationTimestamp": at(created), "labels": labels, "annotations": annotations,
        },
        "spec": { "failoverGroupRef": { "name": "orders" }, "profileName": "p" },
        "status": status,
    }))
    .unwrap()
}

fn cronjob(schedule: &str, last: i64) -> CronJob {
    serde_json::from_value(json!({
        "metadata": { "name": names::cronjob_name("orders", schedule), "namespace": "orders" },
        "spec": { "schedule": "0 2 * * *", "jobTemplate": {} },
        "status": { "lastScheduleTime": at(last) },
    }))
    .unwrap()
}

fn entry<'a>(report: &'a Rollup, schedule: &str) -> &'a BackupScheduleStatus {
    report.schedules.iter().find(|e| e.name == schedule).unwrap()
}

fn time(minute: i64) -> Option<Time> {
    Some(Time(at(minute).parse().unwrap()))
}

#[test]
fn a_failed_run_reports_its_retry_time_and_the_last_success() {
    let backups = [
        backup("nightly-a", Some("nightly"), None, 0, "Succeeded", Some(5)),
        backup("nightly-b", Some("nightly"), None, 60, "Failed", Some(62)),
        backup("adhoc", None, None, 70, "Succeeded", Some(75)),
    ];
    let report = rollup(&group(json!({})), &backups, &[cronjob("nightly", 60)], &BTreeMap::new());
    let nightly = entry(&report, "nightly");
    assert_eq!(nightly.profile_name.as_deref(), Some("p"));
    assert_eq!(nightly.last_schedule_time, time(60));
    assert_eq!(nightly.last_backup_name.as_deref(), Some("nightly-b"));
    assert_eq!(nightly.last_backup_phase, Some(BackupPhase::Failed));
    assert_eq!(nightly.last_successful_backup_name.as_deref(), Some("nightly-a"));
    assert_eq!(nightly.last_success_time, time(5));
    assert_eq!(nightly.last_retry_attempt, None, "the original run is no retry");
    assert_eq!(nightly.next_retry_time, time(63), "initialBackoff after the failure");
    // The other schedule never ran: only its name and profile.
    let hourly = entry(&report, "hourly");
    assert_eq!(
        (hourly.last_backup_name.as_ref(), hourly.last_schedule_time.as_ref()),
        (None, None)
    );
    // lastBackupTime: the newest success of the group, ad-hoc included.
    assert_eq!(report.last_backup_time, time(75));
    assert_eq!(
        report.schedules.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
        ["nightly", "hourly"],
        "spec order"
    );
}

#[test]
fn retries_count_and_stop_at_max_attempts() {
    let second = [
        backup("nightly-b", Some("nightly"), None, 60, "Failed", Some(62)),
        backup("retry-2", Some("nightly"), Some(2), 63, "Failed", Some(64)),
    ];
    let report = rollup(&group(json!({})), &second, &[], &BTreeMap::new());
    let nightly = entry(&report, "nightly");
    assert_eq!(nightly.last_backup_name.as_deref(), Some("retry-2"));
    assert_eq!(nightly.last_retry_attempt, Some(2));
    assert_eq!(nightly.next_retry_time, time(66), "the second retry waits twice as long");

    let exhausted = [
        second[0].clone(),
        second[1].clone(),
        backup("retry-3", Some("nightly"), Some(3), 66, "Failed", Some(67)),
    ];
    let report = rollup(&group(json!({})), &exhausted, &[], &BTreeMap::new());
    let nightly = entry(&report, "nightly");
    assert_eq!(nightly.last_retry_attempt, Some(3));
    assert_eq!(nightly.last_backup_phase, Some(BackupPhase::Failed));
    assert_eq!(nightly.next_retry_time, None, "maxAttempts 3 used: no further retry");

    let recovered = [
        second[0].clone(),
        second[1].clone(),
        backup("retry-3", Some("nightly"), Some(3), 66, "Succeeded", Some(68)),
    ];
    let report = rollup(&group(json!({})), &recovered, &[], &BTreeMap::new());
    let nightly = entry(&report, "nightly");
    assert_eq!(nightly.last_successful_backup_name.as_deref(), Some("retry-3"));
    assert_eq!(nightly.last_success_time, time(68));
    assert_eq!(nightly.next_retry_time, None);
    assert_eq!(report.last_backup_time, time(68));
}

#[test]
fn a_pruned_success_stays_recorded_and_a_removed_schedule_loses_its_entry() {
    let recorded = json!({
        "lastBackupTime": at(90),
        "backupSchedules": [
            { "name": "nightly", "lastSuccessfulBackupName": "gone", "lastSuccessTime": at(90),
              "futureField": "kept" },
            { "name": "removed", "lastBackupName": "old" },
        ],
    });
    let backups = [backup("nightly-a", Some("nightly"), None, 0, "Succeeded", Some(5))];
    let report = rollup(&group(recorded), &backups, &[], &BTreeMap::new());
    let nightly = entry(&report, "nightly");
    assert_eq!(nightly.last_successful_backup_name.as_deref(), Some("gone"));
    assert_eq!(nightly.last_success_time, time(90));
    assert_eq!(nightly.last_backup_name.as_deref(), Some("nightly-a"));
    assert_eq!(nightly.extra.get("futureField"), Some(&json!("kept")), "unknown fields survive");
    assert_eq!(report.last_backup_time, time(90));
    assert!(report.schedules.iter().all(|e| e.name != "removed"));
}

#[test]
fn the_record_is_written_only_when_it_changes_and_conflicts_are_announced_once() {
    let backups = [backup("nightly-b", Some("nightly"), None, 60, "Failed", Some(62))];
    let conflicts = BTreeMap::from([("nightly".to_owned(), "backup-retry-x-r2".to_owned())]);
    let fresh = rollup(&group(json!({})), &backups, &[cronjob("nightly", 60)], &conflicts);
    assert!(fresh.differs(&group(json!({}))));
    assert_eq!(
        fresh.new_conflicts(&group(json!({}))),
        [("nightly".to_owned(), "backup-retry-x-r2".to_owned())]
    );
    assert_eq!(entry(&fresh, "nightly").retry_conflict.as_deref(), Some("backup-retry-x-r2"));

    // The group as the API server returns it after the apply.
    let written = group(fresh.body()["status"].clone());
    let again = rollup(&written, &backups, &[cronjob("nightly", 60)], &conflicts);
    assert_eq!(again, fresh);
    assert!(!again.differs(&written), "an unchanged rollup is not applied again");
    assert!(again.new_conflicts(&written).is_empty(), "an unchanged conflict is not repeated");

    // The conflict gone: the marker clears, and a recurrence is announced again.
    let cleared = rollup(&written, &backups, &[cronjob("nightly", 60)], &BTreeMap::new());
    assert_eq!(entry(&cleared, "nightly").retry_conflict, None);
    assert!(cleared.differs(&written));
    let written = group(cleared.body()["status"].clone());
    assert_eq!(rollup(&written, &backups, &[], &conflicts).new_conflicts(&written).len(), 1);
}

#[test]
fn no_schedule_left_applies_an_empty_list() {
    let mut without = group(json!({ "backupSchedules": [{ "name": "nightly" }] }));
    if let Some(backup) = without.spec.backup.as_mut() {
        backup.schedules.clear();
    }
    let report = rollup(&without, &[], &[], &BTreeMap::new());
    assert!(report.schedules.is_empty());
    assert!(report.differs(&without));
    assert_eq!(report.body()["status"]["backupSchedules"], json!([]));
    assert!(report.body()["status"].get("lastBackupTime").is_none());
}
