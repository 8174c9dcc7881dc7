//! `bloodraven-kubelet`: the live lab's kubelet.
//!
//! It watches a (lab) Kubernetes API server through a kube-rs client, exactly as a kubelet
//! watches a real one, for the site Deployments of the workload contract
//! (`bloodraven-workloads`: `app.kubernetes.io/managed-by=bloodraven`,
//! `app.kubernetes.io/name=mysql`). For each it
//!
//! - writes a Pod `<deployment>-<hash of the template>` (labels, annotations and spec from the
//!   template, owned by the Deployment), with `status.conditions` (Ready), `containerStatuses`
//!   (`ready`, `restartCount`, `state`, `lastState`) and `podIP` 127.0.0.1, and the
//!   Deployment's replica counts;
//! - reads the ConfigMap and the claim the pod's volumes name (waiting, as a kubelet does, while
//!   either is missing) and runs a real `mysqld` with the `bloodraven-sites` runner, configured
//!   from the ConfigMap's `my.cnf` (its options win except lab paths and ports:
//!   [`options::LAB_ONLY`]), its data in the claim's folder ([`claims`]), which survives
//!   process restarts and Deployment re-creation while the claim exists;
//! - restarts the process when it dies (`restartCount` + 1), and stops it (SIGTERM, SIGKILL
//!   after the pod's grace period) and deletes the Pod when the Deployment goes or its template
//!   changes (`Recreate`: the new pod starts after the old one stopped).
//!
//! Services resolve through [`LabResolver`], the lab's side of the one seam
//! [`bloodraven_workloads::Resolver`] (production: cluster DNS).
//!
//! The sidecar container runs the `bloodraven-sidecar` binary beside mysqld when
//! [`KubeletConfig::sidecar`] names it ([`sidecar`]: its links and environment); otherwise it
//! is reported `waiting: NotRunInLab`.

pub mod claims;
pub mod cronjob;
pub mod dns;
mod error;
pub mod job;
pub mod options;
pub mod pod;
pub mod resolver;
mod runner;
pub mod secrets;
pub mod sidecar;
mod worker;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::Template;
use bloodraven_workloads::labels;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use kube::Api;
use kube::api::DynamicObject;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::{Notify, watch};
use tokio::task::{JoinHandle, JoinSet};

pub use crate::dns::{DNS_LINK_PREFIX, dns_link_name};
pub use crate::error::KubeletError;
pub use crate::job::{JobConfig, JobPod};
pub use crate::resolver::{LINK_PREFIX, LabResolver, link_name};
pub use crate::sidecar::{SIDECAR_LINK_PREFIX, SidecarConfig, sidecar_link_name};

use crate::runner::Runner;

/// `(namespace, deployment name)`.
pub type PodKey = (String, String);

/// What the kubelet runs for one Deployment right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningPod {
    /// The Pod's name.
    pub pod: String,
    /// mysqld's PID while it runs.
    pub pid: Option<u32>,
    /// Where mysqld listens (127.0.0.1, a free port), once started.
    pub mysql_addr: Option<SocketAddr>,
    /// Whether the Pod is Ready.
    pub ready: bool,
    pub restart_count: i32,
    /// The claim's folder (the instance folder; the data directory is `data/` inside it).
    pub data_dir: Option<PathBuf>,
    /// The sidecar process's PID while it runs (only with [`KubeletConfig::sidecar`]).
    pub sidecar_pid: Option<u32>,
    /// Where the sidecar's HTTP server listens.
    pub sidecar_addr: Option<SocketAddr>,
    /// How often the sidecar process was restarted.
    pub sidecar_restarts: i32,
}

