//! The operator's world, shared by operator drills and `bloodraven lab --live`: the lab API
//! server (with the CRDs), the lab kubelet running a real `mysqld` per site Deployment behind
//! the fault proxy, a MysqlFailoverGroup with its credentials Secret, and operator replicas
//! started through an [`OperatorLauncher`] (the workspace's binary, or in-process in tests).
//!
//! Everything it starts ends when it is dropped: operators first, then the kubelet's mysqlds,
//! then the lab API server and the folder.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_kubelet::{Kubelet, KubeletConfig, LabResolver, dns_link_name, link_name};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_sites::accounts;
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::{Link, ProxyHub};
use bloodraven_sites::template::ensure_template_async;
use bloodraven_workloads::{Resolver, SiteNames, ports, primary_service_name};
use serde_json::{Value, json};

pub mod backups;

/// The CRDs the lab API server serves (generated into `deploy/crds/`).
/// And ExternalDNS's DNSEndpoint (`deploy/crds/external/`): the operator publishes the group's
/// `spec.dns.hostname` through it, and the lab kubelet's resolver follows it.
pub const CRDS: [(&str, &str); 4] = [
    (
        "mysqlfailovergroups.shipstream.io.yaml",
        include_str!("../../../deploy/crds/mysqlfailovergroups.shipstream.io.yaml"),
    ),
    (
        "mysqlbackups.shipstream.io.yaml",
        include_str!("../../../deploy/crds/mysqlbackups.shipstream.io.yaml"),
    ),
    (
        "mysqlbackupverifications.shipstream.io.yaml",
        include_str!("../../../deploy/crds/mysqlbackupverifications.shipstream.io.yaml"),
    ),
    (
        "dnsendpoints.externaldns.k8s.io.yaml",
        include_str!("../../../deploy/crds/external/dnsendpoints.externaldns.k8s.io.yaml"),
    ),
];

/// The Lease every operator replica of a live lab competes for (in the group's namespace).
pub const LEASE_NAME: &str = "bloodraven-operator";

/// How long an unrenewed Lease stays its holder's in the live lab (scaled down from 15 s).
pub const LEASE_DURATION: Duration = Duration::from_secs(3);

