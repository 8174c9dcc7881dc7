//! The durable writes of a pass: the bookkeeping annotations, the status write (server-side
//! apply under its own field manager, conditioned on the resourceVersion of the read the
//! observation came from) and the annotations that go with it.

use bloodraven_crd::group::MysqlFailoverGroupStatus;
use bloodraven_crd::{Condition, ConditionType, MysqlFailoverGroup};
use kube::api::{Api, Patch, PatchParams};

use crate::planned::{AnnotationChange, HoldChange, StatusWrite};

/// The field manager named on the planned-failover status writes (`plannedFailover`,
/// `plannedFailoverHold`, the AutomaticFailoverHeld condition and a Succeeded run's
/// `lastFailover`).
pub const PLANNED_FIELD_MANAGER: &str = "bloodraven-operator-planned-failover";

/// How a conditioned write ended.
#[derive(Debug)]
pub(crate) enum Written {
    /// It committed; the object as the API server returned it.
    Committed(Box<MysqlFailoverGroup>),
    /// The object changed since the read (its resourceVersion `test` failed, or 409): proven
    /// not committed; decide again.
    Conflict,
    /// Refused (RBAC, 422, a webhook): an answer that says the write was not applied.
    Failed(kube::Error),
    /// No answer that says either way (a timeout, a reset connection, a 5xx): settled before
    /// anything else happens (`io::settle`).
    Ambiguous(String),
}

/// Whether a failed request may still have been applied: a 5xx, or no API answer at all
/// (a transport error, an unreadable response). A request that never left (it could not be
/// built) and an API answer below 500 were not applied.
fn ambiguous(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(response) => response.code >= 500,
        kube::Error::BuildRequest(_) | kube::Error::Auth(_) => false,
        _ => true,
    }
}

/// The conditions after `hold`: AutomaticFailoverHeld replaced, the others kept as read.
fn conditions(current: &[Condition], hold: &HoldChange) -> Option<Vec<Condition>> {
    let replacement = match hold {
        HoldChange::Keep => return None,
        HoldChange::Set(_, condition) | HoldChange::Clear(condition) => condition,
    };
    let mut next: Vec<Condition> = current
        .iter()
        .filter(|condition| condition.type_ != ConditionType::AutomaticFailoverHeld)
        .cloned()
        .collect();
    next.push(replacement.clone());
    Some(next)
}

/// The JSON patch (RFC 6902) of `write` on a group whose status reads `current` (`None`: no
/// status yet): a `test` of the resourceVersion first (the condition), then each field the
/// write sets replaced whole, so nothing of an earlier run's block survives into the next.
/// (A JSON patch rather than server-side apply: the block's shape changes from run to run,
/// and a whole-value replacement says exactly what the record is.)
pub(crate) fn operations(
    resource_version: &str,
    current: Option<&MysqlFailoverGroupStatus>,
    write: &StatusWrite,
) -> Vec<serde_json::Value> {
    let add = |path: &str, value: serde_json::Value| serde_json::json!({ "op": "add", "path": path, "value": value });
    let mut ops = vec![
        serde_json::json!({ "op": "test", "path": "/metadata/resourceVersion", "value": resource_version }),
    ];
    if current.is_none() {
        ops.push(add("/status", serde_json::json!({})));
    }
    if let Some(block) = &write.block {
        ops.push(add("/status/plannedFailover", serde_json::to_value(block).unwrap_or_default()));
    }
    match &write.hold {
        HoldChange::Keep => {}
        HoldChange::Set(hold, _) => {
            ops.push(add(
                "/status/plannedFailoverHold",
                serde_json::to_value(hold).unwrap_or_default(),
            ));
        }
        HoldChange::Clear(_) => {
            if current.is_some_and(|status| status.planned_failover_hold.is_some()) {
                ops.push(
                    serde_json::json!({ "op": "remove", "path": "/status/plannedFailoverHold" }),
                );
            }
        }
    }
    let current_conditions = current.map(|status| status.conditions.as_slice()).unwrap_or(&[]);
    if let Some(conditions) = conditions(current_conditions, &write.hold) {
        ops.push(add("/status/conditions", serde_json::to_value(conditions).unwrap_or_default()));
    }
    if let Some(last) = &write.last_failover {
        ops.push(add("/status/lastFailover", serde_json::to_value(last).unwrap_or_default()));
    }
    ops
}

