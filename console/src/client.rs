//! The console's Kubernetes client: built from a kubeconfig and context, and wrapped in an
//! allow-list ([`allowed`]) so that any request that could change something fails inside the
//! process. This is the only file of the console that builds a `kube::Client` (a tidy rule in
//! `xtask` checks it).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::{Method, Request};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// A boxed error, as the kube client's service stack uses.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why the console could not build its client.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read the kubeconfig: {0}")]
    KubeconfigRead(#[from] kube::config::KubeconfigError),
    #[error("cannot build a client from the kubeconfig: {0}")]
    ClientBuild(#[from] kube::Error),
}

/// A request the read-only layer refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the console is read-only: refused {method} {path}")]
pub struct WriteRefused {
    pub method: String,
    pub path: String,
}

/// The two creates the console may send: reviews that ask the API server who the caller is
/// and what it may do, and change nothing.
pub const REVIEW_PATHS: [&str; 2] = [
    "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
];

/// Subresources that act on a workload even through a GET: the API server forwards a proxy
/// request to the pod, service or node, and exec, attach and port-forward open a stream into a
/// container.
const ACTING_SUBRESOURCES: [&str; 4] = ["proxy", "exec", "attach", "portforward"];

/// Whether the read-only console may send `method` to `path` (without the query): a GET that is
/// not a proxy, exec, attach or port-forward, or a POST of one of the [`REVIEW_PATHS`].
pub fn allowed(method: &Method, path: &str) -> bool {
    if *method == Method::POST {
        return REVIEW_PATHS.contains(&path);
    }
    *method == Method::GET && !acts_through_get(path)
}

/// Whether a GET of `path` reaches a workload: `/api/v1/proxy/…` (the old form),
/// `…/<resource>/<name>/proxy[/…]` and the other [`ACTING_SUBRESOURCES`].
fn acts_through_get(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').filter(|segment| !segment.is_empty()).collect();
    // `/api/<version>/…` or `/apis/<group>/<version>/…`; anything else (discovery, /version,
    // /openapi) has no subresources, but a proxy anywhere in it is still refused.
    let rest = match segments.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => return segments.iter().any(|segment| segment.eq_ignore_ascii_case("proxy")),
    };
    let rest = match rest {
        // `namespaces/<ns>/<resource>…`; `namespaces/<name>` alone is the namespace itself.
        ["namespaces", _namespace, resource, more @ ..] => {
            let mut all = vec![*resource];
            all.extend_from_slice(more);
            all
        }
        other => other.to_vec(),
    };
    // [resource, name, subresource, …]
    let acting = |segment: &&str| {
        ACTING_SUBRESOURCES.iter().any(|acting| segment.eq_ignore_ascii_case(acting))
    };
    rest.first().is_some_and(acting) || rest.get(2).is_some_and(acting)
}

/// Where refusals are reported besides the log: the console's status line listens here.
static REFUSALS: std::sync::OnceLock<tokio::sync::broadcast::Sender<WriteRefused>> =
    std::sync::OnceLock::new();

fn refusals_sender() -> &'static tokio::sync::broadcast::Sender<WriteRefused> {
    REFUSALS.get_or_init(|| tokio::sync::broadcast::channel(16).0)
}

/// Every request the read-only layer refuses from now on, in this process (the TUI shows each
/// in its status line).
pub fn refusals() -> tokio::sync::broadcast::Receiver<WriteRefused> {
    refusals_sender().subscribe()
}

/// A tower layer that refuses every request [`allowed`] does not allow.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOnlyLayer;

impl<S> tower::Layer<S> for ReadOnlyLayer {
    type Service = ReadOnly<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ReadOnly { inner }
    }
}

/// The service [`ReadOnlyLayer`] makes.
#[derive(Clone, Debug)]
pub struct ReadOnly<S> {
    inner: S,
}

impl<S, B> tower::Service<Request<B>> for ReadOnly<S>
where
    S: tower::Service<Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if !allowed(request.method(), request.uri().path()) {
            let refused = WriteRefused {
                method: request.method().to_string(),
                path: request.uri().path().to_owned(),
            };
            tracing::error!(method = %refused.method, path = %refused.path, "request refused: the console is read-only");
            // Nobody listening (no console open) is fine: the error still reaches the caller.
            let _ = refusals_sender().send(refused.clone());
            return Box::pin(async move { Err(refused.into()) });
        }
        let future = self.inner.call(request);
        Box::pin(async move { future.await.map_err(Into::into) })
    }
}

