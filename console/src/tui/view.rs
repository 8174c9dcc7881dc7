//! `view`: the state in, a frame out. No IO, no clock (`now` comes from the state).

use bloodraven_crd::catalog::Kind;
use bloodraven_crd::group::PlannedFailoverStatus;
use bloodraven_crd::{ConditionType, MysqlFailoverGroup};
use jiff::Timestamp;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Clear, Paragraph, Row, Table, TableState, Tabs, Wrap};

use super::keymap;
use super::state::{
    ArchiveState, ConnectionStatus, DetailTab, FLEET_COLUMNS, Key, Mode, Screen, SourceKind, State,
    fleet_cells,
};
use crate::archive::{ArchiveOutcome, ArchiveSummary, FileFlag, SiteTimeline};
use crate::report;
use crate::summary::{self, NONE};
use bloodraven_facts::verdict::Severity;

/// The smallest terminal the layout is made for.
pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

fn style(state: &State, color: Color) -> Style {
    if state.ui.no_color { Style::default() } else { Style::default().fg(color) }
}

/// A verdict's colour: red critical, yellow warning, cyan info, none when healthy.
fn severity_style(state: &State, worst: Option<Severity>) -> Style {
    match worst {
        Some(Severity::Critical) => style(state, Color::Red),
        Some(Severity::Warning) => style(state, Color::Yellow),
        Some(Severity::Info) => style(state, Color::Cyan),
        None => Style::default(),
    }
}

fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

/// Renders the whole screen.
pub fn render(state: &State, frame: &mut Frame<'_>) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let text = format!(
            "bloodraven needs at least {MIN_WIDTH}x{MIN_HEIGHT}; this terminal is {}x{}",
            area.width, area.height
        );
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
        return;
    }
    let [header, body, line, hints] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    render_header(state, frame, header);
    match state.screen() {
        Screen::Fleet => render_fleet(state, frame, body),
        Screen::Group { key, tab } => render_group(state, frame, body, key, *tab),
    }
    render_line(state, frame, line);
    let mode = if state.ui.mode == Mode::Help { Mode::Help } else { state.ui.mode };
    frame.render_widget(
        Paragraph::new(keymap::hints(mode)).style(style(state, Color::DarkGray)),
        hints,
    );
    if state.ui.mode == Mode::Help {
        render_help(state, frame, body);
    }
}

/// The overall link: the worst source wins.
pub fn connection_text(state: &State) -> (String, bool) {
    let mut connecting = false;
    let mut worst: Option<(Timestamp, Timestamp)> = None;
    for kind in SourceKind::ALL {
        match state.source(kind).status {
            ConnectionStatus::Connected => {}
            ConnectionStatus::Connecting => connecting = true,
            ConnectionStatus::Reconnecting { since, retry_at, .. } => {
                worst = Some(match worst {
                    Some((earliest, retry)) => (earliest.min(since), retry.max(retry_at)),
                    None => (since, retry_at),
                })
            }
        }
    }
    match worst {
        Some((since, retry_at)) => (
            format!(
                "reconnecting in {}s · stale since {}",
                (retry_at.as_second() - state.now.as_second()).max(0),
                since.strftime("%H:%M:%SZ")
            ),
            true,
        ),
        None if connecting => ("connecting".to_owned(), false),
        None => ("connected".to_owned(), false),
    }
}

