//! A read-only walk: a runbook followed over one snapshot from its first step, through every
//! step whose check decides where to go, until it ends, offers an action (which needs a human
//! and the confirm flow) or comes back to a step it showed (a step that waits for the group to
//! change). What `bloodraven runbook run` prints and what the tests walk.

use std::collections::BTreeSet;

use jiff::Timestamp;

use crate::engine::{AdvanceError, NextStep, Progress, advance};
use crate::runbook::{Runbook, Target};
use crate::view::GroupView;

/// Where a read-only walk stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// The runbook finished.
    Finished,
    /// The step at this index offers its action: a human confirms it.
    Offer(usize),
    /// The walk came back to the step at this index: it waits for the group to change.
    Waits(usize),
}

/// The steps shown, in order, and where the walk stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Walk {
    /// Each step shown (always [`NextStep::Show`]).
    pub shown: Vec<NextStep>,
    /// Where it stopped.
    pub end: WalkEnd,
}

impl Walk {
    /// The ids of the steps shown, for messages and tests.
    pub fn path<'a>(&self, runbook: &'a Runbook) -> Vec<&'a str> {
        self.shown
            .iter()
            .filter_map(|shown| match shown {
                NextStep::Show { step, .. } => runbook.steps.get(*step).map(|s| s.id.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// Walks `runbook` over `view` from its first step without acting.
pub fn walk(runbook: &Runbook, view: &GroupView, now: Timestamp) -> Result<Walk, AdvanceError> {
    let mut progress = Progress::start(runbook);
    let mut seen = BTreeSet::new();
    let mut shown = Vec::new();
    loop {
        let next = advance(runbook, &progress, view, now)?;
        let (step, has_offer, target) = match &next {
            NextStep::Show { step, offer, next, .. } => (*step, offer.is_some(), next.clone()),
            // Without a confirmed action nothing but Show or Finished comes back.
            _ => return Ok(Walk { shown, end: WalkEnd::Finished }),
        };
        seen.insert(step);
        shown.push(next);
        if has_offer {
            return Ok(Walk { shown, end: WalkEnd::Offer(step) });
        }
        match target {
            Target::Step(index) if seen.contains(&index) => {
                return Ok(Walk { shown, end: WalkEnd::Waits(index) });
            }
            Target::Step(_) => progress = progress.moved(runbook, &target),
            Target::Done => return Ok(Walk { shown, end: WalkEnd::Finished }),
        }
    }
}
