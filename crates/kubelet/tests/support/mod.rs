//! Shared by the kubelet's test binaries: a lab API server with a kubelet watching one
//! namespace, and polling with a bound.

#![allow(dead_code, reason = "each test binary uses only part of the shared support")]

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_kubelet::{Kubelet, KubeletConfig};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::ensure_template_async;
use serde_json::json;

/// How long to poll, and how often.
pub(crate) struct Wait {
    pub(crate) bound: Duration,
    pub(crate) poll: Duration,
}

impl Wait {
    /// Polls `check` until it returns `Some`, failing with `what` after the bound.
    pub(crate) async fn until<T, F, Fut>(&self, what: &str, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let start = Instant::now();
        loop {
            if let Some(value) = check().await {
                return value;
            }
            let bound = self.bound;
            assert!(start.elapsed() < bound, "gave up after {bound:?} waiting for {what}");
            tokio::time::sleep(self.poll).await;
        }
    }
}

pub(crate) struct World {
    pub(crate) lab: Lab,
    pub(crate) kubelet: Kubelet,
    pub(crate) client: kube::Client,
    pub(crate) hub: Arc<ProxyHub>,
    pub(crate) _root: tempfile::TempDir,
}

/// A lab API server with `namespace`, a proxy hub and a kubelet watching the namespace; the
/// kubelet's folders live under a fresh `/tmp/<prefix>…` root, and `config` makes its config
/// from that root (the namespace is set here).
pub(crate) async fn start(
    namespace: &str,
    prefix: &str,
    config: impl FnOnce(&Path) -> KubeletConfig,
) -> World {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let template = ensure_template_async(&dist).await.expect("the template data directory");
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    lab.apply(
        json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": namespace } }),
    )
    .unwrap_or_else(|e| panic!("namespace {namespace}: {e}"));
    let url = lab.url().parse().expect("the lab's URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("a client of the lab");
    let root = tempfile::Builder::new().prefix(prefix).tempdir_in("/tmp").expect("a short root");
    let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
    let mut config = config(root.path());
    config.namespace = Some(namespace.to_owned());
    let kubelet = Kubelet::start(client.clone(), dist, template, hub.clone(), config)
        .await
        .expect("the kubelet");
    World { lab, kubelet, client, hub, _root: root }
}
