//! The template data directory: initialised once (`--initialize-insecure`), accounts created,
//! then copied per instance. Shared across tests and test processes (nextest runs each test in
//! its own process): it lives under `target/sites-template/<version>-r<revision>`, built under
//! an exclusive `flock` into a staging folder and renamed into place when complete.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, flock};

use crate::accounts;
use crate::error::{Result, SitesError};
use crate::mysqld::MysqlDist;
use crate::mysqld::config::{self, ConfigInput, Layout};

/// Bump when the template's contents change (accounts, grants, schema, init options), so an
/// old cached template is not reused.
pub const TEMPLATE_REVISION: u32 = 1;

/// How long the whole build may take (initialise, start, create accounts, clean shutdown).
const BUILD_TIMEOUT: Duration = Duration::from_secs(240);
/// How long another process may hold the build lock before we give up.
const LOCK_TIMEOUT: Duration = Duration::from_secs(300);

/// A built template: `dir/data` is the data directory to copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The template folder (`<root>/<version>-r<revision>`).
    pub dir: PathBuf,
}

impl Template {
    /// The data directory to copy.
    pub fn data_dir(&self) -> PathBuf {
        Layout::data(&self.dir)
    }
}

/// Where templates are cached: `$BLOODRAVEN_SITES_TEMPLATE_ROOT`, else
/// `$CARGO_TARGET_DIR/sites-template`, else the workspace's `target/sites-template`.
pub fn template_root() -> PathBuf {
    if let Some(root) = std::env::var_os("BLOODRAVEN_SITES_TEMPLATE_ROOT") {
        return PathBuf::from(root);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("sites-template");
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/sites-template")
}

/// Returns the template for `dist`, building it first if no process has yet (blocking; use
/// [`ensure_template_async`] from async code).
pub fn ensure_template(dist: &MysqlDist) -> Result<Template> {
    let root = template_root();
    fs::create_dir_all(&root)
        .map_err(|e| SitesError::io("creating the template root", &root, e))?;
    let root =
        root.canonicalize().map_err(|e| SitesError::io("resolving the template root", &root, e))?;
    let name = format!("{}-r{TEMPLATE_REVISION}", dist.version()?);
    let dir = root.join(&name);
    let ready = dir.join("READY");
    if ready.exists() {
        return Ok(Template { dir });
    }
    let lock_path = root.join(format!("{name}.lock"));
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| SitesError::io("opening the template lock", &lock_path, e))?;
    let started = Instant::now();
    loop {
        match flock(&lock, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => break,
            Err(rustix::io::Errno::WOULDBLOCK) if started.elapsed() < LOCK_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(SitesError::Timeout {
                    what: format!("the template build lock {}", lock_path.display()),
                    waited_ms: started.elapsed().as_millis(),
                    detail: ": another process is building it; if none is, delete the lock file"
                        .into(),
                });
            }
            Err(e) => return Err(SitesError::io("locking the template", &lock_path, e.into())),
        }
    }
    // Someone else may have finished while we waited.
    if ready.exists() {
        return Ok(Template { dir });
    }
    let staging = root.join(format!("{name}.staging"));
    if staging.exists() {
        fs::remove_dir_all(&staging)
            .map_err(|e| SitesError::io("removing a stale template staging folder", &staging, e))?;
    }
    if dir.exists() {
        fs::remove_dir_all(&dir)
            .map_err(|e| SitesError::io("removing an unfinished template", &dir, e))?;
    }
    let built = build(dist, &staging);
    if let Err(e) = built {
        let _ = fs::remove_dir_all(&staging);
        return Err(e);
    }
    fs::write(staging.join("READY"), format!("{name}\n"))
        .map_err(|e| SitesError::io("marking the template ready", &staging, e))?;
    fs::rename(&staging, &dir).map_err(|e| SitesError::io("publishing the template", &dir, e))?;
    tracing::info!(template = %dir.display(), elapsed_ms = started.elapsed().as_millis(), "built mysqld template");
    Ok(Template { dir })
}

/// [`ensure_template`] on a blocking thread.
pub async fn ensure_template_async(dist: &MysqlDist) -> Result<Template> {
    let dist = dist.clone();
    tokio::task::spawn_blocking(move || ensure_template(&dist))
        .await
        .map_err(|e| SitesError::Invalid { what: "template build task", detail: e.to_string() })?
}

/// Kills the child on drop unless it was reaped.
struct ChildGuard(Option<Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub(crate) fn run_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn wait_child(child: &mut Child, deadline: Instant, what: &str, dir: &Path) -> Result<()> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                return Err(SitesError::Program {
                    program: what.to_owned(),
                    status: status.to_string(),
                    detail: log_tail(&Layout::error_log(dir), 30),
                });
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                return Err(SitesError::Timeout {
                    what: what.to_owned(),
                    waited_ms: BUILD_TIMEOUT.as_millis(),
                    detail: format!("; error log tail:\n{}", log_tail(&Layout::error_log(dir), 30)),
                });
            }
            Err(e) => return Err(SitesError::io("waiting for a child", dir, e)),
        }
    }
}

