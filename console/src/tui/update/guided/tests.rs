//! Guided operations in `update`: no `Effect::Send` without the dialog's confirmation, none
//! in read-only mode; the write switch's own confirmation; a conflict asks again; a runbook
//! step's action opens the same dialog with its origin. Snapshots of every overlay state over
//! the screen it came from, at 80x24 and 120x36.

use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::super::super::action::{Action, Effect, Intent, SendOutcome};
use super::super::super::state::{DetailTab, Mode, Overlay, Screen, State};
use super::super::super::testing::scenario_state;
use super::super::update;
use crate::ops::confirm::{DialogKey, Origin, Stage};
use crate::ops::send::{Access, Sent, decide};
use crate::ops::{Observed, WriteOp};

fn keys(state: &mut State, intents: &[Intent]) -> Vec<Effect> {
    intents.iter().flat_map(|intent| update(state, Action::Input(intent.clone()))).collect()
}

fn typed(state: &mut State, text: &str) -> Vec<Effect> {
    let intents: Vec<Intent> = text.chars().map(|c| Intent::Dialog(DialogKey::Char(c))).collect();
    keys(state, &intents)
}

fn sends(effects: &[Effect]) -> usize {
    effects.iter().filter(|effect| matches!(effect, Effect::Send { .. })).count()
}

fn write_on(state: &mut State) {
    state.guided.write.capable = true;
    state.guided.write.on = true;
}

/// The open dialog's serial and op.
fn open_dialog(state: &State) -> (u64, WriteOp) {
    let dialog = state.guided.dialog().expect("a confirm dialog is open");
    (dialog.serial, dialog.dialog.prepared.op.clone())
}

/// Answers the open dialog's review as the runtime would, from the watched group.
fn review(state: &mut State, access: Option<bool>) -> Vec<Effect> {
    let (serial, op) = open_dialog(state);
    let key = (op.group().namespace.clone(), op.group().name.clone());
    let observed = Observed::group((*state.data.groups[&key]).clone());
    let prepared = decide(op, observed, state.now);
    let access = access.map(|allowed| Access {
        user: Some("alice@example.com".to_owned()),
        allowed: Some(allowed),
        reason: (!allowed).then(|| "no RBAC policy matched".to_owned()),
    });
    update(state, Action::Reviewed { serial, result: Ok(Box::new((prepared, access))) })
}

/// `hold-standing` after the human resolved the split brain: pdx fenced (read-only), iad the
/// one writable site (the preflight refuses the acknowledgement before).
fn resolved() -> State {
    let mut state = scenario_state("hold-standing");
    let key = ("orders".to_owned(), "orders".to_owned());
    let mut group = (*state.data.groups[&key]).clone();
    for site in &mut group.status.as_mut().unwrap().sites {
        if site.name == "pdx" {
            site.state = Some(bloodraven_crd::group::SiteState::ReadOnly);
        }
    }
    update(
        &mut state,
        Action::Data(super::super::super::action::DataEvent::Groups(
            super::super::super::action::Change::Applied(Box::new(group)),
        )),
    );
    state
}

/// The hold centre of `hold-standing` (resolved) with the acknowledgement dialog open.
fn acknowledgement_dialog(write: bool) -> (State, Vec<Effect>) {
    let mut state = resolved();
    if write {
        write_on(&mut state);
    }
    let mut effects = keys(&mut state, &[Intent::Open, Intent::Tab(2), Intent::Guided]);
    effects.extend(keys(&mut state, &[Intent::Dialog(DialogKey::Enter)]));
    (state, effects)
}

/// The acknowledgement dialog (write mode on) reviewed with `access`, `name` typed, then
/// Switch to Confirm and Enter: the state and every effect on the way.
fn confirmed_as(access: Option<bool>, name: &str) -> (State, Vec<Effect>) {
    let (mut state, mut effects) = acknowledgement_dialog(true);
    effects.extend(review(&mut state, access));
    effects.extend(typed(&mut state, name));
    effects.extend(confirm(&mut state));
    (state, effects)
}

