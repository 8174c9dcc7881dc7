//! One pod: its Pod object, its `mysqld` process (and, later, the sidecar's), restarts, and
//! its end when the Deployment goes.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bloodraven_sites::mysqld::{Instance, InstanceSpec, MysqlDist};
use bloodraven_sites::template::Template;
use bloodraven_workloads::{MY_CNF_KEY, containers};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::claims::claim_folder;
use crate::options::server_options;
use crate::pod::{MysqlState, PodReport, SidecarReport, pod_object, pod_status};
use crate::sidecar::{self, SidecarConfig};
use crate::{LabResolver, RunningPod, Shared};

/// How often a running pod checks that its process is alive.
const LIVENESS_POLL: Duration = Duration::from_millis(300);
/// How long a pod waits before retrying a missing ConfigMap/claim or a failed start.
const RETRY: Duration = Duration::from_secs(1);

/// Why a worker ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The Deployment is gone or changed: stop the process (SIGTERM, then SIGKILL after the
    /// grace period) and delete the Pod.
    Delete,
    /// The kubelet itself stops: SIGKILL the process and leave the Pod object (as a node that
    /// dies leaves its pods).
    Shutdown,
}

/// The second container's process: the sidecar binary beside mysqld, when configured.
#[derive(Debug, Default)]
pub(crate) struct SidecarSlot {
    running: Option<sidecar::Running>,
    /// Starts so far (the first is not a restart).
    starts: i32,
    /// When the sidecar's Secret volumes were last projected.
    projected_at: Option<tokio::time::Instant>,
}

/// How often a running pod's Secret volumes are projected again (a Secret created or changed
/// later reaches the files, as a kubelet's periodic sync does).
const SECRET_RESYNC: Duration = Duration::from_secs(2);

/// Everything a worker needs.
pub(crate) struct WorkerContext {
    pub(crate) client: kube::Client,
    pub(crate) dist: MysqlDist,
    pub(crate) template: Template,
    pub(crate) root: PathBuf,
    pub(crate) ready_timeout: Duration,
    pub(crate) shared: Arc<Shared>,
    pub(crate) deployment: Deployment,
    pub(crate) namespace: String,
    pub(crate) deployment_name: String,
    pub(crate) pod_name: String,
    pub(crate) sidecar: Option<SidecarConfig>,
    pub(crate) resolver: LabResolver,
}

struct Worker {
    ctx: WorkerContext,
    pods: Api<Pod>,
    report: PodReport,
    data_dir: Option<PathBuf>,
    addr: Option<SocketAddr>,
    sidecar: SidecarSlot,
}

fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

/// What the next step found.
enum Outcome<T> {
    Done(T),
    Stopped(Stop),
}

impl Worker {
    fn key(&self) -> (String, String) {
        (self.ctx.namespace.clone(), self.ctx.deployment_name.clone())
    }

    fn pid(&self) -> Option<u32> {
        match self.report.mysql {
            MysqlState::Running { pid, .. } => pid,
            MysqlState::Waiting { .. } => None,
        }
    }

    /// Publishes the state to the kubelet's table, the Pod status and the Deployment status.
    async fn report(&mut self, mysql: MysqlState) {
        let was_ready = self.report.ready();
        self.report.mysql = mysql;
        if was_ready != self.report.ready() {
            self.report.ready_since = now();
        }
        let running = RunningPod {
            pod: self.ctx.pod_name.clone(),
            pid: self.pid(),
            mysql_addr: self.addr,
            ready: self.report.ready(),
            restart_count: self.report.restart_count,
            data_dir: self.data_dir.clone(),
            sidecar_pid: self.sidecar.running.as_ref().and_then(sidecar::Running::pid),
            sidecar_addr: self.sidecar.running.as_ref().map(|running| running.addr),
            sidecar_restarts: (self.sidecar.starts - 1).max(0),
        };
        self.report.sidecar = self.ctx.sidecar.as_ref().map(|_| SidecarReport {
            started_at: self.sidecar.running.as_ref().map(|running| running.started_at),
            pid: self.sidecar.running.as_ref().and_then(sidecar::Running::pid),
            restart_count: (self.sidecar.starts - 1).max(0),
        });
        self.ctx.shared.set_pod(self.key(), running);
        let status = pod_status(&self.report);
        let patch = Patch::Merge(json!({ "status": status }));
        if let Err(error) =
            self.pods.patch_status(&self.ctx.pod_name, &PatchParams::default(), &patch).await
        {
            warn!(pod = %self.ctx.pod_name, %error, "cannot write the pod status");
        }
        let ready = i32::from(self.report.ready());
        let deployments: Api<Deployment> =
            Api::namespaced(self.ctx.client.clone(), &self.ctx.namespace);
        let patch = Patch::Merge(json!({ "status": {
            "observedGeneration": self.ctx.deployment.metadata.generation,
            "replicas": 1, "updatedReplicas": 1,
            "readyReplicas": ready, "availableReplicas": ready,
            "unavailableReplicas": 1 - ready,
        }}));
        if let Err(error) = deployments
            .patch_status(&self.ctx.deployment_name, &PatchParams::default(), &patch)
            .await
        {
            warn!(deployment = %self.ctx.deployment_name, %error, "cannot write the deployment status");
        }
    }

