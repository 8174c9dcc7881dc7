//! The audit journal of guided operations: one JSON line before a write is sent (who, context,
//! operation, exact request, precondition, preflight) and one after (result, resourceVersion,
//! error), in daily files (`tracing-appender`) in the XDG state folder
//! (`$XDG_STATE_HOME/bloodraven/journal`, else `~/.local/state/bloodraven/journal`).
//!
//! No secret ever reaches it: a record holds only the operation (names, sites, run IDs), the
//! request the console built (annotations and our resources' specs) and the server's status
//! code and message; never a response body, a header or a credential.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;

/// The journal's file prefix: `operations.jsonl.<YYYY-MM-DD>`.
pub const FILE_PREFIX: &str = "operations.jsonl";

/// Why the journal cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(
        "cannot create the journal folder {path}: {source}; set XDG_STATE_HOME to a writable folder"
    )]
    Folder { path: PathBuf, source: std::io::Error },
    #[error("cannot write the journal in {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("no journal folder: neither XDG_STATE_HOME nor HOME is set")]
    NoHome,
}

/// The default folder: `$XDG_STATE_HOME/bloodraven/journal`, else
/// `$HOME/.local/state/bloodraven/journal`.
pub fn default_dir() -> Result<PathBuf, JournalError> {
    let state = match std::env::var_os("XDG_STATE_HOME").filter(|dir| !dir.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").ok_or(JournalError::NoHome)?)
            .join(".local")
            .join("state"),
    };
    Ok(state.join("bloodraven").join("journal"))
}

/// The phase of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    Before,
    After,
}

/// One JSON line.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub time: jiff::Timestamp,
    /// Pairs the before and after records of one operation.
    pub id: String,
    pub phase: Phase,
    /// The Kubernetes identity (SelfSubjectReview), when known.
    pub user: Option<String>,
    pub context: String,
    /// Where the operation came from: a screen, a runbook step, the command line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Value>,
    pub operation: Value,
    /// The file the request's manifest was also saved to for review (a new group's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    /// The exact request and its precondition (before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<Value>,
    /// The preflight checklist (before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preflight: Option<Value>,
    /// `sent`, `conflict`, `refused`, `failed` (after).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The journal: appends records, one line each, flushed before the write is sent.
pub struct Journal {
    dir: PathBuf,
    writer: Mutex<tracing_appender::rolling::RollingFileAppender>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("dir", &self.dir).finish()
    }
}

impl Journal {
    /// Opens (creating) the journal in `dir`.
    pub fn open(dir: &Path) -> Result<Journal, JournalError> {
        std::fs::create_dir_all(dir)
            .map_err(|source| JournalError::Folder { path: dir.to_owned(), source })?;
        let writer = tracing_appender::rolling::Builder::new()
            .rotation(tracing_appender::rolling::Rotation::DAILY)
            .filename_prefix(FILE_PREFIX)
            .build(dir)
            .map_err(|error| JournalError::Folder {
                path: dir.to_owned(),
                source: std::io::Error::other(error),
            })?;
        Ok(Journal { dir: dir.to_owned(), writer: Mutex::new(writer) })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one record as a line and flushes it.
    pub fn append(&self, record: &Record) -> Result<(), JournalError> {
        let mut line = serde_json::to_vec(record).map_err(|error| JournalError::Write {
            path: self.dir.clone(),
            source: std::io::Error::other(error),
        })?;
        line.push(b'\n');
        let mut writer = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        writer
            .write_all(&line)
            .and_then(|()| writer.flush())
            .map_err(|source| JournalError::Write { path: self.dir.clone(), source })
    }

    /// Every record in the folder, oldest file first (tests, `doctor`).
    pub fn read_all(dir: &Path) -> Result<Vec<Value>, JournalError> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|source| JournalError::Folder { path: dir.to_owned(), source })?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| name.starts_with(FILE_PREFIX))
            })
            .collect();
        files.sort();
        let mut records = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file)
                .map_err(|source| JournalError::Write { path: file.clone(), source })?;
            records.extend(text.lines().filter_map(|line| serde_json::from_str(line).ok()));
        }
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_json_lines_in_a_daily_file() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        let record = Record {
            time: "2026-04-20T14:40:00Z".parse().unwrap(),
            id: "op-1".to_owned(),
            phase: Phase::Before,
            user: Some("alice".to_owned()),
            context: "lab".to_owned(),
            origin: Some(serde_json::json!({ "runbook": "hold", "step": "acknowledge" })),
            operation: serde_json::json!({ "op": "reclone" }),
            manifest: None,
            request: None,
            preflight: None,
            result: None,
            status: None,
            resource_version: None,
            error: None,
        };
        journal.append(&record).unwrap();
        journal
            .append(&Record { phase: Phase::After, result: Some("sent".to_owned()), ..record })
            .unwrap();
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(names[0].starts_with("operations.jsonl."), "{names:?}");
        let records = Journal::read_all(dir.path()).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0]["phase"], "before");
        assert_eq!(records[0]["origin"]["runbook"], "hold");
        assert_eq!(records[1]["result"], "sent");
    }
}
