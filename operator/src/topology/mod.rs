//! The topology manager: star replication, emergency failover, split-brain resolution and
//! follower convergence (multi-site topology document), with the planned-failover document's
//! deferrals (the claim and the automation hold).

mod plan;

pub use plan::{Alert, Deferral, FenceWhy, History, PlanInput, PromoteWhy, Step, plan};
