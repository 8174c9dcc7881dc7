//! `manifest-<site>.json`, version 2.
//!
//! One manifest per site. It names the archive (`archiveId`), lists the archived binlog files
//! (`files`), the site's promotion and incarnation-reset records (`promotions`, newest 256 kept),
//! retired rows (`pruned`) and, once set, the site's history-integrity marker. Fields this release
//! does not know are kept in `extra` and written back unchanged, so a read-modify-write by this
//! release never drops a newer writer's data.

use bloodraven_gtid::{GtidSet, Uuid};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::descriptor::ArchiveId;
use crate::ident::{ContentId, is_valid_binlog_name, object_key};
use crate::{Error, Result, is_valid_site};

/// The manifest version this release writes and reads.
pub const MANIFEST_VERSION: u64 = 2;
/// The legacy (pre-identity) manifest version, refused with `PITRArchiveLegacy`.
pub const LEGACY_MANIFEST_VERSION: u64 = 1;
/// How many promotion/reset records a manifest keeps (the newest).
pub const MAX_RECORDS: usize = 256;
/// A manifest larger than this is damaged (a bound for readers, far above real manifests).
pub const MANIFEST_MAX_BYTES: u64 = 256 * 1024 * 1024;

fn is_false(value: &bool) -> bool {
    !value
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// `gtidCoverage` of a row: the proof of which transactions the file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GtidCoverage {
    /// True only when the whole sealed file parsed with valid checksums and supported GTID events.
    pub complete: bool,
    /// The transactions the file holds (exact when complete, a lower bound otherwise).
    #[serde(default)]
    pub gtids: GtidSet,
    /// The content id of the bytes the proof was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_content_id")]
    pub content_id: Option<ContentId>,
    /// Fields of a newer writer.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One archived binlog file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileRow {
    /// The binlog file name (`mysql-bin.000042`).
    pub name: String,
    /// The content id; `None` (written as `""`) for a legacy row.
    #[serde(default, with = "opt_content_id")]
    pub id: Option<ContentId>,
    /// The object key as written (`<site>/<name>.<id>`, basename-only for legacy rows). Readers
    /// rebuild the key from site, name and id instead of trusting it.
    #[serde(default)]
    pub key: String,
    /// Plaintext size in bytes.
    #[serde(default)]
    pub size: u64,
    /// The file's Previous_gtids: the transactions executed before its first one.
    #[serde(default)]
    pub previous_gtids: GtidSet,
    /// The manifest hint of the transactions in the file (unverified until read).
    #[serde(default)]
    pub gtids: GtidSet,
    /// Commit time of the first transaction (or the file's first event when it holds none).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::time::ts_opt")]
    pub first_event_time: Option<Timestamp>,
    /// Commit time of the last transaction.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::time::ts_opt")]
    pub last_event_time: Option<Timestamp>,
    /// When the row was archived.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::time::ts_opt")]
    pub archived_at: Option<Timestamp>,
    /// The coverage proof.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gtid_coverage: Option<GtidCoverage>,
    /// Set by the divergence audit: archived GTIDs a server that established its history lacks.
    #[serde(default, skip_serializing_if = "is_false")]
    pub divergent: bool,
    /// Quarantined by `pitr-quarantine`: evidence only, never replayed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub quarantined: bool,
    /// A clone's bridge row: the server's state came from CLONE holding these transactions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_gtids: Option<GtidSet>,
    /// Fields of a newer writer.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FileRow {
    /// The transactions the row is known to hold: the complete coverage proof when there is one,
    /// the manifest hint otherwise.
    pub fn effective_gtids(&self) -> &GtidSet {
        match &self.gtid_coverage {
            Some(coverage) if coverage.complete => &coverage.gtids,
            _ => &self.gtids,
        }
    }

    /// True when the row carries a complete coverage proof.
    pub fn is_complete(&self) -> bool {
        self.gtid_coverage.as_ref().is_some_and(|c| c.complete)
    }

    /// The object key rebuilt from the trusted site and the validated name and id (a legacy row:
    /// `<site>/<name>`).
    pub fn object_key(&self, site: &str) -> Result<String> {
        match &self.id {
            Some(id) => object_key(site, &self.name, id),
            None => {
                crate::check_site(site)?;
                if !is_valid_binlog_name(&self.name) {
                    return Err(Error::InvalidBinlogName(self.name.clone()));
                }
                Ok(format!("{site}/{}", self.name))
            }
        }
    }
}

