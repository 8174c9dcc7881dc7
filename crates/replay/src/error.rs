//! What can go wrong around the planner.

use std::path::PathBuf;

/// A restore-step failure. Refusals of the planner are not errors: they are
/// [`bloodraven_pitr::Refusal`] values.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The archive could not be opened for a reason without a token (transient store errors).
    #[error("opening the archive failed: {0}; retry")]
    Open(String),
    /// A store read failed.
    #[error("reading {key} from the archive failed: {source}; retry")]
    Store {
        key: String,
        #[source]
        source: Box<bloodraven_store::Error>,
    },
    /// A local file could not be written or read.
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A segment names a row that was not staged.
    #[error("segment {segment} names {key}, which was not staged; rerun pitr-download")]
    NotStaged { segment: usize, key: String },
    /// `mysqlbinlog` or `mysql` failed (the `BLOODRAVEN_PITR_FAILED` message).
    #[error("BLOODRAVEN_PITR_FAILED: {0}")]
    Failed(String),
    /// The server's gtid_executed is not what the plan certified (`PITRReplayMismatch`).
    #[error("PITRReplayMismatch: {0}")]
    Mismatch(String),
    /// A local archive could not be built (bad site or binlog name).
    #[error("building the archive: {0}")]
    Archive(String),
}
