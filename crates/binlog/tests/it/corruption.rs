//! Damaged files: every problem names the byte offset, the event type and the reason.

use bloodraven_binlog::{
    Compression, ErrorKind, EventBody, EventHeader, EventReader, EventType, FileEnd,
    IncompleteReason, LOG_EVENT_BINLOG_IN_USE_F, PayloadEvent, ScanOptions, Scanner,
    TransactionBody, TransactionId, TransactionSpec, Writer, WriterOptions, scan,
};
use bloodraven_gtid::Gtid;

use crate::support::{UUID_A, UUID_B, rows_tx, sample_file, tagged};

fn reason(bytes: &[u8]) -> Option<IncompleteReason> {
    scan(bytes).coverage.incomplete.map(|incomplete| incomplete.reason)
}

#[test]
fn a_flipped_byte_in_any_event_is_a_checksum_mismatch_at_that_event() {
    let bytes = sample_file();
    let events: Vec<(u64, EventType, u32)> = EventReader::new(&bytes)
        .map(|item| {
            let (offset, event) = item.unwrap();
            (offset, event.header.event_type, event.header.event_size)
        })
        .collect();
    let full = scan(&bytes);
    for &(offset, event_type, size) in &events {
        // Flip a byte of the body (or of the timestamp for tiny bodies).
        let at = offset as usize + if size > 24 { 19 + (size as usize - 23) / 2 } else { 1 };
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x40;
        let summary = scan(&damaged);
        let problem = summary.problem.as_ref().unwrap();
        assert_eq!(problem.offset(), offset);
        assert_eq!(problem.event_type(), Some(event_type));
        assert!(matches!(problem.kind(), ErrorKind::ChecksumMismatch { .. }), "{problem}");
        assert!(
            problem.to_string().starts_with(&format!(
                "binlog byte {offset}: {event_type} event: checksum mismatch"
            )),
            "{problem}"
        );
        assert_eq!(summary.parsed_len, offset);
        let before: Vec<_> =
            full.transactions.iter().filter(|tx| tx.end <= offset).cloned().collect();
        assert_eq!(summary.transactions, before);
        assert!(!summary.coverage.is_complete());
    }
}

#[test]
fn bad_magic_and_bad_sizes_are_located() {
    let mut bytes = sample_file();
    bytes[1] = b'B';
    let problem = scan(&bytes).problem.unwrap();
    assert_eq!(
        problem.to_string(),
        "binlog byte 0: event header: not a binlog file: magic number is [fe, 42, 69, 6e], expected fe 62 69 6e"
    );

    let mut bytes = sample_file();
    let second = EventReader::new(&bytes).nth(1).unwrap().unwrap().0 as usize;
    bytes[second + 9..second + 13].copy_from_slice(&10u32.to_le_bytes());
    let problem = scan(&bytes).problem.unwrap();
    assert_eq!(problem.offset(), second as u64);
    assert_eq!(
        problem.to_string(),
        format!(
            "binlog byte {second}: PREVIOUS_GTIDS event: event size 10 is smaller than its 23-byte header and checksum"
        )
    );
}

/// A compressed transaction whose payload event is valid (good CRC) but whose
/// zstd stream is cut in half.
#[test]
fn a_truncated_compressed_payload_leaves_coverage_incomplete() {
    let good = compressed_file(20);
    let (bytes, payload_offset) = replace_payload(&good, |original| PayloadEvent {
        payload: &original.payload[..original.payload.len() / 2],
        ..*original
    });
    let summary = scan(&bytes);
    assert_eq!(summary.problem, None, "the file itself parses");
    let incomplete = summary.coverage.incomplete.unwrap();
    assert_eq!(incomplete.offset, payload_offset);
    assert_eq!(incomplete.event_type, Some(EventType::TRANSACTION_PAYLOAD));
    assert!(matches!(incomplete.reason, IncompleteReason::MalformedPayload(_)), "{incomplete}");
    assert!(summary.coverage.gtids.is_empty(), "an unproven transaction is not covered");
    assert_eq!(summary.transactions[0].terminator, None);

    // The file cut inside the payload event: a truncation at the payload's offset.
    let cut = &good[..good.len() - 30];
    let summary = scan(cut);
    let problem = summary.problem.unwrap();
    assert_eq!(problem.event_type(), Some(EventType::TRANSACTION_PAYLOAD));
    assert!(problem.is_truncation());
    assert!(matches!(summary.end, FileEnd::MidTransaction { .. }));
}

