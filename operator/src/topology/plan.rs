//! `plan`: one topology poll's decisions, as steps, from the facts of one observation.
//!
//! Pure: the observation, the spec's knobs, the durable history and `now` come in; steps come
//! out. The apply layer runs them in order and the next poll observes the result: the plan
//! never assumes a step succeeded.

use std::collections::BTreeMap;

use bloodraven_crd::group::{SiteRole, SiteState};
use bloodraven_facts::{
    Convergence, EmergencyChoice, Ineligible, NoWinner, RepointReason, SelectedBy, SiteFacts,
    SourceAddress, SplitBrain, WinnerBy, choose_emergency_target, convergence,
    non_candidates_to_fence, resolve_split_brain,
};
use bloodraven_gtid::GtidSet;
use jiff::{SignedDuration, Timestamp};

use crate::restore::guards::RestoreGuards;

/// Why everything but the role fences is deferred this poll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Deferral {
    /// A planned failover run holds the claim (planned-failover document, "The claim").
    Claim {
        /// The run that holds it.
        run_id: String,
    },
    /// An automation hold stands (planned-failover document, "The automation hold"); a hold
    /// carried only by a True condition names no run.
    Hold {
        /// The run the hold belongs to, when a record names one.
        run_id: Option<String>,
    },
}

impl std::fmt::Display for Deferral {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Claim { run_id } => write!(f, "planned failover {run_id} holds the claim"),
            Self::Hold { run_id: Some(run_id) } => {
                write!(f, "the automation hold of planned failover {run_id} stands")
            }
            Self::Hold { run_id: None } => f.write_str("an automation hold stands"),
        }
    }
}

/// What the durable record says about the past, and what earlier polls saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    /// `status.lastFailover.time`: the anti-flap cooldown runs from it.
    pub last_failover: Option<Timestamp>,
    /// Consecutive polls each site was observed unreachable (reset by a reachable poll).
    pub unreachable_polls: BTreeMap<String, u32>,
    /// Consecutive polls each site was observed reachable (reset by an unreachable poll).
    pub reachable_polls: BTreeMap<String, u32>,
    /// A failover whose intent is durable but whose promotion is not recorded: the target
    /// `status.lastFailover` names (without `promotionGtidExecuted`) while `status.activeSite`
    /// names another site, because an operator stopped between the two writes. Finishing it
    /// is not a second failover: the cooldown its own intent started does not hold it back.
    pub pending_failover: Option<String>,
}

/// Everything one poll decides from.
#[derive(Clone, Debug)]
pub struct PlanInput<'a> {
    /// Every site in declared order (`bloodraven_facts::site_facts`).
    pub facts: &'a [SiteFacts],
    /// `status.activeSite`.
    pub recorded_active: Option<&'a str>,
    /// `spec.splitBrainPolicy.sitePriorities`.
    pub priorities: &'a [String],
    /// `spec.failoverCooldown` (default 5m).
    pub cooldown: SignedDuration,
    /// `spec.failureThreshold`: polls of unreachability before the active site counts as failed.
    pub failure_threshold: u32,
    /// `spec.recoveryThreshold`: polls of reachability before a fenced active site is re-asserted.
    pub recovery_threshold: u32,
    /// What the record and earlier polls say.
    pub history: &'a History,
    /// A claim or hold that defers cross-site actions.
    pub deferral: Option<&'a Deferral>,
    /// Sites a status guard keeps out of promotion and convergence (site → the guard's name,
    /// e.g. a post-restore reclone queue's `RestorePeerHold`).
    pub excluded: &'a BTreeMap<String, String>,
    /// The address followers use for each site (its internal administrative Service).
    pub addresses: &'a BTreeMap<String, (String, u16)>,
    /// The guards of a full-instance in-place restore, from status (`restore::guards`): the
    /// receivers held stopped, the `offline_mode` fence re-asserted, and the freeze.
    pub restore: &'a RestoreGuards,
    /// The time of this poll.
    pub now: Timestamp,
}

/// Why a site is fenced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FenceWhy {
    /// A writable reader or DisasterRecovery site: fenced on every poll.
    NonCandidateWriter {
        /// Its role.
        role: SiteRole,
    },
    /// It lost split-brain resolution.
    SplitBrainLoser {
        /// The site that stays writable.
        winner: String,
        /// How the winner was chosen.
        by: WinnerBy,
    },
}

