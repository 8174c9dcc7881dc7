//! The restorable window of a backup, computed by the planner itself: one truth for the
//! console's archive panel, `bloodraven pitr plan` and the restore.
//!
//! A timestamp restore targets a whole second T. Every check of the planner compares T with a
//! fixed instant of the archive or the backup (a commit time, a row's last event, a record's
//! `observedAt` and its probe interval, the dump's end, `serverClock.end`), possibly shifted by
//! δ or by 1 s. So the planner's answer is constant between consecutive *candidate* seconds:
//! each such instant, floored to the second, shifted by every offset in
//! [`CANDIDATE_OFFSETS`]. [`timeline`] plans at every candidate (and one second before the
//! first) and merges runs with the same answer into [`Piece`]s; the answer for any T is the
//! answer of the piece holding it. The property test `window::*` checks that claim against
//! `plan` at every second of generated archives.
//!
//! Cost: one plan per candidate (each linear in the archive), so quadratic in the archive's
//! transactions. The console runs it over the archives it draws; the restore never does.

use std::collections::BTreeSet;

use jiff::{SignedDuration, Timestamp};

use crate::model::History;
use crate::plan::{Input, Limits, plan};
use crate::refusal::{Refusal, Token};
use crate::request::{BackupMeta, Request};

/// Seconds around each instant where the answer may change (δ = 5 s, the 1 s rounding of the
/// dump's end, and one more second either side for rounding of fractional instants).
pub const CANDIDATE_OFFSETS: std::ops::RangeInclusive<i64> = -7..=7;

/// What the planner says for every target in a piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Targets here plan.
    Plans,
    /// Targets here are refused with this token; `message` is the refusal at the piece's start.
    Refused { token: Token, message: String },
}

/// A run of whole-second targets with one answer: `from` inclusive, up to the next piece's
/// `from` (exclusive); the first piece also holds every earlier target, the last every later
/// one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The first target second of the run.
    pub from: Timestamp,
    /// The last target second of the run (`None`: the last piece, open-ended).
    pub to: Option<Timestamp>,
    /// The answer.
    pub answer: Answer,
}

/// The planner's answer over time for one backup and one excludeGtids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    /// The pieces, in time order (never empty).
    pub pieces: Vec<Piece>,
}

/// The restorable window: the first run of planning targets and what refuses the target
/// after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The first target that plans.
    pub start: Timestamp,
    /// The last target of the run (`None`: every later target plans).
    pub end: Option<Timestamp>,
    /// The refusal of the target after `end` (`None` when `end` is `None`).
    pub stop: Option<(Token, String)>,
    /// How many more runs of planning targets follow after the stop (targets there plan too).
    pub later_runs: usize,
}

impl Timeline {
    /// The answer for target `at` (whole second).
    pub fn answer_at(&self, at: Timestamp) -> &Answer {
        let index = self.pieces.partition_point(|piece| piece.from <= at);
        // The first piece also holds every earlier target.
        &self.pieces[index.saturating_sub(1)].answer
    }

    /// The first run of planning targets, or the refusal every target gets when none plans
    /// (the answer of the first piece).
    pub fn window(&self) -> Result<Window, (Token, String)> {
        let runs: Vec<usize> = (0..self.pieces.len())
            .filter(|&index| self.pieces[index].answer == Answer::Plans)
            .collect();
        let Some(&first) = runs.first() else {
            return Err(match &self.pieces[0].answer {
                Answer::Refused { token, message } => (*token, message.clone()),
                Answer::Plans => (Token::TargetNotCovered, String::new()),
            });
        };
        let piece = &self.pieces[first];
        let stop = self.pieces.get(first + 1).and_then(|next| match &next.answer {
            Answer::Refused { token, message } => Some((*token, message.clone())),
            Answer::Plans => None,
        });
        Ok(Window { start: piece.from, end: piece.to, stop, later_runs: runs.len() - 1 })
    }
}

/// The seconds where the planner's answer may change, ascending (never empty).
pub fn candidates(history: &History, backup: &BackupMeta) -> Vec<Timestamp> {
    let mut instants: Vec<Timestamp> = Vec::new();
    for file in &history.files {
        instants.extend(file.txns().iter().filter_map(|txn| txn.commit));
        instants.extend(file.last_event);
    }
    for record in &history.records {
        instants.push(record.observed_at);
        if let Some(interval) = record.probe_interval {
            instants.extend(record.observed_at.checked_sub(interval).ok());
            instants.extend(record.observed_at.checked_add(interval).ok());
        }
    }
    instants.extend(backup.dump_end);
    instants.extend(backup.stamp.as_ref().and_then(|stamp| stamp.server_clock_end));
    let mut seconds = BTreeSet::new();
    for instant in instants {
        let floor = Timestamp::from_second(instant.as_second()).unwrap_or(instant);
        for offset in CANDIDATE_OFFSETS {
            if let Ok(at) = floor.checked_add(SignedDuration::from_secs(offset)) {
                seconds.insert(at);
            }
        }
    }
    if seconds.is_empty() {
        seconds.insert(Timestamp::UNIX_EPOCH);
    }
    seconds.into_iter().collect()
}

/// The planner's answer for a target second.
pub fn answer(
    history: &History,
    open_refusal: Option<&bloodraven_archive::Refusal>,
    backup: &BackupMeta,
    exclude_gtids: &str,
    limits: Limits,
    at: Timestamp,
) -> Answer {
    let request = Request {
        target: Some(at.to_string()),
        exclude_gtids: exclude_gtids.to_owned(),
        allow_partial: false,
    };
    match plan(Input { history, open_refusal, backup, request: &request, limits }) {
        Ok(_) => Answer::Plans,
        Err(Refusal { token, message, .. }) => Answer::Refused { token, message },
    }
}

fn same(a: &Answer, b: &Answer) -> bool {
    match (a, b) {
        (Answer::Plans, Answer::Plans) => true,
        (Answer::Refused { token: x, .. }, Answer::Refused { token: y, .. }) => x == y,
        _ => false,
    }
}

/// The planner's answer over time for `backup` with `exclude_gtids` (timestamp restores,
/// `allowPartial` false).
pub fn timeline(
    history: &History,
    open_refusal: Option<&bloodraven_archive::Refusal>,
    backup: &BackupMeta,
    exclude_gtids: &str,
    limits: Limits,
) -> Timeline {
    let seconds = candidates(history, backup);
    let before = seconds[0].checked_sub(SignedDuration::from_secs(1)).unwrap_or(seconds[0]);
    let mut pieces: Vec<Piece> = Vec::new();
    for at in std::iter::once(before).chain(seconds) {
        let answer = answer(history, open_refusal, backup, exclude_gtids, limits, at);
        if let Some(last) = pieces.last_mut() {
            if same(&last.answer, &answer) {
                continue;
            }
            last.to = at.checked_sub(SignedDuration::from_secs(1)).ok();
        }
        pieces.push(Piece { from: at, to: None, answer });
    }
    Timeline { pieces }
}
