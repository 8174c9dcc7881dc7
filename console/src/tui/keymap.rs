//! Every key, declared once per mode. The help popup and the hint bar read the same tables.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::action::Intent;
use super::state::Mode;
use crate::ops::confirm::DialogKey;

/// One key binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
    /// How help shows the key.
    pub key: &'static str,
    pub intent: Intent,
    pub help: &'static str,
    /// Whether the hint bar shows it.
    pub hint: bool,
}

const fn bind(
    code: KeyCode,
    key: &'static str,
    intent: Intent,
    help: &'static str,
    hint: bool,
) -> Binding {
    Binding { code, modifiers: KeyModifiers::NONE, key, intent, help, hint }
}

const fn ctrl(code: KeyCode, key: &'static str, intent: Intent, help: &'static str) -> Binding {
    Binding { code, modifiers: KeyModifiers::CONTROL, key, intent, help, hint: false }
}

const FLEET: &[Binding] = &[
    bind(KeyCode::Enter, "enter", Intent::Open, "open the group", true),
    bind(KeyCode::Up, "↑", Intent::Up, "previous group", false),
    bind(KeyCode::Char('k'), "k", Intent::Up, "previous group", false),
    bind(KeyCode::Down, "↓", Intent::Down, "next group", false),
    bind(KeyCode::Char('j'), "j", Intent::Down, "next group", false),
    bind(KeyCode::Char('g'), "g", Intent::Top, "first group", false),
    bind(KeyCode::Char('G'), "G", Intent::Bottom, "last group", false),
    bind(KeyCode::Home, "home", Intent::Top, "first group", false),
    bind(KeyCode::End, "end", Intent::Bottom, "last group", false),
    bind(KeyCode::PageUp, "pgup", Intent::PageUp, "a page up", false),
    bind(KeyCode::PageDown, "pgdn", Intent::PageDown, "a page down", false),
    ctrl(KeyCode::Char('u'), "ctrl-u", Intent::HalfPageUp, "half a page up"),
    ctrl(KeyCode::Char('d'), "ctrl-d", Intent::HalfPageDown, "half a page down"),
    bind(KeyCode::Char('p'), "p", Intent::ToggleProblems, "problems only / all", true),
    bind(KeyCode::Char('/'), "/", Intent::StartFilter, "filter (regex)", true),
    bind(KeyCode::Esc, "esc", Intent::ClearFilter, "clear the filter", false),
    bind(KeyCode::Char('s'), "s", Intent::CycleSort, "sort by the next column", true),
    bind(KeyCode::Char('S'), "S", Intent::ReverseSort, "reverse the sort", false),
    bind(KeyCode::Char(':'), ":", Intent::StartCommand, "command (ns, view)", true),
    bind(KeyCode::Char('a'), "a", Intent::Guided, "act: guided operations for the group", true),
    bind(KeyCode::Char('W'), "W", Intent::ToggleWrite, "write mode on (confirmed) / off", false),
    bind(KeyCode::Char(' '), "space", Intent::ToggleFreeze, "freeze / unfreeze the display", true),
    bind(KeyCode::Char('?'), "?", Intent::ToggleHelp, "help", true),
    bind(KeyCode::Char('q'), "q", Intent::Quit, "quit", true),
    ctrl(KeyCode::Char('c'), "ctrl-c", Intent::Quit, "quit"),
];

