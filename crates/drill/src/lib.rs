//! Drills: YAML timelines of faults, waits and assertions against a live-lab group of real
//! MySQL sites, and the runner that plays them and prints a timeline report.
//!
//! ```text
//! let drill = bloodraven_drill::load(Path::new("crates/drill/drills/replication-stall.yaml"))?;
//! let report = bloodraven_drill::run(&drill, &RunOptions::default()).await;
//! print!("{}", report.human());
//! ```

pub mod error;
pub mod live;
pub mod load;
pub mod model;
pub mod report;
pub mod run;
pub mod schema;

pub use error::DrillError;
pub use load::{LoadedDrill, load};
pub use model::Drill;
pub use report::{Report, StepRecord};
pub use run::{AtEnd, EndState, RunOptions, run, run_with};

/// The name a workload and its ledger get when the drill gives none.
pub const DEFAULT_WORKLOAD: &str = "workload";

/// The name of the operator replica `startGroup` starts in operator drills.
pub const DEFAULT_OPERATOR: &str = "operator";

/// The live lab's default group (`drills/manifests/three-sites.yaml`): `iad` and `pdx`
/// PrimaryCandidate, `fra` DisasterRecovery. `bloodraven lab --live` creates it.
pub const THREE_SITES_MANIFEST: &str = include_str!("../drills/manifests/three-sites.yaml");
