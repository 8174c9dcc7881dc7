//! Integration tests of bloodraven-drill.
//!
//! - `schema`: the checked-in JSON Schema matches the types (`UPDATE_EXPECT=1` refreshes it).
//! - `validate`: broken drill files get errors naming the file, step, field and line.
//! - `drills`: every shipped no-operator drill runs on real MySQL 9.7 (needs
//!   `source scripts/provision.sh`); each is its own test so nextest runs them concurrently.
//! - `operator`: every operator drill (`drills/operator-*.yaml`) in the live lab with the
//!   operator in-process (real MySQL 9.7 too).
//! - `sidecar`, `sidecar_fence`: the sidecar beside every mysqld with the operator in-process
//!   (archive, takeover after failovers, self-fencing drills with the fault proxy).
//! - `runbook_doctor`: the console's `doctor` at the end of operator drills (a runner hook).
//! - `runbook_live`, `runbook_live_planned`, `runbook_live_hold`, `runbook_live_queue`,
//!   `runbook_live_reclone`: runbooks walked with their actions on the live lab with the
//!   operator (the planned-failover ones with scaled timings and a ledger; an administrator's
//!   reclone of a diverged follower, by annotation and by its runbook).
//! - `planned`: the planned-failover drills (`drills/planned-*.yaml`), the operator in-process
//!   with scaled planned-failover timings.
//! - `planned_status`: planned-failover drills with the run's status writes refused by the lab
//!   API server mid-run.
//! - `planned_ambiguous`: planned-failover drills with the run's Fencing and Promoting writes
//!   applied but answered 500 or held past the operator's bound (ambiguous writes).
//! - `planned_source_restart`: the source's mysqld SIGKILLed mid-run and restarted fenced by
//!   the lab kubelet.

#![allow(clippy::unwrap_used, reason = "test helpers; failures are test failures")]

mod drills;
mod operator;
mod planned;
mod planned_ambiguous;
mod planned_source_restart;
mod planned_status;
mod runbook_doctor;
mod runbook_live;
mod runbook_live_hold;
mod runbook_live_planned;
mod runbook_live_queue;
mod runbook_live_reclone;
mod schema;
mod sidecar;
mod sidecar_encrypted;
mod sidecar_fence;
mod validate;
