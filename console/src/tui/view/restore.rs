//! The restore view.

use super::*;

pub(super) fn restore_lines(state: &State, group: &MysqlFailoverGroup) -> Vec<Line<'static>> {
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
