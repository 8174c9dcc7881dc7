//! The topology manager: star replication, emergency failover, split-brain resolution and
//! follower convergence (multi-site topology document), with the planned-failover document's
//! deferrals (the claim and the automation hold).

mod gating;
mod plan;

pub use gating::{
    DEFAULT_MAX_LAG_SECONDS, DEFAULT_READER_MAX_LAG_SECONDS, LagThresholds, endpoint_healthy,
};
pub use plan::{Alert, Deferral, FenceWhy, History, PlanInput, PromoteWhy, Step, plan};
