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
    if from > current {
        return Err(ApiError::too_large_resource_version(from, current));
    }
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
    // Subscribed before the response (and so the 200) goes out: `drop_watches` or a stop right
    // after a client sees the headers must reach this watch, though its task has not run yet.
    let generation = shared.watch_generation.subscribe();
    tokio::spawn(run(shared, plan, sender, generation));
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

/// Sends one line unless the watch is ended first (`drop_watches`, stop) or the client left;
/// `false` means: end the watch.
async fn send(
    sender: &mpsc::Sender<Bytes>,
    generation: &mut tokio::sync::watch::Receiver<u64>,
    line: Bytes,
) -> bool {
    tokio::select! {
        biased;
        _ = generation.changed() => false,
        sent = sender.send(line) => sent.is_ok(),
    }
}

/// What happens to a watch after one change.
enum Step {
    Send(Bytes),
    Skip,
    /// The receiver fell behind the broadcast buffer: end with 410, as a compacted version.
    Lagged,
    Closed,
}

fn step(
    plan: &WatchPlan,
    last_sent: &mut u64,
    received: Result<Arc<Change>, broadcast::error::RecvError>,
) -> Step {
    match received {
        Ok(change) => {
            if change.resource_version <= *last_sent {
                return Step::Skip;
            }
            *last_sent = change.resource_version;
            match plan.translate(&change) {
                Some((event_type, object)) => Step::Send(event_line(event_type, &object)),
                None => Step::Skip,
            }
        }
        Err(broadcast::error::RecvError::Lagged(_)) => Step::Lagged,
        Err(broadcast::error::RecvError::Closed) => Step::Closed,
    }
}

fn lagged_line(last_sent: u64) -> Bytes {
    let error = ApiError::gone(format!("too old resource version: {last_sent}"));
    event_line("ERROR", &error.to_status())
}

/// The events of every change committed so far that this watch has not sent yet, then a
/// BOOKMARK at the current version: a bookmark never claims a version whose events are still
/// queued (a client resuming from it would miss them).
fn catch_up_and_bookmark(
    shared: &Shared,
    plan: &WatchPlan,
    changes: &mut broadcast::Receiver<Arc<Change>>,
    last_sent: &mut u64,
) -> (Vec<Bytes>, bool) {
    // Changes are broadcast under the state lock: every change up to `current` is queued.
    let current = lock(&shared.state).resource_version();
    let mut lines = Vec::new();
    loop {
        let received = match changes.try_recv() {
            Ok(change) => Ok(change),
            Err(broadcast::error::TryRecvError::Lagged(skipped)) => {
                Err(broadcast::error::RecvError::Lagged(skipped))
            }
            Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed) => {
                break;
            }
        };
        match step(plan, last_sent, received) {
            Step::Send(line) => lines.push(line),
            Step::Skip => {}
            Step::Lagged => {
                lines.push(lagged_line(*last_sent));
                return (lines, true);
            }
            Step::Closed => break,
        }
    }
    *last_sent = (*last_sent).max(current);
    lines.push(event_line("BOOKMARK", &bookmark(&plan.info, &plan.version, *last_sent, false)));
    (lines, false)
}