fn render_header(state: &State, frame: &mut Frame<'_>, area: Rect) {
    let (connection, bad) = connection_text(state);
    let mut spans = vec![
        Span::styled(" bloodraven ", bold()),
        Span::raw(format!("│ ctx {} │ ns {} │ ", state.context, state.scope)),
        Span::styled(connection, style(state, if bad { Color::Red } else { Color::Green })),
    ];
    if let Some(queued) = &state.frozen {
        spans.push(Span::styled(
            format!(" │ FROZEN ({} changes queued)", queued.len()),
            style(state, Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    spans.push(Span::raw(format!(" │ {}", state.now.strftime("%Y-%m-%d %H:%M:%SZ"))));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn render_line(state: &State, frame: &mut Frame<'_>, area: Rect) {
    let text = match state.ui.mode {
        Mode::Filter => format!("/{}▏", state.ui.filter),
        Mode::Command => format!(":{}▏", state.ui.command),
        _ => match (&state.ui.message, &state.ui.filter_error, state.ui.filter.is_empty()) {
            (Some(message), _, _) => message.clone(),
            (None, Some(error), _) => {
                format!("filter /{}/ is not a valid regex: {error}", state.ui.filter)
            }
            (None, None, false) => format!("filter: /{}/", state.ui.filter),
            (None, None, true) => String::new(),
        },
    };
    frame.render_widget(Paragraph::new(text), area);
}

/// `data 5s old` for a source, with `STALE` when its watch is down.
pub fn data_age(state: &State, kind: SourceKind) -> String {
    let source = state.source(kind);
    let age = source.updated.map_or_else(
        || "no data yet".to_owned(),
        |updated| format!("data {} old", summary::age(state.now, updated)),
    );
    match source.status {
        ConnectionStatus::Reconnecting { since, .. } => {
            format!("{age} · STALE since {}", since.strftime("%H:%M:%SZ"))
        }
        ConnectionStatus::Connecting => format!("{age} · connecting"),
        ConnectionStatus::Connected => age,
    }
}

fn titled<'a>(state: &State, title: String, kind: SourceKind) -> Block<'a> {
    let stale = matches!(state.source(kind).status, ConnectionStatus::Reconnecting { .. });
    Block::bordered().title(Line::from(Span::styled(format!(" {title} "), bold()))).title_bottom(
        Line::from(Span::styled(
            format!(" {} ", data_age(state, kind)),
            style(state, if stale { Color::Red } else { Color::DarkGray }),
        )),
    )
}

/// How many unreadable groups the fleet lists below the table (the count says the rest).
const UNREADABLE_LINES: usize = 5;

fn render_fleet(state: &State, frame: &mut Frame<'_>, area: Rect) {
    let unreadable = &state.data.unreadable_groups;
    let area = if unreadable.is_empty() {
        area
    } else {
        let lines = unreadable.len().min(UNREADABLE_LINES) + 2;
        let [table, list] = Layout::vertical([
            Constraint::Min(4),
            Constraint::Length(u16::try_from(lines).unwrap_or(7)),
        ])
        .areas(area);
        render_unreadable(state, frame, list);
        table
    };
    let groups = state.visible_groups();
    // One verdict per group: the title counts every group, the rows show theirs.
    let (backups, verifications) = state.related();
    let judge =
        |group: &MysqlFailoverGroup| crate::verdict::of(group, &backups, &verifications, state.now);
    let counts = crate::verdict::fleet_counts(
        state.data.groups.values().map(judge).collect::<Vec<_>>().iter(),
    );
    let inner_width = area.width.saturating_sub(2);
    let mut shown = FLEET_COLUMNS.len();
    while shown > 1 {
        let needed: u16 = FLEET_COLUMNS[..shown].iter().map(|(_, width)| width + 1).sum();
        // Column gaps plus the highlight symbol: one cell per column.
        if needed <= inner_width {
            break;
        }
        shown -= 1;
    }
    let header =
        Row::new(FLEET_COLUMNS[..shown].iter().map(|(title, _)| Cell::from(*title))).style(bold());
    // Only the rows that fit are built: a 1,000-group list costs what a screenful does.
    let window = usize::from(area.height.saturating_sub(3)).max(1);
    let offset = state.ui.selected.saturating_sub(window - 1).min(groups.len().saturating_sub(1));
    let rows = groups.iter().skip(offset).take(window).map(|group| {
        let verdict = judge(group);
        let cells = fleet_cells(group, &verdict, state.now);
        // Coloured by the verdict; the VERDICT cell's marker keeps the meaning without colour.
        let row_style = severity_style(state, verdict.worst());
        Row::new(cells.into_iter().take(shown).map(Cell::from)).style(row_style)
    });
    let mut widths: Vec<Constraint> =
        FLEET_COLUMNS[..shown].iter().map(|(_, width)| Constraint::Length(*width)).collect();
    if let Some(last) = widths.last_mut() {
        *last = Constraint::Min(FLEET_COLUMNS[shown - 1].1);
    }
    let title = format!(
        "Failover groups ({} of {}{}) · {} critical · {} warning · {} info{} · sort {}{}",
        groups.len(),
        state.data.groups.len(),
        if unreadable.is_empty() {
            String::new()
        } else {
            format!(", {} unreadable", unreadable.len())
        },
        counts[0],
        counts[1],
        counts[2],
        if state.ui.problems_only { " · problems only" } else { "" },
        state.ui.sort.title(),
        if state.ui.descending { " ↓" } else { " ↑" }
    );
    if groups.is_empty() && !state.data.groups.is_empty() {
        // Say why nothing is listed: the filter, the problems toggle, the namespace.
        let mut why = vec![format!("No group matches in {}", state.scope)];
        if !state.ui.filter.is_empty() {
            why.push(format!("the filter /{}/ (esc clears it)", state.ui.filter));
        }
        if state.ui.problems_only {
            why.push("problems only (p shows all)".to_owned());
        }
        let text = why.join("; ");
        frame.render_widget(
            Paragraph::new(text).wrap(Wrap { trim: true }).block(titled(
                state,
                title,
                SourceKind::Groups,
            )),
            area,
        );
        return;
    }
    let table = Table::new(rows, widths)
        .header(header)
        .block(titled(state, title, SourceKind::Groups))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .highlight_symbol("▶");
    let mut table_state = TableState::default();
    if !groups.is_empty() {
        table_state.select(Some(state.ui.selected.saturating_sub(offset)));
    }
    frame.render_stateful_widget(table, area, &mut table_state);
}

/// The groups that did not decode: name, path and error, one line each.
fn render_unreadable(state: &State, frame: &mut Frame<'_>, area: Rect) {
    let objects = &state.data.unreadable_groups;
    let lines: Vec<Line<'static>> = objects
        .values()
        .take(UNREADABLE_LINES)
        .map(|object| {
            Line::from(vec![
                Span::styled(
                    format!("{}/{}", object.namespace, object.name),
                    style(state, Color::Red).add_modifier(Modifier::BOLD),
                ),
                Span::raw(format!(" at {}: {}", object.path, object.error)),
            ])
        })
        .collect();
    let more = objects.len().saturating_sub(UNREADABLE_LINES);
    let title = if more > 0 {
        format!(" Unreadable groups ({}, {more} not shown; see `status -A`) ", objects.len())
    } else {
        format!(" Unreadable groups ({}): they do not decode ", objects.len())
    };
    let block = Block::bordered().title(Line::from(Span::styled(
        title,
        style(state, Color::Red).add_modifier(Modifier::BOLD),
    )));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn render_group(state: &State, frame: &mut Frame<'_>, area: Rect, key: &Key, tab: DetailTab) {
    let [tabs_area, panel] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    let titles = DetailTab::ALL
        .iter()
        .enumerate()
        .map(|(index, tab)| format!("{} {}", index + 1, tab.title()));
    frame.render_widget(
        Tabs::new(titles).select(tab.index()).highlight_style(
            style(state, Color::Cyan).add_modifier(Modifier::BOLD | Modifier::REVERSED),
        ),
        tabs_area,
    );
    let Some(group) = state.group(key) else {
        let block = titled(state, format!("{}/{}", key.0, key.1), SourceKind::Groups);
        frame.render_widget(
            Paragraph::new("This group is gone (deleted, or not in the watched namespaces).")
                .block(block),
            panel,
        );
        return;
    };
    let title = format!("{}/{} · {}", key.0, key.1, tab.title());
    let panel = render_next_action(state, frame, panel, group);
    match tab {
        DetailTab::Overview => render_overview(state, frame, panel, group, title),
        DetailTab::PlannedFailover => {
            let lines = planned_failover_lines(state, group);
            render_lines(state, frame, panel, title, SourceKind::Groups, lines);
        }
        DetailTab::Hold => {
            render_lines(state, frame, panel, title, SourceKind::Groups, hold_lines(state, group))
        }
        DetailTab::Reclones => {
            let lines =
                match group.status.as_ref().and_then(|status| status.restore_reclones.as_ref()) {
                    Some(queue) => pairs(report::reclone_block(queue, state.now)),
                    None => vec![Line::from(
                        "No reclone queue: no full-instance restore is waiting on its peers.",
                    )],
                };
            render_lines(state, frame, panel, title, SourceKind::Groups, lines);
        }
        DetailTab::Restore => render_lines(
            state,
            frame,
            panel,
            title,
            SourceKind::Groups,
            restore_lines(state, group),
        ),
        DetailTab::Archive => {
            let [status_area, coverage_area] =
                Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)])
                    .areas(panel);
            render_archive(state, frame, status_area, group, title);
            render_coverage(state, frame, coverage_area, key);
        }
        DetailTab::Backups => render_backups(state, frame, panel, key, title),
    }
}

/// The next-action box above every panel of a group with a problem: the worst finding's
/// cause, then what to do, then the command on a line of its own. Returns the area left for
/// the panel.
fn render_next_action(
    state: &State,
    frame: &mut Frame<'_>,
    area: Rect,
    group: &MysqlFailoverGroup,
) -> Rect {
    let verdict = state.verdict(group);
    let Some(finding) = verdict.problems().next() else { return area };
    let marker = finding.severity.marker();
    let prose = Line::from(vec![
        Span::styled(
            format!("{marker} NEXT ({} more) ", verdict.problems().count() - 1),
            severity_style(state, Some(finding.severity)).add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!("{}: {}", finding.cause, finding.action)),
    ]);
    let inner = area.width.saturating_sub(2).max(1);
    let command_rows = u16::from(finding.command.is_some());
    let prose_rows = u16::try_from(prose.width())
        .unwrap_or(u16::MAX)
        .div_ceil(inner)
        .max(1)
        .min((area.height / 2).saturating_sub(2 + command_rows).max(1));
    let [next, rest] =
        Layout::vertical([Constraint::Length(prose_rows + command_rows + 2), Constraint::Min(1)])
            .areas(area);
    let block = Block::bordered().border_style(severity_style(state, Some(finding.severity)));
    let body = block.inner(next);
    frame.render_widget(block, next);
    let [prose_area, command_area] =
        Layout::vertical([Constraint::Length(prose_rows), Constraint::Length(command_rows)])
            .areas(body);
    frame.render_widget(Paragraph::new(prose).wrap(Wrap { trim: false }), prose_area);
    if let Some(command) = &finding.command {
        frame.render_widget(command_line(state, command, command_area.width), command_area);
    }
    rest
}

/// The long-text rule: a command (or GTID set) is never wrapped or cut. It stays on one line
/// and scrolls horizontally (`<` / `>`, [`super::state::Ui::hscroll`]); `…` at either end
/// says there is more that way.
pub fn command_line(state: &State, command: &str, width: u16) -> Paragraph<'static> {
    let text = format!("$ {command}");
    let total = text.chars().count();
    let width = usize::from(width).max(2);
    let max_offset = total.saturating_sub(width - 1);
    let offset = usize::from(state.ui.hscroll).min(max_offset);
    let mut shown: String = text.chars().skip(offset).take(width).collect();
    let more_right = offset + width < total;
    if more_right {
        shown = shown.chars().take(width - 1).collect();
        shown.push('…');
    }
    if offset > 0 {
        shown = format!("…{}", shown.chars().skip(1).collect::<String>());
    }
    Paragraph::new(Line::from(Span::styled(shown, bold())))
}

fn pairs(lines: Vec<(String, String)>) -> Vec<Line<'static>> {
    let width = lines.iter().map(|(label, _)| label.chars().count()).max().unwrap_or(0);
    lines
        .into_iter()
        .map(|(label, value)| {
            let label = if label.is_empty() { String::new() } else { format!("{label}:") };
            Line::from(vec![
                Span::styled(format!("{label:width$}  ", width = width + 1), bold()),
                Span::raw(value),
            ])
        })
        .collect()
}

fn render_lines(
    state: &State,
    frame: &mut Frame<'_>,
    area: Rect,
    title: String,
    kind: SourceKind,
    lines: Vec<Line<'static>>,
) {
    let paragraph = Paragraph::new(lines).wrap(Wrap { trim: false });
    let total =
        u16::try_from(paragraph.line_count(area.width.saturating_sub(2))).unwrap_or(u16::MAX);
    let visible = area.height.saturating_sub(2);
    let scroll = state.ui.scroll.min(total.saturating_sub(visible));
    let mut block = titled(state, title, kind);
    if total > visible {
        block = block.title_top(
            Line::from(format!(
                " lines {}-{} of {total} (j/k) ",
                scroll + 1,
                (scroll + visible).min(total)
            ))
            .right_aligned(),
        );
    }
    frame.render_widget(paragraph.scroll((scroll, 0)).block(block), area);
}

/// The phases of a run with the time each was reached, as far as the record shows.
pub fn timeline(record: &PlannedFailoverStatus) -> Vec<(&'static str, Option<Timestamp>)> {
    let time = |time: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        time.map(|time| time.0)
    };
    let mut steps = vec![
        ("Admitting", time(record.start_time.as_ref())),
        ("Fencing", time(record.fence.as_ref().and_then(|fence| fence.intent_time.as_ref()))),
        ("Draining", time(record.drain.as_ref().and_then(|drain| drain.start_time.as_ref()))),
        ("WaitingForLag", time(record.lag_wait.as_ref().and_then(|wait| wait.start_time.as_ref()))),
    ];
    if let Some(dragonfly) = &record.dragonfly {
        steps.push(("WaitingForDragonflySync", time(dragonfly.sync_wait_start_time.as_ref())));
        steps.push((
            "PromotingDragonfly",
            time(dragonfly.takeover.as_ref().and_then(|takeover| takeover.intent_time.as_ref())),
        ));
    }
    steps.push(("Promoting", time(record.promotion.as_ref().and_then(|p| p.intent_time.as_ref()))));
    steps.push(("Publishing", time(record.dns.as_ref().and_then(|dns| dns.attempt_time.as_ref()))));
    if let Some(rollback) = &record.rollback {
        steps.push(("RollingBack", time(rollback.intent_time.as_ref())));
    }
    let end = time(record.result.as_ref().and_then(|result| result.completion_time.as_ref()));
    match record.phase.as_ref().map(|phase| phase.as_str()) {
        Some("Failed") => steps.push(("Failed", end)),
        _ => steps.push(("Succeeded", end)),
    }
    steps
}

