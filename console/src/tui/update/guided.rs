//! Guided operations in the TUI: the write switch (`W`), the picker of the operations that
//! fit the screen (`a`), and the confirm dialog drawn over the screen.
//!
//! A proposal (from a screen or a runbook step, [`Action::Propose`](super::super::action::Action::Propose))
//! opens a [`ConfirmDialog`] decided on the watched state at once, and asks the runtime for a
//! fresh read, preflight and (in write mode) identity and RBAC ([`Effect::Review`]). Every key
//! goes to the dialog. [`Effect::Send`] is emitted in exactly one place: the dialog's Confirm
//! outcome, in write mode. A conflict re-reads, re-runs the preflight and asks again (the
//! typed name is cleared); nothing is ever re-sent without a new confirmation.

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::SiteRole;

use super::super::action::{Effect, Intent, SendOutcome};
use super::super::state::{
    DetailTab, GuidedDialog, Key, Mode, Overlay, Picker, Proposal, Screen, State, key_of,
};
use crate::ops::confirm::{ConfirmDialog, DialogKey, Focus, Origin, Outcome, Stage};
use crate::ops::send::{Access, Prepared, decide};
use crate::ops::{GroupRef, Observed, WriteOp};

/// How many recent backups the backups panel offers to verify.
const VERIFY_CHOICES: usize = 3;

fn open(state: &mut State, overlay: Overlay) {
    if state.ui.mode != Mode::Dialog {
        state.ui.previous_mode = state.ui.mode;
    }
    state.ui.mode = Mode::Dialog;
    state.guided.overlay = Some(overlay);
}

fn close(state: &mut State) {
    state.guided.overlay = None;
    if state.ui.mode == Mode::Dialog {
        state.ui.mode = match state.screen() {
            Screen::Fleet => Mode::Fleet,
            Screen::Group { .. } => Mode::Detail,
        };
    }
}

/// `W`: off at once; on only after its own confirmation, never for a pinned context or a
/// session without a write-capable client.
pub(super) fn toggle_write(state: &mut State) -> Vec<Effect> {
    if state.guided.write.on {
        state.guided.write.on = false;
        state.ui.message = Some("write mode off: the console is read-only again".to_owned());
        return vec![Effect::Render, Effect::SetWrite(false)];
    }
    if !state.guided.write.capable {
        state.ui.message =
            Some("this session cannot write: it was started with a read-only client".to_owned());
        return vec![Effect::Render];
    }
    if let Some(pattern) = state.guided.write.pinned_by(&state.context) {
        state.ui.message = Some(format!(
            "context {} is pinned read-only by {pattern:?} in the console config \
             (readOnlyContexts): write mode stays off",
            state.context
        ));
        return vec![Effect::Render];
    }
    open(state, Overlay::WriteSwitch);
    vec![Effect::Render]
}

/// `a`: the guided operations that fit the screen.
pub(super) fn open_picker(state: &mut State) {
    let (title, choices) = proposals(state);
    if choices.is_empty() {
        state.ui.message = Some(format!("no guided operation fits {title}"));
        return;
    }
    open(state, Overlay::Picker(Picker { title, choices, selected: 0 }));
}

/// The sites a planned failover may target: PrimaryCandidate sites other than the active one.
fn promote_targets(group: &MysqlFailoverGroup) -> Vec<String> {
    let active = group.status.as_ref().and_then(|status| status.active_site.clone());
    group
        .spec
        .sites
        .iter()
        .filter(|site| site.effective_role() == SiteRole::PrimaryCandidate)
        .filter(|site| active.as_deref() != Some(site.name.as_str()))
        .map(|site| site.name.clone())
        .collect()
}

fn group_ref(key: &Key) -> GroupRef {
    GroupRef::new(key.0.clone(), key.1.clone())
}

fn promotions(key: &Key, group: &MysqlFailoverGroup, origin: &Origin) -> Vec<Proposal> {
    promote_targets(group)
        .into_iter()
        .map(|target| Proposal {
            op: WriteOp::RequestPlannedFailover {
                group: group_ref(key),
                target,
                max_lag_wait: None,
            },
            origin: origin.clone(),
        })
        .collect()
}

