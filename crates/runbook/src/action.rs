//! The closed list of guided operations a runbook step may offer. Each runs through the
//! console's confirm flow; a runbook names one and draws its parameters from the group's state.

use serde::Serialize;

/// A guided operation of the console.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// Request a planned failover to `targetSite` (002 "Requesting a planned failover").
    PlannedFailover,
    /// Acknowledge the automation hold of run `runId` (002 "The automation hold").
    AcknowledgeHold,
    /// Held reclone queue, choice 1: back up the held site `heldSite` (then restore from it).
    RecloneQueueRestoreHeldData,
    /// Held reclone queue, choice 2: keep the primary's data; set the queue to Draining.
    RecloneQueueKeepPrimary,
    /// Held reclone queue, choice 3: release the hold; held sites replicate from the primary.
    RecloneQueueRelease,
    /// Reclone the follower `site` from the active primary (discards its divergent transactions).
    RecloneSite,
    /// Release an in-place restore's offline fence on `site`.
    ReleaseOfflineFence,
}

impl Action {
    /// Every action, in the order the README lists them.
    pub const ALL: [Action; 7] = [
        Action::PlannedFailover,
        Action::AcknowledgeHold,
        Action::RecloneQueueRestoreHeldData,
        Action::RecloneQueueKeepPrimary,
        Action::RecloneQueueRelease,
        Action::RecloneSite,
        Action::ReleaseOfflineFence,
    ];

    /// The name a runbook uses.
    pub fn name(self) -> &'static str {
        match self {
            Action::PlannedFailover => "plannedFailover",
            Action::AcknowledgeHold => "acknowledgeHold",
            Action::RecloneQueueRestoreHeldData => "recloneQueueRestoreHeldData",
            Action::RecloneQueueKeepPrimary => "recloneQueueKeepPrimary",
            Action::RecloneQueueRelease => "recloneQueueRelease",
            Action::RecloneSite => "recloneSite",
            Action::ReleaseOfflineFence => "releaseOfflineFence",
        }
    }

    /// The action a runbook names, if any.
    pub fn parse(name: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The parameters it takes; every one is required.
    pub fn params(self) -> &'static [&'static str] {
        match self {
            Action::PlannedFailover => &["targetSite"],
            Action::AcknowledgeHold => &["runId"],
            Action::RecloneQueueRestoreHeldData => &["heldSite"],
            Action::RecloneQueueKeepPrimary | Action::RecloneQueueRelease => &["runId"],
            Action::RecloneSite | Action::ReleaseOfflineFence => &["site"],
        }
    }
}
