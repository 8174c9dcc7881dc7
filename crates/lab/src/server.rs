//! HTTP: routing, identity, the request log, fault injection and the resource handlers.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::audit::{Fault, FaultAction, RequestRecord, fault_status};
use crate::discovery;
use crate::error::ApiError;
use crate::identity::{CertificateUser, UserInfo};
use crate::managed;
use crate::patch::{PatchType, apply_patch, unsupported_patch};
use crate::registry::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector, Selectors};
use crate::store::{ObjectKey, State, WriteContext, now_rfc3339};
use crate::table::{self, Format};
use crate::watch as watch_stream;

/// Server-wide settings the handlers read.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub tokens: BTreeMap<String, String>,
    pub allow_anonymous: bool,
    pub bookmark_interval: Duration,
    pub default_watch_timeout: Duration,
    pub request_log_limit: usize,
}

/// Everything the server shares between requests.
pub(crate) struct Shared {
    pub state: Mutex<State>,
    pub settings: Mutex<Settings>,
    pub log: Mutex<VecDeque<RequestRecord>>,
    pub faults: Mutex<Vec<Fault>>,
    pub paused: watch::Sender<bool>,
    pub watch_generation: watch::Sender<u64>,
    pub address: Mutex<String>,
    /// Groups of token users, minted ServiceAccount tokens, and whether RBAC is on.
    pub access: Mutex<crate::identity::AccessControl>,
    /// Where `GET pods/<name>/log` reads a pod's log (the lab kubelet's job logs).
    pub pod_logs: Mutex<Option<crate::PodLogs>>,
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn new(state: State, settings: Settings) -> Self {
        Self {
            state: Mutex::new(state),
            settings: Mutex::new(settings),
            log: Mutex::new(VecDeque::new()),
            faults: Mutex::new(Vec::new()),
            paused: watch::Sender::new(false),
            watch_generation: watch::Sender::new(0),
            address: Mutex::new(String::new()),
            access: Mutex::new(crate::identity::AccessControl::default()),
            pod_logs: Mutex::new(None),
        }
    }

    /// Waits while the server is paused.
    pub(crate) async fn wait_unpaused(&self) {
        let mut receiver = self.paused.subscribe();
        // An error means the sender is gone: the server is shutting down; go on.
        let _ = receiver.wait_for(|paused| !paused).await;
    }
}

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    NonResource,
    Resource {
        group: String,
        version: String,
        resource: String,
        namespace: Option<String>,
        name: Option<String>,
        subresource: Option<String>,
    },
}

pub(crate) fn parse_target(path: &str) -> Target {
    let segments: Vec<&str> =
        path.trim_matches('/').split('/').filter(|segment| !segment.is_empty()).collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] if !rest.is_empty() => ("", *version, rest),
        ["apis", group, version, rest @ ..] if !rest.is_empty() => (*group, *version, rest),
        _ => return Target::NonResource,
    };
    let resource_target = |namespace: Option<&str>,
                           resource: &str,
                           name: Option<&str>,
                           subresource: Option<&str>| Target::Resource {
        group: group.to_string(),
        version: version.to_string(),
        resource: resource.to_string(),
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
        subresource: subresource.map(str::to_string),
    };
    match rest {
        ["namespaces", namespace, resource, tail @ ..]
            if !(group.is_empty()
                && tail.is_empty()
                && matches!(*resource, "status" | "finalize")) =>
        {
            match tail {
                [] => resource_target(Some(namespace), resource, None, None),
                [name] => resource_target(Some(namespace), resource, Some(name), None),
                [name, subresource] => {
                    resource_target(Some(namespace), resource, Some(name), Some(subresource))
                }
                _ => Target::NonResource,
            }
        }
        [resource] => resource_target(None, resource, None, None),
        [resource, name] => resource_target(None, resource, Some(name), None),
        [resource, name, subresource] => {
            resource_target(None, resource, Some(name), Some(subresource))
        }
        _ => Target::NonResource,
    }
}

