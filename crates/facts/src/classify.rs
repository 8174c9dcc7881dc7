//! Site classification: what each site is, joined from its spec and its latest observation.

use bloodraven_crd::MysqlFailoverGroupSpec;
use bloodraven_crd::group::{SiteRole, SiteState};
use bloodraven_gtid::GtidSet;
use jiff::{SignedDuration, Timestamp};

use crate::observe::{GroupObservation, ReplicaObservation, SiteObservation, Unreachable};

/// One site as the topology manager and the console see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteFacts {
    /// `spec.sites[].name`.
    pub name: String,
    /// The effective role (PrimaryCandidate when unset).
    pub role: SiteRole,
    /// Writable, read-only, unreachable or unknown.
    pub state: SiteState,
    /// Why the site is unreachable or unknown, when it is.
    pub unreachable: Option<Unreachable>,
    /// `offline_mode` is ON (the in-place restore's fence): clients without
    /// `CONNECTION_ADMIN` cannot connect, whatever `read_only` says.
    pub offline_mode: bool,
    /// The executed set, when the site answered.
    pub gtid_executed: Option<GtidSet>,
    /// The replication channel, when the site answered and has one.
    pub replica: Option<ReplicaObservation>,
    /// When the observation was taken; `None` when the site was never observed.
    pub observed_at: Option<Timestamp>,
}

impl SiteFacts {
    /// A PrimaryCandidate site.
    pub fn is_candidate(&self) -> bool {
        self.role == SiteRole::PrimaryCandidate
    }

    /// A reader (effective role ReadOnly).
    pub fn is_reader(&self) -> bool {
        self.role == SiteRole::ReadOnly
    }

    /// Observed writable (`read_only` and `super_read_only` both OFF).
    pub fn is_writable(&self) -> bool {
        self.state == SiteState::Writable
    }
}

/// Classifies one observation. A reading older than `stale_after` (relative to `now`) says
/// nothing about the present: the site is `unknown`. An error answer (the server spoke but the
/// query failed) is `unknown` too: the site may still take writes, so it is never treated as
/// down.
pub fn classify(
    observation: &SiteObservation,
    now: Timestamp,
    stale_after: SignedDuration,
) -> SiteState {
    if is_stale(observation, now, stale_after) {
        return SiteState::Unknown;
    }
    match &observation.reading {
        Ok(reading) if !reading.read_only && !reading.super_read_only => SiteState::Writable,
        Ok(_) => SiteState::ReadOnly,
        Err(Unreachable::Refused | Unreachable::Timeout) => SiteState::Unreachable,
        Err(Unreachable::Error) => SiteState::Unknown,
    }
}

/// Whether an observation is too old to say anything about `now`.
pub fn is_stale(
    observation: &SiteObservation,
    now: Timestamp,
    stale_after: SignedDuration,
) -> bool {
    now.duration_since(observation.observed_at) > stale_after
}

/// Every site of the spec, in declared order, joined with its observation. A site without an
/// observation, or with a stale one, is `unknown` and carries no reading.
pub fn site_facts(
    spec: &MysqlFailoverGroupSpec,
    observation: &GroupObservation,
    now: Timestamp,
    stale_after: SignedDuration,
) -> Vec<SiteFacts> {
    spec.sites
        .iter()
        .map(|site| {
            let seen = observation.site(&site.name);
            let current = seen.filter(|seen| !is_stale(seen, now, stale_after));
            let reading = current.and_then(SiteObservation::server);
            SiteFacts {
                name: site.name.clone(),
                role: site.effective_role(),
                state: current.map_or(SiteState::Unknown, |seen| classify(seen, now, stale_after)),
                unreachable: current.and_then(|seen| seen.reading.as_ref().err().copied()),
                offline_mode: reading.is_some_and(|reading| reading.offline_mode),
                gtid_executed: reading.map(|reading| reading.gtid_executed.clone()),
                replica: reading.and_then(|reading| reading.replica.clone()),
                observed_at: seen.map(|seen| seen.observed_at),
            }
        })
        .collect()
}

/// Who writes, compared with the site the operator recorded as active.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Writers {
    /// No site is writable.
    None,
    /// Exactly one writable site, a PrimaryCandidate, and it is the recorded active site.
    Consistent {
        /// The active primary.
        active: String,
    },
    /// Exactly one writable PrimaryCandidate, but the record names another site (or none).
    Moved {
        /// `status.activeSite`.
        recorded: Option<String>,
        /// The writable site.
        observed: String,
    },
    /// The only writable site is not a PrimaryCandidate: there is no active primary.
    NotCandidate {
        /// The writable site.
        site: String,
        /// Its role.
        role: SiteRole,
    },
    /// More than one site is writable: split brain.
    Several {
        /// The writable sites, in declared order.
        sites: Vec<String>,
    },
}

/// Classifies the writers of a group. Readers and DisasterRecovery sites count: a writable one is a
/// writer too (and is fenced on every poll, see [`crate::non_candidates_to_fence`]).
pub fn writers(facts: &[SiteFacts], recorded_active: Option<&str>) -> Writers {
    let writable: Vec<&SiteFacts> = facts.iter().filter(|site| site.is_writable()).collect();
    match writable.as_slice() {
        [] => Writers::None,
        [only] if !only.is_candidate() => {
            Writers::NotCandidate { site: only.name.clone(), role: only.role.clone() }
        }
        [only] if recorded_active == Some(only.name.as_str()) => {
            Writers::Consistent { active: only.name.clone() }
        }
        [only] => Writers::Moved {
            recorded: recorded_active.map(str::to_string),
            observed: only.name.clone(),
        },
        several => {
            Writers::Several { sites: several.iter().map(|site| site.name.clone()).collect() }
        }
    }
}

/// Writable sites that are not PrimaryCandidates (readers and DisasterRecovery sites): the
/// topology manager fences each on every poll, even when it is the only writable site, and even
/// while a planned failover's claim or an automation hold defers everything else (topology
/// document, "Failover target selection"; planned-failover document, "The claim": "writable
/// DisasterRecovery or ReadOnly sites are still fenced").
pub fn non_candidates_to_fence(facts: &[SiteFacts]) -> Vec<String> {
    facts
        .iter()
        .filter(|site| !site.is_candidate() && site.is_writable())
        .map(|site| site.name.clone())
        .collect()
}
