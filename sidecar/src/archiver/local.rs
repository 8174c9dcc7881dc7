//! The server's local binlogs: the index, which files are sealed, and a file's archive row.
//!
//! MySQL lists its binlogs in `<basename>.index` in the data directory, oldest first; the last
//! entry is the active file and every earlier one is sealed. A sealed file is read once (one
//! open, one read), and the same bytes are scanned by `bloodraven-binlog` (coverage, GTIDs,
//! times), hashed (content id) and uploaded, so a path replaced mid-scan cannot put new bytes
//! under old metadata. Identities are cached by (name, inode, size, mtime) so unchanged files
//! are not rehashed on every scan.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use bloodraven_archive::ident::is_valid_binlog_name;
use bloodraven_archive::manifest::{FileRow, GtidCoverage};
use bloodraven_archive::{ContentId, ContentIdKey};
use bloodraven_binlog::FileSummary;
use bloodraven_gtid::GtidSet;
use jiff::Timestamp;

/// Why the local binlogs cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The index cannot be read.
    #[error("binlog index {}: {source}; check the data volume mount", path.display())]
    Index { path: PathBuf, source: std::io::Error },
    /// An index line is not a binlog file name.
    #[error("binlog index {} line {line}: {text:?} is not a binlog file name", path.display())]
    BadIndexLine { path: PathBuf, line: usize, text: String },
    /// A binlog file cannot be read.
    #[error("binlog {}: {source}", path.display())]
    File { path: PathBuf, source: std::io::Error },
}

/// Parses an index's text into file names (`./binlog.000001` → `binlog.000001`).
pub fn parse_index(text: &str) -> Result<Vec<String>, (usize, String)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            let name = line.trim().rsplit('/').next().unwrap_or_default();
            if is_valid_binlog_name(name) {
                Ok(name.to_owned())
            } else {
                Err((index + 1, line.to_owned()))
            }
        })
        .collect()
}

/// The local index of one server.
#[derive(Debug, Clone)]
pub struct LocalBinlogs {
    dir: PathBuf,
    index: PathBuf,
}

/// A sealed file read for archiving.
#[derive(Debug, Clone)]
pub struct SealedFile {
    /// The file name.
    pub name: String,
    /// The bytes (read once).
    pub bytes: Vec<u8>,
    /// The content id of the bytes.
    pub id: ContentId,
}

/// What the cache remembers of a file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FileIdentity {
    name: String,
    inode: u64,
    size: u64,
    mtime_ns: i128,
}

/// Content ids of unchanged files.
#[derive(Debug, Default)]
pub struct IdentityCache {
    ids: HashMap<FileIdentity, ContentId>,
}