fn query_map(query: Option<&str>) -> HashMap<String, String> {
    let mut map = HashMap::new();
    for pair in query.unwrap_or_default().split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        map.insert(percent_decode(key), percent_decode(value));
    }
    map
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'+' => out.push(b' '),
            b'%' => {
                let decoded = bytes
                    .get(index + 1..index + 3)
                    .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit))
                    .and_then(|hex| std::str::from_utf8(hex).ok())
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok());
                match decoded {
                    Some(byte) => {
                        out.push(byte);
                        index += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_true(value: Option<&String>) -> bool {
    value.is_some_and(|value| value == "1" || value == "true")
}

pub(crate) fn verb_of(method: &Method, target: &Target, query: &HashMap<String, String>) -> String {
    let Target::Resource { name, .. } = target else {
        return method.as_str().to_lowercase();
    };
    let single = name.is_some();
    match *method {
        Method::GET if is_true(query.get("watch")) => "watch",
        Method::GET if single => "get",
        Method::GET => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if single => "delete",
        Method::DELETE => "deletecollection",
        _ => return method.as_str().to_lowercase(),
    }
    .to_string()
}

pub(crate) fn json_response(code: u16, body: &Value) -> Response {
    bytes_response(code, serde_json::to_vec(body).unwrap_or_default())
}

fn bytes_response(code: u16, bytes: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

pub(crate) fn error_response(error: &ApiError) -> Response {
    let mut response = json_response(error.code, &error.to_status());
    // As the API server's response writer: a Status asking for a retry says when.
    if let Some(seconds) = error
        .details
        .as_ref()
        .and_then(|details| details.get("retryAfterSeconds"))
        .and_then(Value::as_u64)
    {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Identity, fault injection, pause and the request log around every request.
pub(crate) async fn middleware(
    AxumState(shared): AxumState<Arc<Shared>>,
    mut request: Request,
    next: Next,
) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let query_string = request.uri().query().unwrap_or_default().to_string();
    let query = query_map(Some(&query_string));
    let target = parse_target(&path);
    let verb = verb_of(&method, &target, &query);
    let user_agent = request
        .headers()
        .get(header::USER_AGENT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let certificate = request.extensions().get::<CertificateUser>().map(|user| user.0.clone());
    let user = authenticate(&shared, certificate, authorization.as_deref());
    let (resource, namespace, name, subresource) = match &target {
        Target::Resource { group, resource, namespace, name, subresource, .. } => (
            Some(if group.is_empty() { resource.clone() } else { format!("{resource}.{group}") }),
            namespace.clone(),
            name.clone(),
            subresource.clone(),
        ),
        Target::NonResource => (None, None, None, None),
    };
    let mut dropped = false;
    let mut record = RequestRecord {
        time: jiff::Timestamp::now(),
        user: user
            .as_ref()
            .map_or_else(|| crate::identity::ANONYMOUS.to_string(), |user| user.username.clone()),
        verb,
        method: method.as_str().to_string(),
        path,
        query: query_string,
        status: 0,
        resource,
        namespace,
        name,
        subresource,
        user_agent,
    };
    let response = match user {
        None => error_response(&ApiError::unauthorized()),
        Some(user) => 'served: {
            shared.wait_unpaused().await;
            let user = match crate::impersonation::effective_user(&shared, user, request.headers())
            {
                Ok(user) => user,
                Err(refused) => break 'served error_response(&refused),
            };
            record.user = user.username.clone();
            if let Err(denied) = authorize(&shared, &user, &method, &record.path, &query) {
                break 'served error_response(&denied);
            }
            request.extensions_mut().insert(user);
            // A fault that looks at the body needs it read first; it is handed on unchanged.
            let mut body = None;
            if lock(&shared.faults).iter().any(Fault::needs_body) {
                let (parts, raw) = request.into_parts();
                let bytes = match axum::body::to_bytes(raw, usize::MAX).await {
                    Ok(bytes) => bytes,
                    Err(error) => {
                        let refused = ApiError::bad_request(format!("reading the body: {error}"));
                        break 'served error_response(&refused);
                    }
                };
                request = Request::from_parts(parts, Body::from(bytes.clone()));
                body = Some(bytes);
            }
            let action = {
                let mut faults = lock(&shared.faults);
                let found = faults.iter_mut().find(|fault| fault.matches(&record, body.as_deref()));
                found.map(|fault| {
                    fault.times -= 1;
                    fault.action.clone()
                })
            };
            lock(&shared.faults).retain(|fault| fault.times > 0);
            match action {
                Some(FaultAction::Fail { code, message }) => {
                    json_response(code, &fault_status(code, &message))
                }
                Some(FaultAction::Delay(delay)) => {
                    tokio::time::sleep(delay).await;
                    next.run(request).await
                }
                Some(FaultAction::FailAfterServing { code, message }) => {
                    let _served = next.run(request).await;
                    json_response(code, &fault_status(code, &message))
                }
                Some(FaultAction::DropAfterServing(hold)) => {
                    let served = next.run(request).await;
                    // Logged now (status 0: no answer), as the client may go away during
                    // the hold, which ends this request's service.
                    dropped = true;
                    log_request(&shared, RequestRecord { status: 0, ..record.clone() });
                    tokio::time::sleep(hold).await;
                    dropped_response(served)
                }
                None => next.run(request).await,
            }
        }
    };
    if !dropped {
        record.status = response.status().as_u16();
        log_request(&shared, record);
    }
    response
}

/// Appends `record` to the request log, within its limit.
fn log_request(shared: &Shared, record: RequestRecord) {
    let limit = lock(&shared.settings).request_log_limit;
    let mut log = lock(&shared.log);
    log.push_back(record);
    while log.len() > limit.max(1) {
        log.pop_front();
    }
}

/// `served`'s head with a body that fails at once: the server aborts the connection before
/// the client has a whole response (HTTP/1.1: the connection is closed mid-message; HTTP/2:
/// the stream is reset).
fn dropped_response(served: Response) -> Response {
    let (mut parts, _) = served.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    let failing = futures::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::other("injected fault: connection dropped"))
    });
    Response::from_parts(parts, Body::from_stream(failing))
}

/// The user of a request: a client certificate's, else the bearer token's, else anonymous when
/// allowed; `None` is 401 (unknown token, or no credentials where anonymous is off).
fn authenticate(
    shared: &Shared,
    certificate: Option<UserInfo>,
    authorization: Option<&str>,
) -> Option<UserInfo> {
    if certificate.is_some() {
        return certificate;
    }
    let settings = lock(&shared.settings).clone();
    match authorization.and_then(|value| value.strip_prefix("Bearer ")) {
        Some(token) => {
            let access = lock(&shared.access).clone();
            let state = lock(&shared.state);
            crate::identity::token_user(&settings.tokens, &access, &state, token.trim())
        }
        None if authorization.is_some() => None,
        None if settings.allow_anonymous => Some(UserInfo::anonymous()),
        None => None,
    }
}

/// RBAC on a request when enabled: the 403 a real API server answers, or `Ok`.
fn authorize(
    shared: &Shared,
    user: &UserInfo,
    method: &Method,
    path: &str,
    query: &HashMap<String, String>,
) -> Result<(), ApiError> {
    let attributes = crate::rbac::Attributes::from_request(method.as_str(), path, query);
    let decision = crate::reviews::decide(shared, user, &attributes);
    if decision.allowed {
        Ok(())
    } else {
        Err(crate::rbac::forbidden(user, &attributes, &decision.reason))
    }
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(handle)
        .layer(axum::middleware::from_fn_with_state(shared.clone(), middleware))
        .with_state(shared)
}

async fn handle(
    AxumState(shared): AxumState<Arc<Shared>>,
    method: Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
    user: Option<axum::Extension<UserInfo>>,
    body: Bytes,
) -> Response {
    let path = uri.path();
    if let Some(response) =
        crate::reviews::serve(&shared, &method, path, user.as_ref().map(|user| &user.0), &body)
    {
        return response;
    }
    let query = query_map(uri.query());
    match parse_target(path) {
        Target::NonResource => discovery::non_resource(&shared, &method, path, &headers),
        Target::Resource { group, version, resource, namespace, name, subresource } => {
            let info = {
                let state = lock(&shared.state);
                state.registry.lookup(&group, &version, &resource).cloned()
            };
            let Some(mut info) = info else {
                return error_response(&ApiError::no_such_resource());
            };
            let mut version = version;
            // events.k8s.io/v1 Events are stored as core/v1 Events and converted.
            let events_v1 = info.group == "events.k8s.io" && info.plural == "events";
            if events_v1 {
                let core = lock(&shared.state).registry.lookup("", "v1", "events").cloned();
                if let Some(core) = core {
                    info = core;
                    version = "v1".to_string();
                }
            }
            let request = ResourceRequest {
                info,
                version,
                events_v1,
                namespace,
                name,
                subresource,
                query,
                format: Format::from_accept(
                    headers
                        .get(header::ACCEPT)
                        .and_then(|value| value.to_str().ok())
                        .unwrap_or_default(),
                ),
                field_manager_default: headers
                    .get(header::USER_AGENT)
                    .and_then(|value| value.to_str().ok())
                    .and_then(|agent| agent.split('/').next())
                    .unwrap_or("unknown")
                    .chars()
                    .take(128)
                    .collect(),
            };
            let content_type = headers
                .get(header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_string();
            match serve_resource(&shared, &method, &request, &content_type, &body) {
                Ok(Served::Object(code, object))
                    if request.events_v1 && request.format == Format::Json =>
                {
                    json_response(code, &events_out(object))
                }
                Ok(Served::Object(code, object)) => json_response(code, &object),
                Ok(Served::Raw(code, bytes)) => bytes_response(code, bytes),
                Ok(Served::Watch(plan)) => watch_stream::respond(shared.clone(), *plan),
                Err(error) => error_response(&error),
            }
        }
    }
}

pub(crate) struct ResourceRequest {
    pub info: ResourceInfo,
    pub version: String,
    /// Served as events.k8s.io/v1 (the info and version are core/v1's).
    pub events_v1: bool,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    pub query: HashMap<String, String>,
    pub format: Format,
    pub field_manager_default: String,
}

/// A core/v1 Event response (object or list) as events.k8s.io/v1.
fn events_out(object: Value) -> Value {
    if object.get("items").is_some() {
        let mut list = object;
        list["apiVersion"] = json!("events.k8s.io/v1");
        if let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) {
            for item in items.iter_mut() {
                let typed = item.get("kind").is_some();
                *item = crate::events::to_events_v1(item);
                if !typed && let Some(map) = item.as_object_mut() {
                    map.remove("apiVersion");
                    map.remove("kind");
                }
            }
        }
        list
    } else if object.get("kind").and_then(Value::as_str) == Some("Event") {
        crate::events::to_events_v1(&object)
    } else {
        object
    }
}

/// A request body for events.k8s.io/v1 in the stored core/v1 form.
fn events_in(request: &ResourceRequest, object: Value) -> Value {
    if request.events_v1 { crate::events::to_core(&object) } else { object }
}

enum Served {
    Object(u16, Value),
    /// An already encoded JSON body.
    Raw(u16, Vec<u8>),
    Watch(Box<watch_stream::WatchPlan>),
}

fn selectors(request: &ResourceRequest) -> Result<Selectors, ApiError> {
    let labels = LabelSelector::parse(
        request.query.get("labelSelector").map(String::as_str).unwrap_or_default(),
    )
    .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(
        request.query.get("fieldSelector").map(String::as_str).unwrap_or_default(),
        &request.info.group,
        &request.info.kind,
    )
    .map_err(ApiError::bad_request)?;
    Ok(Selectors { labels, fields })
}

fn write_context(
    request: &ResourceRequest,
    require_manager: bool,
) -> Result<WriteContext, ApiError> {
    let field_manager = match request.query.get("fieldManager") {
        Some(manager) if !manager.is_empty() => manager.clone(),
        _ if require_manager => {
            return Err(ApiError::new(
                422,
                "Invalid",
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            ));
        }
        _ => request.field_manager_default.clone(),
    };
    Ok(WriteContext {
        field_manager,
        dry_run: request.query.get("dryRun").is_some_and(|value| value == "All"),
        force: is_true(request.query.get("force")),
        now: now_rfc3339(),
    })
}

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(body).or_else(|json_error| {
        serde_norway::from_slice(body).map_err(|_| {
            ApiError::bad_request(format!(
                "the body of the request could not be decoded: line {} column {}: {json_error}",
                json_error.line(),
                json_error.column()
            ))
        })
    })
}

