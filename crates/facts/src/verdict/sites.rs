//! Sites: who writes compared with the active site, writable readers, unreachable and stale
//! sites, diverged sites, and whether anyone still observes them.

use bloodraven_crd::group::{
    RecoveryState, RestorePhase, SiteState, SourceConvergenceReason, SourceConvergenceState,
};
use jiff::{SignedDuration, Timestamp};

use super::planned::InFlight;
use super::{Finding, Inputs, Kind, Severity, format_span, since};
use crate::{SiteFacts, Writers, non_candidates_to_fence, writers};

/// The shortest staleness window: a site's `lastSeen` older than this (or than 30 polls, when
/// longer) says nothing about the present.
pub const MIN_STALE_AFTER: SignedDuration = SignedDuration::from_secs(300);

/// A leader Lease not renewed for this long means the operator is not running.
pub const LEASE_SILENT_AFTER: SignedDuration = SignedDuration::from_secs(60);

/// The staleness window of a group: 30 poll intervals, at least [`MIN_STALE_AFTER`].
pub fn stale_after(inputs: &Inputs<'_>) -> SignedDuration {
    let poll = inputs
        .group
        .spec
        .effective_poll_interval()
        .unwrap_or(bloodraven_crd::group::defaults::POLL_INTERVAL);
    let window = SignedDuration::try_from(poll * 30).unwrap_or(MIN_STALE_AFTER);
    window.max(MIN_STALE_AFTER)
}

/// The spec's sites joined with the status's observations, as [`SiteFacts`]: a site whose
/// `lastSeen` is older than the window, or missing, is `unknown`.
pub fn facts_from_status(inputs: &Inputs<'_>) -> Vec<SiteFacts> {
    let window = stale_after(inputs);
    let status = inputs.group.status.as_ref();
    inputs
        .group
        .spec
        .sites
        .iter()
        .map(|site| {
            let observed = status.and_then(|status| status.site(&site.name));
            let seen = observed.and_then(|observed| observed.last_seen.as_ref()).map(|time| time.0);
            let fresh = seen.is_some_and(|seen| inputs.now.duration_since(seen) <= window);
            let state = match observed.and_then(|observed| observed.state.clone()) {
                Some(state) if fresh => state,
                _ => SiteState::Unknown,
            };
            SiteFacts {
                name: site.name.clone(),
                role: site.effective_role(),
                state,
                unreachable: None,
                offline_mode: false,
                gtid_executed: None,
                replica: None,
                observed_at: seen,
            }
        })
        .collect()
}

fn last_seen(now: Timestamp, site: &SiteFacts) -> String {
    site.observed_at
        .map_or_else(|| "never seen".to_owned(), |seen| format!("last seen {}", since(now, seen)))
}

