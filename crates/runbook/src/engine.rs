//! The engine: which runbooks apply to a group, and a runbook walked as a state machine over
//! observed snapshots. Pure: values in, values out; the caller passes `now`.

use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::action::Action;
use crate::error::EvalError;
use crate::runbook::{Expression, Runbook, Target};
use crate::view::GroupView;

/// A group's view, converted once for the evaluator.
pub struct Snapshot {
    context: cel::Context<'static>,
}

impl Snapshot {
    /// Binds `group` (and `before`) to the view.
    pub fn of(view: &GroupView) -> Result<Self, EvalError> {
        Snapshot::since(view, view)
    }

    /// Binds `group` to `view` and `before` to `before`, the group when the step's action was
    /// confirmed.
    pub fn since(view: &GroupView, before: &GroupView) -> Result<Self, EvalError> {
        let convert = |view: &GroupView, name: &str| {
            cel::to_value(view).map_err(|e| EvalError {
                runbook: String::new(),
                field: name.to_owned(),
                source_text: String::new(),
                message: format!("the group view does not convert to CEL: {e}"),
            })
        };
        let mut context = cel::Context::default();
        context.add_variable_from_value(crate::types::ROOT, convert(view, crate::types::ROOT)?);
        context
            .add_variable_from_value(crate::types::BEFORE, convert(before, crate::types::BEFORE)?);
        Ok(Snapshot { context })
    }

    fn value(&self, runbook: &str, expr: &Expression) -> Result<cel::Value, EvalError> {
        expr.program.execute(&self.context).map_err(|e| EvalError {
            runbook: runbook.to_owned(),
            field: expr.field.clone(),
            source_text: expr.source.clone(),
            message: e.to_string(),
        })
    }

    fn bool(&self, runbook: &str, expr: &Expression) -> Result<bool, EvalError> {
        match self.value(runbook, expr)? {
            cel::Value::Bool(b) => Ok(b),
            other => Err(EvalError {
                runbook: runbook.to_owned(),
                field: expr.field.clone(),
                source_text: expr.source.clone(),
                message: format!("evaluated to {other:?}, not a bool"),
            }),
        }
    }
}

/// The runbooks that apply to a group, most severe first (then by id), and the runbooks whose
/// `appliesWhen` failed to evaluate (shown as errors, never silently dropped).
#[derive(Debug, Default)]
pub struct Ranked<'a> {
    /// Applicable runbooks.
    pub runbooks: Vec<&'a Runbook>,
    /// Evaluation failures.
    pub errors: Vec<EvalError>,
}

/// Which runbooks apply to the group, ranked.
pub fn applicable<'a>(runbooks: &'a [Runbook], view: &GroupView) -> Ranked<'a> {
    match Snapshot::of(view) {
        Ok(snapshot) => applicable_in(runbooks, &snapshot),
        Err(e) => Ranked { runbooks: Vec::new(), errors: vec![e] },
    }
}

/// [`applicable`] over a snapshot already converted (to rank many runbook sets or reuse it).
pub fn applicable_in<'a>(runbooks: &'a [Runbook], snapshot: &Snapshot) -> Ranked<'a> {
    let mut ranked = Ranked::default();
    for runbook in runbooks {
        match snapshot.bool(&runbook.id, &runbook.applies_when) {
            Ok(true) => ranked.runbooks.push(runbook),
            Ok(false) => {}
            Err(e) => ranked.errors.push(e),
        }
    }
    ranked.runbooks.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.id.cmp(&b.id)));
    ranked
}

/// Where a walk stands. Serializable, so it survives leaving and re-entering the view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// The runbook's id.
    pub runbook: String,
    /// The current step's id; `None` once finished.
    pub step: Option<String>,
    /// When the current step's action was confirmed; `None` before.
    pub acted_at: Option<Timestamp>,
    /// The group as it was when the action was confirmed (`before` in the step's `expect`);
    /// `None` before, or when the caller did not give it (then `before` reads as an empty
    /// group: every field `""`, `0`, `false` or `[]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Box<GroupView>>,
}

impl Progress {
    /// At the first step.
    pub fn start(runbook: &Runbook) -> Self {
        Progress {
            runbook: runbook.id.clone(),
            step: runbook.steps.first().map(|s| s.id.clone()),
            acted_at: None,
            before: None,
        }
    }

    /// The current step's action was confirmed at `now`, without the group it was decided on
    /// (`before` then reads as an empty group; prefer [`Progress::acted_on`]).
    pub fn acted(&self, now: Timestamp) -> Self {
        Progress { acted_at: Some(now), before: None, ..self.clone() }
    }

    /// The current step's action was confirmed at `now` on the group `view` (what its
    /// `expect` reads as `before`, so an earlier run's result is not taken for this one's).
    pub fn acted_on(&self, now: Timestamp, view: &GroupView) -> Self {
        Progress { acted_at: Some(now), before: Some(Box::new(view.clone())), ..self.clone() }
    }

