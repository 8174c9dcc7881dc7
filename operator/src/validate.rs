//! Bad input the CRD's schema and CEL rules cannot catch (pure): a group stored under an older
//! CRD (no defaulting, no CEL), planted by hand, or simply outside what the rules can express.
//!
//! [`check`] returns every problem of a spec, each naming the field and what to do. A group
//! with any [`Problem`] is refused: the topology manager publishes `Ready=False` with reason
//! [`REASON`] and the problems, and takes no action on its sites (no fence, promotion, repoint,
//! DNS change); the controller does not apply workloads for it.

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroupSpec;
use bloodraven_crd::group::SiteRole;

/// The Ready condition's reason (and the Event's) for a refused group.
pub const REASON: &str = "InvalidSpec";

/// The spec's site bounds (schema: `minItems 2`, `maxItems 16`).
const MAX_SITES: usize = 16;
/// `failureThreshold` / `recoveryThreshold` schema bounds.
const THRESHOLDS: std::ops::RangeInclusive<u32> = 1..=20;

/// One reason the operator will not act on a group.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// Fewer than two PrimaryCandidate sites: no promotion target for the primary.
    #[error(
        "spec.sites has {count} PrimaryCandidate site(s) ({names}); the topology needs at least \
         two: give a second site role PrimaryCandidate"
    )]
    TooFewCandidates {
        /// How many.
        count: usize,
        /// Their names, comma separated (or `none`).
        names: String,
    },
    /// More than 16 sites.
    #[error("spec.sites has {count} sites; at most {MAX_SITES} are supported: remove sites")]
    TooManySites {
        /// How many.
        count: usize,
    },
    /// Two sites share a name.
    #[error(
        "spec.sites[{first}] and spec.sites[{second}] are both named {name:?}; site names must \
         be unique: rename one"
    )]
    DuplicateSiteName {
        /// The name.
        name: String,
        /// The first index.
        first: usize,
        /// The second index.
        second: usize,
    },
    /// Two sites share a `serverID` (MySQL replication skips events of its own `server_id`).
    #[error(
        "spec.sites[{first}] and spec.sites[{second}] both have serverID {server_id}; \
         replication silently skips a source with the replica's own server_id: give each site \
         its own serverID"
    )]
    DuplicateServerId {
        /// The id.
        server_id: u32,
        /// The first index.
        first: usize,
        /// The second index.
        second: usize,
    },
    /// A `sitePriorities` entry names no site.
    #[error(
        "spec.splitBrainPolicy.sitePriorities[{index}] is {name:?}, which names no site in \
         spec.sites: fix the name or remove the entry"
    )]
    UnknownPriority {
        /// The entry.
        name: String,
        /// Its index.
        index: usize,
    },
    /// A `sitePriorities` entry names a site that is not a PrimaryCandidate.
    #[error(
        "spec.splitBrainPolicy.sitePriorities[{index}] is {name:?}, a {role} site; only \
         PrimaryCandidate sites can win: remove the entry or make the site a PrimaryCandidate"
    )]
    PriorityNotCandidate {
        /// The entry.
        name: String,
        /// Its index.
        index: usize,
        /// The site's role.
        role: String,
    },
    /// A `sitePriorities` entry appears twice.
    #[error(
        "spec.splitBrainPolicy.sitePriorities[{second}] repeats {name:?} (also at index \
         {first}): list each site once"
    )]
    DuplicatePriority {
        /// The entry.
        name: String,
        /// The first index.
        first: usize,
        /// The second index.
        second: usize,
    },
    /// A site role this operator does not know (a newer CRD, or a hand edit).
    #[error(
        "spec.sites[{index}].role is {role:?}, which this operator does not know; use \
         PrimaryCandidate, DisasterRecovery or ReadOnly (or upgrade the operator)"
    )]
    UnknownRole {
        /// The site's index.
        index: usize,
        /// The role as written.
        role: String,
    },
    /// A duration field is unparsable or out of range.
    #[error("spec.{message}; use a duration like 2s or 5m within the field's bounds")]
    BadDuration {
        /// The field.
        field: &'static str,
        /// What is wrong, starting with the field's name.
        message: String,
    },
    /// A threshold is outside 1..=20.
    #[error("spec.{field} is {value}; it must be between 1 and 20")]
    BadThreshold {
        /// The field.
        field: &'static str,
        /// The value.
        value: u32,
    },
}

