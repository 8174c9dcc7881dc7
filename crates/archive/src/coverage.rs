//! The coverage model: what an archive holds, per site and for the group, and which targets a
//! backup can reach.
//!
//! Definitions (see `README.md` for the full text):
//!
//! - **File span**: one live row as a time range `[start, end]` (first and last event time) with
//!   its GTID set (the complete coverage proof when there is one, else the manifest hint), its
//!   completeness and flags. Quarantined rows are evidence only; rows of a site with a
//!   history-integrity marker are unusable. The rest are *usable*.
//! - **Episode**: a promotion (writable episode) or reset record, from `observedAt − probeInterval`
//!   (when bounded) to the next record of its site or the next promotion elsewhere.
//! - **Surviving history**: the newest promotion record's `gtidExecuted`, plus the predecessor
//!   and GTID sets of its site's rows sealed after it.
//! - **Gap**: transactions some row's predecessor set (or a promotion record) says were executed,
//!   that no usable row holds, and that are neither before the archive began nor retired.
//! - **Fork / dead branch**: archived transactions outside the surviving history. `LostAtFailover`
//!   when a later promotion record elsewhere (more than δ after their last commit) lacks them,
//!   otherwise `Branch` (written after the histories split).
//! - **Retention horizon**: the start of a site's oldest live row, once the site retired rows.
//! - **Restorable window** of a backup: from its dump end rounded up to the second to the newest
//!   archived commit reachable from the backup along one history without a gap, with the reason
//!   it stops there.
//!
//! Everything is computed from manifests (hints included); only a restore proves a target.
//! Cost: sorting, then O(n) set operations in the number of rows and records, plus the retries
//! of deferred rows, the checks of waiting quarantined rows and the promotion scans of dead-branch
//! rows that `README.md` ("Coverage model") bounds.

use std::collections::BTreeMap;

use bloodraven_gtid::{GtidSet, Uuid};
use jiff::{SignedDuration, Timestamp};

use crate::ident::ContentId;
use crate::manifest::{HistoryIntegrity, Manifest, RecordKind};
use crate::reader::OpenArchive;

/// The clock-skew margin δ (5 s, not configurable).
pub const DELTA: SignedDuration = SignedDuration::from_secs(5);

/// Planner token when the window stops at a gap.
pub const TOKEN_GAP: &str = "PITRArchiveGap";
/// Planner token when the window stops at divergent history.
pub const TOKEN_DIVERGENT: &str = "PITRArchiveDivergentHistory";
/// Planner token when the window stops at a site with a history-integrity marker.
pub const TOKEN_UNSAFE_HISTORY: &str = "PITRArchiveUnsafeHistory";
/// Planner token when the backup is not on the history beyond the window.
pub const TOKEN_NOT_ON_LINEAGE: &str = "PITRBackupNotOnLineage";
/// Planner token for a target after the archive head.
pub const TOKEN_NOT_COVERED: &str = "PITRTargetNotCovered";

fn shift(ts: Timestamp, by: SignedDuration) -> Timestamp {
    ts.checked_add(by).unwrap_or(if by.is_negative() { Timestamp::MIN } else { Timestamp::MAX })
}

/// The whole second after `ts`'s second: the earliest whole-second target after it.
fn next_second(ts: Timestamp) -> Timestamp {
    let second = ts.as_microsecond().div_euclid(1_000_000) + 1;
    Timestamp::from_second(second).unwrap_or(Timestamp::MAX)
}

/// One live row.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSpan {
    /// The site.
    pub site: String,
    /// The binlog file name.
    pub name: String,
    /// The content id (`None` for a legacy row).
    pub id: Option<ContentId>,
    /// Plaintext size.
    pub size: u64,
    /// First event time (falls back to `archivedAt`).
    pub start: Option<Timestamp>,
    /// Last event time (falls back to `start`).
    pub end: Option<Timestamp>,
    /// The transactions the row holds (proof when complete, hint otherwise).
    pub gtids: GtidSet,
    /// The file's predecessor set.
    pub previous_gtids: GtidSet,
    /// A complete coverage proof.
    pub complete: bool,
    /// Flagged by the divergence audit.
    pub divergent: bool,
    /// Quarantined (evidence only).
    pub quarantined: bool,
    /// A clone's bridge row.
    pub base_gtids: Option<GtidSet>,
    /// False for quarantined rows and rows of a site with a history-integrity marker.
    pub usable: bool,
}

impl FileSpan {
    fn start_or_min(&self) -> Timestamp {
        self.start.unwrap_or(Timestamp::MIN)
    }

    fn end_or_min(&self) -> Timestamp {
        self.end.or(self.start).unwrap_or(Timestamp::MIN)
    }
}

/// What ended an episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EpisodeEnd {
    /// The site's next record (label `site#n`).
    NextRecord(String),
    /// A promotion on another site (label).
    PromotionElsewhere(String),
}

/// A promotion or reset record as a span of time.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    /// `site#n`: the site and the record's index in its manifest.
    pub label: String,
    /// The site.
    pub site: String,
    /// Promotion or reset.
    pub kind: RecordKind,
    /// The server.
    pub server_uuid: Uuid,
    /// The server id.
    pub server_id: u32,
    /// The server's gtid_executed when observed.
    pub gtid_executed: GtidSet,
    /// When the probe returned.
    pub observed_at: Timestamp,
    /// The earliest time the change may have happened (`None`: unbounded).
    pub earliest_change: Option<Timestamp>,
    /// When the episode ended, if it did.
    pub ended_at: Option<Timestamp>,
    /// What ended it.
    pub ended_by: Option<EpisodeEnd>,
}

