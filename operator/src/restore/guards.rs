//! The guards a full-instance restore imposes on the topology manager, derived from status
//! alone (pure), so a manager that starts reads them before its first poll and they survive
//! operator restarts. The manager reads the group (status included) from the API server on
//! every poll and skips the poll when that read fails, so a guard is released only by a
//! confirming read.
//!
//! Backup-and-restore document, "Peer replication during a full-instance restore" (4) and
//! "Upgrading and downgrading"; topology document, the restore's freeze and hold.

use std::collections::{BTreeMap, BTreeSet};

use bloodraven_crd::group::{
    MysqlFailoverGroupStatus, RestoreInPlacePhase, RestoreReclonesPhase, RestoreScope,
};

/// The reason a queued site is excluded from promotion and convergence.
pub const PEER_HOLD: &str = "RestorePeerHold";

/// Every guard a restore imposes this poll.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreGuards {
    /// Promotion exclusion and replication hold: queued sites (any queue phase) → the guard's
    /// name. Never promoted automatically, never repointed by convergence.
    pub excluded: BTreeMap<String, String>,
    /// Receivers the manager re-stops when someone started them: the queue is Armed past
    /// Fencing, or Held. A Draining site is restarted only by its own reclone.
    pub hold_receivers: BTreeSet<String>,
    /// No clone runs into these sites: the queue is Armed or Held.
    pub clone_block: BTreeSet<String>,
    /// A full-instance run is in Fencing, Restoring or Resuming: no promotion, auto-clone or
    /// recovery action fires.
    pub frozen: bool,
    /// The primary whose `offline_mode=ON` the manager re-asserts on every poll: the fence is
    /// recorded and the run is not terminal, or its queue is still Armed (settlement keeps the
    /// fence up until it is written).
    pub offline_fence: Option<String>,
}

/// No guard: what a group without a restore gets.
pub static NO_GUARDS: RestoreGuards = RestoreGuards {
    excluded: BTreeMap::new(),
    hold_receivers: BTreeSet::new(),
    clone_block: BTreeSet::new(),
    frozen: false,
    offline_fence: None,
};

impl RestoreGuards {
    /// True when no guard stands.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Whether an in-place restore holds the sites: a run in Fencing, Restoring or Resuming, or
/// its queue still Armed (settlement pending). A run waiting in Preflight fenced nothing and
/// holds nothing; a Held or Draining queue holds only its queued sites (they await their
/// reclone). What a planned failover's admission reads as ConcurrentOperation.
pub fn in_place_in_progress(status: &MysqlFailoverGroupStatus) -> bool {
    let running = matches!(
        status.restore_in_place.as_ref().and_then(|run| run.phase.as_ref()),
        Some(
            RestoreInPlacePhase::Fencing
                | RestoreInPlacePhase::Restoring
                | RestoreInPlacePhase::Resuming
        )
    );
    let armed = status.restore_reclones.as_ref().and_then(|queue| queue.phase.as_ref())
        == Some(&RestoreReclonesPhase::Armed);
    running || armed
}

/// Whether `site` awaits its post-restore reclone (it is in `status.restoreReclones.pending`,
/// whatever the queue's phase).
pub fn awaits_reclone(status: &MysqlFailoverGroupStatus, site: &str) -> bool {
    status.restore_reclones.as_ref().is_some_and(|queue| queue.pending.iter().any(|s| s == site))
}

/// The guards `status` imposes.
pub fn guards(status: &MysqlFailoverGroupStatus) -> RestoreGuards {
    let run = status.restore_in_place.as_ref();
    let run_phase = run.and_then(|run| run.phase.as_ref());
    let full_instance = run.is_some_and(|run| run.scope.as_ref() != Some(&RestoreScope::Schema));
    let running = matches!(
        run_phase,
        Some(
            RestoreInPlacePhase::Fencing
                | RestoreInPlacePhase::Restoring
                | RestoreInPlacePhase::Resuming
        )
    );
    let before_stop = matches!(
        run_phase,
        None | Some(RestoreInPlacePhase::Preflight | RestoreInPlacePhase::Fencing)
    );
    let mut guards = RestoreGuards { frozen: full_instance && running, ..RestoreGuards::default() };
    let mut queue_armed = false;
    if let Some(queue) = status.restore_reclones.as_ref() {
        let phase = queue.phase.as_ref();
        queue_armed = phase == Some(&RestoreReclonesPhase::Armed);
        let held = phase == Some(&RestoreReclonesPhase::Held);
        // An unknown phase (a newer operator's) keeps every guard.
        let unknown = !matches!(
            phase,
            Some(
                RestoreReclonesPhase::Armed
                    | RestoreReclonesPhase::Held
                    | RestoreReclonesPhase::Draining
            )
        );
        for site in &queue.pending {
            guards.excluded.insert(site.clone(), PEER_HOLD.to_owned());
            if queue_armed || held || unknown {
                guards.clone_block.insert(site.clone());
            }
            if held || unknown || (queue_armed && !before_stop) {
                guards.hold_receivers.insert(site.clone());
            }
        }
    }
    if let Some(fence) = status.restore_offline_fence.as_ref()
        && (running || queue_armed)
    {
        guards.offline_fence = fence.site.clone();
    }
    guards
}
