//! The operator's view of the groups' pods: their names and labels, kept by one metadata watch
//! (every pod carrying the group label, in the namespaces the controller watches) instead of a
//! list per group per poll. Until the watch has listed once, readers list for themselves.

use std::sync::Mutex;

use futures::{FutureExt as _, StreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt as _;
use kube::api::{Api, ListParams, PartialObjectMeta};
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::{WatchStreamExt as _, watcher};

use bloodraven_workloads::labels;

/// The pods' metadata store and, until [`PodCache::run`] takes it, its writer.
pub struct PodCache {
    store: Store<PartialObjectMeta<Pod>>,
    writer: Mutex<Option<Writer<PartialObjectMeta<Pod>>>>,
}

impl std::fmt::Debug for PodCache {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("PodCache").field("pods", &self.store.len()).finish()
    }
}

impl Default for PodCache {
    fn default() -> Self {
        let writer = Writer::default();
        Self { store: writer.as_reader(), writer: Mutex::new(Some(writer)) }
    }
}

impl PodCache {
    /// Watches the pods of every group in `namespace` (all namespaces for `None`) into the
    /// store until the process ends; a second call returns at once.
    pub async fn run(&self, client: kube::Client, namespace: Option<&str>) {
        let Some(writer) = self.writer.lock().ok().and_then(|mut writer| writer.take()) else {
            return;
        };
        // An `Api` of `PartialObjectMeta` asks for metadata only (no pod specs to decode).
        let pods: Api<PartialObjectMeta<Pod>> = match namespace {
            Some(namespace) => Api::namespaced(client, namespace),
            None => Api::all(client),
        };
        let config = watcher::Config::default().labels(labels::GROUP);
        reflector::reflector(writer, watcher(pods, config))
            .default_backoff()
            .for_each(|event| async move {
                if let Err(error) = event {
                    tracing::warn!(%error, "watching the groups' pods (retrying)");
                }
            })
            .await;
    }

    /// The metadata of `group`'s pods in `namespace`: from the store once it has listed, else
    /// by a list request.
    pub(crate) async fn of_group(
        &self,
        client: &kube::Client,
        namespace: &str,
        group: &str,
    ) -> Result<Vec<PartialObjectMeta<Pod>>, kube::Error> {
        if self.store.wait_until_ready().now_or_never().is_some_and(|ready| ready.is_ok()) {
            return Ok(self
                .store
                .state()
                .into_iter()
                .filter(|pod| {
                    pod.namespace().as_deref() == Some(namespace)
                        && pod.labels().get(labels::GROUP).map(String::as_str) == Some(group)
                })
                .map(|pod| (*pod).clone())
                .collect());
        }
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        let selector = labels::group_label_selector(group);
        Ok(pods.list_metadata(&ListParams::default().labels(&selector)).await?.items)
    }
}
