//! In-memory archives for named scenarios (feature `fixtures`).
//!
//! [`Fixture::build`] returns the archive as a map from key (relative to the archive root
//! `binlogs/`) to bytes: `archive.json`, `manifest-<site>.json` and the binlog objects
//! `<site>/<binlog-file>.<id>`. Binlog bodies are real MySQL-format files written with
//! `bloodraven-binlog`'s [`Writer`] (CRC32 on), and each row's `gtidCoverage` comes from scanning
//! those bytes. Writing the map to a directory or a bucket is the store's job.
//!
//! The encrypted scenario built with [`Fixture::build`] has no binlog objects (plaintext bytes
//! under keyed ids would be a wrong archive); its rows carry the keyed content ids of the
//! plaintext bodies. [`Fixture::build_sealed`] builds it with its objects sealed in the `BRV1`
//! envelope ([`crate::envelope`]), as an encrypted writer leaves them, for readers that open
//! the bodies.

use std::collections::BTreeMap;

use bloodraven_binlog::{RowsTable, TransactionBody, TransactionSpec, Writer, WriterOptions};
use bloodraven_gtid::{Gtid, GtidSet, Uuid};
use jiff::{SignedDuration, Timestamp};
use serde_json::json;

use crate::coverage::BackupPoint;
use crate::descriptor::{ArchiveDescriptor, ArchiveId, Encryption, SourceRef};
use crate::destination::Destination;
use crate::ident::{ContentIdKey, DESCRIPTOR_NAME, manifest_name, object_key};
use crate::manifest::{
    FileRow, GtidCoverage, HistoryIntegrity, Manifest, PromotionRecord, RecordKind, Violation,
};

/// Server UUID of site `a` (A in the spec's examples).
pub const UUID_A: Uuid = Uuid::from_bytes([0xaa; 16]);
/// Server UUID of site `b` (Bu in the spec's examples).
pub const UUID_B: Uuid = Uuid::from_bytes([0xbb; 16]);
/// Server UUID of site `c`.
pub const UUID_C: Uuid = Uuid::from_bytes([0xcc; 16]);
/// The group UID every fixture uses.
pub const GROUP_UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
/// The normalized form of [`Fixture::destination`].
pub const FIXTURE_DESTINATION: &str =
    "s3://lion-backups/prod/binlogs?endpoint=http://127.0.0.1:8333";
/// The passphrase of the encrypted fixture.
pub const PASSPHRASE: &[u8] = b"correct horse battery staple";
/// The probe interval of fixture records.
pub const PROBE_INTERVAL: SignedDuration = SignedDuration::from_secs(5);

/// The named scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scenario {
    /// Sites a, b, c; a writes A:1-30, a planned failover to b, b writes Bu:1-20; a's oldest file
    /// is retired.
    HealthyPlannedFailover,
    /// a archives A:1-40 and dies with A:41-60 sealed but never archived; b, cloned at A:1-60,
    /// is promoted and writes Bu:1-20: gap A:41-60.
    ArchiveGap,
    /// The spec's lossy failover: a archives A:1-100 and dies; b, promoted having applied only
    /// A:1-95, writes Bu:1-50; a is later recloned from b. Fork A:96-100.
    LossyFailoverFork,
    /// a archives A:1-20, then sets its history-integrity marker (BinlogFormat) and stops
    /// uploading; b, promoted at A:1-30, writes Bu:1-20.
    HistoryIntegrityMarker,
    /// A version 1 prefix: manifests without archiveId and no archive.json.
    LegacyV1,
    /// A passphrase archive (keyed content ids, keyCheck), one site writing A:1-20.
    Encrypted,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 6] = [
        Scenario::HealthyPlannedFailover,
        Scenario::ArchiveGap,
        Scenario::LossyFailoverFork,
        Scenario::HistoryIntegrityMarker,
        Scenario::LegacyV1,
        Scenario::Encrypted,
    ];

    /// A stable name (`healthy-planned-failover`, …).
    pub fn name(self) -> &'static str {
        match self {
            Scenario::HealthyPlannedFailover => "healthy-planned-failover",
            Scenario::ArchiveGap => "archive-gap",
            Scenario::LossyFailoverFork => "lossy-failover-fork",
            Scenario::HistoryIntegrityMarker => "history-integrity-marker",
            Scenario::LegacyV1 => "legacy-v1",
            Scenario::Encrypted => "encrypted",
        }
    }
}

