//! Where the unpacked MySQL 9.7 lives (`scripts/provision.sh` exports it).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Result, SitesError};

/// The MySQL programs and folders exported by `scripts/provision.sh`.
///
/// The program paths are wrapper scripts that `exec` the unpacked loader, so the PID of a
/// spawned `mysqld` is mysqld's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlDist {
    /// `BLOODRAVEN_MYSQLD`.
    pub mysqld: PathBuf,
    /// `BLOODRAVEN_MYSQL` (the command-line client).
    pub mysql: PathBuf,
    /// `BLOODRAVEN_MYSQLBINLOG`.
    pub mysqlbinlog: PathBuf,
    /// `BLOODRAVEN_MYSQLADMIN`.
    pub mysqladmin: PathBuf,
    /// `BLOODRAVEN_MYSQL_BASEDIR` (`--basedir`).
    pub basedir: PathBuf,
    /// `BLOODRAVEN_MYSQL_LC_MESSAGES_DIR` (`--lc-messages-dir`).
    pub lc_messages_dir: PathBuf,
    /// `BLOODRAVEN_MYSQL_PLUGIN_DIR` (`--plugin-dir`).
    pub plugin_dir: PathBuf,
}

fn var(name: &'static str) -> Result<PathBuf> {
    match std::env::var_os(name) {
        Some(v) if !v.is_empty() => {
            let path = PathBuf::from(v);
            if path.exists() { Ok(path) } else { Err(SitesError::MissingPath { var: name, path }) }
        }
        _ => Err(SitesError::NotProvisioned { var: name }),
    }
}

impl MysqlDist {
    /// Reads the `BLOODRAVEN_MYSQL*` variables. Fails naming `scripts/provision.sh` when one is
    /// unset or names a missing path.
    pub fn from_env() -> Result<Self> {
        Ok(Self {
            mysqld: var("BLOODRAVEN_MYSQLD")?,
            mysql: var("BLOODRAVEN_MYSQL")?,
            mysqlbinlog: var("BLOODRAVEN_MYSQLBINLOG")?,
            mysqladmin: var("BLOODRAVEN_MYSQLADMIN")?,
            basedir: var("BLOODRAVEN_MYSQL_BASEDIR")?,
            lc_messages_dir: var("BLOODRAVEN_MYSQL_LC_MESSAGES_DIR")?,
            plugin_dir: var("BLOODRAVEN_MYSQL_PLUGIN_DIR")?,
        })
    }

    /// The server version, from `mysqld --version` (e.g. `9.7.4-2`).
    pub fn version(&self) -> Result<String> {
        let out = Command::new(&self.mysqld)
            .arg("--version")
            .output()
            .map_err(|e| SitesError::io("running mysqld --version", &self.mysqld, e))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        parse_version(&text).map(str::to_owned).ok_or_else(|| SitesError::Program {
            program: format!("{} --version", self.mysqld.display()),
            status: out.status.to_string(),
            detail: format!("no `Ver <version>` in {text:?}"),
        })
    }

    /// The folder of the server's shared files (`lc-messages-dir`'s parent is not always it).
    pub fn basedir(&self) -> &Path {
        &self.basedir
    }
}

/// `mysqld  Ver 9.7.4-2 for Linux on x86_64 ((Debian))` → `9.7.4-2`.
pub(crate) fn parse_version(text: &str) -> Option<&str> {
    let mut words = text.split_whitespace();
    words.find(|w| *w == "Ver")?;
    words.next().filter(|v| v.chars().next().is_some_and(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_the_word_after_ver() {
        assert_eq!(
            parse_version("/x/mysqld  Ver 9.7.4-2 for Linux on x86_64 ((Debian))\n"),
            Some("9.7.4-2")
        );
        assert_eq!(parse_version("mysqld Ver"), None);
        assert_eq!(parse_version("nothing here"), None);
    }
}
