//! `update`: the only place the state changes.

use std::collections::BTreeMap;

use super::action::{Action, Change, DataEvent, Effect, Intent};
use super::state::{DetailTab, Key, Mode, Scope, Screen, SortColumn, SourceKind, State, key_of};

/// How long an archive summary stays fresh before the panel reads the archive again.
pub const ARCHIVE_REFRESH: jiff::SignedDuration = jiff::SignedDuration::from_secs(30);

/// Applies `action` to `state` and says what the runtime must do.
pub fn update(state: &mut State, action: Action) -> Vec<Effect> {
    let judged = judged_by(&action);
    let mut effects = step(state, action);
    workbench::refresh(state);
    judge(state, judged);
    if state.frozen.is_none()
        && let Some(effect) = archive_effect(state)
    {
        effects.push(effect);
        if !effects.contains(&Effect::Render) {
            effects.push(Effect::Render);
        }
    }
    effects
}

/// Which groups' verdicts an action may change.
enum Judged {
    Nothing,
    One(Key),
    All,
}

fn judged_by(action: &Action) -> Judged {
    match action {
        Action::Tick(_) | Action::Input(Intent::ToggleFreeze) => Judged::All,
        Action::Data(DataEvent::Groups(Change::Applied(group) | Change::Deleted(group))) => {
            Judged::One(key_of(&group.metadata))
        }
        Action::Data(
            DataEvent::Groups(_)
            | DataEvent::GroupsListed(_)
            | DataEvent::Backups(_)
            | DataEvent::Verifications(_)
            | DataEvent::OperatorLease(_),
        ) => Judged::All,
        _ => Judged::Nothing,
    }
}

/// Keeps `state.data.worst` (each group's worst severity) up to date after an action.
fn judge(state: &mut State, judged: Judged) {
    match judged {
        Judged::Nothing => {}
        Judged::One(key) => match state.data.groups.get(&key) {
            Some(group) => {
                let worst = state.verdict(group).worst();
                state.data.worst.insert(key, worst);
            }
            None => {
                state.data.worst.remove(&key);
            }
        },
        Judged::All => {
            let (backups, verifications) = state.related();
            let now = state.now;
            let lease = state.data.operator.renewed();
            state.data.worst = state
                .data
                .groups
                .iter()
                .map(|(key, group)| {
                    let verdict =
                        crate::verdict::of_with_lease(group, &backups, &verifications, lease, now);
                    (key.clone(), verdict.worst())
                })
                .collect();
        }
    }
}

/// When the archive panel of a group is shown and its archive was never read, or was read
/// more than [`ARCHIVE_REFRESH`] ago: ask for it (or record why there is no archive to read).
fn archive_effect(state: &mut State) -> Option<Effect> {
    let Screen::Group { key, tab: DetailTab::Archive } = state.screen().clone() else {
        return None;
    };
    let group = state.data.groups.get(&key)?;
    let now = state.now;
    let known = state.data.archives.get(&key).cloned().unwrap_or_default();
    let fresh = known.updated.is_some_and(|updated| now.duration_since(updated) < ARCHIVE_REFRESH);
    if known.loading() || fresh {
        return None;
    }
    let location = crate::archive::locate(group);
    let backups = state
        .data
        .backups
        .iter()
        .filter(|((namespace, _), backup)| {
            *namespace == key.0 && backup.spec.failover_group_ref.name == key.1
        })
        .map(|(_, backup)| crate::archive::BackupAnchor::of(backup))
        .collect();
    let entry = state.data.archives.entry(key.clone()).or_default();
    match location {
        Ok(location) => {
            entry.requested = Some(now);
            Some(Effect::LoadArchive {
                key,
                request: crate::archive::ArchiveRequest { location, backups },
            })
        }
        Err(reason) => {
            entry.requested = Some(now);
            entry.updated = Some(now);
            entry.outcome = Some(crate::archive::ArchiveOutcome::Failed(reason));
            None
        }
    }
}

