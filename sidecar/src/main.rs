//! `bloodraven-sidecar`: the per-MySQL-pod daemon. Settings come from the environment the
//! operator renders (`bloodraven-workloads`); see the crate README.

use std::net::SocketAddr;

use anyhow::Context as _;
use bloodraven_sidecar::archiver::daemon::{self, ArchiverSettings};
use bloodraven_sidecar::archiver::mysql::MysqlServer;
use bloodraven_sidecar::archiver::status::ArchiverStatus;
use bloodraven_sidecar::config::{self, Config};
use bloodraven_sidecar::decide::Timings;
use bloodraven_sidecar::jobs;
use bloodraven_sidecar::mysql::MysqlTarget;
use clap::Parser;
use tokio::sync::watch;

/// Bloodraven sidecar: the per-pod daemon (the default) and the steps of backup and restore
/// Jobs, as subcommands.
#[derive(Debug, Parser)]
#[command(name = "bloodraven-sidecar", version, about, long_about)]
struct Jobs {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// The per-pod daemon: peer awareness, self-fencing, archiving, HTTP (the default when the
    /// first argument is not a subcommand).
    Run(Box<Cli>),
    /// Backup Job step: dump a site with mysqldump into the profile's storage.
    Backup(Box<jobs::backup::BackupArgs>),
    /// Restore Job step: load a finished backup artifact into an empty site.
    Restore(Box<jobs::restore::RestoreArgs>),
    /// PITR restore Job step 1: read the dump's metadata, write /pitr-dump-meta/dump.json.
    DumpMeta(Box<jobs::dump_meta::DumpMetaArgs>),
    /// PITR restore Job step 2: plan over the archive, stage the segment files.
    PitrDownload(Box<jobs::pitr_download::PitrDownloadArgs>),
    /// PITR restore Job step 3 (after the load): replay the plan and prove the result.
    Replay(Box<jobs::replay::ReplayArgs>),
    /// PITR restore Job main container: load the backup, replay the plan, write the verdict.
    PitrRestore(Box<jobs::pitr_restore::PitrRestoreArgs>),
    /// MysqlBackupVerification Job step: load a backup into a throwaway mysqld and prove it.
    Verify(Box<jobs::verify::VerifyArgs>),
    /// Cleanup Job step: delete a deleted MysqlBackup's recorded artifact.
    ArtifactCleanup(Box<jobs::cleanup::CleanupArgs>),
    /// A backup schedule's CronJob run: report the run (the operator creates its MysqlBackup).
    ScheduledBackup(Box<jobs::schedule::ScheduleArgs>),
}

/// The subcommand names; any other first argument (or none) runs the daemon with its
/// environment and flags exactly as before subcommands existed.
const SUBCOMMANDS: &[&str] = &[
    "run",
    "backup",
    "restore",
    "dump-meta",
    "pitr-download",
    "replay",
    "pitr-restore",
    "verify",
    "artifact-cleanup",
    "scheduled-backup",
    "help",
];

/// Bloodraven sidecar: peer awareness, self-fencing and the HTTP status of one MySQL pod.
#[derive(Debug, Parser)]
#[command(name = "bloodraven-sidecar", version, about, long_about)]
struct Cli {
    /// This pod's site.
    #[arg(long, env = "BLOODRAVEN_SITE")]
    site: String,
    /// The group's name.
    #[arg(long, env = "BLOODRAVEN_GROUP")]
    group: String,
    /// The group's namespace.
    #[arg(long, env = "POD_NAMESPACE")]
    namespace: String,
    /// The operator's `host:port` (its `/active-site`); empty for none.
    #[arg(long, env = "BLOODRAVEN_ADDRESS", default_value = "")]
    operator: String,
    /// The other sites' sidecars, `host:port`, comma separated.
    #[arg(long, env = "PEER_ADDRESSES", default_value = "")]
    peers: String,
    /// Silence from the operator and every peer beyond this fences a writable server.
    #[arg(long, env = "LEASE_TIMEOUT", default_value = "20s")]
    lease_timeout: String,
    /// How often the peers, the operator and the server are checked.
    #[arg(long, env = "PEER_CHECK_INTERVAL", default_value = "5s")]
    peer_check_interval: String,
    /// How old an operator observation may be and still count (3 × the operator's pollInterval).
    #[arg(long, env = "ACTIVE_SITE_FRESHNESS", default_value = "6s")]
    active_site_freshness: String,
    /// The local server's host.
    #[arg(long, env = "MYSQL_HOST", default_value = "127.0.0.1")]
    mysql_host: String,
    /// The local server's port.
    #[arg(long, env = "MYSQL_PORT", default_value_t = 3306)]
    mysql_port: u16,
    /// The sidecar's MySQL account.
    #[arg(long, env = "MYSQL_USER", default_value = "bloodraven_sidecar")]
    mysql_user: String,
    /// Its password.
    #[arg(long, env = "MYSQL_PASSWORD", default_value = "", hide_env_values = true)]
    mysql_password: String,
    /// Where the HTTP server listens.
    #[arg(long, env = "SIDECAR_LISTEN", default_value = "0.0.0.0:8080")]
    listen: SocketAddr,
}

