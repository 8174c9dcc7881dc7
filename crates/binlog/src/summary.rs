//! The per-file summary: transactions, how the file ends, and GTID coverage.

use std::fmt;
use std::io::Read;

use bloodraven_gtid::{Gtid, GtidSet, MariaGtid, Tag, Uuid};

use crate::EventType;
use crate::error::{Error, ErrorKind};
use crate::event::{
    ChecksumAlgorithm, Compression, Event, EventBody, FormatDescription, PayloadEvent, maria_flags,
};
use crate::reader::{Framed, Framer, InnerError, next_plain};

/// Which server family wrote the file (from the format description).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    MySql,
    MariaDb,
}

/// How a transaction is identified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionId {
    /// A MySQL GTID (tagged or not).
    Gtid(Gtid),
    /// MySQL ANONYMOUS_GTID: written with `gtid_mode` OFF or in transition.
    Anonymous,
    /// A MariaDB GTID.
    Maria(MariaGtid),
    /// No GTID event at all (a `BEGIN` or statement outside any GTID).
    Missing,
}

/// The event that ended a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminator {
    /// XID (InnoDB commit).
    Xid(u64),
    /// `COMMIT` query (non-transactional engines).
    Commit,
    /// `ROLLBACK` query.
    Rollback,
    /// A statement that is a transaction by itself (DDL, `XA COMMIT`, `XA ROLLBACK`).
    Statement,
    /// XA_PREPARE event or `XA PREPARE` query.
    XaPrepare,
}

/// One transaction of the file, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    pub id: TransactionId,
    /// `server_id` from the header of the transaction's first event.
    pub server_id: u32,
    /// Header timestamp (seconds) of the first event.
    pub timestamp: u32,
    /// Original commit time in microseconds (MySQL 8.0.1+ GTID events; `None` otherwise).
    pub original_commit_us: Option<u64>,
    pub immediate_commit_us: Option<u64>,
    pub last_committed: Option<i64>,
    pub sequence_number: Option<i64>,
    /// The GTID event's declared transaction length (MySQL 8.0.2+).
    pub transaction_length: Option<u64>,
    /// File offset of the first event (the GTID event).
    pub start: u64,
    /// File offset just past the last event.
    pub end: u64,
    /// Events in the transaction, the GTID event and events inside a payload included.
    pub event_count: u32,
    pub row_events: u32,
    pub xa: bool,
    /// Whether the body came in a TRANSACTION_PAYLOAD.
    pub compressed: bool,
    /// `None` when the transaction never ended (the file or payload stopped inside it).
    pub terminator: Option<Terminator>,
}

/// How the parsed part of the file ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileEnd {
    /// No event after the magic number (or not even that).
    Empty,
    /// A STOP event (the server shut down).
    Stop { offset: u64 },
    /// A ROTATE event naming the next file.
    Rotate { offset: u64, next_file: String, position: u64 },
    /// The last event ends a transaction (or is outside one), but is not STOP or ROTATE:
    /// an active file, or a crash.
    CleanBoundary,
    /// The parsed bytes end inside the transaction starting at this offset.
    MidTransaction { transaction_start: u64 },
}

/// Why coverage is not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IncompleteReason {
    /// Parsing stopped (truncation, checksum mismatch, malformed event): see [`FileSummary::problem`].
    ParseStopped(ErrorKind),
    ChecksumDisabled,
    AnonymousTransaction,
    /// A transaction without any GTID event.
    MissingGtid,
    /// An event type the coverage rules do not accept (unknown, encrypted, compressed query, ...).
    UnsupportedEvent,
    Incident(String),
    /// A transaction that ended without its terminator (another GTID, ROTATE or STOP came first).
    UnterminatedTransaction,
    /// The file (as parsed) ends inside a transaction.
    EndsMidTransaction,
    /// An event that belongs in a transaction appeared outside one.
    EventOutsideTransaction,
    /// A TRANSACTION_PAYLOAD that does not immediately follow a GTID event.
    OrphanedPayload,
    /// A GTID or payload event inside a transaction payload.
    NestedInPayload,
    MalformedPayload(String),
    /// A format description after the first event.
    UnexpectedFormatDescription,
}

