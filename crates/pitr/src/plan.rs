//! The planner: walks [`REFUSAL_ORDER`] and builds the plan.

use bloodraven_gtid::{Gtid, GtidSet};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::model::{File, History, one};
use crate::refusal::{Check, Refusal, Token, first_refusal};
use crate::request::{BackupMeta, Mode, Request, parse};
use crate::search::{SearchOutcome, search};

mod checks;
mod copies;
mod frontier;
mod latest;
mod lineage;
mod meta;
mod witness;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// A timestamp restore whose witness is archived.
    TargetCovered,
    /// allowPartial: replayed to the head instead.
    Partial,
    /// Latest mode.
    Latest,
}

/// The witness.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    marked_earliest: Option<Timestamp>,
    plan: Option<SearchOutcome>,
}

impl<'a> Ctx<'a> {
    /// A fresh run over `input`: nothing derived yet.
    fn new(input: Input<'a>) -> Self {
        Ctx {
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
            marked_earliest: None,
            plan: None,
        }
    }
}

/// Plans a restore: a [`Plan`] or the first applicable [`Refusal`].
pub fn plan(input: Input<'_>) -> Result<Plan, Refusal> {
    let mut ctx = Ctx::new(input);
    let refusal: Result<Option<Refusal>, std::convert::Infallible> =
        first_refusal(|check| Ok(ctx.run(check).err()));
    match refusal {
        Ok(Some(refusal)) => Err(refusal),
        _ => Ok(ctx.finish()),
    }
}

/// dump-meta's check alone (step 2 of the refusal order): the dump's stamp, `@.json`,
/// consistency, filters and `@.done.json`. The restore Job's dump-meta step refuses with this
/// before pitr-download runs; `plan` runs the same check in its place in the order.
pub fn check_dump(backup: &BackupMeta) -> Result<(), Refusal> {
    let history = History::default();
    let request = Request::default();
    let mut ctx = Ctx::new(Input {
        history: &history,
        open_refusal: None,
        backup,
        request: &request,
        limits: Limits::default(),
    });
    ctx.run(Check::DumpMeta)
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
            Check::WitnessUnsafe => match (&self.witness, self.marked_earliest) {
                (Some(pick), Some(marked)) if marked < pick.at => Err(Refusal::new(
                    Token::ArchiveUnsafeHistory,
                    format!(
                        "a site with a history-integrity marker holds a transaction committed at {}, before the unmarked candidate {} ({}): the witness may be in bytes that cannot be used; choose a target at or before {}, or a target after a new prefix's full backup",
                        fmt_time(marked),
                        pick.gtid,
                        fmt_time(pick.at),
                        fmt_time(marked)
                    ),
                )),
                _ => Ok(()),
            },
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
            Check::ObjectsValid => self.objects_valid(),
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
