//! `bloodraven-lab`: an in-memory Kubernetes API server for tests and drills.
//!
//! It serves plain HTTP on 127.0.0.1 with the semantics kube-rs clients, kube-runtime
//! watchers and controllers, and `kubectl` rely on: CRUD with resource versions and
//! conflicts, every patch type including server-side apply, the status subresource,
//! finalizers, label and field selectors, pagination, WATCH with bookmarks and `410 Gone`,
//! discovery, and CRD registration. On top it records every request and can inject faults.
//! Identities come from bearer tokens, minted ServiceAccount tokens and (over TLS) client
//! certificates; with `LabConfig::rbac` every request is authorized by the stored RBAC
//! objects, and `SelfSubjectReview` / `SelfSubjectAccessReview` answer "who am I" and "may I".
//!
//! ```text
//! let lab = Lab::start(LabConfig::default()).await?;
//! lab.apply_yaml(include_str!("crd.yaml"))?;
//! let client = kube::Client::try_from(kube::Config::new(lab.url().parse()?))?;
//! ...
//! assert!(lab.requests().iter().all(|request| !request.is_write()));
//! lab.stop().await?;
//! ```

mod access;
mod audit;
mod discovery;
mod error;
mod events;
mod identity;
mod impersonation;
mod managed;
mod openapi;
mod patch;
#[cfg(test)]
mod proptests;
mod protobuf;
mod rbac;
mod registry;
mod reviews;
mod selector;
mod server;
mod store;
mod table;
mod tls;
mod validate;
mod watch;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use crate::audit::{Fault, FaultAction, RequestRecord};
pub use crate::discovery::{KUBERNETES_MAJOR, KUBERNETES_MINOR};
pub use crate::error::{ApiError, Error, Result};
pub use crate::identity::{
    ANONYMOUS, AUTHENTICATED, ClientCertificate, MASTERS, MAX_CERTIFICATE_GROUPS, SERVICE_ACCOUNTS,
    UNAUTHENTICATED, UserInfo, service_account_username,
};
pub use crate::registry::GroupResource;

use crate::registry::split_api_version;
use crate::server::{Settings, Shared, lock};
use crate::store::{State, WriteContext, now_rfc3339};

/// A source of pod logs for `GET pods/<name>/log`: `(namespace, pod)` → the log text, `None`
/// when it has none (the lab kubelet's `job_log`).
pub type PodLogs = std::sync::Arc<dyn Fn(&str, &str) -> Option<String> + Send + Sync>;

/// The field manager the library API writes with.
pub const FIELD_MANAGER: &str = "bloodraven-lab";

/// How to start a lab API server.
#[derive(Debug, Clone)]
pub struct LabConfig {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Bearer token → user name. A request with an unknown token gets 401.
    pub tokens: BTreeMap<String, String>,
    /// Whether requests without a token are served (as `system:anonymous`).
    pub allow_anonymous: bool,
    /// How many changes watches can resume from; older versions get 410 Gone.
    pub history_limit: usize,
    /// How often a watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
    /// How long a watch without `timeoutSeconds` stays open.
    pub default_watch_timeout: Duration,
    /// How many requests the log keeps (the oldest are dropped first).
    pub request_log_limit: usize,
    /// Loaded at start when it exists, written by `stop` and `save_snapshot`.
    pub snapshot: Option<PathBuf>,
    /// Serve https with a throwaway CA (in the kubeconfig) instead of plain http. kubectl
    /// sends bearer tokens only over https, so identities of kubectl requests need this.
    pub tls: bool,
    /// User name → groups of token users (`with_user_in_groups`, `with_admin`).
    pub groups: BTreeMap<String, Vec<String>>,
    /// Authorize requests by the stored RBAC objects (`with_rbac`); off, every
    /// authenticated request is allowed.
    pub rbac: bool,
}

impl Default for LabConfig {
    fn default() -> Self {
        Self {
            port: 0,
            tokens: BTreeMap::new(),
            allow_anonymous: true,
            history_limit: 10_000,
            bookmark_interval: Duration::from_secs(60),
            default_watch_timeout: Duration::from_secs(1800),
            request_log_limit: 100_000,
            snapshot: None,
            tls: false,
            groups: BTreeMap::new(),
            rbac: false,
        }
    }
}

impl LabConfig {
    /// Adds a bearer token for a named user.
    pub fn with_user(mut self, user: &str, token: &str) -> Self {
        self.tokens.insert(token.to_string(), user.to_string());
        self
    }
}

/// A running lab API server.
pub struct Lab {
    address: SocketAddr,
    shared: Arc<Shared>,
    snapshot: Option<PathBuf>,
    ca_pem: Option<String>,
    /// The CA's signer for client certificates (with `LabConfig::tls`).
    issuer: Option<rcgen::Issuer<'static, rcgen::KeyPair>>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl std::fmt::Debug for Lab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lab").field("address", &self.address).finish_non_exhaustive()
    }
}