/// The kind of a record in `promotions`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// A writable episode started (the default when `kind` is absent).
    Promotion,
    /// A new server incarnation (other server_uuid/server_id, or gtid_executed lost transactions).
    Reset,
    /// A kind from a newer writer; treated like `Reset` (a boundary with no history claim).
    Other(String),
}

impl Serialize for RecordKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            RecordKind::Promotion => "Promotion",
            RecordKind::Reset => "Reset",
            RecordKind::Other(other) => other,
        })
    }
}

impl<'de> Deserialize<'de> for RecordKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(match text.as_str() {
            "Promotion" | "" => RecordKind::Promotion,
            "Reset" => RecordKind::Reset,
            _ => RecordKind::Other(text),
        })
    }
}

fn is_promotion(kind: &RecordKind) -> bool {
    *kind == RecordKind::Promotion
}

/// A promotion or incarnation-reset record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromotionRecord {
    /// `Promotion` (omitted when written) or `Reset`.
    #[serde(default = "promotion_kind", skip_serializing_if = "is_promotion")]
    pub kind: RecordKind,
    /// @@server_uuid at the probe.
    pub server_uuid: Uuid,
    /// @@server_id at the probe.
    pub server_id: u32,
    /// @@gtid_executed at the probe.
    #[serde(default)]
    pub gtid_executed: GtidSet,
    /// When the probe returned (sidecar clock).
    #[serde(with = "crate::time::ts")]
    pub observed_at: Timestamp,
    /// How long before `observed_at` the change may have happened; absent = unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::time::duration_opt")]
    pub probe_interval: Option<SignedDuration>,
    /// The read-only observation directly before the episode (diagnosis only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_gtid_executed: Option<GtidSet>,
    /// Fields of a newer writer.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn promotion_kind() -> RecordKind {
    RecordKind::Promotion
}

/// A retired row (`pruned`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetirementRecord {
    /// The binlog file name.
    pub name: String,
    /// The row's archive id (`None`/`""` for a legacy row).
    #[serde(default, with = "opt_content_id")]
    pub id: Option<ContentId>,
    /// The key as written.
    #[serde(default)]
    pub key: String,
    /// The retired file's Previous_gtids.
    #[serde(default)]
    pub previous_gtids: GtidSet,
    /// The retired file's first event time.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::time::ts_opt")]
    pub first_event_time: Option<Timestamp>,
    /// True once the object delete succeeded.
    #[serde(default)]
    pub deleted: bool,
    /// Legacy records: the verified content digest of the plaintext.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_content_id")]
    pub content_id: Option<ContentId>,
    /// Fields of a newer writer.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The kind of a history-integrity violation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Violation {
    /// Replication filters are set.
    ReplicationFilter,
    /// Binlog filters are set.
    BinlogFilter,
    /// binlog_format is not ROW.
    BinlogFormat,
    /// binlog_row_image is not FULL.
    BinlogRowImage,
    /// replica_preserve_commit_order is not ON.
    CommitOrder,
    /// A violation a newer writer knows.
    Other(String),
}

impl Serialize for Violation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            Violation::ReplicationFilter => "ReplicationFilter",
            Violation::BinlogFilter => "BinlogFilter",
            Violation::BinlogFormat => "BinlogFormat",
            Violation::BinlogRowImage => "BinlogRowImage",
            Violation::CommitOrder => "CommitOrder",
            Violation::Other(other) => other,
        })
    }
}

impl<'de> Deserialize<'de> for Violation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(match text.as_str() {
            "ReplicationFilter" => Violation::ReplicationFilter,
            "BinlogFilter" => Violation::BinlogFilter,
            "BinlogFormat" => Violation::BinlogFormat,
            "BinlogRowImage" => Violation::BinlogRowImage,
            "CommitOrder" => Violation::CommitOrder,
            _ => Violation::Other(text),
        })
    }
}

