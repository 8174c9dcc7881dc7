//! What can go wrong reading or running a drill. Messages name the file, the step and the field.

use std::path::PathBuf;

fn at(line: &Option<usize>, column: &Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

/// A drill file that cannot be used, or a drill that failed.
#[derive(Debug, thiserror::Error)]
pub enum DrillError {
    /// The file cannot be read.
    #[error("{}: cannot read the drill file: {source}", file.display())]
    Read {
        /// The drill file.
        file: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The YAML does not match the schema (see `schema/drill.schema.json`).
    #[error("{}{}: {field}: {message}", file.display(), at(line, column))]
    Syntax {
        /// The drill file.
        file: PathBuf,
        /// The field path, such as `steps[2].kill.site`.
        field: String,
        /// 1-based line, when the parser knows it.
        line: Option<usize>,
        /// 1-based column, when the parser knows it.
        column: Option<usize>,
        /// The parser's message.
        message: String,
    },
    /// A drill-level field is wrong.
    #[error("{}: {field}: {message}", file.display())]
    Invalid {
        /// The drill file.
        file: PathBuf,
        /// The field.
        field: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// A step is wrong.
    #[error("{}{}: steps[{index}].{field}: {message}", file.display(), at(line, &None))]
    Step {
        /// The drill file.
        file: PathBuf,
        /// 0-based step index.
        index: usize,
        /// The step's line, when found.
        line: Option<usize>,
        /// The field within the step, such as `kill.site`.
        field: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// The group manifest is wrong.
    #[error("{}: manifest {}: {message}", file.display(), manifest.display())]
    Manifest {
        /// The drill file.
        file: PathBuf,
        /// The manifest.
        manifest: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The drill needs something this run lacks.
    #[error("{}: {message}", file.display())]
    Refused {
        /// The drill file.
        file: PathBuf,
        /// Why and what to do.
        message: String,
    },
}