/// The resource to store a kind in, its version, and whether it is an events.k8s.io/v1 Event
/// (stored as a core/v1 Event).
fn resolve(
    state: &State,
    api_version: &str,
    kind: &str,
) -> Option<(registry::ResourceInfo, String, bool)> {
    let info = state.registry.by_kind(api_version, kind)?;
    let (_, version) = split_api_version(api_version);
    if info.group == "events.k8s.io" && info.plural == "events" {
        let core = state.registry.lookup("", "v1", "events")?;
        return Some((core.clone(), "v1".to_string(), true));
    }
    Some((info.clone(), version.to_string(), false))
}

fn present(info: &registry::ResourceInfo, version: &str, events_v1: bool, object: &Value) -> Value {
    let presented = State::present(info, version, object);
    if events_v1 { events::to_events_v1(&presented) } else { presented }
}

fn api_error(what: impl Into<String>) -> impl FnOnce(ApiError) -> Error {
    let what = what.into();
    move |status| Error::Api { what, status: Box::new(status) }
}

impl Lab {
    /// Binds 127.0.0.1 and starts serving.
    pub async fn start(config: LabConfig) -> Result<Self> {
        let mut state = State::new(config.history_limit);
        if let Some(path) = &config.snapshot
            && path.exists()
        {
            let (resource_version, objects) = read_snapshot(path)?;
            state.restore(resource_version, objects);
        }
        let settings = Settings {
            tokens: config.tokens.clone(),
            allow_anonymous: config.allow_anonymous,
            bookmark_interval: config.bookmark_interval.max(Duration::from_millis(10)),
            default_watch_timeout: config.default_watch_timeout,
            request_log_limit: config.request_log_limit,
        };
        let shared = Arc::new(Shared::new(state, settings));
        lock(&shared.access).groups = config.groups.clone();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.port))
            .await
            .map_err(|source| Error::Bind { port: config.port, source })?;
        let address =
            listener.local_addr().map_err(|source| Error::Bind { port: config.port, source })?;
        *lock(&shared.address) = address.to_string();
        let router = server::router(shared.clone());
        let (shutdown, shutdown_signal) = oneshot::channel::<()>();
        let watch_generation = shared.watch_generation.clone();
        let (task, ca_pem, issuer) = if config.tls {
            let material = tls::generate()?;
            let task = tokio::spawn(tls::serve(
                listener,
                router,
                material.acceptor,
                shutdown_signal,
                watch_generation,
            ));
            (task, Some(material.ca_pem), Some(material.issuer))
        } else {
            let task = tokio::spawn(async move {
                axum::serve(listener, router)
                    .with_graceful_shutdown(async move {
                        let _ = shutdown_signal.await;
                        // Open watches would hold graceful shutdown forever: end them first.
                        watch_generation.send_modify(|generation| *generation += 1);
                    })
                    .await
            });
            (task, None, None)
        };
        let lab = Self {
            address,
            shared,
            snapshot: config.snapshot,
            ca_pem,
            issuer,
            shutdown: Some(shutdown),
            task: Some(task),
        };
        if config.rbac {
            lab.set_rbac(true)?;
        }
        Ok(lab)
    }

    /// `http://127.0.0.1:PORT` (`https://` with `LabConfig::tls`).
    pub fn url(&self) -> String {
        let scheme = if self.ca_pem.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.address)
    }

    /// The PEM of the CA that signed the server certificate, when serving TLS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops serving (ending open watches) and writes the snapshot file when configured.
    pub async fn stop(mut self) -> Result<()> {
        self.shutdown_now().await
    }

    async fn shutdown_now(&mut self) -> Result<()> {
        self.shared.paused.send_replace(false);
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            match tokio::time::timeout(Duration::from_secs(10), task).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(error))) => return Err(Error::ServerTask(error.to_string())),
                Ok(Err(error)) => return Err(Error::ServerTask(error.to_string())),
                Err(_) => {
                    return Err(Error::ServerTask(
                        "graceful shutdown took longer than 10 s".to_string(),
                    ));
                }
            }
        }
        if let Some(path) = self.snapshot.clone() {
            self.save_snapshot(&path)?;
        }
        Ok(())
    }

    /// Creates or replaces every object of a (multi-document) YAML text, in order.
    /// CustomResourceDefinitions register their resource immediately.
    pub fn apply_yaml(&self, yaml: &str) -> Result<Vec<Value>> {
        let mut applied = Vec::new();
        for (index, document) in serde_norway::Deserializer::from_str(yaml).enumerate() {
            let value = <Value as serde::Deserialize>::deserialize(document).map_err(|error| {
                Error::InvalidYaml { document: index + 1, message: error.to_string() }
            })?;
            if value.is_null() {
                continue;
            }
            applied.push(self.apply_object(index + 1, value, true)?);
        }
        Ok(applied)
    }

    /// Loads CustomResourceDefinitions (multi-document YAML); same as `apply_yaml`.
    pub fn load_crds(&self, yaml: &str) -> Result<Vec<Value>> {
        self.apply_yaml(yaml)
    }

    /// Creates or replaces one object. Custom resources are validated against their CRD
    /// (schema and CEL rules) and pruned, as the API server does; a refusal is `Error::Api`
    /// with the 422 `Status`.
    pub fn apply(&self, object: Value) -> Result<Value> {
        self.apply_object(1, object, true)
    }

    /// Test-only raw insert: creates or replaces one object like `apply`, but without schema
    /// or CEL validation and without pruning, as if an older or newer operator (CRD version
    /// skew) or a hand edit had stored it. Clients then read it back as stored. Never use it
    /// to make test data pass: fix the data instead.
    pub fn insert_unvalidated(&self, object: Value) -> Result<Value> {
        self.apply_object(1, object, false)
    }

    fn apply_object(&self, document: usize, object: Value, validate: bool) -> Result<Value> {
        let invalid =
            |message: &str| Error::InvalidObject { document, message: message.to_string() };
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("apiVersion is missing"))?
            .to_string();
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("kind is missing"))?
            .to_string();
        let (api_version, kind) = (api_version.as_str(), kind.as_str());
        let name = store::meta_str(&object, "name")
            .ok_or_else(|| invalid("metadata.name is missing"))?
            .to_string();
        let mut state = validate::Locked::new(lock(&self.shared.state), validate);
        let (info, version, events_v1) = resolve(&state, api_version, kind)
            .ok_or_else(|| Error::UnknownResource { resource: format!("{kind}.{api_version}") })?;
        let version = version.as_str();
        let object = if events_v1 { events::to_core(&object) } else { object };
        let namespace = if info.namespaced {
            Some(store::meta_str(&object, "namespace").unwrap_or("default").to_string())
        } else {
            None
        };
        let ctx = WriteContext {
            field_manager: FIELD_MANAGER.to_string(),
            dry_run: false,
            force: true,
            now: now_rfc3339(),
        };
        let what = format!("{kind} {name}");
        match state.get(&info, namespace.as_deref(), &name) {
            Ok(live) => {
                let mut replacement = object.clone();
                replacement["metadata"]["resourceVersion"] =
                    live.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null);
                let status = object.get("status").cloned();
                let mut updated = state
                    .update(
                        &info,
                        version,
                        namespace.as_deref(),
                        &name,
                        replacement,
                        None,
                        &ctx,
                        None,
                    )
                    .map_err(api_error(what.clone()))?;
                if let (Some(status), true) = (status, info.has_status) {
                    updated["status"] = status;
                    updated = state
                        .update(
                            &info,
                            version,
                            namespace.as_deref(),
                            &name,
                            updated,
                            Some("status"),
                            &ctx,
                            None,
                        )
                        .map_err(api_error(what))?;
                }
                Ok(if events_v1 { events::to_events_v1(&updated) } else { updated })
            }
            Err(_) => {
                let status = object.get("status").cloned();
                // Loading is not a POST: a resourceVersion carried over from elsewhere is fine.
                let mut object = object;
                if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    metadata.remove("resourceVersion");
                }
                let mut created = state
                    .create(&info, version, namespace.as_deref(), object, &ctx, None)
                    .map_err(api_error(what.clone()))?;
                if let (Some(status), true) =
                    (status, info.has_status && info.kind != "CustomResourceDefinition")
                {
                    created["status"] = status;
                    created = state
                        .update(
                            &info,
                            version,
                            namespace.as_deref(),
                            &name,
                            created,
                            Some("status"),
                            &ctx,
                            None,
                        )
                        .map_err(api_error(what))?;
                }
                Ok(if events_v1 { events::to_events_v1(&created) } else { created })
            }
        }
    }

    /// One object, as the given apiVersion presents it.
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let state = lock(&self.shared.state);
        let (info, version, events_v1) = resolve(&state, api_version, kind)?;
        state
            .get(&info, namespace, name)
            .ok()
            .map(|object| present(&info, &version, events_v1, &object))
    }

    /// Every object of a kind (all namespaces), in key order.
    pub fn list(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let state = lock(&self.shared.state);
        let Some((info, version, events_v1)) = resolve(&state, api_version, kind) else {
            return Vec::new();
        };
        let selectors = selector::Selectors::default();
        state
            .select(&info, None, &selectors, None)
            .map(|(_, object)| present(&info, &version, events_v1, object))
            .collect()
    }

    /// Deletes an object as a DELETE request would (finalizers are honoured).
    pub fn delete(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<()> {
        let mut state = lock(&self.shared.state);
        let (info, version, _) = resolve(&state, api_version, kind)
            .ok_or_else(|| Error::UnknownResource { resource: format!("{kind}.{api_version}") })?;
        let ctx = WriteContext {
            field_manager: FIELD_MANAGER.to_string(),
            dry_run: false,
            force: false,
            now: now_rfc3339(),
        };
        state
            .delete(&info, &version, namespace, name, &Value::Null, &ctx)
            .map_err(api_error(format!("deleting {kind} {name}")))?;
        Ok(())
    }

    /// Serves `GET pods/<name>/log` from `source` (without one, or when it has no log for the
    /// pod, the answer is 400 as for a container that has not started).
    pub fn set_pod_logs(&self, source: PodLogs) {
        *lock(&self.shared.pod_logs) = Some(source);
    }

    /// The current resource version of the whole store.
    pub fn resource_version(&self) -> u64 {
        lock(&self.shared.state).resource_version()
    }

    /// A kubeconfig for this server; `user` must be a configured user name (its token is
    /// written) or `None` for an anonymous context.
    pub fn kubeconfig(&self, user: Option<&str>) -> String {
        let token = user.and_then(|user| {
            lock(&self.shared.settings)
                .tokens
                .iter()
                .find(|(_, name)| name.as_str() == user)
                .map(|(token, _)| token.clone())
        });
        let user_name = user.unwrap_or("anonymous");
        let user_entry = match token {
            Some(token) => json!({ "token": token }),
            None => json!({}),
        };
        self.kubeconfig_for(user_name, user_entry)
    }

    /// Writes `kubeconfig(user)` to a file.
    pub fn write_kubeconfig(&self, path: &Path, user: Option<&str>) -> Result<()> {
        std::fs::write(path, self.kubeconfig(user))
            .map_err(|source| Error::KubeconfigWrite { path: path.display().to_string(), source })
    }

    /// Every request served so far (up to `LabConfig::request_log_limit`), oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.shared.log).iter().cloned().collect()
    }

    pub fn clear_requests(&self) {
        lock(&self.shared.log).clear();
    }

    /// Adds a fault; faults are checked in the order they were added.
    pub fn inject(&self, fault: Fault) {
        lock(&self.shared.faults).push(fault);
    }

    pub fn clear_faults(&self) {
        lock(&self.shared.faults).clear();
    }

    /// Ends every open watch stream (clients see the connection's body end).
    pub fn drop_watches(&self) {
        self.shared.watch_generation.send_modify(|generation| *generation += 1);
    }

    /// Forgets the retained history: watches resuming from any earlier version get 410.
    pub fn compact(&self) {
        lock(&self.shared.state).compact();
    }

    /// How many changes watches can resume from.
    pub fn set_history_limit(&self, limit: usize) {
        lock(&self.shared.state).set_history_limit(limit);
    }

    /// Holds every request (and every watch event) until `resume`.
    pub fn pause(&self) {
        self.shared.paused.send_replace(true);
    }

    pub fn resume(&self) {
        self.shared.paused.send_replace(false);
    }

    /// Writes every object and the resource version to a JSON file.
    pub fn save_snapshot(&self, path: &Path) -> Result<()> {
        let snapshot = {
            let state = lock(&self.shared.state);
            let objects: Vec<Value> = state
                .all_objects()
                .map(|(group_resource, object)| json!({ "group": group_resource.group, "resource": group_resource.resource, "object": **object }))
                .collect();
            json!({ "resourceVersion": state.resource_version(), "objects": objects })
        };
        let bytes = serde_json::to_vec_pretty(&snapshot).unwrap_or_default();
        std::fs::write(path, bytes)
            .map_err(|source| Error::SnapshotWrite { path: path.display().to_string(), source })
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn read_snapshot(path: &Path) -> Result<(u64, Vec<(GroupResource, Value)>)> {
    let display = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|source| Error::SnapshotRead { path: display.clone(), source })?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|error| Error::SnapshotInvalid {
        path: display.clone(),
        line: error.line(),
        column: error.column(),
        message: error.to_string(),
    })?;
    let invalid = |message: &str| Error::SnapshotInvalid {
        path: display.clone(),
        line: 0,
        column: 0,
        message: message.to_string(),
    };
    let resource_version = value
        .get("resourceVersion")
        .and_then(Value::as_u64)
        .ok_or_else(|| invalid("resourceVersion is missing"))?;
    let mut objects = Vec::new();
    for entry in value
        .get("objects")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("objects is missing"))?
    {
        let group = entry
            .get("group")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("an object has no group"))?;
        let resource = entry
            .get("resource")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("an object has no resource"))?;
        let object =
            entry.get("object").cloned().ok_or_else(|| invalid("an entry has no object"))?;
        objects.push((GroupResource::new(group, resource), object));
    }
    Ok((resource_version, objects))
}
