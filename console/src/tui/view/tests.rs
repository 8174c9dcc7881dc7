use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::super::action::{Action, DataEvent, Intent};
use super::super::state::{ConnectionStatus, SourceKind, State};
use super::super::testing::scenario_state;
use super::super::update::update;
use super::render;

fn draw(state: &State, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| render(state, frame)).unwrap();
    terminal.backend().to_string()
}

fn pressed(scenario: &str, intents: &[Intent]) -> State {
    let mut state = scenario_state(scenario);
    for intent in intents {
        update(&mut state, Action::Input(intent.clone()));
    }
    state
}

/// Every view at 120x36 and 80x24.
#[test]
fn snapshots_of_every_view() {
    let open = |tab: usize| vec![Intent::Open, Intent::Tab(tab)];
    let cases: Vec<(&str, &str, Vec<Intent>)> = vec![
        ("fleet_healthy", "healthy", vec![]),
        ("fleet_hold", "hold-standing", vec![]),
        ("fleet_1000", "fleet-1000", vec![Intent::Down, Intent::Down, Intent::Down]),
        ("overview_hold", "hold-standing", open(0)),
        ("planned_waiting", "planned-failover-waiting", open(1)),
        ("planned_failed", "hold-standing", open(1)),
        ("hold_standing", "hold-standing", open(2)),
        ("hold_none", "healthy", open(2)),
        ("reclones_draining", "reclone-draining", open(3)),
        ("reclones_held", "reclone-held", open(3)),
        ("restore_in_place_failed", "reclone-held", open(4)),
        ("restore_pitr_divergent", "pitr-divergent", open(4)),
        ("restore_pitr_divergent_scrolled", "pitr-divergent", {
            let mut intents = open(4);
            intents.extend(std::iter::repeat_n(Intent::Down, 12));
            intents
        }),
        ("archive_gap", "archive-gap", open(5)),
        ("backups_healthy", "healthy", open(6)),
        ("help_fleet", "healthy", vec![Intent::ToggleHelp]),
        ("help_detail", "healthy", vec![Intent::Open, Intent::ToggleHelp]),
        (
            "filter_typing",
            "healthy",
            vec![Intent::StartFilter, Intent::Type('o'), Intent::Type('r')],
        ),
        (
            "command_typing",
            "healthy",
            vec![Intent::StartCommand, Intent::Type('n'), Intent::Type('s')],
        ),
        ("frozen", "healthy", vec![Intent::ToggleFreeze]),
    ];
    for (name, scenario, intents) in cases {
        let state = pressed(scenario, &intents);
        insta::assert_snapshot!(format!("{name}_120x36"), draw(&state, 120, 36));
        insta::assert_snapshot!(format!("{name}_80x24"), draw(&state, 80, 24));
    }
}

/// The archive coverage panel with the archive `bloodraven lab` lays read (fixed `now`).
#[test]
fn snapshots_of_the_archive_coverage() {
    use crate::archive::ArchiveOutcome;
    use crate::archive::tests::lab_summary;

    let cases = [
        ("coverage_gap", "archive-gap"),
        ("coverage_fork", "pitr-divergent"),
        ("coverage_healthy", "healthy"),
    ];
    for (name, scenario) in cases {
        let mut state = pressed(scenario, &[Intent::Open, Intent::Tab(5)]);
        let super::super::state::Screen::Group { key, .. } = state.screen().clone() else {
            panic!()
        };
        let outcome = ArchiveOutcome::Covered(Box::new(lab_summary(scenario, &key)));
        let at = state.now;
        update(&mut state, Action::Data(DataEvent::Archive { key, outcome, at }));
        let wide = draw(&state, 120, 36);
        assert!(wide.contains("Archive coverage"), "{wide}");
        insta::assert_snapshot!(format!("{name}_120x36"), wide);
        insta::assert_snapshot!(format!("{name}_80x24"), draw(&state, 80, 24));
        // Scrolled to the windows.
        for _ in 0..8 {
            update(&mut state, Action::Input(Intent::Down));
        }
        insta::assert_snapshot!(format!("{name}_scrolled_80x24"), draw(&state, 80, 24));
    }
}

#[test]
fn a_refused_archive_names_the_token_meaning_and_remedy() {
    use crate::archive::ArchiveOutcome;

    let mut state = pressed("healthy", &[Intent::Open, Intent::Tab(5)]);
    let super::super::state::Screen::Group { key, .. } = state.screen().clone() else { panic!() };
    let outcome = ArchiveOutcome::Refused {
        token: "PITRArchiveNotFound".to_owned(),
        message: "no archive.json and no manifests under binlogs".to_owned(),
        remedy: "check the archive profile".to_owned(),
    };
    let at = state.now;
    update(&mut state, Action::Data(DataEvent::Archive { key, outcome, at }));
    let text = draw(&state, 120, 36);
    assert!(text.contains("REFUSED PITRArchiveNotFound"), "{text}");
    assert!(text.contains("remedy:"), "{text}");
    assert!(text.contains("archive read 0s ago"), "{text}");
    insta::assert_snapshot!("coverage_refused_120x36", text);
}

