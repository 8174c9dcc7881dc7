//! The committed CRDs' `x-kubernetes-validations` rules, run with kube's client-side CEL
//! evaluator: the spec's bounds and shape rules accept what they should and refuse the rest.

use bloodraven_crd::fixtures::GroupFixture;
use serde_json::{Value, json};

use crate::schema;

fn group() -> Value {
    serde_json::to_value(GroupFixture::three_sites().build()).unwrap()
}

/// Validates `object` (and `old`, for transition rules) against the group CRD; returns the
/// error messages.
fn group_errors(object: &Value, old: Option<&Value>) -> Vec<String> {
    errors("mysqlfailovergroups.shipstream.io.yaml", object, old)
}

fn errors(file_name: &str, object: &Value, old: Option<&Value>) -> Vec<String> {
    match kube::core::cel::Validator::new().validate(&schema(file_name), object, old) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.into_vec().into_iter().map(|error| error.to_string()).collect(),
    }
}

/// Asserts that exactly the listed messages are reported (by substring).
fn assert_refused(errors: &[String], expected: &str) {
    assert!(
        errors.iter().any(|error| error.contains(expected)),
        "expected {expected:?} in {errors:?}"
    );
}

#[test]
fn the_fixture_group_is_valid() {
    assert_eq!(group_errors(&group(), None), Vec::<String>::new());
    assert_eq!(group_errors(&group(), Some(&group())), Vec::<String>::new());
}

#[test]
fn planned_failover_timer_bounds() {
    let cases = [
        ("maxLagWait", "1s", true),
        ("maxLagWait", "5m", true),
        ("maxLagWait", "1h", true),
        ("maxLagWait", "0s", false),
        ("maxLagWait", "999ms", false),
        ("maxLagWait", "1h0m1s", false),
        ("drainTimeout", "30s", true),
        ("drainTimeout", "10m", true),
        ("drainTimeout", "10m1s", false),
        ("drainTimeout", "0s", false),
    ];
    for (field, value, accepted) in cases {
        let mut object = group();
        object["spec"]["plannedFailover"] = json!({ field: value });
        let errors = group_errors(&object, None);
        if accepted {
            assert_eq!(errors, Vec::<String>::new(), "{field}={value}");
        } else {
            assert_refused(&errors, &format!("{field} must be between"));
        }
    }
}

#[test]
fn dragonfly_sync_wait_bounds() {
    for (value, accepted) in [("30s", true), ("10m", true), ("10m1s", false), ("0s", false)] {
        let mut object = group();
        object["spec"]["dragonfly"] =
            json!({"enabled": true, "plannedFailover": {"maxSyncWait": value}});
        let errors = group_errors(&object, None);
        assert_eq!(errors.is_empty(), accepted, "maxSyncWait={value}: {errors:?}");
    }
}

#[test]
fn at_least_two_primary_candidates() {
    let mut object = group();
    object["spec"]["sites"][1]["role"] = json!("DisasterRecovery");
    assert_refused(&group_errors(&object, None), "at least two PrimaryCandidate sites");
    // A site without a role is a PrimaryCandidate.
    let mut object = group();
    object["spec"]["sites"][1].as_object_mut().unwrap().remove("role");
    assert_eq!(group_errors(&object, None), Vec::<String>::new());
}

#[test]
fn sites_cannot_be_removed() {
    let old = group();
    let mut object = group();
    object["spec"]["sites"].as_array_mut().unwrap().pop();
    assert_refused(&group_errors(&object, Some(&old)), "cannot be removed");
    // Adding one is fine.
    let mut object = group();
    object["spec"]["sites"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "reader", "serverID": 104, "role": "ReadOnly"}));
    assert_eq!(group_errors(&object, Some(&old)), Vec::<String>::new());
}

#[test]
fn init_from_backup_cannot_be_added_or_removed() {
    let without = group();
    let mut with = group();
    with["spec"]["initFromBackup"] = json!({"source": {"backupRef": {"name": "b"}}});
    assert_eq!(group_errors(&with, None), Vec::<String>::new());
    assert_refused(&group_errors(&with, Some(&without)), "fixed at creation");
    assert_refused(&group_errors(&without, Some(&with)), "fixed at creation");
    assert_eq!(group_errors(&with, Some(&with)), Vec::<String>::new());
}

#[test]
fn restore_sources_take_exactly_one_kind() {
    let mut object = group();
    object["spec"]["initFromBackup"] = json!({"source": {
        "backupRef": {"name": "b"},
        "pvc": {"claimName": "c"},
    }});
    assert_refused(&group_errors(&object, None), "exactly one of source.backupRef");
    object["spec"]["initFromBackup"] = json!({"source": {}});
    assert_refused(&group_errors(&object, None), "exactly one of source.backupRef");
}

#[test]
fn restore_in_place_takes_at_most_one_schema() {
    let mut object = group();
    object["spec"]["restoreInPlace"] = json!({
        "confirm": "2026-04-17T14:32:00Z",
        "source": {"backupRef": {"name": "b"}},
        "loadOptions": {"includeSchemas": ["tenant_42"]},
    });
    assert_eq!(group_errors(&object, None), Vec::<String>::new());
    object["spec"]["restoreInPlace"]["loadOptions"]["includeSchemas"] = json!(["a", "b"]);
    assert_refused(&group_errors(&object, None), "at most one entry");
}

