//! Integration tests of bloodraven-crd; one binary, one module per concern.

// Helpers outside `#[test]` functions unwrap too: a panic there is a test failure with the value.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod annotations;
mod builders;
mod catalog;
mod cel;
mod crds;
mod forward_compat;
mod round_trip;

/// Reads a file under tests/fixtures/.
pub(crate) fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}