/// Retention state of a site.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Retention {
    /// Retired rows.
    pub retired: usize,
    /// Retired rows whose object delete is not acknowledged yet.
    pub pending_deletes: usize,
    /// The start of the oldest live row, when rows were retired.
    pub horizon: Option<Timestamp>,
    /// Transactions of retired rows (from the predecessor sets around them).
    pub retired_gtids: GtidSet,
}

/// A site's view.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteCoverage {
    /// The site.
    pub site: String,
    /// Indexes into [`Coverage::files`], in time order.
    pub files: Vec<usize>,
    /// Indexes into [`Coverage::episodes`], in time order.
    pub episodes: Vec<usize>,
    /// Retention.
    pub retention: Retention,
    /// The history-integrity marker.
    pub history_integrity: Option<HistoryIntegrity>,
    /// Rows flagged divergent.
    pub divergent_rows: usize,
    /// Quarantined rows.
    pub quarantined_rows: usize,
    /// Union of the site's row GTIDs.
    pub archived: GtidSet,
    /// Oldest and newest archived times.
    pub oldest: Option<Timestamp>,
    /// Newest archived time.
    pub newest: Option<Timestamp>,
}

/// Why transactions are missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GapKind {
    /// Committed on a site and never archived (an unarchived tail at a failover or reclone).
    NeverArchived,
    /// Held only by quarantined rows.
    Quarantined,
    /// Held only by rows of a site with a history-integrity marker.
    UnsafeHistory,
    /// Held only by retired rows (the backup is older than the retention horizon).
    Retired,
    /// Before the archive began (the backup is older than the archive).
    BeforeArchive,
    /// Archived, but only in rows that are themselves behind a gap.
    Unreachable,
}

/// What needs the missing transactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NeededBy {
    /// A row (index into [`Coverage::files`]).
    File(usize),
    /// A promotion record (index into [`Coverage::episodes`]).
    Record(usize),
}

/// Transactions of the history that no usable row holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    /// The transactions.
    pub gtids: GtidSet,
    /// Why they are missing.
    pub kind: GapKind,
    /// The first row or record that needs them.
    pub needed_by: NeededBy,
    /// The site of that row or record.
    pub site: String,
    /// When the history needed them (that row's start or record's observation).
    pub at: Timestamp,
}

/// Why archived transactions are on a dead branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForkCause {
    /// A later promotion elsewhere (label) started without them: lost at that failover.
    LostAtFailover(String),
    /// Written after the histories split (split brain), or errant.
    Branch,
}

/// Archived transactions the surviving history never executed.
#[derive(Debug, Clone, PartialEq)]
pub struct Fork {
    /// The site that archived them.
    pub site: String,
    /// The transactions.
    pub gtids: GtidSet,
    /// The rows holding them (indexes into [`Coverage::files`]).
    pub files: Vec<usize>,
    /// First and last commit of those rows.
    pub start: Option<Timestamp>,
    /// Last commit.
    pub end: Option<Timestamp>,
    /// Why.
    pub cause: ForkCause,
}

/// A site's history-integrity marker and what it takes away.
#[derive(Debug, Clone, PartialEq)]
pub struct UnsafeSite {
    /// The site.
    pub site: String,
    /// The marker.
    pub marker: HistoryIntegrity,
    /// Transactions archived only on this site (and other marked sites): every target that needs
    /// them is removed, including targets before the violation.
    pub removed: GtidSet,
    /// Its rows (indexes into [`Coverage::files`]).
    pub files: Vec<usize>,
}

/// A record whose server lost transactions it had issued and archived: if promoted again it
/// may reissue their numbers (PITRArchiveReissueRiskDetected).
#[derive(Debug, Clone, PartialEq)]
pub struct ReissueRisk {
    /// The record (index into [`Coverage::episodes`]).
    pub episode: usize,
    /// The server.
    pub server_uuid: Uuid,
    /// Its own archived transactions its gtid_executed no longer holds.
    pub lost: GtidSet,
}

/// A flagged row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlaggedRow {
    /// Index into [`Coverage::files`].
    pub file: usize,
    /// Divergence audit flag.
    pub divergent: bool,
    /// Quarantine flag.
    pub quarantined: bool,
}

/// The coverage of an archive.
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    /// Every live row of every site, ordered by (start, end, site, name).
    pub files: Vec<FileSpan>,
    /// Every record of every site, ordered by (observedAt, site, index).
    pub episodes: Vec<Episode>,
    /// Per site, by name.
    pub sites: Vec<SiteCoverage>,
    /// Union of the usable rows' GTIDs.
    pub archived: GtidSet,
    /// The state before the archive began (the oldest row's predecessor set).
    pub before_archive: GtidSet,
    /// The surviving history (see the module docs).
    pub surviving_history: GtidSet,
    /// The newest promotion record (index into `episodes`), which defines the surviving history.
    pub head_episode: Option<usize>,
    /// Gaps, in time order.
    pub gaps: Vec<Gap>,
    /// Forks (dead branches), in time order.
    pub forks: Vec<Fork>,
    /// Quarantined and divergent rows.
    pub flagged: Vec<FlaggedRow>,
    /// Sites with a history-integrity marker.
    pub unsafe_sites: Vec<UnsafeSite>,
    /// Reissue risks.
    pub reissue_risks: Vec<ReissueRisk>,
    /// The latest retention horizon of any site.
    pub retention_horizon: Option<Timestamp>,
}