const CONTINUE_ENCODING: data_encoding::Encoding = data_encoding::BASE64URL_NOPAD;

fn encode_continue(resource_version: u64, key: &ObjectKey) -> String {
    let token = json!({ "v": "meta.k8s.io/v1", "rv": resource_version, "start": [key.0, key.1] });
    CONTINUE_ENCODING.encode(token.to_string().as_bytes())
}

fn decode_continue(token: &str) -> Result<(u64, ObjectKey), ApiError> {
    let invalid = || ApiError::bad_request(format!("continue key is not valid: {token}"));
    let bytes = CONTINUE_ENCODING.decode(token.as_bytes()).map_err(|_| invalid())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    let resource_version = value.get("rv").and_then(Value::as_u64).ok_or_else(invalid)?;
    let start = value.get("start").and_then(Value::as_array).ok_or_else(invalid)?;
    let part = |index: usize| start.get(index).and_then(Value::as_str).map(str::to_string);
    Ok((resource_version, (part(0).ok_or_else(invalid)?, part(1).ok_or_else(invalid)?)))
}

/// `GET pods/<name>/log`: the text the log source (`Lab::set_pod_logs`) has for the pod.
fn serve_pod_log(
    shared: &Arc<Shared>,
    method: &Method,
    request: &ResourceRequest,
) -> Result<Served, ApiError> {
    if *method != Method::GET {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let (Some(namespace), Some(name)) = (request.namespace.as_deref(), request.name.as_deref())
    else {
        return Err(ApiError::no_such_resource());
    };
    lock(&shared.state).get(&request.info, Some(namespace), name)?;
    let source = lock(&shared.pod_logs).clone();
    let text = source.and_then(|source| source(namespace, name)).ok_or_else(|| {
        ApiError::bad_request(format!(
            "container logs of pod \"{name}\" are not available in the lab (no log source has them)"
        ))
    })?;
    Ok(Served::Raw(200, text.into_bytes()))
}

fn serve_resource(
    shared: &Arc<Shared>,
    method: &Method,
    request: &ResourceRequest,
    content_type: &str,
    body: &[u8],
) -> Result<Served, ApiError> {
    let info = &request.info;
    if !info.namespaced && request.namespace.is_some() {
        return Err(ApiError::no_such_resource());
    }
    if info.namespaced && request.namespace.is_none() && request.name.is_some() {
        return Err(ApiError::no_such_resource());
    }
    let subresource = request.subresource.as_deref();
    if subresource == Some("log") && info.group.is_empty() && info.plural == "pods" {
        return serve_pod_log(shared, method, request);
    }
    if let Some(subresource) = subresource {
        if subresource != "status" || !info.has_status {
            return Err(ApiError::no_such_resource());
        }
        if !matches!(*method, Method::GET | Method::PUT | Method::PATCH) {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
    }
    let namespace = request.namespace.as_deref();
    let version = request.version.as_str();
    match (method.clone(), request.name.as_deref()) {
        (Method::GET, Some(name)) => {
            let state = lock(&shared.state);
            let object = state.get(info, namespace, name)?;
            let presented = State::present(info, version, &object);
            Ok(Served::Object(
                200,
                table::render_object(&request.format, info, presented, state.resource_version()),
            ))
        }
        (Method::GET, None) if is_true(request.query.get("watch")) => {
            let plan = watch_stream::plan(shared, request, selectors(request)?)?;
            Ok(Served::Watch(Box::new(plan)))
        }
        (Method::GET, None) => list(shared, request),
        (Method::POST, None) => {
            if request.namespace.is_none() && info.namespaced {
                return Err(ApiError::no_such_resource());
            }
            let object = events_in(request, parse_body(body)?);
            let ctx = write_context(request, false)?;
            let mut state =
                crate::validate::Locked::for_request(lock(&shared.state), &request.query);
            let created = state.create(info, version, namespace, object, &ctx, None)?;
            Ok(Served::Object(201, created))
        }
        (Method::PUT, Some(name)) => {
            let object = events_in(request, parse_body(body)?);
            let ctx = write_context(request, false)?;
            let mut state =
                crate::validate::Locked::for_request(lock(&shared.state), &request.query);
            let updated =
                state.update(info, version, namespace, name, object, subresource, &ctx, None)?;
            Ok(Served::Object(200, updated))
        }
        (Method::PATCH, Some(name)) => {
            let patch_type = PatchType::from_content_type(content_type)
                .ok_or_else(|| unsupported_patch(info.custom))?;
            if patch_type == PatchType::Strategic && info.custom {
                return Err(unsupported_patch(true));
            }
            let ctx = write_context(request, patch_type == PatchType::Apply)?;
            let mut state =
                crate::validate::Locked::for_request(lock(&shared.state), &request.query);
            if patch_type == PatchType::Apply {
                let applied = parse_body(body)?;
                if !applied.is_object() {
                    return Err(ApiError::bad_request("the apply configuration is not an object"));
                }
                if request.events_v1
                    && applied.get("apiVersion").and_then(Value::as_str) != Some("events.k8s.io/v1")
                {
                    return Err(ApiError::bad_request(
                        "the apply configuration must set apiVersion events.k8s.io/v1 and kind Event",
                    ));
                }
                let applied = events_in(request, applied);
                let expected = info.api_version(version);
                if applied.get("apiVersion").and_then(Value::as_str) != Some(expected.as_str())
                    || applied.get("kind").and_then(Value::as_str) != Some(info.kind.as_str())
                {
                    return Err(ApiError::bad_request(format!(
                        "the apply configuration must set apiVersion {expected} and kind {}",
                        info.kind
                    )));
                }
                if crate::store::meta_str(&applied, "name")
                    .is_some_and(|applied_name| applied_name != name)
                {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({}) does not match the name on the URL ({name})",
                        crate::store::meta_str(&applied, "name").unwrap_or_default()
                    )));
                }
                return match state.get(info, namespace, name) {
                    Err(error) if error.code == 404 => {
                        if subresource.is_some() {
                            return Err(error);
                        }
                        let mut object = applied.clone();
                        crate::store::set_meta(&mut object, "name", json!(name));
                        let created =
                            state.create(info, version, namespace, object, &ctx, Some(applied))?;
                        Ok(Served::Object(201, created))
                    }
                    Err(error) => Err(error),
                    Ok(live) => {
                        // A resourceVersion in the apply configuration is a precondition.
                        if let Some(requested) = crate::store::meta_str(&applied, "resourceVersion")
                            .filter(|requested| !requested.is_empty())
                            && Some(requested) != crate::store::meta_str(&live, "resourceVersion")
                        {
                            return Err(ApiError::stale(crate::error::Subject {
                                group: &info.group,
                                resource: &info.plural,
                                name,
                            }));
                        }
                        let live = State::present(info, version, &live);
                        let (merged, managed) =
                            managed::apply(info, version, &live, &applied, &ctx, subresource)?;
                        let updated = state.update(
                            info,
                            version,
                            namespace,
                            name,
                            merged,
                            subresource,
                            &ctx,
                            Some(managed),
                        )?;
                        Ok(Served::Object(200, updated))
                    }
                };
            }
            let live = state.get(info, namespace, name)?;
            let live = State::present(info, version, &live);
            let patched = if request.events_v1 {
                let live = crate::events::to_events_v1(&live);
                crate::events::to_core(&apply_patch(patch_type, &live, body)?)
            } else {
                apply_patch(patch_type, &live, body)?
            };
            let updated =
                state.update(info, version, namespace, name, patched, subresource, &ctx, None)?;
            Ok(Served::Object(200, updated))
        }
        (Method::DELETE, Some(name)) => {
            let options = parse_body(body)?;
            let ctx = write_context(request, false)?;
            let mut state = lock(&shared.state);
            let (object, code) = state.delete(info, version, namespace, name, &options, &ctx)?;
            Ok(Served::Object(code, object))
        }
        (Method::DELETE, None) => {
            let options = parse_body(body)?;
            let ctx = write_context(request, false)?;
            let selectors = selectors(request)?;
            let mut state = lock(&shared.state);
            let names: Vec<ObjectKey> = state
                .select(info, namespace, &selectors, None)
                .map(|(key, _)| key.clone())
                .collect();
            let mut items = Vec::new();
            for (object_namespace, object_name) in names {
                let object_namespace = if object_namespace.is_empty() {
                    None
                } else {
                    Some(object_namespace.as_str())
                };
                match state.delete(info, version, object_namespace, &object_name, &options, &ctx) {
                    Ok((object, _)) => items.push(object),
                    Err(error) if error.code == 404 => {}
                    Err(error) => return Err(error),
                }
            }
            let list = json!({
                "apiVersion": info.api_version(version),
                "kind": format!("{}List", info.kind),
                "metadata": { "resourceVersion": state.resource_version().to_string() },
                "items": items,
            });
            Ok(Served::Object(200, list))
        }
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

fn list(shared: &Arc<Shared>, request: &ResourceRequest) -> Result<Served, ApiError> {
    let info = &request.info;
    let selectors = selectors(request)?;
    let limit = match request.query.get("limit") {
        Some(limit) if !limit.is_empty() => limit
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit: {limit}")))?,
        _ => 0,
    };
    let state = lock(&shared.state);
    let (list_version, after) = match request
        .query
        .get("continue")
        .filter(|token| !token.is_empty())
    {
        Some(token) => {
            let (resource_version, key) = decode_continue(token)?;
            if resource_version < state.history_floor() {
                return Err(ApiError::gone(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                ));
            }
            (resource_version, Some(key))
        }
        None => {
            let current = state.resource_version();
            if let Some(requested) = request
                .query
                .get("resourceVersion")
                .and_then(|version| version.parse::<u64>().ok())
                .filter(|requested| *requested > current)
            {
                return Err(ApiError::too_large_resource_version(requested, current));
            }
            (current, None)
        }
    };
    let namespace = request.namespace.as_deref();
    let mut stored: Vec<Arc<Value>> = Vec::new();
    let mut last_key = None;
    let mut remaining = 0usize;
    for (key, object) in state.select(info, namespace, &selectors, after.as_ref()) {
        if limit > 0 && stored.len() as i64 >= limit {
            remaining += 1;
            continue;
        }
        stored.push(object.clone());
        last_key = Some(key.clone());
    }
    drop(state);
    let mut metadata = json!({ "resourceVersion": list_version.to_string() });
    if remaining > 0
        && let Some(key) = &last_key
    {
        metadata["continue"] = json!(encode_continue(list_version, key));
        if selectors.labels.is_empty() && selectors.fields.is_empty() {
            metadata["remainingItemCount"] = json!(remaining);
        }
    }
    let api_version = info.api_version(&request.version);
    if request.format == Format::Json && !request.events_v1 {
        // The common case, serialized straight from the stored objects without copying them:
        // built-in lists carry no per-item apiVersion/kind, custom resource lists do.
        let type_meta = info.custom.then_some((api_version.as_str(), info.kind.as_str()));
        let list = ListView {
            api_version: &api_version,
            kind: format!("{}List", info.kind),
            metadata,
            items: stored.iter().map(|object| ItemView { object, type_meta }).collect(),
        };
        let bytes = serde_json::to_vec(&list)
            .map_err(|error| ApiError::from_code(500, format!("encoding the list: {error}")))?;
        return Ok(Served::Raw(200, bytes));
    }
    let items: Vec<Value> = stored
        .iter()
        .map(|object| {
            let mut item = State::present(info, &request.version, object);
            if !info.custom
                && request.format == Format::Json
                && let Some(map) = item.as_object_mut()
            {
                map.remove("apiVersion");
                map.remove("kind");
            }
            item
        })
        .collect();
    let list = json!({
        "apiVersion": api_version,
        "kind": format!("{}List", info.kind),
        "metadata": metadata,
        "items": items,
    });
    Ok(Served::Object(200, table::render_list(&request.format, info, list)))
}

#[derive(serde::Serialize)]
struct ListView<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: String,
    metadata: Value,
    items: Vec<ItemView<'a>>,
}