/// What went wrong starting or driving the live lab.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The MySQL world (distribution, template data directory, proxy).
    #[error(transparent)]
    Sites(#[from] bloodraven_sites::SitesError),
    /// The fault proxy could not start.
    #[error("fault proxy: {0}")]
    Proxy(#[from] bloodraven_sites::proxy::ProxyError),
    /// The lab API server refused or failed.
    #[error("lab API server: {0}")]
    Lab(#[from] bloodraven_lab::Error),
    /// The lab kubelet failed to start.
    #[error("lab kubelet: {0}")]
    Kubelet(#[from] bloodraven_kubelet::KubeletError),
    /// A Kubernetes client call failed.
    #[error("{what}: {source}")]
    Kube {
        /// What was asked.
        what: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// A file or process could not be made.
    #[error("{what}: {source}")]
    Io {
        /// What was done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Something the harness needs is missing or wrong (the message says what to do).
    #[error("{0}")]
    Other(String),
}

/// What an operator replica is started with.
#[derive(Clone)]
pub struct OperatorEnv {
    /// A client of the lab API server (full rights).
    pub client: kube::Client,
    /// A kubeconfig file for the lab API server (for a process).
    pub kubeconfig: PathBuf,
    /// The lab kubelet's Service resolver (what an in-process operator dials through).
    pub resolver: LabResolver,
    /// The namespace watched; the Lease lives there too.
    pub namespace: String,
    /// The replica's identity (Lease holder, Event `reportingInstance`).
    pub name: String,
    /// A folder for its log.
    pub log_dir: PathBuf,
    /// Where its HTTP server should listen, when the lab chose (the address the sidecars'
    /// operator links point at); `None`: any free port.
    pub http: Option<SocketAddr>,
}

/// Opt-in parts of a live lab; the default runs none, so the existing drills keep their speed.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions {
    /// Run this `bloodraven-sidecar` binary beside every mysqld (see
    /// `bloodraven_kubelet::SidecarConfig::locate`). The sidecars reach the first operator's
    /// HTTP server through their `->operator` links, and a PVC PITR archive lands in
    /// [`LiveLab::pvc_archive_dir`].
    pub sidecar: Option<PathBuf>,
    /// Run the cluster's batch Jobs (the operator's backup and restore Jobs) as processes of
    /// this `bloodraven-sidecar` binary, with the MySQL client tools `BLOODRAVEN_MYSQL` and
    /// `BLOODRAVEN_MYSQLDUMP` name (`source scripts/provision.sh`). Their logs are served as
    /// pod logs (the backup controller reads its Job's sentinel there). See [`backups`].
    pub jobs: Option<PathBuf>,
}

/// A running operator replica; dropping it kills it (SIGKILL, or its task aborted), leaving its
/// Lease unrenewed as a crashed pod does.
pub trait RunningOperator: Send + Sync {
    /// What runs, for reports (`pid 1234`, `in-process task`).
    fn describe(&self) -> String;
}

/// Starts operator replicas.
pub trait OperatorLauncher: Send + Sync {
    /// Starts one replica with leader election on [`LEASE_NAME`] in `env.namespace`.
    fn launch(&self, env: &OperatorEnv) -> Result<Box<dyn RunningOperator>, LiveError>;
    /// What it starts, for reports.
    fn describe(&self) -> String;
}

/// Starts the `bloodraven-operator` binary.
///
/// The lab has no cluster DNS, so the binary is given `--service-address-file`: a JSON file
/// this launcher keeps current from the lab kubelet's resolver (every 200 ms, replaced
/// atomically), mapping each Service port to its fault-proxy link. The binary then dials the
/// same links an in-process operator does, so drills cut and delay them alike.
#[derive(Clone, Debug)]
pub struct ProcessLauncher {
    /// The binary.
    pub bin: PathBuf,
}

struct ChildOperator {
    child: std::process::Child,
    addresses: tokio::task::JoinHandle<()>,
}

/// How often the service-address file is refreshed for an operator process.
const ADDRESS_REFRESH: Duration = Duration::from_millis(200);

/// Writes the lab's Service addresses to `path` when they changed (write then rename, so the
/// reader never sees half a file).
fn write_addresses(
    resolver: &LabResolver,
    path: &std::path::Path,
    last: &mut String,
) -> std::io::Result<()> {
    let map: BTreeMap<String, String> =
        resolver.snapshot().into_iter().map(|(key, address)| (key, address.to_string())).collect();
    let text = serde_json::to_string_pretty(&map).map_err(std::io::Error::other)?;
    if text == *last {
        return Ok(());
    }
    let staging = path.with_extension("json.new");
    std::fs::write(&staging, &text)?;
    std::fs::rename(&staging, path)?;
    *last = text;
    Ok(())
}

impl RunningOperator for ChildOperator {
    fn describe(&self) -> String {
        format!("process {}", self.child.id())
    }
}

impl Drop for ChildOperator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.addresses.abort();
    }
}

impl OperatorLauncher for ProcessLauncher {
    fn launch(&self, env: &OperatorEnv) -> Result<Box<dyn RunningOperator>, LiveError> {
        let io = |what: String| move |source| LiveError::Io { what, source };
        let http = match env.http {
            Some(http) => http,
            None => std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(io("finding a free port for the operator's HTTP server".into()))?,
        };
        let log_path = env.log_dir.join(format!("operator-{}.log", env.name));
        let log = std::fs::File::create(&log_path)
            .map_err(io(format!("creating {}", log_path.display())))?;
        let err = log.try_clone().map_err(io(format!("opening {}", log_path.display())))?;
        let addresses_path = env.log_dir.join(format!("services-{}.json", env.name));
        let mut last = String::new();
        write_addresses(&env.resolver, &addresses_path, &mut last)
            .map_err(io(format!("writing {}", addresses_path.display())))?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            LiveError::Other("the operator launcher needs a tokio runtime (the live lab's)".into())
        })?;
        let resolver = env.resolver.clone();
        let refresh_path = addresses_path.clone();
        let addresses = runtime.spawn(async move {
            loop {
                tokio::time::sleep(ADDRESS_REFRESH).await;
                if let Err(error) = write_addresses(&resolver, &refresh_path, &mut last) {
                    tracing::warn!(%error, path = %refresh_path.display(), "cannot refresh the service addresses");
                }
            }
        });
        let child = std::process::Command::new(&self.bin)
            .arg("--service-address-file")
            .arg(&addresses_path)
            .env("KUBECONFIG", &env.kubeconfig)
            .env("RUST_LOG", "info")
            .args(["--namespace", &env.namespace])
            .args(["--leader-election-namespace", &env.namespace])
            .args(["--leader-election-id", LEASE_NAME])
            .args(["--lease-duration-seconds", &LEASE_DURATION.as_secs().to_string()])
            .args(["--instance", &env.name, "--http-address", &http.to_string()])
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(io(format!("starting the operator binary {}", self.bin.display())));
        let child = match child {
            Ok(child) => child,
            Err(error) => {
                addresses.abort();
                return Err(error);
            }
        };
        Ok(Box::new(ChildOperator { child, addresses }))
    }

    fn describe(&self) -> String {
        format!("the operator binary {}", self.bin.display())
    }
}