/// A built archive.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The scenario.
    pub scenario: Scenario,
    /// Key (relative to `binlogs/`) to bytes.
    pub objects: BTreeMap<String, Vec<u8>>,
    /// The descriptor (none for the legacy prefix).
    pub descriptor: Option<ArchiveDescriptor>,
    /// The manifests by site (none for the legacy prefix).
    pub manifests: BTreeMap<String, Manifest>,
    /// The passphrase, for the encrypted scenario.
    pub passphrase: Option<Vec<u8>>,
    /// Named backups the scenario's tests use.
    pub backups: BTreeMap<&'static str, BackupPoint>,
    /// Commit time of each archived or lost transaction, by GTID text.
    pub commit_times: BTreeMap<String, Timestamp>,
}

/// What a built archive is anchored to: its clock, its group, its destination and site names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureOptions {
    /// The time the scenario starts at (the descriptor's creation time; every commit follows it).
    pub base_time: Timestamp,
    /// The group the archive belongs to (the descriptor's source; its UID derives the archive ID).
    pub group: SourceRef,
    /// The destination the archive ID is derived for.
    pub destination: Destination,
    /// The names sites `a`, `b` and `c` take, in that order.
    pub site_names: [String; 3],
}

impl Default for FixtureOptions {
    /// 2026-11-05T09:30:00Z, `prod/lion` with [`GROUP_UID`], [`Fixture::destination`], sites
    /// `a`, `b`, `c`.
    fn default() -> Self {
        Self {
            base_time: base_time(),
            group: SourceRef {
                namespace: "prod".into(),
                name: "lion".into(),
                uid: GROUP_UID.into(),
            },
            destination: Fixture::destination(),
            site_names: ["a".into(), "b".into(), "c".into()],
        }
    }
}

impl FixtureOptions {
    /// The name site `letter` (`a`, `b` or `c`) takes.
    fn site(&self, letter: &str) -> String {
        let index = match letter {
            "a" => 0,
            "b" => 1,
            "c" => 2,
            _ => return letter.to_owned(),
        };
        self.site_names[index].clone()
    }
}

impl Fixture {
    /// Builds a scenario with [`FixtureOptions::default`].
    pub fn build(scenario: Scenario) -> Fixture {
        Fixture::build_with(scenario, &FixtureOptions::default())
    }

    /// Builds a scenario anchored to `options`.
    pub fn build_with(scenario: Scenario, options: &FixtureOptions) -> Fixture {
        match scenario {
            Scenario::HealthyPlannedFailover => healthy(options),
            Scenario::ArchiveGap => archive_gap(options),
            Scenario::LossyFailoverFork => lossy_fork(options),
            Scenario::HistoryIntegrityMarker => marker(options),
            Scenario::LegacyV1 => legacy(options),
            Scenario::Encrypted => encrypted(options, false),
        }
    }

    /// The encrypted scenario anchored to `options`, its binlog objects sealed in `BRV1`
    /// envelopes under [`PASSPHRASE`] (bound to the archive and each object's key, as the
    /// archiver seals them), so a reader holding the passphrase opens and indexes every row.
    pub fn build_sealed(options: &FixtureOptions) -> Fixture {
        encrypted(options, true)
    }

    /// The last instant the archive describes: the newest commit, seal, record or backup.
    pub fn latest(&self) -> Option<Timestamp> {
        let rows = self.manifests.values().flat_map(|manifest| &manifest.files);
        let records = self.manifests.values().flat_map(|manifest| &manifest.promotions);
        rows.flat_map(|row| [row.last_event_time, row.archived_at])
            .flatten()
            .chain(records.map(|record| record.observed_at))
            .chain(self.backups.values().map(|point| point.dump_end))
            .chain(self.commit_times.values().copied())
            .max()
    }

    /// The commit time of a transaction (`uuid:n`).
    pub fn commit_time(&self, uuid: Uuid, gno: u64) -> Option<Timestamp> {
        self.commit_times.get(&format!("{uuid}:{gno}")).copied()
    }

    /// The S3 destination fixtures are derived for.
    pub fn destination() -> Destination {
        Destination::S3 {
            bucket: "lion-backups".into(),
            prefix: "prod".into(),
            endpoint: "http://127.0.0.1:8333".into(),
        }
    }
}

