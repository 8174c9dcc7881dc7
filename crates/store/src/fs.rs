//! The filesystem store: the PVC layout.
//!
//! Objects are regular files under a root directory; a key's segments are directories and a
//! file name. Every path is resolved from the root one component at a time with
//! `openat(.., O_NOFOLLOW)`, so a symbolic link anywhere below the root (an intermediate
//! directory replaced by a link, or a link in place of an object) is refused
//! ([`Error::SymlinkRefused`]) instead of followed, for reads, writes, listings and deletes.
//! The root itself is configuration and may be reached through links.
//!
//! - `put` writes a temporary file in the target directory, `fsync`s it and `rename(2)`s it
//!   over the key, then `fsync`s the directory: readers see the old or the new body.
//! - `create` writes and `fsync`s a temporary file the same way and `link(2)`s it to the key:
//!   the link fails with `EEXIST` when the key exists ([`Error::AlreadyExists`]), so exactly
//!   one of several concurrent creators wins. The temporary name is always removed.
//! - `delete` is idempotent and leaves empty directories in place (removing them would race
//!   with a concurrent `put` into the same directory).
//! - Temporary files are named `.bloodraven-tmp-<16 hex>` ([`crate::key::TEMP_PREFIX`]),
//!   never listed, and never valid keys.
//!
//! The blocking system calls run on tokio's blocking pool.

use std::fs::File;
use std::io::Write as _;
use std::ops::Range;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, CWD, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::error::{Denial, Error, Operation, Result};
use crate::key::{TEMP_PREFIX, validate_key, validate_prefix};
use crate::random::random_hex16;
use crate::{ListPage, Object, ObjectMeta, ObjectStore, check_range, clamp_page_size};

/// A store rooted at a directory (the archive volume's mount plus sub-path).
#[derive(Clone, Debug)]
pub struct FsStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    label: String,
}

impl FsStore {
    /// A store rooted at `root`, which must be an existing directory.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        let label = format!("pvc:{}", root.display());
        let inner = Inner { root, label };
        inner.open_root(&Ctx { store: &inner.label, operation: Operation::Open, key: "" })?;
        Ok(FsStore { inner: Arc::new(inner) })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    async fn blocking<T, F>(&self, operation: Operation, key: &str, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Inner, &Ctx<'_>) -> Result<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        let owned_key = key.to_owned();
        let joined = tokio::task::spawn_blocking(move || {
            let ctx = Ctx { store: &inner.label, operation, key: &owned_key };
            work(&inner, &ctx)
        })
        .await;
        joined.unwrap_or_else(|join_error| {
            let (store, key) = (self.inner.label.clone(), key.to_owned());
            let detail = format!("filesystem task failed: {join_error}");
            // A cancelled task (runtime shutting down) is worth retrying; a panic is not.
            Err(if join_error.is_cancelled() {
                Error::Transient { store, operation, key, detail }
            } else {
                Error::Permanent { store, operation, key, detail }
            })
        })
    }
}

impl ObjectStore for FsStore {
    fn describe(&self) -> &str {
        &self.inner.label
    }

    async fn list(
        &self,
        prefix: &str,
        continuation: Option<&str>,
        page_size: u32,
    ) -> Result<ListPage> {
        let continuation = continuation.map(str::to_owned);
        self.blocking(Operation::List, prefix, move |inner, ctx| {
            inner.list(ctx, continuation.as_deref(), clamp_page_size(page_size))
        })
        .await
    }

    async fn head(&self, key: &str) -> Result<ObjectMeta> {
        self.blocking(Operation::Head, key, |inner, ctx| {
            let (file, size) = inner.open_object(ctx)?;
            drop(file);
            Ok(ObjectMeta { key: ctx.key.to_owned(), size })
        })
        .await
    }

