//! [`preview`]: the exact request an operation sends, with its precondition.
//!
//! Group changes are JSON patches (`application/json-patch+json`): first a `test` of every
//! field the decision rested on, then the change. The API server applies all or nothing, so a
//! concurrent change to a tested field fails the whole patch (422), and the console re-reads
//! and asks again. A test of `null` passes on a missing member, as the API server's json-patch
//! library does. The group's resourceVersion of the read is recorded as what the decision was
//! made on; it is not sent as a precondition, because the operator rewrites status on every
//! poll and would make every patch conflict. Creates carry no precondition: the name is fresh,
//! and an `AlreadyExists` is reported, never retried.

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::{
    ACKNOWLEDGE_PLANNED_FAILOVER_HOLD, HoldAcknowledgement, PLANNED_FAILOVER,
    PlannedFailoverRequest, RECLONE_SITE, RecloneRequest, ValueError,
};
use bloodraven_crd::group::RestoreReclonesPhase;
use serde::Serialize;
use serde_json::{Value, json};

use super::{API, GroupRef, Observed, WriteOp};

/// The HTTP verb of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verb {
    #[serde(rename = "PATCH")]
    Patch,
    #[serde(rename = "POST")]
    Create,
}

impl Verb {
    pub fn method(self) -> &'static str {
        match self {
            Verb::Patch => "PATCH",
            Verb::Create => "POST",
        }
    }
}

/// A JSON-patch `test` the request carries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Test {
    pub path: String,
    pub value: Value,
}

/// What the request is conditioned on.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Precondition {
    /// The resourceVersion of the read the decision was made on.
    pub decided_on_resource_version: Option<String>,
    /// The `test` operations at the head of the patch (empty for a create).
    pub tests: Vec<Test>,
}

/// The exact request: verb, path, content type and body, with its precondition.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Patch {
    pub verb: Verb,
    pub path: String,
    pub content_type: &'static str,
    pub body: Value,
    pub precondition: Precondition,
}

impl Patch {
    /// `PATCH /apis/...` and the body on one line each, as the dialog and `--dry-run` show it.
    pub fn render(&self) -> String {
        format!(
            "{} {} ({})\n{}",
            self.verb.method(),
            self.path,
            self.content_type,
            serde_json::to_string(&self.body).unwrap_or_default()
        )
    }
}

/// Why no request can be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PreviewError {
    #[error("group {0} was not read; re-read it and try again")]
    GroupNotRead(GroupRef),
    #[error("backup {0:?} was not read; re-read it and try again")]
    BackupNotRead(String),
    #[error("the annotation value is refused: {0}")]
    Annotation(#[from] ValueError),
    #[error("group {group} has no {what}: {remedy}")]
    Missing { group: GroupRef, what: &'static str, remedy: &'static str },
}

const JSON_PATCH: &str = "application/json-patch+json";
const JSON: &str = "application/json";