/// The set `uuid:start-end`.
pub fn range(uuid: Uuid, start: u64, end: u64) -> GtidSet {
    let mut set = GtidSet::new();
    // start..=end are fixture constants within 1..2^63.
    let _ = set.insert_interval(uuid, None, start, end);
    set
}

fn base_time() -> Timestamp {
    Timestamp::from_second(1_793_871_000).unwrap_or(Timestamp::UNIX_EPOCH) // 2026-11-05T09:30:00Z
}

#[derive(Debug, Clone)]
struct Txn {
    gtid: Gtid,
    origin_server_id: u32,
    commit: Timestamp,
}

#[derive(Debug)]
struct Server {
    uuid: Uuid,
    server_id: u32,
    executed: GtidSet,
    file_prev: GtidSet,
    file_start: Option<Timestamp>,
    pending: Vec<Txn>,
    next_file: u32,
    base_gtids: Option<GtidSet>,
}

/// Builds archives from simulated servers (one per site).
struct Builder {
    scenario: Scenario,
    archive_id: ArchiveId,
    key: ContentIdKey,
    write_bodies: bool,
    /// Seal each body under this key (an encrypted archive with its objects).
    seal_with: Option<crate::envelope::EnvelopeKey>,
    now: Timestamp,
    servers: BTreeMap<String, Server>,
    manifests: BTreeMap<String, Manifest>,
    objects: BTreeMap<String, Vec<u8>>,
    next_gno: BTreeMap<Uuid, u64>,
    commit_times: BTreeMap<String, Timestamp>,
    descriptor: ArchiveDescriptor,
    options: FixtureOptions,
}

impl Builder {
    fn new(scenario: Scenario, passphrase: Option<&[u8]>, options: &FixtureOptions) -> Builder {
        let destination = options.destination.normalize().unwrap_or_else(|_| {
            crate::destination::NormalizedDestination::new_unchecked(FIXTURE_DESTINATION)
        });
        let archive_id = ArchiveId::derive(&options.group.uid, &destination);
        let encryption = match passphrase {
            Some(passphrase) => Encryption::passphrase(passphrase, &archive_id),
            None => Encryption::none(),
        };
        let descriptor = ArchiveDescriptor::new(
            archive_id.clone(),
            options.group.clone(),
            encryption,
            options.base_time,
            options.site("a"),
        );
        Builder {
            scenario,
            archive_id,
            key: passphrase.map_or(ContentIdKey::Plain, ContentIdKey::from_passphrase),
            write_bodies: passphrase.is_none(),
            seal_with: None,
            now: options.base_time,
            servers: BTreeMap::new(),
            manifests: BTreeMap::new(),
            objects: BTreeMap::new(),
            next_gno: BTreeMap::new(),
            commit_times: BTreeMap::new(),
            descriptor,
            options: options.clone(),
        }
    }

    /// The manifest of site `letter`.
    fn manifest_mut(&mut self, letter: &str) -> Option<&mut Manifest> {
        let site = self.options.site(letter);
        self.manifests.get_mut(&site)
    }

    fn site(&mut self, site: &str, uuid: Uuid, server_id: u32) {
        let site = &self.options.site(site);
        self.servers.insert(
            site.to_owned(),
            Server {
                uuid,
                server_id,
                executed: GtidSet::new(),
                file_prev: GtidSet::new(),
                file_start: None,
                pending: Vec::new(),
                next_file: 1,
                base_gtids: None,
            },
        );
        self.manifests.insert(site.to_owned(), Manifest::new(self.archive_id.clone(), site));
    }

    fn tick(&mut self, seconds: i64) {
        self.now = shift(self.now, SignedDuration::from_secs(seconds));
    }

    /// `site`'s server commits `count` transactions of its own, `spacing` seconds apart.
    fn commit(&mut self, site: &str, count: u64, spacing: i64) -> Vec<Txn> {
        let site = &self.options.site(site);
        let mut committed = Vec::new();
        for _ in 0..count {
            self.tick(spacing);
            let Some(server) = self.servers.get_mut(site) else { return committed };
            let gno = self.next_gno.entry(server.uuid).or_insert(1);
            let gtid = Gtid { uuid: server.uuid, tag: None, gno: *gno };
            *gno += 1;
            let txn = Txn { gtid, origin_server_id: server.server_id, commit: self.now };
            let _ = server.executed.insert(&txn.gtid);
            server.file_start.get_or_insert(self.now);
            server.pending.push(txn.clone());
            self.commit_times.insert(txn.gtid.to_string(), txn.commit);
            committed.push(txn);
        }
        committed
    }

