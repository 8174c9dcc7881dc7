//! The IO of guided operations: read what an operation is decided on (uncached GETs), ask
//! who the console is and whether RBAC lets it (the two self-reviews), and send a confirmed
//! operation with a journal record before and after.
//!
//! A 409, or a 422 from a failed JSON-patch `test`, is a [`SendError::Conflict`]: the caller
//! re-reads ([`prepare`] again), shows the new preflight and asks again. Nothing here ever
//! retries a write.

use std::sync::Arc;

use bloodraven_crd::{MysqlBackup, MysqlFailoverGroup};
use kube::Api;
use serde_json::{Value, json};

use super::{Observed, Patch, Preflight, PreviewError, WriteOp, preflight, preview};
use crate::client::WriteSwitch;
use crate::journal::{Journal, JournalError, Phase, Record};

/// An operation decided on a fresh read: what it will send and why it may not.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    pub op: WriteOp,
    pub observed: Observed,
    pub preflight: Preflight,
    pub patch: Result<Patch, PreviewError>,
}

impl Prepared {
    /// Whether the user may confirm it: a request could be built and nothing refuses.
    pub fn confirmable(&self) -> bool {
        self.patch.is_ok() && self.preflight.confirmable()
    }
}

/// Who the console is and what RBAC lets it do, from the two self-reviews.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Access {
    /// `status.userInfo.username` of the SelfSubjectReview.
    pub user: Option<String>,
    /// `status.allowed` of the SelfSubjectAccessReview for the request; `None` when the
    /// review could not be asked.
    pub allowed: Option<bool>,
    /// The server's reason (or why it could not be asked).
    pub reason: Option<String>,
}

impl Access {
    /// `allowed`, `not allowed (<reason>)` or `unknown (<why>)`.
    pub fn describe(&self) -> String {
        match self.allowed {
            Some(true) => "allowed".to_owned(),
            Some(false) => match &self.reason {
                Some(reason) if !reason.is_empty() => format!("not allowed ({reason})"),
                _ => "not allowed".to_owned(),
            },
            None => format!("unknown ({})", self.reason.as_deref().unwrap_or("no answer")),
        }
    }
}

/// Why an operation was not sent, or failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("cannot read {what}: {source}")]
    Read { what: String, source: kube::Error },
    #[error(
        "the console is read-only: turn write mode on (--write, or W in the console) to send {0}"
    )]
    ReadOnly(String),
    #[error("the preflight refuses {op}:\n{checks}")]
    Refused { op: String, checks: String },
    #[error(transparent)]
    Preview(#[from] PreviewError),
    #[error(
        "{what} changed since it was read ({message}); nothing was written: re-read, check and confirm again"
    )]
    Conflict { what: String, message: String },
    #[error("the API server refused the request ({code} {reason}): {message}")]
    Api { code: u16, reason: String, message: String },
    #[error("the request failed: {0}")]
    Transport(String),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Review(#[from] super::review::ReviewError),
}

/// What a sent operation returned.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sent {
    pub operation_id: String,
    pub status: u16,
    pub resource_version: Option<String>,
    /// Whether the ConsoleOperation Event was written (RBAC may not allow it).
    pub event: bool,
}

/// A console that may write: the client, its context, the switch and the journal.
#[derive(Clone)]
pub struct Session {
    pub client: kube::Client,
    pub context: String,
    pub switch: WriteSwitch,
    pub journal: Arc<Journal>,
}

/// Reads what `op` is decided on: the group and, for a verification, the backup.
pub async fn observe(client: &kube::Client, op: &WriteOp) -> Result<Observed, SendError> {
    let group_ref = op.group();
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), &group_ref.namespace);
    let group = groups
        .get_opt(&group_ref.name)
        .await
        .map_err(|source| SendError::Read { what: format!("group {group_ref}"), source })?;
    let backup = match op {
        WriteOp::CreateVerification { backup, .. }
        | WriteOp::RestorePitrToNewGroup { backup, .. } => {
            let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), &group_ref.namespace);
            backups
                .get_opt(backup)
                .await
                .map_err(|source| SendError::Read { what: format!("backup {backup}"), source })?
        }
        _ => None,
    };
    Ok(Observed { group, backup, rotating_sites: Vec::new() })
}

