//! A [`Resolver`] backed by a JSON file of Service addresses — for the live lab only.
//!
//! The lab has no cluster DNS: its kubelet maps each Service port to a fault-proxy link on
//! 127.0.0.1. An operator running in-process dials through that resolver directly; the operator
//! *binary* (`bloodraven lab --live`, drills run with `--operator-bin`) is given
//! `--service-address-file PATH` instead, a file the lab keeps current:
//!
//! ```json
//! {"orders/mysql-orders-iad-internal:3306": "127.0.0.1:40123"}
//! ```
//!
//! Keys are [`bloodraven_workloads::address_key`]. The file is re-read whenever its length or
//! modification time changes (the lab replaces it atomically), so Services that appear after
//! start are found. A Service missing from the file resolves to nothing (the site reads as
//! unreachable); an unreadable or broken file keeps the last good map and is logged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use bloodraven_workloads::{Resolver, ServiceAddress, address_key};

/// Why the service-address file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AddressFileError {
    /// The file cannot be read.
    #[error("cannot read the service-address file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a JSON object of strings (serde names line and column).
    #[error(
        "the service-address file {path} is not a JSON object of \"<ns>/<svc>:<port>\": \"<host>:<port>\" strings: {source}"
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause, with line and column.
        source: serde_json::Error,
    },
    /// A value is not `host:port`.
    #[error("the service-address file {path}: entry {key:?} has address {value:?}, not host:port")]
    Address {
        /// The file.
        path: PathBuf,
        /// The entry's key.
        key: String,
        /// The entry's value.
        value: String,
    },
}

#[derive(Default)]
struct Cached {
    stamp: Option<(SystemTime, u64)>,
    map: BTreeMap<String, ServiceAddress>,
}

/// See the module documentation.
pub struct AddressFile {
    path: PathBuf,
    cached: Mutex<Cached>,
}

impl std::fmt::Debug for AddressFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressFile").field("path", &self.path).finish_non_exhaustive()
    }
}

impl AddressFile {
    /// Opens the file and reads it once (an error here names the file and what is wrong).
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, AddressFileError> {
        let path = path.into();
        let (stamp, map) = load(&path)?;
        Ok(Self { path, cached: Mutex::new(Cached { stamp: Some(stamp), map }) })
    }

    fn current(&self, key: &str) -> Option<ServiceAddress> {
        let mut cached = self.cached.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let stamp = stamp_of(&self.path).ok();
        if stamp.is_some() && stamp != cached.stamp {
            match load(&self.path) {
                Ok((stamp, map)) => *cached = Cached { stamp: Some(stamp), map },
                Err(error) => {
                    tracing::warn!(%error, "keeping the last service addresses");
                }
            }
        }
        cached.map.get(key).cloned()
    }
}

impl Resolver for AddressFile {
    fn resolve(&self, namespace: &str, service: &str, port: u16) -> Option<ServiceAddress> {
        self.current(&address_key(namespace, service, port))
    }
}

fn stamp_of(path: &Path) -> std::io::Result<(SystemTime, u64)> {
    let meta = std::fs::metadata(path)?;
    Ok((meta.modified()?, meta.len()))
}

type Loaded = ((SystemTime, u64), BTreeMap<String, ServiceAddress>);

fn load(path: &Path) -> Result<Loaded, AddressFileError> {
    let read = |source| AddressFileError::Read { path: path.to_path_buf(), source };
    let stamp = stamp_of(path).map_err(read)?;
    let text = std::fs::read_to_string(path).map_err(read)?;
    Ok((stamp, parse(path, &text)?))
}

fn parse(path: &Path, text: &str) -> Result<BTreeMap<String, ServiceAddress>, AddressFileError> {
    let raw: BTreeMap<String, String> = serde_json::from_str(text)
        .map_err(|source| AddressFileError::Parse { path: path.to_path_buf(), source })?;
    raw.into_iter()
        .map(|(key, value)| {
            let parsed = value
                .rsplit_once(':')
                .and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)))
                .filter(|(host, _)| !host.is_empty());
            match parsed {
                Some((host, port)) => Ok((key, ServiceAddress { host: host.to_owned(), port })),
                None => Err(AddressFileError::Address { path: path.to_path_buf(), key, value }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_entries_and_follows_a_replaced_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("addresses.json");
        std::fs::write(&path, r#"{"ns/svc-internal:3306": "127.0.0.1:4000"}"#).unwrap();
        let file = AddressFile::open(&path).unwrap();
        assert_eq!(
            file.resolve("ns", "svc-internal", 3306),
            Some(ServiceAddress { host: "127.0.0.1".into(), port: 4000 })
        );
        assert_eq!(file.resolve("ns", "other", 3306), None);
        // A longer file (the lab adds a Service) is picked up without a restart.
        std::fs::write(
            &path,
            r#"{"ns/svc-internal:3306": "127.0.0.1:4000", "ns/other:3306": "127.0.0.1:4001"}"#,
        )
        .unwrap();
        assert_eq!(file.resolve("ns", "other", 3306).map(|a| a.port), Some(4001));
        // A broken rewrite keeps the last good map.
        std::fs::write(&path, "{not json at all, but long enough to change the length").unwrap();
        assert_eq!(file.resolve("ns", "other", 3306).map(|a| a.port), Some(4001));
    }

    #[test]
    fn bad_files_are_refused_naming_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("addresses.json");
        let missing = AddressFile::open(&path).unwrap_err().to_string();
        assert!(missing.contains("cannot read") && missing.contains("addresses.json"), "{missing}");
        std::fs::write(&path, "{\n  \"a\": 3\n}").unwrap();
        let wrong = AddressFile::open(&path).unwrap_err().to_string();
        assert!(wrong.contains("line 2"), "{wrong}");
        std::fs::write(&path, r#"{"ns/a:1": "127.0.0.1"}"#).unwrap();
        let address = AddressFile::open(&path).unwrap_err().to_string();
        assert!(address.contains("ns/a:1") && address.contains("not host:port"), "{address}");
    }
}