/// The kubelet's table of pods, shared with workers and the resolver.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pods: Mutex<BTreeMap<PodKey, RunningPod>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<PodKey, RunningPod>> {
        self.pods.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_pod(&self, key: PodKey, pod: RunningPod) {
        self.lock().insert(key, pod);
    }

    /// Forgets `key` if it still names `pod` (a newer pod of the same Deployment stays).
    pub(crate) fn remove_pod(&self, key: &PodKey, pod: &str) {
        let mut pods = self.lock();
        if pods.get(key).is_some_and(|running| running.pod == pod) {
            pods.remove(key);
        }
    }

    /// mysqld's address of the pod named `pod` in `namespace`, while its process runs.
    pub(crate) fn mysql_addr(&self, namespace: &str, pod: &str) -> Option<SocketAddr> {
        self.lock()
            .iter()
            .find(|((ns, _), running)| ns == namespace && running.pod == pod)
            .filter(|(_, running)| running.pid.is_some())
            .and_then(|(_, running)| running.mysql_addr)
    }

    /// The sidecar's HTTP address of the pod named `pod` in `namespace`, while it runs.
    pub(crate) fn sidecar_addr(&self, namespace: &str, pod: &str) -> Option<SocketAddr> {
        self.lock()
            .iter()
            .find(|((ns, _), running)| ns == namespace && running.pod == pod)
            .filter(|(_, running)| running.sidecar_pid.is_some())
            .and_then(|(_, running)| running.sidecar_addr)
    }
}

/// How the kubelet runs.
#[derive(Debug, Clone)]
pub struct KubeletConfig {
    /// Where claim folders live (one per claim; see [`claims`]). Keep it short: mysqld's
    /// socket path must fit in 107 bytes.
    pub root: PathBuf,
    /// Only this namespace; `None` watches all.
    pub namespace: Option<String>,
    /// How long a started mysqld may take to answer before it counts as a failed start.
    pub ready_timeout: Duration,
    /// How often the kubelet re-checks everything without a watch event.
    pub resync: Duration,
    /// How long the initial list of each watched kind may take.
    pub list_timeout: Duration,
    /// Run the sidecar container with this binary; `None` reports it `NotRunInLab`.
    pub sidecar: Option<SidecarConfig>,
    /// Run `batch/v1` Jobs ([`job`]); `None` leaves them alone (not even watched).
    pub jobs: Option<JobConfig>,
    /// Fire `batch/v1` CronJobs ([`cronjob`]) into Jobs; `None` leaves them alone.
    pub cronjobs: Option<cronjob::CronConfig>,
}

impl KubeletConfig {
    /// Defaults: all namespaces, 60 s to ready, resync every 2 s, 30 s to list.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            namespace: None,
            ready_timeout: Duration::from_secs(60),
            resync: Duration::from_secs(2),
            list_timeout: Duration::from_secs(30),
            sidecar: None,
            jobs: None,
            cronjobs: None,
        }
    }
}

/// The selector of everything the kubelet watches.
pub fn workload_selector() -> String {
    format!("{}={},{}={}", labels::MANAGED_BY, labels::MANAGER, labels::NAME, labels::APP_NAME)
}

/// A running lab kubelet. Dropping it aborts its tasks, which SIGKILLs every mysqld it runs
/// (claim folders stay: they belong to `root`'s owner).
pub struct Kubelet {
    shared: Arc<Shared>,
    resolver: LabResolver,
    shutdown: watch::Sender<bool>,
    main: Option<JoinHandle<()>>,
    jobs: Option<JoinHandle<()>>,
    job_table: Arc<job::JobTable>,
    watchers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Kubelet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kubelet").finish_non_exhaustive()
    }
}

fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    <K as kube::Resource>::DynamicType: Default,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

/// Starts a reflector for `K`; every event pokes `notify`.
fn reflect<K>(
    api: Api<K>,
    config: watcher::Config,
    notify: Arc<Notify>,
    watchers: &mut Vec<JoinHandle<()>>,
) -> Store<K>
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
    <K as kube::Resource>::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let (store, writer) = reflector::store::<K>();
    let stream = reflector::reflector(writer, watcher(api, config)).default_backoff();
    watchers.push(tokio::spawn(async move {
        stream
            .for_each(|_| {
                notify.notify_one();
                futures::future::ready(())
            })
            .await;
    }));
    store
}

