//! The artifact's metadata documents and their serde.
//!
//! Field names follow the spec (and MySQL Shell where the spec borrows its names):
//! `@.json` carries `gtidExecuted` and `gtidExecutedInconsistent`, `@.done.json` carries `end`,
//! the stamp carries `serverClock{start, end}`. Every document keeps fields it does not know
//! (`extra`), so a newer writer's fields survive a read-modify-write by an older reader.
//! Reads are bounded ([`MAX_META_BYTES`]) and name the document that failed.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The largest metadata document a reader accepts.
pub const MAX_META_BYTES: usize = 64 * 1024;
/// The `dumper` this crate's writer records in `@.json`.
pub const DUMPER: &str = "bloodraven-sidecar/mysqldump";
/// The version of the artifact format this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The stamp's `kind`.
pub const STAMP_KIND: &str = "BloodravenBackupStamp";

/// Unknown fields, kept verbatim.
pub type Extra = BTreeMap<String, serde_json::Value>;

/// A metadata document could not be read.
#[derive(Debug, Error)]
pub enum MetaError {
    #[error(
        "{document} is {size} bytes, larger than the {MAX_META_BYTES}-byte bound; the object is damaged"
    )]
    TooLarge { document: &'static str, size: usize },
    #[error("{document} is not valid: {source}; the object is damaged or from another tool")]
    Decode {
        document: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "{document} has format version {found}; this release reads version {FORMAT_VERSION}: upgrade"
    )]
    Version { document: &'static str, found: u32 },
    #[error("the stamp's kind is {found:?}, not {STAMP_KIND:?}; the object is damaged")]
    Kind { found: String },
}

fn decode<T: for<'de> Deserialize<'de>>(
    document: &'static str,
    bytes: &[u8],
) -> Result<T, MetaError> {
    if bytes.len() > MAX_META_BYTES {
        return Err(MetaError::TooLarge { document, size: bytes.len() });
    }
    serde_json::from_slice(bytes).map_err(|source| MetaError::Decode { document, source })
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing these plain structs (string keys, no maps with non-string keys) cannot fail.
    let mut out = serde_json::to_vec_pretty(value).unwrap_or_default();
    out.push(b'\n');
    out
}

/// `@.json`: what was dumped, written before the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpJson {
    /// Always [`DUMPER`] for this writer.
    pub dumper: String,
    /// The artifact format version ([`FORMAT_VERSION`]).
    pub version: u32,
    /// `mysqldump --version` of the tool that dumped.
    #[serde(default)]
    pub mysqldump_version: String,
    /// The dumped server's `@@version`.
    #[serde(default)]
    pub server_version: String,
    /// The dumped server's `@@server_uuid`.
    #[serde(default)]
    pub server_uuid: String,
    /// When the dump began (the dumped server's clock).
    pub begin: Timestamp,
    /// The GTID set of the dump's consistent snapshot (`GTID_PURGED` the dump sets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gtid_executed: Option<String>,
    /// The snapshot's GTID set is not known to match the data.
    #[serde(default)]
    pub gtid_executed_inconsistent: bool,
    /// The source's binary log file at the snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binlog_file: Option<String>,
    /// The position in that file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binlog_position: Option<u64>,
    /// The schemas dumped.
    #[serde(default)]
    pub schemas: Vec<String>,
    /// The profile's filters.
    #[serde(default)]
    pub include_schemas: Vec<String>,
    #[serde(default)]
    pub exclude_schemas: Vec<String>,
    /// `zstd` or `none`.
    pub compression: String,
    #[serde(flatten)]
    pub extra: Extra,
}

impl DumpJson {
    /// Serializes the document.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(self)
    }

    /// Parses and checks the format version.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, MetaError> {
        let value: Self = decode("@.json", bytes)?;
        if value.version > FORMAT_VERSION {
            return Err(MetaError::Version { document: "@.json", found: value.version });
        }
        Ok(value)
    }

    /// The dump used schema filters.
    pub fn filtered(&self) -> bool {
        !self.include_schemas.is_empty() || !self.exclude_schemas.is_empty()
    }
}