/// A backup, as the window needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct BackupPoint {
    /// The backup's gtid_executed (B).
    pub gtid_executed: GtidSet,
    /// The dump's end (mysqlsh's `@.done.json` end, truncated to the second).
    pub dump_end: Timestamp,
}

/// Why a window stops where it does.
#[derive(Debug, Clone, PartialEq)]
pub enum WindowStop {
    /// Nothing newer is archived on this history (the active binlog is archived when it rotates);
    /// later targets refuse PITRTargetNotCovered.
    ArchiveHead,
    /// The history needs transactions no usable row holds (PITRArchiveGap, or
    /// PITRArchiveUnsafeHistory when only marked sites hold them).
    Gap {
        /// The missing transactions.
        missing: GtidSet,
        /// Why.
        kind: GapKind,
        /// The row that needs them.
        file: usize,
    },
    /// A row after the backup's newest transaction is on another history
    /// (PITRArchiveDivergentHistory): `ours` must be excluded to follow it, or `theirs` to stay.
    /// For a quarantined row (never replayed) `theirs` are its transactions the history that
    /// follows lacks: they must be excluded to go on.
    DivergentHistory {
        /// Transactions on the window's history that the other history lacks.
        ours: GtidSet,
        /// Transactions of the other history's row that the window's history lacks.
        theirs: GtidSet,
        /// The row.
        file: usize,
    },
    /// The history beyond needs the backup without some of its transactions
    /// (PITRBackupNotOnLineage): use another backup.
    BackupNotOnLineage {
        /// The backup's transactions that history lacks.
        in_backup: GtidSet,
        /// The row.
        file: usize,
    },
    /// The next row is on a site with a history-integrity marker (PITRArchiveUnsafeHistory).
    UnsafeHistory {
        /// The row.
        file: usize,
    },
}

impl WindowStop {
    /// The planner token a target just past the window refuses with.
    pub fn token(&self) -> &'static str {
        match self {
            WindowStop::ArchiveHead => TOKEN_NOT_COVERED,
            WindowStop::Gap { kind: GapKind::UnsafeHistory, .. }
            | WindowStop::UnsafeHistory { .. } => TOKEN_UNSAFE_HISTORY,
            WindowStop::Gap { .. } => TOKEN_GAP,
            WindowStop::DivergentHistory { .. } => TOKEN_DIVERGENT,
            WindowStop::BackupNotOnLineage { .. } => TOKEN_NOT_ON_LINEAGE,
        }
    }
}

/// The restorable window of a backup.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// The earliest target: the dump end rounded up to the second (later when the backup holds
    /// transactions committed after it).
    pub start: Timestamp,
    /// The latest target: the newest reachable archived commit; `None` when the window is empty.
    pub end: Option<Timestamp>,
    /// The newest archived commit of a backup transaction (a lower bound from hints).
    pub backup_newest: Option<Timestamp>,
    /// The state the walk reached (backup, exclusions and replayed rows). When `end` is capped
    /// before the stop (an overlapping divergent or quarantined row), rows that end after the
    /// cap are included: the state at `end` itself is a prefix of theirs.
    pub reached: GtidSet,
    /// Rows the walk replayed (see `reached`).
    pub files: Vec<usize>,
    /// Why it stops.
    pub stop: WindowStop,
    /// When the stop applies (the stopping row's start), if it is a row.
    pub stop_at: Option<Timestamp>,
}

impl Coverage {
    /// The coverage of an opened archive.
    pub fn of(archive: &OpenArchive) -> Coverage {
        Coverage::from_manifests(archive.manifests.values())
    }