/// Every problem of `spec`, in field order; empty when the operator may act on it.
pub fn check(spec: &MysqlFailoverGroupSpec) -> Vec<Problem> {
    let mut problems = Vec::new();
    sites(spec, &mut problems);
    priorities(spec, &mut problems);
    settings(spec, &mut problems);
    problems
}

fn sites(spec: &MysqlFailoverGroupSpec, problems: &mut Vec<Problem>) {
    if spec.sites.len() > MAX_SITES {
        problems.push(Problem::TooManySites { count: spec.sites.len() });
    }
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    let mut ids: BTreeMap<u32, usize> = BTreeMap::new();
    for (index, site) in spec.sites.iter().enumerate() {
        if let Some(&first) = names.get(site.name.as_str()) {
            problems.push(Problem::DuplicateSiteName {
                name: site.name.clone(),
                first,
                second: index,
            });
        } else {
            names.insert(&site.name, index);
        }
        if let Some(&first) = ids.get(&site.server_id) {
            problems.push(Problem::DuplicateServerId {
                server_id: site.server_id,
                first,
                second: index,
            });
        } else {
            ids.insert(site.server_id, index);
        }
        if let Some(SiteRole::Unrecognized(role)) = &site.role {
            problems.push(Problem::UnknownRole { index, role: role.clone() });
        }
    }
    let candidates: Vec<&str> = spec
        .sites
        .iter()
        .filter(|site| site.effective_role() == SiteRole::PrimaryCandidate)
        .map(|site| site.name.as_str())
        .collect();
    if candidates.len() < 2 {
        let names = if candidates.is_empty() { "none".to_owned() } else { candidates.join(", ") };
        problems.push(Problem::TooFewCandidates { count: candidates.len(), names });
    }
}

fn priorities(spec: &MysqlFailoverGroupSpec, problems: &mut Vec<Problem>) {
    let Some(policy) = &spec.split_brain_policy else { return };
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, name) in policy.site_priorities.iter().enumerate() {
        if let Some(&first) = seen.get(name.as_str()) {
            problems.push(Problem::DuplicatePriority { name: name.clone(), first, second: index });
            continue;
        }
        seen.insert(name, index);
        match spec.site(name) {
            None => problems.push(Problem::UnknownPriority { name: name.clone(), index }),
            Some(site) => {
                let role = site.effective_role();
                if role != SiteRole::PrimaryCandidate {
                    problems.push(Problem::PriorityNotCandidate {
                        name: name.clone(),
                        index,
                        role: role.as_str().to_owned(),
                    });
                }
            }
        }
    }
}

fn settings(spec: &MysqlFailoverGroupSpec, problems: &mut Vec<Problem>) {
    if let Err(error) = spec.effective_poll_interval() {
        problems.push(Problem::BadDuration { field: "pollInterval", message: error.to_string() });
    }
    if let Err(error) = spec.effective_failover_cooldown() {
        problems
            .push(Problem::BadDuration { field: "failoverCooldown", message: error.to_string() });
    }
    for (field, value) in [
        ("failureThreshold", spec.failure_threshold),
        ("recoveryThreshold", spec.recovery_threshold),
    ] {
        if let Some(value) = value.filter(|value| !THRESHOLDS.contains(value)) {
            problems.push(Problem::BadThreshold { field, value });
        }
    }
}