impl std::fmt::Display for FenceWhy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NonCandidateWriter { role } => {
                write!(
                    f,
                    "a {} site answered writable; only PrimaryCandidates take writes",
                    role.as_str()
                )
            }
            Self::SplitBrainLoser { winner, by } => {
                write!(f, "split brain lost to {winner} ({by})")
            }
        }
    }
}

/// Something a human must know; no step acts on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Alert {
    /// The active site failed and no PrimaryCandidate replica is eligible (`NoPrimary`).
    NoPrimary {
        /// The failed active site, when one is recorded.
        failed: Option<String>,
        /// Each other PrimaryCandidate and why it is not eligible.
        ineligible: Vec<(String, Ineligible)>,
    },
    /// A new group (no active site recorded) waits before its first primary: some
    /// PrimaryCandidates have not answered, and no candidate has answered for
    /// `failureThreshold` polls yet.
    AwaitingCandidates {
        /// The candidates that have not answered, and their state.
        silent: Vec<(String, Ineligible)>,
        /// `spec.failureThreshold`: the polls the first answering candidate waits for them.
        failure_threshold: u32,
    },
    /// The eligible candidates' executed sets are incomparable: no automatic choice.
    CandidatesIncomparable {
        /// Each candidate with the count of transactions only it has.
        sites: Vec<(String, u128)>,
    },
    /// A full-instance in-place restore runs: the topology manager is frozen (no promotion,
    /// auto-clone or recovery action); only the role fences and the restore's guards act.
    RestoreFrozen,
    /// Several PrimaryCandidates are writable and no winner can be named.
    SplitBrainUnresolved {
        /// The writable candidates.
        writable: Vec<String>,
        /// Why no winner.
        why: NoWinner,
    },
    /// A failover would be due but the anti-flap cooldown runs until `until`.
    Cooldown {
        /// The end of the cooldown.
        until: Timestamp,
        /// The site it would promote.
        would_promote: String,
    },
    /// Cross-site actions are deferred this poll.
    Deferred(Deferral),
    /// A follower holds transactions the primary lacks: `Blocked`/`GTIDDiverged`.
    FollowerDiverged {
        /// The follower.
        site: String,
        /// Its transactions the primary lacks.
        divergent: GtidSet,
    },
    /// The recorded active site answers read-only, but another reachable site holds
    /// transactions it lacks: re-asserting it could drop them.
    ReassertBlocked {
        /// The recorded active site.
        site: String,
        /// The sites ahead of it.
        ahead: Vec<String>,
    },
    /// The recorded active site has been unreachable for fewer polls than `failureThreshold`.
    ActiveUnreachable {
        /// The site.
        site: String,
        /// Consecutive unreachable polls so far.
        polls: u32,
    },
    /// The recorded active site is no longer a PrimaryCandidate in the spec and no candidate is
    /// writable: a human decides (planned failover to a candidate, or restoring the role).
    ActiveNotCandidate {
        /// The site.
        site: String,
        /// Its role now.
        role: SiteRole,
    },
    /// The recorded active site cannot be classified (an error answer or no fresh reading):
    /// nothing is done until it can be.
    ActiveUnknown {
        /// The site.
        site: String,
    },
}

