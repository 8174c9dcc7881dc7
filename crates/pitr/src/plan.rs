//! The planner: walks [`REFUSAL_ORDER`] and builds the plan.

use std::collections::{BTreeSet, HashMap};

use bloodraven_gtid::{Gtid, GtidSet};
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::model::{File, History, RowBytes, one};
use crate::refusal::{Check, Refusal, Token, first_refusal};
use crate::request::{BackupMeta, Mode, Request, parse};
use crate::search::{SearchOutcome, search};

/// δ: the clock-skew margin, fixed at 5 s (000 line 906).
pub const DELTA: SignedDuration = SignedDuration::from_secs(5);
/// How many bytes of D a message prints (000 line 848).
pub const MESSAGE_SET_BYTES: usize = 1024;

/// The limits of step 9 (`PITRPlanTooLarge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Planning memory budget (BLOODRAVEN_PITR_PLAN_MEMORY_BYTES).
    pub memory_bytes: u64,
    /// The staging volume's sizeLimit.
    pub staging_bytes: u64,
    /// Free bytes on the node's filesystem above its floor.
    pub node_free_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { memory_bytes: u64::MAX, staging_bytes: u64::MAX, node_free_bytes: u64::MAX }
    }
}

impl Limits {
    /// The event-size limit: 1/8 of the budget, at most 64 MiB.
    pub fn event_bytes(&self) -> u64 {
        (self.memory_bytes / 8).min(64 << 20)
    }
}

/// What the planner reads.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The archive (rows, bytes read, records).
    pub history: &'a History,
    /// The archive-open refusal of the reader, if it refused.
    pub open_refusal: Option<&'a bloodraven_archive::Refusal>,
    /// The backup's metadata.
    pub backup: &'a BackupMeta,
    /// The request.
    pub request: &'a Request,
    /// The limits.
    pub limits: Limits,
}

/// How a plan ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Outcome {
    /// A timestamp restore whose witness is archived.
    TargetCovered,
    /// allowPartial: replayed to the head instead.
    Partial,
    /// Latest mode.
    Latest,
}

/// The witness.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Witness {
    /// Its GTID.
    pub gtid: String,
    /// The site whose row supplied it.
    pub site: String,
    /// The row's file name.
    pub file: String,
    /// Its commit time.
    pub committed: Timestamp,
}

/// One segment: a run of consecutive transactions of one archived file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    /// The row's site.
    pub site: String,
    /// The binlog file name.
    pub file: String,
    /// The object key.
    pub key: String,
    /// `--include-gtids`.
    pub gtids: GtidSet,
    /// How many transactions it replays.
    pub transactions: usize,
}

/// A plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The outcome.
    pub outcome: Outcome,
    /// The witness (timestamp mode).
    pub witness: Option<Witness>,
    /// The segments in replay order.
    pub segments: Vec<Segment>,
    /// The certified final set: B ∪ segments (= Λ − X).
    pub certified: GtidSet,
    /// The backup's newest archived commit.
    pub backup_newest_commit_time: Option<Timestamp>,
    /// Whether that time is proven from the bytes (else a lower bound).
    pub backup_newest_proven: bool,
    /// Excluded transactions off the target history (the excluded divergent set).
    pub excluded_divergent: GtidSet,
    /// Excluded transactions on Λ that precede a replayed one.
    pub on_history_excluded: GtidSet,
    /// The newest replayed commit time.
    pub newest_replayed: Option<Timestamp>,
}

/// The backup frontier.
#[derive(Debug, Clone, Default)]
struct Frontier {
    newest: Option<Timestamp>,
    proven: bool,
    missing: bool,
    unread: usize,
}

#[derive(Debug, Clone)]
struct WitnessPick {
    file: usize,
    pos: usize,
    gtid: Gtid,
    at: Timestamp,
}

/// The planner's state between checks.
struct Ctx<'a> {
    input: Input<'a>,
    mode: Mode,
    exclude: GtidSet,
    backup: GtidSet,
    frontier: Frontier,
    witness: Option<WitnessPick>,
    partial: bool,
    lambda: GtidSet,
    divergent: GtidSet,
    errant: GtidSet,
    duplicated: GtidSet,
    plan: Option<SearchOutcome>,
}

/// Plans a restore: a [`Plan`] or the first applicable [`Refusal`].
pub fn plan(input: Input<'_>) -> Result<Plan, Refusal> {
    let mut ctx = Ctx {
        input,
        mode: Mode::Latest,
        exclude: GtidSet::new(),
        backup: GtidSet::new(),
        frontier: Frontier::default(),
        witness: None,
        partial: false,
        lambda: GtidSet::new(),
        divergent: GtidSet::new(),
        errant: GtidSet::new(),
        duplicated: GtidSet::new(),
        plan: None,
    };
    let refusal: Result<Option<Refusal>, std::convert::Infallible> =
        first_refusal(|check| Ok(ctx.run(check).err()));
    match refusal {
        Ok(Some(refusal)) => Err(refusal),
        _ => Ok(ctx.finish()),
    }
}

fn fmt_time(at: Timestamp) -> String {
    bloodraven_archive::format_timestamp(at)
}

/// `set` printed up to [`MESSAGE_SET_BYTES`].
pub fn shorten(set: &GtidSet) -> String {
    let text = set.to_compact_string();
    if text.len() <= MESSAGE_SET_BYTES {
        return text;
    }
    let mut cut = MESSAGE_SET_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = text[..cut].rfind(',').unwrap_or(cut);
    format!("{} … ({} transactions in all)", &text[..cut], set.count())
}