impl fmt::Display for IncompleteReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IncompleteReason::ParseStopped(kind) => write!(f, "parsing stopped: {kind}"),
            IncompleteReason::ChecksumDisabled => f.write_str("checksums are disabled"),
            IncompleteReason::AnonymousTransaction => f.write_str("anonymous transaction"),
            IncompleteReason::MissingGtid => f.write_str("transaction without a GTID event"),
            IncompleteReason::UnsupportedEvent => f.write_str("unsupported event"),
            IncompleteReason::Incident(message) => write!(f, "incident: {message}"),
            IncompleteReason::UnterminatedTransaction => {
                f.write_str("transaction without its terminator")
            }
            IncompleteReason::EndsMidTransaction => f.write_str("file ends inside a transaction"),
            IncompleteReason::EventOutsideTransaction => {
                f.write_str("transaction event outside a transaction")
            }
            IncompleteReason::OrphanedPayload => {
                f.write_str("transaction payload not immediately after a GTID event")
            }
            IncompleteReason::NestedInPayload => {
                f.write_str("GTID or payload event nested in a transaction payload")
            }
            IncompleteReason::MalformedPayload(reason) => {
                write!(f, "malformed transaction payload: {reason}")
            }
            IncompleteReason::UnexpectedFormatDescription => {
                f.write_str("format description after the first event")
            }
        }
    }
}

/// The first reason coverage is incomplete, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incomplete {
    pub offset: u64,
    pub event_type: Option<EventType>,
    pub reason: IncompleteReason,
}

impl fmt::Display for Incomplete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "binlog byte {}: ", self.offset)?;
        if let Some(event_type) = self.event_type {
            write!(f, "{event_type} event: ")?;
        }
        write!(f, "{}", self.reason)
    }
}

/// The spec's `gtidCoverage`: what the file provably holds.
///
/// Complete only when the whole file parsed with valid CRC32 checksums and every
/// transaction has a supported GTID event and its terminator. `gtids` holds the
/// GTIDs of terminated transactions only (never the previous-GTIDs set); for
/// MariaDB files they are in `maria_gtids`, in file order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Coverage {
    pub gtids: GtidSet,
    pub maria_gtids: Vec<MariaGtid>,
    /// `None` when coverage is complete.
    pub incomplete: Option<Incomplete>,
}

impl Coverage {
    pub fn is_complete(&self) -> bool {
        self.incomplete.is_none()
    }
}

/// Everything one pass learns about a binlog file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSummary {
    pub flavor: Option<Flavor>,
    pub format: Option<FormatDescription>,
    /// MySQL PREVIOUS_GTIDS (context only: never proof of the file's transactions).
    pub previous_gtids: Option<GtidSet>,
    /// MariaDB GTID_LIST: the binlog state when the file began.
    pub maria_gtid_list: Option<Vec<MariaGtid>>,
    /// MariaDB BINLOG_CHECKPOINT file names, in order.
    pub binlog_checkpoints: Vec<String>,
    pub transactions: Vec<Transaction>,
    /// Earliest and latest non-zero header timestamps (seconds) of top-level events.
    pub first_event_time: Option<u32>,
    pub last_event_time: Option<u32>,
    /// Top-level events parsed (events inside payloads are not counted here).
    pub event_count: u64,
    /// Events per type, payload contents included, ascending by type code.
    pub event_type_counts: Vec<(EventType, u64)>,
    pub end: FileEnd,
    /// Offset just past the last complete, valid event.
    pub parsed_len: u64,
    /// The first problem, where parsing stopped; `None` when every byte parsed.
    pub problem: Option<Error>,
    pub coverage: Coverage,
}

/// Limits for one scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanOptions {
    /// Largest decompressed transaction payload accepted; a larger one leaves
    /// coverage incomplete (the file is kept).
    pub max_payload_size: u64,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions { max_payload_size: 256 << 20 }
    }
}

/// Summarizes a complete in-memory binlog.
pub fn scan(bytes: &[u8]) -> FileSummary {
    let mut scanner = Scanner::new(ScanOptions::default());
    scanner.feed(bytes);
    scanner.finish()
}

/// Incremental summarizer: feed the file's bytes in order, in chunks of any size,
/// then [`finish`](Scanner::finish). Only an incomplete trailing event is buffered.
#[derive(Debug)]
pub struct Scanner {
    options: ScanOptions,
    framer: Framer,
    pending: Vec<u8>,
    /// File offset of `pending[0]` (or of the next byte when `pending` is empty).
    offset: u64,
    stopped: bool,
    problem: Option<Error>,
    scratch: Vec<u8>,
    zstd: Zstd,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// After a MySQL GTID event: a `BEGIN`, a single statement or a payload follows.
    AfterGtid,
    /// After a MariaDB standalone GTID: one statement follows.
    Standalone,
    /// Inside the body, waiting for the terminator.
    Body,
}

