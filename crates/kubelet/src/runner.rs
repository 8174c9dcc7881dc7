//! The kubelet's loop: the Deployments that should run against the pods that do, one worker
//! per pod, links re-pointed and claim folders collected after every change.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::template::Template;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::runtime::reflector::Store;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tracing::info;

use crate::worker::{self, Stop, WorkerContext};
use crate::{KubeletConfig, LabResolver, PodKey, Shared, claims, pod};

pub(crate) struct Runner {
    pub(crate) client: kube::Client,
    pub(crate) dist: MysqlDist,
    pub(crate) template: Template,
    pub(crate) config: KubeletConfig,
    pub(crate) shared: Arc<Shared>,
    pub(crate) deployments: Store<Deployment>,
    pub(crate) claims: Store<PersistentVolumeClaim>,
    pub(crate) resolver: LabResolver,
    /// Key → (pod name, stop signal) of the pods that should run.
    pub(crate) running: BTreeMap<PodKey, (String, watch::Sender<Option<Stop>>)>,
    /// Pods being stopped, by (key, pod name); their signals must live until they end.
    pub(crate) stopping: BTreeMap<(PodKey, String), watch::Sender<Option<Stop>>>,
    pub(crate) tasks: JoinSet<(PodKey, String)>,
}

impl Runner {
    pub(crate) async fn run(mut self, notify: Arc<Notify>, mut shutdown: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = shutdown.wait_for(|stop| *stop) => break,
                () = notify.notified() => {}
                () = tokio::time::sleep(self.config.resync) => {}
                Some(ended) = self.tasks.join_next(), if !self.tasks.is_empty() => {
                    if let Ok(ended) = ended {
                        self.stopping.remove(&ended);
                        if self.running.get(&ended.0).is_some_and(|(pod, _)| *pod == ended.1) {
                            self.running.remove(&ended.0);
                        }
                    }
                }
            }
            self.sync();
            self.resolver.refresh();
            self.collect_claim_folders();
        }
        for (_, stop) in self.running.values() {
            stop.send_replace(Some(Stop::Shutdown));
        }
        for stop in self.stopping.values() {
            stop.send_replace(Some(Stop::Shutdown));
        }
        while self.tasks.join_next().await.is_some() {}
    }

    /// The pods that should run: one per live Deployment with at least one replica.
    fn desired(&self) -> BTreeMap<PodKey, (String, Arc<Deployment>)> {
        self.deployments
            .state()
            .into_iter()
            .filter(|deployment| deployment.metadata.deletion_timestamp.is_none())
            .filter(|deployment| deployment.spec.replicas.unwrap_or(1) > 0)
            .filter_map(|deployment| {
                let namespace = deployment.metadata.namespace.clone()?;
                let name = deployment.metadata.name.clone()?;
                let pod = pod::pod_name(&name, &deployment.spec.template);
                Some(((namespace, name), (pod, deployment)))
            })
            .collect()
    }

    /// Removes the folders of claims that no longer exist (and that no pod still uses): data
    /// lives exactly as long as its claim.
    fn collect_claim_folders(&self) {
        let mut live: std::collections::BTreeSet<PathBuf> = self
            .claims
            .state()
            .iter()
            .filter_map(|claim| {
                let namespace = claim.metadata.namespace.as_deref()?;
                let name = claim.metadata.name.as_deref()?;
                let uid = claim.metadata.uid.as_deref()?;
                Some(claims::claim_folder(&self.config.root, namespace, name, uid))
            })
            .collect();
        live.extend(self.shared.lock().values().filter_map(|pod| pod.data_dir.clone()));
        let Ok(entries) = std::fs::read_dir(&self.config.root) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            // Only folders the kubelet made: a link someone put there (a test standing in for
            // a mount) is not a claim's folder to collect.
            let folder = entry.file_type().is_ok_and(|kind| kind.is_dir());
            if folder && !live.contains(&path) && !self.starting_or_stopping() {
                info!(folder = %path.display(), "removing the folder of a deleted claim");
                if let Err(error) = std::fs::remove_dir_all(&path) {
                    tracing::warn!(folder = %path.display(), %error, "cannot remove a claim folder");
                }
            }
        }
    }

    /// Whether a pod may hold a folder the table does not show yet (or any more).
    fn starting_or_stopping(&self) -> bool {
        !self.stopping.is_empty()
            || self
                .running
                .keys()
                .any(|key| self.shared.lock().get(key).is_none_or(|pod| pod.data_dir.is_none()))
    }

    fn sync(&mut self) {
        let desired = self.desired();
        let stale: Vec<PodKey> = self
            .running
            .iter()
            .filter(|(key, (pod, _))| desired.get(*key).is_none_or(|(want, _)| want != pod))
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            if let Some((pod, stop)) = self.running.remove(&key) {
                info!(namespace = %key.0, deployment = %key.1, %pod, "stopping pod");
                stop.send_replace(Some(Stop::Delete));
                self.stopping.insert((key, pod), stop);
            }
        }
        for (key, (pod, deployment)) in desired {
            let busy = self.running.contains_key(&key)
                || self.stopping.keys().any(|(stopping, _)| *stopping == key);
            if busy {
                continue;
            }
            info!(namespace = %key.0, deployment = %key.1, %pod, "starting pod");
            let (stop, stop_rx) = watch::channel(None);
            let ctx = WorkerContext {
                client: self.client.clone(),
                dist: self.dist.clone(),
                template: self.template.clone(),
                root: self.config.root.clone(),
                ready_timeout: self.config.ready_timeout,
                shared: self.shared.clone(),
                deployment: (*deployment).clone(),
                namespace: key.0.clone(),
                deployment_name: key.1.clone(),
                pod_name: pod.clone(),
                sidecar: self.config.sidecar.clone(),
                resolver: self.resolver.clone(),
            };
            let ended = (key.clone(), pod.clone());
            self.tasks.spawn(async move {
                worker::run(ctx, stop_rx).await;
                ended
            });
            self.running.insert(key, (pod, stop));
        }
    }
}