    /// Keeps the sidecar process running beside mysqld (started once mysqld has an address,
    /// restarted when it exits or mysqld moved), and its peer links pointed at the peers.
    /// Returns whether anything changed that the Pod status shows.
    async fn supervise_sidecar(&mut self) -> bool {
        let (Some(config), Some(mysql)) = (self.ctx.sidecar.clone(), self.addr) else {
            return false;
        };
        let healthy = self
            .sidecar
            .running
            .as_mut()
            .is_some_and(|running| running.is_running() && running.mysql == mysql);
        let due = self.sidecar.projected_at.is_none_or(|at| at.elapsed() >= SECRET_RESYNC);
        if healthy {
            if due {
                // Keeps the files current; a running container keeps what it has when the
                // Secret cannot be read now.
                self.sidecar.projected_at = Some(tokio::time::Instant::now());
                if let Err(message) = self.project_secrets().await {
                    warn!(pod = %self.ctx.pod_name, %message, "cannot refresh the sidecar's Secret volumes");
                }
            }
            if let Some(running) = self.sidecar.running.as_ref() {
                running.refresh(&self.ctx.resolver);
            }
            return false;
        }
        if let Some(running) = self.sidecar.running.take() {
            warn!(pod = %self.ctx.pod_name, "the sidecar exited; restarting it");
            running.kill().await;
        }
        // As a kubelet: the container does not start without its volumes.
        if !due {
            return false;
        }
        self.sidecar.projected_at = Some(tokio::time::Instant::now());
        let projected = match self.project_secrets().await {
            Ok(projected) => projected,
            Err(message) => {
                warn!(pod = %self.ctx.pod_name, %message, "the sidecar's Secret volume cannot be mounted; not starting it");
                return false;
            }
        };
        let log =
            self.data_dir.clone().unwrap_or_else(|| self.ctx.root.clone()).join("sidecar.log");
        match sidecar::start(
            &config,
            &self.ctx.deployment,
            &self.ctx.namespace,
            &self.ctx.deployment_name,
            mysql,
            &self.ctx.resolver,
            &log,
            self.data_dir.as_deref(),
            &projected,
        ) {
            Ok(running) => {
                self.sidecar.running = Some(running);
                self.sidecar.starts += 1;
            }
            Err(error) => warn!(pod = %self.ctx.pod_name, %error, "cannot start the sidecar"),
        }
        true
    }

    /// Projects the sidecar container's Secret volumes into `<claim folder>/secrets/`.
    async fn project_secrets(&self) -> Result<Vec<crate::secrets::Projected>, String> {
        let Some(pod) = self.ctx.deployment.spec.template.spec.as_ref() else {
            return Ok(Vec::new());
        };
        let Some(container) = pod.containers.iter().find(|c| c.name == containers::SIDECAR) else {
            return Ok(Vec::new());
        };
        let base = self.data_dir.clone().unwrap_or_else(|| self.ctx.root.clone()).join("secrets");
        crate::secrets::project(&self.ctx.client, &self.ctx.namespace, pod, container, &base).await
    }

