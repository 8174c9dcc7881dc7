//! The guarded confirm of one operation, as plain data with a pure key handler: the TUI's
//! dialog (`tui/view/dialog.rs` draws it) and the runbook player open it with
//! [`ConfirmDialog::new`] for a [`Prepared`] operation.
//!
//! Cancel is the default focus. Confirm is reachable only when every guard holds: write mode
//! is on, the preflight does not refuse, a request could be built, RBAC does not say no, and
//! (for every tier above [`Risk::Low`]) the user typed the confirmation name.

use super::send::{Access, Prepared};
use super::{Risk, confirmation_name, risk};

/// Where a proposal came from (shown in the dialog's title; the runbook player passes its
/// runbook and step).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A screen of the console (the group view, the hold centre, the reclone panel).
    Screen(String),
    /// A runbook step: runbook id and step id.
    Runbook { runbook: String, step: String },
    /// The command line.
    Cli,
}

impl Origin {
    /// The origin as the audit journal records it: `{"screen": …}`, `{"runbook": …, "step":
    /// …}` or `"cli"`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Origin::Screen(screen) => serde_json::json!({ "screen": screen }),
            Origin::Runbook { runbook, step } => {
                serde_json::json!({ "runbook": runbook, "step": step })
            }
            Origin::Cli => serde_json::json!("cli"),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Origin::Screen(screen) => format!("from {screen}"),
            Origin::Runbook { runbook, step } => format!("from runbook {runbook}, step {step}"),
            Origin::Cli => "from the command line".to_owned(),
        }
    }
}

/// Which button has the focus.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Focus {
    #[default]
    Cancel,
    Confirm,
}

/// Where the dialog is in its life.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Stage {
    /// Waiting for the user.
    #[default]
    Asking,
    /// Sent; waiting for the answer.
    Sending,
    /// The answer: sent, or why not.
    Done(Result<String, String>),
    /// The object changed since it was read: the dialog shows the fresh preflight and asks
    /// again (the typed name is cleared).
    Changed(String),
}

/// A key the dialog understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialogKey {
    Char(char),
    Backspace,
    /// Tab, left or right: move the focus.
    Switch,
    Enter,
    Esc,
}

/// What a key did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing leaves the dialog.
    Stay,
    /// Close the dialog; nothing is sent.
    Cancel,
    /// Send the prepared operation (every guard held).
    Confirm,
}

/// The state of one confirm dialog.
#[derive(Clone, Debug)]
pub struct ConfirmDialog {
    pub prepared: Prepared,
    pub origin: Origin,
    /// Identity and RBAC, once the reviews answered.
    pub access: Option<Access>,
    /// Whether the session's write switch is on.
    pub write_mode: bool,
    pub typed: String,
    pub focus: Focus,
    pub stage: Stage,
    /// Where the confirm saves the corrected manifest for review (a restore into a new
    /// group: [`super::review::path`]); `None` for any other operation or without a journal.
    pub review_file: Option<std::path::PathBuf>,
}

impl ConfirmDialog {
    pub fn new(prepared: Prepared, origin: Origin, write_mode: bool) -> ConfirmDialog {
        ConfirmDialog {
            prepared,
            origin,
            access: None,
            write_mode,
            typed: String::new(),
            focus: Focus::Cancel,
            stage: Stage::Asking,
            review_file: None,
        }
    }

    /// Whether the user must type the confirmation name.
    pub fn needs_typing(&self) -> bool {
        risk(&self.prepared.op) != Risk::Low
    }

    /// Why Confirm is not available yet, or `None` when it is.
    pub fn blocked(&self) -> Option<String> {
        if !self.write_mode {
            return Some("the console is read-only: press W to switch write mode on".to_owned());
        }
        if let Err(error) = &self.prepared.patch {
            return Some(format!("no request: {error}"));
        }
        if !self.prepared.preflight.confirmable() {
            return Some("the preflight refuses it (see the checklist)".to_owned());
        }
        match &self.access {
            None => {
                return Some("asking the API server who you are and what you may do".to_owned());
            }
            Some(access) if access.allowed == Some(false) => {
                return Some(format!("RBAC: {}", access.describe()));
            }
            Some(_) => {}
        }
        let name = confirmation_name(&self.prepared.op);
        if self.needs_typing() && self.typed != name {
            return Some(format!("type {name:?} to confirm"));
        }
        None
    }

