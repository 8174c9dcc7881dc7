//! Keys of the runbook player (the group detail's Runbooks panel). On the list: ↑/↓ select,
//! enter walks (or resumes) the selected runbook. In a walk: enter moves on (to where the
//! check's result leads), opens the confirm dialog of a step's action (once the dialog sent
//! it, its `expect` is waited for; see [`super::guided::sent`]), or retries a wait that timed
//! out; esc returns to the list and keeps the walk's progress.

use bloodraven_runbook::{GroupView, NextStep, Progress, advance};

use super::super::action::Intent;
use super::super::state::{DetailTab, Key, Proposal, Screen, State};
use crate::ops::GroupRef;
use crate::ops::confirm::Origin;

/// What the panel did with a key.
pub(super) enum Handled {
    /// The panel does not take it.
    No,
    Yes,
    /// The step's action: open its confirm dialog.
    Propose(Box<Proposal>),
}

impl From<bool> for Handled {
    fn from(taken: bool) -> Handled {
        if taken { Handled::Yes } else { Handled::No }
    }
}

/// Handles `intent` on the Runbooks panel.
pub(super) fn runbook_input(state: &mut State, intent: &Intent) -> Handled {
    let Some(Screen::Group { key, tab: DetailTab::Runbooks }) = state.ui.screens.last().cloned()
    else {
        return Handled::No;
    };
    let Some(group) = state.group(&key).cloned() else { return Handled::No };
    let walking = state.ui.runbooks.get(&key).and_then(|ui| ui.walking.clone());
    match walking {
        None => list_input(state, &key, &group, intent).into(),
        Some(id) => walk_input(state, &key, &group, &id, intent),
    }
}

/// A step's action was sent through its confirm dialog: its `expect` is waited for from now.
pub(super) fn acted(state: &mut State, key: &Key, runbook: &str, step: &str) {
    let now = state.now;
    // The group the action was decided on: the step's `expect` reads it as `before`.
    let view = state.group(key).map(GroupView::of);
    let Some(progress) = state.ui.runbooks.get_mut(key).and_then(|ui| ui.progress.get_mut(runbook))
    else {
        return;
    };
    if progress.step.as_deref() == Some(step) {
        *progress = match &view {
            Some(view) => progress.clone().acted_on(now, view),
            None => progress.clone().acted(now),
        };
    }
}

fn list_input(
    state: &mut State,
    key: &Key,
    group: &bloodraven_crd::MysqlFailoverGroup,
    intent: &Intent,
) -> bool {
    let ids: Vec<String> =
        state.applicable_runbooks(group).runbooks.iter().map(|r| r.id.clone()).collect();
    let ui = state.ui.runbooks.entry(key.clone()).or_default();
    let last = ids.len().saturating_sub(1);
    match intent {
        Intent::Up => ui.selected = ui.selected.saturating_sub(1),
        Intent::Down => ui.selected = (ui.selected + 1).min(last),
        Intent::Open => {
            let Some(id) = ids.get(ui.selected.min(last)) else { return true };
            ui.walking = Some(id.clone());
            if !ui.progress.contains_key(id)
                && let Some(runbook) = state.runbooks.iter().find(|r| &r.id == id)
            {
                ui.progress.insert(id.clone(), Progress::start(runbook));
            }
        }
        _ => return false,
    }
    true
}

fn walk_input(
    state: &mut State,
    key: &Key,
    group: &bloodraven_crd::MysqlFailoverGroup,
    id: &str,
    intent: &Intent,
) -> Handled {
    let runbooks = state.runbooks.clone();
    let now = state.now;
    match intent {
        Intent::Back => {
            state.ui.runbooks.entry(key.clone()).or_default().walking = None;
            Handled::Yes
        }
        Intent::Open => {
            let ui = state.ui.runbooks.entry(key.clone()).or_default();
            let Some(runbook) = runbooks.iter().find(|r| r.id == id) else {
                ui.walking = None;
                return Handled::Yes;
            };
            let progress = ui.progress.get(id).cloned().unwrap_or_else(|| Progress::start(runbook));
            let next = match advance(runbook, &progress, &GroupView::of(group), now) {
                Ok(next) => next,
                Err(error) => {
                    state.ui.message = Some(error.to_string());
                    return Handled::Yes;
                }
            };
            let moved = match next {
                NextStep::Show { offer: Some(offer), step, .. } => {
                    let group_ref = GroupRef::new(key.0.clone(), key.1.clone());
                    let step_id = runbook.steps.get(step).map(|s| s.id.clone()).unwrap_or_default();
                    match crate::runbook_cli::write_op(&offer, &group_ref) {
                        // The same confirm flow as every screen; the walk waits on `expect`
                        // only once the dialog sent it.
                        Some(op) => {
                            return Handled::Propose(Box::new(Proposal {
                                op,
                                origin: Origin::Runbook { runbook: id.to_owned(), step: step_id },
                            }));
                        }
                        // No guided operation sends it: done by hand as the step explains.
                        None => {
                            state.ui.message = Some(format!(
                                "{}: no guided operation sends this; do it by hand as the step \
                                 explains (waiting for its result)",
                                offer.action.name()
                            ));
                            progress.acted_on(now, &GroupView::of(group))
                        }
                    }
                }
                NextStep::Show { next, .. } | NextStep::Satisfied { next, .. } => {
                    progress.moved(runbook, &next)
                }
                NextStep::TimedOut { .. } => Progress { acted_at: None, ..progress },
                NextStep::Waiting { .. } => progress,
                NextStep::Finished => {
                    ui.walking = None;
                    Progress::start(runbook)
                }
            };
            let ui = state.ui.runbooks.entry(key.clone()).or_default();
            ui.progress.insert(id.to_owned(), moved);
            Handled::Yes
        }
        // Other keys (scrolling, tabs) keep their meaning in a walk.
        _ => Handled::No,
    }
}
