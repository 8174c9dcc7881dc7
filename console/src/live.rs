//! `bloodraven lab --live`: a live lab on this machine. The lab API server, the lab kubelet
//! (real `mysqld` per site Deployment), the fault proxies (one link per Service endpoint) and,
//! until the operator exists, the 3-site group `orders` (`iad`, `pdx` PrimaryCandidate, `fra`
//! DisasterRecovery) and its site workloads, created here through the `workloads` builders.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_kubelet::{Kubelet, KubeletConfig};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::ensure_template_async;
use bloodraven_workloads::{primary_service, site_objects};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use kube::api::{Api, PostParams};

/// A running live lab. [`LiveLab::stop`] (or dropping it) stops every mysqld.
pub struct LiveLab {
    /// The lab API server.
    pub lab: Lab,
    kubelet: Option<Kubelet>,
    group: MysqlFailoverGroup,
    deployments: Vec<String>,
    _hub: Arc<ProxyHub>,
    directory: tempfile::TempDir,
}

impl LiveLab {
    /// Starts the API server and the kubelet, then creates the group and its site workloads.
    /// Needs MySQL 9.7 (`source scripts/provision.sh`).
    pub async fn start() -> anyhow::Result<Self> {
        let dist = MysqlDist::from_env()?;
        let template = ensure_template_async(&dist).await.context("the MySQL template")?;
        let lab = Lab::start(LabConfig::default()).await.context("starting the lab API server")?;
        for (file, text) in crate::lab::CRDS {
            lab.load_crds(text).with_context(|| format!("loading {file}"))?;
        }
        let mut group: MysqlFailoverGroup =
            serde_norway::from_str(bloodraven_drill::THREE_SITES_MANIFEST)
                .context("the built-in 3-site manifest")?;
        let namespace = group.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        lab.apply(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": namespace },
        }))
        .with_context(|| format!("creating namespace {namespace}"))?;
        let created =
            lab.apply(serde_json::to_value(&group)?).context("creating the MysqlFailoverGroup")?;
        group.metadata.uid = created["metadata"]["uid"].as_str().map(str::to_owned);
        let directory = tempfile::Builder::new()
            .prefix("bloodraven-live-")
            .tempdir()
            .context("creating the live lab's directory")?;
        let kubeconfig = directory.path().join("kubeconfig");
        lab.write_kubeconfig(&kubeconfig, None).context("writing the kubeconfig")?;
        let url = lab.url().parse().context("the lab's URL")?;
        let client = crate::client::lab_writer(url)?;
        let hub = Arc::new(ProxyHub::current()?);
        let kubelet = Kubelet::start(
            client.clone(),
            dist,
            template,
            hub.clone(),
            KubeletConfig::new(directory.path().join("kubelet")),
        )
        .await
        .context("starting the lab kubelet")?;
        let post = PostParams::default();
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &namespace);
        let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
        let deployments_api: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
        let mut deployments = Vec::new();
        let sites: Vec<String> = group.spec.sites.iter().map(|s| s.name.clone()).collect();
        for site in &sites {
            let objects = site_objects(&group, site)?;
            configmaps.create(&post, &objects.configmap).await?;
            claims.create(&post, &objects.pvc).await?;
            services.create(&post, &objects.services.internal).await?;
            services.create(&post, &objects.services.client).await?;
            deployments_api.create(&post, &objects.deployment).await?;
            deployments.push(objects.deployment.metadata.name.clone().unwrap_or_default());
        }
        services
            .create(&post, &primary_service(&group, sites.first().map(String::as_str))?)
            .await?;
        Ok(Self { lab, kubelet: Some(kubelet), group, deployments, _hub: hub, directory })
    }

    /// The group's namespace.
    pub fn namespace(&self) -> String {
        self.group.metadata.namespace.clone().unwrap_or_else(|| "default".into())
    }

    /// The kubeconfig of the lab API server.
    pub fn kubeconfig(&self) -> PathBuf {
        self.directory.path().join("kubeconfig")
    }

    /// The live lab's folder (kubeconfig, the kubelet's claims).
    pub fn directory(&self) -> &Path {
        self.directory.path()
    }

    /// The PIDs of the running mysqld processes, by Deployment.
    pub fn pids(&self) -> Vec<(String, Option<u32>)> {
        let namespace = self.namespace();
        self.deployments
            .iter()
            .map(|d| {
                let pid =
                    self.kubelet.as_ref().and_then(|k| k.pod(&namespace, d)).and_then(|p| p.pid);
                (d.clone(), pid)
            })
            .collect()
    }

    /// Waits until every site's Pod is Ready; the error names the ones that are not.
    pub async fn wait_ready(&self, timeout: Duration) -> anyhow::Result<()> {
        let namespace = self.namespace();
        let started = Instant::now();
        loop {
            let waiting: Vec<&str> = self
                .deployments
                .iter()
                .filter(|d| {
                    !self
                        .kubelet
                        .as_ref()
                        .and_then(|k| k.pod(&namespace, d))
                        .is_some_and(|p| p.ready && p.pid.is_some())
                })
                .map(String::as_str)
                .collect();
            if waiting.is_empty() {
                return Ok(());
            }
            if started.elapsed() >= timeout {
                anyhow::bail!(
                    "waited {timeout:?} for the site pods to be Ready; not Ready: {}",
                    waiting.join(", ")
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Stops the kubelet (every mysqld) and the API server.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(kubelet) = self.kubelet.take() {
            kubelet.shutdown().await;
        }
        self.lab.stop().await.context("stopping the lab API server")
    }
}

/// Bound on the sites becoming Ready.
const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// `bloodraven lab --live [--serve] [--drill FILE [--json]]`. Every process it started ends on
/// `q` (the console), SIGINT, SIGTERM or SIGHUP.
#[allow(clippy::print_stdout, reason = "the live lab's banner and the drill report are its output")]
pub async fn run(cli: &crate::cli::Cli, args: &crate::cli::LabArgs) -> anyhow::Result<()> {
    println!(
        "live lab: no operator yet: creating the 3-site group orders (iad, pdx PrimaryCandidate; \
         fra DisasterRecovery) and its site workloads myself"
    );
    let live = tokio::select! {
        live = LiveLab::start() => live?,
        () = crate::termination_signal() => return Ok(()),
    };
    let outcome = tokio::select! {
        r = serve(args, &live) => r,
        () = crate::termination_signal() => Ok(false),
    };
    // The console handles `q` and the signals itself (and restores the terminal).
    let outcome = match outcome {
        Ok(true) => console(cli, &live).await,
        Ok(false) => Ok(()),
        Err(e) => Err(e),
    };
    live.stop().await?;
    outcome
}

async fn console(cli: &crate::cli::Cli, live: &LiveLab) -> anyhow::Result<()> {
    let (client, connection) = crate::client::connect(Some(&live.kubeconfig()), None).await?;
    let options = crate::tui::app::Options {
        context: format!("{} (live lab)", connection.context),
        scope: crate::tui::state::Scope::Namespace(live.namespace()),
        no_color: cli.global.no_color,
        archive_root: cli.global.archive_root.clone(),
        archive_credentials_from_secret: cli.global.archive_credentials_from_secret,
        kubeconfig: Some(live.kubeconfig()),
    };
    crate::console(client, options).await
}

/// Waits for the sites, then runs the drill or serves; `Ok(true)`: open the console.
#[allow(clippy::print_stdout, reason = "the live lab's banner and the drill report are its output")]
async fn serve(args: &crate::cli::LabArgs, live: &LiveLab) -> anyhow::Result<bool> {
    live.wait_ready(READY_TIMEOUT).await?;
    println!(
        "live lab ready: API server {}, kubeconfig {}, namespace {}, sites {}",
        live.lab.url(),
        live.kubeconfig().display(),
        live.namespace(),
        live.pids()
            .iter()
            .map(|(d, pid)| format!("{d} (pid {})", pid.map_or("-".into(), |p| p.to_string())))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(file) = &args.drill {
        let drill = bloodraven_drill::load(file)?;
        println!(
            "drill {}: run on its own star of sites beside this world (drills against the \
             kubelet's sites come with the operator)",
            drill.drill.name
        );
        let report =
            bloodraven_drill::run(&drill, &bloodraven_drill::RunOptions::default()).await?;
        if args.json {
            println!("{}", report.json());
        } else {
            print!("{}", report.human());
        }
        if !report.passed {
            anyhow::bail!("drill {} failed", report.drill);
        }
        return Ok(false);
    }
    if args.serve {
        println!("export KUBECONFIG={}\nCtrl-C stops it.", live.kubeconfig().display());
        crate::termination_signal().await;
        return Ok(false);
    }
    Ok(true)
}