/// Starts a reflector for the operator's DNSEndpoints ([`dns`]); every event pokes `notify`.
fn reflect_dns(
    client: &kube::Client,
    namespace: Option<&str>,
    notify: Arc<Notify>,
    watchers: &mut Vec<JoinHandle<()>>,
) -> Store<DynamicObject> {
    let resource = dns::api_resource();
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let writer = reflector::store::Writer::new(resource);
    let store = writer.as_reader();
    let stream =
        reflector::reflector(writer, watcher(api, watcher::Config::default())).default_backoff();
    watchers.push(tokio::spawn(async move {
        stream
            .for_each(|_| {
                notify.notify_one();
                futures::future::ready(())
            })
            .await;
    }));
    store
}

impl Kubelet {
    /// Starts watching through `client` and running what it finds. Returns once the first
    /// list of Deployments, Pods and Services has arrived.
    pub async fn start(
        client: kube::Client,
        dist: MysqlDist,
        template: Template,
        hub: Arc<ProxyHub>,
        config: KubeletConfig,
    ) -> Result<Self, KubeletError> {
        std::fs::create_dir_all(&config.root)
            .map_err(|source| KubeletError::Root { path: config.root.clone(), source })?;
        let notify = Arc::new(Notify::new());
        let job_notify = Arc::new(Notify::new());
        let namespace = config.namespace.as_deref();
        let mut watchers = Vec::new();
        let workloads = || watcher::Config::default().labels(&workload_selector());
        let deployments = reflect::<Deployment>(
            api(&client, namespace),
            workloads(),
            notify.clone(),
            &mut watchers,
        );
        let pods =
            reflect::<Pod>(api(&client, namespace), workloads(), notify.clone(), &mut watchers);
        // Every claim, labelled or not: a folder is removed only when no claim maps to it.
        let claims = reflect::<PersistentVolumeClaim>(
            api(&client, namespace),
            watcher::Config::default(),
            notify.clone(),
            &mut watchers,
        );
        let services =
            reflect::<Service>(api(&client, namespace), workloads(), notify.clone(), &mut watchers);
        for (what, ready) in [
            (
                "deployments",
                Box::pin(deployments.wait_until_ready())
                    as std::pin::Pin<Box<dyn Future<Output = _> + Send>>,
            ),
            ("pods", Box::pin(pods.wait_until_ready())),
            ("services", Box::pin(services.wait_until_ready())),
            ("persistentvolumeclaims", Box::pin(claims.wait_until_ready())),
        ] {
            let listed = tokio::time::timeout(config.list_timeout, ready).await;
            if !matches!(listed, Ok(Ok(()))) {
                for watcher in &watchers {
                    watcher.abort();
                }
                return Err(KubeletError::Watch {
                    what,
                    message: format!("no list within {:?}", config.list_timeout),
                });
            }
        }
        let job_reflector = config.jobs.as_ref().map(|_| {
            reflect::<k8s_openapi::api::batch::v1::Job>(
                api(&client, namespace),
                watcher::Config::default(),
                job_notify.clone(),
                &mut watchers,
            )
        });
        if let Some(store) = &job_reflector {
            let listed = tokio::time::timeout(config.list_timeout, store.wait_until_ready()).await;
            if !matches!(listed, Ok(Ok(()))) {
                for watcher in &watchers {
                    watcher.abort();
                }
                return Err(KubeletError::Watch {
                    what: "jobs",
                    message: format!("no list within {:?}", config.list_timeout),
                });
            }
        }
        // Not awaited: while the DNSEndpoint CRD is not served the watch retries with
        // backoff and no DNS name resolves; once it is, records arrive like any other event.
        let dns = reflect_dns(&client, namespace, notify.clone(), &mut watchers);
        let shared = Arc::new(Shared::default());
        let resolver = LabResolver { services, pods, shared: shared.clone(), hub, dns };
        let (shutdown, shutdown_rx) = watch::channel(false);
        let job_table = Arc::new(job::JobTable::default());
        let jobs = match (job_reflector, config.jobs.clone()) {
            (Some(store), Some(job_config)) => {
                let runner = job::JobRunner {
                    client: client.clone(),
                    config: job_config,
                    claims_root: config.root.clone(),
                    resolver: resolver.clone(),
                    jobs: store,
                    table: job_table.clone(),
                    resync: config.resync,
                };
                Some(tokio::spawn(runner.run(job_notify, shutdown_rx.clone())))
            }
            _ => None,
        };
        if let Some(cron) = config.cronjobs.clone() {
            watchers.push(tokio::spawn(cronjob::run(
                client.clone(),
                config.namespace.clone(),
                cron,
                shutdown_rx.clone(),
            )));
        }
        let runner = Runner {
            client,
            dist,
            template,
            config,
            shared: shared.clone(),
            deployments,
            claims,
            resolver: resolver.clone(),
            running: BTreeMap::new(),
            stopping: BTreeMap::new(),
            tasks: JoinSet::new(),
        };
        let main = tokio::spawn(runner.run(notify, shutdown_rx));
        Ok(Self { shared, resolver, shutdown, main: Some(main), jobs, job_table, watchers })
    }