/// One data chunk as recorded in `@.done.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkRecord {
    /// The file name inside the dump directory.
    pub file: String,
    /// Stored (compressed) bytes.
    pub bytes: u64,
    /// Lowercase hex SHA-256 of the stored bytes.
    pub sha256: String,
}

/// `@.done.json`: the completion marker, written after every chunk and the stamp's end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DoneJson {
    /// When the dump finished (the dumped server's clock).
    pub end: Timestamp,
    /// Uncompressed SQL bytes.
    pub data_bytes: u64,
    /// Every chunk, in load order.
    pub chunks: Vec<ChunkRecord>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl DoneJson {
    /// Serializes the document.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(self)
    }

    /// Parses the document. `@.done.json` of a huge dump lists many chunks, so its bound is
    /// larger than the others': 64 bytes of listing per chunk for a million chunks.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, MetaError> {
        if bytes.len() > 64 * 1024 * 1024 {
            return Err(MetaError::TooLarge { document: "@.done.json", size: bytes.len() });
        }
        serde_json::from_slice(bytes)
            .map_err(|source| MetaError::Decode { document: "@.done.json", source })
    }

    /// Stored bytes of every chunk.
    pub fn stored_bytes(&self) -> u64 {
        self.chunks.iter().map(|chunk| chunk.bytes).sum()
    }
}

/// `{namespace, name, uid}` of a Kubernetes object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// The dumped server's clock around the dump.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerClock {
    /// `UTC_TIMESTAMP(6)` before the dump started.
    pub start: Timestamp,
    /// `UTC_TIMESTAMP(6)` after the dump finished; absent until it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Timestamp>,
}

/// The profile's schema filters, as recorded in the stamp.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpFilters {
    #[serde(default)]
    pub include_schemas: Vec<String>,
    #[serde(default)]
    pub exclude_schemas: Vec<String>,
}