    async fn get(&self, key: &str) -> Result<Object> {
        self.blocking(Operation::Get, key, |inner, ctx| inner.read(ctx, 0..u64::MAX)).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Object> {
        check_range(key, &range)?;
        self.blocking(Operation::Get, key, move |inner, ctx| inner.read(ctx, range)).await
    }

    async fn put(&self, key: &str, body: Vec<u8>) -> Result<()> {
        self.blocking(Operation::Put, key, move |inner, ctx| {
            inner.write(ctx, &body, Publish::Rename)
        })
        .await
    }

    async fn create(&self, key: &str, body: Vec<u8>) -> Result<()> {
        self.blocking(Operation::Create, key, move |inner, ctx| {
            inner.write(ctx, &body, Publish::Link)
        })
        .await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        self.blocking(Operation::Delete, key, |inner, ctx| inner.delete(ctx)).await
    }
}

/// The operation being run, for error messages and classification.
struct Ctx<'a> {
    store: &'a str,
    operation: Operation,
    key: &'a str,
}

impl Ctx<'_> {
    fn writes(&self) -> bool {
        matches!(self.operation, Operation::Put | Operation::Create)
    }

    /// Classifies a failed system call.
    fn errno(&self, errno: Errno) -> Error {
        let (store, operation, key) = (self.store.to_owned(), self.operation, self.key.to_owned());
        let detail = std::io::Error::from(errno).to_string();
        match errno {
            Errno::NOENT => Error::NotFound { store, operation, key },
            Errno::EXIST => Error::AlreadyExists { store, operation, key },
            Errno::ACCESS | Errno::PERM | Errno::ROFS => {
                let name = match errno {
                    Errno::ACCESS => "EACCES",
                    Errno::PERM => "EPERM",
                    _ => "EROFS",
                };
                let denial = Denial::Filesystem { errno: errno.raw_os_error(), name };
                Error::PermissionDenied { store, operation, key, denial }
            }
            Errno::IO
            | Errno::INTR
            | Errno::AGAIN
            | Errno::BUSY
            | Errno::NOSPC
            | Errno::DQUOT
            | Errno::STALE
            | Errno::TIMEDOUT
            | Errno::NOMEM
            | Errno::NFILE
            | Errno::MFILE
            | Errno::NOBUFS
            | Errno::NOLCK
            | Errno::CONNRESET
            | Errno::CONNABORTED
            | Errno::HOSTUNREACH
            | Errno::NETUNREACH => Error::Transient { store, operation, key, detail },
            _ => Error::Permanent { store, operation, key, detail },
        }
    }

    fn io(&self, error: std::io::Error) -> Error {
        match error.raw_os_error() {
            Some(raw) => self.errno(Errno::from_raw_os_error(raw)),
            None => Error::Transient {
                store: self.store.to_owned(),
                operation: self.operation,
                key: self.key.to_owned(),
                detail: error.to_string(),
            },
        }
    }

    fn symlink(&self, component: &str) -> Error {
        Error::SymlinkRefused {
            store: self.store.to_owned(),
            operation: self.operation,
            key: self.key.to_owned(),
            component: component.to_owned(),
        }
    }

    fn permanent(&self, detail: String) -> Error {
        Error::Permanent {
            store: self.store.to_owned(),
            operation: self.operation,
            key: self.key.to_owned(),
            detail,
        }
    }

    fn not_found(&self) -> Error {
        Error::NotFound {
            store: self.store.to_owned(),
            operation: self.operation,
            key: self.key.to_owned(),
        }
    }

    /// Classifies a failed open of `name` in `dir` (`component` is its path from the root),
    /// telling a symbolic link (refused) from other failures.
    fn component(&self, dir: &OwnedFd, name: &str, component: &str, errno: Errno) -> Error {
        if matches!(errno, Errno::LOOP | Errno::NOTDIR | Errno::MLINK)
            && file_type_at(dir, name) == Ok(Some(FileType::Symlink))
        {
            return self.symlink(component);
        }
        match errno {
            Errno::NOTDIR if self.writes() => {
                self.permanent(format!("path component {component:?} is not a directory"))
            }
            Errno::NOTDIR => self.not_found(),
            _ => self.errno(errno),
        }
    }
}