/// One action of the topology manager, in the order the apply layer runs them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `SET GLOBAL super_read_only = ON` on `site`, read back.
    Fence {
        /// The site.
        site: String,
        /// Why.
        why: FenceWhy,
    },
    /// Make `site` the writable primary: stop its replica threads and clear `super_read_only`
    /// and `read_only`, read back. Emergency failover, a first primary, or a re-assert.
    Promote {
        /// The site.
        site: String,
        /// Why this site.
        by: PromoteWhy,
    },
    /// Record `site` as `status.activeSite` (with `lastFailover` when it is a failover) and
    /// publish it: the `-primary` Service selector and the DNS record follow.
    RecordActive {
        /// The site.
        site: String,
        /// A failover (starts the cooldown) or adopting what the sites already show.
        failover: bool,
    },
    /// Repoint a contained follower at the primary: `STOP REPLICA`, re-check containment
    /// (the applier race), `CHANGE REPLICATION SOURCE TO … SOURCE_AUTO_POSITION=1`,
    /// `START REPLICA`, never resetting replication metadata.
    Repoint {
        /// The follower.
        site: String,
        /// The primary.
        source: String,
        /// Why it is not converged.
        reason: RepointReason,
    },
    /// Publish a follower's convergence as `Blocked` with reason `GTIDDiverged`.
    Block {
        /// The follower.
        site: String,
        /// Its transactions the primary lacks.
        divergent: GtidSet,
    },
    /// `STOP REPLICA IO_THREAD` on a site a restore's reclone queue holds (Armed past Fencing,
    /// or Held) whose receiver someone started.
    StopReceiver {
        /// The queued site.
        site: String,
    },
    /// `SET GLOBAL offline_mode = ON` on the primary a restore fences (a restarted mysqld comes
    /// back with it OFF).
    OfflineFence {
        /// The fenced primary.
        site: String,
    },
    /// Tell a human.
    Alert(Alert),
}

/// Why a site is promoted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromoteWhy {
    /// The active site failed; the selection rule chose this site.
    Emergency {
        /// The failed active site.
        failed: String,
        /// How it was chosen.
        by: SelectedBy,
    },
    /// No active site is recorded yet (a new group): the selection rule chose this site.
    FirstPrimary {
        /// How it was chosen.
        by: SelectedBy,
    },
    /// The recorded active site answers read-only (it booted fenced, or was fenced) and holds
    /// every transaction of every reachable site: it is made writable again.
    Reassert,
}

impl std::fmt::Display for PromoteWhy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Emergency { failed, by } => write!(f, "emergency failover from {failed}: {by}"),
            Self::FirstPrimary { by } => write!(f, "first primary of the group: {by}"),
            Self::Reassert => f.write_str(
                "the recorded active site answered read-only and holds every transaction; made writable again",
            ),
        }
    }
}

/// Plans one poll. See the module documentation for the rules; in short:
///
/// 1. Writable readers and DisasterRecovery sites are fenced, always.
/// 2. A claim or a hold defers everything else.
/// 3. Several writable PrimaryCandidates: split-brain resolution (or an alert).
/// 4. One: adopt it as the active site if the record says otherwise, then converge followers.
/// 5. None: wait out `failureThreshold`, honour the cooldown, then promote the freshest
///    eligible candidate (or alert `NoPrimary`); a reachable read-only active site is
///    re-asserted after `recoveryThreshold` polls when no site is ahead of it.
/// 6. No active site recorded (a new group): the first primary waits until every
///    PrimaryCandidate has answered, or until the first candidate to answer has answered
///    `failureThreshold` polls (alert `AwaitingCandidates` naming the silent ones meanwhile); then the
///    emergency rule chooses (freshest, `sitePriorities`, declared order).
pub fn plan(input: &PlanInput<'_>) -> Vec<Step> {
    let mut steps: Vec<Step> = non_candidates_to_fence(input.facts)
        .into_iter()
        .map(|site| {
            let role =
                input.facts.iter().find(|fact| fact.name == site).map(|fact| fact.role.clone());
            Step::Fence {
                site,
                why: FenceWhy::NonCandidateWriter { role: role.unwrap_or(SiteRole::ReadOnly) },
            }
        })
        .collect();
    restore_guards(input, &mut steps);
    if input.restore.frozen {
        steps.push(Step::Alert(Alert::RestoreFrozen));
        return steps;
    }
    if let Some(deferral) = input.deferral {
        steps.push(Step::Alert(Alert::Deferred(deferral.clone())));
        return steps;
    }
    let candidates: Vec<&SiteFacts> =
        input.facts.iter().filter(|site| site.is_candidate()).collect();
    let writable: Vec<SiteFacts> =
        candidates.iter().filter(|site| site.is_writable()).map(|site| (*site).clone()).collect();
    match writable.as_slice() {
        [] => plan_without_writer(input, &mut steps),
        [primary] => {
            if input.recorded_active != Some(primary.name.as_str()) {
                steps.push(Step::RecordActive { site: primary.name.clone(), failover: false });
            }
            converge(input, primary, &mut steps);
        }
        _ => match resolve_split_brain(&writable, input.recorded_active, input.priorities) {
            Some(SplitBrain::Resolve { winner, by, fence }) => {
                steps.extend(fence.into_iter().map(|site| Step::Fence {
                    site,
                    why: FenceWhy::SplitBrainLoser { winner: winner.clone(), by },
                }));
                if input.recorded_active != Some(winner.as_str()) {
                    steps.push(Step::RecordActive { site: winner, failover: false });
                }
            }
            Some(SplitBrain::AlertOnly { writable, why }) => {
                steps.push(Step::Alert(Alert::SplitBrainUnresolved { writable, why }));
            }
            None => {}
        },
    }
    steps
}