    /// Replicas apply transactions (log_replica_updates: they enter the replica's binlog).
    fn replicate(&mut self, to: &str, txns: &[Txn]) {
        let to = &self.options.site(to);
        let now = self.now;
        if let Some(server) = self.servers.get_mut(to) {
            for txn in txns {
                if server.executed.contains(&txn.gtid) {
                    continue;
                }
                let _ = server.executed.insert(&txn.gtid);
                server.file_start.get_or_insert(now);
                server.pending.push(txn.clone());
            }
        }
    }

    fn record(&mut self, site: &str, kind: RecordKind) {
        let site = &self.options.site(site);
        self.tick(2);
        let Some(server) = self.servers.get(site) else { return };
        let record = PromotionRecord {
            kind,
            server_uuid: server.uuid,
            server_id: server.server_id,
            gtid_executed: server.executed.clone(),
            observed_at: self.now,
            probe_interval: Some(PROBE_INTERVAL),
            read_only_gtid_executed: None,
            extra: Default::default(),
        };
        if let Some(manifest) = self.manifests.get_mut(site) {
            manifest.push_record(record);
        }
    }

    /// The server's data is replaced by a CLONE of `donor` (new binlog, bridge row next).
    fn reclone(&mut self, site: &str, donor: &str) {
        let site = &self.options.site(site);
        let donor = &self.options.site(donor);
        let Some(executed) = self.servers.get(donor).map(|s| s.executed.clone()) else { return };
        if let Some(server) = self.servers.get_mut(site) {
            server.executed = executed.clone();
            server.file_prev = executed.clone();
            server.file_start = None;
            server.pending.clear();
            server.base_gtids = Some(executed);
        }
    }

    /// Seals the site's active binlog; uploads it when `archive` (the site is writable).
    fn seal(&mut self, site: &str, archive: bool) {
        let site = &self.options.site(site);
        self.tick(1);
        let now = self.now;
        let Some(server) = self.servers.get_mut(site) else { return };
        let name = format!("mysql-bin.{:06}", server.next_file);
        server.next_file += 1;
        let pending = std::mem::take(&mut server.pending);
        let prev = std::mem::replace(&mut server.file_prev, server.executed.clone());
        let file_start = server.file_start.take().unwrap_or(now);
        let base_gtids = server.base_gtids.take();
        let server_id = server.server_id;
        if !archive {
            return;
        }
        let body = binlog_body(server_id, &prev, &pending, file_start, &name);
        let summary = bloodraven_binlog::scan(&body);
        let id = self.key.content_id(&body);
        let mut gtids = GtidSet::new();
        for txn in &pending {
            let _ = gtids.insert(&txn.gtid);
        }
        let Ok(key) = object_key(site, &name, &id) else { return };
        let row = FileRow {
            name,
            id: Some(id),
            key: key.clone(),
            size: body.len() as u64,
            previous_gtids: prev,
            gtids,
            first_event_time: Some(pending.first().map_or(file_start, |t| t.commit)),
            last_event_time: Some(pending.last().map_or(file_start, |t| t.commit)),
            archived_at: Some(now),
            gtid_coverage: Some(GtidCoverage {
                complete: summary.coverage.is_complete(),
                gtids: summary.coverage.gtids.clone(),
                content_id: Some(id),
                extra: Default::default(),
            }),
            divergent: false,
            quarantined: false,
            base_gtids,
            extra: Default::default(),
        };
        if self.write_bodies {
            self.objects.insert(key, body);
        } else if let Some(envelope) = &self.seal_with {
            let context = crate::envelope::binlog_context(&self.archive_id, &key);
            if let Ok(sealed) =
                crate::envelope::seal(&key, &body, envelope, &context, &fixture_random(&key))
            {
                self.objects.insert(key, sealed);
            }
        }
        if let Some(manifest) = self.manifests.get_mut(site) {
            let _ = manifest.upsert_file(row);
        }
    }

