//! Integration tests of bloodraven-replay.
//!
//! - `real_mysql`: download, plan and replay on real MySQL 9.7 (needs
//!   `source scripts/provision.sh`).
//! - `lossy`: the lossy failover on a 3-site group with the workload and its ledger.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "test helpers; failures are test failures, and the test prints the PITR lines it proved"
)]

mod lossy;
mod real_mysql;
#[path = "../support/mod.rs"]
mod support;