#[test]
fn payload_rules_orphaned_nested_unknown_compression() {
    // Inner events of a plain (uncompressed) payload: a whole transaction, its GTID
    // event included (checksums off, log_pos 0).
    let mut donor = Writer::new(&WriterOptions { checksum: false, ..WriterOptions::default() });
    donor.transaction(&rows_tx(Some(Gtid::new(UUID_B, 9)), 1_000_000, 1, false)).unwrap();
    let donor = donor.into_bytes();
    let inner_events: Vec<u8> = {
        let mut out = Vec::new();
        for item in EventReader::new(&donor).skip(1) {
            let (offset, event) = item.unwrap();
            let size = event.header.event_size as usize;
            let mut raw = donor[offset as usize..offset as usize + size].to_vec();
            raw[13..17].copy_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&raw);
        }
        out
    };
    let payload_header = |server_id| EventHeader {
        timestamp: 1,
        event_type: EventType::TRANSACTION_PAYLOAD,
        server_id,
        event_size: 0,
        log_pos: 0,
        flags: 0,
    };
    let payload = |compression| PayloadEvent {
        compression,
        uncompressed_size: Some(inner_events.len() as u64),
        payload: &inner_events,
    };

    // Nested: GTID inside the payload.
    let mut writer = Writer::new(&WriterOptions::default());
    writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, 1)), 1_000_000, 1, false)).unwrap();
    let mut spec = rows_tx(Some(Gtid::new(UUID_A, 2)), 1_000_000, 1, false);
    spec.body = TransactionBody::Statement { schema: String::new(), query: "DO 1".into() };
    let gtid_bytes = {
        let mut w = Writer::new(&WriterOptions::default());
        w.transaction(&spec).unwrap();
        w.into_bytes()
    };
    let gtid_event = EventReader::new(&gtid_bytes).nth(1).unwrap().unwrap().1;
    let gtid_header = gtid_event.header;
    assert_eq!(gtid_header.event_type, EventType::GTID);
    writer.event(gtid_header, &gtid_event.body).unwrap();
    writer
        .event(payload_header(1), &EventBody::TransactionPayload(payload(Compression::None)))
        .unwrap();
    let bytes = writer.into_bytes();
    assert_eq!(reason(&bytes), Some(IncompleteReason::NestedInPayload));

    // Orphaned: a payload with no GTID before it.
    let mut writer = Writer::new(&WriterOptions::default());
    let at = writer
        .event(payload_header(1), &EventBody::TransactionPayload(payload(Compression::None)))
        .unwrap();
    let summary = scan(&writer.into_bytes());
    let incomplete = summary.coverage.incomplete.unwrap();
    assert_eq!((incomplete.offset, incomplete.reason), (at, IncompleteReason::OrphanedPayload));

    // Unknown compression right after a GTID.
    let mut writer = Writer::new(&WriterOptions::default());
    writer.event(gtid_header, &gtid_event.body).unwrap();
    writer
        .event(payload_header(1), &EventBody::TransactionPayload(payload(Compression::Unknown(7))))
        .unwrap();
    assert!(
        matches!(reason(&writer.into_bytes()), Some(IncompleteReason::MalformedPayload(m)) if m.contains("unknown compression type 7"))
    );
}

