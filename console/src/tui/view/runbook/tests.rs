#![allow(clippy::unwrap_used, reason = "test code")]

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::super::super::action::{Action, Intent};
use super::super::super::state::{DetailTab, Screen, State};
use super::super::super::testing::{now, scenario_state};
use super::super::super::update::update;
use super::super::render;
use super::runbook_lines;

fn press(state: &mut State, intents: &[Intent]) {
    for intent in intents {
        update(state, Action::Input(intent.clone()));
    }
}

/// The scenario's first group, on its Runbooks panel.
fn on_runbooks(scenario: &str) -> State {
    let mut state = scenario_state(scenario);
    press(&mut state, &[Intent::Open, Intent::Tab(7)]);
    assert!(
        matches!(state.screen(), Screen::Group { tab: DetailTab::Runbooks, .. }),
        "{:?}",
        state.screen()
    );
    state
}

/// The panel's text (no frame, so other panels' changes do not move it).
fn panel(state: &State) -> String {
    let Screen::Group { key, .. } = state.screen().clone() else { panic!("not on a group") };
    let group = state.group(&key).unwrap();
    runbook_lines(state, &key, group)
        .iter()
        .map(|line| line.spans.iter().map(|span| span.content.as_ref()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

fn draw(state: &State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
    terminal.draw(|frame| render(state, frame)).unwrap();
    terminal.backend().to_string()
}

/// Every static scenario: the ranked list, then the first step of its top runbook.
#[test]
fn the_player_lists_and_starts_the_runbooks_of_every_scenario() {
    let mut out = String::new();
    for scenario in crate::scenarios::NAMES.iter().filter(|name| **name != "fleet-1000") {
        let mut state = on_runbooks(scenario);
        out.push_str(&format!("==== {scenario}: list\n{}\n", panel(&state)));
        press(&mut state, &[Intent::Open]);
        out.push_str(&format!("==== {scenario}: walk\n{}\n", panel(&state)));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn hold_standing_frame() {
    let mut state = on_runbooks("hold-standing");
    insta::assert_snapshot!("hold_standing_list", draw(&state));
    press(&mut state, &[Intent::Open, Intent::Open]);
    insta::assert_snapshot!("hold_standing_walk", draw(&state));
}

/// Leaving the panel (and the group) keeps the walk; entering again resumes it.
#[test]
fn progress_survives_leaving_and_reentering() {
    let mut state = on_runbooks("hold-standing");
    press(&mut state, &[Intent::Open, Intent::Open]);
    assert!(panel(&state).contains("Step 2/4: one-writable"), "{}", panel(&state));
    // esc: back to the list, the walk is kept; esc again: the fleet.
    press(&mut state, &[Intent::Back]);
    assert!(panel(&state).contains("(at step one-writable)"), "{}", panel(&state));
    press(&mut state, &[Intent::Back]);
    assert_eq!(*state.screen(), Screen::Fleet);
    press(&mut state, &[Intent::Open, Intent::Tab(7), Intent::Open]);
    let text = panel(&state);
    assert!(text.contains("Step 2/4: one-writable"), "{text}");
    assert!(text.contains("[FAIL]"), "split brain: two writable sites\n{text}");
}

/// A step's action opens its confirm dialog; once the dialog sent it, the step waits on
/// `expect` with a countdown that follows the clock.
#[test]
fn an_action_waits_on_expect_with_a_countdown() {
    let mut state = on_runbooks("reclone-held");
    // understand (pass) -> choose (pass) -> keep-primary (offers the action).
    press(&mut state, &[Intent::Open, Intent::Open, Intent::Open]);
    let text = panel(&state);
    assert!(text.contains("action: recloneQueueKeepPrimary(runId="), "{text}");
    press(&mut state, &[Intent::Open]);
    let serial = state.guided.dialog().expect("the step's confirm dialog opened").serial;
    // Not sent yet: no wait.
    assert!(!panel(&state).contains("waiting"), "{}", panel(&state));
    let sent = crate::ops::send::Sent {
        operation_id: "reclone-queue-drain-1".to_owned(),
        status: 200,
        resource_version: Some("7".to_owned()),
        event: false,
    };
    let outcome = super::super::super::action::SendOutcome::Sent(sent);
    update(&mut state, Action::Sent { serial, outcome });
    assert!(panel(&state).contains("waiting (1h left)"), "{}", panel(&state));
    update(&mut state, Action::Tick(now() + jiff::SignedDuration::from_secs(600)));
    assert!(panel(&state).contains("waiting (50m left)"), "{}", panel(&state));
    update(&mut state, Action::Tick(now() + jiff::SignedDuration::from_secs(3_601)));
    assert!(panel(&state).contains("timed out after 1h"), "{}", panel(&state));
}
