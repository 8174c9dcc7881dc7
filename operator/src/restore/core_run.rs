//! The full-instance in-place restore around the reclone queue, pure: preflight, arming the
//! queue, the `offline_mode` fence and its release, stopping every peer's receiver, and the
//! settlement of the queue when a run fails.
//!
//! Backup-and-restore document, "Full-instance in-place restore" and the sections after it.

use std::collections::BTreeSet;

use bloodraven_crd::group::{ReplacedQueue, RestoreReclones, RestoreReclonesPhase};
use bloodraven_gtid::GtidSet;
use jiff::{SignedDuration, Timestamp};

/// A running receiver gets this long to receive the fenced set before it is stopped.
pub const PEER_CATCH_UP: SignedDuration = SignedDuration::from_secs(30);
/// Every peer's receiver must be verified stopped within this long, or the run fails.
pub const PEER_STOP_BOUND: SignedDuration = SignedDuration::from_mins(2);
/// A failed run whose Job pods have not all terminated keeps the queue Armed this long.
pub const POD_WAIT: SignedDuration = SignedDuration::from_mins(10);
/// An unreadable primary is retried this long from the first failed read.
pub const PRIMARY_READ_WAIT: SignedDuration = SignedDuration::from_mins(2);

// ---------------------------------------------------------------------------------------------
// Preflight

/// A privilege the fence or the restore Job needs on the primary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Privilege {
    /// Keeps the operator account working under `offline_mode`.
    ConnectionAdmin,
    /// Sets `offline_mode` (and `local_infile`).
    SystemVariablesAdmin,
    /// Lets the eviction see other accounts' sessions.
    Process,
    /// Stops receivers and resets the primary's replication.
    ReplicationSlaveAdmin,
}

impl Privilege {
    /// The MySQL name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ConnectionAdmin => "CONNECTION_ADMIN",
            Self::SystemVariablesAdmin => "SYSTEM_VARIABLES_ADMIN",
            Self::Process => "PROCESS",
            Self::ReplicationSlaveAdmin => "REPLICATION_SLAVE_ADMIN",
        }
    }
}

/// What the primary needs: every privilege, SUPER standing in for all but PROCESS.
pub const PRIMARY_NEEDS: [Privilege; 4] = [
    Privilege::ConnectionAdmin,
    Privilege::SystemVariablesAdmin,
    Privilege::Process,
    Privilege::ReplicationSlaveAdmin,
];

/// The privileges the account holds on a site, as `SHOW GRANTS` names them (upper case;
/// `ALL PRIVILEGES` counts as every one).
pub fn missing(grants: &BTreeSet<String>, needs: &[Privilege]) -> Vec<Privilege> {
    let all = grants.contains("ALL PRIVILEGES") || grants.contains("ALL");
    let super_ = grants.contains("SUPER");
    needs
        .iter()
        .copied()
        .filter(|need| {
            !(all || grants.contains(need.as_str()) || (super_ && *need != Privilege::Process))
        })
        .collect()
}

/// What one peer looks like to preflight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerReadiness {
    /// Reachable; the grants of the operator account there.
    Reachable {
        /// `SHOW GRANTS` privileges.
        grants: BTreeSet<String>,
    },
    /// Not reachable now.
    Unreachable,
}

/// Everything preflight decides from.
#[derive(Clone, Debug)]
pub struct PreflightInput<'a> {
    /// `spec.restoreInPlace.confirm`.
    pub confirm: &'a str,
    /// `status.restoreInPlace.confirmTokenUsed`.
    pub confirm_token_used: Option<&'a str>,
    /// `status.activeSite` and whether it answers writable.
    pub active: Option<(&'a str, bool)>,
    /// The primary's grants (`None`: not read).
    pub primary_grants: Option<&'a BTreeSet<String>>,
    /// Every peer, in the queue's order.
    pub peers: &'a [(String, PeerReadiness)],
    /// A running ordered update, planned failover that owns sites, or clone (its name).
    pub concurrent: Option<&'a str>,
    /// The previous restore's queue when it is not settled (`status.restoreReclones`).
    pub previous_queue: Option<&'a RestoreReclones>,
}

/// Preflight's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Preflight {
    /// No new run: confirm is not newer than the last one used.
    NotNewer,
    /// The confirm does not parse: nothing starts (RestoreInPlaceConfirmIgnored).
    ConfirmIgnored {
        /// Why.
        why: String,
    },
    /// Rejected: nothing fenced, confirm not consumed; re-checked about once a minute.
    Rejected {
        /// The status message.
        message: String,
    },
    /// Waits (no application impact); the status message says what for.
    Wait {
        /// The status message.
        message: String,
    },
    /// Accepted: fence next.
    Accept,
}