impl Cli {
    fn config(self) -> anyhow::Result<Config> {
        Ok(Config {
            timings: Timings {
                lease_timeout: config::duration("LEASE_TIMEOUT", &self.lease_timeout)?,
                freshness: config::duration("ACTIVE_SITE_FRESHNESS", &self.active_site_freshness)?,
            },
            interval: config::duration("PEER_CHECK_INTERVAL", &self.peer_check_interval)?,
            peers: config::peers(&self.peers)?,
            site: self.site,
            namespace: self.namespace,
            group: self.group,
            operator: self.operator,
            mysql: MysqlTarget {
                host: self.mysql_host,
                port: self.mysql_port,
                user: self.mysql_user,
                password: self.mysql_password,
            },
            listen: self.listen,
        })
    }
}

async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    // A misspelt BLOODRAVEN_CRASH_AT stops here (drill builds only; a no-op otherwise).
    bloodraven_crashpoint::check_env().context("BLOODRAVEN_CRASH_AT")?;
    let first = std::env::args().nth(1);
    if !first.as_deref().is_some_and(|arg| SUBCOMMANDS.contains(&arg)) {
        return daemon(Cli::parse()).await;
    }
    match Jobs::parse().command {
        Command::Run(cli) => daemon(*cli).await,
        Command::Backup(args) => {
            let outcome = jobs::backup::run(*args).await.context("backup failed")?;
            print_line(&outcome.sentinel);
            Ok(())
        }
        Command::Restore(args) => {
            let outcome = jobs::restore::run(*args).await.context("restore failed")?;
            print_line(&format!(
                "{} gtidExecuted={} dataBytes={} chunks={}",
                jobs::LOAD_COMPLETE,
                bloodraven_backup::sentinel::encode(&outcome.gtid_executed),
                outcome.data_bytes,
                outcome.chunks
            ));
            Ok(())
        }
        Command::DumpMeta(args) => {
            jobs::dump_meta::run(*args).await.context("dump-meta failed")?;
            Ok(())
        }
        Command::PitrDownload(args) => {
            jobs::pitr_download::run(*args).await.context("pitr-download failed")?;
            Ok(())
        }
        Command::Replay(args) => {
            let outcome = jobs::replay::run(*args).await.context("replay failed")?;
            for line in &outcome.lines {
                print_line(line);
            }
            Ok(())
        }
        Command::PitrRestore(args) => {
            let outcome = jobs::pitr_restore::run(*args).await.context("pitr-restore failed")?;
            for line in &outcome.lines {
                print_line(line);
            }
            Ok(())
        }
        Command::Verify(args) => match jobs::verify::run(*args).await {
            Ok(verified) => {
                for line in verified.lines() {
                    print_line(&line);
                }
                Ok(())
            }
            Err(refusal) => {
                print_line(&refusal.line());
                Err(anyhow::Error::new(refusal).context("verify failed"))
            }
        },
        Command::ArtifactCleanup(args) => match jobs::cleanup::run(*args).await {
            Ok(done) => {
                print_line(&done.line());
                Ok(())
            }
            Err(failure) => {
                print_line(&failure.line());
                tracing::error!(error = %failure, "artifact cleanup failed");
                std::process::exit(failure.exit_code());
            }
        },
        Command::ScheduledBackup(args) => {
            print_line(&jobs::schedule::line(&args));
            Ok(())
        }
    }
}

/// A Job step's result line on stdout (the Job log the operator reads).
#[expect(clippy::print_stdout, reason = "Job steps report their verdict on stdout")]
fn print_line(line: &str) {
    println!("{line}");
}

/// The per-pod daemon.
async fn daemon(cli: Cli) -> anyhow::Result<()> {
    let config = cli.config().context("invalid sidecar settings")?;
    let settings = ArchiverSettings::from_vars(|name| std::env::var(name).ok())
        .context("invalid archiver settings")?;
    let (stop_archiver, archiver_stopped) = tokio::sync::oneshot::channel::<()>();
    let (status, archiver) = match settings {
        None => {
            // PITR is off: `/archiver/status` answers 200 with `enabled: false`.
            let off = ArchiverStatus { site: config.site.clone(), ..ArchiverStatus::default() };
            (watch::channel(serde_json::to_value(&off).ok()).1, None)
        }
        Some(settings) => {
            let (sender, receiver) = watch::channel(None);
            let opts = mysql_async::OptsBuilder::default()
                .ip_or_hostname(config.mysql.host.clone())
                .tcp_port(config.mysql.port)
                .user(Some(config.mysql.user.clone()))
                .pass(Some(config.mysql.password.clone()))
                .prefer_socket(false);
            let server = MysqlServer::new(opts.into());
            let task = tokio::spawn(daemon::run(settings, server, sender, async {
                let _ = archiver_stopped.await;
            }));
            (receiver, Some(task))
        }
    };
    let served = bloodraven_sidecar::run(config, Some(status), shutdown_signal()).await;
    let _ = stop_archiver.send(());
    if let Some(task) = archiver {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), task).await;
    }
    served
}