/// Switch to Confirm, then Enter.
fn confirm(state: &mut State) -> Vec<Effect> {
    keys(state, &[Intent::Dialog(DialogKey::Switch), Intent::Dialog(DialogKey::Enter)])
}

#[test]
fn read_only_opens_the_dialog_but_never_sends() {
    let (mut state, mut effects) = acknowledgement_dialog(false);
    assert_eq!(state.ui.mode, Mode::Dialog);
    let (serial, op) = open_dialog(&state);
    assert!(matches!(op, WriteOp::AcknowledgeHold { .. }), "{op:?}");
    // A fresh read is asked for, but no self-review (nothing but GETs in read-only mode).
    assert!(effects.contains(&Effect::Review { serial, op, access: false }), "{effects:?}");
    effects.extend(review(&mut state, None));
    effects.extend(typed(&mut state, "orders"));
    effects.extend(keys(&mut state, &[Intent::Dialog(DialogKey::Switch)]));
    let dialog = state.guided.dialog().expect("still open");
    assert!(dialog.dialog.blocked().unwrap().contains("read-only"));
    assert_eq!(dialog.dialog.focus, crate::ops::confirm::Focus::Cancel);
    // Enter chooses Cancel: closed, nothing sent.
    effects.extend(keys(&mut state, &[Intent::Dialog(DialogKey::Enter)]));
    assert_eq!(sends(&effects), 0, "{effects:?}");
    assert!(state.guided.overlay.is_none());
}

#[test]
fn only_the_confirm_outcome_sends_and_exactly_once() {
    let (mut state, mut effects) = acknowledgement_dialog(true);
    let (serial, op) = open_dialog(&state);
    assert!(effects.contains(&Effect::Review { serial, op, access: true }), "{effects:?}");
    // Before the reviews answer, nothing can be confirmed.
    effects.extend(typed(&mut state, "orders"));
    effects.extend(confirm(&mut state));
    assert_eq!(sends(&effects), 0, "{effects:?}");

    let (mut state, mut effects) = acknowledgement_dialog(true);
    effects.extend(review(&mut state, Some(true)));
    // Enter on the default (Cancel) closes and sends nothing, even with the name typed.
    effects.extend(typed(&mut state, "orders"));
    effects.extend(keys(&mut state, &[Intent::Dialog(DialogKey::Enter)]));
    assert_eq!(sends(&effects), 0, "{effects:?}");
    assert!(state.guided.overlay.is_none());
    assert_eq!(state.ui.mode, Mode::Detail);

    // A wrong name keeps Confirm out of reach.
    let (_, effects) = confirmed_as(Some(true), "order");
    assert_eq!(sends(&effects), 0, "{effects:?}");

    // RBAC says no: no send.
    let (_, effects) = confirmed_as(Some(false), "orders");
    assert_eq!(sends(&effects), 0, "{effects:?}");

    // Everything holds: exactly one Send, of the reviewed request, with the origin.
    let (mut state, effects) = confirmed_as(Some(true), "orders");
    assert_eq!(sends(&effects), 1, "{effects:?}");
    let Some(Effect::Send { prepared, user, origin, .. }) =
        effects.iter().find(|effect| matches!(effect, Effect::Send { .. }))
    else {
        unreachable!()
    };
    assert!(matches!(prepared.op, WriteOp::AcknowledgeHold { .. }));
    assert_eq!(user.as_deref(), Some("alice@example.com"));
    assert_eq!(*origin, Origin::Screen("the hold centre".to_owned()));
    // While sending, keys do nothing (no second send).
    let again = keys(&mut state, &[Intent::Dialog(DialogKey::Enter)]);
    assert_eq!(sends(&again), 0);
}

#[test]
fn a_write_mode_lost_before_the_confirm_sends_nothing() {
    let (mut state, _) = acknowledgement_dialog(true);
    review(&mut state, Some(true));
    typed(&mut state, "orders");
    keys(&mut state, &[Intent::Dialog(DialogKey::Switch)]);
    state.guided.write.on = false;
    let effects = keys(&mut state, &[Intent::Dialog(DialogKey::Enter)]);
    assert_eq!(sends(&effects), 0, "{effects:?}");
}

