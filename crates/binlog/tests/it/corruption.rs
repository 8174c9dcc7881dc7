//! Damaged files: every problem names the byte offset, the event type and the reason.

use bloodraven_binlog::{
    Compression, ErrorKind, EventBody, EventHeader, EventReader, EventType, FileEnd,
    IncompleteReason, PayloadEvent, TransactionBody, TransactionId, TransactionSpec, Writer,
    WriterOptions, scan,
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
    let mut good = Writer::new(&WriterOptions::default());
    good.transaction(&rows_tx(Some(Gtid::new(UUID_A, 1)), 1_000_000, 20, true)).unwrap();
    let good = good.into_bytes();
    let mut writer = Writer::without_format_description(1);
    let mut payload_offset = 0;
    for item in EventReader::new(&good) {
        let (_, event) = item.unwrap();
        match &event.body {
            EventBody::TransactionPayload(payload) => {
                let cut = PayloadEvent {
                    payload: &payload.payload[..payload.payload.len() / 2],
                    ..*payload
                };
                payload_offset =
                    writer.event(event.header, &EventBody::TransactionPayload(cut)).unwrap();
            }
            body => {
                writer.event(event.header, body).unwrap();
            }
        }
    }
    let bytes = writer.into_bytes();
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
    // Inner events of a plain (uncompressed) payload: BEGIN, a GTID, COMMIT.
    let mut inner = Writer::without_format_description(1);
    let _ = &mut inner;
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
    let gtid_only = {
        let mut w = Writer::new(&WriterOptions::default());
        w.transaction(&spec).unwrap();
        let bytes = w.into_bytes();
        let (offset, event) = EventReader::new(&bytes).nth(1).unwrap().unwrap();
        (event.header, offset, bytes)
    };
    let (gtid_header, gtid_offset, gtid_bytes) = gtid_only;
    let gtid_event = EventReader::new(&gtid_bytes).nth(1).unwrap().unwrap().1;
    assert_eq!(gtid_event.header.event_type, EventType::GTID);
    let _ = gtid_offset;
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