/// The writes the console may send in write mode, and nothing else: what the spec tells a
/// human to write (`ops::WriteOp`). Each is a (method, path shape) pair; `{ns}` and `{name}`
/// are one path segment each.
pub const WRITE_ALLOW_LIST: [(&str, &str); 6] = [
    // The one-shot annotations: planned-failover, acknowledge-planned-failover-hold, reclone-site.
    ("PATCH", "/apis/shipstream.io/v1alpha1/namespaces/{ns}/mysqlfailovergroups/{name}"),
    // status.restoreReclones.phase: Draining, or its removal.
    ("PATCH", "/apis/shipstream.io/v1alpha1/namespaces/{ns}/mysqlfailovergroups/{name}/status"),
    // An on-demand MysqlBackup (with or without spec.sourceSite).
    ("POST", "/apis/shipstream.io/v1alpha1/namespaces/{ns}/mysqlbackups"),
    // A MysqlBackupVerification.
    ("POST", "/apis/shipstream.io/v1alpha1/namespaces/{ns}/mysqlbackupverifications"),
    // A new group restoring a backup to a point in time (the PITR workbench).
    ("POST", "/apis/shipstream.io/v1alpha1/namespaces/{ns}/mysqlfailovergroups"),
    // The ConsoleOperation Event on the object (sent only when RBAC allows it).
    ("POST", "/api/v1/namespaces/{ns}/events"),
];

/// Whether `method path` matches an entry of [`WRITE_ALLOW_LIST`].
pub fn write_allowed(method: &Method, path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').collect();
    WRITE_ALLOW_LIST.iter().any(|(allowed_method, shape)| {
        let shape: Vec<&str> = shape.split('/').collect();
        method.as_str() == *allowed_method
            && shape.len() == segments.len()
            && shape.iter().zip(&segments).all(|(want, got)| match *want {
                "{ns}" | "{name}" => is_dns_name(got),
                literal => literal == *got,
            })
    })
}

