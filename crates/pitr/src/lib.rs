//! The PITR restore planner of the backup-and-restore document (000, "Point-in-time recovery").
//!
//! Pure: no IO, no clock, no async. Input: the opened archive with the bytes the caller read
//! ([`History`]), the backup's metadata ([`BackupMeta`]) and the [`Request`]; output: a [`Plan`]
//! or the first applicable [`Refusal`] of the refusal order ([`REFUSAL_ORDER`]).

mod coverage_json;
mod index;
mod model;
mod plan;
mod refusal;
mod request;
mod search;
mod window;

pub use crate::coverage_json::{CoverageJson, coverage_json};
pub use crate::index::{index_bytes, index_row};
pub use crate::model::{File, History, Record, RowBytes, RowIndex, Txn};
pub use crate::plan::{
    DELTA, Input, Limits, MESSAGE_SET_BYTES, Outcome, Plan, Segment, Witness, check_dump, plan,
    shorten,
};
pub use crate::refusal::{Check, OrderRow, REFUSAL_ORDER, Refusal, Token, first_refusal, step_of};
pub use crate::request::{BackupMeta, MAX_EXCLUDE_BYTES, Mode, Request, Stamp, check_request};
pub use crate::window::{
    Answer, CANDIDATE_OFFSETS, Piece, Timeline, Window, answer, candidates, timeline,
};
