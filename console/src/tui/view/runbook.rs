//! The runbook player panel: the runbooks that apply to the group, most severe first; or the
//! walk of one, each check live (green/red with the values it read), the step's action, and
//! the wait on its `expect` with a countdown. Pure: the state in, lines out.

use bloodraven_runbook::{GroupView, NextStep, Progress, RiskLevel, Runbook, Target, advance};

use super::*;

fn severity_color(severity: Severity) -> Color {
    match severity {
        Severity::Critical => Color::Red,
        Severity::Warning => Color::Yellow,
        Severity::Info => Color::Cyan,
    }
}

fn countdown(seconds: u64) -> String {
    bloodraven_facts::verdict::format_span(i64::try_from(seconds).unwrap_or(i64::MAX))
}

pub(super) fn runbook_lines(
    state: &State,
    key: &Key,
    group: &MysqlFailoverGroup,
) -> Vec<Line<'static>> {
    let ui = state.ui.runbooks.get(key).cloned().unwrap_or_default();
    match ui.walking.as_deref().and_then(|id| state.runbooks.iter().find(|r| r.id == id)) {
        Some(runbook) => {
            let progress =
                ui.progress.get(&runbook.id).cloned().unwrap_or_else(|| Progress::start(runbook));
            walk_lines(state, runbook, &progress, group)
        }
        None => list_lines(state, &ui, group),
    }
}

fn list_lines(
    state: &State,
    ui: &super::super::state::RunbookUi,
    group: &MysqlFailoverGroup,
) -> Vec<Line<'static>> {
    let ranked = state.applicable_runbooks(group);
    let mut lines = Vec::new();
    if ranked.runbooks.is_empty() {
        lines.push(Line::from("No runbook applies to this group now."));
    } else {
        lines.push(Line::from(Span::styled(
            "Runbooks that apply, most severe first (enter: walk; a walk resumes where it was)",
            bold(),
        )));
    }
    let selected = ui.selected.min(ranked.runbooks.len().saturating_sub(1));
    for (index, runbook) in ranked.runbooks.iter().enumerate() {
        let marker = if index == selected { "▶ " } else { "  " };
        let resumed = match ui.progress.get(&runbook.id) {
            Some(Progress { step: Some(step), .. })
                if runbook.steps.first().is_some_and(|first| &first.id != step) =>
            {
                format!("  (at step {step})")
            }
            _ => String::new(),
        };
        let mut row_style = style(state, severity_color(runbook.severity));
        if index == selected {
            row_style = row_style.add_modifier(Modifier::REVERSED);
        }
        lines.push(Line::from(vec![
            Span::raw(marker),
            Span::styled(
                format!(
                    "{} {:<8} {}",
                    runbook.severity.marker(),
                    runbook.severity.as_str(),
                    runbook.id
                ),
                row_style,
            ),
            Span::raw(format!("  {}{resumed}", runbook.title)),
        ]));
    }
    for error in &ranked.errors {
        lines.push(Line::from(Span::styled(
            format!("could not evaluate: {error}"),
            style(state, Color::Red),
        )));
    }
    lines
}

fn target_name(runbook: &Runbook, target: &Target) -> String {
    match target {
        Target::Step(index) => runbook.steps.get(*index).map_or("?", |s| s.id.as_str()).to_owned(),
        Target::Done => "done".to_owned(),
    }
}