/// A namespace or object name: lowercase letters, digits, `-` and `.`, not empty.
fn is_dns_name(segment: &str) -> bool {
    !segment.is_empty()
        && segment.len() <= 253
        && segment
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

/// Whether the session may write: off by default, turned on by `--write` or the TUI's
/// switch (after a confirmation), never for a context pinned read-only. Shared by the client
/// layer and the UI, so the header always shows what the client does.
#[derive(Clone, Debug, Default)]
pub struct WriteSwitch(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl WriteSwitch {
    /// A switch that starts read-only.
    pub fn read_only() -> WriteSwitch {
        WriteSwitch::default()
    }

    pub fn is_on(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn set(&self, on: bool) {
        self.0.store(on, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A request the write-mode layer refused: not on [`WRITE_ALLOW_LIST`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the console may not send this write: refused {method} {path} (not on its allow-list)")]
pub struct NotAllowListed {
    pub method: String,
    pub path: String,
}

/// The layer of a console that may write: [`allowed`] always, [`write_allowed`] only while
/// the [`WriteSwitch`] is on; everything else fails in process.
#[derive(Clone, Debug)]
pub struct GuardedLayer {
    pub switch: WriteSwitch,
}

impl<S> tower::Layer<S> for GuardedLayer {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Guarded { inner, switch: self.switch.clone() }
    }
}

/// The service [`GuardedLayer`] makes.
#[derive(Clone, Debug)]
pub struct Guarded<S> {
    inner: S,
    switch: WriteSwitch,
}

impl<S, B> tower::Service<Request<B>> for Guarded<S>
where
    S: tower::Service<Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let (method, path) = (request.method(), request.uri().path());
        if !allowed(method, path) {
            let write_mode = self.switch.is_on();
            let error: BoxError = if write_mode && write_allowed(method, path) {
                let future = self.inner.call(request);
                return Box::pin(async move { future.await.map_err(Into::into) });
            } else if write_mode {
                tracing::error!(%method, path, "request refused: not on the console's write allow-list");
                Box::new(NotAllowListed { method: method.to_string(), path: path.to_owned() })
            } else {
                let refused = WriteRefused { method: method.to_string(), path: path.to_owned() };
                tracing::error!(method = %refused.method, path = %refused.path, "request refused: the console is read-only");
                let _ = refusals_sender().send(refused.clone());
                Box::new(refused)
            };
            return Box::pin(async move { Err(error) });
        }
        let future = self.inner.call(request);
        Box::pin(async move { future.await.map_err(Into::into) })
    }
}

/// A client from `kubeconfig` and `context` that writes only the [`WRITE_ALLOW_LIST`], and
/// only while `switch` is on.
pub async fn connect_guarded(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    switch: WriteSwitch,
) -> Result<(Client, Connection), Error> {
    let kubeconfig = match kubeconfig {
        Some(path) => Kubeconfig::read_from(path)?,
        None => Kubeconfig::read()?,
    };
    let context_name = context
        .map(str::to_owned)
        .or_else(|| kubeconfig.current_context.clone())
        .unwrap_or_else(|| "-".to_owned());
    let options =
        KubeConfigOptions { context: context.map(str::to_owned), ..KubeConfigOptions::default() };
    let config = Config::from_custom_kubeconfig(kubeconfig, &options).await?;
    let server = config.cluster_url.to_string();
    let default_namespace = config.default_namespace.clone();
    let builder = kube::client::ClientBuilder::try_from(config)?;
    let client = builder.with_layer(&GuardedLayer { switch }).build();
    Ok((client, Connection { context: context_name, default_namespace, server }))
}

/// What the client was built from, for the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    pub context: String,
    pub default_namespace: String,
    pub server: String,
}

/// A read-only client from `kubeconfig` (or the default kubeconfig) and `context`.
pub async fn connect(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<(Client, Connection), Error> {
    let kubeconfig = match kubeconfig {
        Some(path) => Kubeconfig::read_from(path)?,
        None => Kubeconfig::read()?,
    };
    let context_name = context
        .map(str::to_owned)
        .or_else(|| kubeconfig.current_context.clone())
        .unwrap_or_else(|| "-".to_owned());
    let options =
        KubeConfigOptions { context: context.map(str::to_owned), ..KubeConfigOptions::default() };
    let config = Config::from_custom_kubeconfig(kubeconfig, &options).await?;
    let server = config.cluster_url.to_string();
    let default_namespace = config.default_namespace.clone();
    let client = client_from_config(config)?;
    Ok((client, Connection { context: context_name, default_namespace, server }))
}

/// A client that can write, for the lab's own machinery only (`lab --live`: the lab kubelet
/// and the objects it creates on the in-process lab API server at `url`), never for the
/// console's views. It is built here so that this file stays the one place a client is built
/// (the tidy rule `xtask/tests/it/console_client.rs`).
#[cfg(feature = "lab")]
pub fn lab_writer(url: hyper::Uri) -> Result<Client, Error> {
    Ok(Client::try_from(Config::new(url))?)
}

/// A read-only client from a kube `Config`.
pub fn client_from_config(config: Config) -> Result<Client, Error> {
    let builder = kube::client::ClientBuilder::try_from(config)?;
    Ok(builder.with_layer(&ReadOnlyLayer).build())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
    use kube::client::Body;

    use super::*;

    /// A fake API server that answers every request with an empty ConfigMap list and records
    /// the methods it saw.
    fn recording_client() -> (Client, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let inner = tower::service_fn(move |request: Request<Body>| {
            log.lock().unwrap().push(request.method().to_string());
            async move {
                let body = r#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"1"},"items":[]}"#;
                Ok::<_, BoxError>(hyper::Response::new(Body::from(body.as_bytes().to_vec())))
            }
        });
        let service = tower::Layer::layer(&ReadOnlyLayer, inner);
        (Client::new(service, "default"), seen)
    }

    #[test]
    fn the_allow_list_is_gets_without_proxies_and_two_reviews() {
        let cases = [
            (Method::GET, "/api/v1/namespaces/orders/configmaps", true),
            (Method::GET, "/api/v1/namespaces/orders/configmaps/proxy", true),
            (Method::GET, "/apis/shipstream.io/v1alpha1/mysqlfailovergroups", true),
            (Method::GET, "/api/v1/namespaces/orders", true),
            (Method::GET, "/apis", true),
            (Method::GET, "/version", true),
            (Method::GET, "/api/v1/namespaces/orders/pods/db-0/proxy", false),
            (Method::GET, "/api/v1/namespaces/orders/pods/db-0/proxy/metrics", false),
            (Method::GET, "/api/v1/namespaces/orders/services/http:web:80/proxy/", false),
            (Method::GET, "/api/v1/nodes/node-1/proxy/configz", false),
            (Method::GET, "/api/v1/proxy/namespaces/orders/pods/db-0", false),
            (Method::GET, "/api/v1/namespaces/orders/pods/db-0/exec", false),
            (Method::GET, "/api/v1/namespaces/orders/pods/db-0/attach", false),
            (Method::GET, "/api/v1/namespaces/orders/pods/db-0/portforward", false),
            (Method::GET, "/logs/proxy", false),
            (Method::POST, "/apis/authentication.k8s.io/v1/selfsubjectreviews", true),
            (Method::POST, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", true),
            (Method::POST, "/apis/authorization.k8s.io/v1/subjectaccessreviews", false),
            (Method::POST, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", false),
            (Method::POST, "/apis/authentication.k8s.io/v1/tokenreviews", false),
            (
                Method::POST,
                "/apis/authorization.k8s.io/v1/namespaces/x/selfsubjectaccessreviews",
                false,
            ),
            (Method::POST, "/api/v1/namespaces/orders/configmaps", false),
            (Method::PUT, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", false),
            (Method::PATCH, "/api/v1/namespaces/orders/configmaps/x", false),
            (Method::DELETE, "/api/v1/namespaces/orders/configmaps/x", false),
            (Method::HEAD, "/api/v1/namespaces/orders/configmaps", false),
            (Method::OPTIONS, "/api/v1", false),
        ];
        for (method, path, expected) in cases {
            assert_eq!(allowed(&method, path), expected, "{method} {path}");
        }
    }

    #[test]
    fn the_write_allow_list_is_exactly_the_spec_writes() {
        let cases = [
            (
                Method::PATCH,
                "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups/orders",
                true,
            ),
            (
                Method::PATCH,
                "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups/orders/status",
                true,
            ),
            (Method::POST, "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlbackups", true),
            (
                Method::POST,
                "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlbackupverifications",
                true,
            ),
            (Method::POST, "/api/v1/namespaces/orders/events", true),
            (
                Method::POST,
                "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups",
                true,
            ),
            (
                Method::PUT,
                "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups/orders",
                false,
            ),
            (
                Method::DELETE,
                "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups/orders",
                false,
            ),
            (
                Method::DELETE,
                "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlbackups/b",
                false,
            ),
            (Method::PATCH, "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlbackups/b", false),
            (
                Method::PATCH,
                "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups/orders/scale",
                false,
            ),
            (Method::PATCH, "/apis/shipstream.io/v1alpha1/mysqlfailovergroups/orders", false),
            (Method::PATCH, "/api/v1/namespaces/orders/secrets/s", false),
            (Method::PATCH, "/apis/apps/v1/namespaces/orders/deployments/orders-iad", false),
            (Method::POST, "/api/v1/namespaces/orders/pods/db-0/exec", false),
            (Method::POST, "/apis/shipstream.io/v1alpha1/namespaces/ORDERS/mysqlbackups", false),
            (Method::POST, "/apis/shipstream.io/v1alpha1/namespaces//mysqlbackups", false),
        ];
        for (method, path, expected) in cases {
            assert_eq!(write_allowed(&method, path), expected, "{method} {path}");
        }
    }

    #[tokio::test]
    async fn the_guarded_layer_writes_only_when_switched_on_and_only_the_allow_list() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let inner = tower::service_fn(move |request: Request<Body>| {
            log.lock().unwrap().push(format!("{} {}", request.method(), request.uri().path()));
            async move { Ok::<_, BoxError>(hyper::Response::new(Body::from(b"{}".to_vec()))) }
        });
        let switch = WriteSwitch::read_only();
        let client = Client::new(
            tower::Layer::layer(&GuardedLayer { switch: switch.clone() }, inner),
            "default",
        );
        let patch = |path: &str| {
            hyper::Request::patch(path)
                .header("content-type", "application/json-patch+json")
                .body(b"[]".to_vec())
                .unwrap()
        };
        let group = "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups/orders";
        let error = client.request_text(patch(group)).await.unwrap_err();
        assert!(error.to_string().contains("the console is read-only"), "{error}");
        switch.set(true);
        client.request_text(patch(group)).await.unwrap();
        let error =
            client.request_text(patch("/api/v1/namespaces/orders/configmaps/x")).await.unwrap_err();
        assert!(error.to_string().contains("not on its allow-list"), "{error}");
        switch.set(false);
        assert!(client.request_text(patch(group)).await.is_err());
        assert_eq!(*seen.lock().unwrap(), [format!("PATCH {group}")]);
    }

    #[tokio::test]
    async fn reads_pass_and_every_write_verb_fails_inside_the_process() {
        let (client, seen) = recording_client();
        let api: Api<ConfigMap> = Api::namespaced(client, "default");
        api.list(&ListParams::default()).await.unwrap();
        assert_eq!(*seen.lock().unwrap(), ["GET"]);

        let object = ConfigMap::default();
        let errors = [
            api.create(&PostParams::default(), &object).await.map(|_| ()).unwrap_err(),
            api.replace("x", &PostParams::default(), &object).await.map(|_| ()).unwrap_err(),
            api.patch("x", &PatchParams::default(), &Patch::Merge(serde_json::json!({})))
                .await
                .map(|_| ())
                .unwrap_err(),
            api.delete("x", &DeleteParams::default()).await.map(|_| ()).unwrap_err(),
            api.delete_collection(&DeleteParams::default(), &ListParams::default())
                .await
                .map(|_| ())
                .unwrap_err(),
        ];
        for error in errors {
            assert!(error.to_string().contains("the console is read-only"), "{error}");
        }
        assert_eq!(*seen.lock().unwrap(), ["GET"], "no write reached the server");
    }
}
