//! The spec's examples parse into our types and serialize back to exactly the same JSON.

use bloodraven_crd::fixtures::{self, GroupFixture};
use bloodraven_crd::{MysqlBackup, MysqlFailoverGroup, MysqlFailoverGroupStatus};
use pretty_assertions::assert_eq;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::fixture;

/// Parses `yaml`, converts it to `T` and back, and asserts nothing changed. Returns the value.
fn round_trip<T: DeserializeOwned + Serialize>(yaml: &str) -> T {
    let original: serde_json::Value = serde_norway::from_str(yaml).unwrap();
    let typed: T = serde_json::from_value(original.clone()).unwrap();
    let written = serde_json::to_value(&typed).unwrap();
    assert_eq!(written, original);
    typed
}

fn status_of(yaml: &str) -> MysqlFailoverGroupStatus {
    let document: serde_json::Value = serde_norway::from_str(yaml).unwrap();
    round_trip::<MysqlFailoverGroupStatus>(&serde_json::to_string(&document["status"]).unwrap())
}

#[test]
fn succeeded_planned_failover_example_round_trips() {
    let status = status_of(&fixture("planned-failover-succeeded.yaml"));
    let record = status.planned_failover.unwrap();
    assert_eq!(record, fixtures::succeeded_planned_failover());
    assert!(record.extra.is_empty(), "every field of the example is known: {:?}", record.extra);
}

#[test]
fn hold_example_round_trips() {
    let status = status_of(&fixture("planned-failover-hold.yaml"));
    assert_eq!(status.planned_failover_hold, Some(fixtures::manual_recovery_hold()));
    let built = GroupFixture::three_sites().with_hold(fixtures::manual_recovery_hold()).build();
    let built_status = built.status.unwrap();
    let held =
        built_status.condition(&bloodraven_crd::ConditionType::AutomaticFailoverHeld).unwrap();
    assert_eq!(Some(held), status.conditions.first());
}

#[test]
fn group_examples_round_trip() {
    for name in ["group-three-sites.yaml", "group-reader.yaml", "group-init-from-backup.yaml"] {
        let group: MysqlFailoverGroup = round_trip(&fixture(name));
        assert!(group.spec.sites.len() >= 2, "{name}");
    }
}

#[test]
fn backup_example_round_trips() {
    let backup: MysqlBackup = round_trip(&fixture("backup-one-off.yaml"));
    let storage = backup.status.unwrap().artifact_storage.unwrap();
    assert_eq!(storage.passphrase_secret_key_ref.unwrap().key, "passphrase");
}

#[test]
fn builders_round_trip() {
    let group = GroupFixture::three_sites()
        .with_reader("reader", 104)
        .with_planned_failover(fixtures::succeeded_planned_failover())
        .with_hold(fixtures::manual_recovery_hold())
        .with_s3_profile("nightly-s3")
        .build();
    let yaml = serde_norway::to_string(&group).unwrap();
    let back: MysqlFailoverGroup = round_trip(&yaml);
    assert_eq!(back, group);
}

#[test]
fn the_legacy_source_primary_is_pruned_on_read() {
    // planned failover, "Upgrading across this release": the old sourcePrimary field is pruned
    // on read, so the record no longer names the source (and a write never brings it back).
    let written = serde_json::json!({
        "activeSite": "iad",
        "plannedFailover": {"phase": "Draining", "targetSite": "pdx", "sourcePrimary": "iad",
                            "futureField": {"kept": true}},
    });
    let status: MysqlFailoverGroupStatus = serde_json::from_value(written.clone()).unwrap();
    let record = status.planned_failover.as_ref().unwrap();
    assert!(!record.extra.contains_key("sourcePrimary"), "read: {:?}", record.extra);
    assert!(record.extra.contains_key("futureField"), "other unknown fields survive");
    let mut expected = written;
    expected["plannedFailover"].as_object_mut().unwrap().remove("sourcePrimary");
    assert_eq!(serde_json::to_value(&status).unwrap(), expected);
    // The same through a whole object, as the console and the operator read it.
    let mut group = serde_json::to_value(GroupFixture::three_sites().build()).unwrap();
    group["status"]["plannedFailover"] =
        serde_json::json!({"phase": "Promoting", "sourcePrimary": "iad"});
    let read: MysqlFailoverGroup = serde_json::from_value(group).unwrap();
    let written_back = serde_json::to_value(&read).unwrap();
    assert_eq!(
        written_back["status"]["plannedFailover"],
        serde_json::json!({"phase": "Promoting"})
    );
}
