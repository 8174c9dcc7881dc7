//! The reclone queue panel: the queue's phase, one row per queued site (state, attempts, next
//! retry, the request it waits for) and, when Held, the spec's three choices with what follows
//! from each; `a` proposes them, each behind its own confirm dialog.

use bloodraven_crd::group::{RestoreReclones, RestoreReclonesPhase};
use bloodraven_facts::verdict::{Inputs, held_queue_choices};

use super::*;

/// What a queued site is doing, from the queue alone.
fn site_state(queue: &RestoreReclones, site: &str, position: usize) -> String {
    let held = matches!(queue.phase, Some(RestoreReclonesPhase::Held));
    let armed = matches!(queue.phase, Some(RestoreReclonesPhase::Armed));
    let current = queue.current.as_ref().and_then(|c| c.site.as_deref()) == Some(site);
    let failed = queue.failures.iter().any(|failure| failure.site.as_deref() == Some(site));
    match (held, armed, current, failed) {
        (true, ..) => "held".to_owned(),
        (_, true, ..) => "armed".to_owned(),
        (_, _, true, _) => "cloning".to_owned(),
        (_, _, _, true) => "failed".to_owned(),
        _ => format!("queued #{}", position + 1),
    }
}

/// The table of queued sites: `SITE STATE ATTEMPTS NEXT RETRY JOB`, one row each.
pub(super) fn site_rows(state: &State, queue: &RestoreReclones) -> Vec<Line<'static>> {
    let header = ["SITE", "STATE", "ATTEMPTS", "NEXT RETRY", "REQUEST (JOB)"];
    let mut rows: Vec<[String; 5]> = Vec::new();
    for (position, site) in queue.pending.iter().enumerate() {
        let failure = queue.failures.iter().find(|failure| failure.site.as_deref() == Some(site));
        let current = queue.current.as_ref().filter(|c| c.site.as_deref() == Some(site.as_str()));
        let retry = failure.and_then(|failure| failure.retry_time.as_ref()).map_or_else(
            || NONE.to_owned(),
            |retry| {
                format!("{} ({})", summary::at(retry.0), summary::countdown(state.now, retry.0))
            },
        );
        let job = current.map_or_else(
            || NONE.to_owned(),
            |current| {
                format!(
                    "{} (requested {} ago)",
                    current.request.as_deref().unwrap_or(NONE),
                    summary::age_of(state.now, current.request_time.as_ref())
                )
            },
        );
        rows.push([
            site.clone(),
            site_state(queue, site, position),
            failure.and_then(|failure| failure.attempts).unwrap_or(0).to_string(),
            retry,
            job,
        ]);
    }
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let format = |cells: [&str; 5]| {
        let mut text = String::new();
        for (index, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if index == 4 {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}  "));
            }
        }
        text
    };
    let mut lines = vec![Line::from(Span::styled(format(header), bold()))];
    for row in &rows {
        let colour = match row[1].as_str() {
            "held" | "failed" => Color::Red,
            "cloning" => Color::Cyan,
            _ => Color::Reset,
        };
        lines.push(Line::from(Span::styled(
            format([&row[0], &row[1], &row[2], &row[3], &row[4]]),
            style(state, colour),
        )));
    }
    if rows.is_empty() {
        lines.push(Line::from("(no site is queued)"));
    }
    for failure in &queue.failures {
        lines.push(Line::from(format!(
            "  {} last failed {} ago: {}",
            failure.site.as_deref().unwrap_or(NONE),
            summary::age_of(state.now, failure.last_failure_time.as_ref()),
            failure.message.as_deref().unwrap_or(NONE)
        )));
    }
    lines
}

/// The panel's lines.
pub(super) fn reclone_lines(state: &State, group: &MysqlFailoverGroup) -> Vec<Line<'static>> {
    let Some(queue) = group.status.as_ref().and_then(|status| status.restore_reclones.as_ref())
    else {
        return vec![Line::from(
            "No reclone queue: no full-instance restore is waiting on its peers.",
        )];
    };
    let mut block = Vec::new();
    if let Some(phase) = &queue.phase {
        let meaning = summary::meaning(Kind::RestoreReclonePhase, phase.as_str());
        block.push(("Phase".to_owned(), format!("{} — {meaning}", phase.as_str())));
    }
    block.push(("Run ID".to_owned(), queue.run_id.clone().unwrap_or_else(|| NONE.to_owned())));
    let mut lines = pairs(block);
    if let Some(fenced) = &queue.fenced_gtid_executed {
        lines.push(Line::from(Span::styled(
            "Fenced GTID set (the primary's, once fenced):",
            bold(),
        )));
        lines.push(long_text(fenced));
    }
    lines.push(Line::from(""));
    lines.extend(site_rows(state, queue));
    if matches!(queue.phase, Some(RestoreReclonesPhase::Held)) {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            "HELD: the held sites keep their pre-restore data and may be the only intact copies.",
            style(state, Color::Red).add_modifier(Modifier::BOLD),
        )));
        lines.push(Line::from(
            "First suspend backup schedules whose retention could age out the last good backup \
             (scheduled backups skip held sites and fall back to the primary). Then choose one:",
        ));
        let choices = held_queue_choices(&Inputs::group(group, state.now));
        for (index, choice) in choices.iter().enumerate() {
            lines.push(Line::from(vec![
                Span::styled(format!(" {}. {}", index + 1, choice.title), bold()),
                Span::raw(format!(": {}", choice.consequence)),
            ]));
            if let Some(command) = &choice.command {
                lines.push(long_text(&format!("$ {command}")));
            }
        }
        // The panel itself writes nothing: `a` proposes the choices, each behind its dialog.
        lines.push(Line::from(Span::styled(
            format!(
                "a: choose through a confirm dialog ({})",
                if state.guided.write.on {
                    "write mode is on"
                } else {
                    "W switches write mode on first"
                }
            ),
            bold(),
        )));
    }
    lines
}