#[test]
fn a_conflict_re_reads_and_asks_again() {
    let (mut state, _) = acknowledgement_dialog(true);
    review(&mut state, Some(true));
    typed(&mut state, "orders");
    confirm(&mut state);
    let (serial, op) = open_dialog(&state);
    let effects = update(
        &mut state,
        Action::Sent { serial, outcome: SendOutcome::Conflict("resourceVersion moved".to_owned()) },
    );
    assert!(effects.contains(&Effect::Review { serial, op, access: true }), "{effects:?}");
    let dialog = state.guided.dialog().unwrap();
    assert!(matches!(dialog.dialog.stage, Stage::Changed(_)));
    assert!(dialog.dialog.typed.is_empty() && dialog.dialog.access.is_none());
    // Enter alone does not send again: the name must be typed again after the re-read.
    let effects = confirm(&mut state);
    assert_eq!(sends(&effects), 0, "{effects:?}");
}

#[test]
fn late_answers_of_another_dialog_are_dropped() {
    let (mut state, _) = acknowledgement_dialog(true);
    let (serial, _) = open_dialog(&state);
    let sent = Sent {
        operation_id: "x".to_owned(),
        status: 200,
        resource_version: Some("9".to_owned()),
        event: false,
    };
    let effects =
        update(&mut state, Action::Sent { serial: serial + 1, outcome: SendOutcome::Sent(sent) });
    assert!(effects.is_empty());
    assert!(matches!(state.guided.dialog().unwrap().dialog.stage, Stage::Asking));
}

#[test]
fn the_write_switch_has_its_own_confirmation_and_a_pinned_context_refuses() {
    let mut state = scenario_state("healthy");
    // A session without a write-capable client.
    let effects = keys(&mut state, &[Intent::ToggleWrite]);
    assert!(!effects.iter().any(|effect| matches!(effect, Effect::SetWrite(_))));
    assert!(state.ui.message.as_deref().unwrap().contains("cannot write"));

    state.guided.write.capable = true;
    let effects = keys(&mut state, &[Intent::ToggleWrite]);
    assert!(matches!(state.guided.overlay, Some(Overlay::WriteSwitch)));
    assert!(!effects.iter().any(|effect| matches!(effect, Effect::SetWrite(_))));
    // Anything but `y` keeps it off.
    keys(&mut state, &[Intent::Dialog(DialogKey::Char('n'))]);
    assert!(!state.guided.write.on && state.guided.overlay.is_none());
    assert_eq!(state.ui.mode, Mode::Fleet);
    let effects = keys(&mut state, &[Intent::ToggleWrite, Intent::Dialog(DialogKey::Char('y'))]);
    assert!(effects.contains(&Effect::SetWrite(true)), "{effects:?}");
    assert!(state.guided.write.on);
    // Off at once.
    let effects = keys(&mut state, &[Intent::ToggleWrite]);
    assert!(effects.contains(&Effect::SetWrite(false)), "{effects:?}");
    assert!(!state.guided.write.on);

    state.guided.write.config = serde_norway::from_str("readOnlyContexts: [\"la*\"]").unwrap();
    let effects = keys(&mut state, &[Intent::ToggleWrite]);
    assert!(state.guided.overlay.is_none() && !state.guided.write.on);
    assert!(!effects.iter().any(|effect| matches!(effect, Effect::SetWrite(_))));
    assert!(state.ui.message.as_deref().unwrap().contains("pinned read-only"));
}

#[test]
fn a_context_switch_turns_write_mode_off() {
    let mut state = scenario_state("healthy");
    write_on(&mut state);
    let mut intents = vec![Intent::StartCommand];
    intents.extend("ctx prod".chars().map(Intent::Type));
    intents.push(Intent::Submit);
    let effects = keys(&mut state, &intents);
    assert!(effects.contains(&Effect::SetWrite(false)), "{effects:?}");
    assert!(!state.guided.write.on);
}