#[derive(Debug)]
struct Open {
    tx: Transaction,
    phase: Phase,
}

/// Where the event being handled sits.
#[derive(Debug, Clone, Copy)]
struct At {
    /// Offset of the event, or of the enclosing payload event.
    offset: u64,
    /// Offset just past the event (or the enclosing payload event).
    end: u64,
    inner: bool,
}

#[derive(Debug)]
struct State {
    format: Option<FormatDescription>,
    previous_gtids: Option<GtidSet>,
    maria_gtid_list: Option<Vec<MariaGtid>>,
    binlog_checkpoints: Vec<String>,
    transactions: Vec<Transaction>,
    open: Option<Open>,
    first_event_time: Option<u32>,
    last_event_time: Option<u32>,
    event_count: u64,
    type_counts: Box<[u64; 256]>,
    last_event: Option<(u64, EventType)>,
    rotate: Option<(u64, String, u64)>,
    incomplete: Option<Incomplete>,
    gtids: GtidSet,
    run: Option<Run>,
    maria_gtids: Vec<MariaGtid>,
}

/// Consecutive GTIDs of one source, merged before touching the set.
#[derive(Debug, Clone, Copy)]
struct Run {
    uuid: Uuid,
    tag: Option<Tag>,
    start: u64,
    end: u64,
}

impl Scanner {
    pub fn new(options: ScanOptions) -> Self {
        Scanner {
            options,
            framer: Framer::default(),
            pending: Vec::new(),
            offset: 0,
            stopped: false,
            problem: None,
            scratch: Vec::new(),
            zstd: Zstd::default(),
            state: State::new(),
        }
    }

    /// File offset just past the last complete event handled so far.
    pub fn position(&self) -> u64 {
        self.offset
    }

