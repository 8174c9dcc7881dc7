//! The console's Kubernetes client: built from a kubeconfig and context, and wrapped so that
//! any request other than a GET (get, list, watch) fails inside the process.

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
#[derive(Debug, thiserror::Error)]
#[error("the console is read-only: refused {method} {path}")]
pub struct WriteRefused {
    pub method: String,
    pub path: String,
}

/// A tower layer that refuses every request that is not a GET.
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
        if request.method() != Method::GET {
            let refused = WriteRefused {
                method: request.method().to_string(),
                path: request.uri().path().to_owned(),
            };
            tracing::error!(method = %refused.method, path = %refused.path, "write request refused");
            return Box::pin(async move { Err(refused.into()) });
        }
        let future = self.inner.call(request);
        Box::pin(async move { future.await.map_err(Into::into) })
    }
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
