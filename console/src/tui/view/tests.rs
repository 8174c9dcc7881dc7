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

/// The frame's characters, then its style runs: one line per run of cells on a row that share
/// a non-default style (`row col+len fg bg modifiers`), so a snapshot records colour and
/// `NO_COLOR` frames differ in it.
fn draw_styled(state: &State, width: u16, height: u16) -> String {
    use ratatui::style::{Color, Modifier};
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| render(state, frame)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let mut text = terminal.backend().to_string();
    text.push_str("-- style runs (row col+len fg bg modifiers) --\n");
    let describe = |cell: &ratatui::buffer::Cell| -> Option<String> {
        let mut parts = Vec::new();
        if cell.fg != Color::Reset {
            parts.push(format!("fg={:?}", cell.fg));
        }
        if cell.bg != Color::Reset {
            parts.push(format!("bg={:?}", cell.bg));
        }
        if cell.modifier != Modifier::empty() {
            parts.push(format!("{:?}", cell.modifier));
        }
        (!parts.is_empty()).then(|| parts.join(" "))
    };
    for row in 0..height {
        let mut run: Option<(u16, u16, String)> = None;
        for col in 0..=width {
            let here = (col < width).then(|| describe(&buffer[(col, row)])).flatten();
            match (&mut run, here) {
                (Some((_, len, style)), Some(here)) if *style == here => *len += 1,
                (current, here) => {
                    if let Some((start, len, style)) = current.take() {
                        text.push_str(&format!("{row:>2} {start:>3}+{len:<3} {style}\n"));
                    }
                    *current = here.map(|here| (col, 1, here));
                }
            }
        }
    }
    text
}

fn pressed(scenario: &str, intents: &[Intent]) -> State {
    let mut state = scenario_state(scenario);
    for intent in intents {
        update(&mut state, Action::Input(intent.clone()));
    }
    state
}

/// The views the scenario matrix below does not reach (a scrolled list, help, typing, the
/// frozen display) at 200x50, 120x36 and 80x24.
#[test]
fn snapshots_of_every_view() {
    let cases: Vec<(&str, &str, Vec<Intent>)> = vec![
        ("fleet_1000", "fleet-1000", vec![Intent::Down, Intent::Down, Intent::Down]),
        ("restore_pitr_divergent_scrolled", "pitr-divergent", {
            let mut intents = vec![Intent::Open, Intent::Tab(4)];
            intents.extend(std::iter::repeat_n(Intent::Down, 12));
            intents
        }),
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
        insta::assert_snapshot!(format!("{name}_200x50"), draw(&state, 200, 50));
        insta::assert_snapshot!(format!("{name}_120x36"), draw(&state, 120, 36));
        insta::assert_snapshot!(format!("{name}_80x24"), draw(&state, 80, 24));
    }
}