    /// Feeds the next bytes of the file. After a problem, further bytes are ignored.
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.stopped {
            return;
        }
        if self.pending.is_empty() {
            let used = self.consume(chunk);
            if !self.stopped {
                self.pending.extend_from_slice(&chunk[used..]);
            }
        } else {
            let mut pending = std::mem::take(&mut self.pending);
            pending.extend_from_slice(chunk);
            let used = self.consume(&pending);
            pending.drain(..used);
            if !self.stopped {
                self.pending = pending;
            }
        }
    }

    /// Handles every complete event at the start of `bytes`; returns the bytes used.
    fn consume(&mut self, bytes: &[u8]) -> usize {
        let mut pos = match self.framer.magic(bytes) {
            Ok(Some(len)) => {
                self.offset += len as u64;
                len
            }
            Ok(None) => return 0,
            Err(err) => {
                self.stop(err);
                return 0;
            }
        };
        while pos < bytes.len() {
            match self.framer.next(&bytes[pos..], self.offset) {
                Ok(Framed::Incomplete { .. }) => break,
                Ok(Framed::Event { event, len }) => {
                    let at =
                        At { offset: self.offset, end: self.offset + len as u64, inner: false };
                    self.handle(at, &event);
                    pos += len;
                    self.offset += len as u64;
                }
                Err(err) => {
                    self.stop(err);
                    break;
                }
            }
        }
        pos
    }

    fn stop(&mut self, err: Error) {
        self.stopped = true;
        self.pending = Vec::new();
        self.problem = Some(err);
    }

    /// Ends the scan: reports a trailing partial event as the problem and builds the summary.
    pub fn finish(mut self) -> FileSummary {
        // Bytes of an unfinished event, or a file without its format description yet.
        if !self.stopped && (!self.pending.is_empty() || self.framer.format().is_none()) {
            let available = self.pending.len() as u64;
            let err = if self.offset == 0 {
                Framer::short_file(&self.pending)
            } else {
                let event_type = if self.pending.len() >= crate::HEADER_LEN {
                    Some(EventType(self.pending[4]))
                } else {
                    None
                };
                let needed = match crate::EventHeader::decode(&self.pending) {
                    Some(header) => u64::from(header.event_size),
                    None => crate::HEADER_LEN as u64,
                };
                Error::new(self.offset, event_type, ErrorKind::Truncated { needed, available })
            };
            self.problem = Some(err);
        }
        let parsed_len = self.offset;
        let mut state = self.state;
        if let Some(problem) = &self.problem {
            state.flag(
                problem.offset(),
                problem.event_type(),
                IncompleteReason::ParseStopped(problem.kind().clone()),
            );
        }
        state.finish(parsed_len, self.problem)
    }

    fn handle(&mut self, at: At, event: &Event<'_>) {
        let event_type = event.header.event_type;
        if let EventBody::TransactionPayload(payload) = &event.body {
            self.state.count(at, event);
            let follows_gtid = matches!(
                &self.state.open,
                Some(Open { phase: Phase::AfterGtid, tx }) if tx.event_count == 1
            );
            if at.inner {
                self.state.flag(at.offset, Some(event_type), IncompleteReason::NestedInPayload);
            } else if !follows_gtid {
                self.state.flag(at.offset, Some(event_type), IncompleteReason::OrphanedPayload);
                if let Some(open) = &mut self.state.open {
                    open.tx.event_count += 1;
                    open.tx.end = at.end;
                }
            } else {
                self.payload(at, payload);
            }
            return;
        }
        self.state.event(at, event);
    }

    fn payload(&mut self, at: At, payload: &PayloadEvent<'_>) {
        let event_type = Some(EventType::TRANSACTION_PAYLOAD);
        if let Some(open) = &mut self.state.open {
            open.tx.event_count += 1;
            open.tx.end = at.end;
            open.tx.compressed = true;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.zstd.decompress(payload, self.options.max_payload_size, &mut scratch);
        match result {
            Err(reason) => {
                self.state.flag(at.offset, event_type, IncompleteReason::MalformedPayload(reason));
            }
            Ok(()) => {
                let inner_at = At { offset: at.offset, end: at.end, inner: true };
                let mut rest = &scratch[..];
                loop {
                    match next_plain(rest) {
                        Ok(None) => break,
                        Ok(Some((event, len))) => {
                            self.handle(inner_at, &event);
                            rest = &rest[len..];
                        }
                        Err(InnerError { event_type: inner_type, kind }) => {
                            let inner_offset = scratch.len() - rest.len();
                            let what = match inner_type {
                                Some(t) => {
                                    format!("{t} event at payload byte {inner_offset}: {kind}")
                                }
                                None => format!("event at payload byte {inner_offset}: {kind}"),
                            };
                            let reason = IncompleteReason::MalformedPayload(what);
                            self.state.flag(at.offset, event_type, reason);
                            break;
                        }
                    }
                }
            }
        }
        self.scratch = scratch;
        if self.scratch.capacity() > 4 << 20 {
            self.scratch = Vec::new();
        }
        // Whatever the payload held, the transaction must have ended inside it.
        if self.state.open.is_some() {
            self.state.flag(at.offset, event_type, IncompleteReason::UnterminatedTransaction);
            self.state.close(None);
        }
    }
}

/// A zstd decompression context kept across payloads: creating one per payload
/// costs more than decompressing a small transaction.
#[derive(Default)]
struct Zstd(Option<zstd::bulk::Decompressor<'static>>);

impl std::fmt::Debug for Zstd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Zstd(context)" } else { "Zstd(none)" })
    }
}

impl Zstd {
    fn decompress(
        &mut self,
        payload: &PayloadEvent<'_>,
        limit: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        out.clear();
        let declared = payload.uncompressed_size;
        if let Some(size) = declared
            && size > limit
        {
            return Err(format!("declared size {size} exceeds the {limit}-byte limit"));
        }
        match payload.compression {
            Compression::None => out.extend_from_slice(payload.payload),
            Compression::Zstd => match declared {
                // The usual case (MySQL always declares the size): one bounded call.
                Some(size) => {
                    let context = match &mut self.0 {
                        Some(context) => context,
                        None => self.0.insert(
                            zstd::bulk::Decompressor::new()
                                .map_err(|err| format!("zstd: {err}"))?,
                        ),
                    };
                    // `size` is at most `limit`, checked above.
                    out.reserve(size as usize);
                    context
                        .decompress_to_buffer(payload.payload, out)
                        .map_err(|err| format!("zstd: {err}"))?;
                }
                None => {
                    let decoder = zstd::stream::read::Decoder::new(payload.payload)
                        .map_err(|err| format!("zstd: {err}"))?;
                    decoder
                        .take(limit.saturating_add(1))
                        .read_to_end(out)
                        .map_err(|err| format!("zstd: {err}"))?;
                    if out.len() as u64 > limit {
                        return Err(format!("decompresses to more than {limit} bytes"));
                    }
                }
            },
            Compression::Unknown(code) => return Err(format!("unknown compression type {code}")),
        }
        if let Some(size) = declared
            && size != out.len() as u64
        {
            return Err(format!("declares {size} uncompressed bytes, holds {}", out.len()));
        }
        Ok(())
    }
}

