//! Integration tests of bloodraven-gtid.
//!
//! - `check`: data-driven parse/format and operation tables (expect-test;
//!   refresh with `UPDATE_EXPECT=1`).
//! - `model`: proptest against a naive set of single GTIDs.
//! - `mariadb`: MariaDB GTIDs, positions and ranges.
//! - `serde`: every type as its canonical string (feature `serde`).

// Helpers outside `#[test]` functions unwrap too: a failed unwrap here is a test
// failure with a line number, exactly as inside a test (clippy.toml allows it there).
#![allow(clippy::unwrap_used, reason = "test helpers; failures are test failures")]

mod check;
mod mariadb;
mod model;
mod serde;

/// Test UUIDs, written `$A`..`$E` in the tables.
pub(crate) const UUIDS: [(&str, &str); 5] = [
    ("$A", "3e11fa47-71ca-11e1-9e33-c80aa9429562"),
    ("$B", "4a8b2b84-0000-11e1-9e33-c80aa9429562"),
    ("$C", "9f0c5e7e-6c1d-11ef-8b1a-0242ac120002"),
    ("$D", "00000000-0000-0000-0000-000000000001"),
    ("$E", "ffffffff-ffff-ffff-ffff-ffffffffffff"),
];

/// Replaces `$A`.. with real UUIDs.
pub(crate) fn expand(text: &str) -> String {
    UUIDS.iter().fold(text.to_owned(), |text, (name, uuid)| text.replace(name, uuid))
}

/// Replaces real UUIDs with `$A`.. (lowercase only: output is canonical).
pub(crate) fn abbreviate(text: &str) -> String {
    UUIDS.iter().fold(text.to_owned(), |text, (name, uuid)| text.replace(uuid, name))
}
