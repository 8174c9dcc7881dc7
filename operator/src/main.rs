//! `bloodraven-operator`: the controller for `MysqlFailoverGroup` (site workloads and the
//! topology manager). Backups and verifications are not reconciled yet.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::http::{HttpState, serve};
use bloodraven_operator::manager::Tuning;
use bloodraven_workloads::ClusterDns;
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
    /// This replica's name in Events (the pod name in a cluster).
    #[arg(long, env = "POD_NAME", default_value = "bloodraven-operator")]
    instance: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    tracing_subscriber::fmt()
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
    let context = Arc::new(Context::new(client, Arc::new(ClusterDns), tuning, &cli.instance));
    tracing::info!(namespace = ?cli.namespace, ?tuning, "bloodraven-operator starting");
    let http = HttpState { published: context.shared.published.clone(), ..HttpState::default() };
    http.ready.store(true, std::sync::atomic::Ordering::Relaxed);
    tokio::select! {
        served = serve(cli.http_address, http) => {
            served.with_context(|| format!("serving HTTP on {}", cli.http_address))?;
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
