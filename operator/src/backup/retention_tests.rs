use serde_json::json;

use super::*;

fn at(minute: i64) -> String {
    Timestamp::from_second(1_800_000_000 + minute * 60).unwrap().to_string()
}

fn t(minute: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + minute * 60).unwrap()
}

fn group(
    retention: serde_json::Value,
    pitr: bool,
    newest_archived: Option<i64>,
) -> MysqlFailoverGroup {
    let mut status = json!({});
    if let Some(minute) = newest_archived {
        status = json!({ "pitr": { "newestArchivedTime": at(minute) } });
    }
    serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlFailoverGroup",
        "metadata": { "name": "orders", "namespace": "orders", "uid": "g" },
        "spec": {
            "sites": [],
            "backup": {
                "profiles": [
                    { "name": "p", "retention": retention, "storage": { "type": "PVC", "pvc": { "claimName": "c" } } },
                    { "name": "other", "storage": { "type": "PVC", "pvc": { "claimName": "c" } } },
                ],
                "schedules": [{ "name": "nightly", "profileName": "p", "schedule": "0 2 * * *" }],
                "pitr": { "enabled": pitr, "profileName": "p" },
            },
        },
        "status": status,
    }))
    .unwrap()
}

/// A backup of profile `p` created at `minute`; `phase` "Succeeded" (completed a minute
/// later, with `gtids`), "Failed" or "Running".
fn backup(name: &str, minute: i64, phase: &str, gtids: bool) -> MysqlBackup {
    let mut status = json!({ "phase": phase, "completionTime": at(minute + 1) });
    if gtids {
        status["gtidExecuted"] = json!("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5");
    }
    serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": { "name": name, "namespace": "orders", "creationTimestamp": at(minute) },
        "spec": { "failoverGroupRef": { "name": "orders" }, "profileName": "p" },
        "status": status,
    }))
    .unwrap()
}

fn deleted(group: &MysqlFailoverGroup, backups: &[MysqlBackup], reading: &[&str]) -> Vec<String> {
    let reading = reading.iter().map(|s| (*s).to_owned()).collect();
    let plans = plan(group, backups, &reading, t(10_000), t(0));
    plans.into_iter().flat_map(|p| p.plan.delete).collect()
}

/// (retention, backups as (name, minute, phase), the names deleted)
type Case = (serde_json::Value, Vec<(&'static str, i64, &'static str)>, Vec<&'static str>);

#[test]
fn the_table_keep_last_keep_within_days_keep_failed() {
    // (retention, backups (name, minute, phase), deleted)
    let day = 24 * 60;
    let cases: Vec<Case> = vec![
        // Defaults: keepLast 7, keepFailed 10.
        (
            json!({}),
            (0..9)
                .map(|i| (["a", "b", "c", "d", "e", "f", "g", "h", "i"][i], i as i64, "Succeeded"))
                .collect(),
            vec!["a", "b"],
        ),
        (
            json!({ "keepLast": 2 }),
            vec![("a", 0, "Succeeded"), ("b", 1, "Succeeded"), ("c", 2, "Succeeded")],
            vec!["a"],
        ),
        // keepWithinDays keeps what keepLast would drop.
        (
            json!({ "keepLast": 1, "keepWithinDays": 5 }),
            vec![
                ("old", 10_000 - 6 * day, "Succeeded"),
                ("recent", 10_000 - 2 * day, "Succeeded"),
                ("new", 9_000, "Succeeded"),
            ],
            vec!["old"],
        ),
        // Failures never push a success out; keepFailed counts them separately.
        (
            json!({ "keepLast": 1, "keepFailed": 1 }),
            vec![
                ("good", 0, "Succeeded"),
                ("f1", 1, "Failed"),
                ("f2", 2, "Failed"),
                ("f3", 3, "Failed"),
            ],
            vec!["f1", "f2"],
        ),
        // In-flight backups are never pruned.
        (
            json!({ "keepLast": 1 }),
            vec![("run", 0, "Running"), ("a", 1, "Succeeded"), ("b", 2, "Succeeded")],
            vec!["a"],
        ),
    ];
    for (retention, list, want) in cases {
        let group = group(retention.clone(), false, None);
        let backups: Vec<_> = list.iter().map(|(n, m, p)| backup(n, *m, p, true)).collect();
        assert_eq!(deleted(&group, &backups, &[]), want, "{retention}");
    }
}

#[test]
fn a_backup_a_verification_reads_is_deferred_not_deleted() {
    let group = group(json!({ "keepLast": 1 }), false, None);
    let backups = vec![backup("a", 0, "Succeeded", true), backup("b", 1, "Succeeded", true)];
    assert_eq!(deleted(&group, &backups, &["a"]), Vec::<String>::new());
    let plans = plan(&group, &backups, &["a".to_owned()].into(), t(10_000), t(0));
    assert_eq!(plans[0].plan.deferred, vec!["a"]);
}

#[test]
fn the_backup_pitr_rests_on_is_kept() {
    // b has no gtidExecuted: it cannot be a PITR base, so a (the newest base) is kept.
    let backups = vec![
        backup("old", 0, "Succeeded", true),
        backup("a", 10, "Succeeded", true),
        backup("b", 20, "Succeeded", false),
    ];
    let off = group(json!({ "keepLast": 1 }), false, None);
    assert_eq!(deleted(&off, &backups, &[]), vec!["a", "old"]);
    let on = group(json!({ "keepLast": 1 }), true, None);
    assert_eq!(deleted(&on, &backups, &[]), vec!["old"]);
    // The archive reaches only minute 5: the newest base it can replay from is `old`.
    let behind = group(json!({ "keepLast": 1 }), true, Some(5));
    assert_eq!(deleted(&behind, &backups, &[]), Vec::<String>::new());
    // Once the archive passes a, old goes.
    let caught_up = group(json!({ "keepLast": 1 }), true, Some(15));
    assert_eq!(deleted(&caught_up, &backups, &[]), vec!["old"]);
}

#[test]
fn the_sites_reported_reach_holds_the_base_when_the_group_wide_time_is_unset() {
    // What the PITR roll-up publishes: each site's newestArchivedTime, no group-wide one.
    let backups = vec![backup("old", 0, "Succeeded", true), backup("a", 10, "Succeeded", true)];
    let mut behind = group(json!({ "keepLast": 1 }), true, None);
    behind.status = serde_json::from_value(json!({ "pitr": { "sites": [
        { "site": "iad", "newestArchivedTime": at(5) },
        { "site": "pdx", "newestArchivedTime": at(3) },
        { "site": "fra" },
    ]}}))
    .unwrap();
    assert_eq!(deleted(&behind, &backups, &[]), Vec::<String>::new());
    // One site's archive passed a (completed at minute 11): old goes.
    let mut caught_up = behind.clone();
    caught_up.status.as_mut().unwrap().pitr.as_mut().unwrap().sites[1].newest_archived_time =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(12)));
    assert_eq!(deleted(&caught_up, &backups, &[]), vec!["old"]);
}

#[test]
fn deleting_and_foreign_backups_do_not_count() {
    let group = group(json!({ "keepLast": 1 }), false, None);
    let mut going = backup("going", 5, "Succeeded", true);
    going.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(6)));
    let mut foreign = backup("foreign", 0, "Succeeded", true);
    foreign.spec.failover_group_ref.name = "other".into();
    let backups = vec![backup("a", 0, "Succeeded", true), going, foreign];
    assert_eq!(deleted(&group, &backups, &[]), Vec::<String>::new());
}
