//! Sans-IO reader and writer for MySQL and MariaDB binary logs (binlog v4).
//!
//! * [`EventReader`] walks an in-memory file event by event, verifying CRC32
//!   checksums when the format description enables them, and decodes bodies into
//!   raw values borrowed from the input ([`Event`], [`EventBody`]).
//! * [`Scanner`] (and [`scan`] for a whole slice) summarizes a file fed in chunks
//!   of any size: previous GTIDs, transactions with their commit times and
//!   offsets, how the file ends, and the spec's `gtidCoverage` ([`Coverage`]).
//!   A partial file (the active binlog) yields everything up to its last complete
//!   event plus the first problem; nothing here panics or fails the whole file.
//! * [`Writer`] produces MySQL-format files with CRC32 for fixtures and the lab
//!   simulator.
//!
//! No IO happens here: callers read files and feed bytes. See `README.md` beside
//! this crate for the coverage rules, fixtures and benchmarks.

mod bytes;
mod error;
mod event;
mod event_type;
mod reader;
mod summary;
mod writer;

pub use crate::error::{Error, ErrorKind, Result};
pub use crate::event::{
    CHECKSUM_LEN, ChecksumAlgorithm, Compression, Event, EventBody, EventHeader, FormatDescription,
    GtidEvent, HEADER_LEN, IncidentEvent, LOG_EVENT_BINLOG_IN_USE_F, LOG_EVENT_IGNORABLE_F, MAGIC,
    MariaGtidEvent, PayloadEvent, QueryEvent, RotateEvent, RowsEvent, TableMapEvent,
    XaPrepareEvent, Xid, maria_flags,
};
pub use crate::event_type::EventType;
pub use crate::reader::EventReader;
pub use crate::summary::{
    Coverage, FileEnd, FileSummary, Flavor, Incomplete, IncompleteReason, ScanOptions, Scanner,
    Terminator, Transaction, TransactionId, scan,
};
pub use crate::writer::{RowsTable, TransactionBody, TransactionSpec, Writer, WriterOptions};
