//! The verification Job's throwaway MySQL: a `mysqld` initialised (`--initialize-insecure`)
//! into an empty folder of the pod, listening on 127.0.0.1 only, with one password account for
//! the load. The server is SIGKILLed and its folder removed when [`Scratch`] drops: nothing of
//! it outlives the step.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use mysql_async::prelude::Queryable as _;
use tokio::process::{Child, Command};
use tracing::info;

use super::client::Target;
use super::creds::MysqlCreds;

/// The account the load uses (created on `127.0.0.1` only).
pub const ACCOUNT: &str = "bloodraven_verify";
/// The longest unix socket path the kernel takes.
const MAX_SOCKET_PATH: usize = 107;
/// How long initialisation and start-up may take (shared CPUs are slow).
const START_BOUND: Duration = Duration::from_secs(180);

/// Where the server's programs and folders are.
#[derive(Debug, Clone)]
pub struct ScratchConfig {
    /// The `mysqld` executable.
    pub mysqld: PathBuf,
    /// `--basedir` (unset: mysqld's own).
    pub basedir: Option<PathBuf>,
    /// `--lc-messages-dir` (unset: mysqld's own).
    pub lc_messages_dir: Option<PathBuf>,
    /// `--plugin-dir` (unset: mysqld's own).
    pub plugin_dir: Option<PathBuf>,
    /// An empty folder the server may fill (the Job's scratch volume).
    pub dir: PathBuf,
}

/// A running throwaway server.
#[derive(Debug)]
pub struct Scratch {
    child: Child,
    dir: PathBuf,
    /// How the load reaches it.
    pub target: Target,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        for sub in ["data", "files", "tmp"] {
            let _ = std::fs::remove_dir_all(self.dir.join(sub));
        }
    }
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .context("cannot find a free port on 127.0.0.1 for the scratch server")?;
    Ok(listener.local_addr().context("the free port's address")?.port())
}

fn random_password() -> anyhow::Result<String> {
    let mut bytes = [0u8; 18];
    bloodraven_store::random::fill(&mut bytes)
        .context("cannot draw random bytes for the scratch account's password")?;
    Ok(data_encoding::HEXLOWER.encode(&bytes))
}

/// `my.cnf` of the scratch server (pure).
pub fn render_config(config: &ScratchConfig, port: u16, run_as_root: bool) -> String {
    let dir = &config.dir;
    let mut lines = vec!["[mysqld]".to_owned()];
    if run_as_root {
        lines.push("user=root".to_owned());
    }
    for (key, value) in [
        ("basedir", &config.basedir),
        ("lc-messages-dir", &config.lc_messages_dir),
        ("plugin-dir", &config.plugin_dir),
    ] {
        if let Some(value) = value {
            lines.push(format!("{key}={}", value.display()));
        }
    }
    for (key, sub) in [
        ("datadir", "data"),
        ("socket", "mysqld.sock"),
        ("pid-file", "mysqld.pid"),
        ("log-error", "error.log"),
        ("secure-file-priv", "files"),
        ("tmpdir", "tmp"),
    ] {
        lines.push(format!("{key}={}", dir.join(sub).display()));
    }
    lines.extend([
        format!("port={port}"),
        "bind-address=127.0.0.1".to_owned(),
        "mysqlx=OFF".to_owned(),
        "server-id=1".to_owned(),
        "gtid-mode=ON".to_owned(),
        "enforce-gtid-consistency=ON".to_owned(),
        "disable-log-bin=ON".to_owned(),
        "performance-schema=OFF".to_owned(),
        "innodb-buffer-pool-size=64M".to_owned(),
        "innodb-redo-log-capacity=64M".to_owned(),
        "innodb-doublewrite=OFF".to_owned(),
        "max-connections=16".to_owned(),
    ]);
    lines.push(String::new());
    lines.join("\n")
}

