//! `batch/v1` Jobs: the lab kubelet runs a Job's pod template's init containers (in order, each
//! to completion) and then its first container as local processes, one attempt (one Pod
//! `<job>-<5 chars>`) at a time, and writes the Job's and the
//! Pod's status in the shape Kubernetes does, so the operator's production code reads it.
//!
//! | Kubernetes | lab |
//! | --- | --- |
//! | the container's `command[0]` (else the image's last path segment without tag) | the executable [`JobConfig::executables`] maps that file name to; none → the attempt fails with `StartError` |
//! | `env` `value` / `valueFrom` `secretKeyRef`, `configMapKeyRef`, `fieldRef` (`metadata.name`/`namespace`, `spec.nodeName`, `status.podIP`) | the same values; a missing non-optional Secret/ConfigMap/key keeps the Pod `Pending` with `CreateContainerConfigError` (re-read every second) |
//! | a cluster Service name: `<X>_HOST=<svc>.<ns>.svc[.cluster.local]` with `<X>_PORT=<port>`, or a value `<svc>.<ns>.svc[.cluster.local]:<port>` | the Service port's proxy link (`service/<ns>/<svc>:<port>`, as [`crate::LabResolver`] makes it; a Service with no endpoint yet gets a link that refuses until the kubelet re-points it) |
//! | volumes: `secret`, `configMap` (files, `defaultMode`), `emptyDir`, `persistentVolumeClaim` | folders: `<JobConfig::root>/<ns>/<pod>/volumes/<volume>`; a claim is the same folder a site pod gets ([`crate::claims`]), the claim marked `Bound` |
//! | `volumeMounts` | every env value and argument equal to a mount path is rewritten to the local folder (values below a mount are kept: they may be identities, such as a backup's recorded location); `BLOODRAVEN_MOUNTINFO_FILE` names the container's own mount table listing each of its mounts by resolved path (what `bloodraven-store`'s PVC check reads; it compares canonical paths) |
//! | `initContainers` | run in order, each to completion, before the main container, each with its own command, environment and mounts (the pod's volumes, emptyDirs included, are one folder per volume shared by all); a non-zero exit fails the attempt (`restartPolicy: Never` semantics: the later containers never start); the Pod is `Pending` with `Initialized` False and the main container `waiting: PodInitializing` meanwhile; `status.initContainerStatuses[]` as a kubelet writes them |
//! | `terminationMessagePath` (default `/dev/termination-log`) | a file per container (`<pod folder>/termination-log`, `<pod folder>/init/<name>/termination-log`), created empty; an env value or argument equal to the path is rewritten to it; once the container ended its last 4096 bytes are `state.terminated.message` |
//! | `readOnly` mounts (or a claim volume's `readOnly`) | listed `ro` in the container's mount table; the folder itself is not made read-only (another container or a site may share it) |
//! | container log | stdout and stderr appended to `<JobConfig::root>/<ns>/<pod>/container.log` for the main container ([`crate::Kubelet::job_log`], what `pods/log` serves: the lab API server ignores `?container=`), `<pod folder>/init/<name>/container.log` for an init container ([`crate::Kubelet::job_container_log`]) |
//! | `restartPolicy` `Never`/`OnFailure` | both: a failed attempt is a new Pod; `backoffLimit` (default 6) failed attempts + 1 → `Failed`/`BackoffLimitExceeded`; retried after [`JobConfig::retry_delay`] (Kubernetes: 10 s doubling) |
//! | `activeDeadlineSeconds` | from `status.startTime`: the running process is SIGKILLed, `Failed`/`DeadlineExceeded` |
//! | `terminationMessagePolicy: FallbackToLogsOnError` | a failed container whose termination-message file is empty gets its log's last 80 lines / 2048 bytes as `terminated.message` |
//! | `suspend: true` | not started |
//! | Job deleted | its process SIGKILLed; its Pods are left to the API server's garbage collector |
//! | kubelet restarts | a Job with a terminal condition is left alone; any other is run again from its recorded `failed`/`succeeded` counts (the earlier kubelet's process died with it) |
//! | `completions`/`parallelism`, `ttlSecondsAfterFinished`, pod failure policy, sidecar (restartable) init containers | not supported: one completion, one main container |