fn planned_failover_lines(state: &State, group: &MysqlFailoverGroup) -> Vec<Line<'static>> {
    let Some(record) = group.status.as_ref().and_then(|status| status.planned_failover.as_ref())
    else {
        return vec![Line::from("No planned failover recorded for this group.")];
    };
    let current = record.phase.as_ref().map(|phase| phase.as_str().to_owned()).unwrap_or_default();
    let mut lines = vec![Line::from(Span::styled("Timeline", bold()))];
    for (phase, at) in timeline(record) {
        let marker = if phase == current {
            "▶"
        } else if at.is_some() {
            "✓"
        } else {
            "·"
        };
        let when = at.map_or_else(
            || NONE.to_owned(),
            |at| format!("{} ({} ago)", at.strftime("%H:%M:%SZ"), summary::age(state.now, at)),
        );
        let line_style = if phase == current {
            style(state, Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(format!(" {marker} {phase:<24} {when}"), line_style)));
    }
    lines.push(Line::from(""));
    lines.extend(pairs(report::planned_failover_block(record, state.now)));
    lines
}

fn hold_lines(state: &State, group: &MysqlFailoverGroup) -> Vec<Line<'static>> {
    let status = group.status.clone().unwrap_or_default();
    let mut lines = Vec::new();
    match &status.planned_failover_hold {
        Some(hold) => {
            lines.push(Line::from(Span::styled(
                "AUTOMATIC FAILOVER IS HELD",
                style(state, Color::Magenta).add_modifier(Modifier::BOLD),
            )));
            lines.extend(pairs(report::hold_block(hold, state.now)));
            lines.push(Line::from("(display only: this console writes nothing)"));
        }
        None => lines.push(Line::from(
            "No automation hold recorded (status.plannedFailoverHold is absent).",
        )),
    }
    if let Some(condition) = status.condition(&ConditionType::AutomaticFailoverHeld) {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            format!(
                "AutomaticFailoverHeld={} ({})",
                condition.status.as_str(),
                condition.reason.as_ref().map_or(NONE, |reason| reason.as_str())
            ),
            bold(),
        )));
        if let Some(message) = &condition.message {
            lines.push(Line::from(message.clone()));
        }
    }
    lines
}

