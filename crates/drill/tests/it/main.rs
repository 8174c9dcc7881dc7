//! Integration tests of bloodraven-drill.
//!
//! - `schema`: the checked-in JSON Schema matches the types (`UPDATE_EXPECT=1` refreshes it).
//! - `validate`: broken drill files get errors naming the file, step, field and line.
//! - `drills`: every shipped no-operator drill runs on real MySQL 9.7 (needs
//!   `source scripts/provision.sh`); each is its own test so nextest runs them concurrently.
//! - `operator`: every operator drill (`drills/operator-*.yaml`) in the live lab with the
//!   operator in-process (real MySQL 9.7 too).
//! - `planned`: the planned-failover drills (`drills/planned-*.yaml`), the operator in-process
//!   with scaled planned-failover timings.

#![allow(clippy::unwrap_used, reason = "test helpers; failures are test failures")]

mod drills;
mod operator;
mod planned;
mod schema;
mod sidecar;
mod validate;