/// The query text with leading whitespace and comments left to the caller: the
/// keyword classes the transaction state machine needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueryKind {
    Begin,
    Commit,
    Rollback,
    XaStart,
    XaPrepare,
    XaEnd,
    /// `XA COMMIT` or `XA ROLLBACK`: a transaction by itself.
    XaFinish,
    XaOther,
    Other,
}

fn classify(query: &[u8]) -> QueryKind {
    let query = skip_space(query);
    if keyword(query, b"BEGIN").is_some() {
        QueryKind::Begin
    } else if keyword(query, b"COMMIT").is_some() {
        QueryKind::Commit
    } else if let Some(rest) = keyword(query, b"ROLLBACK") {
        // `ROLLBACK [WORK] TO [SAVEPOINT] name` (logged when a transaction that
        // touched a non-transactional table rolls back to a savepoint) keeps the
        // transaction open.
        let rest = keyword(rest, b"WORK").unwrap_or(rest);
        if keyword(rest, b"TO").is_some() { QueryKind::Other } else { QueryKind::Rollback }
    } else if let Some(rest) = keyword(query, b"XA") {
        let starts =
            |word: &[u8]| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word);
        if starts(b"START") || starts(b"BEGIN") {
            QueryKind::XaStart
        } else if starts(b"PREPARE") {
            QueryKind::XaPrepare
        } else if starts(b"END") {
            QueryKind::XaEnd
        } else if starts(b"COMMIT") || starts(b"ROLLBACK") {
            QueryKind::XaFinish
        } else {
            QueryKind::XaOther
        }
    } else {
        QueryKind::Other
    }
}

fn skip_space(text: &[u8]) -> &[u8] {
    let start = text.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(text.len());
    &text[start..]
}

/// When `text` starts with the keyword `word` (any case, then a non-word byte or
/// the end): the text after it, leading whitespace skipped.
fn keyword<'a>(text: &'a [u8], word: &[u8]) -> Option<&'a [u8]> {
    let head = text.get(..word.len())?;
    let boundary = text.get(word.len()).is_none_or(|b| !b.is_ascii_alphanumeric() && *b != b'_');
    (head.eq_ignore_ascii_case(word) && boundary).then(|| skip_space(&text[word.len()..]))
}

/// Event types accepted inside a transaction body.
fn is_body_event(event_type: EventType) -> bool {
    event_type.is_rows()
        || matches!(
            event_type,
            EventType::TABLE_MAP
                | EventType::INTVAR
                | EventType::RAND
                | EventType::USER_VAR
                | EventType::ROWS_QUERY
                | EventType::VIEW_CHANGE
                | EventType::MARIADB_ANNOTATE_ROWS
                | EventType::IGNORABLE
        )
}

impl State {
    fn new() -> Self {
        State {
            format: None,
            previous_gtids: None,
            maria_gtid_list: None,
            binlog_checkpoints: Vec::new(),
            transactions: Vec::new(),
            open: None,
            first_event_time: None,
            last_event_time: None,
            event_count: 0,
            type_counts: Box::new([0; 256]),
            last_event: None,
            rotate: None,
            incomplete: None,
            gtids: GtidSet::new(),
            run: None,
            maria_gtids: Vec::new(),
        }
    }

    fn flag(&mut self, offset: u64, event_type: Option<EventType>, reason: IncompleteReason) {
        if self.incomplete.is_none() {
            self.incomplete = Some(Incomplete { offset, event_type, reason });
        }
    }