fn step(state: &mut State, action: Action) -> Vec<Effect> {
    match action {
        Action::Input(intent) => input(state, intent),
        Action::Sourced { epoch, event } => {
            if epoch != state.epoch {
                // A source of an older context or scope: its data is not this view's.
                return Vec::new();
            }
            step(state, Action::Data(event))
        }
        Action::Refused(refusal) => {
            state.ui.message = Some(refusal);
            vec![Effect::Render]
        }
        Action::Data(event) => {
            if let Some(queue) = &mut state.frozen {
                queue.push(event);
                // The header counts queued changes.
                return vec![Effect::Render];
            }
            apply_data(state, event);
            clamp_selection(state);
            vec![Effect::Render]
        }
        Action::Tick(now) => {
            if state.frozen.is_some() || now.as_second() == state.now.as_second() {
                return Vec::new();
            }
            state.now = now;
            vec![Effect::Render]
        }
        Action::Resize => vec![Effect::Render],
        Action::ContextSwitched(Ok(context)) => {
            state.context.clone_from(&context);
            reset_data(state);
            state.ui.message = Some(format!("context {context}"));
            // The runtime already holds the new client: restart every source on it. A new
            // cluster starts read-only.
            let mut effects = vec![Effect::Render];
            if std::mem::take(&mut state.guided.write.on) {
                effects.push(Effect::SetWrite(false));
            }
            effects.push(Effect::Watch(state.scope.clone()));
            effects
        }
        Action::ContextSwitched(Err(error)) => {
            state.ui.message = Some(error);
            vec![Effect::Render]
        }
        Action::Propose(proposal) => guided::propose(state, proposal),
        Action::Reviewed { serial, result } => guided::reviewed(state, serial, result),
        Action::Sent { serial, outcome } => guided::sent(state, serial, outcome),
    }
}

fn apply_change<K: kube::Resource>(map: &mut BTreeMap<Key, K>, change: Change<K>) {
    match change {
        Change::Restarted(objects) => {
            map.clear();
            for object in objects {
                map.insert(key_of(object.meta()), object);
            }
        }
        Change::Applied(object) => {
            map.insert(key_of(object.meta()), *object);
        }
        Change::Deleted(object) => {
            map.remove(&key_of(object.meta()));
        }
    }
}

fn apply_data(state: &mut State, event: DataEvent) {
    let now = state.now;
    let touched = match event {
        DataEvent::Groups(change) => {
            // A group that decodes now is no longer unreadable (and a deleted one is neither).
            match &change {
                Change::Restarted(_) => {}
                Change::Applied(group) | Change::Deleted(group) => {
                    state.data.unreadable_groups.remove(&key_of(&group.metadata));
                }
            }
            match change {
                Change::Restarted(groups) => {
                    state.data.groups = groups
                        .into_iter()
                        .map(|group| (key_of(&group.metadata), Box::new(group)))
                        .collect();
                }
                Change::Applied(group) => {
                    state.data.groups.insert(key_of(&group.metadata), group);
                }
                Change::Deleted(group) => {
                    state.data.groups.remove(&key_of(&group.metadata));
                }
            }
            SourceKind::Groups
        }
        DataEvent::GroupsListed(groups) => {
            state.data.groups =
                groups.into_iter().map(|group| (key_of(&group.metadata), group)).collect();
            SourceKind::Groups
        }
        DataEvent::UnreadableGroups(change) => {
            let unreadable = &mut state.data.unreadable_groups;
            match change {
                Change::Restarted(objects) => {
                    unreadable.clear();
                    for object in objects {
                        state.data.groups.remove(&object.key());
                        unreadable.insert(object.key(), object);
                    }
                }
                Change::Applied(object) => {
                    state.data.groups.remove(&object.key());
                    unreadable.insert(object.key(), *object);
                }
                Change::Deleted(object) => {
                    state.data.groups.remove(&object.key());
                    unreadable.remove(&object.key());
                }
            }
            SourceKind::Groups
        }
        DataEvent::Backups(change) => {
            apply_change(&mut state.data.backups, change);
            SourceKind::Backups
        }
        DataEvent::Verifications(change) => {
            apply_change(&mut state.data.verifications, change);
            SourceKind::Verifications
        }
        DataEvent::Events(change) => {
            apply_change(&mut state.data.events, change);
            SourceKind::Events
        }
        DataEvent::Connection { source, status, at: _ } => {
            state.data.sources.entry(source).or_default().status = status;
            return;
        }
        DataEvent::OperatorLease(lease) => {
            state.data.operator = lease;
            return;
        }
        DataEvent::Archive { key, outcome, at: _ } => {
            let archive = state.data.archives.entry(key).or_default();
            archive.updated = Some(now);
            archive.outcome = Some(outcome);
            return;
        }
    };
    let source = state.data.sources.entry(touched).or_default();
    source.updated = Some(now);
    source.status = super::state::ConnectionStatus::Connected;
}

