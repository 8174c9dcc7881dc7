//! Integration tests of bloodraven-crashpoint.
//!
//! - `probe`: the probe binary, built with `crash-points`, aborts exactly at the armed hit.

#![allow(clippy::unwrap_used, reason = "test helpers; failures are test failures")]

mod probe;