#[test]
fn the_fleet_offers_a_promotion_to_each_other_candidate() {
    let mut state = scenario_state("healthy");
    keys(&mut state, &[Intent::Guided]);
    let Some(Overlay::Picker(picker)) = &state.guided.overlay else {
        panic!("no picker: {:?}", state.ui.message)
    };
    let group = state.visible_groups()[0].clone();
    let active = group.status.as_ref().unwrap().active_site.clone().unwrap();
    let targets: Vec<String> = picker
        .choices
        .iter()
        .map(|choice| match &choice.op {
            WriteOp::RequestPlannedFailover { target, .. } => target.clone(),
            other => panic!("not a promotion: {other:?}"),
        })
        .collect();
    assert!(!targets.is_empty() && !targets.contains(&active), "{targets:?}");
    assert_eq!(picker.choices[0].origin, Origin::Screen("the fleet view".to_owned()));
    let effects = keys(&mut state, &[Intent::Dialog(DialogKey::Enter)]);
    assert!(effects.iter().any(|effect| matches!(effect, Effect::Review { .. })));
    let (_, op) = open_dialog(&state);
    assert!(matches!(op, WriteOp::RequestPlannedFailover { .. }));
    // esc: back to the fleet, nothing sent.
    let effects = keys(&mut state, &[Intent::Dialog(DialogKey::Esc)]);
    assert_eq!(sends(&effects), 0);
    assert_eq!((state.screen(), state.ui.mode), (&Screen::Fleet, Mode::Fleet));
}

#[test]
fn the_reclone_and_backups_panels_offer_their_choices() {
    let mut state = scenario_state("reclone-held");
    keys(&mut state, &[Intent::Open, Intent::Tab(3), Intent::Guided]);
    let Some(Overlay::Picker(picker)) = &state.guided.overlay else {
        panic!("no picker: {:?}", state.ui.message)
    };
    let kinds: Vec<&str> = picker.choices.iter().map(|choice| choice.op.kind()).collect();
    assert!(kinds.starts_with(&["reclone-queue-drain", "reclone-queue-release"]), "{kinds:?}");

    let mut state = scenario_state("healthy");
    keys(&mut state, &[Intent::Open, Intent::Tab(6), Intent::Guided]);
    if let Some(Overlay::Picker(picker)) = &state.guided.overlay {
        assert!(picker.choices.iter().all(|choice| matches!(
            choice.op,
            WriteOp::CreateBackup { .. } | WriteOp::CreateVerification { .. }
        )));
    }
    // A panel with no operation says so and opens nothing.
    let mut state = scenario_state("healthy");
    keys(&mut state, &[Intent::Open, Intent::Tab(5), Intent::Guided]);
    assert!(state.guided.overlay.is_none());
    assert!(state.ui.message.as_deref().unwrap().starts_with("no guided operation fits"));
}

/// Walks the hold runbook of `hold-standing` until its acknowledgement step proposes.
fn walk_to_the_acknowledgement(state: &mut State) {
    keys(state, &[Intent::Open, Intent::Tab(7)]);
    let key = match state.screen() {
        Screen::Group { key, .. } => key.clone(),
        Screen::Fleet => unreachable!(),
    };
    let ranked: Vec<String> = state
        .applicable_runbooks(state.group(&key).unwrap())
        .runbooks
        .iter()
        .map(|runbook| runbook.id.clone())
        .collect();
    let index = ranked.iter().position(|id| id == "automation-hold").expect("offered");
    keys(state, &vec![Intent::Down; index]);
    for _ in 0..6 {
        keys(state, &[Intent::Open]);
        if state.guided.overlay.is_some() {
            return;
        }
    }
    panic!("the walk never proposed an operation");
}