    /// The coverage of a set of manifests (one per site).
    pub fn from_manifests<'a>(manifests: impl IntoIterator<Item = &'a Manifest>) -> Coverage {
        let manifests: Vec<&Manifest> = manifests.into_iter().collect();
        let mut files: Vec<FileSpan> = Vec::new();
        let mut episodes: Vec<(Episode, usize)> = Vec::new();
        for manifest in &manifests {
            let marked = manifest.history_integrity.is_some();
            for row in &manifest.files {
                let start = row.first_event_time.or(row.archived_at);
                files.push(FileSpan {
                    site: manifest.site.clone(),
                    name: row.name.clone(),
                    id: row.id,
                    size: row.size,
                    start,
                    end: row.last_event_time.or(start),
                    gtids: row.effective_gtids().clone(),
                    previous_gtids: row.previous_gtids.clone(),
                    complete: row.is_complete(),
                    divergent: row.divergent,
                    quarantined: row.quarantined,
                    base_gtids: row.base_gtids.clone(),
                    usable: !row.quarantined && !marked,
                });
            }
            for (index, record) in manifest.promotions.iter().enumerate() {
                episodes.push((
                    Episode {
                        label: format!("{}#{index}", manifest.site),
                        site: manifest.site.clone(),
                        kind: record.kind.clone(),
                        server_uuid: record.server_uuid,
                        server_id: record.server_id,
                        gtid_executed: record.gtid_executed.clone(),
                        observed_at: record.observed_at,
                        // A negative interval (meaningless) counts as zero.
                        earliest_change: (record.probe_interval)
                            .map(|p| shift(record.observed_at, -p.max(SignedDuration::ZERO))),
                        ended_at: None,
                        ended_by: None,
                    },
                    index,
                ));
            }
        }
        files.sort_by(|a, b| {
            (a.start_or_min(), a.end_or_min(), &a.site, &a.name).cmp(&(
                b.start_or_min(),
                b.end_or_min(),
                &b.site,
                &b.name,
            ))
        });
        episodes.sort_by(|(a, ai), (b, bi)| {
            (a.observed_at, &a.site, ai).cmp(&(b.observed_at, &b.site, bi))
        });
        let mut episodes: Vec<Episode> = episodes.into_iter().map(|(e, _)| e).collect();
        end_episodes(&mut episodes);

        let mut archived = GtidSet::new();
        let mut archived_any = GtidSet::new();
        let mut quarantined_gtids = GtidSet::new();
        let mut marked_gtids = GtidSet::new();
        let mut unmarked_gtids = GtidSet::new();
        for file in &files {
            archived_any.union_with(&file.gtids);
            if file.usable {
                archived.union_with(&file.gtids);
            }
            if file.quarantined {
                quarantined_gtids.union_with(&file.gtids);
            }
        }

        // Sites.
        let mut sites: Vec<SiteCoverage> = Vec::new();
        let mut site_index: BTreeMap<String, usize> = BTreeMap::new();
        let mut sorted_manifests = manifests.clone();
        sorted_manifests.sort_by(|a, b| a.site.cmp(&b.site));
        for manifest in &sorted_manifests {
            site_index.insert(manifest.site.clone(), sites.len());
            sites.push(SiteCoverage {
                site: manifest.site.clone(),
                files: Vec::new(),
                episodes: Vec::new(),
                retention: Retention::default(),
                history_integrity: manifest.history_integrity.clone(),
                divergent_rows: manifest.files.iter().filter(|r| r.divergent).count(),
                quarantined_rows: manifest.files.iter().filter(|r| r.quarantined).count(),
                archived: GtidSet::new(),
                oldest: None,
                newest: None,
            });
        }
        for (index, file) in files.iter().enumerate() {
            if let Some(&site) = site_index.get(&file.site) {
                let site = &mut sites[site];
                site.files.push(index);
                site.archived.union_with(&file.gtids);
                site.oldest = min_opt(site.oldest, file.start);
                site.newest = max_opt(site.newest, file.end);
                if site.history_integrity.is_some() {
                    marked_gtids.union_with(&file.gtids);
                } else {
                    unmarked_gtids.union_with(&file.gtids);
                }
            }
        }
        for (index, episode) in episodes.iter().enumerate() {
            if let Some(&site) = site_index.get(&episode.site) {
                sites[site].episodes.push(index);
            }
        }

        // The state before the archive began: the oldest row's (live or retired) predecessors.
        let mut oldest: Option<(Timestamp, &GtidSet)> = None;
        for file in &files {
            let start = file.start_or_min();
            if oldest.is_none_or(|(t, _)| start < t) {
                oldest = Some((start, &file.previous_gtids));
            }
        }
        for manifest in &manifests {
            for record in &manifest.pruned {
                let start = record.first_event_time.unwrap_or(Timestamp::MIN);
                if oldest.is_none_or(|(t, _)| start < t) {
                    oldest = Some((start, &record.previous_gtids));
                }
            }
        }
        let before_archive = oldest.map(|(_, set)| set.clone()).unwrap_or_default();

        // Retention.
        let mut retired_all = GtidSet::new();
        let mut retention_horizon = None;
        for manifest in &manifests {
            if manifest.pruned.is_empty() {
                continue;
            }
            let Some(&site) = site_index.get(&manifest.site) else { continue };
            let site = &mut sites[site];
            let oldest_live = site.files.first().map(|&i| &files[i]);
            let oldest_retired =
                manifest.pruned.iter().min_by_key(|r| r.first_event_time.unwrap_or(Timestamp::MIN));
            let mut retired_gtids = GtidSet::new();
            if let (Some(live), Some(retired)) = (oldest_live, oldest_retired) {
                retired_gtids = live.previous_gtids.difference(&retired.previous_gtids);
            }
            retired_all.union_with(&retired_gtids);
            site.retention = Retention {
                retired: manifest.pruned.len(),
                pending_deletes: manifest.pruned.iter().filter(|r| !r.deleted).count(),
                horizon: oldest_live.and_then(|f| f.start),
                retired_gtids,
            };
            retention_horizon = max_opt(retention_horizon, site.retention.horizon);
        }

        // Surviving history.
        let head_episode = episodes.iter().rposition(|e| e.kind == RecordKind::Promotion);
        let mut surviving_history = GtidSet::new();
        match head_episode {
            Some(head) => {
                let episode = &episodes[head];
                surviving_history.union_with(&episode.gtid_executed);
                let cutoff = shift(episode.earliest_change.unwrap_or(episode.observed_at), -DELTA);
                for file in files.iter().filter(|f| f.site == episode.site) {
                    if file.end_or_min() >= cutoff {
                        surviving_history.union_with(&file.previous_gtids);
                        surviving_history.union_with(&file.gtids);
                    }
                }
            }
            None => {
                // No records: the site with the newest row is the head; its rows are history.
                if let Some(newest) = files.iter().max_by_key(|f| f.end_or_min()) {
                    for file in files.iter().filter(|f| f.site == newest.site) {
                        surviving_history.union_with(&file.previous_gtids);
                        surviving_history.union_with(&file.gtids);
                    }
                }
            }
        }

        let forks = find_forks(&files, &episodes, &surviving_history);
        let gaps = find_gaps(
            &files,
            &episodes,
            &archived,
            &before_archive,
            &retired_all,
            &quarantined_gtids,
            &marked_gtids,
        );
        let flagged = files
            .iter()
            .enumerate()
            .filter(|(_, f)| f.divergent || f.quarantined)
            .map(|(file, f)| FlaggedRow {
                file,
                divergent: f.divergent,
                quarantined: f.quarantined,
            })
            .collect();
        let unsafe_sites = sites
            .iter()
            .filter_map(|site| {
                let marker = site.history_integrity.clone()?;
                Some(UnsafeSite {
                    site: site.site.clone(),
                    marker,
                    removed: site.archived.difference(&unmarked_gtids),
                    files: site.files.clone(),
                })
            })
            .collect();
        let reissue_risks = find_reissue_risks(&files, &episodes);

        Coverage {
            files,
            episodes,
            sites,
            archived,
            before_archive,
            surviving_history,
            head_episode,
            gaps,
            forks,
            flagged,
            unsafe_sites,
            reissue_risks,
            retention_horizon,
        }
    }

    /// The site's view, by name.
    pub fn site(&self, site: &str) -> Option<&SiteCoverage> {
        self.sites.iter().find(|s| s.site == site)
    }

    /// The restorable window of `backup`, replaying nothing in `exclude` (excludeGtids).
    pub fn window(&self, backup: &BackupPoint, exclude: &GtidSet) -> Window {
        let b = &backup.gtid_executed;
        // The newest archived commit of a backup transaction (row granularity: a row wholly in
        // the backup counts with its end, a row partly in it with its start).
        let mut backup_newest: Option<Timestamp> = None;
        for file in &self.files {
            if file.gtids.is_empty() || file.gtids.is_disjoint(b) {
                continue;
            }
            let at = if file.gtids.is_subset(b) { file.end } else { file.start };
            backup_newest = max_opt(backup_newest, at);
        }
        let mut start = next_second(backup.dump_end);
        if let Some(newest) = backup_newest {
            start = start.max(next_second(newest));
        }
        let mut walk = Walk {
            coverage: self,
            backup: b,
            exclude,
            backup_newest,
            state: b.union(exclude),
            end: None,
            files: Vec::new(),
            quarantined: Vec::new(),
        };
        let (stop, stop_at) = walk.run();
        let mut end = walk.end;
        if let (Some(at), Some(e)) = (stop_at, end)
            && at <= e
        {
            end = Some(shift(at, -SignedDuration::from_micros(1)));
        }
        let end = end.filter(|e| *e >= start);
        Window { start, end, backup_newest, reached: walk.state, files: walk.files, stop, stop_at }
    }
}