    fn count(&mut self, at: At, event: &Event<'_>) {
        let event_type = event.header.event_type;
        self.type_counts[usize::from(event_type.0)] += 1;
        if at.inner {
            return;
        }
        self.event_count += 1;
        self.last_event = Some((at.offset, event_type));
        let time = event.header.timestamp;
        if time != 0 {
            self.first_event_time = Some(self.first_event_time.map_or(time, |t| t.min(time)));
            self.last_event_time = Some(self.last_event_time.map_or(time, |t| t.max(time)));
        }
    }

    fn start(&mut self, at: At, event: &Event<'_>, id: TransactionId, phase: Phase) {
        if let Some(open) = &self.open {
            let start = open.tx.start;
            self.flag(start, None, IncompleteReason::UnterminatedTransaction);
            self.close(None);
        }
        let tx = Transaction {
            id,
            server_id: event.header.server_id,
            timestamp: event.header.timestamp,
            original_commit_us: None,
            immediate_commit_us: None,
            last_committed: None,
            sequence_number: None,
            transaction_length: None,
            start: at.offset,
            end: at.end,
            event_count: 1,
            row_events: 0,
            xa: false,
            compressed: false,
            terminator: None,
        };
        self.open = Some(Open { tx, phase });
    }

    /// Adds the event to the open transaction, if any.
    fn extend(&mut self, at: At, event_type: EventType) -> bool {
        match &mut self.open {
            Some(open) => {
                open.tx.event_count += 1;
                if event_type.is_rows() {
                    open.tx.row_events += 1;
                }
                if !at.inner {
                    open.tx.end = at.end;
                }
                true
            }
            None => false,
        }
    }

    fn close(&mut self, terminator: Option<Terminator>) {
        let Some(open) = self.open.take() else { return };
        let mut tx = open.tx;
        tx.terminator = terminator;
        if terminator.is_some() {
            match tx.id {
                TransactionId::Gtid(gtid) => self.record(gtid),
                TransactionId::Maria(gtid) => self.maria_gtids.push(gtid),
                TransactionId::Anonymous | TransactionId::Missing => {}
            }
        }
        self.transactions.push(tx);
    }

    fn record(&mut self, gtid: Gtid) {
        if let Some(run) = &mut self.run
            && run.uuid == gtid.uuid
            && run.tag == gtid.tag
            && run.end.checked_add(1) == Some(gtid.gno)
        {
            run.end = gtid.gno;
            return;
        }
        self.flush_run();
        self.run = Some(Run { uuid: gtid.uuid, tag: gtid.tag, start: gtid.gno, end: gtid.gno });
    }

    fn flush_run(&mut self) {
        if let Some(run) = self.run.take() {
            // The numbers were range-checked when the GTID event was decoded.
            let _ = self.gtids.insert_interval(run.uuid, run.tag.as_ref(), run.start, run.end);
        }
    }