fn walk_lines(
    state: &State,
    runbook: &Runbook,
    progress: &Progress,
    group: &MysqlFailoverGroup,
) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from(Span::styled(format!("{} · {}", runbook.id, runbook.title), bold())),
        Line::from(format!("follows spec {}", runbook.spec)),
    ];
    let risk = match runbook.data_loss {
        RiskLevel::None => ("data loss: none", Color::Green),
        RiskLevel::Possible => ("data loss: possible", Color::Red),
    };
    lines.push(Line::from(vec![
        Span::styled(risk.0, style(state, risk.1).add_modifier(Modifier::BOLD)),
        Span::raw(format!(" — {}", runbook.data_loss_sentence.trim())),
    ]));
    lines.push(Line::from(""));
    let next = match advance(runbook, progress, &GroupView::of(group), state.now) {
        Ok(next) => next,
        Err(error) => {
            lines.push(Line::from(Span::styled(
                format!("cannot go on: {error}"),
                style(state, Color::Red),
            )));
            return lines;
        }
    };
    let step_index = match &next {
        NextStep::Show { step, .. }
        | NextStep::Waiting { step, .. }
        | NextStep::Satisfied { step, .. }
        | NextStep::TimedOut { step, .. } => Some(*step),
        NextStep::Finished => None,
    };
    let Some(step) = step_index.and_then(|index| runbook.steps.get(index)) else {
        lines.push(Line::from(Span::styled(
            "Runbook finished. enter: back to the list (esc keeps this walk).",
            style(state, Color::Green).add_modifier(Modifier::BOLD),
        )));
        return lines;
    };
    lines.push(Line::from(Span::styled(
        format!("Step {}/{}: {}", step_index.unwrap_or(0) + 1, runbook.steps.len(), step.id),
        bold(),
    )));
    for line in step.explain.trim_end().lines() {
        lines.push(Line::from(format!("  {line}")));
    }
    lines.push(Line::from(""));
    match next {
        NextStep::Show { check, offer, next, .. } => {
            if let (Some(outcome), Some(definition)) = (check, &step.check) {
                let (word, color) =
                    if outcome.passed { ("PASS", Color::Green) } else { ("FAIL", Color::Red) };
                lines.push(Line::from(vec![
                    Span::styled(
                        format!("[{word}] "),
                        style(state, color).add_modifier(Modifier::BOLD),
                    ),
                    Span::raw(definition.expr.source.trim().to_owned()),
                ]));
                for (field, value) in &outcome.reads {
                    lines.push(Line::from(format!("       {field} = {value:?}")));
                }
                if !outcome.passed {
                    lines.push(Line::from(Span::styled(
                        format!("       {}", definition.meaning.trim()),
                        style(state, Color::Red),
                    )));
                }
            }
            match offer {
                Some(offer) => {
                    let params: Vec<String> =
                        offer.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    lines.push(Line::from(vec![
                        Span::styled("action: ", bold()),
                        Span::raw(format!("{}({})", offer.action.name(), params.join(", "))),
                    ]));
                    lines.push(Line::from(
                        "  enter: open its confirm dialog (once it is sent, the step waits for \
                         the result)",
                    ));
                }
                None => lines.push(Line::from(format!(
                    "enter: continue to {}",
                    target_name(runbook, &next)
                ))),
            }
        }
        NextStep::Waiting { remaining, .. } => {
            let expr = step.expect.as_ref().map(|e| e.expr.source.trim().to_owned());
            lines.push(Line::from(Span::styled(
                format!(
                    "waiting ({} left) for: {}",
                    countdown(remaining.as_secs()),
                    expr.unwrap_or_default()
                ),
                style(state, Color::Yellow),
            )));
        }
        NextStep::Satisfied { next, .. } => lines.push(Line::from(Span::styled(
            format!(
                "done: the expected result holds. enter: continue to {}",
                target_name(runbook, &next)
            ),
            style(state, Color::Green),
        ))),
        NextStep::TimedOut { waited, .. } => lines.push(Line::from(Span::styled(
            format!(
                "timed out after {} waiting for the result. enter: offer the action again",
                countdown(waited.as_secs())
            ),
            style(state, Color::Red),
        ))),
        NextStep::Finished => {}
    }
    lines.push(Line::from(""));
    lines.push(Line::from("esc: back to the list (the walk is kept)"));
    lines
}

#[cfg(test)]
mod tests;
