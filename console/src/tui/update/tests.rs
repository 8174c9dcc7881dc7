use pretty_assertions::assert_eq;

use super::super::action::{Action, Change, DataEvent, Effect, Intent};
use super::super::state::{ConnectionStatus, DetailTab, Mode, Scope, Screen, SourceKind, State};
use super::super::testing::{now, scenario_events, scenario_state};
use super::update;

fn keys(state: &mut State, intents: &[Intent]) -> Vec<Effect> {
    intents.iter().flat_map(|intent| update(state, Action::Input(intent.clone()))).collect()
}

fn selected_name(state: &State) -> String {
    state.visible_groups()[state.ui.selected].metadata.name.clone().unwrap()
}

#[test]
fn navigation_table() {
    // (keys, expected screen, expected mode, expected selection)
    let key = |namespace: &str, name: &str| (namespace.to_owned(), name.to_owned());
    let cases: Vec<(Vec<Intent>, Screen, Mode, usize)> = vec![
        (vec![], Screen::Fleet, Mode::Fleet, 0),
        (
            vec![Intent::Down, Intent::Down, Intent::Down, Intent::Down],
            Screen::Fleet,
            Mode::Fleet,
            2,
        ),
        (vec![Intent::Bottom, Intent::Up], Screen::Fleet, Mode::Fleet, 1),
        (vec![Intent::Down, Intent::Top], Screen::Fleet, Mode::Fleet, 0),
        (
            vec![Intent::Open],
            Screen::Group { key: key("orders", "carts"), tab: DetailTab::Overview },
            Mode::Detail,
            0,
        ),
        (
            vec![Intent::Open, Intent::Tab(2)],
            Screen::Group { key: key("orders", "carts"), tab: DetailTab::Hold },
            Mode::Detail,
            0,
        ),
        (
            vec![Intent::Open, Intent::PreviousTab],
            Screen::Group { key: key("orders", "carts"), tab: DetailTab::Runbooks },
            Mode::Detail,
            0,
        ),
        (
            vec![Intent::Open, Intent::Tab(7), Intent::NextTab],
            Screen::Group { key: key("orders", "carts"), tab: DetailTab::Overview },
            Mode::Detail,
            0,
        ),
        (
            vec![Intent::Open, Intent::Tab(99)],
            Screen::Group { key: key("orders", "carts"), tab: DetailTab::Overview },
            Mode::Detail,
            0,
        ),
        (vec![Intent::Down, Intent::Open, Intent::Back], Screen::Fleet, Mode::Fleet, 1),
        (vec![Intent::ToggleHelp], Screen::Fleet, Mode::Help, 0),
        (vec![Intent::ToggleHelp, Intent::Down, Intent::ToggleHelp], Screen::Fleet, Mode::Fleet, 0),
    ];
    for (intents, screen, mode, selected) in cases {
        let mut state = scenario_state("healthy");
        keys(&mut state, &intents);
        assert_eq!(
            (state.screen().clone(), state.ui.mode, state.ui.selected),
            (screen, mode, selected),
            "{intents:?}"
        );
    }
}

#[test]
fn quit_is_an_effect_in_every_mode() {
    for setup in [vec![], vec![Intent::Open], vec![Intent::StartFilter], vec![Intent::ToggleHelp]] {
        let mut state = scenario_state("healthy");
        keys(&mut state, &setup);
        assert_eq!(update(&mut state, Action::Input(Intent::Quit)), [Effect::Quit], "{setup:?}");
    }
}

#[test]
fn regex_filter_narrows_and_reports_bad_patterns() {
    let mut state = scenario_state("healthy");
    keys(
        &mut state,
        &[
            Intent::StartFilter,
            Intent::Type('^'),
            Intent::Type('p'),
            Intent::Type('a'),
            Intent::Type('y'),
            Intent::Submit,
        ],
    );
    assert_eq!(state.ui.mode, Mode::Fleet);
    assert_eq!(state.visible_groups().len(), 1);
    assert_eq!(selected_name(&state), "ledger");
    keys(
        &mut state,
        &[Intent::StartFilter, Intent::Erase, Intent::Erase, Intent::Type('('), Intent::Submit],
    );
    assert!(state.ui.filter_error.is_some());
    assert_eq!(state.visible_groups().len(), 3, "an invalid pattern filters nothing");
    keys(&mut state, &[Intent::StartFilter, Intent::Cancel]);
    assert_eq!((state.ui.filter.as_str(), state.ui.filter_error.clone()), ("", None));
}

