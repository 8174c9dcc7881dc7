//! The PITR workbench's update: `:pitr` opens it on a group's archive panel, every archive
//! read re-plans it, esc closes it, and the guided-operations picker (`a`) offers its
//! plannable requests as [`WriteOp::RestorePitrToNewGroup`]. Nothing here sends: a choice
//! opens the confirm dialog like every other guided operation.
//!
//! `:pitr` alone reopens the group's own `initFromBackup.pointInTime` request (a bootstrap
//! restore refused with a PITR token); `:pitr <time|gtid> [backup] [exclude=<set>]` asks for
//! another target.

use super::super::state::{DetailTab, Key, Proposal, Screen, State};
use crate::archive::workbench::{Target, Workbench, compute, stop_time};
use crate::archive::{ArchiveOutcome, backup_meta};
use crate::ops::confirm::Origin;
use crate::ops::{GroupRef, WriteOp};

/// How `:pitr` is written (the status line repeats it on a mistake).
pub const USAGE: &str = ":pitr [<time|gtid> [backup] [exclude=<gtid set>]] | :pitr off";

/// `:pitr …` on a group's screen: opens the workbench on the archive panel.
pub(super) fn command(state: &mut State, words: &[&str]) {
    let Screen::Group { key, .. } = state.screen().clone() else {
        state.ui.message =
            Some("open a group first: the workbench plans one group's restore".into());
        return;
    };
    if matches!(words, ["off" | "close"]) {
        state.ui.workbench = None;
        state.ui.message = Some("PITR workbench closed".to_owned());
        return;
    }
    let asked = match words {
        [] => match own_request(state, &key) {
            Some(asked) => asked,
            None => {
                state.ui.message = Some(format!(
                    "{}/{} has no initFromBackup.pointInTime to reopen; {USAGE}",
                    key.0, key.1
                ));
                return;
            }
        },
        [target, rest @ ..] => {
            let mut asked =
                Asked { target: (*target).to_owned(), backup: None, exclude: String::new() };
            for word in rest {
                match word.strip_prefix("exclude=") {
                    Some(set) => set.clone_into(&mut asked.exclude),
                    None if asked.backup.is_none() => asked.backup = Some((*word).to_owned()),
                    None => {
                        state.ui.message = Some(format!("unexpected {word:?}; {USAGE}"));
                        return;
                    }
                }
            }
            asked
        }
    };
    if let Err(error) = Target::parse(&asked.target) {
        state.ui.message = Some(format!("{error}; {USAGE}"));
        return;
    }
    if let Some(Screen::Group { tab, .. }) = state.ui.screens.last_mut() {
        *tab = DetailTab::Archive;
    }
    state.ui.scroll = 0;
    state.ui.hscroll = 0;
    state.ui.workbench = Some(Workbench {
        key,
        target: asked.target,
        backup: asked.backup,
        exclude_gtids: asked.exclude,
        read: None,
        outcome: Err("reading the archive (list and get only)…".to_owned()),
    });
    refresh(state);
}

struct Asked {
    target: String,
    backup: Option<String>,
    exclude: String,
}

/// The group's own bootstrap request: `initFromBackup.pointInTime` and its backup.
fn own_request(state: &State, key: &Key) -> Option<Asked> {
    let init = state.group(key)?.spec.init_from_backup.as_ref()?;
    let point_in_time = init.point_in_time.as_ref()?;
    Some(Asked {
        target: point_in_time.stop_time.clone(),
        backup: init.source.backup_ref.as_ref().map(|backup| backup.name.clone()),
        exclude: point_in_time.exclude_gtids.clone().unwrap_or_default(),
    })
}