    async fn stop_sidecar(&mut self) {
        if let Some(running) = self.sidecar.running.take() {
            running.kill().await;
        }
    }

    async fn waiting(&mut self, reason: &str, message: String) {
        self.report(MysqlState::Waiting { reason: reason.to_owned(), message }).await;
    }

    /// Creates the Pod object (adopting one left by an earlier kubelet).
    async fn create_pod(&mut self) {
        let pod = pod_object(&self.ctx.deployment, &self.ctx.pod_name);
        match self.pods.create(&PostParams::default(), &pod).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_already_exists() => {}
            Err(error) => warn!(pod = %self.ctx.pod_name, %error, "cannot create the pod"),
        }
        self.waiting("ContainerCreating", String::new()).await;
    }

    /// The ConfigMap and the claim named by the pod's volumes, waiting while either is missing.
    async fn prepare(
        &mut self,
        stop: &mut watch::Receiver<Option<Stop>>,
    ) -> Outcome<(InstanceSpec, PathBuf)> {
        loop {
            match self.try_prepare().await {
                Ok(found) => return Outcome::Done(found),
                Err((reason, message)) => self.waiting(reason, message).await,
            }
            if let Some(stopped) = wait_or_stop(stop, RETRY).await {
                return Outcome::Stopped(stopped);
            }
        }
    }

    async fn try_prepare(&mut self) -> Result<(InstanceSpec, PathBuf), (&'static str, String)> {
        let spec = self.ctx.deployment.spec.template.spec.clone().unwrap_or_default();
        let volumes = spec.volumes.unwrap_or_default();
        let configmap = volumes
            .iter()
            .find_map(|volume| volume.config_map.as_ref().map(|source| source.name.clone()))
            .ok_or(("CreateContainerConfigError", "the pod has no ConfigMap volume".to_owned()))?;
        let claim = volumes
            .iter()
            .find_map(|volume| volume.persistent_volume_claim.as_ref())
            .map(|source| source.claim_name.clone())
            .ok_or(("CreateContainerConfigError", "the pod has no claim volume".to_owned()))?;
        let client = self.ctx.client.clone();
        let namespace = self.ctx.namespace.as_str();
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let text = configmaps
            .get_opt(&configmap)
            .await
            .map_err(|error| ("CreateContainerConfigError", error.to_string()))?
            .and_then(|found| found.data.and_then(|mut data| data.remove(MY_CNF_KEY)))
            .ok_or_else(|| {
                (
                    "CreateContainerConfigError",
                    format!("configmap {configmap:?} or its key {MY_CNF_KEY:?} not found"),
                )
            })?;
        let options = server_options(&configmap, &text)
            .map_err(|error| ("CreateContainerConfigError", error.to_string()))?;
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(client, namespace);
        let found = claims
            .get_opt(&claim)
            .await
            .map_err(|error| ("ContainerCreating", error.to_string()))?
            .ok_or_else(|| {
                ("ContainerCreating", format!("persistentvolumeclaim {claim:?} not found"))
            })?;
        let uid = found.metadata.uid.clone().unwrap_or_default();
        let folder = claim_folder(&self.ctx.root, namespace, &claim, &uid);
        let bound =
            found.status.as_ref().and_then(|status| status.phase.as_deref()) == Some("Bound");
        if !bound {
            let patch = Patch::Merge(json!({ "status": {
                "phase": "Bound", "accessModes": ["ReadWriteOnce"],
                "capacity": found.spec.as_ref().and_then(|spec| spec.resources.as_ref())
                    .and_then(|resources| resources.requests.as_ref()),
            }}));
            if let Err(error) = claims.patch_status(&claim, &PatchParams::default(), &patch).await {
                warn!(%claim, %error, "cannot mark the claim Bound");
            }
        }
        let instance = InstanceSpec {
            name: self.ctx.pod_name.clone(),
            server_id: options.server_id,
            port: None,
            dir: Some(folder.clone()),
            keep_on_drop: true,
            extra_options: options.extra,
        };
        Ok((instance, folder))
    }

    /// Starts the process and waits until it answers; a start that fails counts as a restart.
    async fn start(
        &mut self,
        instance: &mut Instance,
        stop: &mut watch::Receiver<Option<Stop>>,
    ) -> Outcome<()> {
        loop {
            let started_at = now();
            let result = match instance.start() {
                Ok(()) => {
                    self.addr = Some(instance.addr());
                    self.report(MysqlState::Running {
                        started_at,
                        pid: instance.pid(),
                        ready: false,
                    })
                    .await;
                    tokio::select! {
                        result = instance.wait_ready(self.ctx.ready_timeout) => result,
                        stopped = wait_stop(stop) => return Outcome::Stopped(stopped),
                    }
                }
                Err(error) => Err(error),
            };
            match result {
                Ok(()) => {
                    info!(pod = %self.ctx.pod_name, pid = ?instance.pid(), addr = ?self.addr, "mysqld ready");
                    self.report(MysqlState::Running {
                        started_at,
                        pid: instance.pid(),
                        ready: true,
                    })
                    .await;
                    return Outcome::Done(());
                }
                Err(error) => {
                    warn!(pod = %self.ctx.pod_name, %error, "mysqld did not become ready");
                    let _ = instance.kill().await;
                    // Another process took the automatically chosen port between choosing and
                    // binding: restarting on it would fail forever.
                    match instance.replace_port_if_taken(&error) {
                        Ok(true) => self.addr = Some(instance.addr()),
                        Ok(false) => {}
                        Err(error) => {
                            warn!(pod = %self.ctx.pod_name, %error, "cannot choose another port")
                        }
                    }
                    self.report.restart_count += 1;
                    self.report.last_terminated = Some((now(), "Error".to_owned()));
                    self.waiting("CrashLoopBackOff", error.to_string()).await;
                    if let Some(stopped) = wait_or_stop(stop, RETRY).await {
                        return Outcome::Stopped(stopped);
                    }
                }
            }
        }
    }

    async fn run(mut self, mut stop: watch::Receiver<Option<Stop>>) {
        self.create_pod().await;
        let outcome = match self.prepare(&mut stop).await {
            Outcome::Stopped(stopped) => Outcome::Stopped(stopped),
            Outcome::Done((spec, folder)) => {
                self.data_dir = Some(folder);
                self.run_instance(spec, &mut stop).await
            }
        };
        let stopped = match outcome {
            Outcome::Stopped(stopped) | Outcome::Done(stopped) => stopped,
        };
        if stopped == Stop::Delete {
            match self.pods.delete(&self.ctx.pod_name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.is_not_found() => {}
                Err(error) => warn!(pod = %self.ctx.pod_name, %error, "cannot delete the pod"),
            }
        }
        self.ctx.shared.remove_pod(&self.key(), &self.ctx.pod_name);
    }

    async fn run_instance(
        &mut self,
        spec: InstanceSpec,
        stop: &mut watch::Receiver<Option<Stop>>,
    ) -> Outcome<Stop> {
        let mut instance = loop {
            match Instance::create(&self.ctx.dist, &self.ctx.template, spec.clone()).await {
                Ok(instance) => break instance,
                Err(error) => {
                    self.waiting("CreateContainerError", error.to_string()).await;
                    if let Some(stopped) = wait_or_stop(stop, RETRY).await {
                        return Outcome::Stopped(stopped);
                    }
                }
            }
        };
        let stopped = loop {
            if let Outcome::Stopped(stopped) = self.start(&mut instance, stop).await {
                break stopped;
            }
            // Running: watch the process until it dies or the pod is stopped, and probe its
            // readiness as the template's readiness probe says.
            let probe = Probe::of(&self.ctx.deployment);
            let mut next_probe = tokio::time::Instant::now() + probe.period;
            let mut failures = 0_u32;
            let stopped = loop {
                if let Some(stopped) = wait_or_stop(stop, LIVENESS_POLL).await {
                    break Some(stopped);
                }
                if !instance.is_running() {
                    break None;
                }
                if self.supervise_sidecar().await
                    && let MysqlState::Running { .. } = self.report.mysql
                {
                    let mysql = self.report.mysql.clone();
                    self.report(mysql).await;
                }
                if tokio::time::Instant::now() < next_probe {
                    continue;
                }
                let answered = instance.wait_ready(probe.timeout).await.is_ok();
                next_probe = tokio::time::Instant::now() + probe.period;
                failures = if answered { 0 } else { failures + 1 };
                let ready = self.report.ready();
                let MysqlState::Running { started_at, pid, .. } = self.report.mysql.clone() else {
                    continue;
                };
                if answered != ready && (answered || failures >= probe.failure_threshold) {
                    info!(pod = %self.ctx.pod_name, ready = answered, "readiness changed");
                    self.report(MysqlState::Running { started_at, pid, ready: answered }).await;
                }
            };
            if let Some(stopped) = stopped {
                break stopped;
            }
            warn!(pod = %self.ctx.pod_name, "mysqld exited; restarting it");
            self.report.restart_count += 1;
            self.report.last_terminated = Some((now(), "Error".to_owned()));
            self.waiting("ContainerRestarting", "mysqld exited".to_owned()).await;
        };
        self.stop_sidecar().await;
        match stopped {
            Stop::Delete => {
                let grace = self
                    .ctx
                    .deployment
                    .spec
                    .template
                    .spec
                    .as_ref()
                    .and_then(|spec| spec.termination_grace_period_seconds)
                    .and_then(|seconds| u64::try_from(seconds).ok())
                    .unwrap_or(30);
                if let Err(error) = instance.stop(Duration::from_secs(grace)).await {
                    warn!(pod = %self.ctx.pod_name, %error, "cannot stop mysqld");
                }
            }
            Stop::Shutdown => {
                let _ = instance.kill().await;
            }
        }
        Outcome::Done(stopped)
    }
}

