//! What can be wrong with a runbook. Every message names the file, the line and the column.

use std::fmt;
use std::path::PathBuf;

/// A 1-based position in a runbook file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (characters).
    pub column: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A runbook that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RunbookError {
    /// The file cannot be read.
    #[error("{}: cannot read the runbook: {source}", file.display())]
    Read {
        /// The runbook file.
        file: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The text is not YAML, or does not match the schema (`schema/runbook.schema.json`).
    #[error("{}:{pos}: {message} (see crates/runbook/schema/runbook.schema.json)", file.display())]
    Syntax {
        /// The runbook file.
        file: PathBuf,
        /// Where.
        pos: Pos,
        /// The parser's message.
        message: String,
    },
    /// A field parses but is wrong: a CEL expression that does not compile or names a field
    /// the group view lacks, an unknown action or parameter, a dangling branch, a bad duration.
    #[error("{}:{pos}: {field}: {message}", file.display())]
    Invalid {
        /// The runbook file.
        file: PathBuf,
        /// Where.
        pos: Pos,
        /// The field path, such as `steps[2].check.expr`.
        field: String,
        /// What is wrong and what to do.
        message: String,
    },
}

/// A runbook expression that failed to evaluate against a group (a wrong type at run time,
/// such as comparing a string with an int: the checker tracks fields, not operator types).
#[derive(Debug, thiserror::Error)]
#[error("runbook {runbook}: {field} ({source_text}): {message}")]
pub struct EvalError {
    /// The runbook id.
    pub runbook: String,
    /// The field path, such as `steps[1].check.expr`.
    pub field: String,
    /// The expression.
    pub source_text: String,
    /// The evaluator's message, or the wrong result type.
    pub message: String,
}
