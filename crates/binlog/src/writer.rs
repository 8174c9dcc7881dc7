//! Writes MySQL-format binlog files (binlog v4, CRC32 by default) into memory.
//!
//! Used by archive fixtures and the lab simulator: a format description, the
//! previous GTIDs, transactions (GTID + BEGIN + TABLE_MAP + WRITE_ROWS + XID, a
//! single statement, or XA) optionally compressed in a TRANSACTION_PAYLOAD, and
//! ROTATE or STOP. Any [`EventBody`] the parser returns can also be written back
//! with [`Writer::event`].

use bloodraven_gtid::{Gtid, GtidSet, MAX_GNO};

use crate::EventType;
use crate::bytes::{
    packed_len, put_packed, put_u16, put_u32, put_u64, put_uint, put_varlen, put_varlen_signed,
};
use crate::error::{Error, ErrorKind, malformed};
use crate::event::{
    CHECKSUM_LEN, ChecksumAlgorithm, Compression, EventBody, EventHeader, FormatDescription,
    GtidEvent, HEADER_LEN, MAGIC, PayloadEvent, QueryEvent, RowsEvent,
    SERIALIZATION_FORMAT_VERSION, TableMapEvent, Xid, event_crc32, payload_field, tagged_field,
};

/// Post-header lengths of event types 1..=42 as MySQL 8.4 announces them
/// (`Format_description_event` constructor); GTID_TAGGED has no fixed post-header.
const POST_HEADER_LENGTHS: [u8; 42] = [
    56, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 99, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10,
    10, 10, 42, 42, 0, 18, 52, 0, 10, 0, 0, 0,
];

/// `FLAG_MAY_HAVE_SBR` of the GTID event: set when the transaction has statements.
const GTID_FLAG_MAY_HAVE_SBR: u8 = 1;
/// `STMT_END_F` of row events: the last row event of the statement.
const ROWS_STMT_END: u16 = 1;
/// MySQL's default `binlog_transaction_compression_level_zstd`.
const ZSTD_LEVEL: i32 = 3;
/// Commit times are 7-byte fields whose top bit is a flag (`Gtid_event`).
const COMMIT_TIME_LIMIT: u64 = 1 << 55;
/// Server version written into GTID events (`8.4.3` as MySQL encodes it).
const GTID_SERVER_VERSION: u32 = 80403;

/// Options for a new file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterOptions {
    /// `server_id` in the headers of the format description, previous GTIDs, rotate and stop.
    pub server_id: u32,
    /// Server version text of the format description (at most 49 bytes).
    pub server_version: String,
    /// Timestamp (seconds) of the format description.
    pub create_timestamp: u32,
    /// CRC32 checksums (`binlog_checksum=CRC32`); false writes `NONE`.
    pub checksum: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            server_id: 1,
            server_version: "8.4.3-bloodraven".to_owned(),
            create_timestamp: 0,
            checksum: true,
        }
    }
}

/// The table written by [`TransactionBody::Rows`]: `(id BIGINT NOT NULL, data BLOB)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowsTable {
    pub schema: String,
    pub table: String,
    pub table_id: u64,
}

/// What a transaction holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransactionBody {
    /// BEGIN, TABLE_MAP, WRITE_ROWS with these `(id, data)` rows, XID.
    Rows { table: RowsTable, rows: Vec<(i64, Vec<u8>)> },
    /// One statement that is its own transaction (DDL, `XA COMMIT 'x'`).
    Statement { schema: String, query: String },
    /// XA START, TABLE_MAP, WRITE_ROWS, XA END, XA_PREPARE.
    XaPrepare { gtrid: String, table: RowsTable, rows: Vec<(i64, Vec<u8>)> },
}

/// One transaction to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionSpec {
    /// `None` writes an ANONYMOUS_GTID event; a tagged GTID writes GTID_TAGGED.
    pub gtid: Option<Gtid>,
    pub server_id: u32,
    pub original_commit_us: u64,
    pub immediate_commit_us: u64,
    pub last_committed: i64,
    pub sequence_number: i64,
    pub body: TransactionBody,
    /// Put everything after the GTID event in a zstd TRANSACTION_PAYLOAD.
    pub compress: bool,
}