fn restore_lines(state: &State, group: &MysqlFailoverGroup) -> Vec<Line<'static>> {
    let status = group.status.clone().unwrap_or_default();
    let mut lines = Vec::new();
    if let Some(restore) = &status.restore_in_place {
        lines.push(Line::from(Span::styled("Restore in place", bold())));
        lines.extend(pairs(report::restore_in_place_block(restore, state.now)));
        lines.push(Line::from(""));
    }
    if let Some(restore) = &status.restore {
        lines.push(Line::from(Span::styled("Initial restore (initFromBackup)", bold())));
        lines.extend(pairs(report::restore_block(restore, state.now)));
    }
    if lines.is_empty() {
        lines.push(Line::from("No restore recorded for this group."));
    }
    lines
}

fn render_overview(
    state: &State,
    frame: &mut Frame<'_>,
    area: Rect,
    group: &MysqlFailoverGroup,
    title: String,
) {
    let status = group.status.clone().unwrap_or_default();
    let site_rows = u16::try_from(group.spec.sites.len()).unwrap_or(16);
    let [sites_area, conditions_area, events_area] = Layout::vertical([
        Constraint::Length(site_rows + 3),
        Constraint::Min(4),
        Constraint::Min(4),
    ])
    .areas(area);
    let primary = summary::GtidText::of(
        status
            .active_site
            .as_deref()
            .and_then(|active| status.site(active))
            .and_then(|site| site.gtid_executed.as_deref()),
    );
    let header = Row::new([
        "SITE",
        "ROLE",
        "STATE",
        "LAG",
        "GTIDS",
        "Δ PRIMARY",
        "REPL",
        "CONVERGENCE",
        "LAST SEEN",
    ])
    .style(bold());
    let rows = group.spec.sites.iter().map(|site| {
        let observed = status.site(&site.name);
        let gtids = summary::GtidText::of(observed.and_then(|site| site.gtid_executed.as_deref()));
        let difference = if status.active_site.as_deref() == Some(site.name.as_str()) {
            NONE.to_owned()
        } else {
            gtids.delta(&primary)
        };
        let state_text = observed
            .and_then(|site| site.state.as_ref())
            .map_or(NONE, |state| state.as_str())
            .to_owned();
        let role = match site.effective_role() {
            bloodraven_crd::group::SiteRole::PrimaryCandidate => "candidate",
            bloodraven_crd::group::SiteRole::DisasterRecovery => "dr",
            bloodraven_crd::group::SiteRole::ReadOnly => "reader",
            bloodraven_crd::group::SiteRole::Unrecognized(_) => "?",
        };
        let role = if status.active_site.as_deref() == Some(site.name.as_str()) {
            format!("{role} (active)")
        } else {
            role.to_owned()
        };
        Row::new([
            site.name.clone(),
            role,
            state_text,
            observed.and_then(|site| site.seconds_behind_source).map_or_else(
                || NONE.to_owned(),
                |lag| if lag < 0 { "?".to_owned() } else { summary::short_duration(lag) },
            ),
            gtids.count(),
            difference,
            observed
                .and_then(|site| site.replicating)
                .map_or(NONE, |r| if r { "yes" } else { "no" })
                .to_owned(),
            observed.and_then(|site| site.source_convergence_state.as_ref()).map_or_else(
                || NONE.to_owned(),
                |convergence| match observed
                    .and_then(|site| site.source_convergence_reason.as_ref())
                {
                    Some(reason) => format!("{}({})", convergence.as_str(), reason.as_str()),
                    None => convergence.as_str().to_owned(),
                },
            ),
            summary::age_of(state.now, observed.and_then(|site| site.last_seen.as_ref())),
        ])
    });
    let widths = [
        Constraint::Length(6),
        Constraint::Length(18),
        Constraint::Length(10),
        Constraint::Length(5),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(4),
        Constraint::Min(10),
        Constraint::Length(9),
    ];
    let active = summary::active_site(group);
    let counts = summary::site_counts(group);
    let held = if summary::held(group) { " · +held" } else { "" };
    frame.render_widget(
        Table::new(rows, widths).header(header).block(titled(
            state,
            format!("{title} · active {active} · {counts}{held}"),
            SourceKind::Groups,
        )),
        sites_area,
    );

    let mut lines = Vec::new();
    for condition in &status.conditions {
        let color = match (condition.type_.as_str(), condition.is_true()) {
            ("Ready", true) | ("PITRArchiveReady", true) => Color::Green,
            ("Ready", false) | ("Degraded", true) | ("AutomaticFailoverHeld", true) => Color::Red,
            _ => Color::Reset,
        };
        lines.push(Line::from(vec![
            Span::styled(
                format!("{}={}", condition.type_.as_str(), condition.status.as_str()),
                style(state, color).add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!(
                " {} · {}",
                condition.reason.as_ref().map_or(NONE, |reason| reason.as_str()),
                summary::age_of(state.now, condition.last_transition_time.as_ref())
            )),
        ]));
        if let Some(message) = &condition.message {
            lines.push(Line::from(format!("  {message}")));
        }
    }
    if lines.is_empty() {
        lines.push(Line::from("No conditions reported yet."));
    }
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(titled(
            state,
            "Conditions".to_owned(),
            SourceKind::Groups,
        )),
        conditions_area,
    );

    let name = group.metadata.name.clone().unwrap_or_default();
    let namespace = group.metadata.namespace.clone().unwrap_or_default();
    let mut events: Vec<&k8s_openapi::api::core::v1::Event> = state
        .data
        .events
        .values()
        .filter(|event| {
            event.involved_object.name.as_deref() == Some(name.as_str())
                && event.involved_object.namespace.as_deref() == Some(namespace.as_str())
                && event.involved_object.kind.as_deref() == Some("MysqlFailoverGroup")
        })
        .collect();
    let when = |event: &k8s_openapi::api::core::v1::Event| {
        event
            .last_timestamp
            .as_ref()
            .or(event.first_timestamp.as_ref())
            .map(|time| time.0)
            .or(event.event_time.as_ref().map(|time| time.0))
    };
    events.sort_by_key(|event| std::cmp::Reverse(when(event)));
    let lines: Vec<Line<'static>> = if events.is_empty() {
        vec![Line::from("No events for this group.")]
    } else {
        events
            .iter()
            .map(|event| {
                let warning = event.type_.as_deref() == Some("Warning");
                Line::from(vec![
                    Span::raw(format!(
                        "{:>6} ",
                        when(event)
                            .map_or_else(|| NONE.to_owned(), |at| summary::age(state.now, at))
                    )),
                    Span::styled(
                        format!("{} ", event.reason.clone().unwrap_or_default()),
                        style(state, if warning { Color::Yellow } else { Color::Reset })
                            .add_modifier(Modifier::BOLD),
                    ),
                    Span::raw(event.message.clone().unwrap_or_default()),
                ])
            })
            .collect()
    };
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(titled(
            state,
            "Events".to_owned(),
            SourceKind::Events,
        )),
        events_area,
    );
}

