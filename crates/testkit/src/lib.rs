//! Test support shared by the workspace's integration tests (dev-dependency only).
//!
//! [`MariaDb`] starts a throwaway `mariadbd` on 127.0.0.1 on a free port, in a
//! temporary directory, with the binary log on (ROW format, GTID strict mode,
//! CRC32 checksums). It runs SQL through the `mariadb` client binary, waits for
//! everything with a deadline, and is killed and deleted on drop.
//!
//! Programs come from `BLOODRAVEN_MARIADBD`, `BLOODRAVEN_MARIADB_INSTALL_DB`,
//! `BLOODRAVEN_MARIADB_CLIENT` and `BLOODRAVEN_MARIADB_BINLOG` (exported by
//! `scripts/test.sh`), falling back to `PATH`. A missing program is an error that
//! names `scripts/test.sh`: tests fail, never skip.

use std::fmt::Write as _;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Everything that can go wrong while running a test server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{program} not found (set {env_var} or put it on PATH); run the tests through scripts/test.sh, which installs and exports it"
    )]
    ProgramMissing { program: &'static str, env_var: &'static str },
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{what} did not finish within {timeout:?}")]
    Timeout { what: String, timeout: Duration },
    #[error("{what} failed ({status}): {stderr}")]
    CommandFailed { what: String, status: String, stderr: String },
    #[error("mariadbd did not accept connections within {timeout:?}; error log tail:\n{log}")]
    NotReady { timeout: Duration, log: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

fn io_error(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// Looks a program up: the environment variable first, then each name on `PATH`.
pub fn program(env_var: &'static str, names: &[&'static str]) -> Result<PathBuf> {
    if let Some(value) = std::env::var_os(env_var).filter(|value| !value.is_empty()) {
        let path = PathBuf::from(value);
        if path.is_file() {
            return Ok(path);
        }
    }
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    for name in names {
        for dir in std::env::split_paths(&path_var) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(Error::ProgramMissing { program: names.first().copied().unwrap_or("program"), env_var })
}

/// `mariadb-binlog` (or `mysqlbinlog`): MariaDB's binlog dumper.
pub fn mariadb_binlog() -> Result<PathBuf> {
    program("BLOODRAVEN_MARIADB_BINLOG", &["mariadb-binlog", "mysqlbinlog"])
}

/// The `mariadb` command-line client.
pub fn mariadb_client() -> Result<PathBuf> {
    program("BLOODRAVEN_MARIADB_CLIENT", &["mariadb", "mysql"])
}

/// Runs `command` to completion within `timeout`, killing it on expiry.
pub fn run_bounded(command: &mut Command, what: &str, timeout: Duration) -> Result<Output> {
    run_bounded_with_stdin(command, Stdio::null(), what, timeout)
}

/// [`run_bounded`] with `stdin` as the child's standard input.
fn run_bounded_with_stdin(
    command: &mut Command,
    stdin: Stdio,
    what: &str,
    timeout: Duration,
) -> Result<Output> {
    let mut child = command
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io_error(format!("starting {what}")))?;
    // Drain the pipes on threads so a chatty child cannot block on a full pipe.
    let stdout = child.stdout.take().map(|mut pipe| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    });
    let stderr = child.stderr.take().map(|mut pipe| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(io_error(format!("waiting for {what}")))? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Timeout { what: what.to_owned(), timeout });
        }
        thread::sleep(Duration::from_millis(10));
    };
    let stdout = stdout.and_then(|handle| handle.join().ok()).unwrap_or_default();
    let stderr = stderr.and_then(|handle| handle.join().ok()).unwrap_or_default();
    Ok(Output { status, stdout, stderr })
}

/// Runs `command` within `timeout` and returns its stdout; a non-zero exit is an error.
pub fn run_checked(command: &mut Command, what: &str, timeout: Duration) -> Result<Vec<u8>> {
    successful(run_bounded(command, what, timeout)?, what)
}