pub mod plan;
pub mod status;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::Store;
use serde_json::json;
use tokio::process::Command;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tracing::{info, warn};

use self::plan::{Inputs, Place, PlanError};
use self::status::{Container, Counts, End, Named};
use crate::LabResolver;

/// How the lab runs Jobs.
#[derive(Debug, Clone)]
pub struct JobConfig {
    /// Where attempts keep their volumes and logs (`<root>/<ns>/<pod>/`). Not inside
    /// [`crate::KubeletConfig::root`] (the kubelet removes unknown folders there).
    pub root: PathBuf,
    /// A container's program name (`command[0]`'s file name) → the local executable.
    pub executables: BTreeMap<String, PathBuf>,
    /// Environment every Job process starts with, before the container's own (tool paths
    /// such as `BLOODRAVEN_MYSQLDUMP`); `PATH` is the kubelet's own unless set here.
    pub env: BTreeMap<String, String>,
    /// `RUST_LOG` for the processes.
    pub log_filter: String,
    /// The wait between a failed attempt and the next.
    pub retry_delay: Duration,
}

impl JobConfig {
    /// No executables, the kubelet's `PATH`, log filter `info`, 1 s between attempts.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let mut env = BTreeMap::new();
        if let Some(path) = std::env::var_os("PATH") {
            env.insert("PATH".to_owned(), path.to_string_lossy().into_owned());
        }
        Self {
            root: root.into(),
            executables: BTreeMap::new(),
            env,
            log_filter: "info".to_owned(),
            retry_delay: Duration::from_secs(1),
        }
    }

    /// Maps program `name` to the executable at `path`.
    pub fn executable(mut self, name: &str, path: impl Into<PathBuf>) -> Self {
        self.executables.insert(name.to_owned(), path.into());
        self
    }

    /// Adds `name=value` to every Job process's environment.
    pub fn env(mut self, name: &str, value: impl Into<String>) -> Self {
        self.env.insert(name.to_owned(), value.into());
        self
    }
}

/// One Job attempt the kubelet runs or ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobPod {
    /// The Job's name.
    pub job: String,
    /// The attempt's Pod.
    pub pod: String,
    /// The process while it runs.
    pub pid: Option<u32>,
    /// Its exit code once it ended (`None` while running or when killed by a signal): the
    /// main container's, or the failed init container's.
    pub exit_code: Option<i32>,
    /// The main container's log.
    pub log: PathBuf,
    /// Every container's log by container name (init containers and the main one).
    pub logs: BTreeMap<String, PathBuf>,
}

/// Attempts by `(namespace, pod)`.
#[derive(Debug, Default)]
pub(crate) struct JobTable {
    pods: Mutex<BTreeMap<(String, String), JobPod>>,
}

impl JobTable {
    pub(crate) fn lock(&self) -> MutexGuard<'_, BTreeMap<(String, String), JobPod>> {
        self.pods.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The loop over every Job the kubelet sees.
pub(crate) struct JobRunner {
    pub(crate) client: kube::Client,
    pub(crate) config: JobConfig,
    pub(crate) claims_root: PathBuf,
    pub(crate) resolver: LabResolver,
    pub(crate) jobs: Store<Job>,
    pub(crate) table: Arc<JobTable>,
    pub(crate) resync: Duration,
}

impl JobRunner {
    pub(crate) async fn run(self, notify: Arc<Notify>, mut shutdown: watch::Receiver<bool>) {
        let mut running: BTreeMap<String, watch::Sender<bool>> = BTreeMap::new();
        let mut done: BTreeSet<String> = BTreeSet::new();
        let mut tasks: JoinSet<String> = JoinSet::new();
        loop {
            tokio::select! {
                _ = shutdown.wait_for(|stop| *stop) => break,
                () = notify.notified() => {}
                () = tokio::time::sleep(self.resync) => {}
                Some(ended) = tasks.join_next(), if !tasks.is_empty() => {
                    if let Ok(uid) = ended {
                        running.remove(&uid);
                        done.insert(uid);
                    }
                }
            }
            self.sync(&mut running, &done, &mut tasks);
        }
        for stop in running.values() {
            stop.send_replace(true);
        }
        while tasks.join_next().await.is_some() {}
    }