fn render_archive(
    state: &State,
    frame: &mut Frame<'_>,
    area: Rect,
    group: &MysqlFailoverGroup,
    title: String,
) {
    let Some(pitr) = group.status.as_ref().and_then(|status| status.pitr.as_ref()) else {
        render_lines(
            state,
            frame,
            area,
            title,
            SourceKind::Groups,
            vec![Line::from("No PITR archive status (PITR is off or not reported yet).")],
        );
        return;
    };
    let mut lines = pairs(report::pitr_block(pitr, state.now));
    if let Some(condition) =
        group.status.as_ref().and_then(|status| status.condition(&ConditionType::PitrArchiveReady))
    {
        let reason = condition.reason.as_ref().map_or(NONE, |reason| reason.as_str());
        lines.push(Line::from(vec![
            Span::styled(
                format!("PITRArchiveReady={} ({reason})", condition.status.as_str()),
                bold(),
            ),
            Span::raw(format!(" — {}", summary::meaning(Kind::ArchiveReason, reason))),
        ]));
        if let Some(message) = &condition.message {
            lines.push(Line::from(format!("  {message}")));
        }
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        format!(
            "{:<6} {:<7} {:<5} {:>6} {:>7} {:>8} {:>9} {:>9}  LAST ERROR",
            "SITE", "PRIMARY", "STORE", "FILES", "BACKLOG", "FAILURES", "LAST SCAN", "NEWEST"
        ),
        bold(),
    )));
    for site in &pitr.sites {
        let flag = |value: Option<bool>| value.map_or(NONE, |v| if v { "yes" } else { "no" });
        lines.push(Line::from(format!(
            "{:<6} {:<7} {:<5} {:>6} {:>7} {:>8} {:>9} {:>9}  {}",
            site.site,
            flag(site.primary),
            flag(site.store_ready),
            site.files_archived.map_or_else(|| NONE.to_owned(), |n| n.to_string()),
            site.backlog_files.map_or_else(|| NONE.to_owned(), |n| n.to_string()),
            site.upload_failures.map_or_else(|| NONE.to_owned(), |n| n.to_string()),
            summary::age_of(state.now, site.last_scan_at.as_ref()),
            summary::age_of(state.now, site.newest_archived_time.as_ref()),
            site.last_error.as_deref().unwrap_or(NONE),
        )));
    }
    render_lines(state, frame, area, title, SourceKind::Groups, lines);
}

