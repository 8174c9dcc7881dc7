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

mod archive;
mod backups;
pub mod dialog;
mod fleet;
mod help;
mod hold;
mod overview;
mod planned;
mod reclones;
mod restore;
mod runbook;
mod workbench;

use archive::render_archive;
use archive::render_coverage;
use backups::render_backups;
use fleet::render_fleet;
use help::render_help;
use hold::hold_lines;
use overview::render_overview;
use planned::planned_failover_lines;
pub use planned::timeline;
use reclones::reclone_lines;
use restore::restore_lines;

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
    // Guided operations (the write switch, the picker, the confirm dialog) over everything.
    dialog::render_overlay(state, frame, area);
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
                summary::at(since)
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
        // The session's write mode, always shown.
        if state.guided.write.on {
            Span::styled(
                " │ WRITE",
                style(state, Color::Red).add_modifier(Modifier::BOLD | Modifier::REVERSED),
            )
        } else {
            Span::raw(" │ read-only")
        },
    ];
    if let Some(queued) = &state.frozen {
        spans.push(Span::styled(
            format!(" │ FROZEN ({} changes queued)", queued.len()),
            style(state, Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    spans.push(Span::raw(format!(" │ {}", summary::at(state.now))));
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
            format!("{age} · STALE since {}", summary::at(since))
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
        DetailTab::Reclones => render_lines(
            state,
            frame,
            panel,
            title,
            SourceKind::Groups,
            reclone_lines(state, group),
        ),
        DetailTab::Restore => render_lines(
            state,
            frame,
            panel,
            title,
            SourceKind::Groups,
            restore_lines(state, group),
        ),
        DetailTab::Archive if super::update::workbench::shown(state).is_some() => {
            if let Some(bench) = super::update::workbench::shown(state) {
                workbench::render_workbench(state, frame, panel, key, bench);
            }
        }
        DetailTab::Archive => {
            let [status_area, coverage_area] =
                Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)])
                    .areas(panel);
            render_archive(state, frame, status_area, group, title);
            render_coverage(state, frame, coverage_area, key);
        }
        DetailTab::Backups => render_backups(state, frame, panel, key, title),
        DetailTab::Runbooks => {
            let lines = runbook::runbook_lines(state, key, group);
            render_lines(state, frame, panel, title, SourceKind::Groups, lines);
        }
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
    Paragraph::new(Line::from(Span::styled(
        window(&format!("$ {command}"), state.ui.hscroll, width),
        bold(),
    )))
}

/// `text` as one row of `width` cells scrolled right by `hscroll`, with `…` at an end that has
/// more (the long-text rule).
pub fn window(text: &str, hscroll: u16, width: u16) -> String {
    let total = text.chars().count();
    let width = usize::from(width).max(2);
    let max_offset = total.saturating_sub(width - 1);
    let offset = usize::from(hscroll).min(max_offset);
    let mut shown: String = text.chars().skip(offset).take(width).collect();
    let more_right = offset + width < total;
    if more_right {
        shown = shown.chars().take(width - 1).collect();
        shown.push('…');
    }
    if offset > 0 {
        shown = format!("…{}", shown.chars().skip(1).collect::<String>());
    }
    shown
}

/// Marks a line for [`render_lines`] as long text: never wrapped, scrolled with `<` / `>`.
const LONG_MARK: &str = "\u{e000}";

/// A line under the long-text rule (a command, a GTID set, an annotation): one row, never
/// wrapped or cut mid-token; it scrolls horizontally.
fn long_text(text: &str) -> Line<'static> {
    Line::from(vec![Span::raw(LONG_MARK), Span::styled(text.to_owned(), bold())])
}

/// The text of a line marked by [`long_text`].
fn long_content(line: &Line<'_>) -> Option<String> {
    let (first, rest) = line.spans.split_first()?;
    (first.content == LONG_MARK).then(|| rest.iter().map(|span| span.content.as_ref()).collect())
}

/// `text` wrapped at spaces into rows of `width` cells: the first row has `first` cells taken
/// before it, the others start after `indent` cells. A word longer than a row gets a row of
/// its own (never split here).
fn wrap_words(text: &str, first: usize, indent: usize, width: usize) -> Vec<String> {
    let mut rows = Vec::new();
    let mut row = String::new();
    let mut room = width.saturating_sub(first).max(1);
    for word in text.split_whitespace() {
        let needed = word.chars().count() + usize::from(!row.is_empty());
        if !row.is_empty() && row.chars().count() + needed > room {
            rows.push(std::mem::take(&mut row));
            room = width.saturating_sub(indent).max(1);
        }
        if !row.is_empty() {
            row.push(' ');
        }
        row.push_str(word);
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows
}

/// `text` as lines starting `first` cells in, continuation lines `indent` cells in.
fn indented(text: &str, first: usize, indent: usize, width: usize) -> Vec<Line<'static>> {
    wrap_words(text, first, indent, width)
        .into_iter()
        .enumerate()
        .map(|(index, row)| {
            let pad = if index == 0 { first } else { indent };
            Line::from(format!("{:pad$}{row}", ""))
        })
        .collect()
}

/// `label: value` lines with the labels aligned. A value that is one token (a GTID set, an
/// annotation, a name) cannot wrap at a space, so it follows the long-text rule: the whole
/// row stays one line and scrolls horizontally.
fn pairs(lines: Vec<(String, String)>) -> Vec<Line<'static>> {
    let width = lines.iter().map(|(label, _)| label.chars().count()).max().unwrap_or(0);
    lines
        .into_iter()
        .map(|(label, value)| {
            let label = if label.is_empty() { String::new() } else { format!("{label}:") };
            let label = format!("{label:width$}  ", width = width + 1);
            if !value.is_empty() && !value.contains(char::is_whitespace) {
                return long_text(&format!("{label}{value}"));
            }
            Line::from(vec![Span::styled(label, bold()), Span::raw(value)])
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
    let inner = area.width.saturating_sub(2);
    let lines: Vec<Line<'static>> = lines
        .into_iter()
        .map(|line| match long_content(&line) {
            Some(text) => Line::from(Span::styled(window(&text, state.ui.hscroll, inner), bold())),
            None => line,
        })
        .collect();
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

#[cfg(test)]
mod tests;