#[test]
fn stale_data_is_marked() {
    let mut state = scenario_state("healthy");
    let since = "2026-04-20T14:39:50Z".parse().unwrap();
    let retry_at = "2026-04-20T14:40:08Z".parse().unwrap();
    let status =
        ConnectionStatus::Reconnecting { since, retry_at, error: "connection refused".to_owned() };
    update(
        &mut state,
        Action::Data(DataEvent::Connection { source: SourceKind::Groups, status, at: since }),
    );
    let text = draw(&state, 120, 36);
    assert!(text.contains("reconnecting in 8s · stale since 14:39:50Z"), "{text}");
    assert!(text.contains("STALE since 14:39:50Z"), "{text}");
    insta::assert_snapshot!("stale_120x36", text);
}

#[test]
fn too_small_a_terminal_says_so() {
    let state = scenario_state("healthy");
    let text = draw(&state, 60, 20);
    assert!(text.contains("needs at least 80x24"), "{text}");
}

#[test]
fn the_hold_view_names_the_run_and_the_ambiguous_sites() {
    let state = pressed("hold-standing", &[Intent::Open, Intent::Tab(2)]);
    for (width, height) in [(120, 36), (80, 24)] {
        let text = draw(&state, width, height);
        assert!(text.contains("6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10"), "{text}");
        assert!(text.contains("iad, pdx"), "{text}");
    }
}

#[test]
fn the_waiting_run_counts_down() {
    let mut state = pressed("planned-failover-waiting", &[Intent::Open, Intent::Tab(1)]);
    assert!(draw(&state, 120, 36).contains("in 3m30s"));
    update(&mut state, Action::Tick("2026-04-20T14:41:00Z".parse().unwrap()));
    assert!(draw(&state, 120, 36).contains("in 2m30s"));
}

#[test]
fn the_fleet_lists_an_unreadable_group_with_its_path_and_error() {
    let mut state = scenario_state("healthy");
    let unreadable = crate::decode::Unreadable {
        kind: "MysqlFailoverGroup".to_owned(),
        namespace: "orders".to_owned(),
        name: "broken".to_owned(),
        path: "spec.sites".to_owned(),
        error: "invalid type: string \"not a list\", expected a sequence".to_owned(),
    };
    update(
        &mut state,
        Action::Data(DataEvent::UnreadableGroups(super::super::action::Change::Restarted(vec![
            unreadable,
        ]))),
    );
    let screen = draw(&state, 120, 36);
    assert!(screen.contains("Failover groups (3 of 3, 1 unreadable)"), "{screen}");
    assert!(screen.contains("ledger"), "the healthy groups are still shown: {screen}");
    assert!(
        screen.contains(
            "orders/broken at spec.sites: invalid type: string \"not a list\", expected a sequence"
        ),
        "{screen}"
    );
}

#[test]
fn an_unparsable_gtid_set_is_said_not_counted() {
    let mut state = scenario_state("hold-standing");
    let key = ("orders".to_owned(), "orders".to_owned());
    let mut group = state.data.groups[&key].clone();
    let status = group.status.as_mut().unwrap();
    let site = status.sites.iter_mut().find(|site| site.name == "fra").unwrap();
    site.gtid_executed = Some("not-a-uuid:1-5".to_owned());
    // Overlapping intervals count once (a hand count says 9182736).
    let site = status.sites.iter_mut().find(|site| site.name == "iad").unwrap();
    site.gtid_executed = Some("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9182731:5-9".to_owned());
    update(
        &mut state,
        Action::Data(DataEvent::Groups(super::super::action::Change::Applied(Box::new(group)))),
    );
    for intent in [Intent::Open, Intent::Tab(0)] {
        update(&mut state, Action::Input(intent));
    }
    let screen = draw(&state, 120, 36);
    let fra = screen.lines().find(|line| line.contains("│fra ")).unwrap();
    // GTIDS and Δ PRIMARY both say the text is not a GTID set; the other sites still count.
    assert_eq!(fra.matches(crate::summary::UNPARSABLE).count(), 2, "{fra}");
    let iad = screen.lines().find(|line| line.contains("│iad ")).unwrap();
    assert!(iad.contains(" 9182731 "), "{iad}");
    assert!(iad.contains(" +6 "), "{iad}");
}

#[test]
fn a_refused_request_is_shown_in_the_status_line() {
    let mut state = scenario_state("healthy");
    let refused = crate::client::WriteRefused {
        method: "POST".to_owned(),
        path: "/api/v1/namespaces/orders/configmaps".to_owned(),
    };
    update(&mut state, Action::Refused(refused.to_string()));
    let screen = draw(&state, 120, 36);
    assert!(
        screen.contains(
            "the console is read-only: refused POST /api/v1/namespaces/orders/configmaps"
        ),
        "{screen}"
    );
}