async fn run(
    shared: Arc<Shared>,
    mut plan: WatchPlan,
    sender: mpsc::Sender<Bytes>,
    mut generation: tokio::sync::watch::Receiver<u64>,
) {
    if let Some(error) = plan.error.take() {
        send(&sender, &mut generation, event_line("ERROR", &error.to_status())).await;
        return;
    }
    for event in std::mem::take(&mut plan.initial) {
        shared.wait_unpaused().await;
        let mut line = serde_json::to_vec(&event).unwrap_or_default();
        line.push(b'\n');
        if !send(&sender, &mut generation, Bytes::from(line)).await {
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
        let (lines, end) = tokio::select! {
            _ = &mut deadline => {
                if !plan.bookmarks {
                    return;
                }
                let (lines, _) = catch_up_and_bookmark(&shared, &plan, &mut changes, &mut last_sent);
                (lines, true)
            }
            _ = generation.changed() => return,
            _ = sender.closed() => return,
            _ = bookmark_timer.tick(), if plan.bookmarks => {
                catch_up_and_bookmark(&shared, &plan, &mut changes, &mut last_sent)
            }
            received = changes.recv() => match step(&plan, &mut last_sent, received) {
                Step::Send(line) => (vec![line], false),
                Step::Skip => continue,
                Step::Lagged => (vec![lagged_line(last_sent)], true),
                Step::Closed => return,
            },
        };
        for line in lines {
            shared.wait_unpaused().await;
            if !send(&sender, &mut generation, line).await {
                return;
            }
        }
        if end {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;
    use crate::selector::Selectors;
    use crate::server::Settings;

    fn shared() -> Arc<Shared> {
        let settings = Settings {
            tokens: BTreeMap::new(),
            allow_anonymous: true,
            bookmark_interval: Duration::from_secs(3600),
            default_watch_timeout: Duration::from_secs(3600),
            request_log_limit: 10,
        };
        Arc::new(Shared::new(State::new(100), settings))
    }

    fn namespaces_request(shared: &Shared) -> ResourceRequest {
        let info = lock(&shared.state).registry.lookup("", "v1", "namespaces").cloned().unwrap();
        ResourceRequest {
            info,
            version: "v1".to_string(),
            events_v1: false,
            namespace: None,
            name: None,
            subresource: None,
            query: HashMap::from([("resourceVersion".to_string(), "0".to_string())]),
            format: Format::Json,
            field_manager_default: "test".to_string(),
        }
    }

    /// Every event of a watch response, which must end within 10 s.
    async fn events_until_the_end(response: Response) -> Vec<Value> {
        let body = tokio::time::timeout(
            Duration::from_secs(10),
            axum::body::to_bytes(response.into_body(), usize::MAX),
        )
        .await
        .expect("the watch ended")
        .unwrap();
        body.split(|byte| *byte == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect()
    }

    /// The response (headers) goes out before the streaming task runs: ending watches right
    /// then (a client that saw 200 calls `drop_watches`, or the lab stops) must end this one.
    #[tokio::test(flavor = "current_thread")]
    async fn a_watch_ended_before_its_task_first_runs_still_ends() {
        let shared = shared();
        let request = namespaces_request(&shared);
        let plan = plan(&shared, &request, Selectors::default()).unwrap();
        let response = respond(shared.clone(), plan);
        shared.watch_generation.send_modify(|generation| *generation += 1);
        for event in events_until_the_end(response).await {
            assert_eq!(
                event["type"], "ADDED",
                "only whole synthetic ADDEDs, if any, before the end"
            );
        }
    }

    /// The closing BOOKMARK of a timed-out watch must not claim a version whose events are
    /// still queued (here behind a client that does not read): a client resuming from it
    /// would never see them.
    #[tokio::test(flavor = "current_thread")]
    async fn the_closing_bookmark_follows_every_queued_event() {
        let shared = shared();
        let mut request = namespaces_request(&shared);
        let current = lock(&shared.state).resource_version().to_string();
        request.query = HashMap::from([
            ("resourceVersion".to_string(), current),
            ("allowWatchBookmarks".to_string(), "true".to_string()),
            ("timeoutSeconds".to_string(), "1".to_string()),
        ]);
        let plan = plan(&shared, &request, Selectors::default()).unwrap();
        let response = respond(shared.clone(), plan);
        let ctx = crate::store::WriteContext {
            field_manager: "test".to_string(),
            dry_run: false,
            force: false,
            now: crate::store::now_rfc3339(),
        };
        let mut last = Value::Null;
        for index in 0..300 {
            let mut state = lock(&shared.state);
            let info = state.registry.lookup("", "v1", "namespaces").cloned().unwrap();
            let object = json!({"metadata": {"name": format!("n{index}")}});
            last = state.create(&info, "v1", None, object, &ctx, None).unwrap();
        }
        // The watch fills its outgoing buffer, then the deadline passes while it waits.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let events = events_until_the_end(response).await;
        let added = events.iter().filter(|event| event["type"] == "ADDED").count();
        assert_eq!(added, 300, "every queued event is sent before the closing bookmark");
        let closing = events.last().unwrap();
        assert_eq!(closing["type"], "BOOKMARK");
        assert_eq!(
            closing["object"]["metadata"]["resourceVersion"],
            last["metadata"]["resourceVersion"]
        );
    }
}