/// Preflight of a full-instance restore.
pub fn preflight(input: &PreflightInput<'_>) -> Preflight {
    let confirm: Timestamp = match input.confirm.parse() {
        Ok(confirm) => confirm,
        Err(error) => {
            return Preflight::ConfirmIgnored {
                why: format!(
                    "spec.restoreInPlace.confirm {:?} is not an RFC 3339 timestamp: {error}",
                    input.confirm
                ),
            };
        }
    };
    if let Some(used) = input.confirm_token_used.and_then(|used| used.parse::<Timestamp>().ok())
        && confirm <= used
    {
        return Preflight::NotNewer;
    }
    let Some((active, writable)) = input.active else {
        return Preflight::Wait { message: "waiting for status.activeSite to be recorded".into() };
    };
    if !writable {
        return Preflight::Wait {
            message: format!("waiting for the active site {active} to answer writable"),
        };
    }
    if let Some(grants) = input.primary_grants {
        let lacking = missing(grants, &PRIMARY_NEEDS);
        if !lacking.is_empty() {
            return Preflight::Rejected {
                message: format!(
                    "the operator account lacks {} on the primary {active}; grant them (see The restore account); re-checked about once a minute",
                    names(&lacking)
                ),
            };
        }
    } else {
        return Preflight::Wait { message: format!("waiting to read the grants on {active}") };
    }
    for (site, readiness) in input.peers {
        match readiness {
            PeerReadiness::Unreachable => {
                return Preflight::Wait {
                    message: format!("waiting for peer {site} to be reachable"),
                };
            }
            PeerReadiness::Reachable { grants } => {
                let lacking = missing(grants, &[Privilege::ReplicationSlaveAdmin]);
                if !lacking.is_empty() {
                    return Preflight::Rejected {
                        message: format!(
                            "the operator account lacks {} on peer {site}, so its receiver cannot be stopped; re-checked about once a minute",
                            names(&lacking)
                        ),
                    };
                }
            }
        }
    }
    if let Some(operation) = input.concurrent {
        return Preflight::Wait {
            message: format!("waiting for a concurrent operation to finish ({operation})"),
        };
    }
    if let Some(queue) = input.previous_queue
        && queue.phase == Some(RestoreReclonesPhase::Draining)
        && queue.current.is_some()
    {
        return Preflight::Wait {
            message: "RestoreInPlaceDeferredPreviousQueue: the previous restore's reclone queue has a reclone in flight".into(),
        };
    }
    Preflight::Accept
}

fn names(privileges: &[Privilege]) -> String {
    privileges.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
}

// ---------------------------------------------------------------------------------------------
// Arming

/// What accepting a run does to the queue in status.
#[derive(Clone, Debug, PartialEq)]
pub enum Arm {
    /// Write this Armed queue (every peer, in order); a replaced queue is recorded in it.
    Armed(RestoreReclones),
    /// A queue still Armed from an earlier run whose settlement was lost: it is put Held
    /// first (whether that run changed the primary is unknown); the new run waits a poll.
    HoldStale(RestoreReclones),
}

/// Arms the queue for run `run_id` with `order` ([`super::core::queue_order`]), replacing a
/// previous queue. A Draining queue's unstarted request must be withdrawn by the caller
/// before (preflight waits while one is running).
pub fn arm(previous: Option<&RestoreReclones>, order: Vec<String>, run_id: &str) -> Arm {
    let replaced = match previous {
        Some(queue) if queue.run_id.as_deref() == Some(run_id) => {
            // This run's own queue (a retried write): keep it.
            return Arm::Armed(queue.clone());
        }
        Some(queue) if queue.phase == Some(RestoreReclonesPhase::Armed) => {
            let mut held = queue.clone();
            held.phase = Some(RestoreReclonesPhase::Held);
            held.current = None;
            return Arm::HoldStale(held);
        }
        Some(queue) if !queue.pending.is_empty() => Some(ReplacedQueue {
            phase: queue.phase.clone(),
            run_id: queue.run_id.clone(),
            pending: queue.pending.clone(),
            ..ReplacedQueue::default()
        }),
        _ => None,
    };
    Arm::Armed(RestoreReclones {
        phase: Some(RestoreReclonesPhase::Armed),
        run_id: Some(run_id.to_owned()),
        pending: order,
        replaced,
        ..RestoreReclones::default()
    })
}

/// A succeeded run releases its queue: Draining.
pub fn release(queue: &RestoreReclones) -> RestoreReclones {
    let mut queue = queue.clone();
    queue.phase = Some(RestoreReclonesPhase::Draining);
    queue.replaced = None;
    queue
}