/// `historyIntegrity`: the site's permanent marker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryIntegrity {
    /// Which setting broke history certification.
    pub violation: Violation,
    /// What the check saw.
    #[serde(default)]
    pub detail: String,
    /// When it was first seen.
    #[serde(with = "crate::time::ts")]
    pub at: Timestamp,
    /// Fields of a newer writer.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `manifest-<site>.json`, version 2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always [`MANIFEST_VERSION`].
    pub version: u64,
    /// The descriptor's archive ID.
    pub archive_id: ArchiveId,
    /// The site.
    pub site: String,
    /// Archived binlog files (what restores read).
    #[serde(default)]
    pub files: Vec<FileRow>,
    /// Promotion and incarnation-reset records, oldest first, newest [`MAX_RECORDS`] kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub promotions: Vec<PromotionRecord>,
    /// Retired rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pruned: Vec<RetirementRecord>,
    /// The site's history-integrity marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_integrity: Option<HistoryIntegrity>,
    /// Non-zero when the site recorded a reset epoch: the whole archive is refused
    /// (`PITRArchiveHistoryReset`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reset_epoch: u64,
    /// Fields of a newer writer.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Why a manifest cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// Version 1 (or no version): written before archive identity.
    #[error("{name} is version {version}, written before archive identity")]
    Legacy {
        /// The manifest object name.
        name: String,
        /// The version found (1; 0 when absent).
        version: u64,
    },
    /// A newer release wrote it.
    #[error("{name} is version {version}; this release reads version {MANIFEST_VERSION}")]
    VersionUnsupported {
        /// The manifest object name.
        name: String,
        /// The version found.
        version: u64,
    },
    /// Undecodable or malformed.
    #[error("{name} is damaged: {detail}")]
    Damaged {
        /// The manifest object name.
        name: String,
        /// What is wrong, with the position when known.
        detail: String,
    },
}

#[derive(Deserialize)]
struct VersionProbe {
    #[serde(default)]
    version: Option<Value>,
}

impl Manifest {
    /// An empty version 2 manifest.
    pub fn new(archive_id: ArchiveId, site: impl Into<String>) -> Self {
        Manifest {
            version: MANIFEST_VERSION,
            archive_id,
            site: site.into(),
            files: Vec::new(),
            promotions: Vec::new(),
            pruned: Vec::new(),
            history_integrity: None,
            reset_epoch: 0,
            extra: Map::new(),
        }
    }

    /// Reads only the version of a manifest (0 when it has none).
    pub fn peek_version(name: &str, bytes: &[u8]) -> Result<u64, ManifestError> {
        let damaged = |detail: String| ManifestError::Damaged { name: name.to_owned(), detail };
        let probe: VersionProbe =
            serde_json::from_slice(bytes).map_err(|e| damaged(e.to_string()))?;
        match probe.version {
            None => Ok(0),
            Some(Value::Number(n)) => {
                n.as_u64().ok_or_else(|| damaged(format!("version {n} is not a version")))
            }
            Some(other) => Err(damaged(format!("version {other} is not a number"))),
        }
    }

    /// Decodes and validates a manifest object `name` (`manifest-<site>.json`).
    pub fn from_slice(name: &str, bytes: &[u8]) -> Result<Self, ManifestError> {
        let damaged = |detail: String| ManifestError::Damaged { name: name.to_owned(), detail };
        if bytes.len() as u64 > MANIFEST_MAX_BYTES {
            return Err(damaged(format!("it is larger than {MANIFEST_MAX_BYTES} bytes")));
        }
        match Manifest::peek_version(name, bytes)? {
            MANIFEST_VERSION => {}
            version @ (0 | LEGACY_MANIFEST_VERSION) => {
                return Err(ManifestError::Legacy { name: name.to_owned(), version });
            }
            version => {
                return Err(ManifestError::VersionUnsupported { name: name.to_owned(), version });
            }
        }
        let manifest: Manifest =
            serde_json::from_slice(bytes).map_err(|e| damaged(e.to_string()))?;
        manifest.validate(name)?;
        Ok(manifest)
    }

