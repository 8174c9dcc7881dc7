//! The fleet view.

use super::*;

/// How many unreadable groups the fleet lists below the table (the count says the rest).
pub(super) const UNREADABLE_LINES: usize = 5;

pub(super) fn render_fleet(state: &State, frame: &mut Frame<'_>, area: Rect) {
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
    let lease = state.data.operator.renewed();
    let judge = |group: &MysqlFailoverGroup| {
        crate::verdict::of_with_lease(group, &backups, &verifications, lease, state.now)
    };
    // The title's counts from the severities `update` keeps; judged afresh when they do not
    // cover the groups (a state built without `update`).
    let counts = if state.data.worst.len() == state.data.groups.len()
        && state.data.worst.keys().eq(state.data.groups.keys())
    {
        let mut counts = [0; 3];
        for worst in state.data.worst.values() {
            match worst {
                Some(Severity::Critical) => counts[0] += 1,
                Some(Severity::Warning) => counts[1] += 1,
                Some(Severity::Info) => counts[2] += 1,
                None => {}
            }
        }
        counts
    } else {
        crate::verdict::fleet_counts(
            state.data.groups.values().map(|group| judge(group)).collect::<Vec<_>>().iter(),
        )
    };
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
pub(super) fn render_unreadable(state: &State, frame: &mut Frame<'_>, area: Rect) {
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
