use bloodraven_crd::catalog::Kind;
use bloodraven_crd::group::{
    PitrToken, PlannedFailoverOutcome, PlannedFailoverPhase, RestoreReclonesPhase,
};
use bloodraven_crd::{ConditionType, MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use k8s_openapi::api::core::v1::Event;
use serde::de::DeserializeOwned;

use super::*;

/// The CRD's OpenAPI schema of `kind`, from `deploy/crds/`.
fn schema(kind: &str) -> Value {
    let file = match kind {
        "MysqlFailoverGroup" => "mysqlfailovergroups.shipstream.io.yaml",
        "MysqlBackup" => "mysqlbackups.shipstream.io.yaml",
        "MysqlBackupVerification" => "mysqlbackupverifications.shipstream.io.yaml",
        other => panic!("no CRD for {other}"),
    };
    let path = format!("{}/../deploy/crds/{file}", env!("CARGO_MANIFEST_DIR"));
    let crd: Value = serde_norway::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

/// Every key of `value` must be a property the schema declares, wherever the schema lists
/// properties (status blocks that keep unknown fields included: a scenario uses none).
fn check_schema(value: &Value, schema: &Value, path: &str, errors: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (key, child) in map {
                    match properties.get(key) {
                        Some(child_schema) => {
                            check_schema(child, child_schema, &format!("{path}.{key}"), errors)
                        }
                        None if path.is_empty()
                            && ["apiVersion", "kind", "metadata"].contains(&key.as_str()) => {}
                        None => errors.push(format!("{path}.{key} is not in the CRD schema")),
                    }
                }
            } else if let Some(additional) =
                schema.get("additionalProperties").filter(|a| a.is_object())
            {
                for (key, child) in map {
                    check_schema(child, additional, &format!("{path}.{key}"), errors);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    check_schema(item, item_schema, &format!("{path}[{index}]"), errors);
                }
            }
        }
        _ => {}
    }
}

