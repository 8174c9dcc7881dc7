//! Operator tests: the pure cores first.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers; a failing unwrap is a test failure with a line number"
)]

mod backup;
mod backup_live;
mod backup_retry_live;
mod backup_schedule_live;
mod backup_verify_live;
mod bad_input;
mod bootstrap_live;
mod bootstrap_pitr;
mod bootstrap_pitr_live;
mod bootstrap_plan;
mod crash_sweep;
mod deploy;
mod dns;
mod harness;
mod live;
mod live_lab;
mod planned_core;
mod planned_crash;
mod planned_props;
mod planned_settle;
mod planned_world;
mod promote_relay;
mod restore_clone;
mod restore_core;
mod restore_drill;
mod restore_live;
mod restore_plan;
mod restore_run;
mod retention_pitr_live;
mod topology_plan;
mod verification_pitr;
mod verification_pitr_live;