/// The backup stamp `<dump>.bloodraven-backup.json`: ties a dump to its backup, group and
/// PITR archive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stamp {
    /// Always [`STAMP_KIND`].
    pub kind: String,
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// The MysqlBackup.
    pub backup: ObjectRef,
    /// The failover group dumped.
    pub source: ObjectRef,
    /// The group's active PITR archive when the Job was built; empty when PITR was off.
    #[serde(rename = "pitrArchiveID", default)]
    pub pitr_archive_id: String,
    /// The site dumped.
    pub site: String,
    /// Its `server_id` (checked against the pinned one before the dump).
    #[serde(rename = "serverID")]
    pub server_id: u32,
    #[serde(default)]
    pub dump_filters: DumpFilters,
    pub server_clock: ServerClock,
    /// When the stamp was first written (the Job's clock).
    pub created_at: Timestamp,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Stamp {
    /// Serializes the stamp.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(self)
    }

    /// Parses and checks kind and version.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, MetaError> {
        let value: Self = decode("the backup stamp", bytes)?;
        if value.kind != STAMP_KIND {
            return Err(MetaError::Kind { found: value.kind });
        }
        if value.version > FORMAT_VERSION {
            return Err(MetaError::Version { document: "the backup stamp", found: value.version });
        }
        Ok(value)
    }

    /// The dump finished (its end is recorded).
    pub fn finished(&self) -> bool {
        self.server_clock.end.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn stamp() -> Stamp {
        Stamp {
            kind: STAMP_KIND.into(),
            version: FORMAT_VERSION,
            backup: ObjectRef { namespace: "ns".into(), name: "b1".into(), uid: "u1".into() },
            source: ObjectRef { namespace: "ns".into(), name: "orders".into(), uid: "g1".into() },
            pitr_archive_id: String::new(),
            site: "iad".into(),
            server_id: 11,
            dump_filters: DumpFilters::default(),
            server_clock: ServerClock { start: ts("2026-11-05T09:30:00.123456Z"), end: None },
            created_at: ts("2026-11-05T09:30:00Z"),
            extra: Extra::new(),
        }
    }

    #[test]
    fn stamp_uses_the_spec_field_names_and_round_trips() {
        let mut value = stamp();
        value.server_clock.end = Some(ts("2026-11-05T09:31:00Z"));
        let bytes = value.to_bytes();
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["serverClock"]["end"], "2026-11-05T09:31:00Z");
        assert_eq!(json["serverID"], 11);
        assert_eq!(json["pitrArchiveID"], "");
        assert_eq!(json["dumpFilters"]["includeSchemas"], serde_json::json!([]));
        assert_eq!(Stamp::from_bytes(&bytes).unwrap(), value);
    }

    #[test]
    fn an_unfinished_stamp_has_no_end() {
        let bytes = stamp().to_bytes();
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert!(json["serverClock"].get("end").is_none());
        assert!(!Stamp::from_bytes(&bytes).unwrap().finished());
    }

    #[test]
    fn unknown_fields_survive() {
        let mut json = serde_json::to_value(stamp()).unwrap();
        json["futureField"] = serde_json::json!({"a": 1});
        let parsed = Stamp::from_bytes(&serde_json::to_vec(&json).unwrap()).unwrap();
        let again: serde_json::Value = serde_json::from_slice(&parsed.to_bytes()).unwrap();
        assert_eq!(again["futureField"]["a"], 1);
    }

    #[test]
    fn damaged_documents_are_refused_with_their_name() {
        let error = Stamp::from_bytes(b"{\"kind\":").unwrap_err();
        assert!(error.to_string().contains("the backup stamp is not valid"), "{error}");
        let mut other = serde_json::to_value(stamp()).unwrap();
        other["kind"] = "Other".into();
        assert!(matches!(
            Stamp::from_bytes(&serde_json::to_vec(&other).unwrap()),
            Err(MetaError::Kind { .. })
        ));
        let big = vec![b' '; MAX_META_BYTES + 1];
        assert!(matches!(DumpJson::from_bytes(&big), Err(MetaError::TooLarge { .. })));
        let mut newer = serde_json::to_value(stamp()).unwrap();
        newer["version"] = 2.into();
        assert!(matches!(
            Stamp::from_bytes(&serde_json::to_vec(&newer).unwrap()),
            Err(MetaError::Version { .. })
        ));
    }

    #[test]
    fn dump_json_round_trips() {
        let value = DumpJson {
            dumper: DUMPER.into(),
            version: FORMAT_VERSION,
            mysqldump_version: "mysqldump  Ver 9.7.0".into(),
            server_version: "9.7.0".into(),
            server_uuid: "3e11fa47-71ca-11e1-9e33-c80aa9429562".into(),
            begin: ts("2026-11-05T09:30:00Z"),
            gtid_executed: Some("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5".into()),
            gtid_executed_inconsistent: false,
            binlog_file: Some("binlog.000002".into()),
            binlog_position: Some(157),
            schemas: vec!["app".into()],
            include_schemas: vec![],
            exclude_schemas: vec![],
            compression: "zstd".into(),
            extra: Extra::new(),
        };
        let bytes = value.to_bytes();
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["gtidExecuted"], "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5");
        assert_eq!(json["gtidExecutedInconsistent"], false);
        assert_eq!(DumpJson::from_bytes(&bytes).unwrap(), value);
        assert!(!value.filtered());
    }

    #[test]
    fn done_json_round_trips() {
        let value = DoneJson {
            end: ts("2026-11-05T09:31:00Z"),
            data_bytes: 100,
            chunks: vec![ChunkRecord {
                file: "dump-00000.sql.zst".into(),
                bytes: 40,
                sha256: "ab".into(),
            }],
            extra: Extra::new(),
        };
        assert_eq!(DoneJson::from_bytes(&value.to_bytes()).unwrap(), value);
        assert_eq!(value.stored_bytes(), 40);
    }
}