    /// The lab's Service resolver.
    pub fn resolver(&self) -> LabResolver {
        self.resolver.clone()
    }

    /// What runs for Deployment `deployment` in `namespace`.
    pub fn pod(&self, namespace: &str, deployment: &str) -> Option<RunningPod> {
        self.shared.lock().get(&(namespace.to_owned(), deployment.to_owned())).cloned()
    }

    /// Everything that runs.
    pub fn pods(&self) -> BTreeMap<PodKey, RunningPod> {
        self.shared.lock().clone()
    }

    /// Every Job attempt in `namespace` the kubelet runs or ran ([`job`]), by Pod name.
    pub fn job_pods(&self, namespace: &str) -> BTreeMap<String, JobPod> {
        self.job_table
            .lock()
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .map(|((_, pod), found)| (pod.clone(), found.clone()))
            .collect()
    }

    /// The container log of Job Pod `pod` in `namespace` (what `kubectl logs` shows), if the
    /// kubelet ran it.
    pub fn job_log(&self, namespace: &str, pod: &str) -> Option<String> {
        let path = self.job_table.lock().get(&(namespace.to_owned(), pod.to_owned()))?.log.clone();
        std::fs::read_to_string(path).ok()
    }

    /// The log of container `container` (an init container or the main one) of Job Pod `pod`
    /// in `namespace`, if the kubelet ran it.
    pub fn job_container_log(&self, namespace: &str, pod: &str, container: &str) -> Option<String> {
        let path = self
            .job_table
            .lock()
            .get(&(namespace.to_owned(), pod.to_owned()))?
            .logs
            .get(container)?
            .clone();
        std::fs::read_to_string(path).ok()
    }

    /// A pod-log source for the lab API server (`bloodraven_lab::Lab::set_pod_logs`): the
    /// container logs of the Job pods this kubelet ran, so `GET pods/<name>/log` (what the
    /// operator reads a backup's completion sentinel from) answers.
    pub fn log_source(&self) -> impl Fn(&str, &str) -> Option<String> + Send + Sync + 'static {
        let table = self.job_table.clone();
        move |namespace: &str, pod: &str| {
            let path = table.lock().get(&(namespace.to_owned(), pod.to_owned()))?.log.clone();
            std::fs::read_to_string(path).ok()
        }
    }

    /// Stops: every mysqld is SIGKILLed (Pod objects stay, as when a node dies).
    pub async fn shutdown(mut self) {
        self.shutdown.send_replace(true);
        if let Some(jobs) = self.jobs.take()
            && tokio::time::timeout(Duration::from_secs(30), jobs).await.is_err()
        {
            tracing::warn!("the kubelet did not stop its jobs within 30 s; aborting");
        }
        if let Some(main) = self.main.take() {
            // The runner kills its workers and waits for them; bound it anyway.
            if tokio::time::timeout(Duration::from_secs(60), main).await.is_err() {
                tracing::warn!("the kubelet did not stop its pods within 60 s; aborting");
            }
        }
        for watcher in self.watchers.drain(..) {
            watcher.abort();
        }
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        if let Some(main) = self.main.take() {
            main.abort();
        }
        if let Some(jobs) = self.jobs.take() {
            jobs.abort();
        }
        for watcher in &self.watchers {
            watcher.abort();
        }
    }
}