#[test]
fn held_groups_match_the_held_filter_and_sort_cycles() {
    let mut state = scenario_state("hold-standing");
    keys(
        &mut state,
        &[
            Intent::StartFilter,
            Intent::Type('h'),
            Intent::Type('e'),
            Intent::Type('l'),
            Intent::Type('d'),
        ],
    );
    assert_eq!(state.visible_groups().len(), 1);
    let mut state = scenario_state("healthy");
    assert_eq!(selected_name(&state), "carts");
    keys(&mut state, &[Intent::ReverseSort]);
    assert_eq!(selected_name(&state), "ledger");
    keys(&mut state, &[Intent::CycleSort]);
    assert_eq!(state.ui.message.as_deref(), Some("sorted by active"));
}

#[test]
fn commands_change_scope_and_view() {
    let mut state = scenario_state("healthy");
    let effects = keys(
        &mut state,
        &[
            Intent::StartCommand,
            Intent::Type('n'),
            Intent::Type('s'),
            Intent::Type(' '),
            Intent::Type('x'),
            Intent::Submit,
        ],
    );
    assert!(effects.contains(&Effect::Watch(Scope::Namespace("x".to_owned()))));
    assert!(state.data.groups.is_empty(), "data of the old scope is dropped");
    assert_eq!(state.source(SourceKind::Groups).status, ConnectionStatus::Connecting);

    let mut state = scenario_state("healthy");
    let mut intents = vec![Intent::Open, Intent::StartCommand];
    intents.extend("view hold".chars().map(Intent::Type));
    intents.push(Intent::Submit);
    keys(&mut state, &intents);
    assert!(matches!(state.screen(), Screen::Group { tab: DetailTab::Hold, .. }));

    let mut state = scenario_state("healthy");
    let mut intents = vec![Intent::StartCommand];
    intents.extend("frobnicate".chars().map(Intent::Type));
    intents.push(Intent::Submit);
    let effects = keys(&mut state, &intents);
    assert!(!effects.iter().any(|effect| matches!(effect, Effect::Watch(_) | Effect::Quit)));
    assert!(state.ui.message.as_deref().unwrap().starts_with("unknown command"));
}

#[test]
fn freeze_queues_changes_and_stops_the_clock() {
    let mut state = scenario_state("healthy");
    keys(&mut state, &[Intent::ToggleFreeze]);
    let later = "2026-04-20T14:45:00Z".parse().unwrap();
    assert_eq!(update(&mut state, Action::Tick(later)), []);
    assert_eq!(state.now, now());
    let removal = scenario_events("healthy").remove(0);
    let DataEvent::Groups(Change::Restarted(mut groups)) = removal else { panic!() };
    let gone = groups.remove(0);
    update(&mut state, Action::Data(DataEvent::Groups(Change::Deleted(Box::new(gone)))));
    assert_eq!(state.data.groups.len(), 3, "frozen display keeps its data");
    assert_eq!(state.frozen.as_ref().map(Vec::len), Some(1));
    keys(&mut state, &[Intent::ToggleFreeze]);
    assert_eq!(state.data.groups.len(), 2);
    assert!(state.frozen.is_none());
}

#[test]
fn connection_and_data_age_follow_the_sources() {
    let mut state = scenario_state("healthy");
    let since = "2026-04-20T14:39:59Z".parse().unwrap();
    let retry_at = "2026-04-20T14:40:04Z".parse().unwrap();
    let status =
        ConnectionStatus::Reconnecting { since, retry_at, error: "connection refused".to_owned() };
    update(
        &mut state,
        Action::Data(DataEvent::Connection {
            source: SourceKind::Groups,
            status: status.clone(),
            at: since,
        }),
    );
    assert_eq!(state.source(SourceKind::Groups).status, status);
    // A relist reconnects the source and refreshes its age.
    let relist = scenario_events("healthy").remove(0);
    update(&mut state, Action::Data(relist));
    assert_eq!(state.source(SourceKind::Groups).status, ConnectionStatus::Connected);
    assert_eq!(state.source(SourceKind::Groups).updated, Some(now()));
    assert_eq!(update(&mut state, Action::Tick(now())), [], "same second: nothing to redraw");
}