// ---------------------------------------------------------------------------------------------
// Peer receivers

/// A peer's receiver as observed in Fencing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Receiver {
    /// Running; what it has received (retrieved ∪ executed).
    Running {
        /// The set it holds or has queued in its relay log.
        received: GtidSet,
    },
    /// Connecting (a dedicated replication user after `offline_mode`).
    Connecting,
    /// Neither running nor connecting: verified stopped.
    Stopped,
    /// Not observable (unreachable, refused).
    Unknown {
        /// Why.
        why: String,
    },
}

/// What to do with one peer's receiver this poll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerAction {
    /// Verified stopped (RestorePeerReplicationStopped once).
    Stopped,
    /// Waits for it to receive the fenced set.
    CatchUp,
    /// `STOP REPLICA IO_THREAD` now; `behind` names what it never received (a
    /// RestorePeerReplicationStoppedBehind Warning when not empty).
    Stop {
        /// The fenced GTIDs the peer lacks.
        behind: GtidSet,
    },
    /// Cannot be verified this poll.
    Unverified {
        /// Why.
        why: String,
    },
}

/// The decision for every peer, and whether the run can go on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerStop {
    /// Act on each peer and poll again.
    Act(Vec<(String, PeerAction)>),
    /// Every receiver is verified stopped: the Job may be built.
    AllStopped,
    /// Not every receiver was verified stopped within two minutes:
    /// Failed/RestoreInPlacePeerStopFailed before any Job exists.
    Failed {
        /// The peers that could not be verified, with why.
        unverified: Vec<(String, String)>,
    },
}

/// Stops every peer's receiver after the fence, giving a running one 30 seconds (from
/// `fenced_at`) to receive `fenced`.
pub fn stop_peers(
    peers: &[(String, Receiver)],
    fenced: &GtidSet,
    fenced_at: Timestamp,
    now: Timestamp,
) -> PeerStop {
    let waited = now.duration_since(fenced_at);
    let actions: Vec<(String, PeerAction)> = peers
        .iter()
        .map(|(site, receiver)| {
            let action = match receiver {
                Receiver::Stopped => PeerAction::Stopped,
                Receiver::Connecting => PeerAction::Stop { behind: GtidSet::new() },
                Receiver::Running { received } => {
                    let behind = fenced.difference(received);
                    if behind.is_empty() || waited >= PEER_CATCH_UP {
                        PeerAction::Stop { behind }
                    } else {
                        PeerAction::CatchUp
                    }
                }
                Receiver::Unknown { why } => PeerAction::Unverified { why: why.clone() },
            };
            (site.clone(), action)
        })
        .collect();
    if actions.iter().all(|(_, action)| *action == PeerAction::Stopped) {
        return PeerStop::AllStopped;
    }
    if waited >= PEER_STOP_BOUND {
        let unverified = actions
            .iter()
            .filter(|(_, action)| *action != PeerAction::Stopped)
            .map(|(site, action)| {
                let why = match action {
                    PeerAction::Unverified { why } => why.clone(),
                    _ => "its receiver was not verified stopped".to_owned(),
                };
                (site.clone(), why)
            })
            .collect();
        return PeerStop::Failed { unverified };
    }
    PeerStop::Act(actions)
}

// ---------------------------------------------------------------------------------------------
// The offline_mode fence

/// `SET GLOBAL offline_mode = …` putting back what the fence recorded (`None`: OFF).
pub fn release_statement(prior: Option<bool>) -> &'static str {
    if prior == Some(true) {
        "SET GLOBAL offline_mode = ON"
    } else {
        "SET GLOBAL offline_mode = OFF"
    }
}

/// A session that stays connected after the fence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// `PROCESSLIST_ID`.
    pub id: u64,
    /// The account's user name.
    pub user: String,
    /// A replication dump thread (`Binlog Dump GTID`).
    pub dump_thread: bool,
    /// The account holds SYSTEM_USER (cannot be killed without it).
    pub system_user: bool,
    /// Connected before the fence went up.
    pub before_fence: bool,
}

/// The eviction: which sessions to kill, which are kept (named in a
/// RestoreOfflineFenceSessionsKept Warning), and whether the fence is applied (no session from
/// before the fence is left, but kept ones).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Eviction {
    /// `KILL` these.
    pub kill: Vec<u64>,
    /// Kept: SYSTEM_USER sessions the operator cannot kill (`operator_system_user` false).
    pub kept: Vec<(u64, String)>,
    /// No session from before the fence is left but the kept ones: RestoreOfflineFenceApplied.
    pub applied: bool,
}

