//! The live lab's real world (issue 11): MySQL sites, the fault proxy on every link, the
//! application workload and its commit ledger.
//!
//! - [`proxy`]: a TCP fault proxy per named link (pass, delay, blackhole, refuse, reset).
//! - [`mysqld`]: the real `mysqld` runner (one private instance per [`mysqld::Instance`]).
//! - [`template`]: the shared template data directory the instances are copied from.
//! - [`group`]: N sites in a star with a proxy link on every connection.
//! - [`accounts`]: the accounts every site has, their grants, and client options.
//! - [`dataset`]: a sized table for throughput benchmarks.
//! - [`ledger`]: the commit ledger and `verify` (pure).
//! - [`workload`]: the application workload writing the ledger.
//! - [`wire`]: the workload's own MySQL session (reads the GTID from each COMMIT's OK packet).
//! - [`error`]: the error type.

pub mod accounts;
pub mod dataset;
pub mod error;
pub mod group;
pub mod ledger;
pub mod mysqld;
pub mod proxy;
pub mod template;
pub mod wire;
pub mod workload;

pub use error::{Result, SitesError};
