//! In-place restores and the post-restore reclone queue (backup-and-restore document,
//! "Full-instance in-place restore" through "Peer reclones after a full-instance restore").
//!
//! - [`core`]: the reclone queue `status.restoreReclones`, pure.
//! - [`core_run`]: preflight, arming, the `offline_mode` fence, stopping the peers' receivers
//!   and the settlement of a failed run, pure.
//! - [`guards`]: the guards the topology manager enforces, derived from status, pure.
//! - [`clone`]: the reclone itself, MySQL's CLONE plugin (IO).
//! - [`io`]: the guard statements the topology manager runs (IO).
//! - [`queue_io`]: the queue's poll and the reclone task (IO).
//! - [`job`]: the in-place restore Job (pure, from the backup Job builder).
//! - [`run_io`]: the restore run, Preflight → Fencing → Restoring → Resuming, and the
//!   settlement of a failed run (IO around [`core_run`]).
//! - [`run_sql`]: the run's MySQL reads and statements (IO).
//! - [`signals`]: Degraded/Ready and the gauge while a queue stands (pure).
//! - [`bootstrap`]: the bootstrap restore of `spec.initFromBackup` (its own pure core and IO).

pub mod bootstrap;
pub mod clone;
pub mod core;
pub mod core_run;
pub mod guards;
pub mod io;
pub mod job;
pub mod queue_io;
pub mod run_io;
pub mod run_sql;
pub mod signals;

#[cfg(test)]
mod tests {
    /// Every restore or reclone token the restore code writes (Event reasons, condition and
    /// status reasons) is in the catalog (`bloodraven_crd::catalog`), so the console and the
    /// runbooks can explain it.
    #[test]
    fn every_restore_token_the_code_writes_is_catalogued() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/src/restore");
        let mut checked = 0;
        // The sources, folder modules (`run_io/`) included.
        let mut paths = Vec::new();
        let mut folders = vec![std::path::PathBuf::from(root)];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
                if entry.path().is_dir() {
                    folders.push(entry.path());
                } else {
                    paths.push(entry.path());
                }
            }
        }
        for path in paths {
            let Ok(source) = std::fs::read_to_string(&path) else { continue };
            for literal in source.split('"').skip(1).step_by(2) {
                let token_like = literal.len() >= 8
                    && literal.chars().all(|c| c.is_ascii_alphabetic())
                    && ["Restore", "Reclone", "PromotionRefused", "BootstrapRefused"]
                        .iter()
                        .any(|prefix| literal.starts_with(prefix));
                if token_like {
                    checked += 1;
                    assert!(
                        bloodraven_crd::catalog::lookup_any(literal).next().is_some(),
                        "{} writes {literal}, which the catalog lacks",
                        path.display()
                    );
                }
            }
        }
        assert!(checked > 10, "the scan found only {checked} tokens; is the source layout right?");
    }
}
