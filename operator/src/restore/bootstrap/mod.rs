//! The bootstrap restore (`spec.initFromBackup`, backup-and-restore document "Restore at
//! bootstrap"): a new group's dump is loaded into a dynamically resolved seed before the other
//! sites are cloned from it, and applications are kept off the group until it succeeded.
//!
//! - [`plan`]: target resolution, the rollout gate, the Job observed to completion, the
//!   records of `status.restore` (pure).
//! - [`seed`]: the topology manager's seeding while the group is gated, the clones after
//!   success, and the Ready condition (pure).
//! - [`job`]: the restore Job (pure, from the backup Job builder).
//! - [`pitr`]: `pointInTime`: the refusals before any Job, the PITR steps of the Job, the
//!   refusal token of a failed step, the verdict accepted as `provenance.pointInTime` (pure).
//! - [`io`]: the pass the topology manager runs each poll, and the clones (IO).

pub mod io;
pub mod job;
pub mod pitr;
pub mod plan;
pub mod seed;

pub use plan::{gated, succeeded};
pub use seed::{CLONE_PENDING, SeedInput, apply_ready, clone_targets, seed_steps};