/// The request `op` sends, decided on `observed`.
pub fn preview(op: &WriteOp, observed: &Observed) -> Result<Patch, PreviewError> {
    let group_ref = op.group();
    let group =
        observed.group.as_ref().ok_or_else(|| PreviewError::GroupNotRead(group_ref.clone()))?;
    let resource_version = group.metadata.resource_version.clone();
    match op {
        WriteOp::RequestPlannedFailover { target, max_lag_wait, .. } => {
            let text = match max_lag_wait {
                Some(wait) => format!("{target}:maxLagWait={wait}"),
                None => target.clone(),
            };
            let value = PlannedFailoverRequest::parse(&text)?.to_string();
            let active = group.status.as_ref().and_then(|status| status.active_site.clone());
            let tests = vec![
                test("/status/activeSite", json!(active)),
                test(&annotation_pointer(PLANNED_FAILOVER), Value::Null),
            ];
            Ok(annotation_patch(group_ref, group, resource_version, tests, PLANNED_FAILOVER, value))
        }
        WriteOp::AcknowledgeHold { run_id, .. } => {
            let value = HoldAcknowledgement::parse(run_id)?.to_string();
            let held = group
                .status
                .as_ref()
                .and_then(|status| status.planned_failover_hold.as_ref())
                .and_then(|hold| hold.run_id.clone());
            let tests = vec![
                test("/status/plannedFailoverHold/runID", json!(held)),
                test(&annotation_pointer(ACKNOWLEDGE_PLANNED_FAILOVER_HOLD), Value::Null),
            ];
            Ok(annotation_patch(
                group_ref,
                group,
                resource_version,
                tests,
                ACKNOWLEDGE_PLANNED_FAILOVER_HOLD,
                value,
            ))
        }
        WriteOp::RecloneQueueDrain { .. } | WriteOp::RecloneQueueRelease { .. } => {
            let queue = group
                .status
                .as_ref()
                .and_then(|status| status.restore_reclones.as_ref())
                .ok_or_else(|| PreviewError::Missing {
                group: group_ref.clone(),
                what: "status.restoreReclones",
                remedy: "there is no reclone queue to decide",
            })?;
            let tests = vec![
                test("/status/restoreReclones/runID", json!(queue.run_id)),
                test(
                    "/status/restoreReclones/phase",
                    json!(queue.phase.as_ref().map(RestoreReclonesPhase::as_str)),
                ),
            ];
            let change = match op {
                WriteOp::RecloneQueueDrain { .. } => json!({
                    "op": "replace",
                    "path": "/status/restoreReclones/phase",
                    "value": RestoreReclonesPhase::Draining.as_str(),
                }),
                _ => json!({ "op": "remove", "path": "/status/restoreReclones" }),
            };
            Ok(Patch {
                verb: Verb::Patch,
                path: format!("{}/status", group_path(group_ref)),
                content_type: JSON_PATCH,
                body: json_patch_body(&tests, vec![change]),
                precondition: Precondition { decided_on_resource_version: resource_version, tests },
            })
        }
        WriteOp::Reclone { site, .. } => {
            let uid = group.metadata.uid.clone().unwrap_or_default();
            let value = RecloneRequest::new(site, &group_ref.name, &uid)?.to_string();
            let tests = vec![
                test("/metadata/uid", json!(uid)),
                test(&annotation_pointer(RECLONE_SITE), Value::Null),
            ];
            Ok(annotation_patch(group_ref, group, resource_version, tests, RECLONE_SITE, value))
        }
        WriteOp::BackupFromSite { name, profile, site, .. } => {
            Ok(create_backup(group_ref, resource_version, name, profile, Some(site)))
        }
        WriteOp::CreateBackup { name, profile, .. } => {
            Ok(create_backup(group_ref, resource_version, name, profile, None))
        }
        WriteOp::RestorePitrToNewGroup {
            name,
            backup,
            archive_profile,
            stop_time,
            exclude_gtids,
            allow_partial,
            ..
        } => {
            let mut point_in_time = json!({
                "stopTime": stop_time,
                "archiveProfileName": archive_profile,
            });
            if !exclude_gtids.is_empty() {
                point_in_time["excludeGtids"] = json!(exclude_gtids);
            }
            if *allow_partial {
                point_in_time["allowPartial"] = json!(true);
            }
            Ok(Patch {
                verb: Verb::Create,
                path: format!("{API}/namespaces/{}/mysqlfailovergroups", group_ref.namespace),
                content_type: JSON,
                body: pitr_group(group_ref, group, name, backup, point_in_time),
                precondition: Precondition {
                    decided_on_resource_version: resource_version,
                    tests: Vec::new(),
                },
            })
        }
        WriteOp::CreateVerification { name, profile, backup, .. } => {
            let read = observed
                .backup
                .as_ref()
                .ok_or_else(|| PreviewError::BackupNotRead(backup.clone()))?;
            let body = json!({
                "apiVersion": "shipstream.io/v1alpha1",
                "kind": "MysqlBackupVerification",
                "metadata": { "name": name, "namespace": group_ref.namespace },
                "spec": {
                    "failoverGroupRef": { "name": group_ref.name },
                    "profileName": profile,
                    "backupRef": { "name": backup },
                },
            });
            Ok(Patch {
                verb: Verb::Create,
                path: format!("{API}/namespaces/{}/mysqlbackupverifications", group_ref.namespace),
                content_type: JSON,
                body,
                precondition: Precondition {
                    decided_on_resource_version: read.metadata.resource_version.clone(),
                    tests: Vec::new(),
                },
            })
        }
    }
}