/// A stored object with the apiVersion and kind of the request (or none).
struct ItemView<'a> {
    object: &'a Value,
    type_meta: Option<(&'a str, &'a str)>,
}

impl serde::Serialize for ItemView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Some(map) = self.object.as_object() else {
            return self.object.serialize(serializer);
        };
        let mut out = serializer.serialize_map(None)?;
        if let Some((api_version, kind)) = self.type_meta {
            out.serialize_entry("apiVersion", api_version)?;
            out.serialize_entry("kind", kind)?;
        }
        for (key, value) in map {
            if key != "apiVersion" && key != "kind" {
                out.serialize_entry(key, value)?;
            }
        }
        out.end()
    }
}

pub(crate) fn not_found_page() -> Response {
    let mut response = (StatusCode::NOT_FOUND, "404 page not found\n").into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_like_the_api_server_routes() {
        let resource = |group: &str,
                        resource: &str,
                        namespace: Option<&str>,
                        name: Option<&str>,
                        subresource: Option<&str>| Target::Resource {
            group: group.to_string(),
            version: "v1".to_string(),
            resource: resource.to_string(),
            namespace: namespace.map(str::to_string),
            name: name.map(str::to_string),
            subresource: subresource.map(str::to_string),
        };
        assert_eq!(
            parse_target("/api/v1/namespaces"),
            resource("", "namespaces", None, None, None)
        );
        assert_eq!(
            parse_target("/api/v1/namespaces/a"),
            resource("", "namespaces", None, Some("a"), None)
        );
        assert_eq!(
            parse_target("/api/v1/namespaces/a/status"),
            resource("", "namespaces", None, Some("a"), Some("status"))
        );
        assert_eq!(
            parse_target("/api/v1/namespaces/a/pods"),
            resource("", "pods", Some("a"), None, None)
        );
        assert_eq!(
            parse_target("/api/v1/namespaces/a/pods/p/status"),
            resource("", "pods", Some("a"), Some("p"), Some("status"))
        );
        assert_eq!(
            parse_target("/apis/x.io/v1/namespaces/a/ws/w"),
            resource("x.io", "ws", Some("a"), Some("w"), None)
        );
        assert_eq!(
            parse_target("/apis/x.io/v1/clusters/c"),
            resource("x.io", "clusters", None, Some("c"), None)
        );
        assert_eq!(parse_target("/apis/x.io/v1"), Target::NonResource);
        assert_eq!(parse_target("/version"), Target::NonResource);
    }

    #[test]
    fn queries_are_percent_decoded() {
        let query = query_map(Some("labelSelector=app%3Ddb%2Ctier+in+(a)&watch=1&x=%zz"));
        assert_eq!(query["labelSelector"], "app=db,tier in (a)");
        assert_eq!(query["watch"], "1");
        assert_eq!(query["x"], "%zz");
    }
}
