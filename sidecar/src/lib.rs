//! `bloodraven-sidecar`: the per-MySQL-pod daemon (peer awareness, self-fencing, binlog
//! archiving, HTTP status). The binary (`main.rs`) only parses arguments and calls [`run`].
//!
//! | module | concern |
//! | --- | --- |
//! | [`archiver`] | the binlog archiver (writer side of the PITR archive) |
//! | [`decide`] | the self-fencing decision (pure) |
//! | [`monitor`] | the peer-awareness loop: probes, the view, the fence |
//! | [`server`] | the HTTP server |
//! | [`mysql`] | the local server's flags, the fence, the health ping |
//! | [`http_get`] | the probes' minimal HTTP client |
//! | [`jobs`] | Job steps run as subcommands (`backup`, `restore`) |
//! | [`config`] | settings and their parsing |

pub mod archiver;
pub mod config;
pub mod decide;
pub mod http_get;
pub mod jobs;
pub mod monitor;
pub mod mysql;
pub mod server;

use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::watch;
use tracing::info;

pub use config::Config;
pub use server::ArchiverStatusSource;

/// Runs the peer-awareness loop and the HTTP server until `shutdown` resolves.
pub async fn run(
    config: Config,
    archiver: Option<ArchiverStatusSource>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let server = mysql::Server::new(&config.mysql, Duration::from_secs(5));
    let monitor_config = monitor::MonitorConfig {
        site: config.site.clone(),
        namespace: config.namespace.clone(),
        group: config.group.clone(),
        operator: config.operator.clone(),
        peers: config.peers.clone(),
        interval: config.interval,
        timings: config.timings,
    };
    let published = monitor::initial(&monitor_config, jiff::Timestamp::now());
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}; is the port taken?", config.listen))?;
    info!(listen = %listener.local_addr().unwrap_or(config.listen), site = %config.site, "sidecar serving");
    let (stop, stopped) = watch::channel(false);
    let monitor =
        tokio::spawn(monitor::run(monitor_config, server.clone(), published.clone(), stopped));
    let state =
        server::HttpState { server: server.clone(), published, timings: config.timings, archiver };
    let served = axum::serve(listener, server::router(state))
        .with_graceful_shutdown(shutdown)
        .await
        .context("the HTTP server failed");
    let _ = stop.send(true);
    let _ = monitor.await;
    server.close().await;
    served
}