fn error_log_tail(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// Initialises and starts the server, then creates the load's account and empties its GTID
/// history (the load sets the dump's `GTID_PURGED`).
pub async fn start(config: &ScratchConfig) -> anyhow::Result<Scratch> {
    let dir = &config.dir;
    let socket = dir.join("mysqld.sock");
    if socket.as_os_str().len() > MAX_SOCKET_PATH {
        bail!(
            "the scratch folder {} is too deep for a unix socket ({} > {MAX_SOCKET_PATH} bytes); mount the scratch volume at a shorter path",
            dir.display(),
            socket.as_os_str().len()
        );
    }
    for sub in ["files", "tmp"] {
        std::fs::create_dir_all(dir.join(sub))
            .with_context(|| format!("cannot create {}", dir.join(sub).display()))?;
    }
    if dir.join("data").exists() {
        bail!(
            "the scratch folder {} already holds a data directory; the verification needs an empty volume",
            dir.display()
        );
    }
    let run_as_root = std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false);
    let port = free_port()?;
    let cnf = dir.join("my.cnf");
    std::fs::write(&cnf, render_config(config, port, run_as_root))
        .with_context(|| format!("cannot write {}", cnf.display()))?;
    let defaults = format!("--defaults-file={}", cnf.display());

    info!(dir = %dir.display(), "initialising the scratch server");
    let init = Command::new(&config.mysqld)
        .arg(&defaults)
        .arg("--initialize-insecure")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .status();
    let status = tokio::time::timeout(START_BOUND, init)
        .await
        .with_context(|| format!("mysqld --initialize-insecure took over {START_BOUND:?}"))?
        .with_context(|| {
            format!("cannot run {}; is BLOODRAVEN_MYSQLD right?", config.mysqld.display())
        })?;
    if !status.success() {
        bail!("mysqld --initialize-insecure failed ({status}): {}", error_log_tail(dir));
    }

    let mut child = Command::new(&config.mysqld)
        .arg(&defaults)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", config.mysqld.display()))?;
    let root = mysql_async::OptsBuilder::default()
        .socket(Some(socket.display().to_string()))
        .user(Some("root"));
    let deadline = tokio::time::Instant::now() + START_BOUND;
    let mut conn = loop {
        if let Some(status) = child.try_wait().context("cannot poll the scratch server")? {
            bail!("the scratch server exited at start-up ({status}): {}", error_log_tail(dir));
        }
        match mysql_async::Conn::new(root.clone()).await {
            Ok(conn) => break conn,
            Err(error) if tokio::time::Instant::now() >= deadline => {
                let _ = child.start_kill();
                bail!(
                    "the scratch server did not accept connections within {START_BOUND:?} ({error}): {}",
                    error_log_tail(dir)
                );
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    };
    let password = random_password()?;
    for statement in [
        format!("CREATE USER '{ACCOUNT}'@'127.0.0.1' IDENTIFIED BY '{password}'"),
        format!("GRANT ALL ON *.* TO '{ACCOUNT}'@'127.0.0.1'"),
        "RESET BINARY LOGS AND GTIDS".to_owned(),
    ] {
        let shown = statement.replace(&password, "***");
        conn.query_drop(&statement)
            .await
            .with_context(|| format!("the scratch server refused {shown}"))?;
    }
    let _ = conn.disconnect().await;
    info!(port, "the scratch server is up");
    Ok(Scratch {
        child,
        dir: dir.clone(),
        target: Target {
            host: "127.0.0.1".to_owned(),
            port,
            creds: MysqlCreds { user: ACCOUNT.to_owned(), password },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_listens_on_loopback_only_and_keeps_everything_in_the_folder() {
        let config = ScratchConfig {
            mysqld: "mysqld".into(),
            basedir: Some("/opt/mysql/usr".into()),
            lc_messages_dir: None,
            plugin_dir: None,
            dir: "/var/lib/mysql-verify".into(),
        };
        let text = render_config(&config, 3307, false);
        assert!(text.starts_with("[mysqld]\nbasedir=/opt/mysql/usr\n"), "{text}");
        assert!(text.contains("\ndatadir=/var/lib/mysql-verify/data\n"), "{text}");
        assert!(text.contains("\nbind-address=127.0.0.1\n"), "{text}");
        assert!(text.contains("\nport=3307\n"), "{text}");
        assert!(!text.contains("user=root"), "{text}");
        assert!(!text.contains("lc-messages-dir"), "{text}");
        assert!(render_config(&config, 3307, true).contains("\nuser=root\n"));
    }
}
