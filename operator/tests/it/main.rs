//! Operator tests: the pure cores first.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers; a failing unwrap is a test failure with a line number"
)]

mod live;
mod topology_plan;
