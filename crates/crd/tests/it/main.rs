//! Integration tests of bloodraven-crd; one binary, one module per concern.

// Helpers outside `#[test]` functions unwrap too: a panic there is a test failure with the value.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod annotations;
mod builders;
mod catalog;
mod cel;
mod crds;
mod forward_compat;
mod planned_failover_run;
mod round_trip;

/// The directory of the committed CRDs, deploy/crds/.
pub(crate) fn crd_directory() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds")
}

/// The `openAPIV3Schema` of a committed CRD file, as JSON.
pub(crate) fn schema(file_name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(crd_directory().join(file_name)).unwrap();
    let crd: serde_json::Value = serde_norway::from_str(&text).unwrap();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

/// Reads a file under tests/fixtures/.
pub(crate) fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}
