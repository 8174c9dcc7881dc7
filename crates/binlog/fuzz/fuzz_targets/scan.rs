//! Arbitrary bytes through every entry point: the whole-slice scan, the chunked
//! scanner (split where the first byte says), the event reader, and re-encoding
//! each parsed event with the writer. Nothing may panic, and the chunked and
//! whole-slice summaries must agree.
#![no_main]

use bloodraven_binlog::{EventReader, ScanOptions, Scanner, Writer, scan};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let whole = scan(data);
    assert!(whole.parsed_len <= data.len() as u64);

    let chunk = usize::from(data.first().copied().unwrap_or(1)).max(1);
    let mut scanner = Scanner::new(ScanOptions { max_payload_size: 1 << 20 });
    for piece in data.chunks(chunk) {
        scanner.feed(piece);
    }
    let chunked = scanner.finish();
    // Payload limits differ (1 MiB vs the default), so compare only what they cannot affect.
    assert_eq!(chunked.parsed_len, whole.parsed_len);
    assert_eq!(chunked.problem, whole.problem);
    assert_eq!(chunked.event_count, whole.event_count);

    let mut writer = Writer::without_format_description(0);
    for item in EventReader::new(data) {
        let Ok((_, event)) = item else { break };
        let _ = writer.event(event.header, &event.body);
    }
});
