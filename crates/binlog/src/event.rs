//! Event header and bodies, decoded into raw values borrowed from the input.
//!
//! Layouts follow MySQL's `libs/mysql/binlog/event` (`control_events.h`,
//! `statement_events.h`, `rows_event.h`) and MariaDB's `log_event.h`; the
//! crate README lists what was cross-checked against what.

use bloodraven_gtid::{GtidSet, MariaGtid, Tag, Uuid};

use crate::EventType;
use crate::bytes::Reader;
use crate::error::{ErrorKind, malformed};

/// The binlog file magic number, `\xfebin`.
pub const MAGIC: [u8; 4] = [0xfe, b'b', b'i', b'n'];
/// Length of a v4 event header.
pub const HEADER_LEN: usize = 19;
/// Length of the CRC32 trailer when checksums are on.
pub const CHECKSUM_LEN: usize = 4;

/// Header flag: the event may be skipped by a reader that does not know it.
pub const LOG_EVENT_IGNORABLE_F: u16 = 0x80;

/// Header flag of the format description: the server has the file open. MySQL
/// and MariaDB set it when they create the file and clear it in place when they
/// close it, so an active binlog (or the last one of a crashed server) has it set.
/// The format description's checksum is always computed with this flag clear.
pub const LOG_EVENT_BINLOG_IN_USE_F: u16 = 0x1;

/// Offset of the flags in the event header.
const FLAGS_OFFSET: usize = 17;

/// The CRC32 of an event without its checksum trailer, as the server computes it:
/// over every byte, except that a format description's in-use flag counts as clear
/// (`Log_event_footer::event_checksum_test`).
pub(crate) fn event_crc32(event: &[u8]) -> u32 {
    // The flag sits in the low byte of the little-endian flags.
    let in_use = LOG_EVENT_BINLOG_IN_USE_F as u8;
    match event.get(FLAGS_OFFSET) {
        Some(&flags)
            if event.get(4) == Some(&EventType::FORMAT_DESCRIPTION.0) && flags & in_use != 0 =>
        {
            let mut hasher = crc32fast::Hasher::new();
            hasher.update(&event[..FLAGS_OFFSET]);
            hasher.update(&[flags & !in_use]);
            hasher.update(&event[FLAGS_OFFSET + 1..]);
            hasher.finalize()
        }
        _ => crc32fast::hash(event),
    }
}

/// The 19-byte v4 event header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventHeader {
    /// Seconds since the epoch when the statement began.
    pub timestamp: u32,
    pub event_type: EventType,
    pub server_id: u32,
    /// Size of the whole event: header, body and checksum.
    pub event_size: u32,
    /// File offset just past this event (0 inside transaction payloads).
    pub log_pos: u32,
    pub flags: u16,
}

impl EventHeader {
    /// Decodes the first [`HEADER_LEN`] bytes; `None` if fewer are given.
    pub fn decode(bytes: &[u8]) -> Option<EventHeader> {
        let mut reader = Reader::new(bytes.get(..HEADER_LEN)?);
        Some(EventHeader {
            timestamp: reader.u32()?,
            event_type: EventType(reader.u8()?),
            server_id: reader.u32()?,
            event_size: reader.u32()?,
            log_pos: reader.u32()?,
            flags: reader.u16()?,
        })
    }
}

/// The checksum algorithm a format description announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumAlgorithm {
    /// No checksum: the server ran with `binlog_checksum=NONE` (or predates checksums).
    Off,
    Crc32,
}

/// FORMAT_DESCRIPTION: the file's first event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatDescription {
    pub binlog_version: u16,
    /// Server version text, e.g. `8.0.36` or `10.11.19-MariaDB-0+deb12u1-log`.
    pub server_version: String,
    pub create_timestamp: u32,
    pub header_length: u8,
    /// Post-header length of event type `i + 1` at index `i`.
    pub post_header_lengths: Vec<u8>,
    pub checksum: ChecksumAlgorithm,
}

impl FormatDescription {
    /// True when the server version names MariaDB.
    pub fn is_mariadb(&self) -> bool {
        self.server_version.contains("MariaDB")
    }
}