    /// Checks the manifest's shape: its site matches the object name and every row is well formed.
    pub fn validate(&self, name: &str) -> Result<(), ManifestError> {
        let damaged = |detail: String| ManifestError::Damaged { name: name.to_owned(), detail };
        if !is_valid_site(&self.site) {
            return Err(damaged(format!("site {:?} is not [a-z0-9-]+", self.site)));
        }
        if crate::ident::manifest_site(name).is_some_and(|site| site != self.site) {
            return Err(damaged(format!("it names site {:?}", self.site)));
        }
        for (index, row) in self.files.iter().enumerate() {
            if !is_valid_binlog_name(&row.name) {
                return Err(damaged(format!(
                    "files[{index}].name {:?} is not a binlog file name",
                    row.name
                )));
            }
        }
        for (index, row) in self.pruned.iter().enumerate() {
            if !is_valid_binlog_name(&row.name) {
                return Err(damaged(format!(
                    "pruned[{index}].name {:?} is not a binlog file name",
                    row.name
                )));
            }
        }
        Ok(())
    }

    /// The JSON a writer saves (indented, with a trailing newline).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Appends a promotion or reset record, keeping the newest [`MAX_RECORDS`].
    pub fn push_record(&mut self, record: PromotionRecord) {
        self.promotions.push(record);
        if self.promotions.len() > MAX_RECORDS {
            let excess = self.promotions.len() - MAX_RECORDS;
            self.promotions.drain(..excess);
        }
    }

    /// Adds a row, or replaces the row with the same (name, id). Rows stay ordered by first event
    /// time, then name.
    pub fn upsert_file(&mut self, row: FileRow) -> Result<()> {
        if !is_valid_binlog_name(&row.name) {
            return Err(Error::InvalidBinlogName(row.name));
        }
        match self
            .files
            .iter_mut()
            .find(|existing| existing.name == row.name && existing.id == row.id)
        {
            Some(existing) => *existing = row,
            None => self.files.push(row),
        }
        self.files
            .sort_by(|a, b| (a.first_event_time, &a.name).cmp(&(b.first_event_time, &b.name)));
        Ok(())
    }

    /// Retirement, first write: moves the rows `retire` selects from `files` to `pruned` with
    /// `deleted: false`, and returns their object keys (rebuilt from site, name and id).
    /// On an error (a row whose key cannot be rebuilt) the manifest is left unchanged.
    pub fn retire(&mut self, mut retire: impl FnMut(&FileRow) -> bool) -> Result<Vec<String>> {
        let selected: Vec<bool> = self.files.iter().map(&mut retire).collect();
        let keys = (self.files.iter().zip(&selected))
            .filter(|(_, retire)| **retire)
            .map(|(row, _)| row.object_key(&self.site))
            .collect::<Result<Vec<String>>>()?;
        let mut kept = Vec::with_capacity(self.files.len());
        for (row, retire) in std::mem::take(&mut self.files).into_iter().zip(selected) {
            if retire {
                let content_id = if row.id.is_none() {
                    row.gtid_coverage.as_ref().and_then(|c| c.content_id)
                } else {
                    None
                };
                self.pruned.push(RetirementRecord {
                    name: row.name,
                    id: row.id,
                    key: row.key,
                    previous_gtids: row.previous_gtids,
                    first_event_time: row.first_event_time,
                    deleted: false,
                    content_id,
                    extra: Map::new(),
                });
            } else {
                kept.push(row);
            }
        }
        self.files = kept;
        Ok(keys)
    }

    /// Retirement, second write: records `deleted: true` for the retired row with this name and
    /// id. Returns false when no pending record matches.
    pub fn acknowledge_deleted(&mut self, name: &str, id: Option<&ContentId>) -> bool {
        match self.pruned.iter_mut().find(|r| !r.deleted && r.name == name && r.id.as_ref() == id) {
            Some(record) => {
                record.deleted = true;
                true
            }
            None => false,
        }
    }
}

/// serde for an optional content id written as `""` when absent.
mod opt_content_id {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::ident::ContentId;

    pub(crate) fn serialize<S: Serializer>(
        id: &Option<ContentId>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => s.collect_str(id),
            None => s.serialize_str(""),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<ContentId>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        match text.as_deref() {
            None | Some("") => Ok(None),
            Some(text) => text.parse().map(Some).map_err(serde::de::Error::custom),
        }
    }
}