fn create_backup(
    group_ref: &GroupRef,
    resource_version: Option<String>,
    name: &str,
    profile: &str,
    site: Option<&String>,
) -> Patch {
    let mut spec =
        json!({ "failoverGroupRef": { "name": group_ref.name }, "profileName": profile });
    if let Some(site) = site {
        spec["sourceSite"] = json!(site);
    }
    Patch {
        verb: Verb::Create,
        path: format!("{API}/namespaces/{}/mysqlbackups", group_ref.namespace),
        content_type: JSON,
        body: json!({
            "apiVersion": "shipstream.io/v1alpha1",
            "kind": "MysqlBackup",
            "metadata": { "name": name, "namespace": group_ref.namespace },
            "spec": spec,
        }),
        precondition: Precondition {
            decided_on_resource_version: resource_version,
            tests: Vec::new(),
        },
    }
}

/// The new group of a point-in-time restore: the source group's spec with `initFromBackup`
/// set to `backup` and `point_in_time` (its `loadOptions` kept), and without what would make
/// two groups fight: `dns` (the record names the source's active site), `backup.pitr` (the
/// restored group must not archive into the archive it restores from:
/// `PITRArchiveDestinationShared`) and `restoreInPlace`. Add them back once it is verified.
fn pitr_group(
    group_ref: &GroupRef,
    group: &MysqlFailoverGroup,
    name: &str,
    backup: &str,
    point_in_time: Value,
) -> Value {
    let mut spec = serde_json::to_value(&group.spec).unwrap_or_else(|_| json!({}));
    let load_options = spec.pointer("/initFromBackup/loadOptions").cloned();
    if let Some(fields) = spec.as_object_mut() {
        fields.remove("dns");
        fields.remove("restoreInPlace");
        let mut init = json!({
            "source": { "backupRef": { "name": backup } },
            "pointInTime": point_in_time,
        });
        if let Some(load_options) = load_options {
            init["loadOptions"] = load_options;
        }
        fields.insert("initFromBackup".to_owned(), init);
    }
    if let Some(backup) = spec.get_mut("backup").and_then(Value::as_object_mut) {
        backup.remove("pitr");
    }
    json!({
        "apiVersion": "shipstream.io/v1alpha1",
        "kind": "MysqlFailoverGroup",
        "metadata": { "name": name, "namespace": group_ref.namespace },
        "spec": spec,
    })
}

/// `/apis/shipstream.io/v1alpha1/namespaces/<ns>/mysqlfailovergroups/<name>`.
pub(crate) fn group_path(group: &GroupRef) -> String {
    format!("{API}/namespaces/{}/mysqlfailovergroups/{}", group.namespace, group.name)
}

fn test(path: &str, value: Value) -> Test {
    Test { path: path.to_owned(), value }
}

/// The JSON pointer of an annotation (`/` in the key escaped as `~1`).
fn annotation_pointer(key: &str) -> String {
    format!("/metadata/annotations/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn json_patch_body(tests: &[Test], changes: Vec<Value>) -> Value {
    let mut operations: Vec<Value> = tests
        .iter()
        .map(|test| json!({ "op": "test", "path": test.path, "value": test.value }))
        .collect();
    operations.extend(changes);
    Value::Array(operations)
}

/// Adds one annotation. Without an annotations map the patch adds the map, and tests that it
/// is still missing, so a map written meanwhile is never replaced.
fn annotation_patch(
    group_ref: &GroupRef,
    group: &MysqlFailoverGroup,
    resource_version: Option<String>,
    mut tests: Vec<Test>,
    key: &str,
    value: String,
) -> Patch {
    let change = if group.metadata.annotations.is_some() {
        json!({ "op": "add", "path": annotation_pointer(key), "value": value })
    } else {
        // The key test is moot without a map; the map test replaces it.
        tests.retain(|test| test.path != annotation_pointer(key));
        tests.push(test("/metadata/annotations", Value::Null));
        json!({ "op": "add", "path": "/metadata/annotations", "value": { key: value } })
    };
    Patch {
        verb: Verb::Patch,
        path: group_path(group_ref),
        content_type: JSON_PATCH,
        body: json_patch_body(&tests, vec![change]),
        precondition: Precondition { decided_on_resource_version: resource_version, tests },
    }
}
