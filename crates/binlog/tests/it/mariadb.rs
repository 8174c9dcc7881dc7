//! Binlogs from a real MariaDB server (started by bloodraven-testkit), compared
//! with what MariaDB's own `mariadb-binlog` prints.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use bloodraven_binlog::{
    ChecksumAlgorithm, EventReader, EventType, FileEnd, Flavor, LOG_EVENT_BINLOG_IN_USE_F,
    Terminator, TransactionId, scan,
};
use bloodraven_gtid::MariaGtid;
use bloodraven_testkit::{MariaDb, mariadb_binlog, run_checked};

/// What `mariadb-binlog` says about one file: each event's end position and the GTIDs.
struct Dump {
    end_positions: Vec<u64>,
    gtids: Vec<String>,
}

fn dump(path: &std::path::Path) -> Dump {
    let tool = mariadb_binlog().unwrap();
    let stdout = run_checked(
        Command::new(tool).arg("--base64-output=never").arg(path),
        "mariadb-binlog",
        Duration::from_secs(120),
    )
    .unwrap();
    let text = String::from_utf8_lossy(&stdout);
    let mut end_positions = Vec::new();
    let mut gtids = Vec::new();
    for line in text.lines() {
        // "#261129 20:03:48 server id 1  end_log_pos 370 CRC32 0x... \tGTID 0-1-1 ddl"
        if !line.starts_with('#') || !line.contains(" server id ") {
            continue;
        }
        if let Some(rest) = line.split(" end_log_pos ").nth(1) {
            let pos = rest.split_whitespace().next().unwrap();
            end_positions.push(pos.parse().unwrap());
        }
        if let Some(rest) = line.split("\tGTID ").nth(1) {
            gtids.push(rest.split_whitespace().next().unwrap().to_owned());
        }
    }
    Dump { end_positions, gtids }
}

const WORKLOAD: &str = "
CREATE DATABASE d;
CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB;
INSERT INTO d.t VALUES (1, 'a'), (2, 'b');
BEGIN; INSERT INTO d.t VALUES (3, 'c'); UPDATE d.t SET v = 'bb' WHERE id = 2; COMMIT;
DELETE FROM d.t WHERE id = 1;
CREATE TABLE d.m (id INT) ENGINE=MyISAM;
INSERT INTO d.m VALUES (1);
XA START 'x1'; INSERT INTO d.t VALUES (4, 'd'); XA END 'x1'; XA PREPARE 'x1'; XA COMMIT 'x1';
XA START 'x2'; INSERT INTO d.t VALUES (5, 'e'); XA END 'x2'; XA PREPARE 'x2'; XA ROLLBACK 'x2';
";