fn acknowledgement(key: &Key, group: &MysqlFailoverGroup, origin: &Origin) -> Option<Proposal> {
    let run_id = group.status.as_ref()?.planned_failover_hold.as_ref()?.run_id.clone()?;
    Some(Proposal {
        op: WriteOp::AcknowledgeHold { group: group_ref(key), run_id },
        origin: origin.clone(),
    })
}

fn profiles(group: &MysqlFailoverGroup) -> Vec<String> {
    group
        .spec
        .backup
        .as_ref()
        .map(|backup| backup.profiles.iter().map(|profile| profile.name.clone()).collect())
        .unwrap_or_default()
}

/// The Held queue's three choices: drain (keep the primary's data), release, and back up a
/// held site (the first step of restoring its data into the primary).
fn queue_choices(
    state: &State,
    key: &Key,
    group: &MysqlFailoverGroup,
    origin: &Origin,
) -> Vec<Proposal> {
    let Some(queue) = group.status.as_ref().and_then(|status| status.restore_reclones.as_ref())
    else {
        return Vec::new();
    };
    let mut choices = vec![
        Proposal {
            op: WriteOp::RecloneQueueDrain { group: group_ref(key) },
            origin: origin.clone(),
        },
        Proposal {
            op: WriteOp::RecloneQueueRelease { group: group_ref(key) },
            origin: origin.clone(),
        },
    ];
    if let Some(profile) = profiles(group).first() {
        for site in &queue.pending {
            choices.push(Proposal {
                op: WriteOp::BackupFromSite {
                    group: group_ref(key),
                    name: WriteOp::backup_name(&key.1, profile, state.now),
                    profile: profile.clone(),
                    site: site.clone(),
                },
                origin: origin.clone(),
            });
        }
    }
    choices
}

/// On-demand backups (one per profile) and verifications of the group's newest backups.
fn backup_choices(
    state: &State,
    key: &Key,
    group: &MysqlFailoverGroup,
    origin: &Origin,
) -> Vec<Proposal> {
    let mut choices: Vec<Proposal> = profiles(group)
        .into_iter()
        .map(|profile| Proposal {
            op: WriteOp::CreateBackup {
                group: group_ref(key),
                name: WriteOp::backup_name(&key.1, &profile, state.now),
                profile,
            },
            origin: origin.clone(),
        })
        .collect();
    let mut backups: Vec<_> = state
        .data
        .backups
        .iter()
        .filter(|((namespace, _), backup)| {
            *namespace == key.0 && backup.spec.failover_group_ref.name == key.1
        })
        .map(|((_, name), backup)| {
            (backup.metadata.creation_timestamp.as_ref().map(|time| time.0), name, backup)
        })
        .collect();
    backups.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    for (_, name, backup) in backups.into_iter().take(VERIFY_CHOICES) {
        choices.push(Proposal {
            op: WriteOp::CreateVerification {
                group: group_ref(key),
                name: WriteOp::verification_name(name, state.now),
                profile: backup.spec.profile_name.clone(),
                backup: name.clone(),
            },
            origin: origin.clone(),
        });
    }
    choices
}