/// A short UTC time for the coverage panel.
fn short_time(at: Timestamp) -> String {
    at.strftime("%m-%d %H:%M:%S").to_string()
}

/// The archive's data age, as the other panels show theirs.
fn archive_age(state: &State, archive: &ArchiveState) -> (String, bool) {
    match (&archive.outcome, archive.updated) {
        (_, _) if archive.loading() && archive.updated.is_none() => {
            ("reading the archive…".to_owned(), false)
        }
        (Some(ArchiveOutcome::Failed(_)), Some(updated)) => {
            (format!("read failed {} ago", summary::age(state.now, updated)), true)
        }
        (Some(_), Some(updated)) => {
            let reading = if archive.loading() { ", reading again…" } else { "" };
            (format!("archive read {} ago{reading}", summary::age(state.now, updated)), false)
        }
        _ => ("archive not read yet".to_owned(), false),
    }
}

fn render_coverage(state: &State, frame: &mut Frame<'_>, area: Rect, key: &Key) {
    let archive = state.data.archives.get(key).cloned().unwrap_or_default();
    let (age, failed) = archive_age(state, &archive);
    let block = Block::bordered()
        .title(Line::from(Span::styled(" Archive coverage (from the archive) ", bold())))
        .title_bottom(Line::from(Span::styled(
            format!(" {age} "),
            style(state, if failed { Color::Red } else { Color::DarkGray }),
        )));
    let width = usize::from(area.width.saturating_sub(2));
    let lines = match &archive.outcome {
        None => vec![Line::from("Reading the archive (list and get only)…")],
        Some(ArchiveOutcome::Failed(error)) => vec![Line::from(Span::styled(
            format!("The archive could not be read: {error}"),
            style(state, Color::Red),
        ))],
        Some(ArchiveOutcome::Refused { token, message, remedy }) => {
            let meaning = summary::meaning(Kind::PitrRefusal, token);
            let remedy = summary::remedy(Kind::PitrRefusal, token).unwrap_or(remedy.as_str());
            vec![
                Line::from(vec![
                    Span::styled(
                        format!("REFUSED {token}"),
                        style(state, Color::Red).add_modifier(Modifier::BOLD),
                    ),
                    Span::raw(format!(": {message}")),
                ]),
                Line::from(format!("  means: {meaning}")),
                Line::from(format!("  remedy: {remedy}")),
            ]
        }
        Some(ArchiveOutcome::Covered(summary)) => coverage_lines(state, summary, width),
    };
    let paragraph = Paragraph::new(lines).wrap(Wrap { trim: false });
    let total =
        u16::try_from(paragraph.line_count(area.width.saturating_sub(2))).unwrap_or(u16::MAX);
    let visible = area.height.saturating_sub(2);
    let scroll = state.ui.scroll.min(total.saturating_sub(visible));
    frame.render_widget(paragraph.scroll((scroll, 0)).block(block), area);
}

