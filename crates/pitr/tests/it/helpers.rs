//! Building histories: from the archive crate's fixtures (through the real reader) and by hand.

use bloodraven_archive::fixtures::{Fixture, GROUP_UID};
use bloodraven_archive::reader::{ArchiveReader, ReaderKey, ReaderOptions, Request as Fetch};
use bloodraven_archive::{OpenArchive, OpenError};
use bloodraven_gtid::{Gtid, GtidSet, Uuid};
use bloodraven_pitr::{
    BackupMeta, File, History, Input, Limits, Plan, Record, Refusal, Request, RowBytes, RowIndex,
    Txn, plan,
};
use jiff::{SignedDuration, Timestamp};

pub(crate) const A: Uuid = bloodraven_archive::fixtures::UUID_A;
pub(crate) const B: Uuid = bloodraven_archive::fixtures::UUID_B;

/// Opens a fixture with the archive crate's reader.
pub(crate) fn open(fixture: &Fixture) -> Result<OpenArchive, bloodraven_archive::Refusal> {
    let mut reader = ArchiveReader::new(ReaderOptions::new(ReaderKey::None));
    while let Some(fetch) = reader.next_fetch() {
        match fetch.request {
            Fetch::List => reader.feed_listing(Ok(fixture.objects.keys().cloned().collect())),
            Fetch::Get { key, .. } => reader.feed_object(
                fixture
                    .objects
                    .get(&key)
                    .cloned()
                    .ok_or(bloodraven_archive::reader::FetchError::NotFound),
            ),
        }
    }
    match reader.finish() {
        Ok(open) => Ok(open),
        Err(OpenError::Refused(refusal)) => Err(refusal),
        Err(other) => panic!("transient open failure: {other}"),
    }
}

/// The fixture's history, every row read; transactions in commit order.
pub(crate) fn history(fixture: &Fixture) -> History {
    let open = open(fixture).expect("fixture opens");
    let mut index = RowIndex::new();
    for (site, manifest) in &open.manifests {
        for row in &manifest.files {
            let mut txns: Vec<Txn> = row
                .effective_gtids()
                .gtids()
                .map(|g| txn_at(g, fixture.commit_times[&g.to_string()]))
                .collect();
            txns.sort_by_key(|t| t.commit);
            index.insert(row.object_key(site).unwrap(), RowBytes::Read(txns));
        }
    }
    History::from_archive(&open, index)
}

pub(crate) fn txn_at(gtid: Gtid, at: Timestamp) -> Txn {
    Txn {
        gtid: Some(gtid),
        commit: Some(at),
        server_id: u32::from(gtid.uuid.as_bytes()[0]),
        xa: false,
        empty: false,
        max_event: 1000,
    }
}

pub(crate) fn meta(fixture: &Fixture, backup: &str, history: &History) -> BackupMeta {
    let point = &fixture.backups[backup];
    BackupMeta::complete(
        point.gtid_executed.clone(),
        point.dump_end,
        GROUP_UID,
        &history.archive_id,
    )
}

pub(crate) fn at(fixture: &Fixture, uuid: Uuid, gno: u64) -> Timestamp {
    fixture.commit_time(uuid, gno).expect("a commit time")
}

pub(crate) fn text(at: Timestamp) -> String {
    at.to_string()
}

pub(crate) fn request(target: Option<Timestamp>, exclude: &str) -> Request {
    Request { target: target.map(text), exclude_gtids: exclude.into(), allow_partial: false }
}

pub(crate) fn run(
    history: &History,
    backup: &BackupMeta,
    request: &Request,
) -> Result<Plan, Refusal> {
    plan(Input { history, open_refusal: None, backup, request, limits: Limits::default() })
}

pub(crate) fn range(uuid: Uuid, a: u64, b: u64) -> GtidSet {
    bloodraven_archive::fixtures::range(uuid, a, b)
}

/// Base time of hand-built labs: 2026-11-05T09:30:00Z.
pub(crate) fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_793_871_000 + seconds).unwrap()
}

/// Appends to `history` the next read row of `site` holding `txns` after previous GTIDs `prev`;
/// returns its index.
pub(crate) fn push_read_row(
    history: &mut History,
    site: &str,
    prev: &GtidSet,
    txns: Vec<Txn>,
) -> usize {
    let n = history.files.iter().filter(|f| f.site == site).count() + 1;
    let mut hint = GtidSet::new();
    for txn in &txns {
        hint.insert(&txn.gtid.unwrap()).unwrap();
    }
    history.files.push(File {
        site: site.into(),
        name: format!("mysql-bin.{n:06}"),
        key: format!("{site}/mysql-bin.{n:06}"),
        size: 100 * txns.len() as u64,
        prev: prev.clone(),
        hint,
        last_event: txns.last().and_then(|t| t.commit),
        quarantined: false,
        divergent: false,
        bytes: RowBytes::Read(txns),
    });
    history.files.len() - 1
}

/// A hand-built history.
#[derive(Default)]
pub(crate) struct Lab {
    pub(crate) history: History,
}

impl Lab {
    pub(crate) fn new() -> Lab {
        let mut lab = Lab::default();
        lab.history.archive_id = "ar1-lab".into();
        lab
    }

    /// Adds a read row of `site` with previous GTIDs `prev` and `(uuid, gno, second)` txns.
    pub(crate) fn file(&mut self, site: &str, prev: &GtidSet, txns: &[(Uuid, u64, i64)]) -> usize {
        let txns: Vec<Txn> = txns.iter().map(|&(u, g, s)| txn_at(Gtid::new(u, g), t(s))).collect();
        push_read_row(&mut self.history, site, prev, txns)
    }

    pub(crate) fn promotion(&mut self, site: &str, server: Uuid, executed: &GtidSet, second: i64) {
        let n = self.history.records.iter().filter(|r| r.site == site).count();
        self.history.records.push(Record {
            site: site.into(),
            label: format!("{site}#{n}"),
            promotion: true,
            server_uuid: server,
            gtid_executed: executed.clone(),
            observed_at: t(second),
            probe_interval: Some(SignedDuration::from_secs(5)),
        });
    }

    pub(crate) fn backup(&self, gtids: &GtidSet, end_second: i64) -> BackupMeta {
        BackupMeta::complete(gtids.clone(), t(end_second), "group", &self.history.archive_id)
    }
}

/// `uuid`, gnos `from..=to`, one per `step` seconds starting at `start`.
pub(crate) fn seq(uuid: Uuid, from: u64, to: u64, start: i64, step: i64) -> Vec<(Uuid, u64, i64)> {
    (from..=to).map(|g| (uuid, g, start + (g - from) as i64 * step)).collect()
}