    fn finish(
        mut self,
        backups: BTreeMap<&'static str, BackupPoint>,
        passphrase: Option<Vec<u8>>,
    ) -> Fixture {
        self.objects.insert(DESCRIPTOR_NAME.to_owned(), self.descriptor.to_vec());
        for (site, manifest) in &self.manifests {
            if let Ok(name) = manifest_name(site) {
                self.objects.insert(name, manifest.to_vec());
            }
        }
        Fixture {
            scenario: self.scenario,
            objects: self.objects,
            descriptor: Some(self.descriptor),
            manifests: self.manifests,
            passphrase,
            backups,
            commit_times: self.commit_times,
        }
    }

    fn backup(&self, site: &str) -> BackupPoint {
        let site = &self.options.site(site);
        let executed = self.servers.get(site).map(|s| s.executed.clone()).unwrap_or_default();
        BackupPoint { gtid_executed: executed, dump_end: self.now }
    }
}

fn shift(ts: Timestamp, by: SignedDuration) -> Timestamp {
    ts.checked_add(by).unwrap_or(ts)
}

fn micros(ts: Timestamp) -> u64 {
    u64::try_from(ts.as_microsecond()).unwrap_or(0)
}

fn seconds(ts: Timestamp) -> u32 {
    u32::try_from(ts.as_second()).unwrap_or(0)
}

/// A real MySQL binlog: format description, previous GTIDs, the transactions, rotate.
fn binlog_body(
    server_id: u32,
    prev: &GtidSet,
    txns: &[Txn],
    start: Timestamp,
    name: &str,
) -> Vec<u8> {
    let mut writer = Writer::new(&WriterOptions {
        server_id,
        create_timestamp: seconds(start),
        ..WriterOptions::default()
    });
    writer
        .previous_gtids(prev, seconds(start))
        .expect("fixture GTID sets are representable in a PREVIOUS_GTIDS event");
    for (index, txn) in txns.iter().enumerate() {
        let gno = i64::try_from(txn.gtid.gno).unwrap_or(i64::MAX);
        let spec = TransactionSpec {
            gtid: Some(txn.gtid),
            server_id: txn.origin_server_id,
            original_commit_us: micros(txn.commit),
            immediate_commit_us: micros(txn.commit),
            last_committed: index as i64,
            sequence_number: index as i64 + 1,
            body: TransactionBody::Rows {
                table: RowsTable { schema: "app".into(), table: "orders".into(), table_id: 101 },
                rows: vec![(gno, format!("{}", txn.gtid).into_bytes())],
            },
            compress: false,
        };
        writer.transaction(&spec).expect("fixture transactions have valid GTIDs and commit times");
    }
    let next = name
        .rsplit_once('.')
        .and_then(|(stem, number)| {
            number.parse::<u32>().ok().map(|n| format!("{stem}.{:06}", n + 1))
        })
        .unwrap_or_else(|| format!("{name}.next"));
    let end = txns.last().map_or(start, |t| t.commit);
    writer.rotate(&next, seconds(end)).expect("fixture rotate names are valid");
    writer.into_bytes()
}

fn healthy(options: &FixtureOptions) -> Fixture {
    let mut b = Builder::new(Scenario::HealthyPlannedFailover, None, options);
    b.site("a", UUID_A, 1);
    b.site("b", UUID_B, 2);
    b.site("c", UUID_C, 3);
    b.record("a", RecordKind::Promotion);
    let mut backups = BTreeMap::new();
    for file in 0..3 {
        let txns = b.commit("a", 10, 10);
        b.replicate("b", &txns);
        b.replicate("c", &txns);
        if file == 1 {
            // A backup on c halfway through A:11-20.
            backups.insert("replica-c-before-failover", b.backup("c"));
        }
        b.seal("a", true);
        b.seal("b", false);
        b.seal("c", false);
    }
    // Planned failover: a flushed and archived (above), b promoted at A:1-30.
    b.record("b", RecordKind::Promotion);
    for file in 0..2 {
        let txns = b.commit("b", 10, 10);
        b.replicate("a", &txns);
        b.replicate("c", &txns);
        if file == 0 {
            backups.insert("b-after-failover", b.backup("b"));
        }
        b.seal("b", true);
    }
    // Retention retired a's oldest file (A:1-10); every backup holds it.
    if let Some(manifest) = b.manifest_mut("a") {
        let oldest = manifest.files.first().map(|r| r.name.clone());
        let _ = manifest.retire(|row| Some(&row.name) == oldest.as_ref());
        if let Some(name) = oldest {
            let id = manifest.pruned.first().and_then(|r| r.id);
            manifest.acknowledge_deleted(&name, id.as_ref());
            if let Ok(key) = object_key(
                &options.site("a"),
                &name,
                &id.unwrap_or(crate::ident::ContentId::from_bytes([0; 32])),
            ) {
                b.objects.remove(&key);
            }
        }
    }
    b.finish(backups, None)
}

