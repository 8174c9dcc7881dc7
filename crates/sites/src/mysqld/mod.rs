//! The real `mysqld` runner: one private instance per [`Instance`], copied from the shared
//! [`Template`], on 127.0.0.1.
//!
//! - [`dist`]: where the unpacked MySQL lives (`BLOODRAVEN_MYSQL*`).
//! - `config`: the generated `my.cnf`.
//! - [`query`]: what the server reports (flags, GTIDs, replica status) and replication set-up.

pub(crate) mod config;
pub mod dist;
pub mod query;

use std::fs::{self, File};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

use self::config::{ConfigInput, Layout, MAX_SOCKET_PATH};
pub use self::dist::MysqlDist;
pub use self::query::{ReplicaStatus, ServerFlags};
use crate::error::{Result, SitesError};
use crate::template::{self, Template, copy_tree, log_tail};

/// How an instance is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceSpec {
    /// A name for logs and error messages (the site name).
    pub name: String,
    /// `server-id`.
    pub server_id: u32,
    /// The TCP port on 127.0.0.1; `None` picks a free one (and another if it is taken by the
    /// time mysqld binds it).
    pub port: Option<u16>,
    /// The instance folder. `None`: a fresh temporary folder. `Some(dir)`: `dir/data` is reused
    /// when it exists (a PVC that survives restarts); otherwise the template is copied there.
    pub dir: Option<PathBuf>,
    /// Keep the folder when the [`Instance`] is dropped (the process is killed regardless).
    pub keep_on_drop: bool,
    /// Extra `[mysqld]` options, appended after the generated ones (so they win).
    pub extra_options: Vec<(String, String)>,
}

impl InstanceSpec {
    /// A spec with a free port, a temporary folder and no extra options.
    pub fn new(name: impl Into<String>, server_id: u32) -> Self {
        Self {
            name: name.into(),
            server_id,
            port: None,
            dir: None,
            keep_on_drop: false,
            extra_options: Vec::new(),
        }
    }
}

/// How [`Instance::stop`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopOutcome {
    /// mysqld exited after SIGTERM within the bound.
    Clean,
    /// mysqld did not exit in time and was SIGKILLed.
    Killed,
    /// It was not running.
    NotRunning,
}

/// One `mysqld` process and its folder. Dropping it SIGKILLs the process and removes the folder
/// (unless [`InstanceSpec::keep_on_drop`]).
#[derive(Debug)]
pub struct Instance {
    dist: MysqlDist,
    name: String,
    server_id: u32,
    port: u16,
    port_auto: bool,
    dir: PathBuf,
    remove_on_drop: bool,
    extra: Vec<(String, String)>,
    child: Option<Child>,
}

/// Attempts at a free port when the chosen one is taken between choosing and binding.
const PORT_ATTEMPTS: usize = 4;

fn free_port() -> Result<u16> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| SitesError::io("finding a free port", "127.0.0.1:0", e))?;
    let port =
        l.local_addr().map_err(|e| SitesError::io("finding a free port", "127.0.0.1:0", e))?.port();
    Ok(port)
}

