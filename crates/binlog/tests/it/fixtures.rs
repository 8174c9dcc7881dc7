//! The committed files under `test_data/` (see its README for how each was made).
//!
//! Writer-made fixtures are regenerated and compared byte for byte, so a change
//! to the writer shows up here; set `BLOODRAVEN_UPDATE_FIXTURES=1` to rewrite
//! them, and `UPDATE_EXPECT=1` to refresh the `.summary` snapshots. Independent
//! checks: a bitwise CRC32 written here from the polynomial, and a GTID event
//! assembled by hand from MySQL's documented layout.

use std::path::PathBuf;

use bloodraven_binlog::{
    EventReader, EventType, TransactionBody, TransactionSpec, Writer, WriterOptions, scan,
};
use bloodraven_gtid::{Gtid, GtidSet};

use crate::support::{UUID_A, UUID_B, render, rows_tx, table, tagged};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("test_data")
}

const T0: u64 = 1_700_000_000_000_000;

fn options(checksum: bool) -> WriterOptions {
    WriterOptions {
        server_id: 7,
        create_timestamp: 1_700_000_000,
        checksum,
        ..WriterOptions::default()
    }
}

fn mysql_rows() -> Vec<u8> {
    let mut writer = Writer::new(&options(true));
    writer.previous_gtids(&format!("{UUID_A}:1-10").parse().unwrap(), 1_700_000_000).unwrap();
    for (i, gno) in (11..=13).enumerate() {
        let mut spec =
            rows_tx(Some(Gtid::new(UUID_A, gno)), T0 + 1_000_000 * (i as u64 + 1), i + 1, false);
        spec.last_committed = i as i64;
        spec.sequence_number = i as i64 + 1;
        writer.transaction(&spec).unwrap();
    }
    writer
        .transaction(&TransactionSpec {
            body: TransactionBody::Statement {
                schema: "shop".into(),
                query: "ALTER TABLE orders ADD COLUMN note TEXT".into(),
            },
            ..rows_tx(Some(Gtid::new(UUID_A, 14)), T0 + 5_000_000, 0, false)
        })
        .unwrap();
    writer.rotate("binlog.000002", 1_700_000_006).unwrap();
    writer.into_bytes()
}

fn mysql_tagged_compressed() -> Vec<u8> {
    let mut writer = Writer::new(&options(true));
    let previous: GtidSet = format!("{UUID_A}:1-3:blue:1-2").parse().unwrap();
    writer.previous_gtids(&previous, 1_700_000_000).unwrap();
    writer.transaction(&rows_tx(Some(tagged(UUID_A, "blue", 3)), T0 + 1_000_000, 4, true)).unwrap();
    writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, 4)), T0 + 2_000_000, 2, true)).unwrap();
    writer
        .transaction(&TransactionSpec {
            body: TransactionBody::XaPrepare {
                gtrid: "order-77".into(),
                table: table(),
                rows: vec![(77, b"pending".to_vec())],
            },
            ..rows_tx(Some(Gtid::new(UUID_A, 5)), T0 + 3_000_000, 0, false)
        })
        .unwrap();
    writer
        .transaction(&TransactionSpec {
            body: TransactionBody::Statement {
                schema: String::new(),
                query: "XA COMMIT 'order-77'".into(),
            },
            ..rows_tx(Some(Gtid::new(UUID_A, 6)), T0 + 4_000_000, 0, false)
        })
        .unwrap();
    let mut replicated = rows_tx(Some(Gtid::new(UUID_B, 40)), T0 + 5_000_000, 1, false);
    replicated.server_id = 9;
    replicated.original_commit_us = T0 + 4_500_000;
    writer.transaction(&replicated).unwrap();
    writer.stop(1_700_000_006).unwrap();
    writer.into_bytes()
}

fn mysql_checksum_none() -> Vec<u8> {
    let mut writer = Writer::new(&options(false));
    writer.previous_gtids(&GtidSet::new(), 1_700_000_000).unwrap();
    writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, 1)), T0 + 1_000_000, 1, false)).unwrap();
    writer.transaction(&rows_tx(Some(Gtid::new(UUID_A, 2)), T0 + 2_000_000, 1, false)).unwrap();
    writer.rotate("binlog.000002", 1_700_000_003).unwrap();
    writer.into_bytes()
}

fn mysql_anonymous() -> Vec<u8> {
    let mut writer = Writer::new(&options(true));
    writer.previous_gtids(&GtidSet::new(), 1_700_000_000).unwrap();
    writer.transaction(&rows_tx(None, T0 + 1_000_000, 1, false)).unwrap();
    writer.transaction(&rows_tx(None, T0 + 2_000_000, 2, false)).unwrap();
    writer.rotate("binlog.000002", 1_700_000_003).unwrap();
    writer.into_bytes()
}

