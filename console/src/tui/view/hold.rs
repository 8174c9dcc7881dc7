//! The hold view.

use super::*;

pub(super) fn hold_lines(state: &State, group: &MysqlFailoverGroup) -> Vec<Line<'static>> {
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