    fn event(&mut self, at: At, event: &Event<'_>) {
        self.count(at, event);
        let event_type = event.header.event_type;
        let here = |state: &mut State, reason| state.flag(at.offset, Some(event_type), reason);
        match &event.body {
            EventBody::FormatDescription(format) => {
                if self.format.is_none() && !at.inner && self.event_count == 1 {
                    if format.checksum == ChecksumAlgorithm::Off {
                        here(self, IncompleteReason::ChecksumDisabled);
                    }
                    self.format = Some(format.clone());
                } else {
                    here(self, IncompleteReason::UnexpectedFormatDescription);
                }
            }
            EventBody::PreviousGtids(set) => {
                if self.open.is_some() || at.inner {
                    here(self, IncompleteReason::EventOutsideTransaction);
                }
                if self.previous_gtids.is_none() {
                    self.previous_gtids = Some(set.clone());
                }
            }
            EventBody::Gtid(gtid) => {
                if at.inner {
                    here(self, IncompleteReason::NestedInPayload);
                    self.extend(at, event_type);
                    return;
                }
                let id = if gtid.anonymous {
                    here(self, IncompleteReason::AnonymousTransaction);
                    TransactionId::Anonymous
                } else {
                    TransactionId::Gtid(Gtid { uuid: gtid.uuid, tag: gtid.tag, gno: gtid.gno })
                };
                self.start(at, event, id, Phase::AfterGtid);
                if let Some(open) = &mut self.open {
                    open.tx.original_commit_us = gtid.original_commit_us;
                    open.tx.immediate_commit_us = gtid.immediate_commit_us;
                    open.tx.last_committed = gtid.last_committed;
                    open.tx.sequence_number = gtid.sequence_number;
                    open.tx.transaction_length = gtid.transaction_length;
                }
            }
            EventBody::MariaGtid(gtid) => {
                if at.inner {
                    here(self, IncompleteReason::NestedInPayload);
                    self.extend(at, event_type);
                    return;
                }
                let id = TransactionId::Maria(MariaGtid {
                    domain: gtid.domain,
                    server_id: event.header.server_id,
                    seq: gtid.seq,
                });
                let phase = if gtid.flags & maria_flags::STANDALONE != 0 {
                    Phase::Standalone
                } else {
                    Phase::Body
                };
                self.start(at, event, id, phase);
                if let Some(open) = &mut self.open {
                    open.tx.xa =
                        gtid.flags & (maria_flags::PREPARED_XA | maria_flags::COMPLETED_XA) != 0;
                }
            }
            EventBody::Query(query) => self.query(at, event, classify(query.query)),
            EventBody::Xid(xid) => {
                if matches!(&self.open, Some(open) if open.phase == Phase::Body) {
                    self.extend(at, event_type);
                    self.close(Some(Terminator::Xid(*xid)));
                } else {
                    here(self, IncompleteReason::EventOutsideTransaction);
                    self.extend(at, event_type);
                }
            }
            EventBody::XaPrepare(_) => {
                if matches!(&self.open, Some(open) if open.phase == Phase::Body) {
                    self.extend(at, event_type);
                    if let Some(open) = &mut self.open {
                        open.tx.xa = true;
                    }
                    self.close(Some(Terminator::XaPrepare));
                } else {
                    here(self, IncompleteReason::EventOutsideTransaction);
                    self.extend(at, event_type);
                }
            }
            EventBody::Rotate(rotate) => {
                self.end_of_stream_event(at, event_type);
                let next_file = String::from_utf8_lossy(rotate.next_file).into_owned();
                self.rotate = Some((at.offset, next_file, rotate.position));
            }
            EventBody::Stop => self.end_of_stream_event(at, event_type),
            EventBody::Incident(incident) => {
                let message = String::from_utf8_lossy(incident.message).into_owned();
                here(self, IncompleteReason::Incident(message));
                self.extend(at, event_type);
            }
            EventBody::MariaGtidList(list) => {
                self.end_of_stream_event(at, event_type);
                if self.maria_gtid_list.is_none() {
                    self.maria_gtid_list = Some(list.clone());
                }
            }
            EventBody::BinlogCheckpoint(name) => {
                self.end_of_stream_event(at, event_type);
                self.binlog_checkpoints.push(String::from_utf8_lossy(name).into_owned());
            }
            EventBody::TransactionPayload(_) => {
                // Handled by the scanner; reaching here means a nested payload.
                here(self, IncompleteReason::NestedInPayload);
                self.extend(at, event_type);
            }
            EventBody::TableMap(_) | EventBody::Rows(_) | EventBody::Other(_) => {
                if event_type == EventType::HEARTBEAT || event_type == EventType::HEARTBEAT_V2 {
                    self.end_of_stream_event(at, event_type);
                } else if is_body_event(event_type) {
                    self.body_event(at, event_type);
                } else {
                    here(self, IncompleteReason::UnsupportedEvent);
                    self.extend(at, event_type);
                }
            }
        }
    }

    /// An event that may only appear between transactions.
    fn end_of_stream_event(&mut self, at: At, event_type: EventType) {
        if at.inner {
            self.flag(at.offset, Some(event_type), IncompleteReason::NestedInPayload);
            return;
        }
        if let Some(open) = &self.open {
            let start = open.tx.start;
            self.flag(start, None, IncompleteReason::UnterminatedTransaction);
            self.close(None);
        }
    }

    fn body_event(&mut self, at: At, event_type: EventType) {
        match &mut self.open {
            Some(open) => {
                if open.phase == Phase::AfterGtid {
                    open.phase = Phase::Body;
                }
                self.extend(at, event_type);
            }
            None => {
                self.flag(at.offset, Some(event_type), IncompleteReason::EventOutsideTransaction)
            }
        }
    }