/// How a written temporary file becomes the object.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Publish {
    Rename,
    Link,
}

const DIR_FLAGS: OFlags =
    OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

fn open_dir_at(dir: &OwnedFd, name: &str) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty())
}

/// The type of `name` in `dir` without following a link; `None` when it does not exist.
fn file_type_at(dir: &OwnedFd, name: &str) -> rustix::io::Result<Option<FileType>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some(FileType::from_raw_mode(stat.st_mode))),
        Err(Errno::NOENT) => Ok(None),
        Err(errno) => Err(errno),
    }
}

fn size_of(stat: &rustix::fs::Stat) -> u64 {
    u64::try_from(stat.st_size).unwrap_or(0)
}

impl Inner {
    fn open_root(&self, ctx: &Ctx<'_>) -> Result<OwnedFd> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        rustix::fs::openat(CWD, &self.root, flags, Mode::empty()).map_err(|errno| match errno {
            Errno::NOENT | Errno::NOTDIR => Error::InvalidConfig {
                detail: format!(
                    "store root {} is not a directory: {}",
                    self.root.display(),
                    std::io::Error::from(errno)
                ),
            },
            errno => ctx.errno(errno),
        })
    }

    /// Opens the directories `segments` below the root without following links. `None` when
    /// one is missing and `create` is false.
    fn open_dirs(&self, ctx: &Ctx<'_>, segments: &[&str], create: bool) -> Result<Option<OwnedFd>> {
        let mut dir = self.open_root(ctx)?;
        for (index, name) in segments.iter().enumerate() {
            let component = || segments[..=index].join("/");
            dir = match open_dir_at(&dir, name) {
                Ok(next) => next,
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&dir, *name, Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(errno) => return Err(ctx.component(&dir, name, &component(), errno)),
                    }
                    open_dir_at(&dir, name)
                        .map_err(|errno| ctx.component(&dir, name, &component(), errno))?
                }
                Err(Errno::NOENT) => return Ok(None),
                Err(errno) => return Err(ctx.component(&dir, name, &component(), errno)),
            };
        }
        Ok(Some(dir))
    }

    /// Opens the object `ctx.key` for reading and returns it with its size.
    fn open_object(&self, ctx: &Ctx<'_>) -> Result<(File, u64)> {
        let segments = validate_key(ctx.key)?;
        let (name, parents) = segments.split_last().ok_or_else(|| ctx.not_found())?;
        let dir = self.open_dirs(ctx, parents, false)?.ok_or_else(|| ctx.not_found())?;
        // O_NONBLOCK: opening a FIFO planted at the key must not hang; no effect on files.
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = rustix::fs::openat(&dir, *name, flags, Mode::empty())
            .map_err(|errno| ctx.component(&dir, name, ctx.key, errno))?;
        let stat = rustix::fs::fstat(&fd).map_err(|errno| ctx.errno(errno))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(ctx.not_found());
        }
        Ok((File::from(fd), size_of(&stat)))
    }

    fn read(&self, ctx: &Ctx<'_>, range: Range<u64>) -> Result<Object> {
        let (file, total_size) = self.open_object(ctx)?;
        let start = range.start.min(total_size);
        let end = range.end.min(total_size);
        let length = usize::try_from(end - start).map_err(|_| {
            ctx.permanent(format!("range of {} bytes does not fit in memory", end - start))
        })?;
        let mut bytes = vec![0; length];
        file.read_exact_at(&mut bytes, start).map_err(|error| match error.kind() {
            // Objects are replaced by rename, never truncated in place; a short read means
            // the file was changed behind the store's back.
            std::io::ErrorKind::UnexpectedEof => Error::Transient {
                store: ctx.store.to_owned(),
                operation: ctx.operation,
                key: ctx.key.to_owned(),
                detail: "the file shrank while it was read".to_owned(),
            },
            _ => ctx.io(error),
        })?;
        Ok(Object { bytes, total_size })
    }

    fn write(&self, ctx: &Ctx<'_>, body: &[u8], publish: Publish) -> Result<()> {
        let segments = validate_key(ctx.key)?;
        let (name, parents) = segments.split_last().ok_or_else(|| ctx.not_found())?;
        let dir = self
            .open_dirs(ctx, parents, true)?
            .ok_or_else(|| ctx.permanent("directory vanished while it was created".to_owned()))?;
        let temp = write_temp(ctx, &dir, body)?;
        let published = match publish {
            Publish::Rename => rustix::fs::renameat(&dir, &temp, &dir, *name),
            Publish::Link => rustix::fs::linkat(&dir, &temp, &dir, *name, AtFlags::empty()),
        };
        let removed = match (publish, &published) {
            // A successful rename consumed the temporary name.
            (Publish::Rename, Ok(())) => Ok(()),
            _ => rustix::fs::unlinkat(&dir, &temp, AtFlags::empty()),
        };
        match published {
            Ok(()) => {}
            Err(Errno::ISDIR) => {
                return Err(ctx.permanent("the key names a directory".to_owned()));
            }
            Err(errno) => return Err(ctx.errno(errno)),
        }
        removed.map_err(|errno| ctx.errno(errno))?;
        rustix::fs::fsync(&dir).map_err(|errno| ctx.errno(errno))
    }

    fn delete(&self, ctx: &Ctx<'_>) -> Result<()> {
        let segments = validate_key(ctx.key)?;
        let (name, parents) = segments.split_last().ok_or_else(|| ctx.not_found())?;
        let Some(dir) = self.open_dirs(ctx, parents, false)? else { return Ok(()) };
        match file_type_at(&dir, name).map_err(|errno| ctx.errno(errno))? {
            None | Some(FileType::Directory) => return Ok(()),
            Some(FileType::Symlink) => return Err(ctx.symlink(ctx.key)),
            Some(_) => {}
        }
        match rustix::fs::unlinkat(&dir, *name, AtFlags::empty()) {
            Ok(()) => rustix::fs::fsync(&dir).map_err(|errno| ctx.errno(errno)),
            Err(Errno::NOENT | Errno::ISDIR) => Ok(()),
            Err(errno) => Err(ctx.errno(errno)),
        }
    }

    fn list(&self, ctx: &Ctx<'_>, continuation: Option<&str>, page_size: u32) -> Result<ListPage> {
        let prefix = validate_prefix(ctx.key)?;
        let Some(dir) = self.open_dirs(ctx, &prefix.directories, false)? else {
            return Ok(ListPage::default());
        };
        let mut base = prefix.directories.join("/");
        if !base.is_empty() {
            base.push('/');
        }
        let mut objects = Vec::new();
        walk(ctx, &dir, &base, prefix.partial, &mut objects)?;
        objects.sort_unstable_by(|left, right| left.key.cmp(&right.key));
        if let Some(after) = continuation {
            let first = objects.partition_point(|object| object.key.as_str() <= after);
            objects.drain(..first);
        }
        let limit = usize::try_from(page_size).unwrap_or(usize::MAX);
        let next = if objects.len() > limit {
            objects.truncate(limit);
            objects.last().map(|object| object.key.clone())
        } else {
            None
        };
        Ok(ListPage { objects, next })
    }
}

