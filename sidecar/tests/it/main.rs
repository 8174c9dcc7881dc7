//! Integration tests of the sidecar.
//!
//! `archiver*`: the binlog archiver over real stores (a PVC-layout temp dir, SeaweedFS) and,
//! in `archiver_mysql`, a real MySQL 9.7 (`source scripts/provision.sh` first). `crash`: the
//! archiver killed at each named crash point in a child process, then restarted. `encrypted`:
//! the BRV1-sealed archive written by the archiver and read back by the restore's reader.
//! `backup_restore`, `pitr_restore`, `verify_pitr`: the Job steps on real MySQL 9.7, sharing
//! `mysql_support`.

// This binary is test code only; clippy's allow-unwrap-in-tests covers `#[test]` functions
// but not the shared helpers they call.
#![allow(clippy::unwrap_used)]

mod archiver;
mod archiver_mysql;
mod backup_restore;
mod crash;
mod encrypted;
mod mysql_support;
mod pitr_restore;
mod verify_pitr;

use std::future::Future;
use std::time::Duration;

/// Every test body is bounded in time; the panic names the test and the bound.
pub(crate) async fn bounded<T>(name: &str, seconds: u64, body: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(seconds), body).await {
        Ok(value) => value,
        Err(_) => panic!("{name} did not finish within {seconds} s"),
    }
}