/// The restore's guards that act every poll, also while frozen or deferred: the fenced
/// primary's `offline_mode` re-asserted, held receivers re-stopped.
fn restore_guards(input: &PlanInput<'_>, steps: &mut Vec<Step>) {
    if let Some(site) = input.restore.offline_fence.as_ref()
        && let Some(fact) = input.facts.iter().find(|fact| fact.name == *site)
        && matches!(fact.state, SiteState::Writable | SiteState::ReadOnly)
        && !fact.offline_mode
    {
        steps.push(Step::OfflineFence { site: site.clone() });
    }
    for fact in input.facts.iter().filter(|fact| input.restore.hold_receivers.contains(&fact.name))
    {
        // A receiver in Connecting is started too: it receives once its source answers.
        if fact.replica.as_ref().is_some_and(|replica| replica.io_running || replica.io_connecting)
        {
            steps.push(Step::StopReceiver { site: fact.name.clone() });
        }
    }
}

/// No PrimaryCandidate is writable.
fn plan_without_writer(input: &PlanInput<'_>, steps: &mut Vec<Step>) {
    let Some(active) = input.recorded_active else {
        // A new group: every candidate gets its say before the first primary is chosen.
        if let Some(silent) = silent_candidates(input) {
            steps.push(Step::Alert(Alert::AwaitingCandidates {
                silent,
                failure_threshold: input.failure_threshold,
            }));
            return;
        }
        // Choose the first primary by the emergency rule (nobody failed).
        match choose_emergency_target(input.facts, "", input.priorities, input.excluded) {
            EmergencyChoice::Promote { site, by } => {
                steps.push(Step::Promote {
                    site: site.clone(),
                    by: PromoteWhy::FirstPrimary { by },
                });
                steps.push(Step::RecordActive { site, failover: false });
            }
            EmergencyChoice::NoCandidate { ineligible } => {
                steps.push(Step::Alert(Alert::NoPrimary { failed: None, ineligible }));
            }
            EmergencyChoice::Incomparable { sites } => {
                steps.push(Step::Alert(Alert::CandidatesIncomparable { sites }));
            }
        }
        return;
    };
    let Some(active_site) = input.facts.iter().find(|site| site.name == active) else {
        steps.push(Step::Alert(Alert::ActiveUnknown { site: active.to_string() }));
        return;
    };
    if !active_site.is_candidate() {
        // The recorded active site's role was changed in the spec: it can be neither
        // re-asserted nor replaced automatically without guessing.
        steps.push(Step::Alert(Alert::ActiveNotCandidate {
            site: active.to_string(),
            role: active_site.role.clone(),
        }));
        return;
    }
    match active_site.state {
        SiteState::ReadOnly => reassert(input, active, steps),
        SiteState::Unreachable => {
            let polls = input.history.unreachable_polls.get(active).copied().unwrap_or(0);
            if polls < input.failure_threshold {
                steps.push(Step::Alert(Alert::ActiveUnreachable {
                    site: active.to_string(),
                    polls,
                }));
                return;
            }
            emergency(input, active, steps);
        }
        // Writable cannot happen here (no writable candidate); unknown: do nothing until it can
        // be classified.
        _ => steps.push(Step::Alert(Alert::ActiveUnknown { site: active.to_string() })),
    }
}

