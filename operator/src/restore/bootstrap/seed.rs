//! The topology manager's fresh-deploy bootstrap while `spec.initFromBackup` has not
//! succeeded (pure): it only seeds. Once every site answers and is empty, the other sites are
//! fenced, the seed is made writable and published as the active site, and nothing is cloned,
//! repointed or promoted elsewhere. A seed that came back fenced (its mysqld or sidecar
//! restarted mid-load) is made writable again as long as every other site is read-only, empty
//! and has no replication channel. After the restore succeeds, the empty sites are cloned from
//! the seed ([`clone_targets`]) before convergence repoints them.
//!
//! Backup-and-restore document, "Restore at bootstrap" and "Applications wait for the restore".

use std::collections::BTreeMap;

use bloodraven_crd::group::{RestoreStatus, SiteState};
use bloodraven_facts::{SelectedBy, SiteFacts, WinnerBy};
use jiff::Timestamp;
use serde_json::Value;

use super::plan::empty;
use crate::topology::{FenceWhy, PromoteWhy, Step};

/// The guard name of a site waiting for its post-bootstrap clone (kept out of promotion and
/// convergence meanwhile).
pub const CLONE_PENDING: &str = "BootstrapClonePending";

/// What the seeding decides from.
#[derive(Clone, Debug)]
pub struct SeedInput<'a> {
    /// This poll's facts, in declared order.
    pub facts: &'a [SiteFacts],
    /// `status.activeSite`.
    pub recorded_active: Option<&'a str>,
    /// `status.restore`.
    pub restore: &'a RestoreStatus,
    /// The default seed (`plan::default_seed`).
    pub default_seed: Option<&'a str>,
    /// Whether the seed came from `sitePriorities` (for the promotion's words).
    pub by_priority: bool,
}

/// The seed in force: `status.restore.targetSite` once the Job is recorded, else
/// `status.activeSite`, else the default seed.
pub fn seed<'a>(input: &SeedInput<'a>) -> Option<&'a str> {
    input
        .restore
        .job_name
        .as_ref()
        .and(input.restore.target_site.as_deref())
        .or(input.recorded_active)
        .or(input.default_seed)
}

/// One poll's topology steps while the group is gated.
pub fn seed_steps(input: &SeedInput<'_>) -> Vec<Step> {
    let Some(seed) = seed(input) else { return Vec::new() };
    let fact = |name: &str| input.facts.iter().find(|fact| fact.name == name);
    let mut steps: Vec<Step> = input
        .facts
        .iter()
        .filter(|fact| fact.name != seed && fact.is_writable())
        .map(|fact| Step::Fence {
            site: fact.name.clone(),
            why: FenceWhy::SplitBrainLoser {
                winner: seed.to_owned(),
                by: if input.recorded_active.is_some() {
                    WinnerBy::RecordedActive
                } else {
                    WinnerBy::Priority
                },
            },
        })
        .collect();
    let Some(seed_fact) = fact(seed) else { return steps };
    let others_pristine = input
        .facts
        .iter()
        .filter(|f| f.name != seed)
        .all(|f| f.state == SiteState::ReadOnly && empty(f) && f.replica.is_none());
    match input.recorded_active {
        None => {
            let everyone_empty = input
                .facts
                .iter()
                .all(|f| matches!(f.state, SiteState::ReadOnly | SiteState::Writable) && empty(f));
            if !everyone_empty {
                return steps;
            }
            if seed_fact.state == SiteState::ReadOnly {
                let by = if input.by_priority {
                    SelectedBy::Priority
                } else {
                    SelectedBy::DeclaredOrder
                };
                steps.push(Step::Promote {
                    site: seed.to_owned(),
                    by: PromoteWhy::FirstPrimary { by },
                });
            }
            steps.push(Step::RecordActive { site: seed.to_owned(), failover: false });
        }
        Some(_) => {
            // Lift the seed's fence (a restart mid-load), never anyone else's.
            if seed_fact.state == SiteState::ReadOnly && others_pristine {
                steps.push(Step::Promote { site: seed.to_owned(), by: PromoteWhy::Reassert });
            }
        }
    }
    steps
}

/// After the restore succeeded: the sites to clone from the writable, non-empty active site
/// (reachable, read-only, empty, not held by another guard).
pub fn clone_targets(
    facts: &[SiteFacts],
    active: Option<&str>,
    excluded: &BTreeMap<String, String>,
) -> Vec<String> {
    let Some(active) = active else { return Vec::new() };
    let Some(primary) = facts.iter().find(|fact| fact.name == active) else { return Vec::new() };
    if !primary.is_writable() || empty(primary) || primary.gtid_executed.is_none() {
        return Vec::new();
    }
    facts
        .iter()
        .filter(|fact| fact.name != active && !excluded.contains_key(&fact.name))
        .filter(|fact| fact.state == SiteState::ReadOnly && empty(fact))
        .map(|fact| fact.name.clone())
        .collect()
}

/// Rewrites a rendered status body (`crate::status::render`): while the group is gated, Ready
/// is False with reason InitFromBackupInProgress (InitFromBackupFailed after a failure), the
/// restore's message first; after success, while `cloning` is not empty, Ready stays False
/// (InitFromBackupInProgress) naming the sites still to clone.
pub fn apply_ready(
    body: &mut Value,
    restore: Option<&RestoreStatus>,
    gated: bool,
    cloning: &[String],
    now: Timestamp,
) {
    let (reason, text) = if gated {
        let failed = restore.and_then(|r| r.phase.as_ref())
            == Some(&bloodraven_crd::group::RestorePhase::Failed);
        let reason = if failed { "InitFromBackupFailed" } else { "InitFromBackupInProgress" };
        let message = restore.and_then(|r| r.message.clone()).unwrap_or_else(|| {
            "the bootstrap restore (spec.initFromBackup) has not started".to_owned()
        });
        (reason, format!("bootstrap restore: {message}"))
    } else if !cloning.is_empty() {
        (
            "InitFromBackupInProgress",
            format!("bootstrap restore succeeded; cloning {} from the seed", cloning.join(", ")),
        )
    } else {
        return;
    };
    let Some(conditions) = body.pointer_mut("/status/conditions").and_then(Value::as_array_mut)
    else {
        return;
    };
    for condition in conditions {
        if condition.get("type").and_then(Value::as_str) != Some("Ready") {
            continue;
        }
        if condition.get("status").and_then(Value::as_str) != Some("False") {
            condition["lastTransitionTime"] = Value::from(now.to_string());
        }
        condition["status"] = Value::from("False");
        condition["reason"] = Value::from(reason);
        condition["message"] = Value::from(text.clone());
    }
}
