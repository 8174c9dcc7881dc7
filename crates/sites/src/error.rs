//! The error type of the runner, the group harness and the workload.

use std::path::PathBuf;

/// What went wrong in the lab's MySQL world. Messages say what failed and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SitesError {
    /// A `BLOODRAVEN_MYSQL*` variable is missing.
    #[error(
        "{var} is not set: MySQL 9.7 is not provisioned; run `source scripts/provision.sh` \
         (it fetches and unpacks MySQL and exports BLOODRAVEN_MYSQL*)"
    )]
    NotProvisioned {
        /// The missing environment variable.
        var: &'static str,
    },
    /// A path a `BLOODRAVEN_MYSQL*` variable names does not exist.
    #[error("{var}={path} does not exist; re-run `source scripts/provision.sh`")]
    MissingPath {
        /// The variable.
        var: &'static str,
        /// Its value.
        path: PathBuf,
    },
    /// A filesystem operation failed.
    #[error("{what} ({path}): {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A helper program (mysqld --initialize, mysql) failed.
    #[error("{program} failed ({status}): {detail}")]
    Program {
        /// The program and its purpose.
        program: String,
        /// Its exit status.
        status: String,
        /// Its output or the tail of the error log.
        detail: String,
    },
    /// mysqld exited while we waited for it.
    #[error("mysqld {name} exited ({status}) before it was ready; error log tail:\n{log_tail}")]
    Exited {
        /// The instance name.
        name: String,
        /// Its exit status.
        status: String,
        /// The last lines of its error log.
        log_tail: String,
    },
    /// A bounded wait ran out.
    #[error("timed out after {waited_ms} ms waiting for {what}{detail}")]
    Timeout {
        /// What we waited for.
        what: String,
        /// How long.
        waited_ms: u128,
        /// Extra context (last error, error log tail), already prefixed.
        detail: String,
    },
    /// The instance is not running (start it first).
    #[error("mysqld {name} is not running")]
    NotRunning {
        /// The instance name.
        name: String,
    },
    /// Sending a signal failed.
    #[error("sending {signal} to mysqld {name} (pid {pid}): {source}")]
    Signal {
        /// The instance name.
        name: String,
        /// The signal.
        signal: &'static str,
        /// The process.
        pid: u32,
        /// The cause.
        source: std::io::Error,
    },
    /// A query failed.
    #[error("{what} on {target}: {source}")]
    Mysql {
        /// The statement or purpose.
        what: String,
        /// Where (instance name or address).
        target: String,
        /// The client error.
        source: mysql_async::Error,
    },
    /// The server answered something we cannot read.
    #[error("{what} on {target}: unexpected answer: {detail}")]
    Unexpected {
        /// What was asked.
        what: String,
        /// Where.
        target: String,
        /// What came back.
        detail: String,
    },
    /// Bad input to the harness (a caller error).
    #[error("invalid {what}: {detail}")]
    Invalid {
        /// What input.
        what: &'static str,
        /// Why.
        detail: String,
    },
}

impl SitesError {
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io { what, path: path.into(), source }
    }

    pub(crate) fn mysql(
        what: impl Into<String>,
        target: impl Into<String>,
        source: mysql_async::Error,
    ) -> Self {
        Self::Mysql { what: what.into(), target: target.into(), source }
    }
}

/// Shorthand.
pub type Result<T, E = SitesError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unprovisioned_mysql_names_the_script() {
        let text = SitesError::NotProvisioned { var: "BLOODRAVEN_MYSQLD" }.to_string();
        assert!(
            text.contains("BLOODRAVEN_MYSQLD") && text.contains("source scripts/provision.sh"),
            "{text}"
        );
    }
}