    /// Handles one key.
    pub fn key(&mut self, key: DialogKey) -> Outcome {
        if matches!(self.stage, Stage::Sending) {
            return Outcome::Stay;
        }
        if let Stage::Done(_) = self.stage {
            return Outcome::Cancel;
        }
        match key {
            DialogKey::Esc => Outcome::Cancel,
            DialogKey::Char(c) if !c.is_control() => {
                self.typed.push(c);
                Outcome::Stay
            }
            DialogKey::Char(_) => Outcome::Stay,
            DialogKey::Backspace => {
                self.typed.pop();
                Outcome::Stay
            }
            DialogKey::Switch => {
                self.focus = match self.focus {
                    Focus::Cancel if self.blocked().is_none() => Focus::Confirm,
                    _ => Focus::Cancel,
                };
                Outcome::Stay
            }
            DialogKey::Enter => match self.focus {
                Focus::Confirm if self.blocked().is_none() => {
                    self.stage = Stage::Sending;
                    Outcome::Confirm
                }
                Focus::Confirm => {
                    self.focus = Focus::Cancel;
                    Outcome::Stay
                }
                Focus::Cancel => Outcome::Cancel,
            },
        }
    }

    /// The object changed since it was read: show the fresh decision and ask again.
    pub fn changed(&mut self, fresh: Prepared, why: String) {
        self.prepared = fresh;
        self.typed.clear();
        self.focus = Focus::Cancel;
        self.stage = Stage::Changed(why);
    }
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::fixtures::GroupFixture;

    use super::*;
    use crate::ops::send::decide;
    use crate::ops::{GroupRef, Observed, WriteOp};

    fn dialog(write_mode: bool) -> ConfirmDialog {
        let op = WriteOp::RequestPlannedFailover {
            group: GroupRef::new("orders", "orders"),
            target: "pdx".to_owned(),
            max_lag_wait: None,
        };
        let prepared = decide(
            op,
            Observed::group(GroupFixture::three_sites().build()),
            "2026-04-20T14:40:00Z".parse().unwrap(),
        );
        ConfirmDialog::new(prepared, Origin::Screen("group orders".to_owned()), write_mode)
    }

    fn allowed() -> Option<Access> {
        Some(Access { user: Some("alice".to_owned()), allowed: Some(true), reason: None })
    }

    #[test]
    fn cancel_is_the_default_and_enter_on_it_sends_nothing() {
        let mut dialog = dialog(true);
        dialog.access = allowed();
        for c in "pdx".chars() {
            assert_eq!(dialog.key(DialogKey::Char(c)), Outcome::Stay);
        }
        assert_eq!(dialog.focus, Focus::Cancel);
        assert_eq!(dialog.key(DialogKey::Enter), Outcome::Cancel);
    }

    #[test]
    fn confirm_needs_the_typed_site_rbac_and_write_mode() {
        let mut dialog = dialog(true);
        dialog.access = allowed();
        dialog.key(DialogKey::Switch);
        assert_eq!(dialog.focus, Focus::Cancel, "not typed yet");
        for c in "pd".chars() {
            dialog.key(DialogKey::Char(c));
        }
        assert_eq!(dialog.blocked().as_deref(), Some("type \"pdx\" to confirm"));
        dialog.key(DialogKey::Char('x'));
        assert_eq!(dialog.blocked(), None);
        dialog.key(DialogKey::Switch);
        assert_eq!(dialog.focus, Focus::Confirm);
        assert_eq!(dialog.key(DialogKey::Enter), Outcome::Confirm);
        assert_eq!(dialog.stage, Stage::Sending);

        let mut denied = self::dialog(true);
        denied.access =
            Some(Access { user: Some("bob".to_owned()), allowed: Some(false), reason: None });
        for c in "pdx".chars() {
            denied.key(DialogKey::Char(c));
        }
        assert_eq!(denied.blocked().as_deref(), Some("RBAC: not allowed"));
        denied.key(DialogKey::Switch);
        assert_eq!(denied.key(DialogKey::Enter), Outcome::Cancel);

        let mut read_only = self::dialog(false);
        read_only.access = allowed();
        for c in "pdx".chars() {
            read_only.key(DialogKey::Char(c));
        }
        assert!(read_only.blocked().unwrap().contains("read-only"));
    }
}