#[test]
fn coverage_rules() {
    // Only format description, previous GTIDs and rotate: complete and empty.
    let mut writer = Writer::new(&WriterOptions::default());
    writer.previous_gtids(&format!("{UUID_A}:1-100").parse().unwrap(), 5).unwrap();
    writer.rotate("binlog.000009", 6).unwrap();
    let summary = scan(&writer.into_bytes());
    assert!(summary.coverage.is_complete());
    assert!(summary.coverage.gtids.is_empty(), "previous GTIDs are not transaction proof");
    assert!(summary.transactions.is_empty());
    assert!(matches!(summary.end, FileEnd::Rotate { .. }));

    // Checksums off: parsed, but incomplete.
    let mut writer = Writer::new(&WriterOptions { checksum: false, ..WriterOptions::default() });
    writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, 1)), 1_000_000, 1, false)).unwrap();
    let summary = scan(&writer.into_bytes());
    assert_eq!(summary.problem, None);
    assert_eq!(summary.transactions.len(), 1);
    let incomplete = summary.coverage.incomplete.unwrap();
    assert_eq!((incomplete.offset, incomplete.reason), (4, IncompleteReason::ChecksumDisabled));

    // Anonymous transaction.
    let mut writer = Writer::new(&WriterOptions::default());
    writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, 1)), 1_000_000, 1, false)).unwrap();
    let (start, _) = writer.transaction(&rows_tx(None, 1_000_000, 1, false)).unwrap();
    let summary = scan(&writer.into_bytes());
    assert_eq!(summary.transactions[1].id, TransactionId::Anonymous);
    let incomplete = summary.coverage.incomplete.unwrap();
    assert_eq!(incomplete.offset, start);
    assert_eq!(incomplete.event_type, Some(EventType::ANONYMOUS_GTID));
    assert_eq!(incomplete.reason, IncompleteReason::AnonymousTransaction);
    assert_eq!(summary.coverage.gtids.to_string(), format!("{UUID_A}:1"));

    // Tagged and untagged sources of one UUID stay distinct.
    let mut writer = Writer::new(&WriterOptions::default());
    writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, 1)), 1_000_000, 1, false)).unwrap();
    writer.transaction(&rows_tx(Some(tagged(UUID_A, "blue", 1)), 1_000_000, 1, true)).unwrap();
    writer.transaction(&rows_tx(Some(tagged(UUID_A, "blue", 2)), 1_000_000, 1, false)).unwrap();
    let summary = scan(&writer.into_bytes());
    assert!(summary.coverage.is_complete());
    assert_eq!(summary.coverage.gtids.to_compact_string(), format!("{UUID_A}:1:blue:1-2"));

    // An unknown event type is skipped by its length; coverage names it.
    let mut writer = Writer::new(&WriterOptions::default());
    writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, 1)), 1_000_000, 1, false)).unwrap();
    let header = EventHeader {
        timestamp: 1,
        event_type: EventType(99),
        server_id: 1,
        event_size: 0,
        log_pos: 0,
        flags: 0,
    };
    let at = writer.event(header, &EventBody::Other(b"from the future")).unwrap();
    writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, 2)), 1_000_000, 1, false)).unwrap();
    let summary = scan(&writer.into_bytes());
    assert_eq!(summary.problem, None);
    assert_eq!(summary.coverage.gtids.to_string(), format!("{UUID_A}:1-2"));
    let incomplete = summary.coverage.incomplete.unwrap();
    assert_eq!((incomplete.offset, incomplete.event_type), (at, Some(EventType(99))));
    assert_eq!(
        incomplete.to_string(),
        format!("binlog byte {at}: unknown type 99 event: unsupported event")
    );

    // An incident after a transaction.
    let mut writer = Writer::new(&WriterOptions::default());
    writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, 1)), 1_000_000, 1, false)).unwrap();
    let header = EventHeader { event_type: EventType::INCIDENT, ..header };
    let body = bloodraven_binlog::IncidentEvent { incident: 1, message: b"LOST_EVENTS" };
    writer.event(header, &EventBody::Incident(body)).unwrap();
    assert_eq!(
        reason(&writer.into_bytes()),
        Some(IncompleteReason::Incident("LOST_EVENTS".into()))
    );

    // A transaction cut off by the next GTID: its GTID is not covered.
    let mut writer = Writer::new(&WriterOptions::default());
    let spec: TransactionSpec = rows_tx(Some(Gtid::new(UUID_A, 1)), 1_000_000, 1, false);
    writer.transaction(&spec).unwrap();
    let bytes = writer.into_bytes();
    let xid_at = EventReader::new(&bytes).last().unwrap().unwrap().0 as usize;
    let mut spliced = bytes[..xid_at].to_vec();
    let mut second = Writer::new(&WriterOptions::default());
    second.transaction(&rows_tx(Some(Gtid::new(UUID_A, 2)), 1_000_000, 1, false)).unwrap();
    let second = second.into_bytes();
    let fde_end = EventReader::new(&second).nth(1).unwrap().unwrap().0 as usize;
    let gtid2_at = spliced.len();
    spliced.extend_from_slice(&second[fde_end..]);
    // log_pos values are now off, which the parser does not rely on.
    let summary = scan(&spliced);
    assert_eq!(summary.problem, None);
    assert_eq!(summary.transactions[0].terminator, None);
    assert_eq!(summary.transactions[1].start, gtid2_at as u64);
    assert_eq!(summary.coverage.gtids.to_string(), format!("{UUID_A}:2"));
    assert_eq!(
        summary.coverage.incomplete.unwrap().reason,
        IncompleteReason::UnterminatedTransaction
    );
}

/// The server computes the format description's CRC with the in-use flag clear,
/// sets the flag while the file is open and clears it in place on close: a file
/// with the flag set (the active binlog, or the last one before a crash) is not
/// a checksum mismatch, but any other flipped flag bit still is.
#[test]
fn the_in_use_flag_is_outside_the_format_description_checksum() {
    let sealed = sample_file();
    let flags_at = 4 + 17;
    let mut active = sealed.clone();
    active[flags_at] |= LOG_EVENT_BINLOG_IN_USE_F as u8;
    let summary = scan(&active);
    assert_eq!(summary.problem, None);
    assert!(summary.coverage.is_complete(), "{:?}", summary.coverage.incomplete);
    assert_eq!(summary.transactions, scan(&sealed).transactions);

    let mut damaged = sealed.clone();
    damaged[flags_at] |= 0x02;
    let problem = scan(&damaged).problem.unwrap();
    assert_eq!((problem.offset(), problem.event_type()), (4, Some(EventType::FORMAT_DESCRIPTION)));
    assert!(matches!(problem.kind(), ErrorKind::ChecksumMismatch { .. }), "{problem}");

    // Only the format description is special: the flag bit elsewhere is damage.
    let second = EventReader::new(&sealed).nth(1).unwrap().unwrap().0 as usize;
    let mut damaged = sealed.clone();
    damaged[second + 17] |= LOG_EVENT_BINLOG_IN_USE_F as u8;
    assert_eq!(scan(&damaged).problem.unwrap().offset(), second as u64);

    // The writer checksums a format description with the flag as the server does.
    let mut writer = Writer::without_format_description(1);
    for item in EventReader::new(&active) {
        let (_, event) = item.unwrap();
        writer.event(event.header, &event.body).unwrap();
    }
    assert_eq!(writer.into_bytes(), active);
}

