//! The active binlog is read while it is written: every prefix of a file, and
//! every way of cutting it into chunks, gives a consistent summary and no panic.

use bloodraven_binlog::{EventReader, FileEnd, IncompleteReason, ScanOptions, Scanner, scan};

use crate::support::sample_file;

#[test]
fn every_prefix_parses_up_to_its_last_complete_event() {
    let bytes = sample_file();
    let full = scan(&bytes);
    let boundaries: Vec<u64> = std::iter::once(4)
        .chain(EventReader::new(&bytes).map(|item| {
            let (offset, event) = item.unwrap();
            offset + u64::from(event.header.event_size)
        }))
        .collect();
    for len in 0..=bytes.len() {
        let prefix = &bytes[..len];
        let summary = scan(prefix);
        let boundary = *boundaries.iter().rev().find(|&&end| end <= len as u64).unwrap_or(&0);
        assert_eq!(summary.parsed_len, boundary, "prefix {len}");
        // Transactions are exactly those of the full file that end inside the prefix.
        let complete: Vec<_> =
            full.transactions.iter().filter(|tx| tx.end <= boundary).cloned().collect();
        assert_eq!(summary.transactions, complete, "prefix {len}");
        if boundary == len as u64 && len > 4 {
            assert_eq!(summary.problem, None, "prefix {len}");
        } else {
            let problem = summary.problem.as_ref().unwrap();
            assert!(problem.is_truncation(), "prefix {len}: {problem}");
            assert_eq!(problem.offset(), boundary, "prefix {len}");
            assert!(!summary.coverage.is_complete());
        }
        let open = full.transactions.iter().find(|tx| tx.start < boundary && boundary < tx.end);
        match open {
            Some(tx) => {
                assert_eq!(summary.end, FileEnd::MidTransaction { transaction_start: tx.start });
                assert!(!summary.coverage.is_complete(), "prefix {len}");
            }
            None if len == bytes.len() => assert_eq!(summary.end, full.end),
            None => assert!(matches!(summary.end, FileEnd::CleanBoundary | FileEnd::Empty)),
        }
        if summary.problem.is_none() && open.is_none() && len > 4 {
            // A prefix cut between transactions proves exactly what it holds.
            assert!(
                summary.coverage.is_complete(),
                "prefix {len}: {:?}",
                summary.coverage.incomplete
            );
        }
    }
}

#[test]
fn chunked_feeding_matches_one_slice() {
    let bytes = sample_file();
    let whole = scan(&bytes);
    for chunk in [1, 2, 3, 5, 18, 19, 20, 64, 333, 4096] {
        let mut scanner = Scanner::new(ScanOptions::default());
        for piece in bytes.chunks(chunk) {
            scanner.feed(piece);
        }
        assert_eq!(scanner.position(), bytes.len() as u64);
        assert_eq!(scanner.finish(), whole, "chunks of {chunk}");
    }
    // A truncated file fed in chunks reports the same problem as one slice.
    let cut = &bytes[..bytes.len() - 7];
    let mut scanner = Scanner::new(ScanOptions::default());
    for piece in cut.chunks(10) {
        scanner.feed(piece);
    }
    assert_eq!(scanner.finish(), scan(cut));
}

#[test]
fn empty_and_tiny_inputs_are_truncations_not_panics() {
    for input in [&b""[..], b"\xfe", b"\xfebi", b"\xfebin"] {
        let summary = scan(input);
        assert!(summary.problem.as_ref().unwrap().is_truncation(), "{input:?}");
        assert_eq!(summary.end, FileEnd::Empty);
        assert!(matches!(
            summary.coverage.incomplete.as_ref().map(|i| &i.reason),
            Some(IncompleteReason::ParseStopped(_))
        ));
    }
}