/// Reads and decides: the preflight and the request `op` would send, at `now`.
pub async fn prepare(
    client: &kube::Client,
    op: WriteOp,
    now: jiff::Timestamp,
) -> Result<Prepared, SendError> {
    let observed = observe(client, &op).await?;
    Ok(decide(op, observed, now))
}

/// The pure half of [`prepare`].
pub fn decide(op: WriteOp, observed: Observed, now: jiff::Timestamp) -> Prepared {
    let preflight = preflight(&op, &observed, now);
    let patch = preview(&op, &observed);
    Prepared { op, observed, preflight, patch }
}

/// The SelfSubjectReview's user name.
pub async fn identity(client: &kube::Client) -> Result<String, SendError> {
    let body = json!({ "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview" });
    let answer = post(client, crate::client::REVIEW_PATHS[0], &body).await?;
    Ok(answer
        .pointer("/status/userInfo/username")
        .and_then(Value::as_str)
        .unwrap_or("system:anonymous")
        .to_owned())
}

/// The resource attributes of a request path (`/apis/<group>/<version>/namespaces/<ns>/<resource>[/<name>[/<sub>]]`).
fn attributes(verb: &str, path: &str) -> Value {
    let segments: Vec<&str> = path.split('/').filter(|segment| !segment.is_empty()).collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => ("", &[][..]),
    };
    let mut attributes = json!({ "verb": verb, "group": group });
    if let ["namespaces", namespace, resource, more @ ..] = rest {
        attributes["namespace"] = json!(namespace);
        attributes["resource"] = json!(resource);
        if let Some(name) = more.first() {
            attributes["name"] = json!(name);
        }
        if let Some(subresource) = more.get(1) {
            attributes["subresource"] = json!(subresource);
        }
    }
    attributes
}

/// Whether RBAC lets the console send `verb` to `path` (a SelfSubjectAccessReview).
pub async fn may(client: &kube::Client, verb: &str, path: &str) -> Access {
    let body = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": { "resourceAttributes": attributes(verb, path) },
    });
    match post(client, crate::client::REVIEW_PATHS[1], &body).await {
        Ok(answer) => Access {
            user: None,
            allowed: Some(
                answer.pointer("/status/allowed").and_then(Value::as_bool).unwrap_or(false),
            ),
            reason: answer.pointer("/status/reason").and_then(Value::as_str).map(str::to_owned),
        },
        Err(error) => Access { user: None, allowed: None, reason: Some(error.to_string()) },
    }
}

/// Identity and RBAC for a prepared operation, as the confirm dialog shows them.
pub async fn access(client: &kube::Client, prepared: &Prepared) -> Access {
    let user = identity(client).await.ok();
    let Ok(patch) = &prepared.patch else {
        return Access { user, allowed: None, reason: Some("no request".to_owned()) };
    };
    let verb = match patch.verb {
        super::Verb::Patch => "patch",
        super::Verb::Create => "create",
    };
    Access { user, ..may(client, verb, &patch.path).await }
}

async fn post(client: &kube::Client, path: &str, body: &Value) -> Result<Value, SendError> {
    let request = hyper::Request::post(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap_or_default())
        .map_err(|error| SendError::Transport(error.to_string()))?;
    client.request::<Value>(request).await.map_err(|error| api_error(error, path, false))
}

fn api_error(error: kube::Error, what: &str, tested: bool) -> SendError {
    match error {
        kube::Error::Api(status) => {
            let message = status.message.clone();
            let test_failed = tested
                && status.code == 422
                && ["did not match", "test failed", "testing value"]
                    .iter()
                    .any(|needle| message.contains(needle));
            if status.code == 409 || test_failed {
                SendError::Conflict { what: what.to_owned(), message }
            } else {
                SendError::Api { code: status.code, reason: status.reason.clone(), message }
            }
        }
        other => SendError::Transport(other.to_string()),
    }
}