/// Decides the eviction of one poll.
pub fn evict(sessions: &[Session], operator_user: &str, operator_system_user: bool) -> Eviction {
    let mut kill = Vec::new();
    let mut kept = Vec::new();
    for session in sessions {
        if session.user == operator_user || session.dump_thread || !session.before_fence {
            continue;
        }
        if session.system_user && !operator_system_user {
            kept.push((session.id, session.user.clone()));
        } else {
            kill.push(session.id);
        }
    }
    let applied = kill.is_empty();
    Eviction { kill, kept, applied }
}

// ---------------------------------------------------------------------------------------------
// Settlement of a failed (or cancelled) run

/// The primary's executed set as read after the run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrimaryRead {
    /// Read.
    Read(GtidSet),
    /// Not readable, first failing at this instant.
    Unreadable {
        /// The first failed read.
        since: Timestamp,
    },
}

/// A failed or cancelled run, as settlement sees it.
#[derive(Clone, Debug)]
pub struct FailedRun<'a> {
    /// This run's queue.
    pub queue: &'a RestoreReclones,
    /// `status.restoreInPlace.jobCreating` was recorded.
    pub job_creating: bool,
    /// Every pod of the run's Job has terminated (`None`: unknown, e.g. not listed yet).
    pub pods_terminated: Option<bool>,
    /// The primary now.
    pub primary: PrimaryRead,
    /// When the run ended.
    pub ended: Timestamp,
    /// The time of this poll.
    pub now: Timestamp,
}

/// What settlement does. The offline fence is released only after the settlement is written.
#[derive(Clone, Debug, PartialEq)]
pub enum Settlement {
    /// The primary is unchanged and there is no earlier queue: the queue is removed
    /// (RestoreReclonesDiscarded); the peers resume replicating.
    Discard,
    /// The primary is unchanged: the earlier queue this run replaced is put back as it was
    /// (RestoreReclonesRestored).
    Restore(RestoreReclones),
    /// The primary changed or cannot be compared: Held with every peer (RestoreReclonesHeld).
    Hold(RestoreReclones),
    /// Not yet: the queue stays Armed and the fence stays up (and is re-asserted).
    Wait {
        /// Why.
        message: String,
    },
}

/// Settles the queue of a run that ended Failed or cancelled.
pub fn settle(run: &FailedRun<'_>) -> Settlement {
    if !run.job_creating {
        return unchanged(run.queue);
    }
    let pods_done = run.pods_terminated == Some(true);
    if !pods_done {
        if run.now.duration_since(run.ended) < POD_WAIT {
            return Settlement::Wait {
                message: "a pod of the restore Job has not terminated; the queue stays Armed and the fence up (at most ten minutes)".into(),
            };
        }
        return hold(run.queue);
    }
    let fenced = run.queue.fenced_gtid_executed.as_deref().map(str::parse::<GtidSet>);
    match (&run.primary, fenced) {
        (PrimaryRead::Read(now), Some(Ok(fenced))) if *now == fenced => unchanged(run.queue),
        (PrimaryRead::Read(_), _) => hold(run.queue),
        (PrimaryRead::Unreadable { since }, _) => {
            if run.now.duration_since(*since) < PRIMARY_READ_WAIT {
                Settlement::Wait {
                    message: "the primary's gtid_executed cannot be read; retrying for two minutes"
                        .into(),
                }
            } else {
                hold(run.queue)
            }
        }
    }
}

fn unchanged(queue: &RestoreReclones) -> Settlement {
    match queue.replaced.as_ref() {
        Some(earlier) if !earlier.pending.is_empty() => Settlement::Restore(RestoreReclones {
            phase: earlier.phase.clone().or(Some(RestoreReclonesPhase::Draining)),
            run_id: earlier.run_id.clone(),
            pending: earlier.pending.clone(),
            ..RestoreReclones::default()
        }),
        _ => Settlement::Discard,
    }
}

/// Held with every peer: this run's queue lists every peer; an earlier queue's sites are
/// among them (kept first if the earlier queue named a site this one does not).
fn hold(queue: &RestoreReclones) -> Settlement {
    let mut pending = queue.pending.clone();
    if let Some(earlier) = queue.replaced.as_ref() {
        for site in &earlier.pending {
            if !pending.contains(site) {
                pending.push(site.clone());
            }
        }
    }
    Settlement::Hold(RestoreReclones {
        phase: Some(RestoreReclonesPhase::Held),
        run_id: queue.run_id.clone(),
        pending,
        fenced_gtid_executed: queue.fenced_gtid_executed.clone(),
        failures: queue.failures.clone(),
        ..RestoreReclones::default()
    })
}