fn archive_gap(options: &FixtureOptions) -> Fixture {
    let mut b = Builder::new(Scenario::ArchiveGap, None, options);
    b.site("a", UUID_A, 1);
    b.site("b", UUID_B, 2);
    b.record("a", RecordKind::Promotion);
    let mut backups = BTreeMap::new();
    let mut all = Vec::new();
    for file in 0..3 {
        let txns = b.commit("a", 20, 5);
        all.extend(txns.clone());
        if file == 0 {
            b.replicate("b", &txns);
            backups.insert("b-early", b.backup("b"));
        }
        // The third file (A:41-60) is sealed while a is dying and never archived.
        b.seal("a", file < 2);
    }
    // b is recloned from a at A:1-60 (a bridge row), then promoted.
    b.replicate("b", &all);
    b.reclone("b", "a");
    b.record("b", RecordKind::Promotion);
    let txns = b.commit("b", 10, 5);
    let _ = txns;
    b.seal("b", true);
    backups.insert("b-after-gap", b.backup("b"));
    let _ = b.commit("b", 10, 5);
    b.seal("b", true);
    b.finish(backups, None)
}

fn lossy_fork(options: &FixtureOptions) -> Fixture {
    let mut b = Builder::new(Scenario::LossyFailoverFork, None, options);
    b.site("a", UUID_A, 1);
    b.site("b", UUID_B, 2);
    b.record("a", RecordKind::Promotion);
    let mut backups = BTreeMap::new();
    // a writes A:1-50 and A:51-95 (replicated to b), then A:96-100 that b never receives.
    let first = b.commit("a", 50, 4);
    b.replicate("b", &first);
    backups.insert("b-before-failover", b.backup("b"));
    b.seal("a", true);
    b.seal("b", false);
    let second = b.commit("a", 45, 4);
    b.replicate("b", &second[..40]);
    b.seal("a", true);
    b.seal("b", false);
    b.replicate("b", &second[40..]);
    let _lost = b.commit("a", 5, 4);
    b.seal("a", true);
    // a dies; b is promoted having applied only A:1-95.
    b.tick(30);
    b.record("b", RecordKind::Promotion);
    let _ = b.commit("b", 25, 4);
    b.seal("b", true);
    backups.insert("b-after-failover", b.backup("b"));
    let _ = b.commit("b", 25, 4);
    b.seal("b", true);
    // a is recloned from b: a reset record whose gtid_executed lacks A:96-100.
    b.reclone("a", "b");
    b.record("a", RecordKind::Reset);
    b.finish(backups, None)
}

fn marker(options: &FixtureOptions) -> Fixture {
    let mut b = Builder::new(Scenario::HistoryIntegrityMarker, None, options);
    b.site("a", UUID_A, 1);
    b.site("b", UUID_B, 2);
    b.record("a", RecordKind::Promotion);
    let mut backups = BTreeMap::new();
    let txns = b.commit("a", 10, 5);
    b.replicate("b", &txns);
    backups.insert("b-early", b.backup("b"));
    b.seal("a", true);
    let txns = b.commit("a", 10, 5);
    b.replicate("b", &txns);
    b.seal("a", true);
    b.tick(10);
    let now = b.now;
    if let Some(manifest) = b.manifest_mut("a") {
        manifest.history_integrity = Some(HistoryIntegrity {
            violation: Violation::BinlogFormat,
            detail: "binlog_format=MIXED".into(),
            at: now,
            extra: Default::default(),
        });
    }
    // a stops uploading: A:21-30 are sealed but never archived.
    let txns = b.commit("a", 10, 5);
    b.replicate("b", &txns);
    b.seal("a", false);
    b.seal("b", false);
    b.record("b", RecordKind::Promotion);
    let _ = b.commit("b", 10, 5);
    backups.insert("b-after-failover", b.backup("b"));
    let _ = b.commit("b", 10, 5);
    b.seal("b", true);
    b.finish(backups, None)
}