    /// Moved to `target` (from [`NextStep`]).
    pub fn moved(&self, runbook: &Runbook, target: &Target) -> Self {
        let step = match target {
            Target::Step(i) => runbook.steps.get(*i).map(|s| s.id.clone()),
            Target::Done => None,
        };
        Progress { runbook: self.runbook.clone(), step, acted_at: None, before: None }
    }
}

/// A check's live result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckOutcome {
    /// The value the predicate read.
    pub value: bool,
    /// Whether it equals the expected value.
    pub passed: bool,
    /// The scalar fields of `group` it read and their values (`group.hold.runId` = `6f1c…`).
    pub reads: Vec<(String, String)>,
}

/// A guided operation ready for the confirm flow, its parameters drawn from the state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The operation.
    pub action: Action,
    /// Parameter name and value.
    pub params: Vec<(String, String)>,
}

/// What the walk shows now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextStep {
    /// Show the step: its check, the action it offers (only when there is no check or the check
    /// passed), and where "continue" leads (by the check's result).
    Show {
        /// Step index.
        step: usize,
        /// The check's live result.
        check: Option<CheckOutcome>,
        /// The operation offered.
        offer: Option<Offer>,
        /// Where to go next.
        next: Target,
    },
    /// The action was confirmed; its `expect` is not yet true.
    Waiting {
        /// Step index.
        step: usize,
        /// Time left before the wait times out.
        remaining: Duration,
    },
    /// The action was confirmed and its `expect` holds (or it has none): move on.
    Satisfied {
        /// Step index.
        step: usize,
        /// Where to go.
        next: Target,
    },
    /// The action's `expect` did not hold within its timeout.
    TimedOut {
        /// Step index.
        step: usize,
        /// How long it waited.
        waited: Duration,
    },
    /// The runbook is finished.
    Finished,
}

/// Why a walk cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum AdvanceError {
    /// The progress belongs to another runbook, or names a step the runbook no longer has.
    #[error(
        "progress of runbook {runbook} at step {step:?} does not fit runbook {expected}: start \
         the runbook again"
    )]
    Mismatch {
        /// The progress's runbook.
        runbook: String,
        /// The progress's step.
        step: Option<String>,
        /// The runbook given.
        expected: String,
    },
    /// An expression failed to evaluate.
    #[error(transparent)]
    Eval(#[from] EvalError),
}

/// One step of the state machine: what to show for `progress` given the observed group.
pub fn advance(
    runbook: &Runbook,
    progress: &Progress,
    view: &GroupView,
    now: Timestamp,
) -> Result<NextStep, AdvanceError> {
    let mismatch = || AdvanceError::Mismatch {
        runbook: progress.runbook.clone(),
        step: progress.step.clone(),
        expected: runbook.id.clone(),
    };
    if progress.runbook != runbook.id {
        return Err(mismatch());
    }
    let Some(step_id) = &progress.step else {
        return Ok(NextStep::Finished);
    };
    let index = runbook.step_index(step_id).ok_or_else(mismatch)?;
    let step = &runbook.steps[index];
    if let Some(acted_at) = progress.acted_at {
        let empty = GroupView::default();
        let before = progress.before.as_deref().unwrap_or(&empty);
        let snapshot = Snapshot::since(view, before)?;
        let Some(expect) = &step.expect else {
            return Ok(NextStep::Satisfied { step: index, next: step.on_pass.clone() });
        };
        if snapshot.bool(&runbook.id, &expect.expr)? {
            return Ok(NextStep::Satisfied { step: index, next: step.on_pass.clone() });
        }
        let waited = Duration::try_from(now.duration_since(acted_at)).unwrap_or(Duration::ZERO);
        return Ok(match expect.timeout.checked_sub(waited) {
            Some(remaining) if !remaining.is_zero() => NextStep::Waiting { step: index, remaining },
            _ => NextStep::TimedOut { step: index, waited },
        });
    }
    let snapshot = Snapshot::of(view)?;
    let check = match &step.check {
        Some(check) => {
            let value = snapshot.bool(&runbook.id, &check.expr)?;
            let mut reads = Vec::with_capacity(check.reads.len());
            for read in &check.reads {
                reads.push((read.source.clone(), text(&snapshot.value(&runbook.id, read)?)));
            }
            Some(CheckOutcome { value, passed: value == check.expect, reads })
        }
        None => None,
    };
    let passed = check.as_ref().is_none_or(|c| c.passed);
    let offer = match (&step.action, passed) {
        (Some(call), true) => {
            let mut params = Vec::with_capacity(call.params.len());
            for (name, expr) in &call.params {
                params.push((name.clone(), text(&snapshot.value(&runbook.id, expr)?)));
            }
            Some(Offer { action: call.action, params })
        }
        _ => None,
    };
    let next = if passed { step.on_pass.clone() } else { step.on_fail.clone() };
    Ok(NextStep::Show { step: index, check, offer, next })
}

fn text(value: &cel::Value) -> String {
    match value {
        cel::Value::String(s) => s.as_str().to_owned(),
        cel::Value::Int(i) => i.to_string(),
        cel::Value::UInt(u) => u.to_string(),
        cel::Value::Bool(b) => b.to_string(),
        cel::Value::Null => String::new(),
        other => format!("{other:?}"),
    }
}