/// Builds a binlog file in memory.
#[derive(Debug, Clone)]
pub struct Writer {
    out: Vec<u8>,
    checksum: bool,
    server_id: u32,
    next_xid: u64,
}

impl Writer {
    /// Starts a file: magic number and format description.
    pub fn new(options: &WriterOptions) -> Writer {
        let mut writer = Writer {
            out: MAGIC.to_vec(),
            checksum: options.checksum,
            server_id: options.server_id,
            next_xid: 1,
        };
        let mut version = options.server_version.as_bytes().to_vec();
        version.truncate(49);
        let format = FormatDescription {
            binlog_version: 4,
            server_version: String::from_utf8_lossy(&version).into_owned(),
            create_timestamp: options.create_timestamp,
            header_length: HEADER_LEN as u8,
            post_header_lengths: POST_HEADER_LENGTHS.to_vec(),
            checksum: if options.checksum {
                ChecksumAlgorithm::Crc32
            } else {
                ChecksumAlgorithm::Off
            },
        };
        let header = writer.header(EventType::FORMAT_DESCRIPTION, options.create_timestamp, 0);
        writer.push_format_description(header, &format);
        writer
    }

    /// Starts a file with only the magic number: the first event written must be a
    /// format description (for re-encoding parsed events byte for byte).
    pub fn without_format_description(server_id: u32) -> Writer {
        Writer { out: MAGIC.to_vec(), checksum: false, server_id, next_xid: 1 }
    }

    /// Offset where the next event will start.
    pub fn position(&self) -> u64 {
        self.out.len() as u64
    }

    pub fn bytes(&self) -> &[u8] {
        &self.out
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.out
    }

    fn header(&self, event_type: EventType, timestamp: u32, flags: u16) -> EventHeader {
        EventHeader {
            timestamp,
            event_type,
            server_id: self.server_id,
            event_size: 0,
            log_pos: 0,
            flags,
        }
    }

    /// Appends one event. `event_size` and `log_pos` of `header` are ignored and
    /// computed; the body must fit the header's event type.
    pub fn event(&mut self, header: EventHeader, body: &EventBody<'_>) -> Result<u64, Error> {
        let offset = self.position();
        if let EventBody::FormatDescription(format) = body {
            if offset == MAGIC.len() as u64 {
                self.checksum = format.checksum == ChecksumAlgorithm::Crc32;
            }
            self.push_format_description(header, format);
            return Ok(offset);
        }
        let encoded = encode_body(header.event_type, body)
            .map_err(|kind| Error::new(offset, Some(header.event_type), kind))?;
        self.push(header, &encoded, self.checksum)
            .map_err(|kind| Error::new(offset, Some(header.event_type), kind))?;
        Ok(offset)
    }

    /// Appends an event whose `log_pos` is its end offset in the file.
    fn push(&mut self, header: EventHeader, body: &[u8], checksum: bool) -> Result<(), ErrorKind> {
        let size = HEADER_LEN + body.len() + if checksum { CHECKSUM_LEN } else { 0 };
        let log_pos = u32::try_from(self.out.len() + size).unwrap_or(u32::MAX);
        push_event_raw(&mut self.out, header, body, checksum, log_pos)
    }

    fn push_format_description(&mut self, header: EventHeader, format: &FormatDescription) {
        let mut body = Vec::with_capacity(100);
        put_u16(&mut body, format.binlog_version);
        let mut version = [0u8; 50];
        let text = format.server_version.as_bytes();
        let len = text.len().min(49);
        version[..len].copy_from_slice(&text[..len]);
        body.extend_from_slice(&version);
        put_u32(&mut body, format.create_timestamp);
        body.push(format.header_length);
        body.extend_from_slice(&format.post_header_lengths);
        let crc32 = format.checksum == ChecksumAlgorithm::Crc32;
        body.push(u8::from(crc32));
        if !crc32 {
            // Checksum-aware servers reserve the field even with checksums off.
            body.extend_from_slice(&[0; CHECKSUM_LEN]);
        }
        let header = EventHeader { event_type: EventType::FORMAT_DESCRIPTION, ..header };
        // A format description is far below 4 GiB, the only failure.
        let _ = self.push(header, &body, crc32);
    }

