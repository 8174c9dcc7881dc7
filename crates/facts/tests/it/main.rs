//! Table and property tests of the group facts.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers; a failing unwrap is a test failure with a line number"
)]

mod classify;
mod convergence;
mod selection;
mod split_brain;
mod verdict;

use bloodraven_crd::group::{SiteRole, SiteState};
use bloodraven_facts::SiteFacts;
use bloodraven_gtid::GtidSet;

pub(crate) const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
pub(crate) const B: &str = "4e11fa47-71ca-11e1-9e33-c80aa9429562";

pub(crate) fn set(text: &str) -> GtidSet {
    text.parse().unwrap()
}

/// A site with a role, a state and an executed set.
pub(crate) fn site(name: &str, role: SiteRole, state: SiteState, gtid: &str) -> SiteFacts {
    SiteFacts {
        name: name.to_string(),
        role,
        state,
        unreachable: None,
        offline_mode: false,
        gtid_executed: Some(set(gtid)),
        replica: None,
        observed_at: None,
    }
}

pub(crate) fn candidate(name: &str, state: SiteState, gtid: &str) -> SiteFacts {
    site(name, SiteRole::PrimaryCandidate, state, gtid)
}
