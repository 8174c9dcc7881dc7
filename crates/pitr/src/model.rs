//! The planner's view of an archive: rows with the transactions their bytes hold, and records.
//!
//! The opened archive (`bloodraven-archive`'s [`OpenArchive`]) carries manifests only; the
//! transactions of a row come from reading its bytes (pitr-download's index pass), which is IO.
//! The caller passes what it read as a [`RowIndex`]; a row it did not read is
//! [`RowBytes::NotRead`] (its manifest hint is unverified), a row it could not read is
//! [`RowBytes::Unreadable`].

use std::collections::{BTreeSet, HashMap};

use bloodraven_archive::OpenArchive;
use bloodraven_archive::manifest::RecordKind;
use bloodraven_gtid::{Gtid, GtidSet, Uuid};
use jiff::{SignedDuration, Timestamp};

/// One transaction of an archived binlog, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    /// Its GTID (`None`: an anonymous transaction).
    pub gtid: Option<Gtid>,
    /// Its original commit time (`None`: the event has none).
    pub commit: Option<Timestamp>,
    /// The originating server id.
    pub server_id: u32,
    /// An XA transaction.
    pub xa: bool,
    /// An empty transaction (GTID only, no changes).
    pub empty: bool,
    /// Its largest event, in bytes.
    pub max_event: u64,
}

/// What reading a row's bytes gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowBytes {
    /// Read and authenticated: its transactions in file order.
    Read(Vec<Txn>),
    /// Not read: only the manifest hint is known, and it is unverified.
    NotRead,
    /// The object is missing or fails its digest, framing or CRC checks (the reason).
    Unreadable(String),
}

/// The bytes the caller read, by object key (`<site>/<name>.<id>`).
#[derive(Debug, Clone, Default)]
pub struct RowIndex {
    rows: HashMap<String, RowBytes>,
}

impl RowIndex {
    /// An empty index.
    pub fn new() -> RowIndex {
        RowIndex::default()
    }

    /// Records what reading `key` gave.
    pub fn insert(&mut self, key: impl Into<String>, bytes: RowBytes) {
        self.rows.insert(key.into(), bytes);
    }

    fn take(&mut self, key: &str) -> RowBytes {
        self.rows.remove(key).unwrap_or(RowBytes::NotRead)
    }
}

/// One archived row.
#[derive(Debug, Clone)]
pub struct File {
    /// Its site.
    pub site: String,
    /// The binlog file name.
    pub name: String,
    /// Its object key.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its previous-GTIDs set.
    pub prev: GtidSet,
    /// The manifest hint (unverified until read).
    pub hint: GtidSet,
    /// The hint's last event time.
    pub last_event: Option<Timestamp>,
    /// A quarantined row (evidence only, never replayed).
    pub quarantined: bool,
    /// A divergent row (loss evidence).
    pub divergent: bool,
    /// Its bytes.
    pub bytes: RowBytes,
}

impl File {
    /// Its transactions, when read.
    pub fn txns(&self) -> &[Txn] {
        match &self.bytes {
            RowBytes::Read(txns) => txns,
            _ => &[],
        }
    }
}

/// A promotion or incarnation-reset record.
#[derive(Debug, Clone)]
pub struct Record {
    /// Its site.
    pub site: String,
    /// `<site>#<n>`.
    pub label: String,
    /// A promotion (else a reset or a newer kind, a boundary with no history claim).
    pub promotion: bool,
    /// The server.
    pub server_uuid: Uuid,
    /// The server's gtid_executed.
    pub gtid_executed: GtidSet,
    /// When the probe returned (sidecar clock).
    pub observed_at: Timestamp,
    /// How long before `observed_at` the change may have happened (`None`: unbounded).
    pub probe_interval: Option<SignedDuration>,
}

/// The archive as the planner reads it.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// The archive ID (for coverage.json).
    pub archive_id: String,
    /// Every row, active and quarantined.
    pub files: Vec<File>,
    /// Every record, by site then age.
    pub records: Vec<Record>,
    /// Sites with a history-integrity marker.
    pub marked: BTreeSet<String>,
    /// Sites recording a non-zero reset epoch, with it.
    pub reset_epochs: Vec<(String, u64)>,
}

impl History {
    /// The planner's view of an opened archive and the bytes read from it.
    pub fn from_archive(archive: &OpenArchive, mut index: RowIndex) -> History {
        let mut history =
            History { archive_id: archive.descriptor.archive_id.to_string(), ..History::default() };
        for (site, manifest) in &archive.manifests {
            if manifest.history_integrity.is_some() {
                history.marked.insert(site.clone());
            }
            if manifest.reset_epoch != 0 {
                history.reset_epochs.push((site.clone(), manifest.reset_epoch));
            }
            for row in &manifest.files {
                let key = row.object_key(site).unwrap_or_else(|_| row.key.clone());
                let bytes = index.take(&key);
                history.files.push(File {
                    site: site.clone(),
                    name: row.name.clone(),
                    key,
                    size: row.size,
                    prev: row.previous_gtids.clone(),
                    hint: row.effective_gtids().clone(),
                    last_event: row.last_event_time,
                    quarantined: row.quarantined,
                    divergent: row.divergent,
                    bytes,
                });
            }
            for (n, record) in manifest.promotions.iter().enumerate() {
                history.records.push(Record {
                    site: site.clone(),
                    label: format!("{site}#{n}"),
                    promotion: record.kind == RecordKind::Promotion,
                    server_uuid: record.server_uuid,
                    gtid_executed: record.gtid_executed.clone(),
                    observed_at: record.observed_at,
                    probe_interval: record.probe_interval,
                });
            }
        }
        history
    }
}

/// A single-GTID set.
pub(crate) fn one(gtid: &Gtid) -> GtidSet {
    let mut set = GtidSet::new();
    let _ = set.insert(gtid);
    set
}
