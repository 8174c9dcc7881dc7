//! Keys of the runbook player (the group detail's Runbooks panel). On the list: ↑/↓ select,
//! enter walks (or resumes) the selected runbook. In a walk: enter moves on (to where the
//! check's result leads), marks a step's action as sent (then its `expect` is waited for), or
//! retries a wait that timed out; esc returns to the list and keeps the walk's progress.

use bloodraven_runbook::{GroupView, NextStep, Progress, advance};

use super::super::action::Intent;
use super::super::state::{DetailTab, Key, Screen, State};

/// Handles `intent` on the Runbooks panel; `false` when the panel does not take it.
pub(super) fn runbook_input(state: &mut State, intent: &Intent) -> bool {
    let Some(Screen::Group { key, tab: DetailTab::Runbooks }) = state.ui.screens.last().cloned()
    else {
        return false;
    };
    let Some(group) = state.group(&key).cloned() else { return false };
    let walking = state.ui.runbooks.get(&key).and_then(|ui| ui.walking.clone());
    match walking {
        None => list_input(state, &key, &group, intent),
        Some(id) => walk_input(state, &key, &group, &id, intent),
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
) -> bool {
    let runbooks = state.runbooks.clone();
    let now = state.now;
    match intent {
        Intent::Back => {
            state.ui.runbooks.entry(key.clone()).or_default().walking = None;
            true
        }
        Intent::Open => {
            let ui = state.ui.runbooks.entry(key.clone()).or_default();
            let Some(runbook) = runbooks.iter().find(|r| r.id == id) else {
                ui.walking = None;
                return true;
            };
            let progress = ui.progress.get(id).cloned().unwrap_or_else(|| Progress::start(runbook));
            let next = match advance(runbook, &progress, &GroupView::of(group), now) {
                Ok(next) => next,
                Err(error) => {
                    state.ui.message = Some(error.to_string());
                    return true;
                }
            };
            let moved = match next {
                NextStep::Show { offer: Some(_), .. } => progress.acted(now),
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
            ui.progress.insert(id.to_owned(), moved);
            true
        }
        // Other keys (scrolling, tabs) keep their meaning in a walk.
        _ => false,
    }
}
