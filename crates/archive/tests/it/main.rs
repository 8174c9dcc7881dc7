//! Integration tests of bloodraven-archive (feature `fixtures`).
//!
//! - `catalog`: the tokens exist in bloodraven-crd's reason catalog.
//! - `envelope`: the BRV1 object envelope (golden vectors, round trips, alterations).
//! - `format`: descriptor and manifest round trips, unknown-field preservation.
//! - `refusals`: one test per reader refusal token, transient handling.
//! - `properties`: parsers never panic; destination normalization ignores slash noise.
//! - `scenarios`: coverage of every fixture scenario (gaps, forks, windows).

// Test helpers outside #[test] functions unwrap too: a failing unwrap is a clear test failure
// (clippy.toml's allow-unwrap-in-tests covers only #[test] functions and cfg(test) modules).
#![allow(clippy::unwrap_used)]

mod catalog;
mod envelope;
mod format;
mod properties;
mod refusals;
mod scenarios;

use std::collections::BTreeMap;

use bloodraven_archive::reader::{
    ArchiveReader, FetchError, OpenError, ReaderKey, ReaderOptions, Request,
};
use bloodraven_archive::{OpenArchive, fixtures::Fixture};

/// A scripted failure for one key (`""` = the listing), consumed in order.
pub(crate) type Failures = BTreeMap<String, Vec<FetchError>>;

/// Drives the sans-IO reader against an in-memory map, as the store adapter would.
pub(crate) fn open_with(
    objects: &BTreeMap<String, Vec<u8>>,
    options: ReaderOptions,
    mut failures: Failures,
) -> Result<OpenArchive, OpenError> {
    let mut reader = ArchiveReader::new(options);
    let mut steps = 0;
    while let Some(fetch) = reader.next_fetch() {
        steps += 1;
        assert!(steps < 1000, "reader does not terminate");
        match fetch.request {
            Request::List => {
                let scripted =
                    failures.get_mut("").and_then(|f| (!f.is_empty()).then(|| f.remove(0)));
                match scripted {
                    Some(error) => reader.feed_listing(Err(error)),
                    None => reader.feed_listing(Ok(objects.keys().cloned().collect())),
                }
            }
            Request::Get { key, max_bytes } => {
                let scripted =
                    failures.get_mut(&key).and_then(|f| (!f.is_empty()).then(|| f.remove(0)));
                match scripted {
                    Some(error) => reader.feed_object(Err(error)),
                    None => match objects.get(&key) {
                        Some(bytes) => {
                            let len = bytes.len().min(max_bytes as usize);
                            reader.feed_object(Ok(bytes[..len].to_vec()));
                        }
                        None => reader.feed_object(Err(FetchError::NotFound)),
                    },
                }
            }
        }
    }
    reader.finish()
}

/// Opens a fixture with its own key.
pub(crate) fn open_fixture(fixture: &Fixture) -> Result<OpenArchive, OpenError> {
    open_with(&fixture.objects, ReaderOptions::new(key_of(fixture)), Failures::new())
}

pub(crate) fn key_of(fixture: &Fixture) -> ReaderKey {
    match &fixture.passphrase {
        Some(passphrase) => ReaderKey::Passphrase {
            algorithm: "AES-256-GCM".into(),
            passphrase: passphrase.clone(),
        },
        None => ReaderKey::None,
    }
}