    fn sync(
        &self,
        running: &mut BTreeMap<String, watch::Sender<bool>>,
        done: &BTreeSet<String>,
        tasks: &mut JoinSet<String>,
    ) {
        let jobs = self.jobs.state();
        let live: BTreeSet<String> = jobs
            .iter()
            .filter(|job| job.metadata.deletion_timestamp.is_none())
            .filter_map(|job| job.metadata.uid.clone())
            .collect();
        for (uid, stop) in running.iter() {
            if !live.contains(uid) {
                stop.send_replace(true);
            }
        }
        for job in jobs {
            let Some(uid) = job.metadata.uid.clone() else { continue };
            let suspended = job.spec.as_ref().and_then(|spec| spec.suspend) == Some(true);
            if !live.contains(&uid)
                || running.contains_key(&uid)
                || done.contains(&uid)
                || suspended
                || status::is_finished(&job)
            {
                continue;
            }
            let (Some(namespace), Some(name)) =
                (job.metadata.namespace.clone(), job.metadata.name.clone())
            else {
                continue;
            };
            info!(%namespace, job = %name, "starting job");
            let (stop, stop_rx) = watch::channel(false);
            let worker = Worker {
                client: self.client.clone(),
                config: self.config.clone(),
                claims_root: self.claims_root.clone(),
                resolver: self.resolver.clone(),
                table: self.table.clone(),
                job: (*job).clone(),
                namespace,
                name,
            };
            let ended = uid.clone();
            tasks.spawn(async move {
                worker.run(stop_rx).await;
                ended
            });
            running.insert(uid, stop);
        }
    }
}

/// How one attempt ended.
enum Attempt {
    Succeeded,
    Failed,
    Deadline,
    Stopped,
}

struct Worker {
    client: kube::Client,
    config: JobConfig,
    claims_root: PathBuf,
    resolver: LabResolver,
    table: Arc<JobTable>,
    job: Job,
    namespace: String,
    name: String,
}

fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

/// A Service port's lab address: its resolver link, or a link that refuses until the kubelet
/// re-points it at an endpoint.
fn service_address(
    resolver: &LabResolver,
    namespace: &str,
    service: &str,
    port: u16,
) -> SocketAddr {
    use bloodraven_workloads::Resolver as _;
    if let Some(address) = resolver.resolve(namespace, service, port)
        && let Ok(ip) = address.host.parse()
    {
        return SocketAddr::new(ip, address.port);
    }
    let name = crate::link_name(namespace, service, port);
    let nowhere = SocketAddr::from(([127, 0, 0, 1], 1));
    resolver
        .hub
        .get(&name)
        .or_else(|| resolver.hub.link(name.clone(), nowhere).ok())
        .map_or(nowhere, |link| link.addr())
}

impl Worker {
    fn spec(&self) -> k8s_openapi::api::batch::v1::JobSpec {
        self.job.spec.clone().unwrap_or_default()
    }

    async fn write_job(
        &self,
        counts: Counts,
        start: jiff::Timestamp,
        end: Option<(&End, jiff::Timestamp)>,
    ) {
        let jobs: Api<Job> = Api::namespaced(self.client.clone(), &self.namespace);
        let patch = Patch::Merge(json!({ "status": status::job_status(counts, start, end) }));
        if let Err(error) = jobs.patch_status(&self.name, &PatchParams::default(), &patch).await {
            warn!(job = %self.name, %error, "cannot write the job status");
        }
    }