/// The stdout of a finished command, or its failure.
fn successful(output: Output, what: &str) -> Result<Vec<u8>> {
    if !output.status.success() {
        return Err(Error::CommandFailed {
            what: what.to_owned(),
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(output.stdout)
}

/// Settings for [`MariaDb::start_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MariaDbOptions {
    pub server_id: u32,
    pub gtid_domain_id: u32,
    /// Extra `[mysqld]` lines appended to the generated config.
    pub extra_config: Vec<String>,
    /// How long to wait for the server to accept connections.
    pub start_timeout: Duration,
}

impl Default for MariaDbOptions {
    fn default() -> Self {
        MariaDbOptions {
            server_id: 1,
            gtid_domain_id: 0,
            extra_config: Vec::new(),
            start_timeout: Duration::from_secs(60),
        }
    }
}

/// A running throwaway MariaDB server. Dropping it kills the server and deletes its files.
#[derive(Debug)]
pub struct MariaDb {
    child: Option<Child>,
    port: u16,
    client: PathBuf,
    dir: tempfile::TempDir,
}

/// Timeout for one client invocation.
const SQL_TIMEOUT: Duration = Duration::from_secs(120);

impl MariaDb {
    /// Starts a server with [`MariaDbOptions::default`].
    pub fn start() -> Result<MariaDb> {
        MariaDb::start_with(&MariaDbOptions::default())
    }

    /// Starts a server: initializes a data directory, picks a free port, waits until
    /// the server accepts connections.
    pub fn start_with(options: &MariaDbOptions) -> Result<MariaDb> {
        let mariadbd = program("BLOODRAVEN_MARIADBD", &["mariadbd", "mysqld"])?;
        let install_db =
            program("BLOODRAVEN_MARIADB_INSTALL_DB", &["mariadb-install-db", "mysql_install_db"])?;
        let client = mariadb_client()?;
        // Another process may take the port between probing and binding; retry then.
        let mut attempt = 1;
        loop {
            let dir = tempfile::Builder::new()
                .prefix("bloodraven-mariadb-")
                .tempdir()
                .map_err(io_error("creating the server directory"))?;
            let root = dir.path();
            for sub in ["data", "binlog", "tmp"] {
                std::fs::create_dir_all(root.join(sub))
                    .map_err(io_error(format!("creating {sub}")))?;
            }
            let port = free_port()?;
            write_config(root, port, options)?;
            let config = root.join("my.cnf");
            let install = run_bounded(
                Command::new(&install_db)
                    .arg(format!("--defaults-file={}", config.display()))
                    .arg("--auth-root-authentication-method=normal")
                    .arg("--skip-test-db"),
                "mariadb-install-db",
                Duration::from_secs(120),
            )?;
            if !install.status.success() {
                // The bootstrap server logs to error.log, not to stderr: report both.
                return Err(Error::CommandFailed {
                    what: "mariadb-install-db".to_owned(),
                    status: install.status.to_string(),
                    stderr: format!(
                        "{}{}\nerror log tail:\n{}",
                        String::from_utf8_lossy(&install.stdout),
                        String::from_utf8_lossy(&install.stderr),
                        log_tail(&root.join("error.log")),
                    ),
                });
            }
            let stdout = std::fs::File::create(root.join("stdout.log"))
                .map_err(io_error("creating stdout.log"))?;
            let stderr = stdout.try_clone().map_err(io_error("opening stdout.log"))?;
            let child = Command::new(&mariadbd)
                .arg(format!("--defaults-file={}", config.display()))
                .stdin(Stdio::null())
                .stdout(stdout)
                .stderr(stderr)
                .spawn()
                .map_err(io_error("starting mariadbd"))?;
            let mut server = MariaDb { child: Some(child), port, client: client.clone(), dir };
            match server.wait_ready(options.start_timeout) {
                Ok(()) => return Ok(server),
                Err(err) => {
                    let port_taken = server.error_log_tail().contains("Address already in use");
                    drop(server);
                    if !port_taken || attempt == 3 {
                        return Err(err);
                    }
                    attempt += 1;
                }
            }
        }
    }

    fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(Error::NotReady {
                    timeout,
                    log: format!("mariadbd exited ({status})\n{}", self.error_log_tail()),
                });
            }
            if self.socket().exists() {
                let probe = run_bounded(
                    self.client_command().arg("-e").arg("SELECT 1"),
                    "mariadb ping",
                    Duration::from_secs(10),
                );
                if matches!(probe, Ok(output) if output.status.success()) {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(Error::NotReady { timeout, log: self.error_log_tail() });
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// The last 40 lines of the server's error log.
    pub fn error_log_tail(&self) -> String {
        log_tail(&self.dir.path().join("error.log"))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The Unix socket the client uses.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("mysqld.sock")
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Directory of the binary logs (`mysql-bin.NNNNNN`, `mysql-bin.index`).
    pub fn binlog_dir(&self) -> PathBuf {
        self.dir.path().join("binlog")
    }

    fn client_command(&self) -> Command {
        let mut command = Command::new(&self.client);
        command
            .arg("--no-defaults")
            .arg(format!("--socket={}", self.socket().display()))
            .arg("--user=root")
            .arg("--batch")
            .arg("--skip-column-names");
        command
    }

    /// Runs SQL (one or more `;`-separated statements) as root; returns the
    /// tab-separated result rows without column names.
    pub fn sql(&self, sql: &str) -> Result<String> {
        let stdout = run_checked(
            self.client_command().arg("-e").arg(sql),
            &format!("mariadb -e {:?}", truncate(sql, 80)),
            SQL_TIMEOUT,
        )?;
        Ok(String::from_utf8_lossy(&stdout).into_owned())
    }

    /// Runs SQL read from a file (for scripts too long for the command line).
    pub fn sql_file(&self, path: &Path) -> Result<String> {
        let file =
            std::fs::File::open(path).map_err(io_error(format!("opening {}", path.display())))?;
        let what = format!("mariadb < {}", path.display());
        let output = run_bounded_with_stdin(
            &mut self.client_command(),
            Stdio::from(file),
            &what,
            SQL_TIMEOUT * 5,
        )?;
        Ok(String::from_utf8_lossy(&successful(output, &what)?).into_owned())
    }

    /// The binary log files in order (`SHOW BINARY LOGS`), as paths.
    pub fn binlog_files(&self) -> Result<Vec<PathBuf>> {
        let rows = self.sql("SHOW BINARY LOGS")?;
        Ok(rows
            .lines()
            .filter_map(|line| line.split('\t').next())
            .filter(|name| !name.is_empty())
            .map(|name| self.binlog_dir().join(name))
            .collect())
    }

    /// `FLUSH BINARY LOGS`: seals the current file (it ends with ROTATE) and opens the next.
    pub fn flush_binary_logs(&self) -> Result<()> {
        self.sql("FLUSH BINARY LOGS").map(drop)
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server cleanly (SIGTERM, at most `timeout`, then SIGKILL); the
    /// current binlog then ends with a STOP event. Files stay until drop.
    pub fn shutdown(&mut self, timeout: Duration) -> Result<()> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        let pid = child.id().to_string();
        let term = run_bounded(
            Command::new("kill").args(["-TERM", &pid]),
            "kill -TERM",
            Duration::from_secs(10),
        );
        let deadline = Instant::now() + timeout;
        loop {
            if child.try_wait().map_err(io_error("waiting for mariadbd"))?.is_some() {
                return term.map(drop);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Timeout { what: "mariadbd shutdown".to_owned(), timeout });
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        self.kill();
    }
}

fn truncate(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The last 40 lines of a log file (empty when it cannot be read).
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io_error("probing a free port"))?;
    let port = listener.local_addr().map_err(io_error("probing a free port"))?.port();
    Ok(port)
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("Uid:")
                    .and_then(|ids| ids.split_whitespace().next().map(|id| id == "0"))
            })
        })
        .unwrap_or(false)
}

