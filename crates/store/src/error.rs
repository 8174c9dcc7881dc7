//! The one error type of the store layer, and its classification.
//!
//! Every failure is classified so that the archive can decide without string matching:
//! [`ErrorKind::Transient`] is retried (see [`crate::retry`]) and never reported as damage,
//! [`ErrorKind::PermissionDenied`] carries the S3 status/code or the errno so the archive can
//! name the remedy (`PITRArchiveListFailed`), and everything else is permanent.

use std::fmt;

/// The store operation that failed; part of every error message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    List,
    Head,
    Get,
    Put,
    Create,
    Delete,
    Open,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::List => "list",
            Operation::Head => "head",
            Operation::Get => "get",
            Operation::Put => "put",
            Operation::Create => "create",
            Operation::Delete => "delete",
            Operation::Open => "open",
        })
    }
}

/// Why a request was refused for permission: what the archive needs to pick its remedy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denial {
    /// The S3 endpoint answered 401 or 403 (`AccessDenied`, `InvalidAccessKeyId`,
    /// `SignatureDoesNotMatch`, ...). Remedy for a listing: grant `s3:ListBucket`.
    S3 { status: u16, code: Option<String>, message: Option<String> },
    /// The filesystem refused (`EACCES`, `EPERM`, `EROFS`). Remedy: make the archive volume
    /// readable (or writable) by the process's user.
    Filesystem { errno: i32, name: &'static str },
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denial::S3 { status, code, message } => {
                write!(f, "S3 {status}")?;
                if let Some(code) = code {
                    write!(f, " {code}")?;
                }
                if let Some(message) = message {
                    write!(f, ": {message}")?;
                }
                Ok(())
            }
            Denial::Filesystem { errno, name } => write!(f, "{name} (errno {errno})"),
        }
    }
}

/// The coarse class of an [`Error`], for callers that branch on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The object does not exist.
    NotFound,
    /// An atomic create found the key taken (S3 412 `PreconditionFailed`, `EEXIST`).
    AlreadyExists,
    /// The store refused for permission; see [`Denial`].
    PermissionDenied,
    /// Worth retrying: timeouts, connection failures, 5xx, throttling, I/O errors.
    Transient,
    /// The key or prefix is not a valid object key; nothing was sent to the store.
    InvalidKey,
    /// An empty byte range was requested; nothing was sent to the store.
    InvalidRange,
    /// The filesystem path crosses a symbolic link; refused so nothing leaves the root.
    SymlinkRefused,
    /// The store does not implement a feature the request needs (S3 501 `NotImplemented`).
    Unsupported,
    /// The store configuration is unusable (bad endpoint, missing bucket, missing root
    /// directory).
    InvalidConfig,
    /// Any other failure that retrying will not fix.
    Permanent,
}

/// A store failure. Messages name the store, the operation and the key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{operation} {key:?} in {store}: object not found")]
    NotFound { store: String, operation: Operation, key: String },

    #[error("{operation} in {store}: the bucket does not exist: {detail}")]
    BucketNotFound { store: String, operation: Operation, detail: String },

    #[error("{operation} {key:?} in {store}: object already exists")]
    AlreadyExists { store: String, operation: Operation, key: String },

    #[error("{operation} {key:?} in {store}: permission denied: {denial}")]
    PermissionDenied { store: String, operation: Operation, key: String, denial: Denial },

    #[error("{operation} {key:?} in {store}: transient error: {detail}")]
    Transient { store: String, operation: Operation, key: String, detail: String },

    #[error("invalid object key {key:?} at byte {position}: {reason}")]
    InvalidKey { key: String, position: usize, reason: &'static str },

    #[error("invalid byte range {start}..{end} for {key:?}: the range is empty")]
    InvalidRange { key: String, start: u64, end: u64 },

    #[error(
        "{operation} {key:?} in {store}: refused: path component {component:?} is a symbolic link \
         (paths are resolved inside the store root only)"
    )]
    SymlinkRefused { store: String, operation: Operation, key: String, component: String },

    #[error("{operation} {key:?} in {store}: not supported by the store: {detail}")]
    Unsupported { store: String, operation: Operation, key: String, detail: String },

    #[error("invalid store configuration: {detail}")]
    InvalidConfig { detail: String },

    #[error("{operation} {key:?} in {store}: {detail}")]
    Permanent { store: String, operation: Operation, key: String, detail: String },
}

impl Error {
    /// The class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::BucketNotFound { .. } => ErrorKind::InvalidConfig,
            Error::AlreadyExists { .. } => ErrorKind::AlreadyExists,
            Error::PermissionDenied { .. } => ErrorKind::PermissionDenied,
            Error::Transient { .. } => ErrorKind::Transient,
            Error::InvalidKey { .. } => ErrorKind::InvalidKey,
            Error::InvalidRange { .. } => ErrorKind::InvalidRange,
            Error::SymlinkRefused { .. } => ErrorKind::SymlinkRefused,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::InvalidConfig { .. } => ErrorKind::InvalidConfig,
            Error::Permanent { .. } => ErrorKind::Permanent,
        }
    }

    /// Whether retrying the same request may succeed.
    pub fn is_transient(&self) -> bool {
        self.kind() == ErrorKind::Transient
    }

    /// The permission detail, when this is [`Error::PermissionDenied`].
    pub fn denial(&self) -> Option<&Denial> {
        match self {
            Error::PermissionDenied { denial, .. } => Some(denial),
            _ => None,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