/// Writes `body` to a new temporary file in `dir` and syncs it; returns its name.
fn write_temp(ctx: &Ctx<'_>, dir: &OwnedFd, body: &[u8]) -> Result<String> {
    let suffix = random_hex16().map_err(|error| ctx.io(error))?;
    let temp = format!("{TEMP_PREFIX}{suffix}");
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, &temp, flags, Mode::from_raw_mode(0o644))
        .map_err(|errno| ctx.errno(errno))?;
    let mut file = File::from(fd);
    let written = file.write_all(body).and_then(|()| file.sync_all());
    if let Err(error) = written {
        let _ = rustix::fs::unlinkat(dir, &temp, AtFlags::empty());
        return Err(ctx.io(error));
    }
    Ok(temp)
}

/// Collects the regular files below `dir` whose names start with `partial` (only at this
/// level), as keys `base + name`. Links are refused, temporary files and other file types are
/// skipped, and entries deleted during the walk are ignored.
fn walk(
    ctx: &Ctx<'_>,
    dir: &OwnedFd,
    base: &str,
    partial: &str,
    out: &mut Vec<ObjectMeta>,
) -> Result<()> {
    let entries = Dir::read_from(dir.as_fd()).map_err(|errno| ctx.errno(errno))?;
    for entry in entries {
        let entry = entry.map_err(|errno| ctx.errno(errno))?;
        let Ok(name) = entry.file_name().to_str() else {
            tracing::debug!(store = ctx.store, base, "skipping a file name that is not UTF-8");
            continue;
        };
        if name == "."
            || name == ".."
            || name.starts_with(TEMP_PREFIX)
            || !name.starts_with(partial)
        {
            continue;
        }
        let key = format!("{base}{name}");
        let file_type = match entry.file_type() {
            FileType::Unknown => match file_type_at(dir, name).map_err(|errno| ctx.errno(errno))? {
                Some(file_type) => file_type,
                None => continue,
            },
            file_type => file_type,
        };
        match file_type {
            FileType::Symlink => return Err(ctx.symlink(&key)),
            FileType::Directory => {
                let child = match open_dir_at(dir, name) {
                    Ok(child) => child,
                    Err(Errno::NOENT) => continue,
                    Err(errno) => return Err(ctx.component(dir, name, &key, errno)),
                };
                walk(ctx, &child, &format!("{key}/"), "", out)?;
            }
            FileType::RegularFile => match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            {
                Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
                    out.push(ObjectMeta { key, size: size_of(&stat) });
                }
                Ok(_) | Err(Errno::NOENT) => {}
                Err(errno) => return Err(ctx.errno(errno)),
            },
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn classify(errno: Errno) -> Error {
        Ctx { store: "pvc:/archive", operation: Operation::List, key: "binlogs/" }.errno(errno)
    }

    #[test]
    fn permission_errors_carry_the_errno_for_the_remedy() {
        // Tests run as root, which bypasses EACCES; the classification is checked here.
        let error = classify(Errno::ACCESS);
        assert_eq!(error.kind(), ErrorKind::PermissionDenied);
        assert_eq!(error.denial(), Some(&Denial::Filesystem { errno: 13, name: "EACCES" }));
        assert_eq!(
            error.to_string(),
            r#"list "binlogs/" in pvc:/archive: permission denied: EACCES (errno 13)"#
        );
        assert_eq!(
            classify(Errno::PERM).denial(),
            Some(&Denial::Filesystem { errno: 1, name: "EPERM" })
        );
        assert_eq!(classify(Errno::ROFS).kind(), ErrorKind::PermissionDenied);
    }

    #[test]
    fn io_failures_are_transient_and_the_rest_permanent() {
        for errno in
            [Errno::IO, Errno::INTR, Errno::AGAIN, Errno::NOSPC, Errno::STALE, Errno::TIMEDOUT]
        {
            assert!(classify(errno).is_transient(), "{errno:?}");
        }
        assert_eq!(classify(Errno::NOENT).kind(), ErrorKind::NotFound);
        assert_eq!(classify(Errno::EXIST).kind(), ErrorKind::AlreadyExists);
        assert_eq!(classify(Errno::NAMETOOLONG).kind(), ErrorKind::Permanent);
        assert!(classify(Errno::IO).to_string().contains("transient error: Input/output error"));
    }
}