/// The guided operations that fit the current screen, and the screen's name.
pub fn proposals(state: &State) -> (String, Vec<Proposal>) {
    match state.screen().clone() {
        Screen::Fleet => {
            let Some(group) = state.visible_groups().get(state.ui.selected).copied() else {
                return ("the fleet view (no group selected)".to_owned(), Vec::new());
            };
            let key = key_of(&group.metadata);
            let origin = Origin::Screen("the fleet view".to_owned());
            let mut choices = promotions(&key, group, &origin);
            choices.extend(acknowledgement(&key, group, &origin));
            (format!("{}/{} (fleet view)", key.0, key.1), choices)
        }
        Screen::Group { key, tab } => {
            let Some(group) = state.group(&key) else {
                return (format!("{}/{} (gone)", key.0, key.1), Vec::new());
            };
            let panel = match tab {
                DetailTab::Overview => "the overview",
                DetailTab::PlannedFailover => "the planned-failover panel",
                DetailTab::Hold => "the hold centre",
                DetailTab::Reclones => "the reclone panel",
                DetailTab::Backups => "the backups panel",
                DetailTab::Restore => "the restore panel",
                DetailTab::Archive => "the archive panel",
                DetailTab::Runbooks => {
                    "the runbook player (enter on a step with an action opens its dialog)"
                }
            };
            let origin = Origin::Screen(panel.to_owned());
            let choices = match tab {
                DetailTab::Overview | DetailTab::PlannedFailover => {
                    let mut choices = promotions(&key, group, &origin);
                    choices.extend(acknowledgement(&key, group, &origin));
                    choices
                }
                DetailTab::Hold => acknowledgement(&key, group, &origin).into_iter().collect(),
                DetailTab::Reclones => queue_choices(state, &key, group, &origin),
                DetailTab::Backups => backup_choices(state, &key, group, &origin),
                DetailTab::Restore | DetailTab::Archive => super::workbench::proposals(state, &key),
                DetailTab::Runbooks => Vec::new(),
            };
            (format!("{}/{} · {panel}", key.0, key.1), choices)
        }
    }
}

/// Opens the confirm dialog of a proposal, decided on the watched state, and asks for a fresh
/// read (and, in write mode, identity and RBAC).
pub(super) fn propose(state: &mut State, proposal: Proposal) -> Vec<Effect> {
    let Proposal { op, origin } = proposal;
    let group = op.group();
    let key = (group.namespace.clone(), group.name.clone());
    let backup = match &op {
        WriteOp::CreateVerification { backup, .. }
        | WriteOp::RestorePitrToNewGroup { backup, .. } => {
            state.data.backups.get(&(key.0.clone(), backup.clone())).cloned()
        }
        _ => None,
    };
    let observed = Observed {
        group: state.data.groups.get(&key).map(|group| (**group).clone()),
        backup,
        rotating_sites: Vec::new(),
    };
    let prepared = decide(op.clone(), observed, state.now);
    state.guided.serial += 1;
    let serial = state.guided.serial;
    let write = state.guided.write.on;
    let mut dialog = ConfirmDialog::new(prepared, origin, write);
    dialog.review_file = state
        .guided
        .write
        .journal_dir
        .as_deref()
        .and_then(|dir| crate::ops::review::path(dir, &op));
    open(state, Overlay::Dialog(Box::new(GuidedDialog { serial, dialog, sent_at: None })));
    vec![Effect::Render, Effect::Review { serial, op, access: write }]
}

/// Keys while an overlay is open.
pub(super) fn overlay_input(state: &mut State, intent: Intent) -> Vec<Effect> {
    let Some(overlay) = state.guided.overlay.as_mut() else {
        close(state);
        return vec![Effect::Render];
    };
    match overlay {
        Overlay::WriteSwitch => {
            close(state);
            if intent == Intent::Dialog(DialogKey::Char('y')) {
                state.guided.write.on = true;
                state.ui.message = Some(format!(
                    "WRITE mode on for context {}: each operation still asks for its own \
                     confirmation (W: back to read-only)",
                    state.context
                ));
                return vec![Effect::Render, Effect::SetWrite(true)];
            }
            state.ui.message = Some("write mode stays off".to_owned());
            vec![Effect::Render]
        }
        Overlay::Picker(picker) => {
            let last = picker.choices.len().saturating_sub(1);
            let chosen = match intent {
                Intent::Up | Intent::Dialog(DialogKey::Char('k')) => {
                    picker.selected = picker.selected.saturating_sub(1);
                    None
                }
                Intent::Down | Intent::Dialog(DialogKey::Char('j')) => {
                    picker.selected = (picker.selected + 1).min(last);
                    None
                }
                Intent::Dialog(DialogKey::Enter) => picker.choices.get(picker.selected).cloned(),
                Intent::Dialog(DialogKey::Char(digit @ '1'..='9')) => {
                    let index = usize::from(digit as u8 - b'1');
                    picker.choices.get(index).cloned()
                }
                Intent::Dialog(DialogKey::Esc) => {
                    close(state);
                    None
                }
                _ => None,
            };
            match chosen {
                Some(proposal) => {
                    close(state);
                    propose(state, proposal)
                }
                None => vec![Effect::Render],
            }
        }
        Overlay::Dialog(guided) => {
            let Intent::Dialog(key) = intent else { return vec![Effect::Render] };
            match guided.dialog.key(key) {
                Outcome::Stay => vec![Effect::Render],
                Outcome::Cancel => {
                    let message = match &guided.dialog.stage {
                        Stage::Done(Ok(_)) => format!(
                            "sent: {}; its progress shows in the group's panels",
                            guided.dialog.prepared.op.summary()
                        ),
                        Stage::Done(Err(_)) => "nothing was sent".to_owned(),
                        _ => format!("cancelled: {}", guided.dialog.prepared.op.summary()),
                    };
                    state.ui.message = Some(message);
                    close(state);
                    vec![Effect::Render]
                }
                Outcome::Confirm => {
                    // The dialog checks write mode too; the session's switch is the one truth.
                    if !state.guided.write.on {
                        guided.dialog.stage =
                            Stage::Done(Err("the console is read-only".to_owned()));
                        return vec![Effect::Render];
                    }
                    let send = Effect::Send {
                        serial: guided.serial,
                        prepared: Box::new(guided.dialog.prepared.clone()),
                        user: guided.dialog.access.as_ref().and_then(|access| access.user.clone()),
                        origin: guided.dialog.origin.clone(),
                    };
                    vec![Effect::Render, send]
                }
            }
        }
    }
}

