//! Integration tests of bloodraven-sites.
//!
//! - `proxy`: the fault proxy against tokio echo servers (no MySQL).
//! - `mysqld`: the runner on real MySQL 9.7 (needs `source scripts/provision.sh`).
//! - `replication`: a 3-site star through the proxy: stalls, crashes, promotion, errant GTIDs, binlogs.
//! - `ledger`: the workload and commit ledger against a real site.
//! - `throughput`: the workload's rate on a durable star (`#[ignore]`d: a measurement).

#![allow(clippy::unwrap_used, reason = "test helpers; failures are test failures")]

mod ledger;
mod mysqld;
mod proxy;
mod replication;
mod throughput;
