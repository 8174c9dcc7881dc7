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

/// The fixture group with `init` as its `spec.initFromBackup`.
fn group_with_init(init: Value) -> Value {
    let mut object = group();
    object["spec"]["initFromBackup"] = init;
    object
}

/// The bootstrap record as a user writes it: a `+02:00` offset and an explicit
/// `allowPartial: false`.
fn written_init() -> Value {
    json!({
        "source": {"s3": {"bucket": "shipstream-backups", "prefix": "orders/nightly",
                          "credentialsSecretName": "s3-backup-creds"}},
        "loadOptions": {"includeSchemas": ["orders", "billing"], "threads": 4},
        "pointInTime": {"stopTime": "2026-04-15T11:30:00+02:00",
                        "archiveProfileName": "source-archive", "allowPartial": false,
                        "excludeGtids": "3e11fa47-71ca-11e1-9e33-c80aa9429562:42"},
        "decryption": {"passphraseSecretKeyRef": {"name": "dump-key", "key": "passphrase"}},
    })
}

/// Applies `edit` to a copy of `init`.
fn edited(init: &Value, edit: impl FnOnce(&mut Value)) -> Value {
    let mut init = init.clone();
    edit(&mut init);
    init
}

fn remove(value: &mut Value, field: &str) {
    value.as_object_mut().unwrap().remove(field);
}

#[test]
fn init_from_backup_re_encodings_are_not_changes() {
    // The comparison is by value (backup-and-restore, "initFromBackup is fixed at creation"):
    // the operator's own writes re-encode stopTime in UTC and drop `allowPartial: false`.
    let old = written_init();
    let same: [(&str, Value); 9] = [
        ("unchanged", old.clone()),
        (
            "stopTime in UTC",
            edited(&old, |i| i["pointInTime"]["stopTime"] = json!("2026-04-15T09:30:00Z")),
        ),
        (
            "stopTime at another offset",
            edited(&old, |i| i["pointInTime"]["stopTime"] = json!("2026-04-15T04:00:00-05:30")),
        ),
        (
            "allowPartial: false dropped",
            edited(&old, |i| remove(&mut i["pointInTime"], "allowPartial")),
        ),
        (
            "both, as the operator writes it",
            edited(&old, |i| {
                i["pointInTime"]["stopTime"] = json!("2026-04-15T09:30:00Z");
                remove(&mut i["pointInTime"], "allowPartial");
            }),
        ),
        (
            "a set in another order",
            edited(&old, |i| i["loadOptions"]["includeSchemas"] = json!(["billing", "orders"])),
        ),
        (
            "a schema default spelled out",
            edited(&old, |i| i["loadOptions"]["skipBinlog"] = json!(true)),
        ),
        ("an empty optional string", edited(&old, |i| i["source"]["s3"]["region"] = json!(""))),
        (
            "optional: false spelled out",
            edited(&old, |i| i["decryption"]["passphraseSecretKeyRef"]["optional"] = json!(false)),
        ),
    ];
    // Both ways: the operator's write after the user's, and the user's manifest applied again
    // over the operator's write.
    for (what, init) in same {
        let (user, operator) = (group_with_init(old.clone()), group_with_init(init));
        assert_eq!(group_errors(&operator, Some(&user)), Vec::<String>::new(), "{what}");
        assert_eq!(
            group_errors(&user, Some(&operator)),
            Vec::<String>::new(),
            "{what}, re-applied"
        );
    }
    // And the other way round: an old record without the defaults against a new one with them.
    let minimal = json!({"source": {"backupRef": {"name": "b"}}});
    let spelled_out = json!({
        "source": {"backupRef": {"name": "b"}},
        "loadOptions": {"threads": 4, "resetProgress": true, "skipBinlog": true,
                        "loadIndexes": true, "includeSchemas": [], "excludeSchemas": []},
    });
    for (new, old) in [(&spelled_out, &minimal), (&minimal, &spelled_out)] {
        let errors =
            group_errors(&group_with_init(new.clone()), Some(&group_with_init(old.clone())));
        assert_eq!(errors, Vec::<String>::new(), "{new} after {old}");
    }
}

