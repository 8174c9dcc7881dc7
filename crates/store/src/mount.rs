//! The PVC archive store's volume check (spec: "The PVC archive store checks its volume").
//!
//! At store construction the PVC mount path (`/run/bloodraven/pitr-archive` in a pod) must be a
//! mount point listed in the container's `/proc/self/mountinfo`, and the writer must be able to
//! create a file under the archive prefix. The mountinfo text is passed in
//! ([`MountInfoSource`]), so tests and the lab can satisfy the check with a temporary
//! directory; production reads `/proc/self/mountinfo`.
//!
//! The messages are the spec's: `pvc archive store: <path> is not a mount point (it does not
//! exist)`, `... is not a mount point (it is inside <mount>, fstype <type>)` and `... is not
//! writable: <cause>`.

use std::io::ErrorKind as IoErrorKind;
use std::path::{Path, PathBuf};

use crate::random::random_hex16;

/// Where the mount table comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountInfoSource {
    /// `/proc/self/mountinfo` (production).
    ProcSelf,
    /// This text, in `/proc/self/mountinfo` format (tests and the lab).
    Text(String),
}

impl MountInfoSource {
    /// The mount table's text.
    pub fn read(&self) -> Result<String, MountCheckError> {
        match self {
            MountInfoSource::ProcSelf => std::fs::read_to_string("/proc/self/mountinfo")
                .map_err(|e| MountCheckError::MountInfoUnreadable(e.to_string())),
            MountInfoSource::Text(text) => Ok(text.clone()),
        }
    }
}

/// One line of mountinfo: the mount point and its filesystem type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    /// The mount point (octal escapes such as `\040` decoded).
    pub mount_point: PathBuf,
    /// The filesystem type (`ext4`, `overlay`, `tmpfs`).
    pub fstype: String,
}

/// Why the PVC archive store cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MountCheckError {
    /// The mount path does not exist (the usual result of a missing volume).
    #[error("pvc archive store: {} is not a mount point (it does not exist)", path.display())]
    Missing { path: PathBuf },
    /// The mount path is a directory inside another mount.
    #[error(
        "pvc archive store: {} is not a mount point (it is inside {}, fstype {fstype})",
        path.display(),
        mount.display()
    )]
    NotMountPoint { path: PathBuf, mount: PathBuf, fstype: String },
    /// A file cannot be created under the archive prefix.
    #[error("pvc archive store: {} is not writable: {cause}", path.display())]
    NotWritable { path: PathBuf, cause: String },
    /// The mount table could not be read.
    #[error("pvc archive store: cannot read /proc/self/mountinfo: {0}")]
    MountInfoUnreadable(String),
}

/// Parses mountinfo text; lines that do not have the format are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mount_point = left.split(' ').nth(4)?;
            let fstype = right.split(' ').next()?;
            Some(MountEntry {
                mount_point: unescape(mount_point).into(),
                fstype: fstype.to_owned(),
            })
        })
        .collect()
}

/// Decodes mountinfo's octal escapes (`\040` space, `\011` tab, `\012` newline, `\134` `\`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let octal = bytes.get(index + 1..index + 4).filter(|digits| {
            bytes[index] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d))
        });
        match octal {
            Some(digits) => {
                let value = digits.iter().fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                index += 4;
            }
            None => {
                out.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Checks that `mount_path` is a mount point of `mountinfo` (pure apart from resolving the
/// path: `canonicalize` to compare with the kernel's view).
pub fn check_mount_point(mount_path: &Path, mountinfo: &str) -> Result<(), MountCheckError> {
    let resolved = match std::fs::canonicalize(mount_path) {
        Ok(resolved) => resolved,
        Err(e) if e.kind() == IoErrorKind::NotFound => {
            return Err(MountCheckError::Missing { path: mount_path.to_owned() });
        }
        Err(e) => {
            return Err(MountCheckError::NotWritable {
                path: mount_path.to_owned(),
                cause: e.to_string(),
            });
        }
    };
    let entries = parse_mountinfo(mountinfo);
    if entries.iter().any(|entry| entry.mount_point == resolved) {
        return Ok(());
    }
    let inside = entries
        .iter()
        .filter(|entry| resolved.starts_with(&entry.mount_point))
        .max_by_key(|entry| entry.mount_point.as_os_str().len());
    let (mount, fstype) = match inside {
        Some(entry) => (entry.mount_point.clone(), entry.fstype.clone()),
        None => (PathBuf::from("/"), "unknown".to_owned()),
    };
    Err(MountCheckError::NotMountPoint { path: mount_path.to_owned(), mount, fstype })
}

/// The spec's construction check for a PVC archive store: `mount_path` is a mount point and an
/// empty file can be created (and removed) under `archive_dir` (created when missing). The
/// probe writes no data.
pub fn check_pvc_store(
    mount_path: &Path,
    archive_dir: &Path,
    source: &MountInfoSource,
) -> Result<(), MountCheckError> {
    let mountinfo = source.read()?;
    check_mount_point(mount_path, &mountinfo)?;
    let not_writable = |e: std::io::Error| MountCheckError::NotWritable {
        path: mount_path.to_owned(),
        cause: e.to_string(),
    };
    std::fs::create_dir_all(archive_dir).map_err(not_writable)?;
    let probe = archive_dir
        .join(format!(".bloodraven-write-probe-{}", random_hex16().map_err(not_writable)?));
    std::fs::OpenOptions::new().write(true).create_new(true).open(&probe).map_err(not_writable)?;
    std::fs::remove_file(&probe).map_err(not_writable)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
35 22 0:30 / /run rw,nosuid - tmpfs tmpfs rw
40 35 8:17 /volumes/pvc-1 /run/bloodraven/pitr\\040archive rw - ext4 /dev/sdb1 rw
garbage line
";

    #[test]
    fn parses_mount_points_and_escapes() {
        let entries = parse_mountinfo(SAMPLE);
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[2].mount_point, PathBuf::from("/run/bloodraven/pitr archive"));
        assert_eq!(entries[2].fstype, "ext4");
        assert_eq!(entries[1].fstype, "tmpfs");
    }

    #[test]
    fn a_missing_path_and_a_plain_directory_are_refused_with_the_spec_messages() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("absent");
        let error = check_mount_point(&missing, SAMPLE).unwrap_err();
        assert!(error.to_string().ends_with("is not a mount point (it does not exist)"), "{error}");

        let error = check_mount_point(dir.path(), SAMPLE).unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with("pvc archive store: "), "{text}");
        assert!(text.contains("is not a mount point (it is inside /, fstype ext4)"), "{text}");
    }

    #[test]
    fn an_injected_mount_table_satisfies_the_check_and_the_write_probe_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let table = format!("{SAMPLE}50 22 0:40 / {} rw - tmpfs tmpfs rw\n", root.display());
        let archive = root.join("ns/claim/binlogs");
        check_pvc_store(&root, &archive, &MountInfoSource::Text(table)).unwrap();
        assert_eq!(std::fs::read_dir(&archive).unwrap().count(), 0);
    }
}