/// Sends a confirmed operation: refuses in read-only mode or when the preflight refuses,
/// writes the journal's before record, sends exactly the preview's request, writes the after
/// record, then (when RBAC allows) the ConsoleOperation Event. Never retries. `origin` (a
/// screen, a runbook step, the command line) is recorded in both journal records.
pub async fn send(
    session: &Session,
    prepared: &Prepared,
    user: Option<&str>,
    origin: &super::confirm::Origin,
    now: jiff::Timestamp,
) -> Result<Sent, SendError> {
    let op = &prepared.op;
    if !session.switch.is_on() {
        return Err(SendError::ReadOnly(op.summary()));
    }
    if !prepared.preflight.confirmable() {
        return Err(SendError::Refused { op: op.summary(), checks: prepared.preflight.render() });
    }
    let patch = prepared.patch.clone()?;
    let id = format!("{}-{}", op.kind(), now.as_nanosecond());
    // A new group's corrected manifest is also kept for review; the records name the file.
    let manifest = super::review::save(session.journal.dir(), op, &patch)?;
    let before = Record {
        time: now,
        id: id.clone(),
        phase: Phase::Before,
        user: user.map(str::to_owned),
        context: session.context.clone(),
        origin: Some(origin.to_json()),
        operation: serde_json::to_value(op).unwrap_or_default(),
        manifest: manifest.map(|path| path.display().to_string()),
        request: serde_json::to_value(&patch).ok(),
        preflight: serde_json::to_value(&prepared.preflight).ok(),
        result: None,
        status: None,
        resource_version: None,
        error: None,
    };
    session.journal.append(&before)?;
    let request = hyper::Request::builder()
        .method(patch.verb.method())
        .uri(&patch.path)
        .header("content-type", patch.content_type)
        .body(serde_json::to_vec(&patch.body).unwrap_or_default())
        .map_err(|error| SendError::Transport(error.to_string()))?;
    tracing::info!(
        operation = op.kind(),
        id,
        method = patch.verb.method(),
        path = patch.path,
        "sending a guided operation"
    );
    let tested = !patch.precondition.tests.is_empty();
    let answer = session
        .client
        .request::<Value>(request)
        .await
        .map_err(|error| api_error(error, &op.group().to_string(), tested));
    let finished = jiff::Timestamp::now();
    let mut after =
        Record { time: finished, phase: Phase::After, request: None, preflight: None, ..before };
    match &answer {
        Ok(object) => {
            after.result = Some("sent".to_owned());
            after.status = Some(if patch.verb == super::Verb::Create { 201 } else { 200 });
            after.resource_version = object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        Err(error) => {
            after.result = Some(
                match error {
                    SendError::Conflict { .. } => "conflict",
                    _ => "failed",
                }
                .to_owned(),
            );
            after.status = match error {
                SendError::Api { code, .. } => Some(*code),
                SendError::Conflict { .. } => Some(409),
                _ => None,
            };
            after.error = Some(error.to_string());
        }
    }
    session.journal.append(&after)?;
    let object = answer?;
    let event = event(session, prepared, &object, &id, now).await;
    Ok(Sent {
        operation_id: id,
        status: after.status.unwrap_or(200),
        resource_version: after.resource_version,
        event,
    })
}

/// The `ConsoleOperation` Event on the group, when RBAC allows creating it.
async fn event(
    session: &Session,
    prepared: &Prepared,
    object: &Value,
    id: &str,
    now: jiff::Timestamp,
) -> bool {
    let group = prepared.op.group();
    let path = format!("/api/v1/namespaces/{}/events", group.namespace);
    if may(&session.client, "create", &path).await.allowed != Some(true) {
        tracing::info!(id, "no ConsoleOperation Event: RBAC does not allow creating Events");
        return false;
    }
    let uid = prepared
        .observed
        .group
        .as_ref()
        .and_then(|group| group.metadata.uid.clone())
        .or_else(|| object.pointer("/metadata/uid").and_then(Value::as_str).map(str::to_owned));
    let time = now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let body = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": format!("{}.console-{}", group.name, now.as_nanosecond()),
            "namespace": group.namespace,
        },
        "involvedObject": {
            "apiVersion": "shipstream.io/v1alpha1",
            "kind": "MysqlFailoverGroup",
            "name": group.name,
            "namespace": group.namespace,
            "uid": uid,
        },
        "reason": "ConsoleOperation",
        "message": format!("{} (operation {id})", prepared.op.summary()),
        "type": "Normal",
        "source": { "component": "bloodraven-console" },
        "reportingComponent": "bloodraven-console",
        "firstTimestamp": time,
        "lastTimestamp": time,
        "count": 1,
    });
    match post(&session.client, &path, &body).await {
        Ok(_) => true,
        Err(error) => {
            tracing::warn!(id, %error, "the ConsoleOperation Event was not written");
            false
        }
    }
}