#[test]
fn init_from_backup_cannot_be_changed() {
    let old = written_init();
    let changes: Vec<(&str, Value)> = vec![
        ("another bucket", edited(&old, |i| i["source"]["s3"]["bucket"] = json!("other"))),
        ("another prefix", edited(&old, |i| i["source"]["s3"]["prefix"] = json!("orders/weekly"))),
        ("prefix removed", edited(&old, |i| remove(&mut i["source"]["s3"], "prefix"))),
        ("a region added", edited(&old, |i| i["source"]["s3"]["region"] = json!("eu-west-1"))),
        (
            "another source kind",
            edited(&old, |i| i["source"] = json!({"backupRef": {"name": "nightly"}})),
        ),
        (
            "another instant",
            edited(&old, |i| i["pointInTime"]["stopTime"] = json!("2026-04-15T09:30:01Z")),
        ),
        (
            "the same wall clock at another offset",
            edited(&old, |i| i["pointInTime"]["stopTime"] = json!("2026-04-15T11:30:00+01:00")),
        ),
        (
            "allowPartial false to true",
            edited(&old, |i| i["pointInTime"]["allowPartial"] = json!(true)),
        ),
        (
            "another archive profile",
            edited(&old, |i| i["pointInTime"]["archiveProfileName"] = json!("other-archive")),
        ),
        (
            "excludeGtids changed",
            edited(&old, |i| {
                i["pointInTime"]["excludeGtids"] = json!("3e11fa47-71ca-11e1-9e33-c80aa9429562:43")
            }),
        ),
        ("excludeGtids removed", edited(&old, |i| remove(&mut i["pointInTime"], "excludeGtids"))),
        ("pointInTime removed", edited(&old, |i| remove(i, "pointInTime"))),
        ("another thread count", edited(&old, |i| i["loadOptions"]["threads"] = json!(8))),
        (
            "a schema added",
            edited(&old, |i| {
                i["loadOptions"]["includeSchemas"] = json!(["orders", "billing", "audit"])
            }),
        ),
        (
            "a schema swapped",
            edited(&old, |i| i["loadOptions"]["includeSchemas"] = json!(["orders", "audit"])),
        ),
        (
            "schemas excluded",
            edited(&old, |i| i["loadOptions"]["excludeSchemas"] = json!(["audit"])),
        ),
        ("skipBinlog false", edited(&old, |i| i["loadOptions"]["skipBinlog"] = json!(false))),
        ("loadOptions removed, losing the filter", edited(&old, |i| remove(i, "loadOptions"))),
        (
            "another passphrase Secret",
            edited(&old, |i| {
                i["decryption"]["passphraseSecretKeyRef"]["name"] = json!("other-key")
            }),
        ),
        ("decryption removed", edited(&old, |i| remove(i, "decryption"))),
    ];
    let old_group = group_with_init(old.clone());
    for (what, init) in changes {
        let errors = group_errors(&group_with_init(init), Some(&old_group));
        assert!(
            errors.iter().any(|error| error.contains("fixed at creation")),
            "{what}: {errors:?}"
        );
    }
    // allowPartial true to absent (false) is a change too, and so is absent to true.
    let partial = edited(&old, |i| i["pointInTime"]["allowPartial"] = json!(true));
    let dropped = edited(&old, |i| remove(&mut i["pointInTime"], "allowPartial"));
    for (new, old) in [(&dropped, &partial), (&partial, &dropped)] {
        let errors =
            group_errors(&group_with_init(new.clone()), Some(&group_with_init(old.clone())));
        assert_refused(&errors, "fixed at creation");
    }
    // A backupRef source: another backup, or an added pvc block.
    let by_ref = json!({"source": {"backupRef": {"name": "nightly"}}});
    let renamed = json!({"source": {"backupRef": {"name": "weekly"}}});
    let errors = group_errors(&group_with_init(renamed), Some(&group_with_init(by_ref.clone())));
    assert_refused(&errors, "fixed at creation");
    let pvc = json!({"source": {"pvc": {"claimName": "dumps", "subPath": "a"}}});
    let moved = json!({"source": {"pvc": {"claimName": "dumps", "subPath": "b"}}});
    let errors = group_errors(&group_with_init(moved), Some(&group_with_init(pvc)));
    assert_refused(&errors, "fixed at creation");
}