#[test]
fn a_runbook_step_opens_the_same_dialog_with_its_origin_and_waits_after_the_send() {
    let mut state = resolved();
    write_on(&mut state);
    walk_to_the_acknowledgement(&mut state);
    let dialog = state.guided.dialog().unwrap();
    assert_eq!(
        dialog.dialog.origin,
        Origin::Runbook { runbook: "automation-hold".to_owned(), step: "acknowledge".to_owned() }
    );
    assert!(matches!(dialog.dialog.prepared.op, WriteOp::AcknowledgeHold { .. }));
    review(&mut state, Some(true));
    typed(&mut state, "orders");
    let effects = confirm(&mut state);
    assert_eq!(sends(&effects), 1);
    let (serial, _) = open_dialog(&state);
    let sent = Sent {
        operation_id: "acknowledge-hold-1".to_owned(),
        status: 200,
        resource_version: Some("12".to_owned()),
        event: true,
    };
    update(&mut state, Action::Sent { serial, outcome: SendOutcome::Sent(sent) });
    let key = ("orders".to_owned(), "orders".to_owned());
    let progress = &state.ui.runbooks[&key].progress["automation-hold"];
    assert_eq!(progress.step.as_deref(), Some("acknowledge"));
    assert!(progress.acted_at.is_some(), "the step waits on its expect once sent");
    // Any key closes the answered dialog, back on the player.
    keys(&mut state, &[Intent::Dialog(DialogKey::Char('x'))]);
    assert!(state.guided.overlay.is_none());
    assert!(matches!(state.screen(), Screen::Group { tab: DetailTab::Runbooks, .. }));
}

/// The screen's text, one row per line, at 120x36.
fn screen_text(state: &State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
    terminal.draw(|frame| super::super::super::view::render(state, frame)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let mut text = String::new();
    for y in 0..buffer.area.height {
        let row: String =
            (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_owned()).collect();
        text.push_str(&row);
        text.push('\n');
    }
    text
}

#[test]
fn an_acknowledgement_the_operator_ignored_is_explained_by_its_event() {
    let (mut state, _) = confirmed_as(Some(true), "orders");
    sent_ok(&mut state);
    assert!(screen_text(&state).contains("the hold still stands: waiting for the operator"));
    // An Ignored Event from before the send explains nothing about this acknowledgement.
    let event = |name: &str, at: jiff::Timestamp, message: &str| {
        let event: k8s_openapi::api::core::v1::Event = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "orders"},
            "involvedObject": {"kind": "MysqlFailoverGroup", "name": "orders",
                               "namespace": "orders"},
            "reason": "PlannedFailoverHoldAcknowledgmentIgnored", "type": "Warning",
            "message": message, "lastTimestamp": at.to_string(),
        }))
        .unwrap();
        super::super::super::action::DataEvent::Events(
            super::super::super::action::Change::Applied(Box::new(event)),
        )
    };
    let before = state.now - jiff::SignedDuration::from_secs(60);
    update(&mut state, Action::Data(event("orders.old", before, "an older one")));
    let text = screen_text(&state);
    assert!(!text.contains("ignored by the operator"), "{text}");
    // The operator read it (the annotation is gone), the hold still stands, and its Event says
    // why: the follow-through says so.
    let after = state.now + jiff::SignedDuration::from_secs(2);
    let why = "the claim is held for planned failover r-9";
    update(&mut state, Action::Data(event("orders.new", after, why)));
    let text = screen_text(&state);
    assert!(
        text.contains("ignored by the operator (PlannedFailoverHoldAcknowledgmentIgnored)"),
        "{text}"
    );
    assert!(text.contains("the claim is held for planned"), "{text}");
}

// ---- snapshots: every overlay state over the screen it came from ----

fn draw(state: &State) -> String {
    let mut out = String::new();
    for (width, height) in [(80, 24), (120, 36)] {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| super::super::super::view::render(state, frame)).unwrap();
        out.push_str(&format!("--- {width}x{height} ---\n"));
        out.push_str(&terminal.backend().to_string());
    }
    out
}

fn sent_ok(state: &mut State) {
    let (serial, _) = open_dialog(state);
    let sent = Sent {
        operation_id: "acknowledge-hold-1776696000000000000".to_owned(),
        status: 200,
        resource_version: Some("12".to_owned()),
        event: true,
    };
    update(state, Action::Sent { serial, outcome: SendOutcome::Sent(sent) });
}