impl Instance {
    /// Prepares an instance folder (copying the template unless `spec.dir/data` exists) and
    /// writes its `my.cnf`. Does not start it.
    pub async fn create(dist: &MysqlDist, template: &Template, spec: InstanceSpec) -> Result<Self> {
        let (dir, remove_on_drop) = match &spec.dir {
            Some(dir) => (dir.clone(), !spec.keep_on_drop),
            None => {
                let tmp = tempfile::Builder::new()
                    .prefix(&format!("brsite-{}-", spec.name))
                    .tempdir()
                    .map_err(|e| {
                        SitesError::io("creating an instance folder", std::env::temp_dir(), e)
                    })?;
                (tmp.keep(), !spec.keep_on_drop)
            }
        };
        let socket = Layout::socket(&dir);
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(SitesError::Invalid {
                what: "instance folder",
                detail: format!(
                    "{}: the socket path would be {} bytes, over the {MAX_SOCKET_PATH}-byte limit; \
                     use a shorter folder",
                    dir.display(),
                    socket.as_os_str().len()
                ),
            });
        }
        let (port, port_auto) = match spec.port {
            Some(p) => (p, false),
            None => (free_port()?, true),
        };
        let instance = Self {
            dist: dist.clone(),
            name: spec.name,
            server_id: spec.server_id,
            port,
            port_auto,
            dir,
            remove_on_drop,
            extra: spec.extra_options,
            child: None,
        };
        let data = instance.data_dir();
        let template_data = template.data_dir();
        let dir = instance.dir.clone();
        tokio::task::spawn_blocking(move || -> Result<()> {
            for sub in [Layout::files(&dir), Layout::tmp(&dir)] {
                fs::create_dir_all(&sub)
                    .map_err(|e| SitesError::io("creating a folder", &sub, e))?;
            }
            if !data.exists() {
                let staging = dir.join("data.copying");
                if staging.exists() {
                    fs::remove_dir_all(&staging)
                        .map_err(|e| SitesError::io("removing a partial copy", &staging, e))?;
                }
                copy_tree(&template_data, &staging)?;
                // The template has no auto.cnf; be sure, so each copy gets its own server_uuid.
                let _ = fs::remove_file(staging.join("auto.cnf"));
                fs::rename(&staging, &data)
                    .map_err(|e| SitesError::io("placing the data directory", &data, e))?;
            }
            Ok(())
        })
        .await
        .map_err(|e| SitesError::Invalid { what: "instance copy task", detail: e.to_string() })??;
        instance.write_config()?;
        Ok(instance)
    }

    fn write_config(&self) -> Result<()> {
        let text = config::render(&ConfigInput {
            basedir: self.dist.basedir.clone(),
            lc_messages_dir: self.dist.lc_messages_dir.clone(),
            plugin_dir: self.dist.plugin_dir.clone(),
            dir: self.dir.clone(),
            port: Some(self.port),
            server_id: self.server_id,
            log_bin: true,
            run_as_root: template::run_as_root(),
            extra: self.extra.clone(),
        });
        let path = self.config_path();
        fs::write(&path, text).map_err(|e| SitesError::io("writing my.cnf", &path, e))
    }

    /// Spawns mysqld (returns at once; see [`Instance::wait_ready`]). A running instance is left
    /// alone.
    pub fn start(&mut self) -> Result<()> {
        if self.is_running() {
            return Ok(());
        }
        for stale in [
            Layout::socket(&self.dir),
            self.dir.join("mysqld.sock.lock"),
            Layout::pid_file(&self.dir),
        ] {
            let _ = fs::remove_file(stale);
        }
        self.write_config()?;
        let out_path = Layout::stdout_log(&self.dir);
        let out = File::options()
            .create(true)
            .append(true)
            .open(&out_path)
            .map_err(|e| SitesError::io("opening the stdout log", &out_path, e))?;
        let err =
            out.try_clone().map_err(|e| SitesError::io("opening the stdout log", &out_path, e))?;
        let child = Command::new(&self.dist.mysqld)
            .arg(format!("--defaults-file={}", self.config_path().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| SitesError::io("spawning mysqld", &self.dist.mysqld, e))?;
        tracing::debug!(site = %self.name, pid = child.id(), port = self.port, "mysqld spawned");
        self.child = Some(child);
        Ok(())
    }

    /// Waits until mysqld answers `SELECT 1` as root over its unix socket, or fails when it
    /// exits or `timeout` passes (naming the last error and the error log's tail).
    pub async fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let started = Instant::now();
        let mut last = String::from("no attempt yet");
        loop {
            if let Some(status) = self.reap()? {
                return Err(SitesError::Exited {
                    name: self.name.clone(),
                    status,
                    log_tail: self.error_log_tail(30),
                });
            }
            if self.child.is_none() {
                return Err(SitesError::NotRunning { name: self.name.clone() });
            }
            if self.socket_path().exists() {
                match tokio::time::timeout(Duration::from_secs(3), self.ping()).await {
                    Ok(Ok(())) => return Ok(()),
                    Ok(Err(e)) => last = e.to_string(),
                    Err(_) => last = "a ping took over 3 s".into(),
                }
            }
            if started.elapsed() >= timeout {
                return Err(SitesError::Timeout {
                    what: format!("mysqld {} to accept connections", self.name),
                    waited_ms: started.elapsed().as_millis(),
                    detail: format!(
                        "; last error: {last}; error log tail:\n{}",
                        self.error_log_tail(20)
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn ping(&self) -> Result<()> {
        let mut conn = self.root_conn().await?;
        use mysql_async::prelude::Queryable as _;
        conn.query_drop("SELECT 1")
            .await
            .map_err(|e| SitesError::mysql("SELECT 1", &self.name, e))?;
        let _ = conn.disconnect().await;
        Ok(())
    }

    /// [`Instance::start`] then [`Instance::wait_ready`]; with an automatic port, a port taken
    /// meanwhile by someone else is replaced and the start retried.
    pub async fn start_and_wait(&mut self, timeout: Duration) -> Result<()> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            self.start()?;
            match self.wait_ready(timeout).await {
                Err(error) if attempt < PORT_ATTEMPTS && self.replace_port_if_taken(&error)? => {}
                other => return other,
            }
        }
    }

    /// After a failed start: when the port was chosen automatically and mysqld exited because
    /// someone else bound it between choosing and binding, chooses another free port (the next
    /// [`Instance::start`] uses it) and returns `true`. Any other failure returns `false`.
    pub fn replace_port_if_taken(&mut self, failure: &SitesError) -> Result<bool> {
        let SitesError::Exited { log_tail, .. } = failure else { return Ok(false) };
        if !self.port_auto
            || !(log_tail.contains("Address already in use")
                || log_tail.contains("already have another mysqld"))
        {
            return Ok(false);
        }
        let taken = self.port;
        self.port = free_port()?;
        tracing::info!(site = %self.name, taken, port = self.port, "port taken; choosing another");
        Ok(true)
    }

    /// Returns the exit status if the process has exited (and forgets it).
    fn reap(&mut self) -> Result<Option<String>> {
        let Some(child) = self.child.as_mut() else { return Ok(None) };
        match child.try_wait() {
            Ok(Some(status)) => {
                self.child = None;
                Ok(Some(status.to_string()))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(SitesError::io("checking on mysqld", &self.dir, e)),
        }
    }

    /// Whether the process is alive (a frozen process is alive).
    pub fn is_running(&mut self) -> bool {
        matches!(self.reap(), Ok(None)) && self.child.is_some()
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn signal(&self, signal: Signal, label: &'static str) -> Result<()> {
        let Some(pid) = self.pid() else {
            return Err(SitesError::NotRunning { name: self.name.clone() });
        };
        let raw = i32::try_from(pid)
            .ok()
            .and_then(Pid::from_raw)
            .ok_or_else(|| SitesError::Invalid { what: "process id", detail: pid.to_string() })?;
        kill_process(raw, signal).map_err(|e| SitesError::Signal {
            name: self.name.clone(),
            signal: label,
            pid,
            source: e.into(),
        })
    }

    async fn wait_exit(&mut self, timeout: Duration) -> Result<bool> {
        let started = Instant::now();
        loop {
            if self.reap()?.is_some() || self.child.is_none() {
                return Ok(true);
            }
            if started.elapsed() >= timeout {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Clean stop: SIGCONT (in case it is frozen) and SIGTERM, then SIGKILL if it has not exited
    /// within `timeout`.
    pub async fn stop(&mut self, timeout: Duration) -> Result<StopOutcome> {
        if !self.is_running() {
            return Ok(StopOutcome::NotRunning);
        }
        let _ = self.signal(Signal::CONT, "SIGCONT");
        self.signal(Signal::TERM, "SIGTERM")?;
        if self.wait_exit(timeout).await? {
            return Ok(StopOutcome::Clean);
        }
        tracing::warn!(site = %self.name, timeout_ms = timeout.as_millis(), "mysqld ignored SIGTERM; killing");
        self.kill().await?;
        Ok(StopOutcome::Killed)
    }

    /// SIGKILL (the crash drill) and reap.
    pub async fn kill(&mut self) -> Result<()> {
        if !self.is_running() {
            return Ok(());
        }
        self.signal(Signal::KILL, "SIGKILL")?;
        if self.wait_exit(Duration::from_secs(30)).await? {
            Ok(())
        } else {
            Err(SitesError::Timeout {
                what: format!("mysqld {} to die after SIGKILL", self.name),
                waited_ms: 30_000,
                detail: String::new(),
            })
        }
    }

    /// SIGSTOP: the hung server (connections are accepted by the kernel, never answered).
    pub fn freeze(&self) -> Result<()> {
        self.signal(Signal::STOP, "SIGSTOP")
    }

    /// SIGCONT: resume a frozen server.
    pub fn thaw(&self) -> Result<()> {
        self.signal(Signal::CONT, "SIGCONT")
    }

    /// Clean stop, then start on the same data directory and wait until ready.
    pub async fn restart(&mut self, timeout: Duration) -> Result<()> {
        self.stop(timeout).await?;
        self.start_and_wait(timeout).await
    }

    /// The instance name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// `server-id`.
    pub fn server_id(&self) -> u32 {
        self.server_id
    }
    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }
    /// `127.0.0.1:<port>`, the server itself (tests usually go through a proxy link instead).
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }
    /// The unix socket.
    pub fn socket_path(&self) -> PathBuf {
        Layout::socket(&self.dir)
    }
    /// The instance folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The data directory (binlogs live here as `binlog.NNNNNN`).
    pub fn data_dir(&self) -> PathBuf {
        Layout::data(&self.dir)
    }
    /// The generated `my.cnf`.
    pub fn config_path(&self) -> PathBuf {
        Layout::config(&self.dir)
    }
    /// The error log (kept for the test report).
    pub fn error_log_path(&self) -> PathBuf {
        Layout::error_log(&self.dir)
    }
    /// The last `lines` lines of the error log, for a test failure message.
    pub fn error_log_tail(&self, lines: usize) -> String {
        log_tail(&self.error_log_path(), lines)
    }

    /// A connection as root over the unix socket (no password; never through a proxy).
    pub async fn root_conn(&self) -> Result<mysql_async::Conn> {
        let opts = mysql_async::OptsBuilder::default()
            .socket(Some(self.socket_path().to_string_lossy().into_owned()))
            .user(Some("root"))
            .pass(None::<String>);
        mysql_async::Conn::new(opts)
            .await
            .map_err(|e| SitesError::mysql("connecting as root over the socket", &self.name, e))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if self.remove_on_drop {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}