fn clamp_selection(state: &mut State) {
    let count = state.visible_groups().len();
    state.ui.selected = state.ui.selected.min(count.saturating_sub(1));
}

fn input(state: &mut State, intent: Intent) -> Vec<Effect> {
    state.ui.message = None;
    if intent == Intent::Quit {
        return vec![Effect::Quit];
    }
    match state.ui.mode {
        Mode::Help => {
            if intent == Intent::ToggleHelp {
                state.ui.mode = state.ui.previous_mode;
            }
        }
        Mode::Filter => line_input(state, intent, true),
        Mode::Command => return command_input(state, intent),
        Mode::Dialog => return guided::overlay_input(state, intent),
        Mode::Fleet | Mode::Detail if intent == Intent::ToggleWrite => {
            return guided::toggle_write(state);
        }
        Mode::Fleet | Mode::Detail if intent == Intent::Guided => {
            guided::open_picker(state);
        }
        Mode::Fleet => fleet_input(state, intent),
        Mode::Detail => {
            if let Some(proposal) = detail_input(state, intent) {
                return guided::propose(state, proposal);
            }
        }
    }
    vec![Effect::Render]
}

fn common(state: &mut State, intent: &Intent) -> bool {
    match intent {
        Intent::ToggleHelp => {
            state.ui.previous_mode = state.ui.mode;
            state.ui.mode = Mode::Help;
        }
        Intent::StartCommand => {
            state.ui.previous_mode = state.ui.mode;
            state.ui.mode = Mode::Command;
            state.ui.command.clear();
        }
        Intent::ToggleFreeze => match state.frozen.take() {
            Some(queued) => {
                for event in queued {
                    apply_data(state, event);
                }
                clamp_selection(state);
            }
            None => state.frozen = Some(Vec::new()),
        },
        _ => return false,
    }
    true
}

/// Rows a page key moves (the update does not know the terminal's height; a page of the
/// smallest layout, 80x24).
pub const PAGE: usize = 16;

/// Columns `<` and `>` move a long line.
pub const HSCROLL_STEP: u16 = 20;

fn fleet_input(state: &mut State, intent: Intent) {
    if common(state, &intent) {
        return;
    }
    let count = state.visible_groups().len();
    let last = count.saturating_sub(1);
    match intent {
        Intent::Up => state.ui.selected = state.ui.selected.saturating_sub(1),
        Intent::Down => state.ui.selected = (state.ui.selected + 1).min(last),
        Intent::Top => state.ui.selected = 0,
        Intent::Bottom => state.ui.selected = last,
        Intent::PageUp => state.ui.selected = state.ui.selected.saturating_sub(PAGE),
        Intent::PageDown => state.ui.selected = (state.ui.selected + PAGE).min(last),
        Intent::HalfPageUp => state.ui.selected = state.ui.selected.saturating_sub(PAGE / 2),
        Intent::HalfPageDown => state.ui.selected = (state.ui.selected + PAGE / 2).min(last),
        Intent::ToggleProblems => {
            state.ui.problems_only = !state.ui.problems_only;
            state.ui.selected = 0;
            state.ui.message = Some(
                if state.ui.problems_only { "problems only" } else { "all groups" }.to_owned(),
            );
        }
        Intent::ClearFilter if !state.ui.filter.is_empty() => {
            state.ui.filter.clear();
            state.ui.filter_error = None;
            state.ui.selected = 0;
        }
        Intent::Open => {
            if let Some(group) = state.visible_groups().get(state.ui.selected) {
                let key = key_of(&group.metadata);
                state.ui.screens.push(Screen::Group { key, tab: DetailTab::Overview });
                state.ui.mode = Mode::Detail;
                state.ui.scroll = 0;
                state.ui.hscroll = 0;
            }
        }
        Intent::StartFilter => {
            state.ui.previous_mode = Mode::Fleet;
            state.ui.mode = Mode::Filter;
        }
        Intent::CycleSort => {
            let position = SortColumn::ALL.iter().position(|c| *c == state.ui.sort).unwrap_or(0);
            state.ui.sort = SortColumn::ALL[(position + 1) % SortColumn::ALL.len()];
            state.ui.message = Some(format!("sorted by {}", state.ui.sort.title()));
        }
        Intent::ReverseSort => state.ui.descending = !state.ui.descending,
        _ => {}
    }
}