/// The message of a refused group: every problem, then what happens meanwhile.
pub fn message(problems: &[Problem]) -> String {
    let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
    format!(
        "the operator does not act on this group until its spec is fixed (no failover, fencing, \
         repointing or DNS change): {}",
        listed.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::Duration;
    use bloodraven_crd::fixtures::GroupFixture;
    use bloodraven_crd::group::SplitBrainPolicy;

    use super::*;

    fn spec() -> MysqlFailoverGroupSpec {
        GroupFixture::three_sites().build().spec
    }

    fn priorities(names: &[&str]) -> Option<SplitBrainPolicy> {
        Some(SplitBrainPolicy { site_priorities: names.iter().map(|n| (*n).to_owned()).collect() })
    }

    #[test]
    fn the_fixture_group_is_valid() {
        assert_eq!(check(&spec()), []);
    }

    /// Each row: a change to the valid three-site group (iad, pdx PrimaryCandidate; fra
    /// DisasterRecovery), the problems it gives, and words its message must carry.
    #[test]
    fn every_problem_names_its_field_and_what_to_do() {
        type Edit = fn(&mut MysqlFailoverGroupSpec);
        let rows: &[(&str, Edit, &[&str])] = &[
            (
                "one candidate",
                |spec| {
                    spec.sites[1].role = Some(SiteRole::DisasterRecovery);
                    spec.split_brain_policy = None;
                },
                &["spec.sites has 1 PrimaryCandidate site(s) (iad)", "give a second site"],
            ),
            (
                "no candidate",
                |spec| {
                    for site in &mut spec.sites {
                        site.role = Some(SiteRole::ReadOnly);
                    }
                    spec.split_brain_policy = None;
                },
                &["0 PrimaryCandidate site(s) (none)"],
            ),
            (
                "duplicate names",
                |spec| spec.sites[2].name = "iad".to_owned(),
                &["spec.sites[0] and spec.sites[2] are both named \"iad\"", "rename one"],
            ),
            (
                "duplicate server ids",
                |spec| spec.sites[1].server_id = spec.sites[0].server_id,
                &["spec.sites[0] and spec.sites[1] both have serverID", "its own serverID"],
            ),
            (
                "unknown role",
                |spec| spec.sites[2].role = Some(SiteRole::Unrecognized("Witness".to_owned())),
                &["spec.sites[2].role is \"Witness\"", "upgrade the operator"],
            ),
            (
                "unknown priority",
                |spec| spec.split_brain_policy = priorities(&["pdx", "ord"]),
                &["sitePriorities[1] is \"ord\", which names no site", "fix the name"],
            ),
            (
                "priority on a DR site",
                |spec| spec.split_brain_policy = priorities(&["fra"]),
                &["sitePriorities[0] is \"fra\", a DisasterRecovery site"],
            ),
            (
                "repeated priority",
                |spec| spec.split_brain_policy = priorities(&["iad", "pdx", "iad"]),
                &["sitePriorities[2] repeats \"iad\" (also at index 0)"],
            ),
            (
                "unparsable poll interval",
                |spec| spec.poll_interval = Some(Duration::new("two seconds")),
                &["spec.pollInterval", "use a duration like 2s"],
            ),
            (
                "poll interval out of range",
                |spec| spec.poll_interval = Some(Duration::new("0s")),
                &["spec.pollInterval 0s is outside"],
            ),
            (
                "unparsable cooldown",
                |spec| spec.failover_cooldown = Some(Duration::new("-5m")),
                &["spec.failoverCooldown"],
            ),
            (
                "zero failure threshold",
                |spec| spec.failure_threshold = Some(0),
                &["spec.failureThreshold is 0; it must be between 1 and 20"],
            ),
            (
                "huge recovery threshold",
                |spec| spec.recovery_threshold = Some(4_000_000),
                &["spec.recoveryThreshold is 4000000"],
            ),
        ];
        for (name, edit, words) in rows {
            let mut spec = spec();
            edit(&mut spec);
            let problems = check(&spec);
            assert_eq!(problems.len(), 1, "{name}: {problems:?}");
            let text = message(&problems);
            for word in *words {
                assert!(text.contains(word), "{name}: {word:?} not in {text:?}");
            }
            assert!(text.starts_with("the operator does not act on this group"), "{text}");
        }
    }

    #[test]
    fn too_many_sites_and_every_problem_at_once() {
        let mut spec = spec();
        let template = spec.sites[0].clone();
        for index in 0..15 {
            let mut site = template.clone();
            site.name = format!("s{index}");
            site.server_id = 1000 + index;
            spec.sites.push(site);
        }
        spec.failure_threshold = Some(0);
        let problems = check(&spec);
        assert_eq!(
            problems,
            [
                Problem::TooManySites { count: 18 },
                Problem::BadThreshold { field: "failureThreshold", value: 0 },
            ]
        );
    }

    #[test]
    fn defaults_are_valid_and_the_bounds_are_inclusive() {
        let mut spec = spec();
        spec.poll_interval = Some(Duration::new("500ms"));
        spec.failure_threshold = Some(20);
        spec.recovery_threshold = Some(1);
        spec.failover_cooldown = Some(Duration::new("0s"));
        spec.split_brain_policy = priorities(&["pdx", "iad"]);
        assert_eq!(check(&spec), []);
        spec.poll_interval = Some(Duration::new("1m"));
        assert_eq!(check(&spec), []);
        spec.poll_interval = None;
        spec.failure_threshold = None;
        spec.recovery_threshold = None;
        spec.failover_cooldown = None;
        spec.split_brain_policy = None;
        assert_eq!(check(&spec), []);
    }
}