/// The column of `at` on a bar of `width` cells spanning `span`.
fn column(span: (Timestamp, Timestamp), width: usize, at: Timestamp) -> usize {
    let total = span.1.duration_since(span.0).as_millis();
    if total <= 0 || width < 2 {
        return 0;
    }
    let offset = at.duration_since(span.0).as_millis().clamp(0, total);
    let cells = i128::try_from(width - 1).unwrap_or(0);
    usize::try_from(offset * cells / total).unwrap_or(0).min(width - 1)
}

fn timeline_spans(
    state: &State,
    site: &SiteTimeline,
    gaps: &[crate::archive::GapLine],
    span: (Timestamp, Timestamp),
    width: usize,
) -> Vec<Span<'static>> {
    let mut cells: Vec<(char, Color)> = vec![('·', Color::DarkGray); width];
    let mut paint = |from: usize, to: usize, mark: (char, Color)| {
        for cell in cells.iter_mut().take(to.saturating_add(1)).skip(from) {
            *cell = mark;
        }
    };
    for file in &site.files {
        let (Some(start), Some(end)) = (file.start.or(file.end), file.end.or(file.start)) else {
            continue;
        };
        let mark = match file.flag {
            FileFlag::Usable => ('━', Color::Green),
            FileFlag::Unsafe => ('▒', Color::Magenta),
            FileFlag::Forked | FileFlag::Divergent => ('╳', Color::Red),
            FileFlag::Quarantined => ('░', Color::Red),
        };
        paint(column(span, width, start), column(span, width, end), mark);
    }
    if let Some(horizon) = site.horizon {
        let at = column(span, width, horizon);
        paint(at, at, ('┃', Color::Blue));
    }
    for record in &site.records {
        let at = column(span, width, record.at);
        paint(at, at, if record.reset { ('↺', Color::Yellow) } else { ('▲', Color::Yellow) });
    }
    for gap in gaps.iter().filter(|gap| gap.site == site.site) {
        let at = column(span, width, gap.at);
        paint(at, at, ('!', Color::Red));
    }
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut run = String::new();
    let mut color = None;
    for (mark, cell_color) in cells {
        if color.is_some_and(|color| color != cell_color) {
            spans.push(Span::styled(
                std::mem::take(&mut run),
                style(state, color.unwrap_or(Color::Reset)),
            ));
        }
        color = Some(cell_color);
        run.push(mark);
    }
    if let Some(color) = color {
        spans.push(Span::styled(run, style(state, color)));
    }
    spans
}

fn coverage_lines(state: &State, summary: &ArchiveSummary, width: usize) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(format!("{} at {}", summary.archive_id, summary.location))];
    let label = summary.sites.iter().map(|site| site.site.len()).max().unwrap_or(4).max(4) + 1;
    let bar = width.saturating_sub(label).max(10);
    match summary.span {
        Some(span) => {
            for site in &summary.sites {
                let mut spans = vec![Span::styled(format!("{:<label$}", site.site), bold())];
                spans.extend(timeline_spans(state, site, &summary.gaps, span, bar));
                lines.push(Line::from(spans));
            }
            let (from, to) = (short_time(span.0), short_time(span.1));
            let padding = bar.saturating_sub(from.len() + to.len()).max(1);
            lines.push(Line::from(Span::styled(
                format!("{:<label$}{from}{}{to}", "", " ".repeat(padding)),
                style(state, Color::DarkGray),
            )));
            lines.push(Line::from(Span::styled(
                "━ file ╳ fork ░ quarantined ▒ unsafe ▲ promotion ↺ reset ┃ horizon ! gap",
                style(state, Color::DarkGray),
            )));
        }
        None => lines.push(Line::from("The archive holds no files or records yet.")),
    }
    for site in summary.sites.iter().filter(|site| site.marker.is_some()) {
        lines.push(Line::from(Span::styled(
            format!(
                "UNSAFE site {}: history-integrity marker {}",
                site.site,
                site.marker.as_deref().unwrap_or(NONE)
            ),
            style(state, Color::Magenta),
        )));
    }
    for gap in &summary.gaps {
        lines.push(Line::from(vec![
            Span::styled("GAP ", style(state, Color::Red).add_modifier(Modifier::BOLD)),
            Span::raw(format!(
                "{} {} ({}) at {}",
                gap.site,
                gap.gtids,
                gap.kind,
                short_time(gap.at)
            )),
        ]));
    }
    for fork in &summary.forks {
        let when = match (fork.start, fork.end) {
            (Some(start), Some(end)) => format!(" {}→{}", short_time(start), short_time(end)),
            _ => String::new(),
        };
        lines.push(Line::from(vec![
            Span::styled("FORK ", style(state, Color::Red).add_modifier(Modifier::BOLD)),
            Span::raw(format!("{} {}{when}: {}", fork.site, fork.gtids, fork.cause)),
        ]));
    }
    lines.push(Line::from(format!(
        "Retention horizon: {}",
        summary.retention_horizon.map_or_else(|| "none (nothing retired)".to_owned(), short_time)
    )));
    if summary.backups.is_empty() {
        lines.push(Line::from("No backups of this group to anchor a restore window."));
    }
    for backup in &summary.backups {
        let done = backup.completed.map_or_else(|| NONE.to_owned(), short_time);
        match &backup.window {
            Ok(window) => {
                let end = window.end.map_or_else(|| "(empty)".to_owned(), short_time);
                lines.push(Line::from(vec![
                    Span::styled(format!("◆ {}", backup.name), style(state, Color::Cyan)),
                    Span::raw(format!(
                        " done {done}: restorable {} → {end}, then {}",
                        short_time(window.start),
                        window.stop_token
                    )),
                ]));
                lines.push(Line::from(format!(
                    "  {}: {}",
                    window.stop_detail,
                    summary::meaning(Kind::PitrRefusal, window.stop_token)
                )));
            }
            Err(reason) => lines
                .push(Line::from(format!("◆ {} done {done}: no window ({reason})", backup.name))),
        }
    }
    lines
}

