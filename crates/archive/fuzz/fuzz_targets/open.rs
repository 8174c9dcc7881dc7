//! An archive of fuzzed objects (archive.json and one manifest, split at the first 0xff byte):
//! the sans-IO reader always terminates with an archive, a refusal or a transient error.
#![no_main]

use bloodraven_archive::reader::{ArchiveReader, FetchError, ReaderKey, ReaderOptions, Request};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (descriptor, manifest) = match data.iter().position(|&b| b == 0xff) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let mut reader = ArchiveReader::new(ReaderOptions::new(ReaderKey::None));
    let mut steps = 0;
    while let Some(fetch) = reader.next_fetch() {
        steps += 1;
        assert!(steps < 100, "the reader does not terminate");
        match fetch.request {
            Request::List => {
                reader.feed_listing(Ok(vec!["archive.json".into(), "manifest-a.json".into()]))
            }
            Request::Get { key, max_bytes } => {
                let bytes = if key == "archive.json" { descriptor } else { manifest };
                if bytes.is_empty() && key != "archive.json" {
                    reader.feed_object(Err(FetchError::NotFound));
                } else {
                    let len = bytes.len().min(max_bytes as usize);
                    reader.feed_object(Ok(bytes[..len].to_vec()));
                }
            }
        }
    }
    if let Ok(archive) = reader.finish() {
        let _ = bloodraven_archive::Coverage::of(&archive);
    }
});