impl LocalBinlogs {
    /// The binlogs of the server whose data directory is `dir` and index `<dir>/<index_name>`.
    pub fn new(dir: impl Into<PathBuf>, index_name: &str) -> Self {
        let dir = dir.into();
        let index = dir.join(index_name);
        LocalBinlogs { dir, index }
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every file the index lists, oldest first, and how many are sealed (all but the last).
    pub fn list(&self) -> Result<Vec<String>, LocalError> {
        let text = std::fs::read_to_string(&self.index)
            .map_err(|source| LocalError::Index { path: self.index.clone(), source })?;
        parse_index(&text).map_err(|(line, text)| LocalError::BadIndexLine {
            path: self.index.clone(),
            line,
            text,
        })
    }

    /// The sealed files' names, oldest first.
    pub fn sealed(&self) -> Result<Vec<String>, LocalError> {
        let mut names = self.list()?;
        names.pop();
        Ok(names)
    }

    /// The content id of a sealed file, from the cache when the file is unchanged.
    pub fn identity(
        &self,
        name: &str,
        key: &ContentIdKey,
        cache: &mut IdentityCache,
    ) -> Result<ContentId, LocalError> {
        let path = self.dir.join(name);
        let file_error = |source| LocalError::File { path: path.clone(), source };
        let meta = std::fs::metadata(&path).map_err(file_error)?;
        let identity = FileIdentity {
            name: name.to_owned(),
            inode: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        };
        if let Some(id) = cache.ids.get(&identity) {
            return Ok(*id);
        }
        let bytes = std::fs::read(&path).map_err(file_error)?;
        let id = key.content_id(&bytes);
        if bytes.len() as u64 == identity.size {
            cache.ids.insert(identity, id);
        }
        Ok(id)
    }

    /// Reads a sealed file once and computes its content id.
    pub fn read(&self, name: &str, key: &ContentIdKey) -> Result<SealedFile, LocalError> {
        let path = self.dir.join(name);
        let bytes = std::fs::read(&path)
            .map_err(|source| LocalError::File { path: path.clone(), source })?;
        let id = key.content_id(&bytes);
        Ok(SealedFile { name: name.to_owned(), bytes, id })
    }
}

fn commit_time(txn: &bloodraven_binlog::Transaction) -> Option<Timestamp> {
    match txn.original_commit_us.or(txn.immediate_commit_us) {
        Some(us) => Timestamp::from_microsecond(i64::try_from(us).ok()?).ok(),
        None => Timestamp::from_second(i64::from(txn.timestamp)).ok(),
    }
}

/// The manifest row of a sealed file (pure: the summary comes from `bloodraven_binlog::scan`).
pub fn row_for(
    site: &str,
    file: &SealedFile,
    summary: &FileSummary,
    archived_at: Timestamp,
) -> Result<FileRow, bloodraven_archive::Error> {
    let key = bloodraven_archive::ident::object_key(site, &file.name, &file.id)?;
    let file_time =
        |seconds: Option<u32>| seconds.and_then(|s| Timestamp::from_second(i64::from(s)).ok());
    let first =
        summary.transactions.first().and_then(commit_time).or(file_time(summary.first_event_time));
    let last = summary.transactions.last().and_then(commit_time).or(first);
    let mut gtids = GtidSet::new();
    for txn in &summary.transactions {
        if let bloodraven_binlog::TransactionId::Gtid(gtid) = &txn.id {
            let _ = gtids.insert(gtid);
        }
    }
    Ok(FileRow {
        name: file.name.clone(),
        id: Some(file.id),
        key,
        size: file.bytes.len() as u64,
        previous_gtids: summary.previous_gtids.clone().unwrap_or_default(),
        gtids,
        first_event_time: first,
        last_event_time: last,
        archived_at: Some(archived_at),
        gtid_coverage: Some(GtidCoverage {
            complete: summary.coverage.is_complete(),
            gtids: summary.coverage.gtids.clone(),
            content_id: Some(file.id),
            extra: Default::default(),
        }),
        divergent: false,
        quarantined: false,
        base_gtids: None,
        extra: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_lines_become_names_and_bad_lines_are_refused_with_their_line() {
        assert_eq!(
            parse_index("./binlog.000001\n./binlog.000002\n\n").unwrap(),
            ["binlog.000001", "binlog.000002"]
        );
        assert_eq!(parse_index("/var/lib/mysql/binlog.000007\n").unwrap(), ["binlog.000007"]);
        assert_eq!(parse_index("./binlog.000001\n./bad name\n").unwrap_err().0, 2);
    }

    #[test]
    fn the_last_listed_file_is_active_and_identities_are_cached() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("binlog.index"), "./binlog.000001\n./binlog.000002\n")
            .unwrap();
        std::fs::write(dir.path().join("binlog.000001"), b"sealed").unwrap();
        let local = LocalBinlogs::new(dir.path(), "binlog.index");
        assert_eq!(local.sealed().unwrap(), ["binlog.000001"]);
        let mut cache = IdentityCache::default();
        let id = local.identity("binlog.000001", &ContentIdKey::Plain, &mut cache).unwrap();
        assert_eq!(id, ContentIdKey::Plain.content_id(b"sealed"));
        assert_eq!(cache.ids.len(), 1);
        assert_eq!(local.read("binlog.000001", &ContentIdKey::Plain).unwrap().id, id);
    }
}
