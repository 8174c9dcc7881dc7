//! A runbook that passed every check: expressions compiled, positions kept for messages.

use std::sync::Arc;
use std::time::Duration;

use crate::action::Action;
use crate::error::Pos;
use crate::model::{RiskLevel, Severity};

/// A compiled CEL expression with where it came from.
#[derive(Clone, Debug)]
pub struct Expression {
    /// The source text.
    pub source: String,
    /// Where it starts in the runbook file.
    pub pos: Pos,
    /// The field path, such as `steps[1].check.expr`.
    pub field: String,
    pub(crate) program: Arc<cel::Program>,
}

/// A checked runbook.
#[derive(Clone, Debug)]
pub struct Runbook {
    /// Stable id.
    pub id: String,
    /// One line shown in lists.
    pub title: String,
    /// The spec section it follows.
    pub spec: String,
    /// When it is offered.
    pub applies_when: Expression,
    /// How urgent.
    pub severity: Severity,
    /// Whether it can lose data.
    pub data_loss: RiskLevel,
    /// The sentence that says so.
    pub data_loss_sentence: String,
    /// The steps in file order.
    pub steps: Vec<Step>,
}

/// A checked step.
#[derive(Clone, Debug)]
pub struct Step {
    /// Step id.
    pub id: String,
    /// Markdown.
    pub explain: String,
    /// The check.
    pub check: Option<Check>,
    /// The guided operation offered.
    pub action: Option<ActionCall>,
    /// What to wait for after the action.
    pub expect: Option<Expect>,
    /// Where to go when the check passes (or when there is no check).
    pub on_pass: Target,
    /// Where to go when the check fails.
    pub on_fail: Target,
}

/// A checked `check`.
#[derive(Clone, Debug)]
pub struct Check {
    /// The predicate.
    pub expr: Expression,
    /// The value it passes with.
    pub expect: bool,
    /// What a failure means.
    pub meaning: String,
    /// The scalar fields of `group` it reads, to show beside its result.
    pub reads: Vec<Expression>,
}

/// A checked `action`.
#[derive(Clone, Debug)]
pub struct ActionCall {
    /// The operation.
    pub action: Action,
    /// Parameter name and the expression that produces it, in [`Action::params`] order.
    pub params: Vec<(String, Expression)>,
}

/// A checked `expect`.
#[derive(Clone, Debug)]
pub struct Expect {
    /// The predicate to wait for.
    pub expr: Expression,
    /// How long.
    pub timeout: Duration,
}

/// Where a step leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The step with this index.
    Step(usize),
    /// The runbook is finished.
    Done,
}

impl Runbook {
    /// The index of the step with this id.
    pub fn step_index(&self, id: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.id == id)
    }
}