/// Keys of the group detail; a runbook step's action comes back as a proposal.
fn detail_input(state: &mut State, intent: Intent) -> Option<super::state::Proposal> {
    if common(state, &intent) {
        return None;
    }
    match runbook::runbook_input(state, &intent) {
        runbook::Handled::No => {}
        runbook::Handled::Yes => return None,
        runbook::Handled::Propose(proposal) => return Some(*proposal),
    }
    if workbench::input(state, &intent) {
        return None;
    }
    if intent == Intent::Back {
        if state.ui.screens.len() > 1 {
            state.ui.screens.pop();
        }
        state.ui.mode = Mode::Fleet;
        return None;
    }
    match intent {
        Intent::Down => {
            state.ui.scroll = state.ui.scroll.saturating_add(1);
            return None;
        }
        Intent::Up => {
            state.ui.scroll = state.ui.scroll.saturating_sub(1);
            return None;
        }
        Intent::Top => {
            state.ui.scroll = 0;
            state.ui.hscroll = 0;
            return None;
        }
        Intent::ScrollRight => {
            state.ui.hscroll = state.ui.hscroll.saturating_add(HSCROLL_STEP);
            return None;
        }
        Intent::ScrollLeft => {
            state.ui.hscroll = state.ui.hscroll.saturating_sub(HSCROLL_STEP);
            return None;
        }
        Intent::PageDown | Intent::HalfPageDown => {
            let step = if intent == Intent::PageDown { PAGE } else { PAGE / 2 };
            state.ui.scroll = state.ui.scroll.saturating_add(u16::try_from(step).unwrap_or(1));
            return None;
        }
        Intent::PageUp | Intent::HalfPageUp => {
            let step = if intent == Intent::PageUp { PAGE } else { PAGE / 2 };
            state.ui.scroll = state.ui.scroll.saturating_sub(u16::try_from(step).unwrap_or(1));
            return None;
        }
        _ => {}
    }
    let Some(Screen::Group { tab, .. }) = state.ui.screens.last_mut() else { return None };
    let count = DetailTab::ALL.len();
    let index = match intent {
        Intent::NextTab => (tab.index() + 1) % count,
        Intent::PreviousTab => (tab.index() + count - 1) % count,
        Intent::Tab(index) if index < count => index,
        _ => return None,
    };
    *tab = DetailTab::ALL[index];
    state.ui.scroll = 0;
    state.ui.hscroll = 0;
    None
}

fn line_input(state: &mut State, intent: Intent, filter: bool) {
    let line = if filter { &mut state.ui.filter } else { &mut state.ui.command };
    match intent {
        Intent::Type(c) => line.push(c),
        Intent::Erase => {
            line.pop();
        }
        Intent::Submit => state.ui.mode = state.ui.previous_mode,
        Intent::Cancel => {
            line.clear();
            state.ui.mode = state.ui.previous_mode;
        }
        _ => {}
    }
    if filter {
        state.ui.filter_error = if state.ui.filter.is_empty() {
            None
        } else {
            regex::Regex::new(&state.ui.filter).err().map(|error| {
                error.to_string().lines().last().unwrap_or("invalid regex").trim().to_owned()
            })
        };
        state.ui.selected = 0;
    }
}

