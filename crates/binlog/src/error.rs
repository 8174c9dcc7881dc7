//! The crate's one error type: where in the file, which event, and why.

use std::fmt;

use crate::EventType;

/// A parse problem at a byte offset of the binlog file.
///
/// The offset is the start of the event that failed (or of the magic number);
/// `event_type` is `None` when the header itself could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("binlog byte {offset}: {}: {kind}", EventLabel(*event_type))]
pub struct Error {
    offset: u64,
    event_type: Option<EventType>,
    kind: ErrorKind,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(offset: u64, event_type: Option<EventType>, kind: ErrorKind) -> Self {
        Error { offset, event_type, kind }
    }

    /// Byte offset in the file where the failing event (or the file) starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn event_type(&self) -> Option<EventType> {
        self.event_type
    }

    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The file ended inside an event (or before the magic number): more bytes
    /// may still arrive if the file is being written.
    pub fn is_truncation(&self) -> bool {
        matches!(self.kind, ErrorKind::Truncated { .. })
    }
}

struct EventLabel(Option<EventType>);

impl fmt::Display for EventLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(event_type) => write!(f, "{event_type} event"),
            None => f.write_str("event header"),
        }
    }
}

/// Why a binlog could not be parsed further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    #[error("not a binlog file: magic number is {found:02x?}, expected fe 62 69 6e")]
    BadMagic { found: Vec<u8> },
    #[error("file ends after {available} of {needed} bytes")]
    Truncated { needed: u64, available: u64 },
    #[error("event size {size} is smaller than its {minimum}-byte header and checksum")]
    EventTooSmall { size: u32, minimum: u32 },
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch { stored: u32, computed: u32 },
    #[error("the first event is not a format description")]
    MissingFormatDescription,
    #[error("unsupported checksum algorithm {0}")]
    UnsupportedChecksum(u8),
    #[error("unsupported event header length {0} (binlog v4 uses 19)")]
    UnsupportedHeaderLength(u8),
    #[error("malformed body: {0}")]
    Malformed(String),
}

pub(crate) fn malformed(reason: impl Into<String>) -> ErrorKind {
    ErrorKind::Malformed(reason.into())
}