/// Re-plans the open workbench when its archive was read since it was last computed.
pub(super) fn refresh(state: &mut State) {
    let Some(bench) = &state.ui.workbench else { return };
    let archive = state.data.archives.get(&bench.key);
    let updated = archive.and_then(|archive| archive.updated);
    if updated.is_none() || bench.read == updated {
        return;
    }
    let outcome = match archive.and_then(|archive| archive.outcome.as_ref()) {
        None => return,
        Some(ArchiveOutcome::Failed(error)) => {
            Err(format!("the archive could not be read: {error}"))
        }
        Some(ArchiveOutcome::Refused { token, message, .. }) => {
            Err(format!("the archive is refused, nothing plans: {token}: {message}"))
        }
        Some(ArchiveOutcome::Locked(error)) => {
            Err(format!("the archive cannot be opened, nothing plans: {error}"))
        }
        Some(ArchiveOutcome::Covered(summary)) => {
            let archive_id = summary.history.as_ref().map(|history| history.0.archive_id.clone());
            let backups: Vec<_> = state
                .data
                .backups
                .iter()
                .filter(|((namespace, _), backup)| {
                    *namespace == bench.key.0 && backup.spec.failover_group_ref.name == bench.key.1
                })
                .filter_map(|((_, name), backup)| {
                    let status = backup.status.as_ref()?;
                    let gtids = status.gtid_executed.as_deref()?.parse().ok()?;
                    let completed = status.completion_time.as_ref()?.0;
                    let meta = backup_meta(gtids, completed, archive_id.as_deref()?);
                    Some((name.clone(), meta))
                })
                .collect();
            Target::parse(&bench.target).and_then(|target| {
                compute(summary, &backups, bench.backup.as_deref(), &target, &bench.exclude_gtids)
            })
        }
    };
    if let Some(bench) = &mut state.ui.workbench {
        bench.read = updated;
        bench.outcome = outcome;
    }
}

/// Keys the workbench takes on its archive panel: esc closes it (instead of leaving the group).
pub(super) fn input(state: &mut State, intent: &super::super::action::Intent) -> bool {
    if *intent != super::super::action::Intent::Back || shown(state).is_none() {
        return false;
    }
    state.ui.workbench = None;
    state.ui.scroll = 0;
    state.ui.message = Some("PITR workbench closed (:pitr opens it again)".to_owned());
    true
}

/// The workbench, when the screen is its group's archive panel.
pub fn shown(state: &State) -> Option<&Workbench> {
    let Screen::Group { key, tab: DetailTab::Archive } = state.screen() else { return None };
    state.ui.workbench.as_ref().filter(|bench| bench.key == *key)
}

/// The archive profile the restore reads: the one the group archives to (the archive the
/// panel shows), else its own bootstrap's.
fn archive_profile(state: &State, key: &Key) -> Option<String> {
    group_archive_profile(state.group(key)?)
}

/// The archive profile a restore of `group` reads (the same rule for the workbench and
/// `pitr restore-new`): the one the group archives to, else its own bootstrap's.
pub(crate) fn group_archive_profile(group: &bloodraven_crd::MysqlFailoverGroup) -> Option<String> {
    let archived = group
        .spec
        .backup
        .as_ref()
        .and_then(|backup| backup.pitr.as_ref())
        .and_then(|pitr| pitr.profile_name.clone());
    archived.or_else(|| {
        group
            .spec
            .init_from_backup
            .as_ref()
            .and_then(|init| init.point_in_time.as_ref())
            .and_then(|point_in_time| point_in_time.archive_profile_name.clone())
    })
}

/// The workbench's plannable requests, each a restore into a new group: the request as asked
/// when it plans, then every remedy whose verdict plans.
pub fn proposals(state: &State, key: &Key) -> Vec<Proposal> {
    let Some(bench) = state.ui.workbench.as_ref().filter(|bench| bench.key == *key) else {
        return Vec::new();
    };
    let Ok(computed) = &bench.outcome else { return Vec::new() };
    let Some(profile) = archive_profile(state, key) else { return Vec::new() };
    let asked = std::iter::once((
        "the request as asked".to_owned(),
        computed.bench.backup.clone(),
        Some(&computed.bench.request),
        computed.bench.verdict.is_ok(),
    ));
    let remedies = computed.bench.choices.iter().map(|choice| {
        (
            choice.label.clone(),
            choice.backup.clone(),
            choice.request.as_ref(),
            choice.verdict.is_ok(),
        )
    });
    asked
        .chain(remedies)
        .filter_map(|(label, backup, request, plans)| {
            let request = request.filter(|_| plans)?;
            let stop = request.target.clone()?;
            let stop = stop.parse().map(stop_time).unwrap_or(stop);
            Some(Proposal {
                op: WriteOp::RestorePitrToNewGroup {
                    group: GroupRef::new(key.0.clone(), key.1.clone()),
                    name: WriteOp::pitr_group_name(&key.1, &stop, state.now),
                    backup,
                    archive_profile: profile.clone(),
                    stop_time: stop,
                    exclude_gtids: request.exclude_gtids.clone(),
                    allow_partial: request.allow_partial,
                },
                origin: Origin::Screen(format!("the PITR workbench: {label}")),
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "workbench_tests.rs"]
mod tests;