fn build(dist: &MysqlDist, staging: &Path) -> Result<()> {
    let deadline = Instant::now() + BUILD_TIMEOUT;
    for sub in [staging.to_path_buf(), Layout::files(staging), Layout::tmp(staging)] {
        fs::create_dir_all(&sub)
            .map_err(|e| SitesError::io("creating the staging folder", &sub, e))?;
    }
    let cnf = Layout::config(staging);
    let text = config::render(&ConfigInput {
        basedir: dist.basedir.clone(),
        lc_messages_dir: dist.lc_messages_dir.clone(),
        plugin_dir: dist.plugin_dir.clone(),
        dir: staging.to_path_buf(),
        port: None,
        server_id: 1,
        log_bin: false,
        run_as_root: run_as_root(),
        extra: Vec::new(),
    });
    fs::write(&cnf, text).map_err(|e| SitesError::io("writing the template my.cnf", &cnf, e))?;
    let stdout = || -> Result<Stdio> {
        let path = Layout::stdout_log(staging);
        let f = File::options()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| SitesError::io("opening the stdout log", &path, e))?;
        Ok(Stdio::from(f))
    };

    // 1. Initialise.
    let mut init = ChildGuard(Some(
        Command::new(&dist.mysqld)
            .arg(format!("--defaults-file={}", cnf.display()))
            .arg("--initialize-insecure")
            .stdin(Stdio::null())
            .stdout(stdout()?)
            .stderr(stdout()?)
            .spawn()
            .map_err(|e| {
                SitesError::io("spawning mysqld --initialize-insecure", &dist.mysqld, e)
            })?,
    ));
    if let Some(child) = init.0.as_mut() {
        wait_child(child, deadline, "mysqld --initialize-insecure", staging)?;
    }
    init.0 = None;

    // 2. Start it (socket only) and create the accounts.
    let mut server = ChildGuard(Some(
        Command::new(&dist.mysqld)
            .arg(format!("--defaults-file={}", cnf.display()))
            .stdin(Stdio::null())
            .stdout(stdout()?)
            .stderr(stdout()?)
            .spawn()
            .map_err(|e| SitesError::io("spawning the template mysqld", &dist.mysqld, e))?,
    ));
    let socket = Layout::socket(staging);
    let mut last = String::new();
    loop {
        if let Some(child) = server.0.as_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            server.0 = None;
            return Err(SitesError::Exited {
                name: "template".into(),
                status: status.to_string(),
                log_tail: log_tail(&Layout::error_log(staging), 30),
            });
        }
        if socket.exists() {
            match run_sql(dist, &socket, "SELECT 1") {
                Ok(()) => break,
                Err(e) => last = e.to_string(),
            }
        }
        if Instant::now() >= deadline {
            return Err(SitesError::Timeout {
                what: "the template mysqld to accept socket connections".into(),
                waited_ms: BUILD_TIMEOUT.as_millis(),
                detail: format!("; last error: {last}"),
            });
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    run_sql(dist, &socket, &accounts::template_sql())?;

    // 3. Clean shutdown, so the copies start without crash recovery.
    run_sql(dist, &socket, "SHUTDOWN")?;
    if let Some(child) = server.0.as_mut() {
        wait_child(child, deadline, "the template mysqld to shut down", staging)?;
    }
    server.0 = None;

    // 4. Copies must get their own server_uuid.
    let auto_cnf = Layout::data(staging).join("auto.cnf");
    if auto_cnf.exists() {
        fs::remove_file(&auto_cnf)
            .map_err(|e| SitesError::io("removing auto.cnf", &auto_cnf, e))?;
    }
    Ok(())
}

/// Runs SQL through the `mysql` client as root over the unix socket.
fn run_sql(dist: &MysqlDist, socket: &Path, sql: &str) -> Result<()> {
    let mut child = Command::new(&dist.mysql)
        .arg("--no-defaults")
        .arg("--user=root")
        .arg(format!("--socket={}", socket.display()))
        .arg("--batch")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| SitesError::io("spawning the mysql client", &dist.mysql, e))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(sql.as_bytes())
            .map_err(|e| SitesError::io("feeding SQL to the mysql client", &dist.mysql, e))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| SitesError::io("running the mysql client", &dist.mysql, e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(SitesError::Program {
            program: format!("mysql client ({})", sql.lines().next().unwrap_or_default()),
            status: out.status.to_string(),
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

/// The last `lines` lines of a log file (or why it could not be read).
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// Copies a folder tree (regular files and folders only).
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).map_err(|e| SitesError::io("creating a folder", to, e))?;
    let entries = fs::read_dir(from).map_err(|e| SitesError::io("listing a folder", from, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| SitesError::io("listing a folder", from, e))?;
        let kind = entry
            .file_type()
            .map_err(|e| SitesError::io("reading a file type", entry.path(), e))?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            fs::copy(entry.path(), &target)
                .map_err(|e| SitesError::io("copying a file", entry.path(), e))?;
        }
    }
    Ok(())
}
