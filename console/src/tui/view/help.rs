//! The help view.

use super::*;

pub(super) fn render_help(state: &State, frame: &mut Frame<'_>, area: Rect) {
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