    /// Writes the attempt's Pod status: `init` the init containers' states in order (empty:
    /// none), `main` the main container's.
    async fn write_pod(
        &self,
        pod: &str,
        init: &[Container],
        main: &Container,
        created: jiff::Timestamp,
    ) {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let template = self.spec().template;
        let first = plan::first_container(&template).cloned().unwrap_or_default();
        let specs = template.spec.as_ref().and_then(|spec| spec.init_containers.clone());
        let specs = specs.unwrap_or_default();
        let init: Vec<Named<'_>> = specs
            .iter()
            .zip(init)
            .map(|(spec, state)| Named {
                name: &spec.name,
                image: spec.image.as_deref().unwrap_or_default(),
                state,
            })
            .collect();
        let main = Named {
            name: &first.name,
            image: first.image.as_deref().unwrap_or_default(),
            state: main,
        };
        let body = status::pod_status(&init, &main, created);
        let patch = Patch::Merge(json!({ "status": body }));
        if let Err(error) = pods.patch_status(pod, &PatchParams::default(), &patch).await {
            warn!(%pod, %error, "cannot write the job pod's status");
        }
    }

    /// The remaining time before `activeDeadlineSeconds`, if the Job has one.
    fn deadline(&self, start: jiff::Timestamp) -> Option<tokio::time::Instant> {
        let seconds = self.spec().active_deadline_seconds?;
        let end = start.as_second().saturating_add(seconds);
        let left = end.saturating_sub(now().as_second()).max(0);
        Some(tokio::time::Instant::now() + Duration::from_secs(u64::try_from(left).unwrap_or(0)))
    }

    async fn run(self, mut stop: watch::Receiver<bool>) {
        let recorded = self.job.status.clone().unwrap_or_default();
        let start = recorded.start_time.map_or_else(now, |t| t.0);
        let mut counts = Counts {
            failed: recorded.failed.unwrap_or(0),
            succeeded: recorded.succeeded.unwrap_or(0),
            ..Counts::default()
        };
        let backoff_limit = self.spec().backoff_limit.unwrap_or(6);
        let deadline = self.deadline(start);
        let uid = self.job.metadata.uid.clone().unwrap_or_default();
        self.write_job(counts, start, None).await;
        loop {
            let seed = format!("{uid}/{}/{}", counts.failed + counts.succeeded, now());
            let pod = status::pod_name(&self.name, &seed);
            let outcome = self.attempt(&pod, &mut counts, start, deadline, &mut stop).await;
            counts.active = 0;
            counts.ready = 0;
            let end = match outcome {
                Attempt::Stopped => return,
                Attempt::Succeeded => {
                    counts.succeeded += 1;
                    End::Complete
                }
                Attempt::Deadline => {
                    counts.failed += 1;
                    End::Failed {
                        reason: "DeadlineExceeded".to_owned(),
                        message: "Job was active longer than specified deadline".to_owned(),
                    }
                }
                Attempt::Failed => {
                    counts.failed += 1;
                    if counts.failed <= backoff_limit {
                        self.write_job(counts, start, None).await;
                        info!(job = %self.name, failed = counts.failed, "job attempt failed; retrying");
                        if wait(&mut stop, self.config.retry_delay, deadline).await {
                            return;
                        }
                        if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                            let end = End::Failed {
                                reason: "DeadlineExceeded".to_owned(),
                                message: "Job was active longer than specified deadline".to_owned(),
                            };
                            self.write_job(counts, start, Some((&end, now()))).await;
                            return;
                        }
                        continue;
                    }
                    End::Failed {
                        reason: "BackoffLimitExceeded".to_owned(),
                        message: "Job has reached the specified backoff limit".to_owned(),
                    }
                }
            };
            info!(job = %self.name, ?end, "job finished");
            self.write_job(counts, start, Some((&end, now()))).await;
            return;
        }
    }