/// The envelope randomness of a fixture object: derived from its key, so fixtures are
/// reproducible (a writer draws it from the kernel for every object).
fn fixture_random(object_key: &str) -> crate::envelope::SealRandom {
    use sha2::{Digest, Sha256};
    let digest = |domain: &[u8]| -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(domain);
        hasher.update(object_key.as_bytes());
        hasher.finalize().into()
    };
    let salt = digest(b"bloodraven/fixtures/salt\0");
    let mut nonce_prefix = [0u8; crate::envelope::NONCE_PREFIX_LEN];
    nonce_prefix.copy_from_slice(
        &digest(b"bloodraven/fixtures/nonce\0")[..crate::envelope::NONCE_PREFIX_LEN],
    );
    crate::envelope::SealRandom { salt, nonce_prefix }
}

fn encrypted(options: &FixtureOptions, sealed: bool) -> Fixture {
    let mut b = Builder::new(Scenario::Encrypted, Some(PASSPHRASE), options);
    if sealed {
        b.seal_with = Some(crate::envelope::EnvelopeKey::from_passphrase(PASSPHRASE));
    }
    b.site("a", UUID_A, 1);
    b.record("a", RecordKind::Promotion);
    let mut backups = BTreeMap::new();
    let _ = b.commit("a", 10, 5);
    backups.insert("a-early", b.backup("a"));
    b.seal("a", true);
    let _ = b.commit("a", 10, 5);
    b.seal("a", true);
    b.finish(backups, Some(PASSPHRASE.to_vec()))
}

fn legacy(options: &FixtureOptions) -> Fixture {
    let start = options.base_time;
    let site = options.site("a");
    let mut objects = BTreeMap::new();
    let mut files = Vec::new();
    let mut prev = GtidSet::new();
    let mut commit_times = BTreeMap::new();
    for file in 0..2u64 {
        let mut txns = Vec::new();
        for n in 1..=10u64 {
            let gno = file * 10 + n;
            let commit = shift(start, SignedDuration::from_secs((gno * 5) as i64));
            let gtid = Gtid { uuid: UUID_A, tag: None, gno };
            commit_times.insert(gtid.to_string(), commit);
            txns.push(Txn { gtid, origin_server_id: 1, commit });
        }
        let name = format!("mysql-bin.{:06}", file + 1);
        let body = binlog_body(1, &prev, &txns, txns[0].commit, &name);
        let end = prev.union(&range(UUID_A, file * 10 + 1, file * 10 + 10));
        files.push(json!({
            "name": name,
            "remotePath": format!("{site}/{name}"),
            "size": body.len(),
            "firstEventTime": crate::time::format_timestamp(txns[0].commit),
            "lastEventTime": crate::time::format_timestamp(txns[9].commit),
            "previousGtids": prev.to_compact_string(),
            "endGtids": end.to_compact_string(),
            "archivedAt": crate::time::format_timestamp(txns[9].commit),
        }));
        objects.insert(format!("{site}/{name}"), body);
        prev = end;
    }
    let manifest = json!({ "version": 1, "site": site, "files": files });
    objects.insert(
        format!("manifest-{site}.json"),
        serde_json::to_vec_pretty(&manifest).unwrap_or_default(),
    );
    Fixture {
        scenario: Scenario::LegacyV1,
        objects,
        descriptor: None,
        manifests: BTreeMap::new(),
        passphrase: None,
        backups: BTreeMap::new(),
        commit_times,
    }
}