const DETAIL: &[Binding] = &[
    bind(KeyCode::Tab, "tab", Intent::NextTab, "next panel", true),
    bind(KeyCode::Right, "→", Intent::NextTab, "next panel", false),
    bind(KeyCode::Char('l'), "l", Intent::NextTab, "next panel", false),
    bind(KeyCode::BackTab, "shift-tab", Intent::PreviousTab, "previous panel", false),
    bind(KeyCode::Left, "←", Intent::PreviousTab, "previous panel", false),
    bind(KeyCode::Char('h'), "h", Intent::PreviousTab, "previous panel", false),
    bind(KeyCode::Char('>'), ">", Intent::ScrollRight, "scroll the command right", false),
    bind(KeyCode::Char('<'), "<", Intent::ScrollLeft, "scroll the command left", false),
    bind(KeyCode::Char('1'), "1", Intent::Tab(0), "overview: sites, conditions, events", true),
    bind(KeyCode::Char('2'), "2", Intent::Tab(1), "planned failover", false),
    bind(KeyCode::Char('3'), "3", Intent::Tab(2), "automation hold", false),
    bind(KeyCode::Char('4'), "4", Intent::Tab(3), "reclone queue", false),
    bind(KeyCode::Char('5'), "5", Intent::Tab(4), "restore and restore-in-place", false),
    bind(KeyCode::Char('6'), "6", Intent::Tab(5), "PITR archive", false),
    bind(KeyCode::Char('7'), "7", Intent::Tab(6), "backups and verifications", false),
    bind(
        KeyCode::Char('8'),
        "8",
        Intent::Tab(7),
        "runbooks: the ones that apply, and walks",
        false,
    ),
    bind(
        KeyCode::Enter,
        "enter",
        Intent::Open,
        "runbooks: walk the selected / go on / open the step's action",
        false,
    ),
    bind(KeyCode::Char('a'), "a", Intent::Guided, "act: guided operations for this panel", true),
    bind(KeyCode::Char('W'), "W", Intent::ToggleWrite, "write mode on (confirmed) / off", false),
    bind(KeyCode::Down, "↓", Intent::Down, "scroll down", false),
    bind(KeyCode::Char('j'), "j", Intent::Down, "scroll down", false),
    bind(KeyCode::Up, "↑", Intent::Up, "scroll up", false),
    bind(KeyCode::Char('k'), "k", Intent::Up, "scroll up", false),
    bind(KeyCode::Char('g'), "g", Intent::Top, "scroll to the top", false),
    bind(KeyCode::Home, "home", Intent::Top, "scroll to the top", false),
    bind(KeyCode::PageUp, "pgup", Intent::PageUp, "scroll a page up", false),
    bind(KeyCode::PageDown, "pgdn", Intent::PageDown, "scroll a page down", false),
    ctrl(KeyCode::Char('u'), "ctrl-u", Intent::HalfPageUp, "scroll half a page up"),
    ctrl(KeyCode::Char('d'), "ctrl-d", Intent::HalfPageDown, "scroll half a page down"),
    bind(KeyCode::Esc, "esc", Intent::Back, "back to the fleet", true),
    bind(KeyCode::Char(':'), ":", Intent::StartCommand, "command (ns, view)", false),
    bind(KeyCode::Backspace, "backspace", Intent::Back, "back to the fleet", false),
    bind(KeyCode::Char(' '), "space", Intent::ToggleFreeze, "freeze / unfreeze the display", true),
    bind(KeyCode::Char('?'), "?", Intent::ToggleHelp, "help", true),
    bind(KeyCode::Char('q'), "q", Intent::Quit, "quit", true),
    ctrl(KeyCode::Char('c'), "ctrl-c", Intent::Quit, "quit"),
];

const LINE: &[Binding] = &[
    bind(KeyCode::Enter, "enter", Intent::Submit, "apply", true),
    bind(KeyCode::Esc, "esc", Intent::Cancel, "cancel", true),
    bind(KeyCode::Backspace, "backspace", Intent::Erase, "erase a character", false),
    ctrl(KeyCode::Char('c'), "ctrl-c", Intent::Quit, "quit"),
];

const DIALOG: &[Binding] = &[
    bind(KeyCode::Esc, "esc", Intent::Dialog(DialogKey::Esc), "cancel / close", true),
    bind(KeyCode::Enter, "enter", Intent::Dialog(DialogKey::Enter), "choose", true),
    bind(KeyCode::Tab, "tab", Intent::Dialog(DialogKey::Switch), "Cancel / Confirm", true),
    bind(
        KeyCode::BackTab,
        "shift-tab",
        Intent::Dialog(DialogKey::Switch),
        "Cancel / Confirm",
        false,
    ),
    bind(KeyCode::Left, "←", Intent::Dialog(DialogKey::Switch), "Cancel / Confirm", false),
    bind(KeyCode::Right, "→", Intent::Dialog(DialogKey::Switch), "Cancel / Confirm", false),
    bind(KeyCode::Backspace, "backspace", Intent::Dialog(DialogKey::Backspace), "erase", false),
    bind(KeyCode::Up, "↑", Intent::Up, "previous choice", false),
    bind(KeyCode::Down, "↓", Intent::Down, "next choice", false),
    ctrl(KeyCode::Char('c'), "ctrl-c", Intent::Quit, "quit"),
];