/// The open dialog `serial`, if it is still open.
fn dialog_mut(state: &mut State, serial: u64) -> Option<&mut GuidedDialog> {
    match &mut state.guided.overlay {
        Some(Overlay::Dialog(guided)) if guided.serial == serial => Some(guided),
        _ => None,
    }
}

/// The fresh read and the reviews answered.
pub(super) fn reviewed(
    state: &mut State,
    serial: u64,
    result: Result<Box<(Prepared, Option<Access>)>, String>,
) -> Vec<Effect> {
    let Some(guided) = dialog_mut(state, serial) else { return Vec::new() };
    if !matches!(guided.dialog.stage, Stage::Asking | Stage::Changed(_)) {
        return Vec::new();
    }
    match result {
        Ok(answer) => {
            let (prepared, access) = *answer;
            guided.dialog.prepared = prepared;
            if access.is_some() {
                guided.dialog.access = access;
            }
            if guided.dialog.blocked().is_some() {
                guided.dialog.focus = Focus::Cancel;
            }
        }
        Err(error) => {
            guided.dialog.stage =
                Stage::Done(Err(format!("cannot read what the operation is decided on: {error}")));
        }
    }
    vec![Effect::Render]
}

/// What sending gave: the follow-through, a re-ask on a conflict, or the error.
pub(super) fn sent(state: &mut State, serial: u64, outcome: SendOutcome) -> Vec<Effect> {
    let now = state.now;
    let Some(guided) = dialog_mut(state, serial) else { return Vec::new() };
    match outcome {
        SendOutcome::Sent(sent) => {
            guided.dialog.stage = Stage::Done(Ok(format!(
                "operation {}, resourceVersion {}",
                sent.operation_id,
                sent.resource_version.as_deref().unwrap_or("?")
            )));
            guided.sent_at = Some(now);
            let group = guided.dialog.prepared.op.group();
            let key = (group.namespace.clone(), group.name.clone());
            if let Origin::Runbook { runbook, step } = guided.dialog.origin.clone() {
                super::runbook::acted(state, &key, &runbook, &step);
            }
            vec![Effect::Render]
        }
        SendOutcome::Conflict(why) => {
            let fresh = guided.dialog.prepared.clone();
            guided.dialog.changed(fresh, why);
            guided.dialog.access = None;
            vec![
                Effect::Render,
                Effect::Review { serial, op: guided.dialog.prepared.op.clone(), access: true },
            ]
        }
        SendOutcome::Failed(error) => {
            guided.dialog.stage = Stage::Done(Err(error));
            vec![Effect::Render]
        }
    }
}

#[cfg(test)]
mod tests;
