//! The MySQL client tools' option file (so no password is on a command line) and the step's
//! own connection.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;

use anyhow::Context as _;

use super::creds::MysqlCreds;

/// Where a step reaches its server.
#[derive(Debug, Clone)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub creds: MysqlCreds,
}

impl Target {
    /// mysql_async options for the step's own queries.
    pub fn opts(&self) -> mysql_async::Opts {
        mysql_async::OptsBuilder::default()
            .ip_or_hostname(self.host.clone())
            .tcp_port(self.port)
            .user(Some(self.creds.user.clone()))
            .pass(Some(self.creds.password.clone()))
            .prefer_socket(false)
            .into()
    }

    /// Writes a `[client]` option file (mode 0600) into a fresh temporary directory; the
    /// directory goes when the returned guard drops.
    pub fn option_file(&self) -> anyhow::Result<OptionFile> {
        let dir = tempfile::Builder::new().prefix("bloodraven-client-").tempdir().context(
            "cannot create a temporary directory for the MySQL option file; is /tmp writable?",
        )?;
        let path = dir.path().join("client.cnf");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        // Option-file values are quoted; backslash and quote are escaped.
        let escape =
            |value: &str| value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
        writeln!(
            file,
            "[client]\nuser=\"{}\"\npassword=\"{}\"\nhost=\"{}\"\nport={}\nprotocol=TCP",
            escape(&self.creds.user),
            escape(&self.creds.password),
            escape(&self.host),
            self.port
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(OptionFile { _dir: dir, path })
    }
}

/// A written option file; pass `--defaults-extra-file=<path>` first on the tool's command line.
#[derive(Debug)]
pub struct OptionFile {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl OptionFile {
    /// The tool's first argument.
    pub fn arg(&self) -> String {
        format!("--defaults-extra-file={}", self.path.display())
    }
}