/// GTID, ANONYMOUS_GTID and GTID_TAGGED (MySQL 8.3+) events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GtidEvent {
    /// `FLAG_MAY_HAVE_SBR` and friends.
    pub flags: u8,
    pub uuid: Uuid,
    pub tag: Option<Tag>,
    /// 0 for anonymous transactions.
    pub gno: u64,
    pub anonymous: bool,
    /// Logical clock: `None` before MySQL 5.7.
    pub last_committed: Option<i64>,
    pub sequence_number: Option<i64>,
    /// Microseconds since the epoch; `None` before MySQL 8.0.1.
    pub immediate_commit_us: Option<u64>,
    /// Equal to `immediate_commit_us` unless the transaction was replicated.
    pub original_commit_us: Option<u64>,
    /// Length of the whole transaction in bytes, this event included (MySQL 8.0.2+).
    pub transaction_length: Option<u64>,
    pub immediate_server_version: Option<u32>,
    pub original_server_version: Option<u32>,
    pub commit_group_ticket: Option<u64>,
}

/// QUERY: statements, including `BEGIN`, `COMMIT` and DDL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryEvent<'a> {
    pub thread_id: u32,
    pub exec_time: u32,
    pub error_code: u16,
    pub status_vars: &'a [u8],
    pub schema: &'a [u8],
    pub query: &'a [u8],
}

/// TABLE_MAP: the column layout is kept raw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableMapEvent<'a> {
    pub table_id: u64,
    pub flags: u16,
    pub schema: &'a [u8],
    pub table: &'a [u8],
    /// Column count, types, metadata, null bitmap and optional metadata.
    pub columns: &'a [u8],
}

/// A row event: only the table id is decoded, the rows are counted and skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowsEvent<'a> {
    pub table_id: u64,
    pub flags: u16,
    /// Everything after the table id and flags.
    pub body: &'a [u8],
}

/// ROTATE: the next file's name and the position to start from in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RotateEvent<'a> {
    pub position: u64,
    pub next_file: &'a [u8],
}

/// INCIDENT: the server lost events (for example a failed cache write).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IncidentEvent<'a> {
    pub incident: u16,
    pub message: &'a [u8],
}

/// Compression of a TRANSACTION_PAYLOAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Zstd,
    None,
    Unknown(u64),
}

impl Compression {
    pub(crate) fn from_code(code: u64) -> Compression {
        match code {
            0 => Compression::Zstd,
            255 => Compression::None,
            other => Compression::Unknown(other),
        }
    }

    pub(crate) fn code(self) -> u64 {
        match self {
            Compression::Zstd => 0,
            Compression::None => 255,
            Compression::Unknown(code) => code,
        }
    }
}

/// TRANSACTION_PAYLOAD (MySQL 8.0.20+): a compressed run of events without checksums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadEvent<'a> {
    pub compression: Compression,
    /// Declared size of the decompressed events; `None` when the field is absent.
    pub uncompressed_size: Option<u64>,
    pub payload: &'a [u8],
}

/// An XA transaction id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Xid<'a> {
    pub format_id: u32,
    pub gtrid: &'a [u8],
    pub bqual: &'a [u8],
}

/// XA_PREPARE: ends the first phase of an XA transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XaPrepareEvent<'a> {
    pub one_phase: bool,
    pub xid: Xid<'a>,
}

/// MariaDB flags2 bits of its GTID event.
pub mod maria_flags {
    pub const STANDALONE: u8 = 1;
    pub const GROUP_COMMIT_ID: u8 = 2;
    pub const TRANSACTIONAL: u8 = 4;
    pub const ALLOW_PARALLEL: u8 = 8;
    pub const WAITED: u8 = 16;
    pub const DDL: u8 = 32;
    pub const PREPARED_XA: u8 = 64;
    pub const COMPLETED_XA: u8 = 128;
}

/// MariaDB's GTID event (162): replaces BEGIN (or heads a standalone statement).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MariaGtidEvent<'a> {
    pub seq: u64,
    pub domain: u32,
    pub flags: u8,
    pub commit_id: Option<u64>,
    pub xid: Option<Xid<'a>>,
}

