//! Positions: from the YAML parser's markers, and inside a CEL expression scalar.

use marked_yaml::Span;

use crate::error::Pos;

/// The start of a span (1:1 when the parser gave none).
pub(crate) fn start(span: &Span) -> Pos {
    span.start().map_or(Pos { line: 1, column: 1 }, |m| Pos { line: m.line(), column: m.column() })
}

/// The file position of character `offset` of the scalar `value` that starts at `at` in `text`
/// (the parser marks a block scalar at its first content character, a quoted one at its quote).
/// The walk follows the source lines: a line break in the source is one character of the value
/// (a newline in `|`, a space in `>` and plain scalars). Escapes in double-quoted scalars and
/// blank lines in folded scalars shift the column; the line stays right.
pub(crate) fn inside(text: &str, at: Pos, value: &str, offset: usize) -> Pos {
    let lines: Vec<&str> = text.lines().collect();
    let Some(first) = lines.get(at.line.saturating_sub(1)) else {
        return at;
    };
    let quoted = matches!(first.chars().nth(at.column.saturating_sub(1)), Some('"' | '\''));
    let offset = offset.min(value.chars().count());
    let mut remaining = offset;
    let mut line = at.line.max(1);
    let mut column = at.column.max(1) + usize::from(quoted);
    while let Some(source) = lines.get(line - 1) {
        let len = source.trim_end().chars().count().saturating_sub(column - 1);
        if remaining <= len {
            return Pos { line, column: column + remaining };
        }
        remaining -= len + 1;
        line += 1;
        column = lines.get(line - 1).map_or(1, |l| l.chars().take_while(|c| *c == ' ').count() + 1);
    }
    at
}

/// The character offset of 1-based (line, column) in `value`.
pub(crate) fn offset_of(value: &str, line: isize, column: isize) -> usize {
    let line = usize::try_from(line.max(1)).unwrap_or(1);
    let column = usize::try_from(column.max(1)).unwrap_or(1);
    let before: usize = value.split('\n').take(line - 1).map(|l| l.chars().count() + 1).sum();
    before + column - 1
}

/// How a name is used in an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// `.name`.
    Field,
    /// `name` alone (not after a dot).
    Ident,
    /// `name(` or `.name(`.
    Call,
}

/// Where `name` is first used so in a CEL expression: the parser keeps no positions on
/// success, so this searches the text (0 when not found).
pub(crate) fn find_name(value: &str, name: &str, how: Use) -> usize {
    let chars: Vec<char> = value.chars().collect();
    let needle: Vec<char> = name.chars().collect();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    for i in 0..chars.len() {
        if chars[i..].starts_with(&needle) {
            let end_ok = chars.get(i + needle.len()).is_none_or(|c| !ident(*c));
            let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
            let start_ok = match how {
                Use::Field => prev.is_some_and(|c| c == '.'),
                Use::Ident => prev.is_none_or(|c| !ident(c) && c != '.'),
                Use::Call => prev.is_none_or(|c| !ident(c)),
            };
            if start_ok && end_ok {
                return i;
            }
        }
    }
    0
}