/// A new group's PrimaryCandidates that have not answered yet (with their state), while the
/// first primary should wait for them: `None` once every candidate answered or the first to
/// answer has answered for `failureThreshold` polls (the detection bound: a candidate silent
/// that long counts as down). Candidates a status guard excludes are not waited for.
fn silent_candidates(input: &PlanInput<'_>) -> Option<Vec<(String, Ineligible)>> {
    let candidates = input
        .facts
        .iter()
        .filter(|site| site.is_candidate() && !input.excluded.contains_key(&site.name));
    let mut silent = Vec::new();
    let mut longest_answering = 0;
    for site in candidates {
        if matches!(site.state, SiteState::ReadOnly | SiteState::Writable) {
            let polls = input.history.reachable_polls.get(&site.name).copied().unwrap_or(0);
            longest_answering = longest_answering.max(polls);
        } else {
            silent.push((site.name.clone(), Ineligible::State(site.state.clone())));
        }
    }
    (!silent.is_empty() && longest_answering < input.failure_threshold).then_some(silent)
}

/// The active site failed: promote the freshest eligible candidate, unless the cooldown runs
/// (a pending failover to the same site is finished despite it).
fn emergency(input: &PlanInput<'_>, failed: &str, steps: &mut Vec<Step>) {
    match choose_emergency_target(input.facts, failed, input.priorities, input.excluded) {
        EmergencyChoice::Promote { site, by } => {
            let finishing = input.history.pending_failover.as_deref() == Some(site.as_str());
            if let Some(until) = input.history.last_failover.map(|last| last + input.cooldown)
                && input.now < until
                && !finishing
            {
                steps.push(Step::Alert(Alert::Cooldown { until, would_promote: site }));
                return;
            }
            steps.push(Step::Promote {
                site: site.clone(),
                by: PromoteWhy::Emergency { failed: failed.to_string(), by },
            });
            steps.push(Step::RecordActive { site, failover: true });
        }
        EmergencyChoice::NoCandidate { ineligible } => {
            steps.push(Step::Alert(Alert::NoPrimary {
                failed: Some(failed.to_string()),
                ineligible,
            }));
        }
        EmergencyChoice::Incomparable { sites } => {
            steps.push(Step::Alert(Alert::CandidatesIncomparable { sites }));
        }
    }
}

/// The recorded active site answers read-only and no candidate is writable: it is made
/// writable again once it has been reachable for `recoveryThreshold` polls, and only when no
/// reachable site holds a transaction it lacks.
fn reassert(input: &PlanInput<'_>, active: &str, steps: &mut Vec<Step>) {
    let polls = input.history.reachable_polls.get(active).copied().unwrap_or(0);
    if polls < input.recovery_threshold {
        return;
    }
    let Some(own) = input
        .facts
        .iter()
        .find(|site| site.name == active)
        .and_then(|site| site.gtid_executed.as_ref())
    else {
        return;
    };
    let ahead: Vec<String> = input
        .facts
        .iter()
        .filter(|site| site.name != active)
        .filter(|site| site.gtid_executed.as_ref().is_some_and(|set| !set.is_subset(own)))
        .map(|site| site.name.clone())
        .collect();
    if ahead.is_empty() {
        steps.push(Step::Promote { site: active.to_string(), by: PromoteWhy::Reassert });
    } else {
        steps.push(Step::Alert(Alert::ReassertBlocked { site: active.to_string(), ahead }));
    }
}

/// Converge every reachable follower on `primary`.
fn converge(input: &PlanInput<'_>, primary: &SiteFacts, steps: &mut Vec<Step>) {
    let (Some(primary_gtid), Some((host, port))) =
        (primary.gtid_executed.as_ref(), input.addresses.get(&primary.name))
    else {
        return;
    };
    let source = SourceAddress { host, port: *port };
    for follower in input.facts.iter().filter(|site| site.name != primary.name) {
        if input.excluded.contains_key(&follower.name) || follower.state != SiteState::ReadOnly {
            continue;
        }
        let Some(follower_gtid) = follower.gtid_executed.as_ref() else { continue };
        match convergence(primary_gtid, source, follower_gtid, follower.replica.as_ref()) {
            Convergence::Converged => {}
            Convergence::Repoint(reason) => steps.push(Step::Repoint {
                site: follower.name.clone(),
                source: primary.name.clone(),
                reason,
            }),
            Convergence::Diverged { divergent } => {
                steps.push(Step::Block {
                    site: follower.name.clone(),
                    divergent: divergent.clone(),
                });
                steps.push(Step::Alert(Alert::FollowerDiverged {
                    site: follower.name.clone(),
                    divergent,
                }));
            }
        }
    }
}