#[test]
fn backup_storage_and_pitr_shapes() {
    let profile = |storage: Value| json!({"profiles": [{"name": "p", "storage": storage}]});
    let cases = [
        (profile(json!({"type": "S3"})), Some("type S3 needs s3")),
        (profile(json!({"type": "PVC", "s3": {"bucket": "b"}})), Some("type PVC needs pvc")),
        (
            profile(
                json!({"type": "PVC", "pvc": {"claimName": "c", "provisioned": {"size": "1Gi"}}}),
            ),
            Some("exactly one of pvc.provisioned and pvc.claimName"),
        ),
        (profile(json!({"type": "PVC", "pvc": {"claimName": "c"}})), None),
        (json!({"pitr": {"enabled": true}}), Some("profileName is required")),
        (json!({"pitr": {"enabled": true, "profileName": "p"}}), None),
        (
            json!({"retry": {"initialBackoff": "10m", "maxBackoff": "1m"}}),
            Some("maxBackoff must be at least initialBackoff"),
        ),
        (json!({"retry": {"initialBackoff": "2h"}}), Some("initialBackoff must be between")),
        (json!({"retry": {"maxAttempts": 3, "initialBackoff": "1m", "maxBackoff": "30m"}}), None),
    ];
    for (backup, refusal) in cases {
        let mut object = group();
        object["spec"]["backup"] = backup.clone();
        let errors = group_errors(&object, None);
        match refusal {
            Some(message) => assert_refused(&errors, message),
            None => assert_eq!(errors, Vec::<String>::new(), "{backup}"),
        }
    }
}

#[test]
fn verification_timestamp_mode_needs_a_stop_time() {
    let verification = |point_in_time: Value| {
        json!({
            "apiVersion": "shipstream.io/v1alpha1",
            "kind": "MysqlBackupVerification",
            "metadata": {"name": "v"},
            "spec": {"failoverGroupRef": {"name": "orders"}, "profileName": "p",
                     "pointInTime": point_in_time},
        })
    };
    let file = "mysqlbackupverifications.shipstream.io.yaml";
    assert_refused(
        &errors(file, &verification(json!({"mode": "Timestamp"})), None),
        "stopTime is required",
    );
    let ok = verification(json!({"mode": "Timestamp", "stopTime": "2026-04-15T09:30:00Z"}));
    assert_eq!(errors(file, &ok, None), Vec::<String>::new());
    assert_eq!(errors(file, &verification(json!({"mode": "Latest"})), None), Vec::<String>::new());
}

#[test]
fn archive_profile_name_is_required_with_the_spec_message() {
    let mut object = group();
    object["spec"]["initFromBackup"] = json!({
        "source": {"backupRef": {"name": "b"}},
        "pointInTime": {"stopTime": "2026-04-15T09:30:00Z"},
    });
    assert_refused(
        &group_errors(&object, None),
        "pointInTime.archiveProfileName is required: name the backup profile whose PITR archive \
         the restore reads",
    );
    object["spec"]["initFromBackup"]["pointInTime"]["archiveProfileName"] = json!("source-archive");
    assert_eq!(group_errors(&object, None), Vec::<String>::new());
}

#[test]
fn provisioned_backup_claims_cannot_change() {
    let with_pvc = |pvc: Value| {
        let mut object = group();
        object["spec"]["backup"] =
            json!({"profiles": [{"name": "daily-local", "storage": {"type": "PVC", "pvc": pvc}}]});
        object
    };
    let old = with_pvc(json!({"provisioned": {"storageClassName": "fast", "size": "50Gi"}}));
    assert_eq!(group_errors(&old, Some(&old)), Vec::<String>::new());
    let resized = with_pvc(json!({"provisioned": {"storageClassName": "fast", "size": "80Gi"}}));
    assert_refused(&group_errors(&resized, Some(&old)), "pvc.provisioned cannot change");
    let claimed = with_pvc(json!({"claimName": "mine"}));
    assert_refused(&group_errors(&claimed, Some(&old)), "pvc.provisioned cannot change");
}

#[test]
fn recorded_artifact_storage_is_immutable() {
    let file = "mysqlbackups.shipstream.io.yaml";
    let backup = |status: Option<Value>| {
        let mut object = json!({
            "apiVersion": "shipstream.io/v1alpha1",
            "kind": "MysqlBackup",
            "metadata": {"name": "b"},
            "spec": {"failoverGroupRef": {"name": "orders"}, "profileName": "p"},
        });
        if let Some(status) = status {
            object["status"] = status;
        }
        object
    };
    let storage = json!({"type": "S3", "location": "s3://bucket/orders/b", "bucket": "bucket"});
    let recorded = backup(Some(json!({"phase": "Running", "artifactStorage": storage})));
    let fresh = backup(Some(json!({"phase": "Pending"})));
    // Recording it the first time, and keeping it, are fine.
    assert_eq!(errors(file, &recorded, Some(&fresh)), Vec::<String>::new());
    assert_eq!(errors(file, &recorded, Some(&recorded)), Vec::<String>::new());
    // Changing it, removing it, or removing the whole status is refused.
    let moved = backup(Some(json!({"artifactStorage": {"type": "S3", "location": "s3://x/b"}})));
    let message = "status.artifactStorage cannot change or be removed";
    assert_refused(&errors(file, &moved, Some(&recorded)), message);
    assert_refused(&errors(file, &fresh, Some(&recorded)), message);
    assert_refused(&errors(file, &backup(None), Some(&recorded)), message);
}