const HELP: &[Binding] = &[
    bind(KeyCode::Esc, "esc", Intent::ToggleHelp, "close help", true),
    bind(KeyCode::Char('?'), "?", Intent::ToggleHelp, "close help", false),
    bind(KeyCode::Char('q'), "q", Intent::ToggleHelp, "close help", false),
    ctrl(KeyCode::Char('c'), "ctrl-c", Intent::Quit, "quit"),
];

/// The bindings of a mode.
pub fn bindings(mode: Mode) -> &'static [Binding] {
    match mode {
        Mode::Fleet => FLEET,
        Mode::Detail => DETAIL,
        Mode::Filter | Mode::Command => LINE,
        Mode::Help => HELP,
        Mode::Dialog => DIALOG,
    }
}

/// The intent of a key in a mode. Key releases and repeats are dropped; in the filter and
/// command lines any other printable character is typed.
pub fn intent(mode: Mode, key: KeyEvent) -> Option<Intent> {
    if key.kind != KeyEventKind::Press {
        return None;
    }
    let modifiers = key.modifiers - KeyModifiers::SHIFT;
    let found = bindings(mode)
        .iter()
        .find(|binding| binding.code == key.code && binding.modifiers == modifiers)
        .map(|binding| binding.intent.clone());
    if found.is_some() {
        return found;
    }
    match (mode, key.code) {
        (Mode::Filter | Mode::Command, KeyCode::Char(c)) if modifiers.is_empty() => {
            Some(Intent::Type(c))
        }
        (Mode::Dialog, KeyCode::Char(c)) if modifiers.is_empty() => {
            Some(Intent::Dialog(DialogKey::Char(c)))
        }
        _ => None,
    }
}

/// The hint bar's text for a mode.
pub fn hints(mode: Mode) -> String {
    // `? help` first, so the narrowest terminal still shows it.
    let help = bindings(mode).iter().filter(|binding| binding.hint && binding.key == "?");
    help.chain(bindings(mode).iter().filter(|binding| binding.hint && binding.key != "?"))
        .map(|binding| format!("{} {}", binding.key, binding.help))
        .collect::<Vec<_>>()
        .join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn keys_map_per_mode() {
        assert_eq!(intent(Mode::Fleet, press(KeyCode::Char('q'))), Some(Intent::Quit));
        assert_eq!(intent(Mode::Filter, press(KeyCode::Char('q'))), Some(Intent::Type('q')));
        assert_eq!(intent(Mode::Detail, press(KeyCode::Char('3'))), Some(Intent::Tab(2)));
        assert_eq!(intent(Mode::Fleet, press(KeyCode::Char('3'))), None);
        assert_eq!(
            intent(Mode::Fleet, KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Intent::Quit)
        );
        assert_eq!(
            intent(Mode::Fleet, KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            Some(Intent::Bottom)
        );
        assert_eq!(
            intent(Mode::Dialog, press(KeyCode::Char('q'))),
            Some(Intent::Dialog(DialogKey::Char('q')))
        );
        assert_eq!(
            intent(Mode::Fleet, KeyEvent::new(KeyCode::Char('W'), KeyModifiers::SHIFT)),
            Some(Intent::ToggleWrite)
        );
        let mut release = press(KeyCode::Char('q'));
        release.kind = KeyEventKind::Release;
        assert_eq!(intent(Mode::Fleet, release), None);
    }

    #[test]
    fn hints_come_from_the_table() {
        assert!(hints(Mode::Fleet).contains("/ filter (regex)"));
        assert!(hints(Mode::Detail).contains("esc back to the fleet"));
        assert!(!hints(Mode::Fleet).contains("ctrl-c"));
    }
}