struct Walk<'a> {
    coverage: &'a Coverage,
    backup: &'a GtidSet,
    exclude: &'a GtidSet,
    backup_newest: Option<Timestamp>,
    state: GtidSet,
    end: Option<Timestamp>,
    files: Vec<usize>,
    /// Quarantined rows committed after the backup, with their transactions that the state
    /// lacks and no usable row holds: never replayed, but members of D for every later history
    /// that does not hold them (a quarantine is not an acknowledgement).
    quarantined: Vec<(usize, GtidSet)>,
}

enum Step {
    Skip,
    Defer,
    Applied,
    Stop(WindowStop, Timestamp),
}

impl Walk<'_> {
    fn run(&mut self) -> (WindowStop, Option<Timestamp>) {
        let mut deferred: Vec<usize> = Vec::new();
        // Rows in order of their last commit: a row that also holds replicated transactions
        // starts early, but its own transactions end it.
        let files = &self.coverage.files;
        let mut order: Vec<usize> = (0..files.len()).collect();
        order.sort_by_key(|&i| (files[i].end_or_min(), files[i].start_or_min()));
        for index in order {
            match self.step(index) {
                Step::Skip => {}
                Step::Defer => deferred.push(index),
                Step::Applied => {
                    if let Some(stop) = self.retry(&mut deferred) {
                        return (stop.0, Some(stop.1));
                    }
                }
                Step::Stop(stop, at) => return (stop, Some(at)),
            }
        }
        // Evidence that arrived after the rows it overlaps were applied.
        let quarantined = self.end.and_then(|end| self.quarantined_divergence(end));
        if let Some(&first) = deferred.first() {
            let file = &self.coverage.files[first];
            let at = file.start_or_min();
            if let Some((stop, quarantined_at)) = quarantined
                && quarantined_at < at
            {
                return (stop, Some(quarantined_at));
            }
            let missing = file.previous_gtids.difference(&self.state);
            return (
                WindowStop::Gap { missing, kind: GapKind::Unreachable, file: first },
                Some(at),
            );
        }
        match quarantined {
            Some((stop, at)) => (stop, Some(at)),
            None => (WindowStop::ArchiveHead, None),
        }
    }

    fn retry(&mut self, deferred: &mut Vec<usize>) -> Option<(WindowStop, Timestamp)> {
        loop {
            let mut progressed = false;
            let mut index = 0;
            while index < deferred.len() {
                match self.step(deferred[index]) {
                    Step::Defer => index += 1,
                    Step::Skip => {
                        deferred.remove(index);
                    }
                    Step::Applied => {
                        deferred.remove(index);
                        progressed = true;
                    }
                    Step::Stop(stop, at) => return Some((stop, at)),
                }
            }
            if !progressed {
                return None;
            }
        }
    }

    fn step(&mut self, index: usize) -> Step {
        let coverage = self.coverage;
        let file = &coverage.files[index];
        let new = file.gtids.difference(&self.state);
        if new.is_empty() {
            return Step::Skip;
        }
        let at = file.start_or_min();
        let before_backup = self.backup_newest.is_some_and(|newest| file.end_or_min() <= newest);
        if file.quarantined {
            // Evidence only: its transactions that no usable row holds wait for the history
            // that follows (a gap when that history needs them, D when it does not).
            let evidence = new.difference(&coverage.archived);
            if !before_backup && !evidence.is_empty() {
                self.quarantined.push((index, evidence));
            }
            return Step::Skip;
        }
        let lineage = file.previous_gtids.union(&file.gtids);
        let foreign = self.state.difference(self.exclude).difference(&lineage);
        if !foreign.is_empty() {
            if before_backup {
                return Step::Skip;
            }
            let in_backup = foreign.intersection(self.backup);
            let mut at = at.max(coverage.earliest_own_commit(file, &new));
            if let Some(newest) = self.backup_newest {
                at = at.max(newest);
            }
            let stop = if in_backup.is_empty() {
                WindowStop::DivergentHistory { ours: foreign, theirs: new, file: index }
            } else {
                WindowStop::BackupNotOnLineage { in_backup, file: index }
            };
            return Step::Stop(stop, at);
        }
        let need = file.previous_gtids.difference(&self.state);
        if !need.is_empty() {
            if need.is_subset(&coverage.archived) {
                return Step::Defer;
            }
            let missing = need.difference(&coverage.archived);
            return Step::Stop(
                WindowStop::Gap { kind: coverage.classify_missing(&missing), missing, file: index },
                at,
            );
        }
        if !file.usable {
            // A marked site's row: only transactions no unmarked row holds need its bytes.
            if new.is_subset(&coverage.archived) {
                return Step::Skip;
            }
            return Step::Stop(WindowStop::UnsafeHistory { file: index }, at);
        }
        if let Some((stop, at)) = self.quarantined_divergence(file.end_or_min()) {
            return Step::Stop(stop, at);
        }
        self.state.union_with(&file.gtids);
        self.end = max_opt(self.end, file.end);
        self.files.push(index);
        Step::Applied
    }

    /// A quarantined row waiting as evidence that committed before `until`: its transactions are
    /// in D for targets after its first commit (after the backup's newest), because no history
    /// the walk can follow holds them (they are outside the state and no usable row holds them).
    fn quarantined_divergence(&self, until: Timestamp) -> Option<(WindowStop, Timestamp)> {
        let files = &self.coverage.files;
        let (index, theirs) = (self.quarantined.iter())
            .filter(|(index, _)| files[*index].start_or_min() < until)
            .min_by_key(|(index, _)| files[*index].start_or_min())?;
        let row = &files[*index];
        let row_lineage = row.previous_gtids.union(&row.gtids);
        let ours = self.state.difference(self.exclude).difference(&row_lineage);
        let mut at = row.start_or_min();
        if let Some(newest) = self.backup_newest {
            at = at.max(newest);
        }
        Some((WindowStop::DivergentHistory { ours, theirs: theirs.clone(), file: *index }, at))
    }
}