/// The live lab's folder standing in for the PVC archive claim.
const PVC_ARCHIVE_DIR: &str = "pitr-pvc";

/// The live lab's folder of Job attempts (outside the claims folder, which the kubelet prunes).
const JOBS_DIR: &str = "jobs";

/// A running live lab with one MysqlFailoverGroup.
pub struct LiveLab {
    operators: BTreeMap<String, Box<dyn RunningOperator>>,
    kubelet: Option<Kubelet>,
    lab: Option<Lab>,
    client: kube::Client,
    hub: Arc<ProxyHub>,
    launcher: Option<Arc<dyn OperatorLauncher>>,
    namespace: String,
    group: String,
    sites: Vec<String>,
    dir: tempfile::TempDir,
    /// The HTTP address kept for the first operator replica (sidecars enabled).
    operator_http: Option<SocketAddr>,
}

impl LiveLab {
    /// Starts the lab API server (CRDs loaded), the namespace, the group's credentials Secret
    /// (the lab's accounts), the group itself, the lab kubelet and — with a launcher — the
    /// first operator replica, named [`crate::DEFAULT_OPERATOR`]. Needs MySQL 9.7 (`source
    /// scripts/provision.sh`).
    pub async fn start(
        group: &MysqlFailoverGroup,
        launcher: Option<Arc<dyn OperatorLauncher>>,
    ) -> Result<Self, LiveError> {
        Self::start_with(group, launcher, LiveOptions::default()).await
    }