/// The long-text rule: a command is never wrapped or cut. Its row starts with `$ ` and is the
/// only row of the command; every view is a piece of it, and scrolling right with `>`
/// reaches its end.
#[test]
fn no_rendered_line_cuts_a_command() {
    for (scenario, tab) in
        [("hold-standing", 2), ("reclone-held", 3), ("planned-failover-waiting", 1)]
    {
        let state = pressed(scenario, &[Intent::Open, Intent::Tab(tab)]);
        let group = state.data.groups.values().next().unwrap();
        let command = state.verdict(group).headline().unwrap().command.clone().unwrap();
        for (width, height) in [(80, 24), (120, 36), (200, 50)] {
            let mut state = state.clone();
            let mut last = String::new();
            for _ in 0..20 {
                let frame = draw(&state, width, height);
                let rows: Vec<&str> =
                    frame.lines().filter(|row| row.contains("$ ") || row.contains("│…")).collect();
                let row = rows
                    .iter()
                    .find(|row| row.contains("$ ") || row.trim_start_matches('"').starts_with("│…"))
                    .unwrap_or_else(|| {
                        panic!("{scenario} {width}x{height}: no command row in\n{frame}")
                    });
                let inner =
                    row.trim_matches('"').trim_start_matches('│').trim_end_matches('│').trim_end();
                let text = inner.trim_start_matches('…').trim_end_matches('…');
                assert!(
                    format!("$ {command}").contains(text),
                    "{scenario} {width}x{height}: {inner:?} is not a piece of the command"
                );
                // The row after the command is the box's border: nothing wrapped onto it.
                let next = frame.lines().skip_while(|line| line != row).nth(1).unwrap();
                assert!(
                    next.contains('└'),
                    "{scenario} {width}x{height}: the command wrapped: {next}"
                );
                last = text.to_owned();
                if !inner.ends_with('…') {
                    break;
                }
                update(&mut state, Action::Input(Intent::ScrollRight));
            }
            assert!(
                command.ends_with(&last) || format!("$ {command}") == last,
                "{scenario} {width}x{height}: never showed the end of {command}"
            );
        }
    }
}

#[test]
fn problems_only_and_the_filter_over_every_column() {
    let visible = |state: &State| -> Vec<String> {
        state.visible_groups().iter().map(|group| group.metadata.name.clone().unwrap()).collect()
    };
    let state = pressed("healthy", &[Intent::ToggleProblems]);
    assert_eq!(visible(&state), ["carts"]);
    let state = pressed("healthy", &[Intent::ToggleProblems, Intent::ToggleProblems]);
    assert_eq!(visible(&state).len(), 3);
    let filter = |scenario: &str, text: &str| {
        let mut intents = vec![Intent::StartFilter];
        intents.extend(text.chars().map(Intent::Type));
        intents.push(Intent::Submit);
        visible(&pressed(scenario, &intents))
    };
    assert_eq!(filter("hold-standing", "held"), ["orders"]);
    assert_eq!(filter("hold-standing", "False"), ["orders"]);
    assert_eq!(filter("healthy", "critical"), ["carts"]);
    assert_eq!(filter("healthy", "Verified").len(), 3);
    assert_eq!(filter("archive-gap", "NotReady"), ["orders"]);
    // An invalid regex hides nothing and says why; esc clears an applied filter.
    assert_eq!(filter("healthy", "(").len(), 3);
    let mut intents = vec![Intent::StartFilter, Intent::Type('z'), Intent::Submit];
    let state = pressed("healthy", &intents);
    assert!(
        draw(&state, 80, 24)
            .contains("No group matches in all namespaces; the filter /z/ (esc clears it)")
    );
    intents.push(Intent::ClearFilter);
    assert_eq!(visible(&pressed("healthy", &intents)).len(), 3);
}

#[test]
fn view_from_the_fleet_opens_the_selected_group_and_h_l_move_panels() {
    let mut intents = vec![Intent::Down, Intent::StartCommand];
    intents.extend("view hold".chars().map(Intent::Type));
    intents.push(Intent::Submit);
    let state = pressed("healthy", &intents);
    let selected = state.visible_groups()[1].metadata.name.clone().unwrap();
    assert!(draw(&state, 120, 36).contains(&format!("orders/{selected} · Hold")));
    let key = |code| crossterm::event::KeyEvent::new(code, crossterm::event::KeyModifiers::NONE);
    use super::super::keymap::intent;
    use super::super::state::Mode;
    use crossterm::event::KeyCode;
    assert_eq!(intent(Mode::Detail, key(KeyCode::Char('h'))), Some(Intent::PreviousTab));
    assert_eq!(intent(Mode::Detail, key(KeyCode::Char('l'))), Some(Intent::NextTab));
    assert_eq!(intent(Mode::Fleet, key(KeyCode::PageDown)), Some(Intent::PageDown));
    assert_eq!(intent(Mode::Fleet, key(KeyCode::End)), Some(Intent::Bottom));
}
