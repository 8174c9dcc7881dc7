//! Builders shared by the test modules.

use bloodraven_binlog::{RowsTable, TransactionBody, TransactionSpec, Writer, WriterOptions};
use bloodraven_gtid::{Gtid, Tag, Uuid};

pub(crate) const UUID_A: Uuid = Uuid::from_bytes([
    0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62,
]);
pub(crate) const UUID_B: Uuid = Uuid::from_bytes([
    0x4b, 0x22, 0x00, 0x01, 0x00, 0x00, 0x11, 0xee, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
]);

pub(crate) fn table() -> RowsTable {
    RowsTable { schema: "shop".to_owned(), table: "orders".to_owned(), table_id: 91 }
}

pub(crate) fn rows_tx(
    gtid: Option<Gtid>,
    commit_us: u64,
    rows: usize,
    compress: bool,
) -> TransactionSpec {
    TransactionSpec {
        gtid,
        server_id: 7,
        original_commit_us: commit_us,
        immediate_commit_us: commit_us,
        last_committed: 0,
        sequence_number: 1,
        body: TransactionBody::Rows {
            table: table(),
            rows: (0..rows).map(|i| (i as i64, vec![b'r'; 20 + i])).collect(),
        },
        compress,
    }
}

pub(crate) fn gtid(uuid: Uuid, gno: u64) -> Gtid {
    Gtid::new(uuid, gno)
}

pub(crate) fn tagged(uuid: Uuid, tag: &str, gno: u64) -> Gtid {
    Gtid::tagged(uuid, Tag::new(tag).unwrap(), gno)
}

/// A small sealed file: previous GTIDs, row, DDL, compressed, tagged and XA
/// transactions, then ROTATE.
pub(crate) fn sample_file() -> Vec<u8> {
    let mut writer =
        Writer::new(&WriterOptions { create_timestamp: 1_700_000_000, ..WriterOptions::default() });
    let previous = format!("{UUID_A}:1-10").parse().unwrap();
    writer.previous_gtids(&previous, 1_700_000_000).unwrap();
    let base = 1_700_000_001_000_000u64;
    writer.transaction(&rows_tx(Some(gtid(UUID_A, 11)), base, 3, false)).unwrap();
    writer
        .transaction(&TransactionSpec {
            body: TransactionBody::Statement {
                schema: "shop".into(),
                query: "CREATE TABLE t (id INT)".into(),
            },
            ..rows_tx(Some(gtid(UUID_A, 12)), base + 1_000, 0, false)
        })
        .unwrap();
    writer.transaction(&rows_tx(Some(gtid(UUID_A, 13)), base + 2_000, 5, true)).unwrap();
    let mut replicated = rows_tx(Some(tagged(UUID_B, "alpha", 1)), base + 3_000, 1, false);
    replicated.original_commit_us = base - 5_000_000;
    writer.transaction(&replicated).unwrap();
    writer
        .transaction(&TransactionSpec {
            body: TransactionBody::XaPrepare {
                gtrid: "xa1".into(),
                table: table(),
                rows: vec![(1, b"x".to_vec())],
            },
            ..rows_tx(Some(gtid(UUID_A, 14)), base + 4_000, 0, false)
        })
        .unwrap();
    writer
        .transaction(&TransactionSpec {
            body: TransactionBody::Statement {
                schema: String::new(),
                query: "XA COMMIT 'xa1'".into(),
            },
            ..rows_tx(Some(gtid(UUID_A, 15)), base + 5_000, 0, false)
        })
        .unwrap();
    writer.rotate("binlog.000002", 1_700_000_010).unwrap();
    writer.into_bytes()
}

/// A stable text rendering of a summary, for snapshot files.
pub(crate) fn render(summary: &bloodraven_binlog::FileSummary, file_len: usize) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "flavor: {:?}", summary.flavor);
    if let Some(format) = &summary.format {
        let _ = writeln!(out, "server: {} checksum: {:?}", format.server_version, format.checksum);
    }
    if let Some(previous) = &summary.previous_gtids {
        let _ = writeln!(out, "previous gtids: {}", previous.to_compact_string());
    }
    if let Some(list) = &summary.maria_gtid_list {
        let list: Vec<String> = list.iter().map(ToString::to_string).collect();
        let _ = writeln!(out, "gtid list: [{}]", list.join(","));
    }
    if !summary.binlog_checkpoints.is_empty() {
        let _ = writeln!(out, "checkpoints: {}", summary.binlog_checkpoints.join(","));
    }
    let _ = writeln!(out, "transactions:");
    for tx in &summary.transactions {
        let id = match tx.id {
            bloodraven_binlog::TransactionId::Gtid(gtid) => gtid.to_string(),
            bloodraven_binlog::TransactionId::Maria(gtid) => gtid.to_string(),
            other => format!("{other:?}"),
        };
        let _ = write!(
            out,
            "  {id} server={} at={}..{} events={} rows={} term={:?}",
            tx.server_id, tx.start, tx.end, tx.event_count, tx.row_events, tx.terminator
        );
        if let (Some(original), Some(immediate)) = (tx.original_commit_us, tx.immediate_commit_us) {
            let _ = write!(out, " commit={original}/{immediate}");
        }
        if let Some(length) = tx.transaction_length {
            let _ = write!(out, " len={length}");
        }
        if let (Some(last), Some(seq)) = (tx.last_committed, tx.sequence_number) {
            let _ = write!(out, " clock={last}/{seq}");
        }
        if tx.xa {
            out.push_str(" xa");
        }
        if tx.compressed {
            out.push_str(" compressed");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "times: {:?}..{:?}", summary.first_event_time, summary.last_event_time);
    let _ = writeln!(out, "end: {:?}", summary.end);
    let _ = writeln!(
        out,
        "parsed: {} of {file_len} bytes, {} events",
        summary.parsed_len, summary.event_count
    );
    match &summary.problem {
        Some(problem) => {
            let _ = writeln!(out, "problem: {problem}");
        }
        None => out.push_str("problem: none\n"),
    }
    match &summary.coverage.incomplete {
        None => out.push_str("coverage: complete\n"),
        Some(incomplete) => {
            let _ = writeln!(out, "coverage: incomplete ({incomplete})");
        }
    }
    let _ = writeln!(out, "covered gtids: {}", summary.coverage.gtids.to_compact_string());
    if !summary.coverage.maria_gtids.is_empty() {
        let gtids: Vec<String> =
            summary.coverage.maria_gtids.iter().map(ToString::to_string).collect();
        let _ = writeln!(out, "covered mariadb gtids: {}", gtids.join(","));
    }
    let counts: Vec<String> =
        summary.event_type_counts.iter().map(|(t, n)| format!("{t}={n}")).collect();
    let _ = writeln!(out, "event types: {}", counts.join(" "));
    out
}