/// A large synthetic archive for benchmarks: `files` rows spread over `sites` sites (site-0 …),
/// the primary moving to the next site (a planned failover, with its promotion record) every
/// `files_per_episode` rows, 100 transactions per file, one file per minute. No binlog bodies:
/// rows carry a content id of their name and a complete coverage proof.
pub fn synthetic_manifests(files: usize, sites: usize, files_per_episode: usize) -> Vec<Manifest> {
    let sites = sites.max(1);
    let files_per_episode = files_per_episode.max(1);
    let destination = Fixture::destination().normalize().unwrap_or_else(|_| {
        crate::destination::NormalizedDestination::new_unchecked(FIXTURE_DESTINATION)
    });
    let archive_id = ArchiveId::derive(GROUP_UID, &destination);
    let uuids: Vec<Uuid> = (0..sites)
        .map(|n| {
            let mut bytes = [0x5au8; 16];
            bytes[15] = n as u8;
            Uuid::from_bytes(bytes)
        })
        .collect();
    let mut manifests: Vec<Manifest> =
        (0..sites).map(|n| Manifest::new(archive_id.clone(), format!("site-{n}"))).collect();
    let mut executed = GtidSet::new();
    let mut next_gno = vec![1u64; sites];
    let mut file_numbers = vec![1u32; sites];
    let start = base_time();
    for index in 0..files {
        let site = (index / files_per_episode) % sites;
        let at = shift(start, SignedDuration::from_secs(60 * index as i64));
        if index % files_per_episode == 0 {
            manifests[site].push_record(PromotionRecord {
                kind: RecordKind::Promotion,
                server_uuid: uuids[site],
                server_id: site as u32 + 1,
                gtid_executed: executed.clone(),
                observed_at: shift(at, SignedDuration::from_secs(-20)),
                probe_interval: Some(PROBE_INTERVAL),
                read_only_gtid_executed: None,
                extra: Default::default(),
            });
        }
        let first = next_gno[site];
        let last = first + 99;
        next_gno[site] = last + 1;
        let gtids = range(uuids[site], first, last);
        let name = format!("mysql-bin.{:06}", file_numbers[site]);
        file_numbers[site] += 1;
        let id = ContentIdKey::Plain.content_id(format!("{site}/{name}").as_bytes());
        let key = object_key(&manifests[site].site, &name, &id).unwrap_or_default();
        manifests[site].files.push(FileRow {
            name,
            id: Some(id),
            key,
            size: 100 << 20,
            previous_gtids: executed.clone(),
            gtids: gtids.clone(),
            first_event_time: Some(at),
            last_event_time: Some(shift(at, SignedDuration::from_secs(59))),
            archived_at: Some(shift(at, SignedDuration::from_secs(61))),
            gtid_coverage: Some(GtidCoverage {
                complete: true,
                gtids: gtids.clone(),
                content_id: Some(id),
                extra: Default::default(),
            }),
            divergent: false,
            quarantined: false,
            base_gtids: None,
            extra: Default::default(),
        });
        executed.union_with(&gtids);
    }
    manifests
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> FixtureOptions {
        FixtureOptions {
            base_time: "2026-04-20T13:00:00Z".parse().unwrap(),
            group: SourceRef {
                namespace: "orders".into(),
                name: "orders".into(),
                uid: "u-1".into(),
            },
            destination: Destination::Pvc {
                namespace: "orders".into(),
                claim: "archive".into(),
                sub_path: "orders".into(),
            },
            site_names: ["iad".into(), "pdx".into(), "fra".into()],
        }
    }

    #[test]
    fn build_is_build_with_the_default_options() {
        for scenario in Scenario::ALL {
            let built = Fixture::build(scenario);
            let with = Fixture::build_with(scenario, &FixtureOptions::default());
            assert_eq!(built.objects, with.objects, "{}", scenario.name());
        }
        let descriptor = Fixture::build(Scenario::HealthyPlannedFailover).descriptor.unwrap();
        assert_eq!(descriptor.created_at, base_time());
        assert_eq!(descriptor.source.uid, GROUP_UID);
    }

    #[test]
    fn options_anchor_the_clock_the_group_the_destination_and_the_sites() {
        let options = options();
        for scenario in Scenario::ALL {
            let shifted = Fixture::build_with(scenario, &options);
            let default = Fixture::build(scenario);
            let span = |fixture: &Fixture, base: Timestamp| {
                fixture.latest().map(|latest| latest.duration_since(base))
            };
            assert_eq!(
                span(&shifted, options.base_time),
                span(&default, base_time()),
                "{}",
                scenario.name()
            );
            for key in shifted.objects.keys() {
                let top = key.split(['/', '.']).next().unwrap();
                assert!(
                    !["a", "b", "c", "manifest-a", "manifest-b", "manifest-c"].contains(&top),
                    "{}: {key}",
                    scenario.name()
                );
            }
            let Some(descriptor) = shifted.descriptor else { continue };
            let destination = options.destination.normalize().unwrap();
            assert_eq!(descriptor.archive_id, ArchiveId::derive("u-1", &destination));
            assert_eq!(descriptor.source, options.group);
            assert_eq!(descriptor.created_at, options.base_time);
            for (site, manifest) in &shifted.manifests {
                assert!(["iad", "pdx", "fra"].contains(&site.as_str()), "{site}");
                assert_eq!(&manifest.site, site);
                assert!(manifest.files.iter().all(|row| row.key.starts_with(&format!("{site}/"))));
            }
        }
    }
}
