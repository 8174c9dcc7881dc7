//! Object keys of one backup artifact, relative to the profile's storage root (the S3 bucket
//! plus prefix, or the PVC mount plus `subPath`).
//!
//! ```text
//! <name>/@.json                      dump metadata, written before the data
//! <name>/dump-00000.sql.zst          mysqldump output, split into chunks (zstd or plain .sql)
//! <name>/dump-00001.sql.zst
//! <name>/@.done.json                 the completion marker, written last
//! <name>.bloodraven-backup.json      the backup stamp, a sibling of the dump directory
//! ```

use thiserror::Error;

/// The dump metadata's file name inside the dump directory.
pub const DUMP_JSON: &str = "@.json";
/// The completion marker's file name inside the dump directory.
pub const DONE_JSON: &str = "@.done.json";
/// The stamp's suffix, appended to the dump directory's key.
pub const STAMP_SUFFIX: &str = ".bloodraven-backup.json";
/// Where a PVC profile's claim is mounted in backup, restore and cleanup Jobs.
pub const PVC_MOUNT: &str = "/backups";
/// The longest a backup name (a Kubernetes object name) may be.
pub const MAX_NAME_LEN: usize = 253;

/// A bad backup name or chunk index.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LayoutError {
    #[error(
        "backup name {name:?} is not usable as an artifact directory: {reason}; use a Kubernetes object name (lowercase letters, digits, '-' and '.')"
    )]
    BadName { name: String, reason: &'static str },
    #[error("object {key:?} is not a dump chunk of {dir:?}")]
    NotAChunk { dir: String, key: String },
}

/// The keys of one backup's artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactLayout {
    name: String,
}

/// How a chunk's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkCompression {
    /// zstd frames (`.sql.zst`).
    Zstd,
    /// Plain SQL (`.sql`).
    None,
}

impl ChunkCompression {
    /// The file extension of a chunk.
    pub fn extension(self) -> &'static str {
        match self {
            ChunkCompression::Zstd => "sql.zst",
            ChunkCompression::None => "sql",
        }
    }

    /// The name written into `@.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChunkCompression::Zstd => "zstd",
            ChunkCompression::None => "none",
        }
    }

    /// Parses [`ChunkCompression::as_str`]'s output.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "zstd" => Some(ChunkCompression::Zstd),
            "none" => Some(ChunkCompression::None),
            _ => None,
        }
    }
}

impl ArtifactLayout {
    /// The layout of backup `name` (the MysqlBackup's name: the last segment of the location).
    pub fn new(name: &str) -> Result<Self, LayoutError> {
        let bad = |reason| LayoutError::BadName { name: name.to_owned(), reason };
        if name.is_empty() {
            return Err(bad("empty"));
        }
        if name.len() > MAX_NAME_LEN {
            return Err(bad("longer than 253 characters"));
        }
        if name == "." || name == ".." {
            return Err(bad("`.` and `..` are not names"));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        {
            return Err(bad("only lowercase letters, digits, '-' and '.' are allowed"));
        }
        Ok(ArtifactLayout { name: name.to_owned() })
    }

    /// The backup's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The dump directory's key (no trailing `/`).
    pub fn dir(&self) -> &str {
        &self.name
    }

    /// The listing prefix of everything in the dump directory (with the trailing `/`, so
    /// `x/backup-1/` never matches `x/backup-10`).
    pub fn dir_prefix(&self) -> String {
        format!("{}/", self.name)
    }

    /// `@.json`.
    pub fn dump_json(&self) -> String {
        format!("{}/{DUMP_JSON}", self.name)
    }

    /// `@.done.json`.
    pub fn done_json(&self) -> String {
        format!("{}/{DONE_JSON}", self.name)
    }

    /// The stamp, a sibling of the dump directory.
    pub fn stamp(&self) -> String {
        format!("{}{STAMP_SUFFIX}", self.name)
    }

    /// The file name (inside the directory) of chunk `index`.
    pub fn chunk_file(index: u32, compression: ChunkCompression) -> String {
        format!("dump-{index:05}.{}", compression.extension())
    }

    /// The key of chunk `index`.
    pub fn chunk(&self, index: u32, compression: ChunkCompression) -> String {
        format!("{}/{}", self.name, Self::chunk_file(index, compression))
    }

    /// The location recorded in `status.artifactStorage.location` for an S3 profile.
    pub fn s3_location(&self, bucket: &str, prefix: &str) -> String {
        let prefix = normalize_prefix(prefix);
        if prefix.is_empty() {
            format!("s3://{bucket}/{}", self.name)
        } else {
            format!("s3://{bucket}/{prefix}/{}", self.name)
        }
    }

    /// The location recorded for a PVC profile: `/backups[/<subPath>]/<name>`.
    pub fn pvc_location(&self, sub_path: Option<&str>) -> String {
        let sub = sub_path.map(normalize_prefix).unwrap_or_default();
        if sub.is_empty() {
            format!("{PVC_MOUNT}/{}", self.name)
        } else {
            format!("{PVC_MOUNT}/{sub}/{}", self.name)
        }
    }
}

/// Drops leading, trailing and repeated `/` (the S3 store's rule, also used for `subPath`).
pub fn normalize_prefix(prefix: &str) -> String {
    prefix.split('/').filter(|segment| !segment.is_empty()).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_an_artifact() {
        let layout = ArtifactLayout::new("orders-nightly-1").unwrap();
        assert_eq!(layout.dump_json(), "orders-nightly-1/@.json");
        assert_eq!(layout.done_json(), "orders-nightly-1/@.done.json");
        assert_eq!(layout.stamp(), "orders-nightly-1.bloodraven-backup.json");
        assert_eq!(layout.chunk(3, ChunkCompression::Zstd), "orders-nightly-1/dump-00003.sql.zst");
        assert_eq!(layout.chunk(3, ChunkCompression::None), "orders-nightly-1/dump-00003.sql");
        assert_eq!(layout.dir_prefix(), "orders-nightly-1/");
    }

    #[test]
    fn locations_end_with_the_name() {
        let layout = ArtifactLayout::new("b1").unwrap();
        assert_eq!(layout.s3_location("bk", "/orders//x/"), "s3://bk/orders/x/b1");
        assert_eq!(layout.s3_location("bk", ""), "s3://bk/b1");
        assert_eq!(layout.pvc_location(None), "/backups/b1");
        assert_eq!(layout.pvc_location(Some("a/")), "/backups/a/b1");
    }

    #[test]
    fn bad_names_are_refused() {
        for name in ["", "..", "a/b", "A", "a b", &"x".repeat(254)] {
            assert!(ArtifactLayout::new(name).is_err(), "{name:?} accepted");
        }
    }
}
