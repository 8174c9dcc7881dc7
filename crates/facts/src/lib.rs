//! `bloodraven-facts`: what is true of a `MysqlFailoverGroup`, computed in one place.
//!
//! The operator's topology manager, the console, `status`, `doctor` and the runbooks ask here
//! and nowhere else: which site is writable, whether the writers agree with the recorded active
//! site, how far each site is from the primary, which candidate an emergency failover would
//! promote, who wins a split brain, and whether a follower may be repointed. Everything is pure:
//! values in, values out, `now` passed in. Whether automation is held is
//! `MysqlFailoverGroup::automation_held` in `bloodraven-crd` (the marker rule lives with
//! the types it reads).

mod classify;
mod convergence;
mod distance;
mod observe;
mod selection;
mod split_brain;
pub mod verdict;

pub use classify::{
    SiteFacts, Writers, classify, is_stale, non_candidates_to_fence, site_facts, writers,
};
pub use convergence::{Convergence, RepointReason, SourceAddress, convergence};
pub use distance::{GtidDistance, distance};
pub use observe::{
    GroupObservation, ReplicaObservation, ServerReading, SiteObservation, Unreachable,
};
pub use selection::{EmergencyChoice, Ineligible, SelectedBy, choose_emergency_target, freshness};
pub use split_brain::{NoWinner, SplitBrain, WinnerBy, resolve_split_brain};