    /// Appends PREVIOUS_GTIDS (tagged format when the set has tags).
    pub fn previous_gtids(&mut self, set: &GtidSet, timestamp: u32) -> Result<u64, Error> {
        let header = self.header(EventType::PREVIOUS_GTIDS, timestamp, 0);
        self.event(header, &EventBody::PreviousGtids(set.clone()))
    }

    /// Appends ROTATE naming the next file (position 4, its first event).
    pub fn rotate(&mut self, next_file: &str, timestamp: u32) -> Result<u64, Error> {
        let header = self.header(EventType::ROTATE, timestamp, 0);
        let body = crate::RotateEvent { position: 4, next_file: next_file.as_bytes() };
        self.event(header, &EventBody::Rotate(body))
    }

    /// Appends STOP.
    pub fn stop(&mut self, timestamp: u32) -> Result<u64, Error> {
        let header = self.header(EventType::STOP, timestamp, 0);
        self.event(header, &EventBody::Stop)
    }

    /// Appends one transaction; returns its start and end offsets.
    pub fn transaction(&mut self, spec: &TransactionSpec) -> Result<(u64, u64), Error> {
        let start = self.position();
        let fail = |kind| Error::new(start, Some(EventType::GTID), kind);
        let timestamp = u32::try_from(spec.immediate_commit_us / 1_000_000)
            .map_err(|_| fail(malformed("commit time is beyond 2106")))?;
        if spec.original_commit_us >= COMMIT_TIME_LIMIT {
            return Err(fail(malformed("original commit time does not fit in 55 bits")));
        }
        if let Some(gtid) = spec.gtid
            && !(1..=MAX_GNO).contains(&gtid.gno)
        {
            return Err(fail(malformed(format!("GTID number {} is out of range", gtid.gno))));
        }
        let header = |event_type, flags| EventHeader {
            timestamp,
            event_type,
            server_id: spec.server_id,
            event_size: 0,
            log_pos: 0,
            flags,
        };
        // The events after the GTID event, encoded without checksums first.
        let mut inner: Vec<(EventHeader, Vec<u8>)> = Vec::new();
        let mut add = |event_type, flags, body: &EventBody<'_>| -> Result<(), ErrorKind> {
            inner.push((header(event_type, flags), encode_body(event_type, body)?));
            Ok(())
        };
        // LOG_EVENT_SUPPRESS_USE_F: the statement does not depend on the default schema.
        const SUPPRESS_USE: u16 = 8;
        let mut has_statement = false;
        match &spec.body {
            TransactionBody::Rows { table, rows } => {
                add(EventType::QUERY, SUPPRESS_USE, &statement(b"", b"BEGIN")).map_err(fail)?;
                add_rows(&mut add, table, rows).map_err(fail)?;
                let xid = self.next_xid;
                self.next_xid += 1;
                add(EventType::XID, 0, &EventBody::Xid(xid)).map_err(fail)?;
            }
            TransactionBody::Statement { schema, query } => {
                has_statement = true;
                add(EventType::QUERY, 0, &statement(schema.as_bytes(), query.as_bytes()))
                    .map_err(fail)?;
            }
            TransactionBody::XaPrepare { gtrid, table, rows } => {
                let start = format!("XA START '{gtrid}'");
                add(EventType::QUERY, SUPPRESS_USE, &statement(b"", start.as_bytes()))
                    .map_err(fail)?;
                add_rows(&mut add, table, rows).map_err(fail)?;
                let end = format!("XA END '{gtrid}'");
                add(EventType::QUERY, SUPPRESS_USE, &statement(b"", end.as_bytes()))
                    .map_err(fail)?;
                let xid = Xid { format_id: 1, gtrid: gtrid.as_bytes(), bqual: &[] };
                let body = EventBody::XaPrepare(crate::XaPrepareEvent { one_phase: false, xid });
                add(EventType::XA_PREPARE, 0, &body).map_err(fail)?;
            }
        }
        // The rest of the transaction as it will sit in the file.
        let mut rest = Vec::new();
        if spec.compress {
            let mut plain = Vec::new();
            for (event_header, body) in &inner {
                push_event_raw(&mut plain, *event_header, body, false, 0).map_err(fail)?;
            }
            let compressed = zstd::bulk::compress(&plain, ZSTD_LEVEL)
                .map_err(|err| fail(malformed(format!("zstd: {err}"))))?;
            let payload = PayloadEvent {
                compression: Compression::Zstd,
                uncompressed_size: Some(plain.len() as u64),
                payload: &compressed,
            };
            let body = encode_body(
                EventType::TRANSACTION_PAYLOAD,
                &EventBody::TransactionPayload(payload),
            )
            .map_err(fail)?;
            push_event_raw(
                &mut rest,
                header(EventType::TRANSACTION_PAYLOAD, 0),
                &body,
                self.checksum,
                0,
            )
            .map_err(fail)?;
        } else {
            for (event_header, body) in &inner {
                push_event_raw(&mut rest, *event_header, body, self.checksum, 0).map_err(fail)?;
            }
        }
        // The GTID event states the transaction length, itself included.
        let (event_type, uuid, tag, gno, anonymous) = match spec.gtid {
            Some(gtid) if gtid.tag.is_some() => {
                (EventType::GTID_TAGGED, gtid.uuid, gtid.tag, gtid.gno, false)
            }
            Some(gtid) => (EventType::GTID, gtid.uuid, None, gtid.gno, false),
            None => (
                EventType::ANONYMOUS_GTID,
                bloodraven_gtid::Uuid::from_bytes([0; 16]),
                None,
                0,
                true,
            ),
        };
        let mut gtid = GtidEvent {
            flags: if has_statement { GTID_FLAG_MAY_HAVE_SBR } else { 0 },
            uuid,
            tag,
            gno,
            anonymous,
            last_committed: Some(spec.last_committed),
            sequence_number: Some(spec.sequence_number),
            immediate_commit_us: Some(spec.immediate_commit_us),
            original_commit_us: Some(spec.original_commit_us),
            transaction_length: Some(0),
            immediate_server_version: Some(GTID_SERVER_VERSION),
            original_server_version: Some(GTID_SERVER_VERSION),
            commit_group_ticket: None,
        };
        let trailer = if self.checksum { CHECKSUM_LEN } else { 0 };
        // The length's own encoding grows through at most four widths: a few rounds converge.
        let mut length = 0u64;
        for _ in 0..8 {
            gtid.transaction_length = Some(length);
            let body = encode_body(event_type, &EventBody::Gtid(gtid)).map_err(fail)?;
            let next = (HEADER_LEN + body.len() + trailer + rest.len()) as u64;
            if next == length {
                break;
            }
            length = next;
        }
        gtid.transaction_length = Some(length);
        let body = encode_body(event_type, &EventBody::Gtid(gtid)).map_err(fail)?;
        self.push(header(event_type, 0), &body, self.checksum).map_err(fail)?;
        // Fix up log_pos of the following events now that their offsets are known.
        fix_log_positions(&mut rest, self.position(), self.checksum);
        self.out.extend_from_slice(&rest);
        Ok((start, self.position()))
    }
}