/// A decoded event body. Types this crate does not decode are `Other` with the raw body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventBody<'a> {
    FormatDescription(FormatDescription),
    PreviousGtids(GtidSet),
    Gtid(GtidEvent),
    Query(QueryEvent<'a>),
    Xid(u64),
    TableMap(TableMapEvent<'a>),
    Rows(RowsEvent<'a>),
    Rotate(RotateEvent<'a>),
    Stop,
    Incident(IncidentEvent<'a>),
    TransactionPayload(PayloadEvent<'a>),
    XaPrepare(XaPrepareEvent<'a>),
    MariaGtid(MariaGtidEvent<'a>),
    MariaGtidList(Vec<MariaGtid>),
    BinlogCheckpoint(&'a [u8]),
    /// Any other type (known or not): the body bytes, without checksum.
    Other(&'a [u8]),
}

/// One event: header plus decoded body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event<'a> {
    pub header: EventHeader,
    pub body: EventBody<'a>,
}

/// Decodes a FORMAT_DESCRIPTION body. `body` excludes the header but includes
/// the trailing checksum bytes, because whether they exist is what this event says.
pub(crate) fn decode_format_description(body: &[u8]) -> Result<FormatDescription, ErrorKind> {
    let mut reader = Reader::new(body);
    let short = || malformed("format description shorter than its 57 fixed bytes");
    let binlog_version = reader.u16().ok_or_else(short)?;
    let version_bytes = reader.take(50).ok_or_else(short)?;
    let create_timestamp = reader.u32().ok_or_else(short)?;
    let header_length = reader.u8().ok_or_else(short)?;
    let end = version_bytes.iter().position(|&b| b == 0).unwrap_or(version_bytes.len());
    let server_version = String::from_utf8_lossy(&version_bytes[..end]).into_owned();
    if binlog_version != 4 {
        return Err(malformed(format!("binlog version {binlog_version}, only v4 is supported")));
    }
    let rest = reader.rest();
    let (post_header_lengths, checksum) = if checksum_aware(&server_version) {
        // The algorithm byte and a 4-byte checksum field always end the event of
        // a checksum-aware server; the field is meaningless when the algorithm is off.
        if rest.len() < 1 + crate::CHECKSUM_LEN {
            return Err(malformed("format description lacks its checksum algorithm byte"));
        }
        let alg_at = rest.len() - 1 - crate::CHECKSUM_LEN;
        let checksum = match rest[alg_at] {
            0 => ChecksumAlgorithm::Off,
            1 => ChecksumAlgorithm::Crc32,
            other => return Err(ErrorKind::UnsupportedChecksum(other)),
        };
        (rest[..alg_at].to_vec(), checksum)
    } else {
        (rest.to_vec(), ChecksumAlgorithm::Off)
    };
    Ok(FormatDescription {
        binlog_version,
        server_version,
        create_timestamp,
        header_length,
        post_header_lengths,
        checksum,
    })
}

/// MySQL 5.6.1 and MariaDB 5.3 introduced the checksum algorithm byte.
fn checksum_aware(server_version: &str) -> bool {
    let mut parts = server_version
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .map(|part| part.parse::<u32>().unwrap_or(0));
    let version = (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if server_version.contains("MariaDB") { version >= (5, 3, 0) } else { version >= (5, 6, 1) }
}

/// Decodes the body of one event (header and checksum already removed).
pub(crate) fn decode_body<'a>(
    event_type: EventType,
    body: &'a [u8],
) -> Result<EventBody<'a>, ErrorKind> {
    let mut reader = Reader::new(body);
    let short = || malformed(format!("body of {} bytes is too short", body.len()));
    Ok(match event_type {
        EventType::QUERY => {
            let thread_id = reader.u32().ok_or_else(short)?;
            let exec_time = reader.u32().ok_or_else(short)?;
            let schema_len = reader.u8().ok_or_else(short)?;
            let error_code = reader.u16().ok_or_else(short)?;
            let status_len = reader.u16().ok_or_else(short)?;
            let status_vars = reader.take(usize::from(status_len)).ok_or_else(short)?;
            let schema = reader.take(usize::from(schema_len)).ok_or_else(short)?;
            if reader.u8() != Some(0) {
                return Err(malformed("query schema name is not NUL-terminated"));
            }
            EventBody::Query(QueryEvent {
                thread_id,
                exec_time,
                error_code,
                status_vars,
                schema,
                query: reader.rest(),
            })
        }
        EventType::XID => EventBody::Xid(reader.u64().ok_or_else(short)?),
        EventType::STOP => EventBody::Stop,
        EventType::ROTATE => EventBody::Rotate(RotateEvent {
            position: reader.u64().ok_or_else(short)?,
            next_file: reader.rest(),
        }),
        EventType::TABLE_MAP => {
            let table_id = reader.uint(6).ok_or_else(short)?;
            let flags = reader.u16().ok_or_else(short)?;
            let schema_len = reader.u8().ok_or_else(short)?;
            let schema = reader.take(usize::from(schema_len)).ok_or_else(short)?;
            if reader.u8() != Some(0) {
                return Err(malformed("table map schema name is not NUL-terminated"));
            }
            let table_len = reader.u8().ok_or_else(short)?;
            let table = reader.take(usize::from(table_len)).ok_or_else(short)?;
            if reader.u8() != Some(0) {
                return Err(malformed("table map table name is not NUL-terminated"));
            }
            EventBody::TableMap(TableMapEvent {
                table_id,
                flags,
                schema,
                table,
                columns: reader.rest(),
            })
        }
        t if t.is_rows() => EventBody::Rows(RowsEvent {
            table_id: reader.uint(6).ok_or_else(short)?,
            flags: reader.u16().ok_or_else(short)?,
            body: reader.rest(),
        }),
        EventType::INCIDENT => {
            let incident = reader.u16().ok_or_else(short)?;
            let message = match reader.u8() {
                None => &[][..],
                Some(len) => reader.take(usize::from(len)).ok_or_else(short)?,
            };
            EventBody::Incident(IncidentEvent { incident, message })
        }
        EventType::GTID | EventType::ANONYMOUS_GTID => {
            EventBody::Gtid(decode_gtid(body, event_type == EventType::ANONYMOUS_GTID)?)
        }
        EventType::GTID_TAGGED => EventBody::Gtid(decode_tagged_gtid(body)?),
        EventType::PREVIOUS_GTIDS => EventBody::PreviousGtids(decode_gtid_set(body)?),
        EventType::TRANSACTION_PAYLOAD => EventBody::TransactionPayload(decode_payload(body)?),
        EventType::XA_PREPARE => {
            let one_phase = reader.u8().ok_or_else(short)? != 0;
            let format_id = reader.u32().ok_or_else(short)?;
            let gtrid_len = reader.u32().ok_or_else(short)?;
            let bqual_len = reader.u32().ok_or_else(short)?;
            if gtrid_len > 64 || bqual_len > 64 {
                return Err(malformed("XA id part longer than 64 bytes"));
            }
            let gtrid = reader.take(gtrid_len as usize).ok_or_else(short)?;
            let bqual = reader.take(bqual_len as usize).ok_or_else(short)?;
            EventBody::XaPrepare(XaPrepareEvent { one_phase, xid: Xid { format_id, gtrid, bqual } })
        }
        EventType::MARIADB_GTID => {
            let seq = reader.u64().ok_or_else(short)?;
            let domain = reader.u32().ok_or_else(short)?;
            let flags = reader.u8().ok_or_else(short)?;
            let commit_id = if flags & maria_flags::GROUP_COMMIT_ID != 0 {
                Some(reader.u64().ok_or_else(short)?)
            } else {
                None
            };
            let xid = if flags & (maria_flags::PREPARED_XA | maria_flags::COMPLETED_XA) != 0 {
                let format_id = reader.u32().ok_or_else(short)?;
                let gtrid_len = reader.u8().ok_or_else(short)?;
                let bqual_len = reader.u8().ok_or_else(short)?;
                let gtrid = reader.take(usize::from(gtrid_len)).ok_or_else(short)?;
                let bqual = reader.take(usize::from(bqual_len)).ok_or_else(short)?;
                Some(Xid { format_id, gtrid, bqual })
            } else {
                None
            };
            EventBody::MariaGtid(MariaGtidEvent { seq, domain, flags, commit_id, xid })
        }
        EventType::MARIADB_GTID_LIST => {
            let count_and_flags = reader.u32().ok_or_else(short)?;
            let count = count_and_flags & 0x0fff_ffff;
            if u64::from(count) * 16 > reader.remaining() as u64 {
                return Err(malformed(format!("GTID list of {count} entries does not fit")));
            }
            let mut list = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let domain = reader.u32().ok_or_else(short)?;
                let server_id = reader.u32().ok_or_else(short)?;
                let seq = reader.u64().ok_or_else(short)?;
                list.push(MariaGtid { domain, server_id, seq });
            }
            EventBody::MariaGtidList(list)
        }
        EventType::MARIADB_BINLOG_CHECKPOINT => {
            let len = reader.u32().ok_or_else(short)?;
            EventBody::BinlogCheckpoint(reader.take(len as usize).ok_or_else(short)?)
        }
        _ => EventBody::Other(body),
    })
}

const UNDEFINED_SERVER_VERSION: u32 = 999_999;

/// A GTID event with no field read yet.
const EMPTY_GTID: GtidEvent = GtidEvent {
    flags: 0,
    uuid: Uuid::from_bytes([0; 16]),
    tag: None,
    gno: 0,
    anonymous: false,
    last_committed: None,
    sequence_number: None,
    immediate_commit_us: None,
    original_commit_us: None,
    transaction_length: None,
    immediate_server_version: None,
    original_server_version: None,
    commit_group_ticket: None,
};

fn decode_gtid(body: &[u8], anonymous: bool) -> Result<GtidEvent, ErrorKind> {
    let mut reader = Reader::new(body);
    let short = || malformed(format!("GTID body of {} bytes is too short", body.len()));
    let flags = reader.u8().ok_or_else(short)?;
    let uuid = Uuid::from_bytes(reader.array().ok_or_else(short)?);
    let gno = reader.u64().ok_or_else(short)?;
    let mut event = GtidEvent { flags, uuid, gno, anonymous, ..EMPTY_GTID };
    check_gno(&event)?;
    // MySQL 5.6 stops here; 5.7.4 and earlier used another typecode (ignored).
    if reader.u8() != Some(2) {
        return Ok(event);
    }
    event.last_committed = Some(reader.u64().ok_or_else(short)? as i64);
    event.sequence_number = Some(reader.u64().ok_or_else(short)? as i64);
    if reader.remaining() >= 7 {
        let immediate = reader.uint(7).ok_or_else(short)?;
        let replicated = immediate & (1 << 55) != 0;
        let immediate = immediate & !(1 << 55);
        event.immediate_commit_us = Some(immediate);
        event.original_commit_us =
            Some(if replicated { reader.uint(7).ok_or_else(short)? } else { immediate });
    }
    if reader.remaining() > 0 {
        event.transaction_length =
            Some(reader.packed().ok_or_else(|| malformed("GTID transaction length is malformed"))?);
    }
    if reader.remaining() >= 4 {
        let immediate = reader.u32().ok_or_else(short)?;
        let replicated = immediate & (1 << 31) != 0;
        let immediate = immediate & !(1 << 31);
        event.immediate_server_version = Some(immediate);
        event.original_server_version =
            Some(if replicated { reader.u32().ok_or_else(short)? } else { immediate });
    }
    if reader.remaining() >= 8 {
        event.commit_group_ticket = Some(reader.u64().ok_or_else(short)?);
    }
    Ok(event)
}

fn check_gno(event: &GtidEvent) -> Result<(), ErrorKind> {
    let valid =
        if event.anonymous { true } else { (1..=bloodraven_gtid::MAX_GNO).contains(&event.gno) };
    if valid {
        Ok(())
    } else {
        Err(malformed(format!("GTID number {} is out of range", event.gno)))
    }
}

/// Field ids of GTID_TAGGED (`Gtid_event::define_fields`, MySQL 8.3+).
pub(crate) mod tagged_field {
    pub(crate) const FLAGS: u64 = 0;
    pub(crate) const UUID: u64 = 1;
    pub(crate) const GNO: u64 = 2;
    pub(crate) const TAG: u64 = 3;
    pub(crate) const LAST_COMMITTED: u64 = 4;
    pub(crate) const SEQUENCE_NUMBER: u64 = 5;
    pub(crate) const IMMEDIATE_COMMIT_TIMESTAMP: u64 = 6;
    pub(crate) const ORIGINAL_COMMIT_TIMESTAMP: u64 = 7;
    pub(crate) const TRANSACTION_LENGTH: u64 = 8;
    pub(crate) const IMMEDIATE_SERVER_VERSION: u64 = 9;
    pub(crate) const ORIGINAL_SERVER_VERSION: u64 = 10;
    pub(crate) const COMMIT_GROUP_TICKET: u64 = 11;
}

/// The serialization library's format version, written before a tagged GTID
/// message as a variable-length integer (so the first body byte is `0x02`).
pub(crate) const SERIALIZATION_FORMAT_VERSION: u64 = 1;

fn decode_tagged_gtid(body: &[u8]) -> Result<GtidEvent, ErrorKind> {
    use tagged_field as field;
    let mut reader = Reader::new(body);
    let bad = |what: &str| malformed(format!("tagged GTID: {what}"));
    let version =
        reader.varlen().ok_or_else(|| bad("serialization format version is malformed"))?;
    if version != SERIALIZATION_FORMAT_VERSION {
        return Err(bad(&format!("unsupported serialization format version {version}")));
    }
    let size = reader.varlen().ok_or_else(|| bad("message size is malformed"))?;
    let last_non_ignorable = reader.varlen().ok_or_else(|| bad("field id is malformed"))?;
    // The message size counts every byte of the message, version byte included.
    let fields_len = size
        .checked_sub(reader.pos() as u64)
        .filter(|&len| len <= reader.remaining() as u64)
        .ok_or_else(|| bad(&format!("message size {size} does not fit the event")))?;
    let mut fields = Reader::new(reader.take(fields_len as usize).ok_or_else(|| bad("short"))?);
    let mut event = EMPTY_GTID;
    let (mut saw_uuid, mut saw_gno) = (false, false);
    while fields.remaining() > 0 {
        let id = fields.varlen().ok_or_else(|| bad("field id is malformed"))?;
        let value = |fields: &mut Reader<'_>| {
            fields.varlen().ok_or_else(|| bad(&format!("field {id} is malformed")))
        };
        let signed = |fields: &mut Reader<'_>| {
            fields.varlen_signed().ok_or_else(|| bad(&format!("field {id} is malformed")))
        };
        match id {
            field::FLAGS => {
                event.flags = u8::try_from(value(&mut fields)?).map_err(|_| bad("flags > 255"))?;
            }
            field::UUID => {
                let mut uuid = [0u8; 16];
                for byte in &mut uuid {
                    *byte =
                        u8::try_from(value(&mut fields)?).map_err(|_| bad("UUID byte > 255"))?;
                }
                event.uuid = Uuid::from_bytes(uuid);
                saw_uuid = true;
            }
            field::GNO => {
                event.gno = u64::try_from(signed(&mut fields)?).map_err(|_| bad("negative gno"))?;
                saw_gno = true;
            }
            field::TAG => {
                let len = value(&mut fields)?;
                let text = usize::try_from(len)
                    .ok()
                    .and_then(|len| fields.take(len))
                    .ok_or_else(|| bad("tag does not fit"))?;
                // MySQL writes an empty tag for untagged GTIDs in this event type.
                if !text.is_empty() {
                    let text = std::str::from_utf8(text).map_err(|_| bad("tag is not UTF-8"))?;
                    event.tag = Some(Tag::new(text).map_err(|err| bad(&err.to_string()))?);
                }
            }
            field::LAST_COMMITTED => event.last_committed = Some(signed(&mut fields)?),
            field::SEQUENCE_NUMBER => event.sequence_number = Some(signed(&mut fields)?),
            field::IMMEDIATE_COMMIT_TIMESTAMP => {
                event.immediate_commit_us = Some(value(&mut fields)?);
            }
            field::ORIGINAL_COMMIT_TIMESTAMP => {
                event.original_commit_us = Some(value(&mut fields)?);
            }
            field::TRANSACTION_LENGTH => event.transaction_length = Some(value(&mut fields)?),
            field::IMMEDIATE_SERVER_VERSION => {
                event.immediate_server_version =
                    Some(u32::try_from(value(&mut fields)?).map_err(|_| bad("server version"))?);
            }
            field::ORIGINAL_SERVER_VERSION => {
                event.original_server_version =
                    Some(u32::try_from(value(&mut fields)?).map_err(|_| bad("server version"))?);
            }
            field::COMMIT_GROUP_TICKET => event.commit_group_ticket = Some(value(&mut fields)?),
            unknown if unknown <= last_non_ignorable => {
                return Err(bad(&format!("unknown non-ignorable field {unknown}")));
            }
            // An ignorable field this version does not know: its size is unknown,
            // so the rest of the message is skipped.
            _ => break,
        }
    }
    if !saw_uuid || !saw_gno {
        return Err(bad("UUID or transaction number missing"));
    }
    if event.original_commit_us.is_none() {
        event.original_commit_us = event.immediate_commit_us;
    }
    if event.original_server_version.is_none() {
        event.original_server_version = event.immediate_server_version;
    }
    if event.immediate_server_version == Some(UNDEFINED_SERVER_VERSION) {
        event.immediate_server_version = None;
        event.original_server_version = None;
    }
    check_gno(&event)?;
    Ok(event)
}

/// The PREVIOUS_GTIDS encoding (`Gtid_set::encode`): untagged, or tagged (format 1).
fn decode_gtid_set(body: &[u8]) -> Result<GtidSet, ErrorKind> {
    let mut reader = Reader::new(body);
    let bad = |what: String| malformed(format!("previous GTIDs: {what}"));
    let head = reader.u64().ok_or_else(|| bad("shorter than 8 bytes".into()))?;
    let tagged = match head >> 56 {
        0 => false,
        1 if head & 0xff == 1 => true,
        format => return Err(bad(format!("unknown format {format}"))),
    };
    let sources = if tagged { (head >> 8) & ((1 << 48) - 1) } else { head };
    let mut set = GtidSet::new();
    for _ in 0..sources {
        let uuid = Uuid::from_bytes(reader.array().ok_or_else(|| bad("UUID cut short".into()))?);
        let tag = if tagged {
            let len = reader.varlen().ok_or_else(|| bad("tag length malformed".into()))?;
            let text = usize::try_from(len)
                .ok()
                .and_then(|len| reader.take(len))
                .ok_or_else(|| bad("tag cut short".into()))?;
            if text.is_empty() {
                None
            } else {
                let text = std::str::from_utf8(text).map_err(|_| bad("tag is not UTF-8".into()))?;
                Some(Tag::new(text).map_err(|err| bad(err.to_string()))?)
            }
        } else {
            None
        };
        let intervals = reader.u64().ok_or_else(|| bad("interval count cut short".into()))?;
        if intervals > reader.remaining() as u64 / 16 {
            return Err(bad(format!("{intervals} intervals do not fit")));
        }
        for _ in 0..intervals {
            let start = reader.u64().ok_or_else(|| bad("interval cut short".into()))?;
            let end_exclusive = reader.u64().ok_or_else(|| bad("interval cut short".into()))?;
            if end_exclusive <= start {
                return Err(bad(format!("empty interval {start}..{end_exclusive}")));
            }
            set.insert_interval(uuid, tag.as_ref(), start, end_exclusive - 1)
                .map_err(|err| bad(err.to_string()))?;
        }
    }
    if reader.remaining() != 0 {
        return Err(bad(format!("{} bytes after the last source", reader.remaining())));
    }
    Ok(set)
}

/// Payload field types (`Transaction_payload_event` on-the-wire codes).
pub(crate) mod payload_field {
    pub(crate) const END_MARK: u64 = 0;
    pub(crate) const PAYLOAD_SIZE: u64 = 1;
    pub(crate) const COMPRESSION_TYPE: u64 = 2;
    pub(crate) const UNCOMPRESSED_SIZE: u64 = 3;
}

fn decode_payload(body: &[u8]) -> Result<PayloadEvent<'_>, ErrorKind> {
    let mut reader = Reader::new(body);
    let bad = |what: &str| malformed(format!("transaction payload header: {what}"));
    let mut payload_size = None;
    let mut compression = None;
    let mut uncompressed_size = None;
    loop {
        let field = reader.packed().ok_or_else(|| bad("field type malformed"))?;
        if field == payload_field::END_MARK {
            break;
        }
        let len = reader.packed().ok_or_else(|| bad("field length malformed"))?;
        let raw = usize::try_from(len)
            .ok()
            .and_then(|len| reader.take(len))
            .ok_or_else(|| bad("field value cut short"))?;
        let mut value_reader = Reader::new(raw);
        let value = value_reader.packed().ok_or_else(|| bad("field value malformed"))?;
        match field {
            payload_field::PAYLOAD_SIZE => payload_size = Some(value),
            payload_field::COMPRESSION_TYPE => compression = Some(Compression::from_code(value)),
            payload_field::UNCOMPRESSED_SIZE => uncompressed_size = Some(value),
            // Unknown fields are skipped by their length, as MySQL does.
            _ => {}
        }
    }
    let payload = reader.rest();
    match payload_size {
        Some(size) if size == payload.len() as u64 => {}
        Some(size) => {
            return Err(bad(&format!(
                "declares {size} payload bytes, event has {}",
                payload.len()
            )));
        }
        None => return Err(bad("payload size missing")),
    }
    Ok(PayloadEvent {
        compression: compression.ok_or_else(|| bad("compression type missing"))?,
        uncompressed_size,
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_awareness_follows_server_versions() {
        assert!(checksum_aware("8.0.36"));
        assert!(checksum_aware("5.6.1-log"));
        assert!(!checksum_aware("5.6.0"));
        assert!(!checksum_aware("5.5.62-log"));
        assert!(checksum_aware("5.5.5-10.11.19-MariaDB-0+deb12u1-log"));
        assert!(checksum_aware("10.11.19-MariaDB-log"));
    }

    #[test]
    fn tagged_gtid_format_version_is_a_variable_length_integer() {
        let message = |version: &[u8]| {
            let mut body = version.to_vec();
            body.extend_from_slice(&[0x00, 0x00]);
            decode_tagged_gtid(&body).unwrap_err().to_string()
        };
        // `0x04` is version 2 and `0x03 0x00` a two-byte encoding of version 0.
        assert_eq!(
            message(&[0x04]),
            "malformed body: tagged GTID: unsupported serialization format version 2"
        );
        assert_eq!(
            message(&[0x03, 0x00]),
            "malformed body: tagged GTID: unsupported serialization format version 0"
        );
        assert_eq!(
            decode_tagged_gtid(&[]).unwrap_err().to_string(),
            "malformed body: tagged GTID: serialization format version is malformed"
        );
    }

    #[test]
    fn gtid_body_of_mysql_5_6_has_no_logical_clock() {
        let mut body = vec![1u8];
        body.extend_from_slice(&[0x11; 16]);
        body.extend_from_slice(&7u64.to_le_bytes());
        let event = decode_gtid(&body, false).unwrap();
        assert_eq!(event.gno, 7);
        assert_eq!(event.last_committed, None);
        assert_eq!(event.immediate_commit_us, None);
        let mut zero = body.clone();
        zero[17..25].copy_from_slice(&0u64.to_le_bytes());
        assert!(decode_gtid(&zero, false).is_err());
        assert!(decode_gtid(&zero, true).is_ok());
    }
}