#[test]
fn snapshot_overlays() {
    // The write switch's confirmation, over the fleet.
    let mut state = scenario_state("hold-standing");
    state.guided.write.capable = true;
    keys(&mut state, &[Intent::ToggleWrite]);
    insta::assert_snapshot!("write_switch", draw(&state));

    // The picker over the fleet (write mode on: the header says WRITE).
    let mut state = scenario_state("healthy");
    write_on(&mut state);
    keys(&mut state, &[Intent::Guided]);
    insta::assert_snapshot!("fleet_picker", draw(&state));
    // The promote dialog from the fleet, waiting for the reviews.
    keys(&mut state, &[Intent::Dialog(DialogKey::Enter)]);
    insta::assert_snapshot!("fleet_promote_asking", draw(&state));

    // The hold centre: unresolved (two writable sites), then resolved; then its
    // acknowledgement dialog in read-only mode.
    let mut state = scenario_state("hold-standing");
    keys(&mut state, &[Intent::Open, Intent::Tab(2)]);
    insta::assert_snapshot!("hold_centre", draw(&state));
    let mut state = resolved();
    keys(&mut state, &[Intent::Open, Intent::Tab(2)]);
    insta::assert_snapshot!("hold_centre_resolved", draw(&state));
    let (mut state, _) = acknowledgement_dialog(false);
    review(&mut state, None);
    insta::assert_snapshot!("hold_ack_read_only", draw(&state));

    // Write mode: allowed, name typed, Confirm focused.
    let (mut state, _) = acknowledgement_dialog(true);
    review(&mut state, Some(true));
    typed(&mut state, "orders");
    keys(&mut state, &[Intent::Dialog(DialogKey::Switch)]);
    insta::assert_snapshot!("hold_ack_ready", draw(&state));
    // Sending, then sent with the follow-through.
    keys(&mut state, &[Intent::Dialog(DialogKey::Enter)]);
    insta::assert_snapshot!("hold_ack_sending", draw(&state));
    sent_ok(&mut state);
    insta::assert_snapshot!("hold_ack_sent", draw(&state));

    // RBAC says no.
    let (mut state, _) = acknowledgement_dialog(true);
    review(&mut state, Some(false));
    insta::assert_snapshot!("hold_ack_not_allowed", draw(&state));

    // A conflict: changed since read, asks again.
    let (mut state, _) = acknowledgement_dialog(true);
    review(&mut state, Some(true));
    typed(&mut state, "orders");
    confirm(&mut state);
    let (serial, _) = open_dialog(&state);
    let why = "orders/orders: the object has been modified".to_owned();
    update(&mut state, Action::Sent { serial, outcome: SendOutcome::Conflict(why) });
    review(&mut state, Some(true));
    insta::assert_snapshot!("hold_ack_changed", draw(&state));

    // Failed.
    let (mut state, _) = acknowledgement_dialog(true);
    review(&mut state, Some(true));
    typed(&mut state, "orders");
    confirm(&mut state);
    let (serial, _) = open_dialog(&state);
    let error = "the API server refused the request (403 Forbidden): denied".to_owned();
    update(&mut state, Action::Sent { serial, outcome: SendOutcome::Failed(error) });
    insta::assert_snapshot!("hold_ack_failed", draw(&state));

    // The Held queue's choices and the drain dialog.
    let mut state = scenario_state("reclone-held");
    write_on(&mut state);
    keys(&mut state, &[Intent::Open, Intent::Tab(3), Intent::Guided]);
    insta::assert_snapshot!("reclone_picker", draw(&state));
    keys(&mut state, &[Intent::Dialog(DialogKey::Enter)]);
    review(&mut state, Some(true));
    insta::assert_snapshot!("reclone_drain", draw(&state));

    // From the runbook player.
    let mut state = resolved();
    write_on(&mut state);
    walk_to_the_acknowledgement(&mut state);
    review(&mut state, Some(true));
    insta::assert_snapshot!("runbook_ack", draw(&state));
}
