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