#[test]
fn real_mariadb_binlogs_match_mariadb_binlog() {
    let mut server = MariaDb::start().unwrap();
    server.sql(WORKLOAD).unwrap();
    server.flush_binary_logs().unwrap();
    server
        .sql("INSERT INTO d.t VALUES (10, repeat('x', 150)); INSERT INTO d.t VALUES (11, 'y');")
        .unwrap();
    let files = server.binlog_files().unwrap();
    assert_eq!(files.len(), 2, "{files:?}");
    if std::env::var_os("BLOODRAVEN_UPDATE_FIXTURES").is_some() {
        let fixture =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/mariadb-10.11.000001");
        std::fs::copy(&files[0], fixture).unwrap();
    }
    // Clean shutdown: the second file ends with STOP.
    server.shutdown(Duration::from_secs(60)).unwrap();

    let mut all_gtids = Vec::new();
    for (index, path) in files.iter().enumerate() {
        let bytes = std::fs::read(path).unwrap();
        let summary = scan(&bytes);
        assert_eq!(summary.problem, None, "{}", path.display());
        assert_eq!(summary.flavor, Some(Flavor::MariaDb));
        assert_eq!(summary.format.as_ref().unwrap().checksum, ChecksumAlgorithm::Crc32);
        assert_eq!(summary.parsed_len, bytes.len() as u64);
        assert!(summary.coverage.is_complete(), "{:?}", summary.coverage.incomplete);
        assert!(summary.maria_gtid_list.is_some());
        match (index, &summary.end) {
            (0, FileEnd::Rotate { next_file, position: 4, .. }) => {
                assert_eq!(next_file, "mysql-bin.000002");
            }
            (1, FileEnd::Stop { .. }) => {}
            (_, end) => panic!("file {index} ends with {end:?}"),
        }

        // Same event boundaries as mariadb-binlog.
        let dump = dump(path);
        let ours: Vec<u64> = EventReader::new(&bytes)
            .map(|item| {
                let (offset, event) = item.unwrap();
                offset + u64::from(event.header.event_size)
            })
            .collect();
        assert_eq!(ours, dump.end_positions, "{}", path.display());
        assert_eq!(summary.event_count, dump.end_positions.len() as u64);

        // Same GTIDs, in the same order, each a terminated transaction.
        let gtids: Vec<String> = summary
            .transactions
            .iter()
            .map(|tx| match tx.id {
                TransactionId::Maria(gtid) => gtid.to_string(),
                other => panic!("not a MariaDB GTID: {other:?}"),
            })
            .collect();
        assert_eq!(gtids, dump.gtids);
        assert!(summary.transactions.iter().all(|tx| tx.terminator.is_some()));
        let covered: Vec<String> =
            summary.coverage.maria_gtids.iter().map(MariaGtid::to_string).collect();
        assert_eq!(covered, dump.gtids);
        all_gtids.extend(gtids);
    }
    let expected: Vec<String> = (1..=all_gtids.len()).map(|seq| format!("0-1-{seq}")).collect();
    assert_eq!(all_gtids, expected);

    // The first file holds the whole workload: check the transaction shapes.
    let bytes = std::fs::read(&files[0]).unwrap();
    let summary = scan(&bytes);
    let shapes: Vec<(u64, Option<Terminator>, bool, u32)> = summary
        .transactions
        .iter()
        .map(|tx| match tx.id {
            TransactionId::Maria(gtid) => (gtid.seq, tx.terminator, tx.xa, tx.row_events),
            _ => unreachable!(),
        })
        .map(|(seq, terminator, xa, rows)| (seq, terminator.map(strip_xid), xa, rows))
        .collect();
    let xid = Some(Terminator::Xid(0));
    let statement = Some(Terminator::Statement);
    assert_eq!(
        shapes,
        vec![
            (1, statement, false, 0),                   // CREATE DATABASE
            (2, statement, false, 0),                   // CREATE TABLE
            (3, xid, false, 1),                         // INSERT
            (4, xid, false, 2),                         // INSERT + UPDATE
            (5, xid, false, 1),                         // DELETE
            (6, statement, false, 0),                   // CREATE TABLE (MyISAM)
            (7, Some(Terminator::Commit), false, 1),    // MyISAM INSERT
            (8, Some(Terminator::XaPrepare), true, 1),  // XA PREPARE 'x1'
            (9, statement, true, 0),                    // XA COMMIT 'x1'
            (10, Some(Terminator::XaPrepare), true, 1), // XA PREPARE 'x2'
            (11, statement, true, 0),                   // XA ROLLBACK 'x2'
        ]
    );
    // Transactions tile the file between the header events and the rotate.
    for pair in summary.transactions.windows(2) {
        assert_eq!(pair[0].end, pair[1].start);
    }
    let counts: BTreeMap<EventType, u64> = summary.event_type_counts.iter().copied().collect();
    assert_eq!(counts[&EventType::MARIADB_GTID], 11);
    assert_eq!(counts[&EventType::ROTATE], 1);
    assert_eq!(counts[&EventType::FORMAT_DESCRIPTION], 1);
}

fn strip_xid(terminator: Terminator) -> Terminator {
    match terminator {
        Terminator::Xid(_) => Terminator::Xid(0),
        other => other,
    }
}

/// The binlog the server still has open: its format description carries the
/// in-use flag, which the server leaves out of that event's checksum. And
/// `ROLLBACK TO SAVEPOINT` inside a transaction (logged as a QUERY event when the
/// transaction touched a non-transactional table) does not end the transaction:
/// the XID after it does.
#[test]
fn active_file_with_a_savepoint_rollback_parses_completely() {
    let server = MariaDb::start().unwrap();
    server
        .sql(
            "CREATE DATABASE d;
             CREATE TABLE d.t (id INT PRIMARY KEY) ENGINE=InnoDB;
             CREATE TABLE d.m (id INT) ENGINE=MyISAM;
             BEGIN; INSERT INTO d.t VALUES (1); SAVEPOINT s; INSERT INTO d.m VALUES (1);
             INSERT INTO d.t VALUES (2); ROLLBACK TO SAVEPOINT s; INSERT INTO d.t VALUES (3);
             COMMIT;",
        )
        .unwrap();
    let files = server.binlog_files().unwrap();
    let path = files.last().unwrap();
    let bytes = std::fs::read(path).unwrap();
    let fde_flags = u16::from_le_bytes([bytes[4 + 17], bytes[4 + 18]]);
    assert_ne!(fde_flags & LOG_EVENT_BINLOG_IN_USE_F, 0, "the server still has the file open");
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("ROLLBACK TO"), "the workload must log a ROLLBACK TO query");
    let summary = scan(&bytes);
    assert_eq!(summary.problem, None);
    assert!(summary.coverage.is_complete(), "{:?}", summary.coverage.incomplete);
    let last = summary.transactions.last().unwrap();
    assert!(matches!(last.terminator, Some(Terminator::Xid(_))), "{last:?}");
    assert_eq!(summary.end, FileEnd::CleanBoundary);
    let gtids: Vec<String> = dump(path).gtids;
    let covered: Vec<String> =
        summary.coverage.maria_gtids.iter().map(MariaGtid::to_string).collect();
    assert_eq!(covered, gtids);
}