impl Coverage {
    /// A lower bound of the commit times of `new`, transactions of `file`: the row's start, or
    /// later when every origin server of `new` only started writing in an episode after it (a
    /// server's own transactions are committed while it is writable).
    fn earliest_own_commit(&self, file: &FileSpan, new: &GtidSet) -> Timestamp {
        let start = file.start_or_min();
        let end = shift(file.end_or_min(), DELTA);
        let mut bound: Option<Timestamp> = None;
        for uuid in new.uuids() {
            let episode = self.episodes.iter().rev().find(|e| {
                e.kind == RecordKind::Promotion && e.server_uuid == uuid && e.observed_at <= end
            });
            let Some(since) = episode.and_then(|e| e.earliest_change) else {
                return start;
            };
            bound = min_opt(bound, Some(since));
        }
        bound.map_or(start, |bound| bound.max(start))
    }

    fn classify_missing(&self, missing: &GtidSet) -> GapKind {
        let mut marked = GtidSet::new();
        let mut quarantined = GtidSet::new();
        for file in &self.files {
            if file.quarantined {
                quarantined.union_with(&file.gtids);
            } else if !file.usable {
                marked.union_with(&file.gtids);
            }
        }
        let mut retired = GtidSet::new();
        for site in &self.sites {
            retired.union_with(&site.retention.retired_gtids);
        }
        classify(missing, &self.before_archive, &retired, &quarantined, &marked)
    }
}

