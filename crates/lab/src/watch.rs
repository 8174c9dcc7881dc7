//! WATCH: newline-delimited events from a resource version, with bookmarks, timeouts,
//! `410 Gone` for versions outside the retained history, and the lab's "drop all watches".

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::error::ApiError;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::server::{ResourceRequest, Shared, lock};
use crate::store::{Change, EventType, State};
use crate::table::{Format, render_event_object};

/// Everything a watch stream needs, fixed under the state lock so no change is missed.
pub(crate) struct WatchPlan {
    info: ResourceInfo,
    version: String,
    namespace: Option<String>,
    selectors: Selectors,
    format: Format,
    /// Objects go out as events.k8s.io/v1 Events.
    events_v1: bool,
    bookmarks: bool,
    timeout: Duration,
    /// Events to send before live ones (synthetic ADDEDs or the retained backlog).
    initial: Vec<Value>,
    /// Changes at or below this version were covered by `initial`.
    start_version: u64,
    receiver: Option<broadcast::Receiver<Arc<Change>>>,
    /// A terminal error to send instead of events (410 for a compacted version).
    error: Option<ApiError>,
}

fn event_line(event_type: &str, object: &Value) -> Bytes {
    let mut line =
        serde_json::to_vec(&json!({ "type": event_type, "object": object })).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

fn bookmark(
    info: &ResourceInfo,
    version: &str,
    resource_version: u64,
    initial_events_end: bool,
) -> Value {
    let mut metadata =
        json!({ "resourceVersion": resource_version.to_string(), "creationTimestamp": null });
    if initial_events_end {
        metadata["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
    }
    json!({ "kind": info.kind, "apiVersion": info.api_version(version), "metadata": metadata })
}

impl WatchPlan {
    fn render(&self, stored: &Value) -> Value {
        let presented = State::present(&self.info, &self.version, stored);
        if self.events_v1 {
            return crate::events::to_events_v1(&presented);
        }
        render_event_object(&self.format, &self.info, presented)
    }

    fn matches(&self, object: &Value) -> bool {
        let namespace_matches = self.namespace.as_ref().is_none_or(|namespace| {
            object.pointer("/metadata/namespace").and_then(Value::as_str)
                == Some(namespace.as_str())
        });
        namespace_matches && self.selectors.matches(object)
    }

    /// The event (type, object) a change produces for this watch, if any.
    fn translate(&self, change: &Change) -> Option<(&'static str, Value)> {
        if change.group_resource != self.info.group_resource() {
            return None;
        }
        let now = self.matches(&change.object);
        let before = change.previous.as_ref().map(|previous| self.matches(previous));
        let event_type = match (change.event_type, before, now) {
            (EventType::Added, _, true) => "ADDED",
            (EventType::Deleted, _, true) => "DELETED",
            (EventType::Modified, Some(true) | None, true) => "MODIFIED",
            (EventType::Modified, Some(false), true) => "ADDED",
            (EventType::Modified, Some(true), false) => "DELETED",
            _ => return None,
        };
        Some((event_type, self.render(&change.object)))
    }
}

fn parse_version(text: &str) -> Result<u64, ApiError> {
    text.parse().map_err(|_| ApiError::bad_request(format!("invalid resource version: {text}")))
}

/// Fixes the starting point of a watch.
pub(crate) fn plan(
    shared: &Arc<Shared>,
    request: &ResourceRequest,
    selectors: Selectors,
) -> Result<WatchPlan, ApiError> {
    let settings = lock(&shared.settings).clone();
    let timeout = match request.query.get("timeoutSeconds") {
        Some(seconds) if !seconds.is_empty() => Duration::from_secs(
            seconds
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {seconds}")))?,
        ),
        _ => settings.default_watch_timeout,
    };
    let bookmarks = request
        .query
        .get("allowWatchBookmarks")
        .is_some_and(|value| value == "true" || value == "1");
    let send_initial =
        request.query.get("sendInitialEvents").map(|value| value == "true" || value == "1");
    let requested = request.query.get("resourceVersion").filter(|version| !version.is_empty());
    let mut plan = WatchPlan {
        info: request.info.clone(),
        version: request.version.clone(),
        namespace: request.namespace.clone(),
        selectors,
        format: request.format.clone(),
        events_v1: request.events_v1 && request.format == Format::Json,
        bookmarks,
        timeout,
        initial: Vec::new(),
        start_version: 0,
        receiver: None,
        error: None,
    };
    let state = lock(&shared.state);
    plan.receiver = Some(state.subscribe());
    let current = state.resource_version();
    let synthetic = matches!(
        (requested.map(String::as_str), send_initial),
        (_, Some(true)) | (None | Some("0"), None)
    );
    if synthetic {
        let initial: Vec<Value> = state
            .select(&plan.info, plan.namespace.as_deref(), &plan.selectors, None)
            .map(|(_, object)| json!({ "type": "ADDED", "object": plan.render(object) }))
            .collect();
        plan.initial = initial;
        if send_initial == Some(true) && bookmarks {
            plan.initial.push(json!({ "type": "BOOKMARK", "object": bookmark(&plan.info, &plan.version, current, true) }));
        }
        plan.start_version = current;
        return Ok(plan);
    }
    let from = match requested {
        Some(version) => parse_version(version)?,
        None => current,
    };
    match state.changes_since(from) {
        None => {
            plan.error = Some(ApiError::gone(format!(
                "too old resource version: {from} ({})",
                state.history_floor() + 1
            )));
        }
        Some(changes) => {
            for change in changes {
                if let Some((event_type, object)) = plan.translate(&change) {
                    plan.initial.push(json!({ "type": event_type, "object": object }));
                }
            }
            plan.start_version = current.max(from);
        }
    }
    Ok(plan)
}

/// Streams a planned watch.
pub(crate) fn respond(shared: Arc<Shared>, plan: WatchPlan) -> Response {
    let (sender, mut receiver) = mpsc::channel::<Bytes>(256);
    tokio::spawn(run(shared, plan, sender));
    let stream = futures::stream::poll_fn(move |context| {
        receiver.poll_recv(context).map(|item| item.map(Ok::<Bytes, Infallible>))
    });
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = StatusCode::OK;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

async fn run(shared: Arc<Shared>, mut plan: WatchPlan, sender: mpsc::Sender<Bytes>) {
    let mut generation = shared.watch_generation.subscribe();
    generation.mark_unchanged();
    if let Some(error) = plan.error.take() {
        let _ = sender.send(event_line("ERROR", &error.to_status())).await;
        return;
    }
    for event in std::mem::take(&mut plan.initial) {
        shared.wait_unpaused().await;
        let mut line = serde_json::to_vec(&event).unwrap_or_default();
        line.push(b'\n');
        if sender.send(Bytes::from(line)).await.is_err() {
            return;
        }
    }
    let Some(mut changes) = plan.receiver.take() else { return };
    let bookmark_interval = lock(&shared.settings).bookmark_interval;
    let deadline = tokio::time::sleep(plan.timeout);
    tokio::pin!(deadline);
    let mut bookmark_timer = tokio::time::interval_at(
        tokio::time::Instant::now() + bookmark_interval,
        bookmark_interval,
    );
    let mut last_sent = plan.start_version;
    loop {
        tokio::select! {
            _ = &mut deadline => {
                if plan.bookmarks {
                    let current = lock(&shared.state).resource_version();
                    let _ = sender.send(event_line("BOOKMARK", &bookmark(&plan.info, &plan.version, current, false))).await;
                }
                return;
            }
            _ = generation.changed() => return,
            _ = sender.closed() => return,
            _ = bookmark_timer.tick(), if plan.bookmarks => {
                shared.wait_unpaused().await;
                let current = lock(&shared.state).resource_version();
                if sender.send(event_line("BOOKMARK", &bookmark(&plan.info, &plan.version, current, false))).await.is_err() {
                    return;
                }
            }
            received = changes.recv() => match received {
                Ok(change) => {
                    if change.resource_version <= last_sent {
                        continue;
                    }
                    last_sent = change.resource_version;
                    if let Some((event_type, object)) = plan.translate(&change) {
                        shared.wait_unpaused().await;
                        if sender.send(event_line(event_type, &object)).await.is_err() {
                            return;
                        }
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let error = ApiError::gone(format!("too old resource version: {last_sent}"));
                    let _ = sender.send(event_line("ERROR", &error.to_status())).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}