    /// Reads what the template names.
    async fn inputs(&self) -> Result<Inputs, PlanError> {
        let (secrets, config_maps, claims) = plan::references(&self.spec().template);
        let mut inputs = Inputs::default();
        let secret_api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        for name in secrets {
            if let Ok(Some(secret)) = secret_api.get_opt(&name).await {
                let mut data: BTreeMap<String, Vec<u8>> = secret
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(key, value)| (key, value.0))
                    .collect();
                for (key, value) in secret.string_data.unwrap_or_default() {
                    data.entry(key).or_insert_with(|| value.into_bytes());
                }
                inputs.secrets.insert(name, data);
            }
        }
        let config_api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        for name in config_maps {
            if let Ok(Some(found)) = config_api.get_opt(&name).await {
                inputs.config_maps.insert(name, found.data.unwrap_or_default());
            }
        }
        let claim_api: Api<PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), &self.namespace);
        for name in claims {
            let Ok(Some(found)) = claim_api.get_opt(&name).await else { continue };
            let bound =
                found.status.as_ref().and_then(|status| status.phase.as_deref()) == Some("Bound");
            if !bound {
                let patch = Patch::Merge(json!({ "status": { "phase": "Bound" } }));
                if let Err(error) =
                    claim_api.patch_status(&name, &PatchParams::default(), &patch).await
                {
                    warn!(claim = %name, %error, "cannot mark the claim Bound");
                }
            }
            inputs.claims.insert(name, found.metadata.uid.unwrap_or_default());
        }
        Ok(inputs)
    }

    /// Creates the attempt's Pod, prepares it, runs its init containers in order (each to
    /// completion; a failed one fails the attempt and the later ones never start), then its
    /// main container.
    async fn attempt(
        &self,
        pod: &str,
        counts: &mut Counts,
        start: jiff::Timestamp,
        deadline: Option<tokio::time::Instant>,
        stop: &mut watch::Receiver<bool>,
    ) -> Attempt {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let created = now();
        if let Err(error) =
            pods.create(&PostParams::default(), &status::pod_object(&self.job, pod)).await
        {
            warn!(%pod, %error, "cannot create the job pod");
        }
        counts.active = 1;
        self.write_job(*counts, start, None).await;
        let scratch = self.config.root.join(&self.namespace).join(pod);
        let template = self.spec().template;
        let init_count = template
            .spec
            .as_ref()
            .and_then(|spec| spec.init_containers.as_ref())
            .map_or(0, Vec::len);
        let mut states = States {
            init: vec![Container::initializing(); init_count],
            main: if init_count == 0 {
                Container::Waiting {
                    reason: "ContainerCreating".to_owned(),
                    message: String::new(),
                }
            } else {
                Container::initializing()
            },
        };
        let fail = |message: String, reason: &str| Container::Terminated {
            pid: None,
            exit_code: 128,
            reason: reason.to_owned(),
            message,
            started_at: now(),
            finished_at: now(),
        };
        let planned = loop {
            let place = Place {
                namespace: &self.namespace,
                pod,
                scratch: &scratch,
                claims_root: &self.claims_root,
            };
            let resolver = self.resolver.clone();
            let resolve =
                move |ns: &str, svc: &str, port: u16| service_address(&resolver, ns, svc, port);
            let result = match self.inputs().await {
                Ok(inputs) => plan::plan(&template, &inputs, &self.config, &place, &resolve),
                Err(error) => Err(error),
            };
            match result {
                Ok(planned) => break planned,
                Err(PlanError::Config(message)) => {
                    *states.first() = Container::Waiting {
                        reason: "CreateContainerConfigError".to_owned(),
                        message,
                    };
                    self.write_pod(pod, &states.init, &states.main, created).await;
                    if wait(stop, Duration::from_secs(1), deadline).await {
                        return Attempt::Stopped;
                    }
                    if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                        return Attempt::Deadline;
                    }
                }
                Err(error) => {
                    warn!(%pod, %error, "cannot start the job's containers");
                    *states.first() = fail(error.to_string(), "StartError");
                    self.write_pod(pod, &states.init, &states.main, created).await;
                    return Attempt::Failed;
                }
            }
        };
        if let Err(error) = prepare(&planned) {
            let message = format!(
                "cannot prepare the pod's volumes and files in {}: {error}",
                scratch.display()
            );
            warn!(%pod, %message, "cannot start the job's containers");
            *states.first() = fail(message, "StartError");
            self.write_pod(pod, &states.init, &states.main, created).await;
            return Attempt::Failed;
        }
        let key = (self.namespace.clone(), pod.to_owned());
        let logs = planned
            .init
            .iter()
            .chain([&planned.main])
            .map(|step| (step.name.clone(), step.log.clone()))
            .collect();
        self.table.lock().insert(
            key.clone(),
            JobPod {
                job: self.name.clone(),
                pod: pod.to_owned(),
                pid: None,
                exit_code: None,
                log: planned.main.log.clone(),
                logs,
            },
        );
        let mut run = Run { pod, key: &key, created, deadline, counts, start, states: &mut states };
        for (index, step) in planned.init.iter().enumerate() {
            let outcome = self.run_step(&mut run, step, Some(index), stop).await;
            if !matches!(outcome, Attempt::Succeeded) {
                return outcome;
            }
        }
        self.run_step(&mut run, &planned.main, None, stop).await
    }

    /// Runs one container of the attempt to its end and records it in the Pod's status:
    /// `slot` is the init container's index, `None` the main container.
    async fn run_step(
        &self,
        run: &mut Run<'_>,
        step: &plan::Step,
        slot: Option<usize>,
        stop: &mut watch::Receiver<bool>,
    ) -> Attempt {
        let pod = run.pod;
        let mut child = match spawn(step, &self.config.root.join(&self.namespace).join(pod)) {
            Ok(child) => child,
            Err(error) => {
                let message = format!("cannot start {}: {error}", step.program.display());
                warn!(%pod, container = %step.name, %message, "cannot start the job's container");
                *run.states.slot(slot) = Container::Terminated {
                    pid: None,
                    exit_code: 128,
                    reason: "StartError".to_owned(),
                    message,
                    started_at: now(),
                    finished_at: now(),
                };
                self.write_pod(pod, &run.states.init, &run.states.main, run.created).await;
                self.record_end(run.key, 128);
                return Attempt::Failed;
            }
        };
        let pid = child.id();
        let started_at = now();
        info!(job = %self.name, %pod, container = %step.name, ?pid, "job container started");
        if let Some(entry) = self.table.lock().get_mut(run.key) {
            entry.pid = pid;
        }
        *run.states.slot(slot) = Container::Running { pid, started_at };
        self.write_pod(pod, &run.states.init, &run.states.main, run.created).await;
        if slot.is_none() {
            run.counts.ready = 1;
            self.write_job(*run.counts, run.start, None).await;
        }
        let sleep_deadline = async {
            match run.deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let (exit, outcome) = tokio::select! {
            status = child.wait() => {
                let code = status.ok().and_then(|s| {
                    use std::os::unix::process::ExitStatusExt as _;
                    s.code().or_else(|| s.signal().map(|signal| 128 + signal))
                });
                let code = code.unwrap_or(128);
                (code, if code == 0 { Attempt::Succeeded } else { Attempt::Failed })
            }
            () = async { drop(stop.wait_for(|stopped| *stopped).await) } => {
                let _ = child.kill().await;
                (137, Attempt::Stopped)
            }
            () = sleep_deadline => {
                let _ = child.kill().await;
                (137, Attempt::Deadline)
            }
        };
        if let Some(entry) = self.table.lock().get_mut(run.key) {
            entry.pid = None;
        }
        if slot.is_none() || !matches!(outcome, Attempt::Succeeded) {
            self.record_end(run.key, exit);
        }
        if matches!(outcome, Attempt::Stopped) {
            return outcome;
        }
        let reason = match outcome {
            Attempt::Succeeded => "Completed",
            Attempt::Deadline => "DeadlineExceeded",
            _ => "Error",
        };
        let message = status::termination_message(
            &read_lossy(&step.termination_file),
            exit,
            step.fallback_to_logs,
            &read_lossy(&step.log),
        );
        info!(job = %self.name, %pod, container = %step.name, exit, "job container ended");
        *run.states.slot(slot) = Container::Terminated {
            pid,
            exit_code: exit,
            reason: reason.to_owned(),
            message,
            started_at,
            finished_at: now(),
        };
        self.write_pod(pod, &run.states.init, &run.states.main, run.created).await;
        outcome
    }

    /// Records how the attempt's process ended in the kubelet's table.
    fn record_end(&self, key: &(String, String), exit: i32) {
        if let Some(entry) = self.table.lock().get_mut(key) {
            entry.pid = None;
            entry.exit_code = Some(exit);
        }
    }
}