pub(super) fn check(inputs: &Inputs<'_>, in_flight: Option<&InFlight>, out: &mut Vec<Finding>) {
    let now = inputs.now;
    let facts = facts_from_status(inputs);
    let status = inputs.group.status.as_ref();
    let active = status.and_then(|status| status.active_site.as_deref());
    let held = inputs.group.automation_held();
    let window = stale_after(inputs);

    // Is anyone watching? Every site stale (with at least one ever seen), or a silent Lease.
    let newest_seen = facts.iter().filter_map(|site| site.observed_at).max();
    let all_stale =
        !facts.is_empty() && newest_seen.is_some_and(|newest| now.duration_since(newest) > window);
    if all_stale && let Some(newest) = newest_seen {
        out.push(
            Finding::new(
                Severity::Critical,
                Kind::OperatorSilent,
                format!("no site was observed since {}: the operator is not updating this status", since(now, newest)),
            )
            .fact(format!("max(status.sites[].lastSeen)={}", super::format_time(newest)))
            .action("check the operator's pods and leader Lease; every state below is the last one seen"),
        );
    }
    if let Some(renewed) = inputs.operator_lease_renewed
        && now.duration_since(renewed) > LEASE_SILENT_AFTER
    {
        out.push(
            Finding::new(
                Severity::Critical,
                Kind::OperatorSilent,
                format!("the operator's leader Lease was last renewed {}", since(now, renewed)),
            )
            .fact(format!("lease.spec.renewTime={}", super::format_time(renewed)))
            .action(
                "no automatic failover runs while no operator leads; check the operator's pods",
            ),
        );
    }

    // A group that never bootstrapped (its initial restore runs or failed, no active site
    // yet) has no writer by design: the restore's finding says why.
    let bootstrapping = active.is_none()
        && status
            .and_then(|status| status.restore.as_ref())
            .and_then(|restore| restore.phase.as_ref())
            .is_some_and(|phase| *phase != RestorePhase::Succeeded);
    if bootstrapping {
        return;
    }
    let describe = inputs.kubectl("describe");
    match writers(&facts, active) {
        Writers::None if in_flight.is_some_and(InFlight::blocks_writes) => {
            // The planned failover's finding says since when and until when.
        }
        Writers::None if !all_stale => {
            let active_state = active.and_then(|name| facts.iter().find(|site| site.name == name));
            let cause = match active_state {
                Some(site) => format!(
                    "no site is writable: the active site {} is {}",
                    site.name,
                    site.state.as_str()
                ),
                None => "no site is writable and no active site is recorded".to_owned(),
            };
            out.push(
                Finding::new(Severity::Critical, Kind::NoWriter, cause)
                    .fact(format!(
                        "status.activeSite={}; {}",
                        active.unwrap_or("<none>"),
                        states(&facts)
                    ))
                    .action(if held {
                        "automation is held, so no emergency failover runs: see the hold"
                    } else {
                        "writes are down; the operator fails over after failureThreshold polls, read its Events"
                    })
                    .command(describe.clone()),
            );
        }
        Writers::None => {}
        Writers::Consistent { .. } => {}
        Writers::Moved { recorded, observed } => {
            let reverted = in_flight
                .filter(|run| run.source.as_deref() == Some(observed.as_str()))
                .and_then(|run| run.target.clone());
            let (severity, cause) = match reverted {
                Some(target) => (
                    Severity::Critical,
                    format!(
                        "{observed} is writable again after the fence; {target} was being promoted"
                    ),
                ),
                None => (
                    Severity::Warning,
                    format!(
                        "{observed} is the only writer, but status.activeSite is {}",
                        recorded.as_deref().unwrap_or("<none>")
                    ),
                ),
            };
            out.push(
                Finding::new(severity, Kind::WriterMoved, cause)
                    .site(&observed)
                    .fact(format!(
                        "status.activeSite={}; status.sites[{observed}].state=writable",
                        recorded.as_deref().unwrap_or("<none>")
                    ))
                    .action("the operator records the writer on its next poll; if this stays, read its Events")
                    .command(describe.clone()),
            );
        }
        Writers::NotCandidate { site, role } => {
            out.push(
                Finding::new(
                    Severity::Critical,
                    Kind::NoWriter,
                    format!("no PrimaryCandidate is writable; only {site} ({}) is", role.as_str()),
                )
                .site(&site)
                .fact(states(&facts))
                .action("the operator fences it; promote a PrimaryCandidate")
                .command(describe.clone()),
            );
        }
        Writers::Several { sites } => {
            let names = sites.join(", ");
            let action = if held {
                "automation is held: stop writes on the site without the acknowledged writes, fence it (super_read_only=ON), then acknowledge the hold"
            } else {
                "split brain: the operator fences the loser by splitBrainPolicy.sitePriorities; if both stay writable, fence one by hand"
            };
            out.push(
                Finding::new(
                    Severity::Critical,
                    Kind::SplitBrain,
                    format!("{} sites are writable: {names}", sites.len()),
                )
                .fact(
                    sites
                        .iter()
                        .map(|site| format!("status.sites[{site}].state=writable"))
                        .collect::<Vec<_>>()
                        .join("; "),
                )
                .action(action)
                .command(describe.clone()),
            );
        }
    }

    for name in non_candidates_to_fence(&facts) {
        let role =
            facts.iter().find(|site| site.name == name).map_or("?", |site| site.role.as_str());
        out.push(
            Finding::new(Severity::Critical, Kind::NonCandidateWritable, format!("{name} ({role}) is writable"))
                .site(&name)
                .fact(format!("status.sites[{name}].state=writable; spec role {role}"))
                .action("the operator fences it on every poll; writes sent there will be lost to the group, find who made it writable"),
        );
    }

    if all_stale {
        return;
    }
    for site in &facts {
        let observed = status.and_then(|status| status.site(&site.name));
        let reported = observed.and_then(|observed| observed.state.clone());
        let is_active = active == Some(site.name.as_str());
        match (&site.state, reported) {
            (SiteState::Unreachable, _) => out.push(
                Finding::new(
                    if is_active { Severity::Critical } else { Severity::Warning },
                    Kind::SiteUnreachable,
                    format!("{} does not answer ({})", site.name, last_seen(now, site)),
                )
                .site(&site.name)
                .fact(format!("status.sites[{}].state=unreachable", site.name))
                .action(if is_active {
                    "the active site is down; the operator fails over after failureThreshold polls unless held"
                } else {
                    "check the site's pod and network; it cannot be promoted while down"
                }),
            ),
            (SiteState::Unknown, reported) => {
                let why = match (&site.observed_at, reported) {
                    (Some(seen), Some(state)) if now.duration_since(*seen) > window => format!(
                        "its last reading ({}) is older than {}",
                        state.as_str(),
                        format_span(window.as_secs())
                    ),
                    (_, Some(state)) if state != SiteState::Unknown => format!("reported {}", state.as_str()),
                    _ => "its state is unknown".to_owned(),
                };
                out.push(
                    Finding::new(
                        if is_active { Severity::Critical } else { Severity::Warning },
                        Kind::SiteStale,
                        format!("{}: {why} ({})", site.name, last_seen(now, site)),
                    )
                    .site(&site.name)
                    .fact(format!(
                        "status.sites[{}].lastSeen={}",
                        site.name,
                        site.observed_at.map_or_else(|| "<none>".to_owned(), super::format_time)
                    ))
                    .action("the operator cannot read this site: check its pod, the sidecar and credentials"),
                );
            }
            _ => {}
        }
        if let Some(observed) = observed {
            if observed.recovery_state == Some(RecoveryState::RecoveryBlocked)
                || observed.divergent_gtid.as_deref().is_some_and(|set| !set.is_empty())
            {
                let set =
                    observed.divergent_gtid.clone().unwrap_or_else(|| "<not recorded>".to_owned());
                out.push(
                    Finding::new(
                        Severity::Critical,
                        Kind::SiteDiverged,
                        format!(
                            "{} holds {} transaction(s) the primary does not",
                            site.name,
                            observed.divergent_transaction_count.map_or_else(|| "some".to_owned(), |n| n.to_string())
                        ),
                    )
                    .site(&site.name)
                    .fact(format!("status.sites[{}].divergentGtid={set}", site.name))
                    .action("recovery is blocked: keep or discard these transactions by hand, then reclone the site"),
                );
            } else if observed.source_convergence_state == Some(SourceConvergenceState::Blocked)
                // A site queued for a post-restore reclone is blocked on purpose: the
                // queue's finding covers it.
                && observed.source_convergence_reason
                    != Some(SourceConvergenceReason::RestorePeerHold)
            {
                out.push(
                    Finding::new(
                        Severity::Warning,
                        Kind::SiteDiverged,
                        format!(
                            "{} cannot be repointed to the primary ({})",
                            site.name,
                            observed
                                .source_convergence_reason
                                .as_ref()
                                .map_or("Blocked", |r| r.as_str())
                        ),
                    )
                    .site(&site.name)
                    .fact(format!("status.sites[{}].sourceConvergenceState=Blocked", site.name))
                    .action("the follower diverged from the primary; reclone it"),
                );
            }
        }
    }
}

fn states(facts: &[SiteFacts]) -> String {
    facts
        .iter()
        .map(|site| format!("status.sites[{}].state={}", site.name, site.state.as_str()))
        .collect::<Vec<_>>()
        .join("; ")
}