fn write_config(root: &Path, port: u16, options: &MariaDbOptions) -> Result<()> {
    let mut config = String::from("[mysqld]\n");
    if running_as_root() {
        config.push_str("user=root\n");
    }
    let path = |name: &str| root.join(name).display().to_string();
    let _ = writeln!(config, "datadir={}", path("data"));
    let _ = writeln!(config, "socket={}", path("mysqld.sock"));
    let _ = writeln!(config, "pid-file={}", path("mysqld.pid"));
    // A private tmpdir: servers sharing /tmp can collide on temporary-table file
    // names (`#sql-temptable-<pid>-...`), which failed mariadb-install-db in parallel tests.
    let _ = writeln!(config, "tmpdir={}", path("tmp"));
    let _ = writeln!(config, "port={port}");
    config.push_str("bind-address=127.0.0.1\n");
    let _ = writeln!(config, "log_bin={}", path("binlog/mysql-bin"));
    config.push_str("binlog_format=ROW\nbinlog_checksum=CRC32\n");
    let _ = writeln!(config, "server_id={}", options.server_id);
    config.push_str("gtid_strict_mode=ON\n");
    let _ = writeln!(config, "gtid_domain_id={}", options.gtid_domain_id);
    config.push_str("log_slave_updates=ON\nskip-name-resolve\n");
    config.push_str("innodb_buffer_pool_size=64M\ninnodb_log_file_size=16M\n");
    let _ = writeln!(config, "log_error={}", path("error.log"));
    for line in &options.extra_config {
        config.push_str(line);
        config.push('\n');
    }
    std::fs::write(root.join("my.cnf"), config).map_err(io_error("writing my.cnf"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_names_the_test_script() {
        let err =
            program("BLOODRAVEN_TESTKIT_NO_SUCH_VAR", &["bloodraven-no-such-program"]).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("scripts/test.sh"), "{message}");
        assert!(message.contains("BLOODRAVEN_TESTKIT_NO_SUCH_VAR"), "{message}");
    }

    #[test]
    fn commands_are_bounded_in_time() {
        let started = Instant::now();
        let err = run_bounded(Command::new("sleep").arg("30"), "sleep", Duration::from_millis(200))
            .unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let out =
            run_checked(Command::new("echo").arg("hi"), "echo", Duration::from_secs(10)).unwrap();
        assert_eq!(out, b"hi\n");
        let err =
            run_checked(&mut Command::new("false"), "false", Duration::from_secs(10)).unwrap_err();
        assert!(matches!(err, Error::CommandFailed { .. }), "{err}");
    }

    #[test]
    fn a_server_starts_runs_sql_and_is_removed_on_drop() {
        let server = MariaDb::start().unwrap();
        assert_eq!(server.sql("SELECT 1 + 1").unwrap(), "2\n");
        // Parallel servers must not share temporary files.
        let tmpdir = server.sql("SELECT @@tmpdir").unwrap();
        assert_eq!(PathBuf::from(tmpdir.trim_end()), server.dir.path().join("tmp"));
        let script = server.data_dir().join("script.sql");
        std::fs::write(&script, "SELECT 2 + 2;\nSELECT 'from a file';\n").unwrap();
        assert_eq!(server.sql_file(&script).unwrap(), "4\nfrom a file\n");
        std::fs::write(&script, "SELECT no_such_column;\n").unwrap();
        let err = server.sql_file(&script).unwrap_err();
        assert!(matches!(err, Error::CommandFailed { .. }), "{err}");
        assert!(err.to_string().contains("script.sql"), "{err}");
        let dir = server.binlog_dir();
        assert!(server.binlog_files().unwrap()[0].starts_with(&dir));
        let socket = server.socket();
        drop(server);
        assert!(!socket.exists());
        assert!(!dir.exists());
    }
}