fn classify(
    missing: &GtidSet,
    before_archive: &GtidSet,
    retired: &GtidSet,
    quarantined: &GtidSet,
    marked: &GtidSet,
) -> GapKind {
    if missing.is_subset(marked) {
        GapKind::UnsafeHistory
    } else if missing.is_subset(quarantined) {
        GapKind::Quarantined
    } else if missing.is_subset(before_archive) {
        GapKind::BeforeArchive
    } else if missing.is_subset(&retired.union(before_archive)) {
        GapKind::Retired
    } else {
        GapKind::NeverArchived
    }
}

fn min_opt(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// Sets `ended_at`/`ended_by`: the site's next record, or the next promotion on another site.
fn end_episodes(episodes: &mut [Episode]) {
    let mut next_by_site: BTreeMap<String, (Timestamp, String)> = BTreeMap::new();
    // The nearest later promotion, and the nearest later one on another site than that one.
    let mut nearest: Option<(Timestamp, String, String)> = None;
    let mut nearest_other: Option<(Timestamp, String, String)> = None;
    for index in (0..episodes.len()).rev() {
        let episode = &episodes[index];
        let own = next_by_site.get(&episode.site).cloned();
        let elsewhere = match &nearest {
            Some((_, site, _)) if *site == episode.site => nearest_other.clone(),
            other => other.clone(),
        };
        let end = match (own, elsewhere, episode.kind == RecordKind::Promotion) {
            (Some((t1, l1)), Some((t2, _, l2)), true) => {
                if t1 <= t2 {
                    Some((t1, EpisodeEnd::NextRecord(l1)))
                } else {
                    Some((t2, EpisodeEnd::PromotionElsewhere(l2)))
                }
            }
            (Some((t, l)), _, _) => Some((t, EpisodeEnd::NextRecord(l))),
            (None, Some((t, _, l)), true) => Some((t, EpisodeEnd::PromotionElsewhere(l))),
            (None, _, _) => None,
        };
        let entry = (episode.observed_at, episode.site.clone(), episode.label.clone());
        let is_promotion = episode.kind == RecordKind::Promotion;
        if let Some((t, ended_by)) = end {
            episodes[index].ended_at = Some(t);
            episodes[index].ended_by = Some(ended_by);
        }
        next_by_site.insert(entry.1.clone(), (entry.0, entry.2.clone()));
        if is_promotion {
            match &nearest {
                Some((_, site, _)) if *site == entry.1 => {}
                _ => nearest_other = nearest.take(),
            }
            nearest = Some(entry);
        }
    }
}

fn find_forks(files: &[FileSpan], episodes: &[Episode], surviving: &GtidSet) -> Vec<Fork> {
    let promotions: Vec<&Episode> =
        episodes.iter().filter(|e| e.kind == RecordKind::Promotion).collect();
    let mut forks: Vec<Fork> = Vec::new();
    for (index, file) in files.iter().enumerate() {
        let dead = file.gtids.difference(surviving);
        if dead.is_empty() {
            continue;
        }
        let end = file.end_or_min();
        // The first promotion on another site observed more than δ after the row's last commit.
        let first = promotions.partition_point(|e| shift(e.observed_at, -DELTA) <= end);
        let cause = promotions[first..]
            .iter()
            .find(|e| e.site != file.site && e.gtid_executed.is_disjoint(&dead))
            .map(|e| ForkCause::LostAtFailover(e.label.clone()))
            .unwrap_or(ForkCause::Branch);
        match forks.last_mut() {
            Some(last) if last.site == file.site && last.cause == cause => {
                last.gtids.union_with(&dead);
                last.files.push(index);
                last.start = min_opt(last.start, file.start);
                last.end = max_opt(last.end, file.end);
            }
            _ => forks.push(Fork {
                site: file.site.clone(),
                gtids: dead,
                files: vec![index],
                start: file.start,
                end: file.end,
                cause,
            }),
        }
    }
    forks
}

#[allow(clippy::too_many_arguments)]
fn find_gaps(
    files: &[FileSpan],
    episodes: &[Episode],
    archived: &GtidSet,
    before_archive: &GtidSet,
    retired: &GtidSet,
    quarantined: &GtidSet,
    marked: &GtidSet,
) -> Vec<Gap> {
    let mut accounted = archived.union(before_archive);
    accounted.union_with(retired);
    let mut gaps: Vec<Gap> = Vec::new();
    // Rows and promotion records in time order.
    let mut needs: Vec<(Timestamp, NeededBy, &str, &GtidSet)> = Vec::new();
    for (index, file) in files.iter().enumerate() {
        // Unusable rows (quarantined, marked sites) are evidence; what they need is not history.
        if file.usable {
            needs.push((
                file.start_or_min(),
                NeededBy::File(index),
                &file.site,
                &file.previous_gtids,
            ));
        }
    }
    for (index, episode) in episodes.iter().enumerate() {
        if episode.kind == RecordKind::Promotion {
            needs.push((
                episode.observed_at,
                NeededBy::Record(index),
                &episode.site,
                &episode.gtid_executed,
            ));
        }
    }
    needs.sort_by_key(|(at, _, _, _)| *at);
    for (at, needed_by, site, needed) in needs {
        let missing = needed.difference(&accounted);
        if missing.is_empty() {
            continue;
        }
        accounted.union_with(&missing);
        // Split by cause: marked-only, quarantined-only, never archived.
        let in_marked = missing.intersection(marked);
        let in_quarantine = missing.difference(marked).intersection(quarantined);
        let never = missing.difference(marked).difference(quarantined);
        for (gtids, kind) in [
            (never, GapKind::NeverArchived),
            (in_quarantine, GapKind::Quarantined),
            (in_marked, GapKind::UnsafeHistory),
        ] {
            if !gtids.is_empty() {
                gaps.push(Gap {
                    gtids,
                    kind,
                    needed_by: needed_by.clone(),
                    site: site.to_owned(),
                    at,
                });
            }
        }
    }
    gaps
}

fn find_reissue_risks(files: &[FileSpan], episodes: &[Episode]) -> Vec<ReissueRisk> {
    // Sweep rows by end time, accumulating what was archived before each record (minus δ).
    let mut by_end: Vec<usize> = (0..files.len()).collect();
    by_end.sort_by_key(|&i| files[i].end_or_min());
    let mut archived_before = GtidSet::new();
    let mut cursor = 0;
    let mut risks = Vec::new();
    for (index, episode) in episodes.iter().enumerate() {
        let cutoff = shift(episode.observed_at, -DELTA);
        while cursor < by_end.len() && files[by_end[cursor]].end_or_min() < cutoff {
            archived_before.union_with(&files[by_end[cursor]].gtids);
            cursor += 1;
        }
        let own = archived_before.restricted_to_uuid(episode.server_uuid);
        let lost = own.difference(&episode.gtid_executed);
        if !lost.is_empty() {
            risks.push(ReissueRisk { episode: index, server_uuid: episode.server_uuid, lost });
        }
    }
    risks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::ArchiveId;
    use crate::manifest::PromotionRecord;

    fn record(kind: RecordKind, uuid: u8, second: i64) -> PromotionRecord {
        PromotionRecord {
            kind,
            server_uuid: Uuid::from_bytes([uuid; 16]),
            server_id: u32::from(uuid),
            gtid_executed: GtidSet::new(),
            observed_at: Timestamp::from_second(1_800_000_000 + second).unwrap(),
            probe_interval: Some(SignedDuration::from_secs(5)),
            read_only_gtid_executed: None,
            extra: Default::default(),
        }
    }

    #[test]
    fn episodes_end_at_the_next_record_or_a_promotion_elsewhere() {
        let id: ArchiveId = "ar1-abcdefghijklmnopqrstuvwxyz".parse().unwrap();
        let mut a = Manifest::new(id.clone(), "a");
        let mut b = Manifest::new(id.clone(), "b");
        let mut c = Manifest::new(id, "c");
        a.push_record(record(RecordKind::Promotion, 0xaa, 0)); // a#0
        b.push_record(record(RecordKind::Promotion, 0xbb, 100)); // b#0
        a.push_record(record(RecordKind::Reset, 0xaa, 150)); // a#1
        a.push_record(record(RecordKind::Promotion, 0xaa, 200)); // a#2
        a.push_record(record(RecordKind::Promotion, 0xaa, 250)); // a#3 (sidecar restart)
        c.push_record(record(RecordKind::Promotion, 0xcc, 300)); // c#0
        let coverage = Coverage::from_manifests([&a, &b, &c]);
        let ends: Vec<(&str, Option<EpisodeEnd>)> =
            coverage.episodes.iter().map(|e| (e.label.as_str(), e.ended_by.clone())).collect();
        assert_eq!(
            ends,
            [
                ("a#0", Some(EpisodeEnd::PromotionElsewhere("b#0".into()))),
                ("b#0", Some(EpisodeEnd::PromotionElsewhere("a#2".into()))),
                ("a#1", Some(EpisodeEnd::NextRecord("a#2".into()))),
                ("a#2", Some(EpisodeEnd::NextRecord("a#3".into()))),
                ("a#3", Some(EpisodeEnd::PromotionElsewhere("c#0".into()))),
                ("c#0", None),
            ]
        );
        assert_eq!(coverage.head_episode, Some(5));
        assert_eq!(
            coverage.episodes[0].earliest_change,
            Some(Timestamp::from_second(1_800_000_000 - 5).unwrap())
        );
    }

    #[test]
    fn extreme_probe_intervals_do_not_panic() {
        // Not reachable from JSON (the parser caps durations), but the types are public.
        let id: ArchiveId = "ar1-abcdefghijklmnopqrstuvwxyz".parse().unwrap();
        let mut a = Manifest::new(id, "a");
        for interval in [SignedDuration::MIN, SignedDuration::MAX] {
            let mut record = record(RecordKind::Promotion, 0xaa, 0);
            record.probe_interval = Some(interval);
            a.push_record(record);
        }
        let coverage = Coverage::from_manifests([&a]);
        let observed = coverage.episodes[0].observed_at;
        let changes: Vec<_> = coverage.episodes.iter().map(|e| e.earliest_change).collect();
        assert_eq!(changes, [Some(observed), Some(Timestamp::MIN)]);
    }

    #[test]
    fn next_second_rounds_up() {
        let whole = Timestamp::from_second(1_800_000_000).unwrap();
        assert_eq!(next_second(whole), Timestamp::from_second(1_800_000_001).unwrap());
        let fraction = whole.checked_add(SignedDuration::from_millis(300)).unwrap();
        assert_eq!(next_second(fraction), Timestamp::from_second(1_800_000_001).unwrap());
    }
}