fn statement<'a>(schema: &'a [u8], query: &'a [u8]) -> EventBody<'a> {
    EventBody::Query(QueryEvent {
        thread_id: 1,
        exec_time: 0,
        error_code: 0,
        status_vars: &[],
        schema,
        query,
    })
}

fn add_rows(
    add: &mut impl FnMut(EventType, u16, &EventBody<'_>) -> Result<(), ErrorKind>,
    table: &RowsTable,
    rows: &[(i64, Vec<u8>)],
) -> Result<(), ErrorKind> {
    // Columns: BIGINT NOT NULL, BLOB (2 length bytes) NULL.
    let columns = [2u8, 8, 252, 1, 2, 0b10];
    add(
        EventType::TABLE_MAP,
        0,
        &EventBody::TableMap(TableMapEvent {
            table_id: table.table_id,
            flags: 1,
            schema: table.schema.as_bytes(),
            table: table.table.as_bytes(),
            columns: &columns,
        }),
    )?;
    let mut body = Vec::new();
    put_u16(&mut body, 2); // extra-data length, itself included (v2 rows)
    body.push(2); // column count
    body.push(0b11); // columns present
    for (id, data) in rows {
        let len = u16::try_from(data.len())
            .map_err(|_| malformed(format!("row data of {} bytes exceeds a BLOB", data.len())))?;
        body.push(0); // null bitmap
        put_u64(&mut body, *id as u64);
        put_u16(&mut body, len);
        body.extend_from_slice(data);
    }
    add(
        EventType::WRITE_ROWS,
        0,
        &EventBody::Rows(RowsEvent { table_id: table.table_id, flags: ROWS_STMT_END, body: &body }),
    )
}

/// Rewrites `log_pos` of each event in `events` (which will start at file offset
/// `base`) and recomputes checksums.
fn fix_log_positions(events: &mut [u8], base: u64, checksum: bool) {
    let mut pos = 0usize;
    while let Some(header) = events.get(pos..).and_then(EventHeader::decode) {
        let size = header.event_size as usize;
        let Some(raw) = events.get_mut(pos..pos + size) else { break };
        let end = base + (pos + size) as u64;
        raw[13..17].copy_from_slice(&(end as u32).to_le_bytes());
        if checksum && size >= HEADER_LEN + CHECKSUM_LEN {
            let crc = event_crc32(&raw[..size - CHECKSUM_LEN]);
            raw[size - CHECKSUM_LEN..].copy_from_slice(&crc.to_le_bytes());
        }
        pos += size;
    }
}

fn push_event_raw(
    out: &mut Vec<u8>,
    header: EventHeader,
    body: &[u8],
    checksum: bool,
    log_pos: u32,
) -> Result<(), ErrorKind> {
    let size = HEADER_LEN + body.len() + if checksum { CHECKSUM_LEN } else { 0 };
    let size = u32::try_from(size).map_err(|_| malformed("event larger than 4 GiB"))?;
    let start = out.len();
    put_u32(out, header.timestamp);
    out.push(header.event_type.0);
    put_u32(out, header.server_id);
    put_u32(out, size);
    put_u32(out, log_pos);
    put_u16(out, header.flags);
    out.extend_from_slice(body);
    if checksum {
        let crc = event_crc32(&out[start..]);
        put_u32(out, crc);
    }
    Ok(())
}

fn encode_query(out: &mut Vec<u8>, query: &QueryEvent<'_>) {
    put_u32(out, query.thread_id);
    put_u32(out, query.exec_time);
    out.push(query.schema.len().min(255) as u8);
    put_u16(out, query.error_code);
    put_u16(out, query.status_vars.len().min(0xffff) as u16);
    out.extend_from_slice(&query.status_vars[..query.status_vars.len().min(0xffff)]);
    out.extend_from_slice(&query.schema[..query.schema.len().min(255)]);
    out.push(0);
    out.extend_from_slice(query.query);
}

/// Encodes a body (no header, no checksum) for `event_type`.
pub(crate) fn encode_body(
    event_type: EventType,
    body: &EventBody<'_>,
) -> Result<Vec<u8>, ErrorKind> {
    let mismatch = || malformed(format!("body does not fit event type {event_type}"));
    let mut out = Vec::new();
    match body {
        EventBody::FormatDescription(_) => return Err(mismatch()),
        EventBody::Query(query) => {
            if event_type != EventType::QUERY
                || query.schema.len() > 255
                || query.status_vars.len() > 0xffff
            {
                return Err(mismatch());
            }
            encode_query(&mut out, query);
        }
        EventBody::Xid(xid) => put_u64(&mut out, *xid),
        EventBody::Stop => {}
        EventBody::Rotate(rotate) => {
            put_u64(&mut out, rotate.position);
            out.extend_from_slice(rotate.next_file);
        }
        EventBody::TableMap(map) => {
            if map.schema.len() > 255 || map.table.len() > 255 || map.table_id >> 48 != 0 {
                return Err(malformed("table map names or id out of range"));
            }
            put_uint(&mut out, map.table_id, 6);
            put_u16(&mut out, map.flags);
            out.push(map.schema.len() as u8);
            out.extend_from_slice(map.schema);
            out.push(0);
            out.push(map.table.len() as u8);
            out.extend_from_slice(map.table);
            out.push(0);
            out.extend_from_slice(map.columns);
        }
        EventBody::Rows(rows) => {
            if !event_type.is_rows() || rows.table_id >> 48 != 0 {
                return Err(mismatch());
            }
            put_uint(&mut out, rows.table_id, 6);
            put_u16(&mut out, rows.flags);
            out.extend_from_slice(rows.body);
        }
        EventBody::Incident(incident) => {
            put_u16(&mut out, incident.incident);
            let len = incident.message.len().min(255);
            out.push(len as u8);
            out.extend_from_slice(&incident.message[..len]);
        }
        EventBody::Gtid(gtid) => match event_type {
            EventType::GTID | EventType::ANONYMOUS_GTID => encode_gtid(&mut out, gtid),
            EventType::GTID_TAGGED => encode_tagged_gtid(&mut out, gtid),
            _ => return Err(mismatch()),
        },
        EventBody::PreviousGtids(set) => encode_gtid_set(&mut out, set),
        EventBody::TransactionPayload(payload) => {
            let field = |out: &mut Vec<u8>, id: u64, value: u64| {
                put_packed(out, id);
                put_packed(out, packed_len(value) as u64);
                put_packed(out, value);
            };
            field(&mut out, payload_field::COMPRESSION_TYPE, payload.compression.code());
            if let Some(size) = payload.uncompressed_size {
                field(&mut out, payload_field::UNCOMPRESSED_SIZE, size);
            }
            field(&mut out, payload_field::PAYLOAD_SIZE, payload.payload.len() as u64);
            put_packed(&mut out, payload_field::END_MARK);
            out.extend_from_slice(payload.payload);
        }
        EventBody::XaPrepare(prepare) => {
            out.push(u8::from(prepare.one_phase));
            put_u32(&mut out, prepare.xid.format_id);
            put_u32(&mut out, prepare.xid.gtrid.len() as u32);
            put_u32(&mut out, prepare.xid.bqual.len() as u32);
            out.extend_from_slice(prepare.xid.gtrid);
            out.extend_from_slice(prepare.xid.bqual);
        }
        EventBody::MariaGtid(gtid) => {
            put_u64(&mut out, gtid.seq);
            put_u32(&mut out, gtid.domain);
            out.push(gtid.flags);
            if let Some(commit_id) = gtid.commit_id {
                put_u64(&mut out, commit_id);
            }
            if let Some(xid) = &gtid.xid {
                if xid.gtrid.len() > 64 || xid.bqual.len() > 64 {
                    return Err(malformed("XA id part longer than 64 bytes"));
                }
                put_u32(&mut out, xid.format_id);
                out.push(xid.gtrid.len() as u8);
                out.push(xid.bqual.len() as u8);
                out.extend_from_slice(xid.gtrid);
                out.extend_from_slice(xid.bqual);
            }
        }
        EventBody::MariaGtidList(list) => {
            let count = u32::try_from(list.len())
                .ok()
                .filter(|count| *count <= 0x0fff_ffff)
                .ok_or_else(|| malformed("GTID list too long"))?;
            put_u32(&mut out, count);
            for gtid in list {
                put_u32(&mut out, gtid.domain);
                put_u32(&mut out, gtid.server_id);
                put_u64(&mut out, gtid.seq);
            }
        }
        EventBody::BinlogCheckpoint(name) => {
            put_u32(&mut out, name.len() as u32);
            out.extend_from_slice(name);
        }
        EventBody::Other(raw) => out.extend_from_slice(raw),
    }
    Ok(out)
}

fn encode_gtid(out: &mut Vec<u8>, gtid: &GtidEvent) {
    out.push(gtid.flags);
    out.extend_from_slice(gtid.uuid.as_bytes());
    put_u64(out, gtid.gno);
    let (Some(last_committed), Some(sequence_number)) = (gtid.last_committed, gtid.sequence_number)
    else {
        return;
    };
    out.push(2);
    put_u64(out, last_committed as u64);
    put_u64(out, sequence_number as u64);
    let Some(immediate) = gtid.immediate_commit_us else { return };
    let original = gtid.original_commit_us.unwrap_or(immediate);
    let immediate = immediate & ((1 << 55) - 1);
    if original != immediate {
        put_uint(out, immediate | (1 << 55), 7);
        put_uint(out, original, 7);
    } else {
        put_uint(out, immediate, 7);
    }
    let Some(length) = gtid.transaction_length else { return };
    put_packed(out, length);
    let Some(immediate) = gtid.immediate_server_version else { return };
    let original = gtid.original_server_version.unwrap_or(immediate);
    let immediate = immediate & !(1 << 31);
    if original != immediate {
        put_u32(out, immediate | (1 << 31));
        put_u32(out, original);
    } else {
        put_u32(out, immediate);
    }
    if let Some(ticket) = gtid.commit_group_ticket {
        put_u64(out, ticket);
    }
}

fn encode_tagged_gtid(out: &mut Vec<u8>, gtid: &GtidEvent) {
    use tagged_field as field;
    let mut fields = Vec::new();
    let put = |fields: &mut Vec<u8>, id: u64| put_varlen(fields, id);
    put(&mut fields, field::FLAGS);
    put_varlen(&mut fields, u64::from(gtid.flags));
    put(&mut fields, field::UUID);
    for byte in gtid.uuid.as_bytes() {
        put_varlen(&mut fields, u64::from(*byte));
    }
    put(&mut fields, field::GNO);
    put_varlen_signed(&mut fields, gtid.gno as i64);
    put(&mut fields, field::TAG);
    let tag = gtid.tag.as_ref().map_or("", |tag| tag.as_str());
    put_varlen(&mut fields, tag.len() as u64);
    fields.extend_from_slice(tag.as_bytes());
    put(&mut fields, field::LAST_COMMITTED);
    put_varlen_signed(&mut fields, gtid.last_committed.unwrap_or(0));
    put(&mut fields, field::SEQUENCE_NUMBER);
    put_varlen_signed(&mut fields, gtid.sequence_number.unwrap_or(0));
    put(&mut fields, field::IMMEDIATE_COMMIT_TIMESTAMP);
    let immediate = gtid.immediate_commit_us.unwrap_or(0);
    put_varlen(&mut fields, immediate);
    if let Some(original) = gtid.original_commit_us
        && original != immediate
    {
        put(&mut fields, field::ORIGINAL_COMMIT_TIMESTAMP);
        put_varlen(&mut fields, original);
    }
    put(&mut fields, field::TRANSACTION_LENGTH);
    put_varlen(&mut fields, gtid.transaction_length.unwrap_or(0));
    let immediate_version = gtid.immediate_server_version.unwrap_or(999_999);
    put(&mut fields, field::IMMEDIATE_SERVER_VERSION);
    put_varlen(&mut fields, u64::from(immediate_version));
    if let Some(original) = gtid.original_server_version
        && original != immediate_version
    {
        put(&mut fields, field::ORIGINAL_SERVER_VERSION);
        put_varlen(&mut fields, u64::from(original));
    }
    put(&mut fields, field::COMMIT_GROUP_TICKET);
    put_varlen(&mut fields, gtid.commit_group_ticket.unwrap_or(0));
    // Message size counts the version byte, its own encoding, the last
    // non-ignorable field id and the fields.
    let last_non_ignorable = field::COMMIT_GROUP_TICKET;
    let mut id_bytes = Vec::new();
    put_varlen(&mut id_bytes, last_non_ignorable);
    let fixed = (1 + id_bytes.len() + fields.len()) as u64;
    let mut size = fixed + 1;
    loop {
        let mut size_bytes = Vec::new();
        put_varlen(&mut size_bytes, size);
        let next = fixed + size_bytes.len() as u64;
        if next == size {
            break;
        }
        size = next;
    }
    put_varlen(out, SERIALIZATION_FORMAT_VERSION);
    put_varlen(out, size);
    out.extend_from_slice(&id_bytes);
    out.extend_from_slice(&fields);
}

fn encode_gtid_set(out: &mut Vec<u8>, set: &GtidSet) {
    let tagged = set.sources().any(|source| source.tag().is_some());
    let count = set.sources().len() as u64;
    if tagged {
        put_u64(out, (1 << 56) | (count << 8) | 1);
    } else {
        put_u64(out, count);
    }
    for source in set.sources() {
        out.extend_from_slice(source.uuid().as_bytes());
        if tagged {
            let tag = source.tag().map_or("", |tag| tag.as_str());
            put_varlen(out, tag.len() as u64);
            out.extend_from_slice(tag.as_bytes());
        }
        put_u64(out, source.intervals().len() as u64);
        for interval in source.intervals() {
            put_u64(out, interval.start);
            put_u64(out, interval.end + 1);
        }
    }
}