    fn query(&mut self, at: At, event: &Event<'_>, kind: QueryKind) {
        let event_type = event.header.event_type;
        let Some(phase) = self.open.as_ref().map(|open| open.phase) else {
            // A statement or BEGIN with no GTID event before it.
            self.flag(at.offset, Some(event_type), IncompleteReason::MissingGtid);
            let phase = if kind == QueryKind::Begin || kind == QueryKind::XaStart {
                Phase::Body
            } else {
                Phase::AfterGtid
            };
            self.start(at, event, TransactionId::Missing, phase);
            if phase == Phase::AfterGtid {
                self.close(Some(Terminator::Statement));
            }
            return;
        };
        self.extend(at, event_type);
        let xa = matches!(
            kind,
            QueryKind::XaStart
                | QueryKind::XaPrepare
                | QueryKind::XaEnd
                | QueryKind::XaFinish
                | QueryKind::XaOther
        );
        if let Some(open) = &mut self.open {
            open.tx.xa |= xa;
        }
        match phase {
            Phase::AfterGtid => match kind {
                QueryKind::Begin | QueryKind::XaStart => {
                    if let Some(open) = &mut self.open {
                        open.phase = Phase::Body;
                    }
                }
                _ => self.close(Some(Terminator::Statement)),
            },
            Phase::Standalone => self.close(Some(Terminator::Statement)),
            Phase::Body => match kind {
                QueryKind::Commit => self.close(Some(Terminator::Commit)),
                QueryKind::Rollback => self.close(Some(Terminator::Rollback)),
                QueryKind::XaPrepare => self.close(Some(Terminator::XaPrepare)),
                QueryKind::XaFinish => self.close(Some(Terminator::Statement)),
                _ => {}
            },
        }
    }

    fn finish(mut self, parsed_len: u64, problem: Option<Error>) -> FileSummary {
        let end = match (&self.open, self.last_event) {
            (Some(open), _) => FileEnd::MidTransaction { transaction_start: open.tx.start },
            (None, None) => FileEnd::Empty,
            (None, Some((offset, EventType::STOP))) => FileEnd::Stop { offset },
            (None, Some((offset, EventType::ROTATE))) => match self.rotate.take() {
                Some((_, next_file, position)) => FileEnd::Rotate { offset, next_file, position },
                None => FileEnd::CleanBoundary,
            },
            (None, Some(_)) => FileEnd::CleanBoundary,
        };
        if let FileEnd::MidTransaction { transaction_start } = end {
            self.flag(transaction_start, None, IncompleteReason::EndsMidTransaction);
        }
        self.flush_run();
        let event_type_counts = self
            .type_counts
            .iter()
            .enumerate()
            .filter(|(_, count)| **count > 0)
            .map(|(code, count)| (EventType(code as u8), *count))
            .collect();
        let flavor = self
            .format
            .as_ref()
            .map(|format| if format.is_mariadb() { Flavor::MariaDb } else { Flavor::MySql });
        FileSummary {
            flavor,
            format: self.format,
            previous_gtids: self.previous_gtids,
            maria_gtid_list: self.maria_gtid_list,
            binlog_checkpoints: self.binlog_checkpoints,
            transactions: self.transactions,
            first_event_time: self.first_event_time,
            last_event_time: self.last_event_time,
            event_count: self.event_count,
            event_type_counts,
            end,
            parsed_len,
            problem,
            coverage: Coverage {
                gtids: self.gtids,
                maria_gtids: self.maria_gtids,
                incomplete: self.incomplete,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_keywords_are_classified() {
        let cases: [(&[u8], QueryKind); 13] = [
            (b"BEGIN", QueryKind::Begin),
            (b"  begin", QueryKind::Begin),
            (b"BEGINNING", QueryKind::Other),
            (b"COMMIT", QueryKind::Commit),
            (b"ROLLBACK", QueryKind::Rollback),
            (b"ROLLBACK WORK", QueryKind::Rollback),
            // Rolling back to a savepoint keeps the transaction open.
            (b"ROLLBACK TO `s`", QueryKind::Other),
            (b"rollback work to savepoint s", QueryKind::Other),
            (b"ROLLBACK TO_x", QueryKind::Rollback),
            (b"XA START 'x'", QueryKind::XaStart),
            (b"XA END 'x'", QueryKind::XaEnd),
            (b"XA COMMIT X'78',X'',1", QueryKind::XaFinish),
            (b"XAVIER", QueryKind::Other),
        ];
        for (query, kind) in cases {
            assert_eq!(classify(query), kind, "{}", String::from_utf8_lossy(query));
        }
    }
}
