//! The site's ConfigMap options → the runner's `[mysqld]` extras.
//!
//! The runner writes the lab's paths, port and small-memory settings first; these extras are
//! appended after them, so the ConfigMap wins — except for the options that only make sense on
//! this machine (paths, ports, addresses, the process user), which are dropped here.

use bloodraven_workloads::mycnf::{self, MYSQLD_SECTION, MysqlOptions};

/// Options the lab owns: the ConfigMap's values for these are dropped.
pub const LAB_ONLY: &[&str] = &[
    "basedir",
    "bind_address",
    "datadir",
    "lc_messages_dir",
    "log_error",
    "mysqlx",
    "mysqlx_port",
    "mysqlx_socket",
    "pid_file",
    "plugin_dir",
    "port",
    "report_host",
    "report_port",
    "secure_file_priv",
    "skip_networking",
    "socket",
    "tmpdir",
    "user",
];

/// Why a ConfigMap cannot configure a server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    #[error("ConfigMap {configmap}: {source}")]
    Parse {
        configmap: String,
        #[source]
        source: mycnf::ParseError,
    },
    #[error("ConfigMap {configmap} has no [mysqld] server_id; the operator writes one per site")]
    NoServerId { configmap: String },
    #[error("ConfigMap {configmap}: server_id {value:?} is not a number from 1 to 4294967295")]
    BadServerId { configmap: String, value: String },
}

/// What the runner needs from a site's option file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerOptions {
    pub server_id: u32,
    /// Appended after the runner's own options (lab-only ones removed), in key order.
    pub extra: Vec<(String, String)>,
}

/// Reads the option file of ConfigMap `configmap`.
pub fn server_options(configmap: &str, my_cnf: &str) -> Result<ServerOptions, OptionsError> {
    let sections = mycnf::parse(my_cnf)
        .map_err(|source| OptionsError::Parse { configmap: configmap.to_owned(), source })?;
    let options: MysqlOptions = sections.get(MYSQLD_SECTION).cloned().unwrap_or_default();
    let value = options
        .get("server_id")
        .ok_or_else(|| OptionsError::NoServerId { configmap: configmap.to_owned() })?;
    let server_id = value.parse::<u32>().ok().filter(|id| *id > 0).ok_or_else(|| {
        OptionsError::BadServerId { configmap: configmap.to_owned(), value: value.clone() }
    })?;
    let extra = options.into_iter().filter(|(key, _)| !LAB_ONLY.contains(&key.as_str())).collect();
    Ok(ServerOptions { server_id, extra })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configmap_options_pass_but_lab_paths_and_ports_do_not() {
        let text = "[mysqld]\nserver_id = 102\nport = 3306\ndatadir=/var/lib/mysql\nsuper_read_only = ON\nreport_host = x\n";
        let options = server_options("cm", text).unwrap();
        assert_eq!(options.server_id, 102);
        assert_eq!(
            options.extra,
            vec![
                ("server_id".to_owned(), "102".to_owned()),
                ("super_read_only".to_owned(), "ON".to_owned())
            ]
        );
    }

    #[test]
    fn a_missing_or_bad_server_id_is_named() {
        assert_eq!(
            server_options("cm", "[mysqld]\n").unwrap_err().to_string(),
            "ConfigMap cm has no [mysqld] server_id; the operator writes one per site"
        );
        assert!(matches!(
            server_options("cm", "[mysqld]\nserver_id=0\n"),
            Err(OptionsError::BadServerId { .. })
        ));
        assert!(matches!(server_options("cm", "x=1\n"), Err(OptionsError::Parse { .. })));
    }
}