/// The fleet and every panel of every scenario (the group the fleet selects first) at
/// 200x50 and 120x36 in colour and at 80x24 under `NO_COLOR`, each with its style runs.
#[test]
fn snapshots_of_every_panel_of_every_scenario() {
    use super::super::state::DetailTab;
    for scenario in crate::scenarios::NAMES {
        let mut views: Vec<(String, Vec<Intent>)> = vec![("fleet".to_owned(), vec![])];
        for (index, tab) in DetailTab::ALL.iter().enumerate() {
            let name = tab.title().to_lowercase().replace(' ', "_");
            views.push((name, vec![Intent::Open, Intent::Tab(index)]));
        }
        for (view, intents) in views {
            let mut state = pressed(scenario, &intents);
            let name = format!("{}_{view}", scenario.replace('-', "_"));
            insta::assert_snapshot!(format!("{name}_200x50"), draw_styled(&state, 200, 50));
            insta::assert_snapshot!(format!("{name}_120x36"), draw_styled(&state, 120, 36));
            state.ui.no_color = true;
            let plain = draw_styled(&state, 80, 24);
            assert!(!plain.contains("fg="), "{name}: NO_COLOR drew a colour:\n{plain}");
            insta::assert_snapshot!(format!("{name}_80x24_no_color"), plain);
        }
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
    assert!(text.contains("reconnecting in 8s · stale since 2026-04-20T14:39:50Z"), "{text}");
    assert!(text.contains("STALE since 2026-04-20T14:39:50Z"), "{text}");
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
    let mut group = (*state.data.groups[&key]).clone();
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

/// Every GTID set and every command the verdict gives, as texts a screen must not cut.
fn long_texts(state: &State, group: &bloodraven_crd::MysqlFailoverGroup) -> Vec<String> {
    fn walk(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::String(text) => {
                let gtid_like = text.split(',').all(|part| {
                    let part = part.trim();
                    part.len() > 37
                        && part.as_bytes()[8] == b'-'
                        && part.contains(':')
                        && !part.contains(' ')
                });
                if gtid_like {
                    out.push(text.clone());
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
            serde_json::Value::Object(map) => map.values().for_each(|item| walk(item, out)),
            _ => {}
        }
    }
    let mut texts = Vec::new();
    walk(&serde_json::to_value(&group.status).unwrap(), &mut texts);
    for finding in &state.verdict(group).findings {
        texts.extend(finding.command.clone());
    }
    // The hold's acknowledgement annotation: one token, longer than an 80-column row.
    if let Some(hold) =
        group.status.as_ref().and_then(|status| status.planned_failover_hold.as_ref())
    {
        texts.push(crate::report::acknowledgement(hold));
    }
    texts
}

/// The long-text rule over every panel of every scenario at every size: where a row shows the
/// start of a GTID set or a command, the rest of it follows on that row, or the row ends
/// with `…` (the text scrolls horizontally); it never goes on on the next row.
#[test]
fn no_rendered_line_cuts_a_gtid_set_or_a_command() {
    use super::super::state::DetailTab;
    let mut checked = 0;
    for scenario in crate::scenarios::NAMES {
        for index in 0..DetailTab::ALL.len() {
            let state = pressed(scenario, &[Intent::Open, Intent::Tab(index)]);
            let super::super::state::Screen::Group { key, .. } = state.screen().clone() else {
                panic!("{scenario}: no group opened")
            };
            let group = (*state.data.groups[&key]).clone();
            let texts = long_texts(&state, &group);
            for (width, height) in [(80, 24), (120, 36), (200, 50)] {
                let frame = draw(&state, width, height);
                for row in frame.lines() {
                    let row = row.trim_matches('"');
                    let inner = row.trim_start_matches('│').trim_end_matches('│').trim_end();
                    for text in &texts {
                        let head: String = text.chars().take(12).collect();
                        let mut from = 0;
                        while let Some(at) = inner[from..].find(&head) {
                            let rest = &inner[from + at..];
                            checked += 1;
                            // Cut: the row ends inside the text (it would go on below).
                            let whole = texts.iter().any(|text| rest.starts_with(text.as_str()));
                            let scrolls =
                                rest.ends_with('…') && text.starts_with(rest.trim_end_matches('…'));
                            let cut = text.starts_with(rest) && rest != text;
                            assert!(
                                whole || scrolls || !cut,
                                "{scenario} tab {index} {width}x{height}: {text:?} is cut in\n{row}"
                            );
                            from += at + head.len();
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} long texts were seen: the test reads nothing");
}

/// The fleet title counts from the severities `update` keeps: a watch event that breaks a
/// group moves the count at once, and a deletion takes it out.
#[test]
fn the_fleet_counts_follow_each_group_change() {
    use super::super::action::Change;
    let mut state = scenario_state("healthy");
    assert!(draw(&state, 120, 36).contains("1 critical · 0 warning"));
    let key = ("orders".to_owned(), "orders".to_owned());
    let mut group = (*state.data.groups[&key]).clone();
    for site in &mut group.status.as_mut().unwrap().sites {
        site.state = Some(bloodraven_crd::group::SiteState::ReadOnly);
    }
    update(&mut state, Action::Data(DataEvent::Groups(Change::Applied(Box::new(group.clone())))));
    assert!(draw(&state, 120, 36).contains("2 critical · 0 warning"), "{}", draw(&state, 120, 36));
    update(&mut state, Action::Data(DataEvent::Groups(Change::Deleted(Box::new(group)))));
    let frame = draw(&state, 120, 36);
    assert!(frame.contains("(2 of 2) · 1 critical · 0 warning"), "{frame}");
}

/// The operator's leader Lease: a fresh one is named with its renewal age; one not renewed for
/// more than a minute is STALE on the overview and the planned-failover panel, and the verdict
/// of every group gets the critical `OperatorSilent` finding resting on its renewTime.
#[test]
fn a_stale_operator_lease_is_shown_and_judged() {
    use super::super::state::OperatorLease;
    use super::super::testing::lease_renewed_at;
    use bloodraven_facts::verdict::{Kind, Severity};

    let fresh = pressed("healthy", &[Intent::Open]);
    let screen = draw(&fresh, 120, 36);
    assert!(
        screen.contains("Operator: leader bloodraven-operator-5d8f7c9b6d-x2x7q, renewed 5s ago"),
        "{screen}"
    );
    let healthy_before = fresh.data.worst.clone();

    let mut stale = fresh.clone();
    let lease = lease_renewed_at("2026-04-20T14:33:00Z");
    update(&mut stale, Action::Data(DataEvent::OperatorLease(lease)));
    let screen = draw(&stale, 120, 36);
    assert!(
        screen.contains(
            "Operator: STALE: leader bloodraven-operator-5d8f7c9b6d-x2x7q last renewed 7m ago"
        ),
        "{screen}"
    );
    // Every group is now critical, for this reason.
    assert!(healthy_before.values().any(|worst| *worst != Some(Severity::Critical)));
    assert!(stale.data.worst.values().all(|worst| *worst == Some(Severity::Critical)));
    for group in stale.data.groups.values() {
        let verdict = stale.verdict(group);
        let finding = verdict.findings.iter().find(|finding| finding.kind == Kind::OperatorSilent);
        let finding = finding.unwrap_or_else(|| panic!("no OperatorSilent: {verdict:?}"));
        assert_eq!(finding.fact, "lease.spec.renewTime=2026-04-20T14:33:00Z");
    }
    insta::assert_snapshot!("healthy_overview_stale_lease_80x24", draw_styled(&stale, 80, 24));
    let mut planned = stale.clone();
    update(&mut planned, Action::Input(Intent::Tab(1)));
    insta::assert_snapshot!("healthy_planned_stale_lease_120x36", draw(&planned, 120, 36));

    // Not readable, or absent: said, and no finding (the verdict does not guess).
    for (lease, text) in [
        (
            OperatorLease::Unreadable {
                namespace: "bloodraven-system".to_owned(),
                name: "bloodraven-operator".to_owned(),
                error: "leases.coordination.k8s.io is forbidden".to_owned(),
            },
            "Operator: Lease bloodraven-system/bloodraven-operator not readable: leases.coordination.k8s.io is forbidden",
        ),
        (
            OperatorLease::Absent {
                namespace: "bloodraven-system".to_owned(),
                name: "bloodraven-operator".to_owned(),
            },
            "Operator: no leader Lease bloodraven-system/bloodraven-operator",
        ),
    ] {
        let mut state = stale.clone();
        update(&mut state, Action::Data(DataEvent::OperatorLease(lease)));
        let screen = draw(&state, 200, 50);
        assert!(screen.contains(text), "{screen}");
        assert_eq!(state.data.worst, healthy_before);
    }
}

/// At 80x24 the overview's conditions and events do not fit their boxes: they become one box
/// that scrolls (j/k), and its last line is reachable.
#[test]
fn the_overview_scrolls_at_80x24() {
    let mut state = pressed("planned-failover-waiting", &[Intent::Open]);
    let top = draw(&state, 80, 24);
    assert!(top.contains("Conditions and events"), "{top}");
    let lines = regex::Regex::new(r"lines (\d+)-(\d+) of (\d+)").unwrap();
    let total: u16 = lines
        .captures(&top)
        .and_then(|captures| captures[3].parse().ok())
        .unwrap_or_else(|| panic!("no line count in the title:\n{top}"));
    for _ in 0..total {
        update(&mut state, Action::Input(Intent::Down));
    }
    let bottom = draw(&state, 80, 24);
    assert!(bottom.contains(&format!("of {total} (j/k)")), "{bottom}");
    assert!(bottom.contains(&format!("-{total} of {total}")), "the end is reachable:\n{bottom}");
    assert_ne!(top, bottom);
    insta::assert_snapshot!("planned_failover_waiting_overview_scrolled_80x24", bottom);
}