/// Whether an API error says the write's condition failed: 409, or the 422 of a failed
/// JSON-patch `test`.
fn condition_failed(response: &kube::core::Status) -> bool {
    response.code == 409 || (response.code == 422 && response.message.contains("test"))
}

/// Applies `write`, conditioned on `resource_version`, within `bound` (the durable write's
/// reserve: a write not answered by then is ambiguous).
pub(crate) async fn status(
    groups: &Api<MysqlFailoverGroup>,
    group: &MysqlFailoverGroup,
    resource_version: &str,
    write: &StatusWrite,
    bound: std::time::Duration,
) -> Written {
    let name = group.metadata.name.clone().unwrap_or_default();
    let ops = operations(resource_version, group.status.as_ref(), write);
    let patch: json_patch::Patch = match serde_json::from_value(serde_json::Value::Array(ops)) {
        Ok(patch) => patch,
        Err(error) => {
            return Written::Failed(kube::Error::SerdeError(error));
        }
    };
    let params = PatchParams {
        field_manager: Some(PLANNED_FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    let patch = Patch::Json::<()>(patch);
    match tokio::time::timeout(bound, groups.patch_status(&name, &params, &patch)).await {
        Err(_) => Written::Ambiguous(format!("no answer within {bound:?}")),
        Ok(Ok(group)) => Written::Committed(Box::new(group)),
        Ok(Err(kube::Error::Api(response))) if condition_failed(&response) => Written::Conflict,
        Ok(Err(error)) if ambiguous(&error) => Written::Ambiguous(error.to_string()),
        Ok(Err(error)) => Written::Failed(error),
    }
}

/// The metadata merge patch of `changes` against `group` as last read: a removal only while
/// the key still holds the evaluated value. `None` when nothing changes.
pub(crate) fn annotation_patch(
    group: &MysqlFailoverGroup,
    changes: &[AnnotationChange],
    conditioned: bool,
) -> Option<serde_json::Value> {
    let current = group.metadata.annotations.clone().unwrap_or_default();
    let mut annotations = serde_json::Map::new();
    for change in changes {
        match change {
            AnnotationChange::Set { key, value } => {
                annotations.insert((*key).to_owned(), serde_json::Value::from(value.as_str()));
            }
            AnnotationChange::Remove { key, value } => {
                if current.get(*key) == Some(value) {
                    annotations.insert((*key).to_owned(), serde_json::Value::Null);
                }
            }
        }
    }
    if annotations.is_empty() {
        return None;
    }
    let mut metadata = serde_json::json!({ "annotations": annotations });
    if conditioned && let Some(version) = &group.metadata.resource_version {
        metadata["resourceVersion"] = serde_json::Value::from(version.as_str());
    }
    Some(serde_json::json!({ "metadata": metadata }))
}

/// Commits `changes` on the group (a JSON merge patch, conditioned on the resourceVersion of
/// `group` when `conditioned`). Returns the group after the patch (`group` itself when
/// nothing changed).
pub(crate) async fn annotations(
    groups: &Api<MysqlFailoverGroup>,
    group: &MysqlFailoverGroup,
    changes: &[AnnotationChange],
    conditioned: bool,
) -> Result<MysqlFailoverGroup, kube::Error> {
    let Some(patch) = annotation_patch(group, changes, conditioned) else {
        return Ok(group.clone());
    };
    let name = group.metadata.name.clone().unwrap_or_default();
    groups.patch(&name, &PatchParams::default(), &Patch::Merge(patch)).await
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::group::{LastFailover, PlannedFailoverHold, PlannedFailoverStatus};
    use bloodraven_crd::{ConditionReason, ConditionStatus};

    use super::*;

    fn held(status: ConditionStatus) -> Condition {
        Condition {
            reason: Some(ConditionReason::from("PlannedFailoverManualRecoveryRequired")),
            ..Condition::new(ConditionType::AutomaticFailoverHeld, status)
        }
    }

    #[test]
    fn a_write_is_conditioned_and_replaces_the_block_whole() {
        let current = MysqlFailoverGroupStatus {
            planned_failover: Some(PlannedFailoverStatus {
                run_id: Some("r0".into()),
                ..PlannedFailoverStatus::default()
            }),
            conditions: vec![Condition::new(ConditionType::Ready, ConditionStatus::True)],
            ..MysqlFailoverGroupStatus::default()
        };
        let write = StatusWrite {
            resource_version: "7".into(),
            block: Some(PlannedFailoverStatus {
                run_id: Some("r1".into()),
                ..PlannedFailoverStatus::default()
            }),
            hold: HoldChange::Keep,
            last_failover: Some(LastFailover { target: Some("pdx".into()), ..Default::default() }),
        };
        let ops = operations("7", Some(&current), &write);
        assert_eq!(ops[0]["op"], "test", "the condition comes first");
        assert_eq!(ops[0]["value"], "7");
        assert_eq!(ops[1]["path"], "/status/plannedFailover");
        assert_eq!(ops[1]["value"], serde_json::json!({"runID": "r1"}), "nothing of r0 is kept");
        assert_eq!(ops[2]["path"], "/status/lastFailover");
        assert_eq!(ops.len(), 3, "Keep leaves the hold and the conditions alone: {ops:?}");
        let fresh = operations("1", None, &write);
        assert_eq!(fresh[1], serde_json::json!({"op": "add", "path": "/status", "value": {}}));
    }

    #[test]
    fn a_hold_sets_and_clears_its_condition_only() {
        let current = MysqlFailoverGroupStatus {
            conditions: vec![
                Condition::new(ConditionType::Ready, ConditionStatus::True),
                held(ConditionStatus::False),
            ],
            ..MysqlFailoverGroupStatus::default()
        };
        let hold = PlannedFailoverHold { run_id: Some("r1".into()), ..Default::default() };
        let set = StatusWrite {
            resource_version: "7".into(),
            block: None,
            hold: HoldChange::Set(hold, held(ConditionStatus::True)),
            last_failover: None,
        };
        let ops = operations("7", Some(&current), &set);
        assert_eq!(ops[1]["path"], "/status/plannedFailoverHold");
        assert_eq!(ops[1]["value"]["runID"], "r1");
        assert_eq!(ops[2]["path"], "/status/conditions");
        let conditions = ops[2]["value"].as_array().unwrap();
        assert_eq!(conditions.len(), 2);
        assert_eq!(conditions[0]["type"], "Ready");
        assert_eq!(conditions[1]["status"], "True");
        let cleared = StatusWrite { hold: HoldChange::Clear(held(ConditionStatus::False)), ..set };
        let after = MysqlFailoverGroupStatus {
            planned_failover_hold: Some(PlannedFailoverHold::default()),
            ..current.clone()
        };
        let ops = operations("8", Some(&after), &cleared);
        assert_eq!(
            ops[1],
            serde_json::json!({"op": "remove", "path": "/status/plannedFailoverHold"})
        );
        assert_eq!(ops[2]["value"][1]["status"], "False");
        let ops = operations("8", Some(&current), &cleared);
        assert!(ops.iter().all(|op| op["op"] != "remove"), "no hold to remove: {ops:?}");
    }

    #[test]
    fn a_removal_applies_only_to_the_value_evaluated() {
        let mut group = bloodraven_crd::fixtures::GroupFixture::three_sites().build();
        group.metadata.resource_version = Some("9".into());
        group.metadata.annotations = Some(
            [(bloodraven_crd::annotations::PLANNED_FAILOVER.to_owned(), "fra".to_owned())].into(),
        );
        let stale = [AnnotationChange::Remove {
            key: bloodraven_crd::annotations::PLANNED_FAILOVER,
            value: "pdx".into(),
        }];
        assert_eq!(annotation_patch(&group, &stale, true), None, "a newer request stays");
        let current = [AnnotationChange::Remove {
            key: bloodraven_crd::annotations::PLANNED_FAILOVER,
            value: "fra".into(),
        }];
        let patch = annotation_patch(&group, &current, true).unwrap();
        assert_eq!(
            patch["metadata"]["annotations"][bloodraven_crd::annotations::PLANNED_FAILOVER],
            serde_json::Value::Null
        );
        assert_eq!(patch["metadata"]["resourceVersion"], "9");
    }
}