impl Ctx<'_> {
    fn history(&self) -> &History {
        self.input.history
    }

    fn target(&self) -> Option<Timestamp> {
        match self.mode {
            Mode::Target(at) if !self.partial => Some(at),
            _ => None,
        }
    }

    fn run(&mut self, check: Check) -> Result<(), Refusal> {
        match check {
            Check::RequestValid => {
                let (mode, exclude) = parse(self.input.request)?;
                self.mode = mode;
                self.exclude = exclude;
                Ok(())
            }
            Check::DumpMeta => self.dump_meta(),
            Check::ArchiveOpen => self.archive_open(),
            Check::HistoryReset => match self.history().reset_epochs.first() {
                Some((site, epoch)) => Err(Refusal::new(
                    Token::ArchiveHistoryReset,
                    format!(
                        "site {site}'s manifest records reset epoch {epoch}: GTIDs may have been issued twice; start a new prefix and take a full backup"
                    ),
                )),
                None => Ok(()),
            },
            Check::ExcludeIntersectsBackup => {
                let both = self.exclude.intersection(&self.backup);
                if both.is_empty() {
                    return Ok(());
                }
                Err(Refusal::new(
                    Token::ExcludeIntersectsBackup,
                    format!(
                        "excludeGtids intersects the backup: {}; a dump cannot be un-applied: use a backup taken on another site or before these transactions",
                        shorten(&both)
                    ),
                ))
            }
            Check::FrontierReuse => self.frontier_reuse(),
            Check::FrontierAfterTarget => self.frontier_after_target(),
            Check::WitnessCovered => self.witness_covered(),
            Check::WitnessAmbiguous => self.witness_ambiguous(),
            Check::WitnessUnsafe => Ok(()),
            Check::LineageBackup => {
                let off = self.backup.difference(&self.lambda);
                if off.is_empty() {
                    return Ok(());
                }
                Err(Refusal::new(
                    Token::BackupNotOnLineage,
                    format!(
                        "the backup holds {} not on the target history; choose a backup of that history or another target",
                        shorten(&off)
                    ),
                ))
            }
            Check::LineageAmbiguous => self.lineage_ambiguous(),
            Check::LineageDivergent => self.lineage_divergent(),
            Check::CopiesReuse => self.copies_reuse(),
            Check::CopiesInversion => self.copies_inversion(),
            Check::SearchUnsafe => {
                let outcome = search(self.history(), &self.backup, &self.lambda, &self.exclude);
                self.plan = Some(outcome);
                match self.plan.as_ref().and_then(|plan| plan.unsafe_site.clone()) {
                    Some(site) => Err(Refusal::new(
                        Token::ArchiveUnsafeHistory,
                        format!(
                            "the plan needs site {site}'s archived binlogs, and {site} set its history-integrity marker; choose a target after a new prefix's full backup"
                        ),
                    )),
                    None => Ok(()),
                }
            }
            Check::SearchGap => self.search_gap(),
            Check::SearchOrderConflict => match &self.plan {
                Some(plan) if !plan.missing.is_empty() => Err(Refusal::new(
                    Token::ArchiveOrderConflict,
                    format!(
                        "every transaction of the target history is archived, but no archived binlog continues from the furthest reachable state (missing {}); preserve the evidence and follow PITR history repair",
                        shorten(&plan.missing)
                    ),
                )),
                _ => Ok(()),
            },
            Check::SearchTooLarge => self.too_large(),
            Check::ReplayUnsupported => self.replay_unsupported(),
        }
    }

    fn dump_meta(&mut self) -> Result<(), Refusal> {
        let meta = self.input.backup;
        let refuse = |token, message: &str| Err(Refusal::new(token, message));
        if meta.source_uid.is_empty() {
            return refuse(
                Token::BackupIdentityUnknown,
                "the backup records no source failover group UID, so it has no stamp; take a new full backup",
            );
        }
        let Some(stamp) = &meta.stamp else {
            return refuse(
                Token::BackupIdentityUnknown,
                "the dump has no readable backup stamp; take a new full backup after the archive has its descriptor",
            );
        };
        if stamp.backup_uid != meta.backup_uid || stamp.source_uid != meta.source_uid {
            return refuse(
                Token::BackupIdentityMismatch,
                "the dump's stamp names another backup or source group than the backupRef",
            );
        }
        if !meta.dump_json {
            return refuse(Token::BackupIncomplete, "the dump has no @.json");
        }
        let Some(gtids) = &meta.gtid_executed else {
            return refuse(Token::BackupInconsistent, "the dump's @.json records no gtidExecuted");
        };
        if !meta.gtid_matches_status {
            return refuse(
                Token::BackupIdentityMismatch,
                "the backup's recorded gtidExecuted is not the one in the dump's @.json",
            );
        }
        if meta.inconsistent {
            return refuse(
                Token::BackupInconsistent,
                "the dump's @.json reports gtidExecutedInconsistent",
            );
        }
        if meta.filtered {
            return refuse(
                Token::BackupFiltered,
                "the dump was taken with schema filters; replay covers every schema, take an unfiltered backup",
            );
        }
        if meta.dump_end.is_none() || stamp.server_clock_end.is_none() {
            return refuse(
                Token::BackupIncomplete,
                "the dump never finished (no @.done.json, or a stamp without serverClock.end)",
            );
        }
        self.backup = gtids.clone();
        Ok(())
    }

    fn archive_open(&mut self) -> Result<(), Refusal> {
        if let Some(refusal) = self.input.open_refusal {
            return Err(Refusal::new(Token::from_archive(refusal.token), refusal.message.clone()));
        }
        let named = self.input.backup.stamp.as_ref().map(|s| s.pitr_archive_id.as_str());
        if let Some(named) = named
            && named != self.history().archive_id
        {
            return Err(Refusal::new(
                Token::ArchiveIdentityMismatch,
                format!(
                    "the dump's stamp names archive {named:?}, but the archive profile reads {}; use the archive the backup was taken against",
                    self.history().archive_id
                ),
            ));
        }
        Ok(())
    }

    fn dump_end(&self) -> Timestamp {
        // mysqlsh truncates to the second: a whole-second end E counts as E + 0.999999 s.
        self.input.backup.dump_end.unwrap_or(Timestamp::MIN)
    }

    fn frontier_reuse(&mut self) -> Result<(), Refusal> {
        let mut frontier = Frontier { proven: true, ..Frontier::default() };
        let mut seen = GtidSet::new();
        let latest_allowed = self.dump_end().saturating_add(SignedDuration::from_secs(1)).ok();
        for file in &self.history().files {
            if file.hint.is_disjoint(&self.backup) && !matches!(file.bytes, RowBytes::Read(_)) {
                continue;
            }
            match &file.bytes {
                RowBytes::Read(txns) => {
                    for txn in txns {
                        let (Some(gtid), Some(at)) = (&txn.gtid, txn.commit) else { continue };
                        if !self.backup.contains(gtid) {
                            continue;
                        }
                        let _ = seen.insert(gtid);
                        if let Some(limit) = latest_allowed
                            && at > limit.saturating_add(DELTA).unwrap_or(limit)
                        {
                            return Err(Refusal::new(
                                Token::ArchiveNamespaceReuse,
                                format!(
                                    "backup transaction {gtid} was archived in {} with commit time {}, more than 5s after the dump finished ({}): the GTID was issued again later (a reclone kept the server_uuid); start a new prefix and take a full backup",
                                    file.key,
                                    fmt_time(at),
                                    fmt_time(self.dump_end())
                                ),
                            ));
                        }
                        frontier.newest = frontier.newest.max(Some(at));
                    }
                }
                RowBytes::NotRead => {
                    frontier.proven = false;
                    frontier.unread += 1;
                }
                RowBytes::Unreadable(_) => {
                    frontier.proven = false;
                    frontier.unread += 1;
                }
            }
        }
        // Backup transactions no row holds (pruned, lost, before the archive).
        let hinted = self
            .history()
            .files
            .iter()
            .fold(GtidSet::new(), |acc, file| acc.union(&file.hint.intersection(&self.backup)));
        if !self.backup.difference(&seen.union(&hinted)).is_empty() {
            frontier.missing = true;
            frontier.proven = false;
        }
        self.frontier = frontier;
        Ok(())
    }

    fn frontier_after_target(&mut self) -> Result<(), Refusal> {
        let Mode::Target(target) = self.mode else { return Ok(()) };
        let end = self.dump_end();
        let earliest = end.saturating_add(SignedDuration::from_secs(1)).unwrap_or(end);
        if target < earliest {
            return Err(Refusal::new(
                Token::BackupAfterTarget,
                format!(
                    "target {} is before the dump finished ({}, rounded up to {}); a dump cannot be un-applied: use a target at or after {} or an older backup",
                    fmt_time(target),
                    fmt_time(end),
                    fmt_time(earliest),
                    fmt_time(earliest)
                ),
            ));
        }
        if let Some(newest) = self.frontier.newest
            && newest >= target
        {
            return Err(Refusal::new(
                Token::BackupAfterTarget,
                format!(
                    "the backup already holds a transaction committed at {}, at or after target {}; use a later target or an older backup",
                    fmt_time(newest),
                    fmt_time(target)
                ),
            ));
        }
        let clock =
            self.input.backup.stamp.as_ref().and_then(|s| s.server_clock_end).unwrap_or(end);
        let safe = clock.saturating_add(SignedDuration::from_secs(1)).unwrap_or(clock);
        if !self.frontier.proven && target < safe {
            let why = if self.frontier.missing {
                "some of the backup's transactions are no longer archived, so its newest commit time is unknown".to_owned()
            } else {
                format!(
                    "this backup's newest commit time is proven only up to {}; {} archived rows holding its transactions were not read, and their manifest hints are unverified",
                    self.frontier.newest.map_or_else(|| "nothing".to_owned(), fmt_time),
                    self.frontier.unread
                )
            };
            return Err(Refusal::new(
                Token::BackupAfterTarget,
                format!("{why}; use a target at or after {}", fmt_time(safe)),
            ));
        }
        Ok(())
    }

    fn witness_covered(&mut self) -> Result<(), Refusal> {
        let Mode::Target(target) = self.mode else {
            return self.latest_head();
        };
        let skip = self.backup.union(&self.exclude);
        let mut best: Option<WitnessPick> = None;
        let mut marked_may_hold = false;
        for (index, file) in self.history().files.iter().enumerate() {
            let marked = self.history().marked.contains(&file.site);
            if marked {
                if file.last_event.is_none_or(|last| last >= target)
                    || file.txns().iter().any(|t| t.commit.is_some_and(|c| c >= target))
                {
                    marked_may_hold = true;
                }
                continue;
            }
            // A quarantined row is evidence, never the witness (ambiguity 27).
            if file.quarantined {
                continue;
            }
            for (pos, txn) in file.txns().iter().enumerate() {
                let (Some(gtid), Some(at)) = (txn.gtid, txn.commit) else { continue };
                if at < target || skip.contains(&gtid) {
                    continue;
                }
                if best
                    .as_ref()
                    .is_none_or(|b| at < b.at || (at == b.at && pos < b.pos && b.file == index))
                {
                    best = Some(WitnessPick { file: index, pos, gtid, at });
                }
            }
        }
        match best {
            Some(pick) => {
                // Λ: the witness's predecessors in its row.
                let file = &self.history().files[pick.file];
                self.lambda = predecessors(file, pick.pos);
                self.witness = Some(pick);
                Ok(())
            }
            None if marked_may_hold => Err(Refusal::new(
                Token::ArchiveUnsafeHistory,
                format!(
                    "no unmarked site archived a transaction at or after {}, and a site with a history-integrity marker may hold one; its bytes cannot be used: point spec.backup.pitr at a new prefix and take a full backup",
                    fmt_time(target)
                ),
            )),
            None if self.input.request.allow_partial => {
                self.partial = true;
                self.latest_head()
            }
            None => Err(Refusal::new(
                Token::TargetNotCovered,
                format!(
                    "nothing at or after {} is archived yet; wait for the archive, run FLUSH BINARY LOGS on the source, or set allowPartial",
                    fmt_time(target)
                ),
            )),
        }
    }

    /// Latest mode: the unique head (ignoring X), split brain, losses at promotion records.
    fn latest_head(&mut self) -> Result<(), Refusal> {
        let mut states: Vec<(usize, GtidSet)> = Vec::new();
        let mut marked_states = false;
        for (index, file) in self.history().files.iter().enumerate() {
            if file.quarantined || !matches!(file.bytes, RowBytes::Read(_)) {
                continue;
            }
            if self.history().marked.contains(&file.site) {
                marked_states = true;
                continue;
            }
            states.push((index, predecessors(file, file.txns().len())));
        }
        // Maximal states.
        states.sort_by_key(|(_, state)| std::cmp::Reverse(state.count()));
        let mut heads: Vec<(usize, GtidSet)> = Vec::new();
        for (index, state) in states {
            if heads.iter().any(|(_, head)| state.is_subset(head)) {
                continue;
            }
            heads.push((index, state));
        }
        if heads.is_empty() {
            if marked_states {
                return Err(Refusal::new(
                    Token::ArchiveUnsafeHistory,
                    "no unmarked site archived a head, and a site with a history-integrity marker may hold one; its bytes cannot be used",
                ));
            }
            self.lambda = self.backup.clone();
            return Ok(());
        }
        // A head whose exclusive transactions were all lost at a promotion record is a lost
        // tail, not a rival head (ambiguity 26).
        let lost = self.lost_at_records(&heads);
        let rivals: Vec<&(usize, GtidSet)> = heads
            .iter()
            .filter(|(_, head)| {
                let others = heads
                    .iter()
                    .filter(|(_, other)| !std::ptr::eq(other, head))
                    .fold(GtidSet::new(), |acc, (_, other)| acc.union(other));
                !head.difference(&others).is_subset(&lost.union(&self.exclude))
            })
            .collect();
        if rivals.len() != 1 {
            let listing: Vec<String> = heads
                .iter()
                .map(|(index, head)| {
                    let others = heads
                        .iter()
                        .filter(|(other, _)| other != index)
                        .fold(GtidSet::new(), |acc, (_, other)| acc.union(other));
                    format!(
                        "{} ({}) holds {}",
                        self.history().files[*index].key,
                        self.history().files[*index].site,
                        shorten(&head.difference(&others))
                    )
                })
                .collect();
            return Err(Refusal::new(
                Token::ArchiveSplitBrain,
                format!(
                    "the archive has {} heads, each holding transactions the others lack: {}; exclude one side's transactions with excludeGtids",
                    heads.len(),
                    listing.join("; ")
                ),
            ));
        }
        self.lambda = rivals[0].1.clone();
        self.divergent = lost;
        Ok(())
    }

    /// Transactions of any head lost at a promotion record (000 line 912) plus audit rows.
    fn lost_at_records(&self, heads: &[(usize, GtidSet)]) -> GtidSet {
        let all = heads.iter().fold(GtidSet::new(), |acc, (_, head)| acc.union(head));
        let files = &self.history().files;
        let oldest: Vec<Option<Timestamp>> =
            files.iter().map(|file| file.txns().iter().filter_map(|t| t.commit).min()).collect();
        let mut lost = GtidSet::new();
        for record in self.history().records.iter().filter(|r| r.promotion) {
            let Ok(edge) = record.observed_at.checked_sub(DELTA) else { continue };
            // Transactions of a head the record does not hold, not excluded.
            let candidates = all.difference(&record.gtid_executed).difference(&self.exclude);
            if candidates.is_empty() {
                continue;
            }
            for (index, file) in files.iter().enumerate() {
                // R's own site's rows are its later history.
                if file.site == record.site
                    || oldest[index].is_none_or(|t| t >= edge)
                    || file.hint.is_disjoint(&candidates)
                {
                    continue;
                }
                for txn in file.txns() {
                    if let (Some(gtid), Some(at)) = (txn.gtid, txn.commit)
                        && at < edge
                        && candidates.contains(&gtid)
                    {
                        let _ = lost.insert(&gtid);
                    }
                }
            }
        }
        // The divergence audit's rows are loss evidence too.
        for file in files.iter().filter(|file| file.divergent) {
            for gtid in file.txns().iter().filter_map(|t| t.gtid) {
                if all.contains(&gtid) && !self.exclude.contains(&gtid) {
                    let _ = lost.insert(&gtid);
                }
            }
        }
        lost
    }

    fn witness_ambiguous(&mut self) -> Result<(), Refusal> {
        let Some(pick) = self.witness.clone() else { return Ok(()) };
        let skip = self.backup.union(&self.exclude);
        // Other candidates at the same microsecond on a different history.
        for (index, file) in self.history().files.iter().enumerate() {
            if file.quarantined || self.history().marked.contains(&file.site) {
                continue;
            }
            for (pos, txn) in file.txns().iter().enumerate() {
                let (Some(gtid), Some(at)) = (txn.gtid, txn.commit) else { continue };
                if at != pick.at || skip.contains(&gtid) || gtid == pick.gtid {
                    continue;
                }
                let theirs = predecessors(file, pos);
                if !theirs.contains(&pick.gtid) && !self.lambda.contains(&gtid) {
                    return Err(Refusal::new(
                        Token::StopAmbiguous,
                        format!(
                            "{} ({}) and {} ({}) both committed at {} on different histories; choose a target ≠ {}",
                            pick.gtid,
                            self.history().files[pick.file].site,
                            gtid,
                            self.history().files[index].site,
                            fmt_time(pick.at),
                            fmt_time(pick.at)
                        ),
                    ));
                }
            }
        }
        // Copies of the witness that disagree on its history (ambiguity 36).
        for file in &self.history().files {
            if file.quarantined {
                continue;
            }
            if let Some(pos) = file.txns().iter().position(|t| t.gtid == Some(pick.gtid)) {
                let theirs = predecessors(file, pos).difference(&self.exclude);
                if theirs != self.lambda.difference(&self.exclude) {
                    let extra = theirs.symmetric_difference(&self.lambda.difference(&self.exclude));
                    return Err(Refusal::new(
                        Token::StopAmbiguous,
                        format!(
                            "the witness {} has copies on different histories ({} and {} differ by {}); exclude the transactions off the history you want",
                            pick.gtid,
                            self.history().files[pick.file].key,
                            file.key,
                            shorten(&extra)
                        ),
                    ));
                }
            }
        }
        self.anchor_check(&pick)
    }

    /// Witnesses archived only on a replica (000 lines 892–902).
    fn anchor_check(&mut self, pick: &WitnessPick) -> Result<(), Refusal> {
        let origin = pick.gtid.uuid;
        let history = self.history();
        // An origin copy: a row on a site one of whose promotion records is the origin server.
        let origin_sites: BTreeSet<&str> = history
            .records
            .iter()
            .filter(|r| r.promotion && r.server_uuid == origin)
            .map(|r| r.site.as_str())
            .collect();
        let has_origin_copy = history.files.iter().any(|file| {
            origin_sites.contains(file.site.as_str())
                && file.txns().iter().any(|t| t.gtid == Some(pick.gtid))
        });
        if has_origin_copy {
            return Ok(());
        }
        let mut explained = self.lambda.restricted_to_uuid(origin);
        explained.union_with(&self.backup);
        let mut set_aside = None;
        for record in history.records.iter().filter(|r| r.promotion && r.server_uuid == origin) {
            let early = record.observed_at.saturating_add(DELTA).is_ok_and(|t| t < pick.at);
            if !early || record.gtid_executed.contains(&pick.gtid) {
                continue;
            }
            let later = history.records.iter().find(|later| {
                later.site == record.site
                    && later.observed_at > record.observed_at
                    && match later.probe_interval {
                        None => true,
                        Some(probe) => pick
                            .at
                            .saturating_add(probe)
                            .and_then(|t| t.saturating_add(DELTA))
                            .is_ok_and(|limit| later.observed_at <= limit),
                    }
            });
            if let Some(later) = later {
                set_aside = Some((record.label.clone(), later.label.clone(), later.observed_at));
                continue;
            }
            explained.union_with(&record.gtid_executed);
        }
        let unanchored = self.lambda.difference(&explained);
        // Excluded unanchored predecessors are errant, not on-history (000 line 874).
        self.errant = unanchored.intersection(&self.exclude);
        let unexplained = unanchored.difference(&self.exclude);
        if unexplained.is_empty() {
            return Ok(());
        }
        let why = match set_aside {
            Some((anchor, later, at)) => format!(
                "; the promotion record {anchor} is not an anchor, because a later record of its site, {later} (observed at {}), is not provably after the witness",
                fmt_time(at)
            ),
            None => String::new(),
        };
        Err(Refusal::new(
            Token::StopAmbiguous,
            format!(
                "the witness {} is archived only on a replica, and its predecessors include {}, which nothing proves preceded it on its origin{why}; exclude it, or choose another target",
                pick.gtid,
                shorten(&unexplained)
            ),
        ))
    }

    fn lineage_ambiguous(&mut self) -> Result<(), Refusal> {
        let Some(target) = self.target() else { return Ok(()) };
        let Some(pick) = self.witness.clone() else { return Ok(()) };
        let replayed = self.lambda.difference(&self.backup).difference(&self.exclude);
        let newest_b = self.frontier.newest;
        let mut divergent = GtidSet::new();
        let window = self.lambda.union(&self.backup).union(&self.exclude);
        for file in &self.history().files {
            for (pos, txn) in file.txns().iter().enumerate() {
                let (Some(gtid), Some(at)) = (txn.gtid, txn.commit) else { continue };
                if replayed.contains(&gtid) && at >= target {
                    return Err(Refusal::new(
                        Token::StopAmbiguous,
                        format!(
                            "{gtid} is on the history of {} but committed at {}, at or after the target (clock skew); choose a target ≤ {} or > {}",
                            pick.gtid,
                            fmt_time(at),
                            fmt_time(target),
                            fmt_time(pick.at)
                        ),
                    ));
                }
                if window.contains(&gtid) || at >= target || newest_b.is_some_and(|n| at <= n) {
                    continue;
                }
                if predecessors(file, pos).contains(&pick.gtid) {
                    return Err(Refusal::new(
                        Token::StopAmbiguous,
                        format!(
                            "{gtid} committed at {} on top of the witness {} (committed {}); choose a target ≤ {} or > {}",
                            fmt_time(at),
                            pick.gtid,
                            fmt_time(pick.at),
                            fmt_time(at),
                            fmt_time(pick.at)
                        ),
                    ));
                }
                let _ = divergent.insert(&gtid);
            }
        }
        self.divergent = divergent;
        Ok(())
    }

    fn lineage_divergent(&mut self) -> Result<(), Refusal> {
        if self.divergent.is_empty() {
            return Ok(());
        }
        let d = self.divergent.clone();
        let mut sites = BTreeSet::new();
        let (mut min, mut max) = (None::<Timestamp>, None::<Timestamp>);
        for file in &self.history().files {
            for txn in file.txns() {
                let (Some(gtid), Some(at)) = (txn.gtid, txn.commit) else { continue };
                if d.contains(&gtid) {
                    sites.insert(file.site.clone());
                    min = Some(min.map_or(at, |m| m.min(at)));
                    max = Some(max.map_or(at, |m| m.max(at)));
                }
            }
        }
        let sites = sites.into_iter().collect::<Vec<_>>().join(", ");
        let (min, max) =
            (min.map(fmt_time).unwrap_or_default(), max.map(fmt_time).unwrap_or_default());
        let mut refusal = match (self.target(), &self.witness) {
            (Some(target), Some(pick)) => {
                let file = &self.history().files[pick.file];
                Refusal::new(
                    Token::ArchiveDivergentHistory,
                    format!(
                        "{} archived transactions committed between the backup's newest transaction ({}) and {} are not in the history of {} (site {}, committed {}): {} (sites {sites}, {min}…{max}). They were lost at a failover, written on a replica (errant), or belong to another branch. To restore {}'s history, add them to excludeGtids, or choose a target at or before {min}, or use a backup taken after {max}.",
                        d.count(),
                        self.frontier.newest.map_or_else(|| "none archived".to_owned(), fmt_time),
                        fmt_time(target),
                        pick.gtid,
                        file.site,
                        fmt_time(pick.at),
                        shorten(&d),
                        pick.gtid
                    ),
                )
            }
            _ => {
                let record = self
                    .history()
                    .records
                    .iter()
                    .filter(|r| r.promotion)
                    .max_by_key(|r| r.observed_at);
                let (site, at) = record.map_or((String::new(), String::new()), |r| {
                    (r.site.clone(), fmt_time(r.observed_at))
                });
                Refusal::new(
                    Token::ArchiveDivergentHistory,
                    format!(
                        "the newest archived state includes {}, committed before {site} was promoted at {at} without them; they were lost at that failover. Add them to excludeGtids to verify what the cluster kept.",
                        shorten(&d)
                    ),
                )
            }
        };
        refusal.full_set = Some(d.to_compact_string());
        Err(refusal)
    }

    fn copies_reuse(&mut self) -> Result<(), Refusal> {
        let needed = self.lambda.difference(&self.backup).difference(&self.exclude);
        // GTIDs with more than one copy: only they can differ or be applied in other orders.
        let (mut seen, mut dup) = (GtidSet::new(), GtidSet::new());
        for file in &self.history().files {
            let RowBytes::Read(txns) = &file.bytes else { continue };
            let mut actual = GtidSet::new();
            for gtid in txns.iter().filter_map(|t| t.gtid.as_ref()) {
                let _ = actual.insert(gtid);
            }
            if actual != file.hint {
                return Err(Refusal::new(
                    Token::ArchiveObjectInvalid,
                    format!(
                        "{}'s manifest hint ({}) does not match its bytes ({}); restore the object or the manifest",
                        file.key,
                        shorten(&file.hint),
                        shorten(&actual)
                    ),
                ));
            }
            dup.union_with(&actual.intersection(&seen));
            seen.union_with(&actual);
        }
        self.duplicated = dup;
        if self.duplicated.is_empty() {
            return self.unreadable_on_history(&needed);
        }
        let mut copies: HashMap<Gtid, (Option<Timestamp>, u32, bool, usize)> = HashMap::new();
        for (index, file) in self.history().files.iter().enumerate() {
            match &file.bytes {
                RowBytes::Unreadable(why) if !file.hint.is_disjoint(&needed) => {
                    let token = if file.quarantined {
                        Token::ArchiveNamespaceReuse
                    } else {
                        Token::ArchiveObjectInvalid
                    };
                    return Err(Refusal::new(
                        token,
                        format!(
                            "cannot read {} ({why}), and it overlaps the target history; restore the object, or quarantine the row at the source with bloodraven pitr-quarantine",
                            file.key
                        ),
                    ));
                }
                RowBytes::Read(txns) => {
                    for txn in txns {
                        let Some(gtid) = txn.gtid.filter(|g| self.duplicated.contains(g)) else {
                            continue;
                        };
                        let entry = copies.entry(gtid).or_insert((
                            txn.commit,
                            txn.server_id,
                            txn.empty,
                            index,
                        ));
                        if entry.0 != txn.commit || entry.1 != txn.server_id || entry.2 != txn.empty
                        {
                            return Err(Refusal::new(
                                Token::ArchiveNamespaceReuse,
                                format!(
                                    "two archived copies of {gtid} differ (in {} and {}: commit time, origin server, or one copy is empty); verified GTID reuse needs a new prefix and a full backup",
                                    self.history().files[entry.3].key,
                                    file.key
                                ),
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn unreadable_on_history(&self, needed: &GtidSet) -> Result<(), Refusal> {
        for file in &self.history().files {
            if let RowBytes::Unreadable(why) = &file.bytes
                && !file.hint.is_disjoint(needed)
            {
                let token = if file.quarantined {
                    Token::ArchiveNamespaceReuse
                } else {
                    Token::ArchiveObjectInvalid
                };
                return Err(Refusal::new(
                    token,
                    format!(
                        "cannot read {} ({why}), and it overlaps the target history; restore the object, or quarantine the row at the source with bloodraven pitr-quarantine",
                        file.key
                    ),
                ));
            }
        }
        Ok(())
    }

    fn copies_inversion(&mut self) -> Result<(), Refusal> {
        if self.duplicated.is_empty() {
            return Ok(());
        }
        // Position of each GTID's first copy; files compared pairwise through shared GTIDs.
        let mut first: HashMap<Gtid, (usize, usize)> = HashMap::new();
        let mut last_seen: HashMap<(usize, usize), (usize, Gtid)> = HashMap::new();
        for (index, file) in self.history().files.iter().enumerate() {
            for (pos, txn) in file.txns().iter().enumerate() {
                let Some(gtid) = txn.gtid.filter(|g| self.duplicated.contains(g)) else {
                    continue;
                };
                match first.get(&gtid) {
                    None => {
                        first.insert(gtid, (index, pos));
                    }
                    Some(&(other, other_pos)) if other != index => {
                        if let Some(&(prev_pos, prev_gtid)) = last_seen.get(&(index, other))
                            && other_pos < prev_pos
                            && !self.exclude.contains(&gtid)
                            && !self.exclude.contains(&prev_gtid)
                        {
                            return Err(Refusal::new(
                                Token::ArchiveOrderInversion,
                                format!(
                                    "{} and {} apply {prev_gtid} and {gtid} in opposite orders, so equal GTID sets may hold different data; exclude the errant transaction, or use a backup and archive that start after it",
                                    self.history().files[other].key,
                                    file.key
                                ),
                            ));
                        }
                        last_seen.insert((index, other), (other_pos, gtid));
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }

    fn search_gap(&mut self) -> Result<(), Refusal> {
        let Some(plan) = &self.plan else { return Ok(()) };
        if plan.missing.is_empty() {
            return Ok(());
        }
        let mut archived = GtidSet::new();
        let (mut quarantined, mut unreadable) = (GtidSet::new(), Vec::new());
        for file in &self.history().files {
            let here: GtidSet =
                file.txns().iter().filter_map(|t| t.gtid).fold(GtidSet::new(), |mut acc, g| {
                    let _ = acc.insert(&g);
                    acc
                });
            if file.quarantined {
                quarantined.union_with(&file.hint.union(&here).intersection(&plan.missing));
            } else if matches!(file.bytes, RowBytes::Unreadable(_))
                && !file.hint.is_disjoint(&plan.missing)
            {
                unreadable.push(file.key.clone());
            } else {
                archived.union_with(&here);
            }
        }
        let absent = plan.missing.difference(&archived);
        if absent.is_empty() {
            return Ok(());
        }
        let mut where_ = Vec::new();
        let q = absent.intersection(&quarantined);
        if !q.is_empty() {
            where_.push(format!("{} in a quarantined row", shorten(&q)));
        }
        if !unreadable.is_empty() {
            where_.push(format!(
                "in archived rows that cannot be read ({}; restore the object)",
                unreadable.join(", ")
            ));
        }
        let never = absent.difference(&quarantined);
        if !never.is_empty() && unreadable.is_empty() {
            where_.push(format!("{} committed on a site and never archived (an unarchived tail at a failover or reclone)", shorten(&never)));
        }
        Err(Refusal::new(
            Token::ArchiveGap,
            format!(
                "the target history needs {} that no archived file holds: {}; choose a target before them, or a backup that holds them",
                shorten(&absent),
                where_.join("; ")
            ),
        ))
    }

    fn too_large(&mut self) -> Result<(), Refusal> {
        let Some(plan) = &self.plan else { return Ok(()) };
        let limits = self.input.limits;
        let transactions: u64 = self.history().files.iter().map(|f| f.txns().len() as u64).sum();
        let memory = transactions.saturating_mul(96);
        if memory > limits.memory_bytes {
            return Err(Refusal::new(
                Token::PlanTooLarge,
                format!(
                    "planning exceeds its memory budget ({memory} > {} bytes, BLOODRAVEN_PITR_PLAN_MEMORY_BYTES); raise the Job's memory limit, or use a backup closer to the target",
                    limits.memory_bytes
                ),
            ));
        }
        let mut staged = 0u64;
        let mut used = BTreeSet::new();
        for segment in &plan.segments {
            if used.insert(segment.file) {
                let file = &self.history().files[segment.file];
                staged = staged.saturating_add(file.size);
                if let Some(big) = file.txns().iter().map(|t| t.max_event).max()
                    && big > limits.event_bytes()
                {
                    return Err(Refusal::new(
                        Token::PlanTooLarge,
                        format!(
                            "an event of {} is {big} bytes, over the event-size limit of {} bytes; below 64 MiB raise the Job's memory limit, else choose a target or backup whose plan does not read that file",
                            file.key,
                            limits.event_bytes()
                        ),
                    ));
                }
            }
        }
        if staged > limits.staging_bytes {
            return Err(Refusal::new(
                Token::PlanTooLarge,
                format!(
                    "the staged files plus coverage.json ({staged} bytes) exceed the staging volume's sizeLimit ({} bytes); raise spec.backup.stagingVolumeSizeLimit",
                    limits.staging_bytes
                ),
            ));
        }
        if staged > limits.node_free_bytes {
            return Err(Refusal::new(
                Token::PlanTooLarge,
                format!(
                    "staging {staged} bytes would leave less than its floor free on the node ({} bytes available); run the Job on a node with more ephemeral storage",
                    limits.node_free_bytes
                ),
            ));
        }
        Ok(())
    }

    fn replay_unsupported(&mut self) -> Result<(), Refusal> {
        let Some(plan) = &self.plan else { return Ok(()) };
        for segment in &plan.segments {
            let file = &self.history().files[segment.file];
            for txn in &file.txns()[segment.start..segment.end] {
                let why = match (txn.gtid, txn.commit) {
                    (None, _) => Some("an anonymous transaction".to_owned()),
                    (Some(g), _) if self.exclude.contains(&g) => None,
                    (Some(g), None) => Some(format!("{g} has no original commit time")),
                    (Some(g), Some(_)) if txn.xa => Some(format!("{g} is an XA transaction")),
                    _ => None,
                };
                if let Some(why) = why {
                    return Err(Refusal::new(
                        Token::ReplayUnsupported,
                        format!(
                            "the replay of {} needs {why}, which mysqlbinlog replay does not support; choose a target before it",
                            file.key
                        ),
                    ));
                }
            }
        }
        if self.target().is_none() && plan.segments.is_empty() {
            return Err(Refusal::new(
                Token::NoArchivedReplay,
                "nothing is archived beyond the backup; wait for the archive or run FLUSH BINARY LOGS on the source",
            ));
        }
        Ok(())
    }

    fn finish(self) -> Plan {
        let history = self.input.history;
        let outcome = match (self.mode, self.partial) {
            (Mode::Target(_), false) => Outcome::TargetCovered,
            (Mode::Target(_), true) => Outcome::Partial,
            (Mode::Latest, _) => Outcome::Latest,
        };
        let mut segments = Vec::new();
        let mut certified = self.backup.clone();
        let mut newest_replayed = None;
        let mut end_state = self.backup.clone();
        if let Some(plan) = &self.plan {
            for segment in &plan.segments {
                let file = &history.files[segment.file];
                let txns = &file.txns()[segment.start..segment.end];
                let mut gtids = GtidSet::new();
                for txn in txns {
                    if let Some(g) = txn.gtid
                        && !self.exclude.contains(&g)
                    {
                        let _ = gtids.insert(&g);
                        newest_replayed = newest_replayed.max(txn.commit);
                    }
                }
                end_state = predecessors(file, segment.end);
                certified.union_with(&gtids);
                segments.push(Segment {
                    site: file.site.clone(),
                    file: file.name.clone(),
                    key: file.key.clone(),
                    transactions: gtids.count() as usize,
                    gtids,
                });
            }
        }
        let on_history_excluded = if segments.is_empty() {
            GtidSet::new()
        } else {
            end_state
                .intersection(&self.exclude)
                .intersection(&self.lambda)
                .difference(&self.errant)
        };
        let excluded_divergent = self.exclude.difference(&self.lambda.difference(&self.errant));
        Plan {
            outcome,
            witness: self.witness.as_ref().map(|pick| Witness {
                gtid: pick.gtid.to_string(),
                site: history.files[pick.file].site.clone(),
                file: history.files[pick.file].name.clone(),
                committed: pick.at,
            }),
            segments,
            certified,
            backup_newest_commit_time: self.frontier.newest,
            backup_newest_proven: self.frontier.proven,
            excluded_divergent,
            on_history_excluded,
            newest_replayed,
        }
    }
}

/// The state a row's position `pos` was committed on: previous GTIDs plus the transactions
/// before it.
pub(crate) fn predecessors(file: &File, pos: usize) -> GtidSet {
    let mut set = file.prev.clone();
    for txn in &file.txns()[..pos.min(file.txns().len())] {
        if let Some(gtid) = &txn.gtid {
            set.union_with(&one(gtid));
        }
    }
    set
}
