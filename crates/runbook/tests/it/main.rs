//! Integration tests of bloodraven-runbook.

mod broken;
mod engine;
mod never_panics;
mod scenarios;
mod schema;
mod shipped;
mod view;
mod walks;

use std::path::{Path, PathBuf};

/// The top-level `runbooks/` folder.
fn runbooks_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../runbooks")
}

/// Every shipped runbook, loaded and checked.
fn shipped() -> Vec<bloodraven_runbook::Runbook> {
    bloodraven_runbook::load_dir(&runbooks_dir()).unwrap_or_else(|e| panic!("{e}"))
}
