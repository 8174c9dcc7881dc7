//! parse(write(x)) == x: transactions written by the writer come back field for
//! field, and every parsed event re-encodes to the same bytes.

use bloodraven_binlog::{
    EventReader, FileEnd, Terminator, Transaction, TransactionBody, TransactionId, TransactionSpec,
    Writer, WriterOptions, scan,
};
use bloodraven_gtid::{Gtid, GtidSet, Tag, Uuid};
use proptest::prelude::*;

use crate::support::{UUID_A, UUID_B, rows_tx, sample_file, table};

/// The summary entry a spec must produce, given where the writer put it and the
/// XID the writer assigned.
fn expected(spec: &TransactionSpec, start: u64, end: u64, xid: &mut u64) -> Transaction {
    let (events, rows, xa, terminator) = match &spec.body {
        TransactionBody::Rows { .. } => {
            let terminator = Terminator::Xid(*xid);
            *xid += 1;
            (5, 1, false, terminator)
        }
        TransactionBody::Statement { query, .. } => {
            (2, 0, query.starts_with("XA "), Terminator::Statement)
        }
        TransactionBody::XaPrepare { .. } => (6, 1, true, Terminator::XaPrepare),
    };
    Transaction {
        id: spec.gtid.map_or(TransactionId::Anonymous, TransactionId::Gtid),
        server_id: spec.server_id,
        timestamp: (spec.immediate_commit_us / 1_000_000) as u32,
        original_commit_us: Some(spec.original_commit_us),
        immediate_commit_us: Some(spec.immediate_commit_us),
        last_committed: Some(spec.last_committed),
        sequence_number: Some(spec.sequence_number),
        transaction_length: Some(end - start),
        start,
        end,
        event_count: events + u32::from(spec.compress),
        row_events: rows,
        xa,
        compressed: spec.compress,
        terminator: Some(terminator),
    }
}

/// Parses `bytes` event by event and writes every event again with the writer.
fn reencode(bytes: &[u8]) -> Vec<u8> {
    let mut writer = Writer::without_format_description(0);
    for item in EventReader::new(bytes) {
        let (_, event) = item.unwrap();
        writer.event(event.header, &event.body).unwrap();
    }
    writer.into_bytes()
}

