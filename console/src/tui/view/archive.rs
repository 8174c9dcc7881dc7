//! The archive view.

use super::*;

pub(super) fn render_archive(
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
pub(super) fn short_time(at: Timestamp) -> String {
    summary::at(at)
}

/// The archive's data age, as the other panels show theirs.
pub(super) fn archive_age(state: &State, archive: &ArchiveState) -> (String, bool) {
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

pub(super) fn render_coverage(state: &State, frame: &mut Frame<'_>, area: Rect, key: &Key) {
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
        Some(ArchiveOutcome::Locked(error)) => {
            let (what, message) = match error {
                crate::archive::ArchiveKeyError::Encrypted { location } => (
                    "ENCRYPTED",
                    format!(
                        "the archive {location} is encrypted and the console holds no passphrase"
                    ),
                ),
                crate::archive::ArchiveKeyError::WrongKey { location, file, archive } => (
                    "AUTHENTICATION FAILED",
                    format!(
                        "the passphrase in {} does not verify the archive {location} ({archive})",
                        file.display()
                    ),
                ),
            };
            vec![
                Line::from(vec![
                    Span::styled(
                        format!("{what} {}", error.token()),
                        style(state, Color::Red).add_modifier(Modifier::BOLD),
                    ),
                    Span::raw(format!(": {message}")),
                ]),
                Line::from(format!("  remedy: {}", error.remedy())),
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
pub(super) fn column(span: (Timestamp, Timestamp), width: usize, at: Timestamp) -> usize {
    let total = span.1.duration_since(span.0).as_millis();
    if total <= 0 || width < 2 {
        return 0;
    }
    let offset = at.duration_since(span.0).as_millis().clamp(0, total);
    let cells = i128::try_from(width - 1).unwrap_or(0);
    usize::try_from(offset * cells / total).unwrap_or(0).min(width - 1)
}

pub(super) fn timeline_spans(
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

pub(super) fn coverage_lines(
    state: &State,
    summary: &ArchiveSummary,
    width: usize,
) -> Vec<Line<'static>> {
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
            (Some(start), Some(end)) => format!(" {} -> {}", short_time(start), short_time(end)),
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
                        " done {done}: restorable {} -> {end}, then {}",
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
