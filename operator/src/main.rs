//! `bloodraven-operator`: the controller for `MysqlFailoverGroup` (site workloads and the
//! topology manager). Backups and verifications are not reconciled yet.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bloodraven_operator::address_file::AddressFile;
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::http::{HttpState, serve};
use bloodraven_operator::lease::{self, LeaseConfig};
use bloodraven_operator::manager::Tuning;
use bloodraven_workloads::{ClusterDns, Resolver};
use clap::Parser;

/// Bloodraven operator.
///
/// Connects like `kubectl` (in-cluster service account, else `KUBECONFIG`/`~/.kube/config`
/// and its current context), watches `MysqlFailoverGroup`s, applies their site workloads and
/// runs one topology manager per group.
#[derive(Debug, Parser)]
#[command(name = "bloodraven-operator", version, about, long_about)]
struct Cli {
    /// Watch only this namespace (default: every namespace).
    #[arg(long, env = "BLOODRAVEN_NAMESPACE")]
    namespace: Option<String>,
    /// How often each group's sites are polled, in milliseconds (until `spec.pollInterval`
    /// exists in the CRD).
    #[arg(long, default_value_t = 2000)]
    poll_interval_ms: u64,
    /// Consecutive unreachable polls before the active site counts as failed.
    #[arg(long, default_value_t = 3)]
    failure_threshold: u32,
    /// Consecutive reachable polls before a read-only active site is re-asserted.
    #[arg(long, default_value_t = 2)]
    recovery_threshold: u32,
    /// Where the HTTP server (`/healthz`, `/readyz`, `/status`, `/active-site`) listens.
    #[arg(long, env = "BLOODRAVEN_HTTP_ADDRESS", default_value = "0.0.0.0:8082")]
    http_address: std::net::SocketAddr,
    /// The leader election Lease's name; only its holder runs controllers.
    #[arg(long, default_value = "bloodraven-operator")]
    leader_election_id: String,
    /// The Lease's namespace.
    #[arg(long, env = "POD_NAMESPACE", default_value = "bloodraven-system")]
    leader_election_namespace: String,
    /// How long an unrenewed Lease stays its holder's, in seconds.
    #[arg(long, default_value_t = 15)]
    lease_duration_seconds: u64,
    /// Run controllers without a Lease (a single replica, or tests).
    #[arg(long)]
    no_leader_election: bool,
    /// This replica's name in Events (the pod name in a cluster).
    #[arg(long, env = "POD_NAME", default_value = "bloodraven-operator")]
    instance: String,
    /// The live lab only: dial Services at the addresses in this JSON file
    /// (`{"<ns>/<svc>:<port>": "127.0.0.1:<port>"}`, re-read when it changes) instead of
    /// the cluster DNS. The lab writes it from its kubelet's resolver.
    #[arg(long, env = "BLOODRAVEN_SERVICE_ADDRESS_FILE", value_name = "PATH")]
    service_address_file: Option<std::path::PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    bloodraven_crashpoint::check_env().context("BLOODRAVEN_CRASH_AT")?;
    let client = kube::Client::try_default()
        .await
        .context("connecting to the Kubernetes API server (in-cluster or KUBECONFIG)")?;
    let tuning = Tuning {
        poll_interval: Duration::from_millis(cli.poll_interval_ms.max(100)),
        failure_threshold: cli.failure_threshold.max(1),
        recovery_threshold: cli.recovery_threshold.max(1),
        ..Tuning::default()
    };
    let resolver: Arc<dyn Resolver> = match &cli.service_address_file {
        Some(path) => Arc::new(AddressFile::open(path)?),
        None => Arc::new(ClusterDns),
    };
    let context = Arc::new(Context::new(client.clone(), resolver, tuning, &cli.instance));
    tracing::info!(namespace = ?cli.namespace, ?tuning, "bloodraven-operator starting");
    let http = HttpState {
        published: context.shared.published.clone(),
        metrics: context.shared.metrics.clone(),
        pitr: context.shared.pitr.clone(),
        ..HttpState::default()
    };
    let server = tokio::spawn(serve(cli.http_address, http.clone()));
    let lease = LeaseConfig {
        namespace: cli.leader_election_namespace.clone(),
        name: cli.leader_election_id.clone(),
        identity: cli.instance.clone(),
        duration: Duration::from_secs(cli.lease_duration_seconds.max(3)),
    };
    if !cli.no_leader_election {
        tokio::select! {
            acquired = lease::acquire(&client, &lease) => acquired.context("acquiring the leader Lease")?,
            signal = tokio::signal::ctrl_c() => {
                signal.context("waiting for Ctrl-C")?;
                return Ok(());
            }
        }
    }
    http.ready.store(true, std::sync::atomic::Ordering::Relaxed);
    let held = async {
        if cli.no_leader_election {
            std::future::pending::<()>().await;
        }
        lease::hold(&client, &lease).await;
    };
    tokio::select! {
        () = held => {
            anyhow::bail!("the leader Lease was lost; exiting so that only one replica acts")
        }
        served = server => {
            served.context("the HTTP server task")?
                .with_context(|| format!("serving HTTP on {}", cli.http_address))?;
            anyhow::bail!("the HTTP server stopped; restart the operator")
        }
        () = controller::run(context, cli.namespace.as_deref()) => {
            anyhow::bail!("the controller's watch ended; restart the operator")
        }
        signal = tokio::signal::ctrl_c() => {
            signal.context("waiting for Ctrl-C")?;
            tracing::info!("interrupted; stopping");
            Ok(())
        }
    }
}