fn mysql_truncated() -> Vec<u8> {
    let mut bytes = mysql_rows();
    // Cut inside the third transaction's WRITE_ROWS event.
    let rows_at = EventReader::new(&bytes)
        .map(|item| item.unwrap())
        .filter(|(_, event)| event.header.event_type == EventType::WRITE_ROWS)
        .nth(2)
        .unwrap()
        .0;
    bytes.truncate(rows_at as usize + 25);
    bytes
}

/// Writer-made fixtures: file name and generator.
fn writer_fixtures() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("mysql-rows.000001", mysql_rows()),
        ("mysql-tagged-compressed.000001", mysql_tagged_compressed()),
        ("mysql-checksum-none.000001", mysql_checksum_none()),
        ("mysql-anonymous.000001", mysql_anonymous()),
        ("mysql-truncated.000001", mysql_truncated()),
    ]
}

#[test]
fn writer_fixtures_are_current() {
    let update = std::env::var_os("BLOODRAVEN_UPDATE_FIXTURES").is_some();
    for (name, bytes) in writer_fixtures() {
        let path = data_dir().join(name);
        if update {
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed =
            std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        assert!(
            committed == bytes,
            "{name} differs from what the writer makes now; rerun with BLOODRAVEN_UPDATE_FIXTURES=1 if intended"
        );
    }
}

#[test]
fn fixture_summaries() {
    let mut names: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".000001"))
        .collect();
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    for name in names {
        let bytes = std::fs::read(data_dir().join(&name)).unwrap();
        let rendered = render(&scan(&bytes), bytes.len());
        expect_test::expect_file![data_dir().join(format!("{name}.summary"))].assert_eq(&rendered);
    }
}

/// CRC-32 (ISO-HDLC, reflected polynomial 0xEDB88320), bit by bit: independent of crc32fast.
fn crc32_bitwise(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[test]
fn checksums_match_a_bitwise_crc32() {
    assert_eq!(crc32_bitwise(b"123456789"), 0xcbf4_3926, "the standard check value");
    for name in ["mysql-rows.000001", "mysql-tagged-compressed.000001", "mariadb-10.11.000001"] {
        let bytes = std::fs::read(data_dir().join(name)).unwrap();
        let mut checked = 0;
        for item in EventReader::new(&bytes) {
            let (offset, event) = item.unwrap();
            let raw = &bytes[offset as usize..offset as usize + event.header.event_size as usize];
            let (content, stored) = raw.split_at(raw.len() - 4);
            assert_eq!(
                u32::from_le_bytes(stored.try_into().unwrap()),
                crc32_bitwise(content),
                "{name} @{offset}"
            );
            checked += 1;
        }
        assert!(checked > 3);
    }
}

/// The first GTID event of `mysql-rows.000001`, assembled field by field from the
/// layout in MySQL's `control_events.h` (Gtid_event): header, then
/// flags(1) sid(16) gno(8) lt_type(1)=2 last_committed(8) sequence_number(8)
/// immediate_commit_timestamp(7) transaction_length(packed) immediate_server_version(4), CRC32.
#[test]
fn gtid_event_layout_matches_mysql_documentation() {
    let bytes = std::fs::read(data_dir().join("mysql-rows.000001")).unwrap();
    let (offset, event) = EventReader::new(&bytes).nth(2).unwrap().unwrap();
    assert_eq!(event.header.event_type, EventType::GTID);
    let raw = &bytes[offset as usize..offset as usize + event.header.event_size as usize];
    let mut want = Vec::new();
    let commit_us = T0 + 1_000_000;
    want.extend_from_slice(&((commit_us / 1_000_000) as u32).to_le_bytes()); // timestamp
    want.push(33); // GTID_LOG_EVENT
    want.extend_from_slice(&7u32.to_le_bytes()); // server_id
    let tx = scan(&bytes).transactions[0].clone();
    let length = tx.end - tx.start;
    // Packed integer: one byte below 251, else 0xfc and two bytes.
    let packed: Vec<u8> = if length < 251 {
        vec![length as u8]
    } else {
        assert!(length <= 0xffff);
        vec![0xfc, length as u8, (length >> 8) as u8]
    };
    let size = 19 + 42 + 7 + packed.len() as u64 + 4 + 4;
    want.extend_from_slice(&(size as u32).to_le_bytes()); // event_size
    want.extend_from_slice(&((offset + size) as u32).to_le_bytes()); // log_pos
    want.extend_from_slice(&0u16.to_le_bytes()); // flags
    want.push(0); // row-only transaction: FLAG_MAY_HAVE_SBR clear
    want.extend_from_slice(UUID_A.as_bytes());
    want.extend_from_slice(&11u64.to_le_bytes());
    want.push(2);
    want.extend_from_slice(&0u64.to_le_bytes()); // last_committed
    want.extend_from_slice(&1u64.to_le_bytes()); // sequence_number
    want.extend_from_slice(&commit_us.to_le_bytes()[..7]); // original == immediate: no high bit
    want.extend_from_slice(&packed);
    want.extend_from_slice(&80403u32.to_le_bytes());
    let crc = crc32_bitwise(&want);
    want.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(raw, &want[..]);
}