#[test]
fn sample_file_round_trips() {
    let bytes = sample_file();
    let summary = scan(&bytes);
    assert_eq!(summary.problem, None);
    assert!(summary.coverage.is_complete(), "{:?}", summary.coverage.incomplete);
    assert_eq!(summary.previous_gtids.as_ref().unwrap().to_string(), format!("{UUID_A}:1-10"));
    assert_eq!(
        summary.coverage.gtids.to_compact_string(),
        format!("{UUID_A}:11-15,{UUID_B}:alpha:1")
    );
    let ids: Vec<String> = summary
        .transactions
        .iter()
        .map(|tx| match tx.id {
            TransactionId::Gtid(gtid) => gtid.to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        ids,
        [
            format!("{UUID_A}:11"),
            format!("{UUID_A}:12"),
            format!("{UUID_A}:13"),
            format!("{UUID_B}:alpha:1"),
            format!("{UUID_A}:14"),
            format!("{UUID_A}:15"),
        ]
    );
    let replicated = &summary.transactions[3];
    assert_eq!(replicated.original_commit_us, Some(1_700_000_001_000_000 - 5_000_000));
    assert_eq!(replicated.immediate_commit_us, Some(1_700_000_001_003_000));
    assert!(summary.transactions[2].compressed);
    assert_eq!(summary.transactions[4].terminator, Some(Terminator::XaPrepare));
    assert!(summary.transactions[5].xa);
    assert!(
        matches!(&summary.end, FileEnd::Rotate { next_file, .. } if next_file == "binlog.000002")
    );
    assert_eq!(summary.first_event_time, Some(1_700_000_000));
    assert_eq!(summary.last_event_time, Some(1_700_000_010));
    assert_eq!(reencode(&bytes), bytes);
}

#[test]
fn log_positions_are_file_offsets() {
    let bytes = sample_file();
    for item in EventReader::new(&bytes) {
        let (offset, event) = item.unwrap();
        assert_eq!(u64::from(event.header.log_pos), offset + u64::from(event.header.event_size));
    }
}

fn uuid_strategy() -> impl Strategy<Value = Uuid> {
    prop_oneof![Just(UUID_A), Just(UUID_B), any::<[u8; 16]>().prop_map(Uuid::from_bytes)]
}

fn body_strategy() -> impl Strategy<Value = TransactionBody> {
    let rows = proptest::collection::vec(
        (any::<i64>(), proptest::collection::vec(any::<u8>(), 0..300)),
        0..6,
    );
    prop_oneof![
        rows.clone().prop_map(|rows| TransactionBody::Rows { table: table(), rows }),
        "[a-z ]{1,60}".prop_map(|query| TransactionBody::Statement {
            schema: "s".into(),
            query: format!("CREATE TABLE {query}"),
        }),
        ("[a-z0-9]{1,20}", rows).prop_map(|(gtrid, rows)| TransactionBody::XaPrepare {
            gtrid,
            table: table(),
            rows
        }),
    ]
}

fn spec_strategy() -> impl Strategy<Value = TransactionSpec> {
    (
        proptest::option::weighted(
            0.9,
            (
                uuid_strategy(),
                proptest::option::of("[a-z_][a-z0-9_]{0,31}"),
                1u64..=i64::MAX as u64,
            ),
        ),
        any::<u32>(),
        0u64..4_000_000_000_000_000,
        0u64..10_000_000,
        (0i64..1 << 40, 0i64..1 << 40),
        body_strategy(),
        any::<bool>(),
    )
        .prop_map(
            |(
                id,
                server_id,
                original,
                delay,
                (last_committed, sequence_number),
                body,
                compress,
            )| {
                TransactionSpec {
                    gtid: id.map(|(uuid, tag, gno)| Gtid {
                        uuid,
                        tag: tag.map(|t| Tag::new(&t).unwrap()),
                        gno,
                    }),
                    server_id,
                    original_commit_us: original,
                    immediate_commit_us: original + delay,
                    last_committed,
                    sequence_number,
                    body,
                    compress,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn written_transactions_parse_back(specs in proptest::collection::vec(spec_strategy(), 0..12), checksum in any::<bool>()) {
        let mut writer = Writer::new(&WriterOptions { checksum, ..WriterOptions::default() });
        let mut expected_set = GtidSet::new();
        let previous: GtidSet = format!("{UUID_B}:1-3").parse().unwrap();
        writer.previous_gtids(&previous, 0).unwrap();
        let mut xid = 1;
        let mut want = Vec::new();
        for spec in &specs {
            let (start, end) = writer.transaction(spec).unwrap();
            want.push(expected(spec, start, end, &mut xid));
            if let Some(gtid) = &spec.gtid {
                expected_set.insert(gtid).unwrap();
            }
        }
        writer.stop(0).unwrap();
        let bytes = writer.into_bytes();
        let summary = scan(&bytes);
        prop_assert_eq!(&summary.problem, &None);
        prop_assert_eq!(&summary.transactions, &want);
        prop_assert_eq!(&summary.coverage.gtids, &expected_set);
        prop_assert_eq!(summary.previous_gtids.as_ref(), Some(&previous));
        let anonymous = specs.iter().any(|spec| spec.gtid.is_none());
        prop_assert_eq!(summary.coverage.is_complete(), checksum && !anonymous);
        let stopped = matches!(summary.end, FileEnd::Stop { .. });
        prop_assert!(stopped);
        prop_assert_eq!(reencode(&bytes), bytes);
    }
}

#[test]
fn rows_written_as_blob_rows_are_exactly_sized() {
    // Row data is a BLOB with a 2-byte length: 65535 fits, 65536 is refused.
    let mut writer = Writer::new(&WriterOptions::default());
    let mut spec = rows_tx(Some(Gtid::new(UUID_A, 1)), 1_000_000, 0, false);
    spec.body = TransactionBody::Rows { table: table(), rows: vec![(1, vec![0; 65535])] };
    writer.transaction(&spec).unwrap();
    spec.body = TransactionBody::Rows { table: table(), rows: vec![(1, vec![0; 65536])] };
    let err = writer.transaction(&spec).unwrap_err();
    assert!(err.to_string().contains("exceeds a BLOB"), "{err}");
}

/// The writer refuses what it cannot write faithfully instead of producing a file
/// the parser rejects or reads back differently.
#[test]
fn the_writer_refuses_unrepresentable_transactions() {
    let mut writer = Writer::new(&WriterOptions::default());
    let start = writer.position();
    for gno in [0, bloodraven_gtid::MAX_GNO + 1, u64::MAX] {
        let err = writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, gno)), 1, 1, false));
        let err = err.unwrap_err();
        assert_eq!(err.offset(), start);
        assert!(err.to_string().contains(&format!("GTID number {gno} is out of range")), "{err}");
    }
    let mut spec = rows_tx(Some(Gtid::new(UUID_A, 1)), 1_000_000, 1, false);
    spec.original_commit_us = 1 << 55;
    let err = writer.transaction(&spec).unwrap_err();
    assert!(err.to_string().contains("original commit time"), "{err}");
    assert_eq!(writer.position(), start, "nothing was written");
    // The largest values still round-trip.
    spec.gtid = Some(Gtid::new(UUID_A, bloodraven_gtid::MAX_GNO));
    spec.original_commit_us = (1 << 55) - 1;
    writer.transaction(&spec).unwrap();
    let summary = scan(writer.bytes());
    assert_eq!(summary.problem, None);
    assert_eq!(summary.transactions[0].original_commit_us, Some((1 << 55) - 1));
    assert_eq!(
        summary.coverage.gtids.to_string(),
        format!("{UUID_A}:{}", bloodraven_gtid::MAX_GNO)
    );
}