    /// [`LiveLab::start`] with the opt-in parts of `options`.
    pub async fn start_with(
        group: &MysqlFailoverGroup,
        launcher: Option<Arc<dyn OperatorLauncher>>,
        options: LiveOptions,
    ) -> Result<Self, LiveError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dist = MysqlDist::from_env()?;
        let template = ensure_template_async(&dist).await?;
        let namespace = group.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let name =
            group.metadata.name.clone().ok_or_else(|| {
                LiveError::Other("the group manifest has no metadata.name".into())
            })?;
        let lab = Lab::start(LabConfig::default()).await?;
        for (_, text) in CRDS {
            lab.load_crds(text)?;
        }
        if namespace != "default" {
            lab.apply(json!({"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": namespace}}))?;
        }
        if let Some(credentials) = &group.spec.credentials {
            lab.apply(credentials_secret(&namespace, &credentials.operator_secret_name))?;
        }
        let mut object = serde_json::to_value(group)
            .map_err(|e| LiveError::Other(format!("the group manifest does not serialize: {e}")))?;
        object["metadata"]["namespace"] = json!(namespace);
        lab.apply(object)?;
        // A short path: mysqld's unix socket lives in the claim folders below it.
        let dir = tempfile::Builder::new().prefix("brl-").tempdir_in("/tmp").map_err(|source| {
            LiveError::Io { what: "creating the live lab's folder in /tmp".into(), source }
        })?;
        let kubeconfig = dir.path().join("kubeconfig");
        lab.write_kubeconfig(&kubeconfig, None)?;
        let url = lab
            .url()
            .parse()
            .map_err(|e| LiveError::Other(format!("the lab's URL {}: {e}", lab.url())))?;
        let client = kube::Client::try_from(kube::Config::new(url))
            .map_err(|source| LiveError::Kube { what: "a client of the lab".into(), source })?;
        let hub = Arc::new(ProxyHub::current()?);
        let mut config = KubeletConfig::new(dir.path().join("claims"));
        config.namespace = Some(namespace.clone());
        let mut operator_http = None;
        if let Some(binary) = &options.sidecar {
            let http = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|source| LiveError::Io {
                    what: "finding a free port for the operator's HTTP server".into(),
                    source,
                })?;
            let pvc = dir.path().join(PVC_ARCHIVE_DIR);
            std::fs::create_dir_all(&pvc).map_err(|source| LiveError::Io {
                what: format!("creating {}", pvc.display()),
                source,
            })?;
            let mut sidecar = bloodraven_kubelet::SidecarConfig::new(binary.clone());
            sidecar.operator = Some(http);
            sidecar.pvc_archive = Some(pvc);
            config.sidecar = Some(sidecar);
            operator_http = Some(http);
        }
        if let Some(binary) = &options.jobs {
            config.jobs = Some(backups::job_config(dir.path().join(JOBS_DIR), binary)?);
        }
        let kubelet = Kubelet::start(client.clone(), dist, template, hub.clone(), config).await?;
        if options.jobs.is_some() {
            lab.set_pod_logs(Arc::new(kubelet.log_source()));
        }
        let mut live = Self {
            operators: BTreeMap::new(),
            kubelet: Some(kubelet),
            lab: Some(lab),
            client,
            hub,
            launcher,
            namespace,
            group: name,
            sites: group.spec.sites.iter().map(|s| s.name.clone()).collect(),
            dir,
            operator_http,
        };
        if live.launcher.is_some() {
            live.start_operator(crate::DEFAULT_OPERATOR)?;
        }
        Ok(live)
    }

    /// The folder standing in for the PVC PITR archive claim (sidecars enabled): the sidecars'
    /// PVC store root, as `/run/bloodraven/pitr-archive` is in a pod.
    pub fn pvc_archive_dir(&self) -> PathBuf {
        self.dir.path().join(PVC_ARCHIVE_DIR)
    }

    /// The lab API server.
    pub fn lab(&self) -> &Lab {
        // Only `stop` takes it, and it consumes `self`.
        self.lab.as_ref().unwrap_or_else(|| unreachable!("the lab runs until stop"))
    }

    /// A client of the lab API server (full rights).
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The group's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The group's name.
    pub fn group_name(&self) -> &str {
        &self.group
    }

    /// The group's sites, in declared order.
    pub fn sites(&self) -> &[String] {
        &self.sites
    }

    /// The live lab's folder (kubeconfig, operator logs, claim folders).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// A kubeconfig file for the lab API server (full rights).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// Every site: its Deployment, mysqld's PID while it runs, and whether its Pod is Ready.
    pub fn pods(&self) -> Vec<(String, Option<u32>, bool)> {
        self.sites
            .iter()
            .map(|site| {
                let deployment = self.deployment(site);
                let pod = self.kubelet.as_ref().and_then(|k| k.pod(&self.namespace, &deployment));
                let pid = pod.as_ref().and_then(|p| p.pid);
                (deployment, pid, pod.is_some_and(|p| p.ready && p.pid.is_some()))
            })
            .collect()
    }

    fn kubelet(&self) -> Result<&Kubelet, LiveError> {
        self.kubelet.as_ref().ok_or_else(|| LiveError::Other("the kubelet has stopped".into()))
    }

    /// The Service resolver (Service → proxy link address).
    pub fn resolver(&self) -> Result<LabResolver, LiveError> {
        Ok(self.kubelet()?.resolver())
    }

    /// Starts operator replica `name` with the launcher.
    pub fn start_operator(&mut self, name: &str) -> Result<String, LiveError> {
        let launcher = self.launcher.clone().ok_or_else(|| {
            LiveError::Other("no operator launcher: pass --operator-bin PATH".into())
        })?;
        if self.operators.contains_key(name) {
            return Err(LiveError::Other(format!("operator {name:?} already runs")));
        }
        let env = OperatorEnv {
            client: self.client.clone(),
            kubeconfig: self.kubeconfig(),
            resolver: self.resolver()?,
            namespace: self.namespace.clone(),
            name: name.to_owned(),
            log_dir: self.dir.path().to_owned(),
            // The first replica gets the address the sidecars' operator links point at.
            http: self.operator_http.take(),
        };
        let running = launcher.launch(&env)?;
        let detail = format!("operator {name:?} started ({})", running.describe());
        self.operators.insert(name.to_owned(), running);
        Ok(detail)
    }

    /// Kills operator replica `name`.
    pub fn kill_operator(&mut self, name: &str) -> Result<String, LiveError> {
        let running = self.operators.remove(name).ok_or_else(|| {
            LiveError::Other(format!(
                "operator {name:?} does not run; running: {:?}",
                self.operators.keys().collect::<Vec<_>>()
            ))
        })?;
        let detail = format!("operator {name:?} killed ({})", running.describe());
        drop(running);
        Ok(detail)
    }

    /// The Deployment name of `site`.
    pub fn deployment(&self, site: &str) -> String {
        SiteNames::new(&self.group, site).deployment
    }

    /// `site`'s mysqld process id while it runs.
    pub fn pid(&self, site: &str) -> Result<u32, LiveError> {
        self.kubelet()?
            .pod(&self.namespace, &self.deployment(site))
            .and_then(|pod| pod.pid)
            .ok_or_else(|| LiveError::Other(format!("site {site}: no mysqld runs (no pod yet?)")))
    }

    /// `site`'s mysqld address, direct (no proxy): what the drill's own reads use.
    pub fn mysql_addr(&self, site: &str) -> Result<SocketAddr, LiveError> {
        self.kubelet()?
            .pod(&self.namespace, &self.deployment(site))
            .and_then(|pod| pod.mysql_addr)
            .ok_or_else(|| {
                LiveError::Other(format!("site {site}: no mysqld address (no pod yet?)"))
            })
    }

    /// The fault-proxy link of Service `service` port 3306 (created on first use).
    pub fn service_link(&self, service: &str) -> Result<Link, LiveError> {
        let resolver = self.resolver()?;
        // Resolving creates the link (its upstream follows the Service's endpoints).
        let _ = resolver.resolve(&self.namespace, service, ports::MYSQL);
        self.hub.get(&link_name(&self.namespace, service, ports::MYSQL)).ok_or_else(|| {
            LiveError::Other(format!(
                "Service {service} has no proxy link yet (not created, or no endpoint ever)"
            ))
        })
    }

    /// The link of a drill link name: `operator:<s>` and `repl:<f>-><s>` are `s`'s internal
    /// Service (the operator and every follower dial it), `app:<s>` its client Service,
    /// `app:primary` the `-primary` Service; with sidecars, `sidecar:<s>->operator` is `s`'s
    /// sidecar's link to the operator's HTTP server and `sidecar:<s>-><p>` its link to peer
    /// `p`'s sidecar (both exist once `s`'s sidecar has started).
    pub fn drill_link(&self, name: &str) -> Result<Link, LiveError> {
        if let Some((from, to)) = name.strip_prefix("sidecar:").and_then(|p| p.split_once("->")) {
            return self.sidecar_link(from, to);
        }
        let site = if name == "app:dns" {
            return self.dns_link();
        } else if name == "app:primary" {
            return self.service_link(&primary_service_name(&self.group));
        } else if let Some(pair) = name.strip_prefix("repl:") {
            pair.split_once("->").map(|(_, source)| source)
        } else if let Some(site) = name.strip_prefix("operator:") {
            Some(site)
        } else if let Some(site) = name.strip_prefix("app:") {
            return self.service_link(&SiteNames::new(&self.group, site).client_service);
        } else {
            None
        };
        match site {
            Some(site) => self.service_link(&SiteNames::new(&self.group, site).internal_service),
            None => Err(LiveError::Other(format!(
                "link {name:?} has no Service in the operator's world (sidecars do not run yet)"
            ))),
        }
    }

    /// The link from `site`'s sidecar to `to`: `operator`, or a peer site's sidecar.
    fn sidecar_link(&self, site: &str, to: &str) -> Result<Link, LiveError> {
        let target = if to == "operator" {
            to.to_owned()
        } else {
            format!("{}:{}", SiteNames::new(&self.group, to).internal_service, ports::SIDECAR_HTTP)
        };
        let name =
            bloodraven_kubelet::sidecar_link_name(&self.namespace, &self.deployment(site), &target);
        self.hub.get(&name).ok_or_else(|| {
            LiveError::Other(format!(
                "no sidecar link {name:?}: sidecars run only with LiveOptions::sidecar, and the \
                 link exists once {site}'s sidecar has started"
            ))
        })
    }

    /// The group's `spec.dns.hostname`, as the API server holds the group.
    pub fn dns_hostname(&self) -> Result<String, LiveError> {
        self.group_object()
            .and_then(|group| group["spec"]["dns"]["hostname"].as_str().map(str::to_owned))
            .ok_or_else(|| {
                LiveError::Other(format!(
                    "group {}: no spec.dns.hostname (add one to the manifest to use app:dns)",
                    self.group
                ))
            })
    }

    /// The link of the group's DNS name (`dns/<hostname>:3306`, created on first use): its
    /// upstream follows the operator's DNSEndpoint (the lab kubelet's resolver).
    pub fn dns_link(&self) -> Result<Link, LiveError> {
        let hostname = self.dns_hostname()?;
        let name = dns_link_name(&hostname, ports::MYSQL);
        // Resolving creates the link; an existing one is left to the kubelet to re-point (so
        // a drill step that names it never moves it itself).
        if let Some(link) = self.hub.get(&name) {
            return Ok(link);
        }
        let _ = self.resolver()?.resolve_host(&hostname, ports::MYSQL);
        self.hub.get(&name).ok_or_else(|| {
            LiveError::Other(format!(
                "{hostname} does not resolve yet: no DNSEndpoint CNAME of a Service with an endpoint"
            ))
        })
    }

    /// The `-primary` Service's link address (what the application dials).
    pub fn primary_addr(&self) -> Result<SocketAddr, LiveError> {
        Ok(self.service_link(&primary_service_name(&self.group))?.addr())
    }

    /// The group as the API server holds it.
    pub fn group_object(&self) -> Option<Value> {
        self.lab().get(
            "shipstream.io/v1alpha1",
            "MysqlFailoverGroup",
            Some(&self.namespace),
            &self.group,
        )
    }

    /// The group's Events (in its namespace, about it), each once (the lab serves one store
    /// under both `v1` and `events.k8s.io/v1`).
    pub fn group_events(&self) -> Vec<Value> {
        let mut seen = std::collections::BTreeSet::new();
        self.lab()
            .list("v1", "Event")
            .into_iter()
            .chain(self.lab().list("events.k8s.io/v1", "Event"))
            .filter(|event| {
                seen.insert(event["metadata"]["name"].as_str().unwrap_or("").to_owned())
            })
            .filter(|event| {
                let regarding = event.get("involvedObject").or_else(|| event.get("regarding"));
                event["metadata"]["namespace"] == self.namespace.as_str()
                    && regarding.is_some_and(|r| {
                        r["kind"] == "MysqlFailoverGroup" && r["name"] == self.group.as_str()
                    })
            })
            .collect()
    }

    /// Stops operators, mysqlds (waiting for them) and the lab API server.
    pub async fn stop(mut self) {
        self.operators.clear();
        if let Some(kubelet) = self.kubelet.take() {
            kubelet.shutdown().await;
        }
        if let Some(lab) = self.lab.take()
            && let Err(e) = lab.stop().await
        {
            tracing::warn!(error = %e, "the lab API server did not stop cleanly");
        }
    }
}

impl Drop for LiveLab {
    fn drop(&mut self) {
        // Operators first (they would act on sites going away); the kubelet kills its mysqlds
        // on drop.
        self.operators.clear();
        self.kubelet.take();
    }
}

/// The credentials Secret with the live lab's accounts (`bloodraven-sites` passwords).
pub fn credentials_secret(namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": {
            "username": accounts::OPERATOR.user,
            "password": accounts::OPERATOR.password,
            "MYSQL_REPLICATION_USER": accounts::REPLICATION.user,
            "MYSQL_REPLICATION_PASSWORD": accounts::REPLICATION.password,
        },
    })
}
