//! Runbooks as data (issue #19): the file format and its JSON Schema, checked loading whose
//! errors name file, line and column, the typed view of a group that CEL predicates read, and
//! the pure engine (which runbooks apply; a runbook walked over observed snapshots). No IO
//! beyond [`load`] and [`load_dir`] reading the files.

pub mod action;
mod check;
pub mod engine;
pub mod error;
pub mod load;
pub mod model;
mod pos;
pub mod runbook;
pub mod schema;
pub mod shipped;
pub mod types;
pub mod view;
pub mod walk;

pub use action::Action;
pub use engine::{
    AdvanceError, CheckOutcome, NextStep, Offer, Progress, Ranked, Snapshot, advance, applicable,
    applicable_in,
};
pub use error::{EvalError, Pos, RunbookError};
pub use load::{load, load_dir, parse};
pub use model::{RiskLevel, Severity};
pub use runbook::{Runbook, Step, Target};
pub use shipped::shipped;
pub use view::GroupView;
pub use walk::{Walk, WalkEnd, walk};
