//! Emergency failover target selection (topology document, "Failover target selection").

use std::collections::BTreeMap;

use crate::classify::SiteFacts;
use bloodraven_crd::group::SiteState;

/// Why a candidate was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectedBy {
    /// It was the only eligible candidate.
    OnlyCandidate,
    /// Its executed ∪ retrieved set strictly contains every other eligible candidate's.
    Freshness,
    /// Equally fresh candidates; it is the first eligible entry of `sitePriorities`.
    Priority,
    /// Equally fresh candidates, none listed in `sitePriorities`; it is declared first.
    DeclaredOrder,
}

impl std::fmt::Display for SelectedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::OnlyCandidate => "the only eligible candidate",
            Self::Freshness => {
                "the freshest candidate (its executed and received GTID sets contain every \
                 other's)"
            }
            Self::Priority => "equally fresh; first of sitePriorities",
            Self::DeclaredOrder => "equally fresh, none in sitePriorities; declared first",
        })
    }
}

/// Why an otherwise promotable site is not eligible right now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ineligible {
    /// Not a PrimaryCandidate.
    Role,
    /// Not reachable, or not observed recently enough (its state).
    State(SiteState),
    /// The site is the failed active site itself.
    FailedActive,
    /// A guard from status excludes it (a reclone pending or held, an in-place restore); the
    /// text names the guard.
    Excluded(String),
    /// It answered without an executed set (cannot be compared).
    NoGtidSet,
}

impl std::fmt::Display for Ineligible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Role => f.write_str("not a PrimaryCandidate"),
            Self::State(state) => f.write_str(state.as_str()),
            Self::FailedActive => f.write_str("the failed active site"),
            Self::Excluded(guard) => write!(f, "held out by {guard}"),
            Self::NoGtidSet => f.write_str("answered without an executed GTID set"),
        }
    }
}

/// The outcome of emergency target selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmergencyChoice {
    /// Promote this site.
    Promote {
        /// The chosen site.
        site: String,
        /// Why it was chosen.
        by: SelectedBy,
    },
    /// No PrimaryCandidate replica is eligible: the `NoPrimary` alert, and no action.
    NoCandidate {
        /// Each PrimaryCandidate other than the failed active site, and why it is not eligible.
        ineligible: Vec<(String, Ineligible)>,
    },
    /// No eligible candidate contains all the others: promoting any of them would drop
    /// transactions another one has. The operator does not guess (spec ambiguity 19); a human
    /// decides. Each site is listed with the transactions only it has, relative to the union of
    /// the others.
    Incomparable {
        /// The freshest-looking candidates, in declared order, with their unique transaction counts.
        sites: Vec<(String, u128)>,
    },
}

/// What a candidate holds of the history: its executed set and what its receiver wrote to the
/// relay log but the applier has not applied yet (`Retrieved_Gtid_Set`). A promotion applies
/// the received transactions before the site takes writes (the operator's `apply::promote`),
/// so this is the set the candidate will have executed once promoted. The topology document
/// ranks by `@@gtid_executed` "to minimise transactions lost"; ranking by what the promotion
/// will have executed serves that purpose and equals it for a candidate without a relay
/// backlog (operator README, "Spec says / we chose").
pub fn freshness(site: &SiteFacts) -> bloodraven_gtid::GtidSet {
    let executed = site.gtid_executed.clone().unwrap_or_default();
    match site.replica.as_ref() {
        Some(replica) => executed.union(&replica.retrieved_gtid_set),
        None => executed,
    }
}

/// Chooses the site to promote when the active site `failed_active` is unreachable.
///
/// Eligible: PrimaryCandidate, observed read-only (reachable, not writable), not the failed
/// active site, not excluded by a status guard (`excluded`: site → the guard's name), and with a
/// readable executed set. Among the eligible the freshest wins: the one whose [`freshness`]
/// set (executed ∪ retrieved) contains every other's. Equal sets fall to `priorities` (the
/// first eligible entry), then to declared order. A candidate whose replication channel was
/// reset stays eligible (ambiguity 22): freshness, not the channel, is what protects the data.
pub fn choose_emergency_target(
    facts: &[SiteFacts],
    failed_active: &str,
    priorities: &[String],
    excluded: &BTreeMap<String, String>,
) -> EmergencyChoice {
    let mut eligible = Vec::new();
    let mut ineligible = Vec::new();
    for site in facts.iter().filter(|site| site.is_candidate()) {
        let why = if site.name == failed_active {
            Some(Ineligible::FailedActive)
        } else if let Some(guard) = excluded.get(&site.name) {
            Some(Ineligible::Excluded(guard.clone()))
        } else if site.state != SiteState::ReadOnly {
            Some(Ineligible::State(site.state.clone()))
        } else if site.gtid_executed.is_none() {
            Some(Ineligible::NoGtidSet)
        } else {
            None
        };
        match why {
            Some(Ineligible::FailedActive) => {}
            Some(why) => ineligible.push((site.name.clone(), why)),
            None => eligible.push(site),
        }
    }
    let gtid = freshness;
    match eligible.as_slice() {
        [] => EmergencyChoice::NoCandidate { ineligible },
        [only] => {
            EmergencyChoice::Promote { site: only.name.clone(), by: SelectedBy::OnlyCandidate }
        }
        several => {
            // The freshest: sites whose set contains every other eligible set. Two such sites
            // contain each other, so their sets are equal.
            let freshest: Vec<&SiteFacts> = several
                .iter()
                .copied()
                .filter(|site| several.iter().all(|other| gtid(site).is_superset(&gtid(other))))
                .collect();
            match freshest.as_slice() {
                [] => EmergencyChoice::Incomparable {
                    sites: several
                        .iter()
                        .map(|site| {
                            let others = several
                                .iter()
                                .filter(|other| other.name != site.name)
                                .fold(bloodraven_gtid::GtidSet::new(), |all, other| {
                                    all.union(&gtid(other))
                                });
                            (site.name.clone(), gtid(site).difference(&others).count())
                        })
                        .collect(),
                },
                [only] => {
                    EmergencyChoice::Promote { site: only.name.clone(), by: SelectedBy::Freshness }
                }
                // `tied` keeps declared order, so `first` is the declared-order winner.
                tied @ [first, ..] => {
                    let by_priority = priorities
                        .iter()
                        .find_map(|name| tied.iter().find(|site| &site.name == name));
                    match by_priority {
                        Some(site) => EmergencyChoice::Promote {
                            site: site.name.clone(),
                            by: SelectedBy::Priority,
                        },
                        None => EmergencyChoice::Promote {
                            site: first.name.clone(),
                            by: SelectedBy::DeclaredOrder,
                        },
                    }
                }
            }
        }
    }
}
