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

pub mod clone;
pub mod core;
pub mod core_run;
pub mod guards;
pub mod io;
pub mod queue_io;