/// A file of one compressed transaction with `rows` rows.
fn compressed_file(rows: usize) -> Vec<u8> {
    let mut writer = Writer::new(&WriterOptions::default());
    writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, 1)), 1_000_000, rows, true)).unwrap();
    writer.into_bytes()
}

/// `file` with its TRANSACTION_PAYLOAD replaced by `replace(original)` (the
/// checksum recomputed), and the payload event's offset.
fn replace_payload<'f>(
    file: &'f [u8],
    replace: impl Fn(&PayloadEvent<'f>) -> PayloadEvent<'f>,
) -> (Vec<u8>, u64) {
    let mut writer = Writer::without_format_description(1);
    let mut payload_offset = 0;
    for item in EventReader::new(file) {
        let (_, event) = item.unwrap();
        match &event.body {
            EventBody::TransactionPayload(original) => {
                let body = EventBody::TransactionPayload(replace(original));
                payload_offset = writer.event(event.header, &body).unwrap();
            }
            body => {
                writer.event(event.header, body).unwrap();
            }
        }
    }
    (writer.into_bytes(), payload_offset)
}

/// [`compressed_file`] with `payload` and its declared size as the payload.
fn with_payload(payload: &[u8], uncompressed_size: Option<u64>) -> (Vec<u8>, u64) {
    let good = compressed_file(2);
    replace_payload(&good, |original| PayloadEvent { payload, uncompressed_size, ..*original })
}

/// A payload's decompressed size is capped by `ScanOptions::max_payload_size`,
/// whether it declares a size or not: a small event cannot make the scanner
/// allocate without bound, and an over-limit payload leaves coverage incomplete.
#[test]
fn decompression_is_bounded() {
    let limit = 1 << 20;
    let options = ScanOptions { max_payload_size: limit };
    let scan_with = |bytes: &[u8]| {
        let mut scanner = Scanner::new(options);
        scanner.feed(bytes);
        scanner.finish()
    };
    let payload_reason = |bytes: &[u8]| {
        let summary = scan_with(bytes);
        assert_eq!(summary.problem, None, "the file itself parses");
        assert!(summary.coverage.gtids.is_empty(), "an unproven transaction is not covered");
        let incomplete = summary.coverage.incomplete.unwrap();
        assert_eq!(incomplete.event_type, Some(EventType::TRANSACTION_PAYLOAD));
        match incomplete.reason {
            IncompleteReason::MalformedPayload(reason) => (incomplete.offset, reason),
            other => panic!("{other:?}"),
        }
    };
    // 64 MiB of zeros compress to a few KiB.
    let bomb = zstd::bulk::compress(&vec![0u8; 64 << 20], 3).unwrap();
    assert!(bomb.len() < 64 << 10);

    // Declared beyond the limit: refused before anything is allocated.
    let (bytes, at) = with_payload(&bomb, Some(u64::MAX));
    let (offset, reason) = payload_reason(&bytes);
    assert_eq!(offset, at);
    assert_eq!(reason, format!("declared size {} exceeds the {limit}-byte limit", u64::MAX));

    // Declared within the limit but the stream holds more: zstd stops at the buffer.
    let (bytes, _) = with_payload(&bomb, Some(1000));
    let (_, reason) = payload_reason(&bytes);
    assert!(reason.starts_with("zstd: "), "{reason}");

    // No declared size: the stream is read up to the limit and no further.
    let (bytes, _) = with_payload(&bomb, None);
    let (_, reason) = payload_reason(&bytes);
    assert_eq!(reason, format!("decompresses to more than {limit} bytes"));

    // A small stream without a declared size decodes; its content is then parsed.
    let (bytes, _) = with_payload(&zstd::bulk::compress(b"short", 3).unwrap(), None);
    let (_, reason) = payload_reason(&bytes);
    assert!(reason.contains("event at payload byte 0"), "{reason}");
}
