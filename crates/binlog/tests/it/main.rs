//! Integration tests of bloodraven-binlog (one binary, modules by subject).
//!
//! - `roundtrip`: files from the writer parse back to what was written.
//! - `partial`: every prefix and every chunking of a file gives a consistent summary.
//! - `corruption`: flipped bytes, cut payloads and structural faults are located and reasoned.
//! - `fixtures`: the committed MySQL-format files under `test_data/`.
//! - `mariadb`: binlogs written by a real MariaDB server, checked against `mariadb-binlog`.

// Helpers outside #[test] functions unwrap too: clippy.toml's allow-unwrap-in-tests
// covers only the test functions themselves, and a failing unwrap is a clear test failure.
#![allow(clippy::unwrap_used)]

mod corruption;
mod fixtures;
mod mariadb;
mod partial;
mod roundtrip;
mod support;