fn command_input(state: &mut State, intent: Intent) -> Vec<Effect> {
    if intent != Intent::Submit {
        line_input(state, intent, false);
        return vec![Effect::Render];
    }
    let command = std::mem::take(&mut state.ui.command);
    state.ui.mode = state.ui.previous_mode;
    let mut effects = vec![Effect::Render];
    let words: Vec<&str> = command.split_whitespace().collect();
    match words.as_slice() {
        ["ns" | "namespace", "all" | "-A"] | ["all"] => effects.extend(rescope(state, Scope::All)),
        ["ns" | "namespace", namespace] => {
            effects.extend(rescope(state, Scope::Namespace((*namespace).to_owned())))
        }
        ["view" | "v", view] => match *view {
            "fleet" | "groups" => {
                state.ui.screens.truncate(1);
                state.ui.mode = Mode::Fleet;
            }
            other => match DetailTab::ALL.iter().find(|tab| tab_name(**tab) == other) {
                Some(found) => match state.ui.screens.last_mut() {
                    Some(Screen::Group { tab, .. }) => *tab = *found,
                    // From the fleet, the view opens on the selected group.
                    _ => match state.visible_groups().get(state.ui.selected) {
                        Some(group) => {
                            let key = key_of(&group.metadata);
                            state.ui.screens.push(Screen::Group { key, tab: *found });
                            state.ui.mode = Mode::Detail;
                            state.ui.scroll = 0;
                            state.ui.hscroll = 0;
                        }
                        None => state.ui.message = Some("no group is selected to view".to_owned()),
                    },
                },
                None => {
                    state.ui.message = Some(format!("unknown view {other:?}; {}", view_names()))
                }
            },
        },
        ["ctx" | "context", context] => {
            state.ui.message = Some(format!("switching to context {context}…"));
            // Another cluster is never written by the switch this one was given.
            if state.guided.write.on {
                state.guided.write.on = false;
                effects.push(Effect::SetWrite(false));
            }
            effects.push(Effect::SwitchContext((*context).to_owned()));
        }
        ["pitr", rest @ ..] => workbench::command(state, rest),
        ["q" | "quit"] => return vec![Effect::Quit],
        [] => {}
        _ => {
            state.ui.message = Some(format!(
                "unknown command {command:?}; try: ns <name>, ns all, ctx <name>, view <{}>, pitr",
                view_names()
            ))
        }
    }
    effects
}

/// The name `:view` takes for a tab.
pub fn tab_name(tab: DetailTab) -> &'static str {
    match tab {
        DetailTab::Overview => "overview",
        DetailTab::PlannedFailover => "planned",
        DetailTab::Hold => "hold",
        DetailTab::Reclones => "reclones",
        DetailTab::Restore => "restore",
        DetailTab::Archive => "archive",
        DetailTab::Backups => "backups",
        DetailTab::Runbooks => "runbooks",
    }
}

fn view_names() -> String {
    let mut names = vec!["fleet"];
    names.extend(DetailTab::ALL.iter().map(|tab| tab_name(*tab)));
    names.join("|")
}

fn rescope(state: &mut State, scope: Scope) -> Option<Effect> {
    if state.scope == scope {
        return None;
    }
    state.scope = scope.clone();
    reset_data(state);
    state.ui.message = Some(format!("watching {scope}"));
    Some(Effect::Watch(scope))
}

/// Drops the data of the old scope or cluster, moves to a new epoch (events of the old
/// sources are dropped from now on) and goes back to the fleet.
fn reset_data(state: &mut State) {
    state.epoch += 1;
    if let Some(queue) = &mut state.frozen {
        queue.clear();
    }
    state.data = super::state::Data::default();
    for source in SourceKind::ALL {
        state.data.sources.insert(source, super::state::SourceState::default());
    }
    state.ui.screens.truncate(1);
    state.ui.mode = Mode::Fleet;
    state.ui.selected = 0;
    state.guided.overlay = None;
}

pub mod guided;
mod runbook;
pub mod workbench;

#[cfg(test)]
mod tests;