fn render_backups(state: &State, frame: &mut Frame<'_>, area: Rect, key: &Key, title: String) {
    let [backups_area, verifications_area] =
        Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
    let mut backups: Vec<&bloodraven_crd::MysqlBackup> = state
        .data
        .backups
        .iter()
        .filter(|((namespace, _), backup)| {
            *namespace == key.0 && backup.spec.failover_group_ref.name == key.1
        })
        .map(|(_, backup)| backup)
        .collect();
    backups.sort_by_key(|backup| {
        std::cmp::Reverse(backup.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| t.0))
    });
    let rows = backups.iter().map(|backup| {
        let status = backup.status.clone().unwrap_or_default();
        Row::new([
            backup.metadata.name.clone().unwrap_or_default(),
            backup.spec.profile_name.clone(),
            status.phase.as_ref().map_or(NONE, |phase| phase.as_str()).to_owned(),
            status.source_site.clone().unwrap_or_else(|| NONE.to_owned()),
            summary::age_of(state.now, status.start_time.as_ref()),
            status
                .size_bytes
                .and_then(|size| u64::try_from(size).ok())
                .map_or_else(|| NONE.to_owned(), summary::bytes),
            status.message.clone().unwrap_or_default(),
        ])
    });
    let widths = [
        Constraint::Length(26),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(6),
        Constraint::Length(7),
        Constraint::Length(8),
        Constraint::Min(10),
    ];
    frame.render_widget(
        Table::new(rows, widths)
            .header(
                Row::new(["BACKUP", "PROFILE", "PHASE", "SOURCE", "STARTED", "SIZE", "MESSAGE"])
                    .style(bold()),
            )
            .block(titled(
                state,
                format!("{title} · backups ({})", backups.len()),
                SourceKind::Backups,
            )),
        backups_area,
    );
    let verifications: Vec<&bloodraven_crd::MysqlBackupVerification> = state
        .data
        .verifications
        .iter()
        .filter(|((namespace, _), verification)| {
            *namespace == key.0 && verification.spec.failover_group_ref.name == key.1
        })
        .map(|(_, verification)| verification)
        .collect();
    let rows = verifications.iter().map(|verification| {
        let status = verification.status.clone().unwrap_or_default();
        Row::new([
            verification.metadata.name.clone().unwrap_or_default(),
            verification
                .spec
                .backup_ref
                .as_ref()
                .map_or_else(|| NONE.to_owned(), |backup| backup.name.clone()),
            status.phase.as_ref().map_or(NONE, |phase| phase.as_str()).to_owned(),
            status
                .point_in_time
                .as_ref()
                .and_then(|pitr| pitr.outcome.as_ref())
                .map_or(NONE, |outcome| outcome.as_str())
                .to_owned(),
            summary::age_of(state.now, status.completion_time.as_ref()),
            status.message.clone().unwrap_or_default(),
        ])
    });
    let widths = [
        Constraint::Length(30),
        Constraint::Length(24),
        Constraint::Length(9),
        Constraint::Length(13),
        Constraint::Length(6),
        Constraint::Min(8),
    ];
    frame.render_widget(
        Table::new(rows, widths)
            .header(
                Row::new(["VERIFICATION", "BACKUP", "PHASE", "PITR", "DONE", "MESSAGE"])
                    .style(bold()),
            )
            .block(titled(
                state,
                format!("verifications ({})", verifications.len()),
                SourceKind::Verifications,
            )),
        verifications_area,
    );
}

fn render_help(state: &State, frame: &mut Frame<'_>, area: Rect) {
    let mode = state.ui.previous_mode;
    // One line per action: keys that do the same thing share it.
    let mut entries: Vec<(String, &'static str)> = Vec::new();
    for binding in keymap::bindings(mode) {
        match entries.iter_mut().find(|(_, help)| *help == binding.help) {
            Some((keys, _)) => {
                keys.push(' ');
                keys.push_str(binding.key);
            }
            None => entries.push((binding.key.to_owned(), binding.help)),
        }
    }
    let height = u16::try_from(entries.len()).unwrap_or(20).saturating_add(2).min(area.height);
    let width = 64.min(area.width);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let lines: Vec<Line<'static>> = entries
        .into_iter()
        .map(|(keys, help)| {
            Line::from(vec![Span::styled(format!("{keys:>16}  "), bold()), Span::raw(help)])
        })
        .collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .block(Block::bordered().title(format!(" Keys ({mode:?}) · esc closes "))),
        popup,
    );
}

#[cfg(test)]
mod tests;