/// Deserializes into `K` and back: the object must survive unchanged (no field dropped).
fn round_trip<K: DeserializeOwned + serde::Serialize>(object: &Value, what: &str) -> K {
    let typed: K = serde_json::from_value(object.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let back = serde_json::to_value(&typed).unwrap();
    pretty_assertions::assert_eq!(&back, object, "{what} does not round-trip");
    typed
}

fn groups(name: &str) -> Vec<MysqlFailoverGroup> {
    raw_objects(name)
        .unwrap()
        .into_iter()
        .filter(|o| o["kind"] == "MysqlFailoverGroup")
        .map(|o| serde_json::from_value(o).unwrap())
        .collect()
}

#[test]
fn every_scenario_matches_the_crd_types_strictly() {
    for name in NAMES {
        let objects = raw_objects(name).unwrap();
        assert!(!objects.is_empty(), "{name} is empty");
        for (index, object) in objects.iter().enumerate() {
            let kind = object["kind"].as_str().unwrap();
            let what = format!("{name} document {}", index + 1);
            match kind {
                "MysqlFailoverGroup" => drop(round_trip::<MysqlFailoverGroup>(object, &what)),
                "MysqlBackup" => drop(round_trip::<MysqlBackup>(object, &what)),
                "MysqlBackupVerification" => {
                    drop(round_trip::<MysqlBackupVerification>(object, &what))
                }
                "Event" => drop(round_trip::<Event>(object, &what)),
                other => panic!("{what}: unexpected kind {other}"),
            }
            if kind != "Event" {
                let mut errors = Vec::new();
                check_schema(object, &schema(kind), "", &mut errors);
                assert!(errors.is_empty(), "{what}: {errors:#?}");
            }
        }
    }
}

#[test]
fn the_schema_check_catches_an_unknown_field() {
    let mut object = raw_objects("healthy").unwrap().remove(0);
    object["status"]["plannedFailoverHold"] = serde_json::json!({"runId": "x"});
    let mut errors = Vec::new();
    check_schema(&object, &schema("MysqlFailoverGroup"), "", &mut errors);
    assert_eq!(errors, [".status.plannedFailoverHold.runId is not in the CRD schema"]);
}

#[test]
fn scenarios_hold_what_their_names_say() {
    assert_eq!(groups("healthy").len(), 3);
    for group in groups("healthy") {
        assert_eq!(group.spec.sites.len(), 3);
    }
    let waiting = groups("planned-failover-waiting").remove(0);
    let record = waiting.status.as_ref().unwrap().planned_failover.as_ref().unwrap();
    assert_eq!(record.phase, Some(PlannedFailoverPhase::WaitingForLag));

    let held = groups("hold-standing").remove(0);
    let status = held.status.as_ref().unwrap();
    let result = status.planned_failover.as_ref().unwrap().result.as_ref().unwrap();
    assert_eq!(result.outcome, Some(PlannedFailoverOutcome::ManualRecoveryRequired));
    assert!(status.planned_failover_hold.is_some());
    assert!(status.condition(&ConditionType::AutomaticFailoverHeld).unwrap().is_true());

    let draining = groups("reclone-draining").remove(0);
    let queue = draining.status.as_ref().unwrap().restore_reclones.clone().unwrap();
    assert_eq!(queue.phase, Some(RestoreReclonesPhase::Draining));
    let held_queue = groups("reclone-held").remove(0).status.unwrap().restore_reclones.unwrap();
    assert_eq!(held_queue.phase, Some(RestoreReclonesPhase::Held));

    let divergent = groups("pitr-divergent").remove(0).status.unwrap().restore.unwrap();
    assert_eq!(divergent.reason, Some(PitrToken::PitrArchiveDivergentHistory));
    let message = divergent.message.unwrap();
    assert!(message.starts_with("PITRArchiveDivergentHistory: 5 archived transactions committed between the backup's newest transaction ("));
    assert!(message.contains(
        "They were lost at a failover, written on a replica (errant), or belong to another branch."
    ));
    assert!(message.contains("add them to excludeGtids, or choose a target at or before"));

    assert_eq!(groups("fleet-1000").len(), FLEET_SIZE);
}

#[test]
fn times_shift_to_now() {
    let now: Timestamp = "2026-11-29T20:00:00Z".parse().unwrap();
    let objects = objects("hold-standing", now).unwrap();
    let hold = &objects[0]["status"]["plannedFailoverHold"];
    // 14:32:09 was 7m51s before the epoch.
    assert_eq!(hold["holdTime"], "2026-11-29T19:52:09Z");
    assert_eq!(hold["runID"], "6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10");
    assert!(matches!(raw_objects("nope"), Err(Error::UnknownScenario(_))));
}

/// Condition reasons the catalog has no entry for, each defined by the spec at the condition
/// level: `(condition type, status, reason)`.
const CONDITION_REASONS_OUTSIDE_THE_CATALOG: [(&str, &str, &str); 5] = [
    // Spec, "Status conditions" of the group: Ready=True/Healthy when every site is reachable
    // (bloodraven_crd::ConditionReason lists it under Group: Ready / Degraded).
    ("Ready", "True", "Healthy"),
    // Spec, "Restore-in-place" (post-restore reclones): "the Degraded condition reads NoPrimary";
    // the Ready condition carries the same reason while no site is writable.
    ("Ready", "False", "NoPrimary"),
    // Spec, "Planned failover" (hold): AutomaticFailoverHeld=True and Degraded=True with
    // PlannedFailoverManualRecoveryRequired until an operator acknowledges the hold.
    ("Degraded", "True", "PlannedFailoverManualRecoveryRequired"),
    ("AutomaticFailoverHeld", "True", "PlannedFailoverManualRecoveryRequired"),
    // Spec, "Restore verdict" and "Restore refusals": a verification's Verified condition carries
    // a refusal token when False and the verdict's outcome (TargetCovered) when True.
    ("Verified", "True", "TargetCovered"),
];

/// Every token-valued field of a scenario object paired with the catalog kinds that define it.
fn tokens(object: &Value) -> Vec<(String, String, Vec<Kind>)> {
    let mut found = Vec::new();
    let status = &object["status"];
    let mut push = |path: &str, value: &Value, kinds: &[Kind]| {
        if let Some(token) = value.as_str() {
            found.push((path.to_owned(), token.to_owned(), kinds.to_vec()));
        }
    };
    if object["kind"] == "MysqlFailoverGroup" {
        let planned = &status["plannedFailover"];
        push(
            "plannedFailover.phase",
            &planned["phase"],
            &[Kind::PlannedFailoverPhase, Kind::PlannedFailoverLegacyPhase],
        );
        push(
            "plannedFailover.result.outcome",
            &planned["result"]["outcome"],
            &[Kind::PlannedFailoverOutcome],
        );
        push(
            "plannedFailover.result.reason",
            &planned["result"]["reason"],
            &[Kind::PlannedFailoverReason],
        );
        push(
            "plannedFailover.rollback.reason",
            &planned["rollback"]["reason"],
            &[Kind::PlannedFailoverReason],
        );
        for warning in planned["result"]["warnings"].as_array().into_iter().flatten() {
            push("plannedFailover.result.warnings[]", warning, &[Kind::PlannedFailoverWarning]);
        }
        push(
            "plannedFailover.admission.waitReason",
            &planned["admission"]["waitReason"],
            &[Kind::PlannedFailoverWaitReason],
        );
        push(
            "plannedFailover.admission.deferReason",
            &planned["admission"]["deferReason"],
            &[Kind::PlannedFailoverDeferReason],
        );
        push(
            "plannedFailoverHold.reason",
            &status["plannedFailoverHold"]["reason"],
            &[Kind::PlannedFailoverReason],
        );
        push("restore.phase", &status["restore"]["phase"], &[Kind::RestorePhase]);
        push("restore.reason", &status["restore"]["reason"], &[Kind::PitrRefusal, Kind::Restore]);
        push(
            "restoreInPlace.phase",
            &status["restoreInPlace"]["phase"],
            &[Kind::RestoreInPlacePhase],
        );
        push("restoreInPlace.reason", &status["restoreInPlace"]["reason"], &[Kind::RestoreInPlace]);
        push(
            "restoreReclones.phase",
            &status["restoreReclones"]["phase"],
            &[Kind::RestoreReclonePhase],
        );
        push("pitr.archive.state", &status["pitr"]["archive"]["state"], &[Kind::ArchiveState]);
        push(
            "pitr.archive.reason",
            &status["pitr"]["archive"]["reason"],
            &[Kind::ArchiveReason, Kind::ArchiveBindingReason],
        );
    }
    found
}

/// Whether a condition's reason is a spec token: in the catalog, or whitelisted above.
fn condition_reason_known(kind: &str, condition: &Value) -> Result<(), String> {
    let (Some(kind_of), Some(status), Some(reason)) =
        (condition["type"].as_str(), condition["status"].as_str(), condition["reason"].as_str())
    else {
        return Ok(());
    };
    let catalog_kinds: &[Kind] = match (kind, kind_of) {
        (_, "PITRArchiveReady") => &[Kind::ArchiveReason, Kind::PitrSignal],
        (_, "PITRArchiveBindingReady") => &[Kind::ArchiveBindingReason],
        ("MysqlBackupVerification", "Verified") => &[Kind::PitrRefusal],
        (_, "ArtifactCleanup") => &[Kind::ArtifactCleanup],
        _ => &[],
    };
    let in_catalog =
        catalog_kinds.iter().any(|k| bloodraven_crd::catalog::lookup(*k, reason).is_some())
            || (catalog_kinds.is_empty()
                && bloodraven_crd::catalog::lookup_any(reason).next().is_some());
    if in_catalog || CONDITION_REASONS_OUTSIDE_THE_CATALOG.contains(&(kind_of, status, reason)) {
        Ok(())
    } else {
        Err(format!("condition {kind_of}={status} has reason {reason:?}, which is no spec token"))
    }
}

fn unknown_tokens(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for (index, object) in raw_objects(name).unwrap().iter().enumerate() {
        let what = format!("{name} document {}", index + 1);
        let kind = object["kind"].as_str().unwrap_or("?");
        for condition in object["status"]["conditions"].as_array().into_iter().flatten() {
            if let Err(error) = condition_reason_known(kind, condition) {
                errors.push(format!("{what}: {error}"));
            }
        }
        for (path, token, kinds) in tokens(object) {
            if !kinds.iter().any(|k| bloodraven_crd::catalog::lookup(*k, &token).is_some()) {
                errors.push(format!("{what}: status.{path} = {token:?} is not in {kinds:?}"));
            }
        }
    }
    errors
}

#[test]
fn every_scenario_token_is_in_the_catalog() {
    let errors: Vec<String> = NAMES.iter().flat_map(|name| unknown_tokens(name)).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn the_token_check_catches_a_token_outside_the_catalog() {
    let condition =
        serde_json::json!({"type": "PITRArchiveReady", "status": "True", "reason": "Healthy"});
    assert!(condition_reason_known("MysqlFailoverGroup", &condition).is_err());
    let mut group = raw_objects("hold-standing").unwrap().remove(0);
    group["status"]["plannedFailover"]["result"]["warnings"] = serde_json::json!(["Slow"]);
    let found = tokens(&group);
    let warning =
        found.iter().find(|(path, ..)| path == "plannedFailover.result.warnings[]").unwrap();
    assert_eq!(warning.1, "Slow");
    assert!(bloodraven_crd::catalog::lookup(Kind::PlannedFailoverWarning, "Slow").is_none());
}

/// `fleet-10000` (for measuring) is the fleet generator at 10,000 groups: listed by `lab`
/// (`all_names`) and in the unknown-scenario error, not in [`NAMES`].
#[test]
fn the_large_fleet_is_loadable_but_not_in_the_per_scenario_list() {
    assert!(!NAMES.contains(&"fleet-10000"));
    assert!(super::all_names().any(|name| name == "fleet-10000"));
    let objects = super::raw_objects("fleet-10000").unwrap();
    assert_eq!(objects.len(), super::LARGE_FLEET_SIZE);
    assert_eq!(objects[9_999]["metadata"]["name"], "db-9999");
    let error = super::raw_objects("fleet-100").unwrap_err().to_string();
    assert!(error.contains("fleet-10000"), "{error}");
}
