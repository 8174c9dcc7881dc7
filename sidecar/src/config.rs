//! The sidecar's settings (from its environment, rendered by `bloodraven-workloads`) and their
//! parsing: peer lists and Go duration text, with errors naming the setting.

use std::net::SocketAddr;
use std::time::Duration;

use bloodraven_crd::duration::GoDuration;

use crate::decide::Timings;
use crate::mysql::MysqlTarget;

/// Everything the sidecar runs with.
#[derive(Debug, Clone)]
pub struct Config {
    /// `BLOODRAVEN_SITE`.
    pub site: String,
    /// `POD_NAMESPACE`.
    pub namespace: String,
    /// `BLOODRAVEN_GROUP`.
    pub group: String,
    /// `BLOODRAVEN_ADDRESS` (`host:port`; empty: no operator).
    pub operator: String,
    /// `PEER_ADDRESSES`.
    pub peers: Vec<String>,
    /// `PEER_CHECK_INTERVAL`.
    pub interval: Duration,
    /// `LEASE_TIMEOUT` and `ACTIVE_SITE_FRESHNESS`.
    pub timings: Timings,
    /// `MYSQL_HOST`, `MYSQL_PORT`, `MYSQL_USER`, `MYSQL_PASSWORD`.
    pub mysql: MysqlTarget,
    /// Where the HTTP server listens (`SIDECAR_LISTEN`, `0.0.0.0:8080`).
    pub listen: SocketAddr,
}

/// A setting that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A duration setting.
    #[error(
        "{setting}={value:?} is not a duration ({detail}); write it as Go does, such as 20s or 1m30s"
    )]
    Duration {
        /// The setting's name.
        setting: &'static str,
        /// Its value.
        value: String,
        /// Why.
        detail: String,
    },
    /// A peer entry.
    #[error(
        "PEER_ADDRESSES entry {position} ({entry:?}) is not host:port; separate peers with commas"
    )]
    Peer {
        /// 1-based position in the list.
        position: usize,
        /// The entry.
        entry: String,
    },
}

/// Parses a Go duration (`20s`, `1m30s`, `500ms`); zero and negative are refused.
pub fn duration(setting: &'static str, value: &str) -> Result<Duration, ConfigError> {
    let fail = |detail: String| ConfigError::Duration { setting, value: value.to_owned(), detail };
    let parsed = GoDuration::parse(value.trim()).map_err(|e| fail(e.to_string()))?;
    parsed
        .to_std()
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| fail("it must be positive".to_owned()))
}

/// Parses `PEER_ADDRESSES`: comma separated `host:port`, blanks ignored.
pub fn peers(value: &str) -> Result<Vec<String>, ConfigError> {
    value
        .split(',')
        .map(str::trim)
        .enumerate()
        .filter(|(_, entry)| !entry.is_empty())
        .map(|(index, entry)| match entry.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(entry.to_owned())
            }
            _ => Err(ConfigError::Peer { position: index + 1, entry: entry.to_owned() }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_go_writes_them() {
        assert_eq!(duration("LEASE_TIMEOUT", "20s").unwrap(), Duration::from_secs(20));
        assert_eq!(duration("LEASE_TIMEOUT", "1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(duration("X", "500ms").unwrap(), Duration::from_millis(500));
        let error = duration("LEASE_TIMEOUT", "twenty").unwrap_err().to_string();
        assert!(error.contains("LEASE_TIMEOUT=\"twenty\""), "{error}");
        assert!(duration("LEASE_TIMEOUT", "0s").unwrap_err().to_string().contains("positive"));
    }

    #[test]
    fn peer_lists_parse_and_bad_entries_are_named() {
        assert_eq!(
            peers("a.ns.svc.cluster.local:8080, b:8080,,").unwrap(),
            vec!["a.ns.svc.cluster.local:8080".to_owned(), "b:8080".to_owned()]
        );
        assert!(peers("").unwrap().is_empty());
        let error = peers("a:8080,b").unwrap_err().to_string();
        assert!(error.contains("entry 2 (\"b\")"), "{error}");
    }
}