/// The `mysql` container's readiness probe, with Kubernetes' defaults.
struct Probe {
    period: Duration,
    timeout: Duration,
    failure_threshold: u32,
}

impl Probe {
    fn of(deployment: &Deployment) -> Self {
        let probe = deployment
            .spec
            .template
            .spec
            .as_ref()
            .and_then(|spec| spec.containers.iter().find(|c| c.name == containers::MYSQL))
            .and_then(|container| container.readiness_probe.clone())
            .unwrap_or_default();
        let seconds = |value: Option<i32>, default: u64| {
            value
                .and_then(|value| u64::try_from(value).ok())
                .filter(|value| *value > 0)
                .unwrap_or(default)
        };
        Self {
            period: Duration::from_secs(seconds(probe.period_seconds, 10)),
            timeout: Duration::from_secs(seconds(probe.timeout_seconds, 1)),
            failure_threshold: u32::try_from(seconds(probe.failure_threshold, 3)).unwrap_or(3),
        }
    }
}

/// Waits `period`; `Some` when the pod is told to stop first.
async fn wait_or_stop(stop: &mut watch::Receiver<Option<Stop>>, period: Duration) -> Option<Stop> {
    if let Some(stopped) = *stop.borrow() {
        return Some(stopped);
    }
    tokio::select! {
        stopped = wait_stop(stop) => Some(stopped),
        () = tokio::time::sleep(period) => None,
    }
}

/// Resolves when the pod is told to stop (a dropped sender means the kubelet is gone).
async fn wait_stop(stop: &mut watch::Receiver<Option<Stop>>) -> Stop {
    match stop.wait_for(Option::is_some).await {
        Ok(value) => (*value).unwrap_or(Stop::Shutdown),
        Err(_) => Stop::Shutdown,
    }
}

/// Runs one pod until it is stopped.
pub(crate) async fn run(ctx: WorkerContext, stop: watch::Receiver<Option<Stop>>) {
    let pods = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let images: BTreeMap<String, String> = ctx
        .deployment
        .spec
        .template
        .spec
        .as_ref()
        .map(|spec| {
            spec.containers
                .iter()
                .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    let created_at = now();
    let report = PodReport {
        created_at,
        mysql: MysqlState::Waiting {
            reason: "ContainerCreating".to_owned(),
            message: String::new(),
        },
        restart_count: 0,
        last_terminated: None,
        ready_since: created_at,
        images,
        sidecar: None,
    };
    let worker =
        Worker { ctx, pods, report, data_dir: None, addr: None, sidecar: SidecarSlot::default() };
    worker.run(stop).await;
}