#[test]
fn detail_scrolls_and_a_new_tab_starts_at_the_top() {
    let mut state = scenario_state("pitr-divergent");
    keys(
        &mut state,
        &[Intent::Open, Intent::Tab(4), Intent::Down, Intent::Down, Intent::Down, Intent::Up],
    );
    assert_eq!(state.ui.scroll, 2);
    keys(&mut state, &[Intent::Top]);
    assert_eq!(state.ui.scroll, 0);
    keys(&mut state, &[Intent::Down, Intent::NextTab]);
    assert_eq!(state.ui.scroll, 0);
}

#[test]
fn the_archive_panel_asks_for_the_archive_and_refreshes_it() {
    use crate::archive::{ArchiveLocation, ArchiveOutcome};
    use crate::tui::state::ArchiveState;

    let mut state = scenario_state("archive-gap");
    // Other panels ask for nothing.
    assert_eq!(keys(&mut state, &[Intent::Open]), [Effect::Render]);
    let Screen::Group { key, .. } = state.screen().clone() else { panic!() };
    let effects = keys(&mut state, &[Intent::Tab(5)]);
    let [Effect::Render, Effect::LoadArchive { key: asked, request }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    assert_eq!(asked, &key);
    assert!(matches!(request.location, ArchiveLocation::Pvc { .. }), "{request:?}");
    assert!(!request.backups.is_empty(), "the group's backups are the anchors");
    assert!(state.data.archives[&key].loading());
    // In flight: scrolling and ticks do not ask again.
    assert_eq!(keys(&mut state, &[Intent::Down, Intent::Up]), [Effect::Render, Effect::Render]);
    let outcome = ArchiveOutcome::Failed("test".to_owned());
    let effects = update(
        &mut state,
        Action::Data(DataEvent::Archive { key: key.clone(), outcome: outcome.clone(), at: now() }),
    );
    assert_eq!(effects, [Effect::Render]);
    assert_eq!(
        state.data.archives[&key],
        ArchiveState { requested: Some(now()), updated: Some(now()), outcome: Some(outcome) }
    );
    // Fresh for ARCHIVE_REFRESH, then read again.
    let later = now().checked_add(jiff::SignedDuration::from_secs(29)).unwrap();
    assert_eq!(update(&mut state, Action::Tick(later)), [Effect::Render]);
    let later = now().checked_add(super::ARCHIVE_REFRESH).unwrap();
    let effects = update(&mut state, Action::Tick(later));
    assert!(
        matches!(effects.as_slice(), [Effect::Render, Effect::LoadArchive { .. }]),
        "{effects:?}"
    );
    // Leaving the panel stops asking.
    keys(&mut state, &[Intent::Tab(0)]);
    let much_later = later.checked_add(jiff::SignedDuration::from_secs(300)).unwrap();
    assert_eq!(update(&mut state, Action::Tick(much_later)), [Effect::Render]);
}

#[test]
fn a_group_without_pitr_says_why_without_reading() {
    let mut state = scenario_state("healthy");
    let key = crate::tui::state::key_of(&state.visible_groups()[0].metadata);
    if let Some(pitr) = state
        .data
        .groups
        .get_mut(&key)
        .and_then(|group| group.spec.backup.as_mut())
        .and_then(|backup| backup.pitr.as_mut())
    {
        pitr.enabled = Some(false);
    }
    keys(&mut state, &[Intent::Open]);
    assert_eq!(state.screen(), &Screen::Group { key: key.clone(), tab: DetailTab::Overview });
    assert_eq!(keys(&mut state, &[Intent::Tab(5)]), [Effect::Render]);
    assert_eq!(
        state.data.archives[&key].outcome,
        Some(crate::archive::ArchiveOutcome::Failed(
            "PITR is not enabled (spec.backup.pitr.enabled)".to_owned()
        ))
    );
}

#[test]
fn ctx_asks_for_another_client_and_drops_the_old_data() {
    let mut state = scenario_state("healthy");
    let mut intents = vec![Intent::Open, Intent::StartCommand];
    intents.extend("ctx staging".chars().map(Intent::Type));
    intents.push(Intent::Submit);
    let effects = keys(&mut state, &intents);
    assert!(effects.contains(&Effect::SwitchContext("staging".to_owned())), "{effects:?}");
    assert!(!state.data.groups.is_empty(), "the old data stays until the new client is up");

    let effects = update(
        &mut state,
        Action::ContextSwitched(Err("context staging: no such context".to_owned())),
    );
    assert_eq!(effects, [Effect::Render]);
    assert_eq!(state.ui.message.as_deref(), Some("context staging: no such context"));
    assert_eq!(state.context, "lab");
    assert!(!state.data.groups.is_empty());

    let old_epoch = state.epoch;
    let effects = update(&mut state, Action::ContextSwitched(Ok("staging".to_owned())));
    assert_eq!(effects, [Effect::Render, Effect::Watch(Scope::All)], "the sources restart");
    assert_ne!(state.epoch, old_epoch);
    assert_eq!(state.context, "staging");
    assert!(state.data.groups.is_empty(), "data of the old cluster is dropped");
    assert_eq!(state.source(SourceKind::Groups).status, ConnectionStatus::Connecting);
    assert_eq!(state.screen(), &Screen::Fleet);
    assert_eq!(state.ui.message.as_deref(), Some("context staging"));
}

#[test]
fn events_of_an_older_epoch_are_dropped() {
    let mut state = scenario_state("healthy");
    let key = ("orders".to_owned(), "orders".to_owned());
    let old = state.epoch;
    update(&mut state, Action::ContextSwitched(Ok("staging".to_owned())));
    let archive = |epoch: u64, text: &str| Action::Sourced {
        epoch,
        event: DataEvent::Archive {
            key: key.clone(),
            outcome: crate::archive::ArchiveOutcome::Failed(text.to_owned()),
            at: now(),
        },
    };
    // The old cluster's archive read and its groups arrive late: neither is shown.
    assert_eq!(update(&mut state, archive(old, "old cluster")), []);
    for event in scenario_events("healthy") {
        assert_eq!(update(&mut state, Action::Sourced { epoch: old, event }), []);
    }
    assert!(state.data.archives.is_empty(), "{:?}", state.data.archives);
    assert!(state.data.groups.is_empty());
    // The new one's are.
    let new = state.epoch;
    update(&mut state, archive(new, "new cluster"));
    assert_eq!(
        state.data.archives[&key].outcome,
        Some(crate::archive::ArchiveOutcome::Failed("new cluster".to_owned()))
    );

    // `:ns` moves the epoch on too, and empties a frozen queue of the old scope.
    update(&mut state, Action::Input(Intent::ToggleFreeze));
    let current = state.epoch;
    for event in scenario_events("healthy") {
        update(&mut state, Action::Sourced { epoch: current, event });
    }
    assert_eq!(state.frozen.as_ref().map(Vec::len), Some(4));
    let mut intents = vec![Intent::StartCommand];
    intents.extend("ns orders".chars().map(Intent::Type));
    intents.push(Intent::Submit);
    keys(&mut state, &intents);
    assert_eq!(state.epoch, current + 1);
    assert_eq!(state.frozen.as_ref().map(Vec::len), Some(0));
}

#[test]
fn an_unreadable_group_is_listed_and_the_rest_are_shown() {
    use crate::decode::Unreadable;

    let mut state = scenario_state("healthy");
    let count = state.data.groups.len();
    let bad = |name: &str| Unreadable {
        kind: "MysqlFailoverGroup".to_owned(),
        namespace: "orders".to_owned(),
        name: name.to_owned(),
        path: "spec.sites".to_owned(),
        error: "invalid type: string \"not a list\", expected a sequence".to_owned(),
    };
    update(
        &mut state,
        Action::Data(DataEvent::UnreadableGroups(Change::Restarted(vec![bad("broken")]))),
    );
    assert_eq!(state.data.groups.len(), count);
    assert_eq!(state.data.unreadable_groups.len(), 1);

    // A healthy group rewritten badly leaves the list and becomes unreadable …
    let orders = (*state.data.groups[&("orders".to_owned(), "orders".to_owned())]).clone();
    update(
        &mut state,
        Action::Data(DataEvent::UnreadableGroups(Change::Applied(Box::new(bad("orders"))))),
    );
    assert_eq!(state.data.groups.len(), count - 1);
    assert_eq!(state.data.unreadable_groups.len(), 2);
    // … and comes back when it is fixed.
    update(&mut state, Action::Data(DataEvent::Groups(Change::Applied(Box::new(orders)))));
    assert_eq!(state.data.groups.len(), count);
    assert_eq!(
        state.data.unreadable_groups.keys().cloned().collect::<Vec<_>>(),
        [("orders".to_owned(), "broken".to_owned())]
    );
    update(
        &mut state,
        Action::Data(DataEvent::UnreadableGroups(Change::Deleted(Box::new(bad("broken"))))),
    );
    assert!(state.data.unreadable_groups.is_empty());
}