/// The states of an attempt's containers.
struct States {
    init: Vec<Container>,
    main: Container,
}

impl States {
    /// The init container `slot`, or the main container (`None`).
    fn slot(&mut self, slot: Option<usize>) -> &mut Container {
        match slot.and_then(|index| self.init.get_mut(index)) {
            Some(init) => init,
            None => &mut self.main,
        }
    }

    /// The container that starts first (the first init container, else the main one).
    fn first(&mut self) -> &mut Container {
        self.slot(Some(0))
    }
}

/// One attempt in progress, as its steps share it.
struct Run<'a> {
    pod: &'a str,
    key: &'a (String, String),
    created: jiff::Timestamp,
    deadline: Option<tokio::time::Instant>,
    counts: &'a mut Counts,
    start: jiff::Timestamp,
    states: &'a mut States,
}

/// A file's text (lossy), empty when it cannot be read.
fn read_lossy(path: &Path) -> String {
    std::fs::read(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default()
}

/// Creates the plan's folders and files.
fn prepare(planned: &plan::Plan) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    for dir in &planned.dirs {
        std::fs::create_dir_all(dir)?;
    }
    for file in &planned.files {
        if let Some(parent) = file.path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // A retried attempt may find a read-only file of the previous one.
        let _ = std::fs::remove_file(&file.path);
        std::fs::write(&file.path, &file.contents)?;
        std::fs::set_permissions(&file.path, std::fs::Permissions::from_mode(file.mode))?;
    }
    // Each container's mount table, its folders resolved as the kernel lists them (a claim's
    // folder may be a symbolic link; the PVC store check compares resolved paths).
    for table in planned.init.iter().chain([&planned.main]).filter_map(|s| s.mount_table.as_ref()) {
        if let Some(parent) = table.path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let text =
            table.text(|local| std::fs::canonicalize(local).unwrap_or_else(|_| local.to_owned()));
        std::fs::write(&table.path, text)?;
    }
    Ok(())
}

/// Starts one container's process, its output appended to its log.
fn spawn(step: &plan::Step, scratch: &Path) -> std::io::Result<tokio::process::Child> {
    if let Some(parent) = step.log.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let out = std::fs::OpenOptions::new().create(true).append(true).open(&step.log)?;
    let err = out.try_clone()?;
    let mut command = Command::new(&step.program);
    command
        .args(&step.args)
        .env_clear()
        .envs(step.env.iter().map(|(k, v)| (k, v)))
        .current_dir(scratch)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .kill_on_drop(true);
    command.spawn()
}

/// Waits `period`, the deadline at most; `true` when told to stop first.
async fn wait(
    stop: &mut watch::Receiver<bool>,
    period: Duration,
    deadline: Option<tokio::time::Instant>,
) -> bool {
    if *stop.borrow() {
        return true;
    }
    let mut until = tokio::time::Instant::now() + period;
    if let Some(deadline) = deadline {
        until = until.min(deadline);
    }
    tokio::select! {
        _ = stop.wait_for(|stopped| *stopped) => true,
        () = tokio::time::sleep_until(until) => false,
    }
}
