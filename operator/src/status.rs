//! Status rendering (pure): one poll's facts, plan and outcome → the fields of
//! `MysqlFailoverGroup.status` the topology manager owns (`activeSite`, `sites`,
//! `lastFailover`, the Ready and Degraded conditions), applied by server-side apply with the
//! field manager [`FIELD_MANAGER`].

use bloodraven_crd::group::SourceConvergenceState;
use bloodraven_crd::group::{
    LastFailover, SiteRole, SiteState, SiteStatus, SourceConvergenceReason,
};
use bloodraven_crd::{Condition, ConditionReason, ConditionStatus, ConditionType};
use bloodraven_facts::SiteFacts;
use bloodraven_gtid::GtidSet;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::topology::{Alert, Step};

/// The field manager of every server-side apply the operator sends.
pub const FIELD_MANAGER: &str = "bloodraven-operator";

/// What a poll tells the status.
#[derive(Clone, Debug)]
pub struct PollOutcome<'a> {
    /// Every site, declared order.
    pub facts: &'a [SiteFacts],
    /// The active site after this poll's steps.
    pub active: Option<&'a str>,
    /// The planned steps.
    pub steps: &'a [Step],
    /// Steps that failed, with the error's message.
    pub failures: &'a [String],
    /// Followers currently blocked (divergent set).
    pub blocked: &'a [(String, GtidSet)],
    /// The last failover (unchanged or new).
    pub last_failover: Option<LastFailover>,
    /// The previous conditions (their transition times are kept when the status is unchanged).
    pub previous: &'a [Condition],
    /// The previous per-site status: a site that does not answer keeps the `lastSeen` it had.
    pub previous_sites: &'a [SiteStatus],
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// The poll's time.
    pub now: Timestamp,
}

/// A Kubernetes `Time` of a jiff timestamp.
pub fn time(at: Timestamp) -> Time {
    Time(at)
}

fn site_status(fact: &SiteFacts, outcome: &PollOutcome<'_>) -> SiteStatus {
    let is_primary = outcome.active == Some(fact.name.as_str());
    let replica = fact.replica.as_ref();
    let replicating = replica.map(|replica| replica.io_running && replica.sql_running);
    let blocked = outcome.blocked.iter().find(|(site, _)| *site == fact.name);
    let pending = outcome
        .steps
        .iter()
        .any(|step| matches!(step, Step::Repoint { site, .. } if *site == fact.name));
    let (convergence, reason) = match (is_primary, blocked, fact.state.clone()) {
        (true, _, _) => (None, None),
        (false, Some(_), _) => {
            (Some(SourceConvergenceState::Blocked), Some(SourceConvergenceReason::GtidDiverged))
        }
        (false, None, SiteState::ReadOnly) if pending => {
            (Some(SourceConvergenceState::Pending), None)
        }
        (false, None, SiteState::ReadOnly) if outcome.active.is_some() => {
            (Some(SourceConvergenceState::Converged), None)
        }
        _ => (None, None),
    };
    SiteStatus {
        name: fact.name.clone(),
        state: Some(fact.state.clone()),
        // Seen now, or when it last answered (an unreachable site is never "never seen").
        last_seen: fact.observed_at.filter(|_| fact.gtid_executed.is_some()).map(time).or_else(
            || {
                outcome
                    .previous_sites
                    .iter()
                    .find(|site| site.name == fact.name)
                    .and_then(|site| site.last_seen.clone())
            },
        ),
        gtid_executed: fact.gtid_executed.as_ref().map(ToString::to_string),
        replicating: if is_primary { Some(false) } else { replicating },
        seconds_behind_source: replica.and_then(|replica| replica.seconds_behind_source),
        source_convergence_state: convergence,
        source_convergence_reason: reason,
        divergent_gtid: blocked.map(|(_, set)| set.to_string()),
        divergent_transaction_count: blocked
            .map(|(_, set)| i64::try_from(set.count()).unwrap_or(i64::MAX)),
        ..SiteStatus::default()
    }
}

/// Sites with why each one is named: `pdx (unreachable), fra (not a PrimaryCandidate)`.
fn sites_with<T: std::fmt::Display>(sites: &[(String, T)]) -> String {
    if sites.is_empty() {
        return "none".to_owned();
    }
    sites.iter().map(|(site, why)| format!("{site} ({why})")).collect::<Vec<_>>().join(", ")
}

/// Site names joined with `, `.
fn names(sites: &[String]) -> String {
    if sites.is_empty() { "none".to_owned() } else { sites.join(", ") }
}

/// The plain-words text of an alert: the Degraded/Ready condition message and the alert
/// Event's note (one source of wording).
pub(crate) fn alert_text(alert: &Alert) -> String {
    match alert {
        Alert::NoPrimary { failed, ineligible } => format!(
            "no PrimaryCandidate can be promoted (failed active site: {}; not eligible: {}): \
             restore a candidate site or promote one by hand",
            failed.as_deref().unwrap_or("none recorded"),
            sites_with(ineligible)
        ),
        Alert::AwaitingCandidates { silent, failure_threshold } => format!(
            "no first primary yet: waiting for PrimaryCandidates {} to answer, for up to \
             {failure_threshold} polls (spec.failureThreshold) after the first candidate \
             answered; the operator then chooses among those that answered",
            sites_with(silent)
        ),
        Alert::CandidatesIncomparable { sites } => format!(
            "the candidates' executed sets are incomparable (transactions only each one has: \
             {}): choose the site to keep and promote it with a planned failover",
            sites_with(sites)
        ),
        Alert::SplitBrainUnresolved { writable, why } => format!(
            "split brain: {} are writable and no winner can be named ({why}): set \
             spec.splitBrainPolicy.sitePriorities or fence one by hand",
            names(writable)
        ),
        Alert::Cooldown { until, would_promote } => format!(
            "a failover to {would_promote} is due but the anti-flap cooldown runs until \
             {until}: wait, or promote by hand"
        ),
        Alert::Deferred(deferral) => {
            format!("automatic actions are deferred ({deferral}): see the planned failover")
        }
        Alert::FollowerDiverged { site, divergent } => format!(
            "site {site} holds {divergent} that the primary lacks (Blocked/GTIDDiverged): \
             reclone it or reconcile the transactions by hand; they are kept"
        ),
        Alert::ReassertBlocked { site, ahead } => format!(
            "the active site {site} is read-only and {} hold transactions it lacks: \
             promote the freshest site with a planned failover",
            names(ahead)
        ),
        Alert::ActiveUnreachable { site, polls } => format!(
            "the active site {site} has been unreachable for {polls} polls: failover follows \
             at spec.failureThreshold"
        ),
        Alert::ActiveNotCandidate { site, role } => format!(
            "the active site {site} is now a {} site in the spec: run a planned failover to a \
             candidate or restore its role",
            role.as_str()
        ),
        Alert::ActiveUnknown { site } => format!(
            "the active site {site} cannot be classified: check the operator's credentials \
             and the site's logs"
        ),
        Alert::RestoreFrozen => "a full-instance in-place restore runs: no promotion, clone or \
             recovery action fires until it ends (status.restoreInPlace)"
            .to_owned(),
    }
}

/// "Fewer than two reachable PrimaryCandidates": the primary answers but no other
/// PrimaryCandidate is a reachable read-only follower, so an emergency failover would find no
/// target.
fn no_standby(facts: &[SiteFacts], primary: &str) -> Option<String> {
    let others: Vec<&SiteFacts> = facts
        .iter()
        .filter(|fact| fact.name != primary && fact.role == SiteRole::PrimaryCandidate)
        .collect();
    if others.iter().any(|fact| fact.state == SiteState::ReadOnly) {
        return None;
    }
    let names: Vec<&str> = others.iter().map(|fact| fact.name.as_str()).collect();
    Some(format!(
        "no standby: {primary} is the only answering PrimaryCandidate, so an emergency failover \
         would find no target: restore {}",
        if names.is_empty() {
            "a second PrimaryCandidate site".to_owned()
        } else {
            names.join(", ")
        }
    ))
}

fn condition(
    type_: ConditionType,
    status: ConditionStatus,
    reason: &str,
    message: String,
    outcome: &PollOutcome<'_>,
) -> Condition {
    let previous = outcome.previous.iter().find(|previous| previous.type_ == type_);
    let transition = match previous {
        Some(previous) if previous.status == status => {
            previous.last_transition_time.clone().unwrap_or(time(outcome.now))
        }
        _ => time(outcome.now),
    };
    Condition {
        reason: Some(ConditionReason::from(reason)),
        message: Some(message),
        observed_generation: outcome.generation,
        last_transition_time: Some(transition),
        ..Condition::new(type_, status)
    }
}

/// The Ready and Degraded conditions.
pub fn conditions(outcome: &PollOutcome<'_>) -> Vec<Condition> {
    let alerts: Vec<String> = outcome
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Alert(alert) => Some(alert_text(alert)),
            _ => None,
        })
        .collect();
    let primary = outcome.active.and_then(|active| {
        outcome.facts.iter().find(|fact| fact.name == active && fact.is_writable())
    });
    let ready = match primary {
        Some(primary) if alerts.is_empty() && outcome.failures.is_empty() => condition(
            ConditionType::Ready,
            ConditionStatus::True,
            "Healthy",
            format!("site {} is the writable primary", primary.name),
            outcome,
        ),
        Some(primary) => condition(
            ConditionType::Ready,
            ConditionStatus::True,
            "Healthy",
            format!("site {} is the writable primary; see Degraded", primary.name),
            outcome,
        ),
        None => condition(
            ConditionType::Ready,
            ConditionStatus::False,
            "NoPrimary",
            if alerts.is_empty() {
                "no writable primary yet: the topology manager is electing one".to_owned()
            } else {
                alerts.join("; ")
            },
            outcome,
        ),
    };
    let mut problems: Vec<String> = outcome
        .facts
        .iter()
        .filter(|fact| matches!(fact.state, SiteState::Unreachable | SiteState::Unknown))
        .map(|fact| {
            format!(
                "site {} is {}{}: check its pod, its network and the operator's credentials",
                fact.name,
                fact.state.as_str(),
                fact.unreachable.map(|why| format!(" ({why})")).unwrap_or_default()
            )
        })
        .collect();
    if let Some(primary) = primary {
        problems.extend(no_standby(outcome.facts, &primary.name));
    }
    problems.extend(alerts);
    problems.extend(outcome.failures.iter().cloned());
    let degraded = if problems.is_empty() {
        condition(
            ConditionType::Degraded,
            ConditionStatus::False,
            "Healthy",
            "every site answers and every follower replicates from the primary".to_owned(),
            outcome,
        )
    } else {
        condition(
            ConditionType::Degraded,
            ConditionStatus::True,
            "Degraded",
            problems.join("; "),
            outcome,
        )
    };
    vec![ready, degraded]
}

/// The server-side apply body of the status subresource.
pub fn render(outcome: &PollOutcome<'_>) -> serde_json::Value {
    let sites: Vec<SiteStatus> =
        outcome.facts.iter().map(|fact| site_status(fact, outcome)).collect();
    // `conditions` is an atomic list: the planned-failover writer's AutomaticFailoverHeld and
    // the PITR roll-up's PITRArchiveReady are carried, or this apply would drop them.
    let mut conditions = conditions(outcome);
    conditions.extend(
        outcome
            .previous
            .iter()
            .filter(|condition| {
                matches!(
                    condition.type_,
                    ConditionType::AutomaticFailoverHeld | ConditionType::PitrArchiveReady
                )
            })
            .cloned(),
    );
    let mut status = serde_json::json!({
        "sites": sites,
        "conditions": conditions,
    });
    if let Some(active) = outcome.active {
        status["activeSite"] = serde_json::Value::from(active);
    }
    if let Some(last) = &outcome.last_failover {
        status["lastFailover"] = serde_json::to_value(last).unwrap_or_default();
    }
    if let Some(generation) = outcome.generation {
        status["observedGeneration"] = serde_json::Value::from(generation);
    }
    serde_json::json!({
        "apiVersion": "shipstream.io/v1alpha1",
        "kind": "MysqlFailoverGroup",
        "status": status,
    })
}

/// How long a status that differs from the last applied one only in the sites' `lastSeen`
/// times goes unapplied: `lastSeen` is at most this far behind the newest answer (the console
/// calls a site stale only after 30 poll intervals, at least five minutes).
pub const LAST_SEEN_REFRESH: std::time::Duration = std::time::Duration::from_secs(10);

/// `body` (a [`render`] result) without the sites' `lastSeen`: what must be applied again when
/// it changes.
pub fn without_last_seen(body: &serde_json::Value) -> serde_json::Value {
    let mut masked = body.clone();
    if let Some(sites) = masked["status"]["sites"].as_array_mut() {
        for site in sites {
            if let Some(site) = site.as_object_mut() {
                site.remove("lastSeen");
            }
        }
    }
    masked
}

/// The status a poll last applied: its body without `lastSeen`, the group's resourceVersion
/// the apply returned, and when.
#[derive(Clone, Debug)]
pub struct AppliedStatus {
    /// [`without_last_seen`] of the applied body.
    pub masked: serde_json::Value,
    /// The group's resourceVersion after the apply.
    pub resource_version: String,
    /// When it was applied.
    pub at: std::time::Instant,
}

impl AppliedStatus {
    /// Whether applying a body whose [`without_last_seen`] is `masked` to the group read at
    /// `resource_version` at `now` would change nothing but `lastSeen`, on an object nobody
    /// changed since, within [`LAST_SEEN_REFRESH`]: then it is not applied.
    pub fn current(
        &self,
        masked: &serde_json::Value,
        resource_version: Option<&str>,
        now: std::time::Instant,
    ) -> bool {
        resource_version == Some(self.resource_version.as_str())
            && now.saturating_duration_since(self.at) < LAST_SEEN_REFRESH
            && *masked == self.masked
    }
}

/// The status of a group the operator refuses to act on ([`crate::validate`]): `Ready=False`
/// and `Degraded=True` with reason `InvalidSpec` and `message`; the record (`activeSite`,
/// `lastFailover`, `sites`) is carried unchanged, since server-side apply drops fields this
/// manager stops sending.
pub fn render_refused(
    previous: &bloodraven_crd::MysqlFailoverGroupStatus,
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) -> serde_json::Value {
    let conditions: Vec<Condition> = [
        (ConditionType::Ready, ConditionStatus::False),
        (ConditionType::Degraded, ConditionStatus::True),
    ]
    .into_iter()
    .map(|(type_, status)| {
        let transition = previous
            .condition(&type_)
            .filter(|old| {
                old.status == status
                    && old.reason.as_ref().map(ConditionReason::as_str)
                        == Some(crate::validate::REASON)
            })
            .and_then(|old| old.last_transition_time.clone())
            .unwrap_or(time(now));
        Condition {
            reason: Some(ConditionReason::from(crate::validate::REASON)),
            message: Some(message.to_owned()),
            observed_generation: generation,
            last_transition_time: Some(transition),
            ..Condition::new(type_, status)
        }
    })
    .collect();
    let mut status = serde_json::json!({ "conditions": conditions, "sites": previous.sites });
    if let Some(active) = &previous.active_site {
        status["activeSite"] = serde_json::Value::from(active.as_str());
    }
    if let Some(last) = &previous.last_failover {
        status["lastFailover"] = serde_json::to_value(last).unwrap_or_default();
    }
    if let Some(generation) = generation {
        status["observedGeneration"] = serde_json::Value::from(generation);
    }
    serde_json::json!({
        "apiVersion": "shipstream.io/v1alpha1",
        "kind": "MysqlFailoverGroup",
        "status": status,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_status_is_applied_again_when_more_than_last_seen_changed_or_the_object_moved() {
        let body = |state: &str, seen: &str| {
            without_last_seen(&serde_json::json!({ "status": { "sites": [
                { "name": "iad", "state": state, "lastSeen": seen },
            ]}}))
        };
        let at = std::time::Instant::now();
        let applied = AppliedStatus {
            masked: body("writable", "2026-11-30T17:00:00Z"),
            resource_version: "41".to_owned(),
            at,
        };
        let later = at + std::time::Duration::from_secs(2);
        assert!(applied.current(&body("writable", "2026-11-30T17:00:02Z"), Some("41"), later));
        assert!(!applied.current(&body("unreachable", "2026-11-30T17:00:02Z"), Some("41"), later));
        assert!(!applied.current(&body("writable", "2026-11-30T17:00:02Z"), Some("42"), later));
        assert!(!applied.current(&body("writable", "2026-11-30T17:00:02Z"), None, later));
        let stale = at + LAST_SEEN_REFRESH;
        assert!(!applied.current(&body("writable", "2026-11-30T17:00:10Z"), Some("41"), stale));
    }

    use bloodraven_crd::group::SiteRole;
    use bloodraven_facts::{ReplicaObservation, Unreachable};

    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn fact(name: &str, state: SiteState, replicating: bool) -> SiteFacts {
        let answered = matches!(state, SiteState::Writable | SiteState::ReadOnly);
        SiteFacts {
            name: name.to_owned(),
            role: SiteRole::PrimaryCandidate,
            state: state.clone(),
            unreachable: (state == SiteState::Unreachable).then_some(Unreachable::Refused),
            offline_mode: false,
            gtid_executed: answered
                .then(|| "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5".parse().unwrap()),
            replica: replicating.then(|| ReplicaObservation {
                source_host: "127.0.0.1".to_owned(),
                source_port: 3306,
                io_running: true,
                sql_running: true,
                seconds_behind_source: Some(0),
                auto_position: true,
                ..ReplicaObservation::default()
            }),
            observed_at: Some(at("2026-11-30T17:00:00Z")),
        }
    }

    fn outcome<'a>(
        facts: &'a [SiteFacts],
        active: Option<&'a str>,
        steps: &'a [Step],
        blocked: &'a [(String, GtidSet)],
        previous: &'a [Condition],
    ) -> PollOutcome<'a> {
        PollOutcome {
            facts,
            active,
            steps,
            failures: &[],
            blocked,
            last_failover: None,
            previous,
            previous_sites: &[],
            generation: Some(3),
            now: at("2026-11-30T17:00:01Z"),
        }
    }

    #[test]
    fn the_topology_apply_carries_the_pitr_roll_ups_condition() {
        let facts =
            [fact("iad", SiteState::Writable, false), fact("pdx", SiteState::ReadOnly, true)];
        let pitr = Condition::new(ConditionType::PitrArchiveReady, ConditionStatus::False);
        let body = render(&outcome(&facts, Some("iad"), &[], &[], std::slice::from_ref(&pitr)));
        let conditions = body["status"]["conditions"].as_array().unwrap();
        assert!(
            conditions.iter().any(|c| c["type"] == "PITRArchiveReady" && c["status"] == "False"),
            "{body}"
        );
    }

    #[test]
    fn a_converged_group_is_ready_and_not_degraded() {
        let facts =
            [fact("iad", SiteState::Writable, false), fact("pdx", SiteState::ReadOnly, true)];
        let body = render(&outcome(&facts, Some("iad"), &[], &[], &[]));
        let status = &body["status"];
        assert_eq!(status["activeSite"], "iad");
        assert_eq!(status["observedGeneration"], 3);
        assert_eq!(status["sites"][0]["state"], "writable");
        assert_eq!(status["sites"][0]["replicating"], false);
        assert_eq!(status["sites"][1]["sourceConvergenceState"], "Converged");
        assert_eq!(status["sites"][1]["replicating"], true);
        assert_eq!(status["sites"][1]["lastSeen"], "2026-11-30T17:00:00Z");
        assert_eq!(status["conditions"][0]["type"], "Ready");
        assert_eq!(status["conditions"][0]["status"], "True");
        assert_eq!(status["conditions"][1]["type"], "Degraded");
        assert_eq!(status["conditions"][1]["status"], "False");
    }

    #[test]
    fn a_site_that_stops_answering_keeps_when_it_was_last_seen() {
        let facts =
            [fact("iad", SiteState::Unreachable, false), fact("pdx", SiteState::ReadOnly, true)];
        let previous = [
            SiteStatus {
                name: "iad".to_owned(),
                last_seen: Some(time(at("2026-11-30T16:59:58Z"))),
                ..SiteStatus::default()
            },
            SiteStatus {
                name: "pdx".to_owned(),
                last_seen: Some(time(at("2026-11-30T16:59:58Z"))),
                ..SiteStatus::default()
            },
        ];
        let mut polled = outcome(&facts, Some("pdx"), &[], &[], &[]);
        polled.previous_sites = &previous;
        let body = render(&polled);
        // iad did not answer: the time it last did; pdx answered: this poll's time.
        assert_eq!(body["status"]["sites"][0]["lastSeen"], "2026-11-30T16:59:58Z", "{body}");
        assert_eq!(body["status"]["sites"][1]["lastSeen"], "2026-11-30T17:00:00Z", "{body}");
        // Never seen stays never seen.
        let body = render(&outcome(&facts, Some("pdx"), &[], &[], &[]));
        assert!(body["status"]["sites"][0].get("lastSeen").is_none(), "{body}");
    }

    #[test]
    fn an_unreachable_active_site_says_what_happens_next() {
        let facts =
            [fact("iad", SiteState::Unreachable, false), fact("pdx", SiteState::ReadOnly, true)];
        let steps = [Step::Alert(Alert::ActiveUnreachable { site: "iad".to_owned(), polls: 2 })];
        let conditions = conditions(&outcome(&facts, Some("iad"), &steps, &[], &[]));
        assert_eq!(conditions[0].status, ConditionStatus::False);
        let ready = conditions[0].message.clone().unwrap();
        assert!(ready.contains("unreachable for 2 polls"), "{ready}");
        assert!(ready.contains("failureThreshold"), "{ready}");
        let degraded = conditions[1].message.clone().unwrap();
        assert!(
            degraded.contains("site iad is unreachable (connection refused or reset): check"),
            "{degraded}"
        );
    }

    /// One alert of every variant, the `match` failing to compile when a variant is added.
    fn every_alert() -> Vec<Alert> {
        use bloodraven_facts::{Ineligible, NoWinner};

        use crate::topology::Deferral;
        let alerts = vec![
            Alert::NoPrimary {
                failed: Some("iad".to_owned()),
                ineligible: vec![
                    ("pdx".to_owned(), Ineligible::State(SiteState::Unreachable)),
                    ("fra".to_owned(), Ineligible::Role),
                    ("sea".to_owned(), Ineligible::Excluded("RestorePeerHold".to_owned())),
                    ("ord".to_owned(), Ineligible::NoGtidSet),
                    ("dub".to_owned(), Ineligible::FailedActive),
                ],
            },
            Alert::NoPrimary { failed: None, ineligible: Vec::new() },
            Alert::AwaitingCandidates {
                silent: vec![
                    ("iad".to_owned(), Ineligible::State(SiteState::Unreachable)),
                    ("pdx".to_owned(), Ineligible::State(SiteState::Unknown)),
                ],
                failure_threshold: 3,
            },
            Alert::CandidatesIncomparable {
                sites: vec![("iad".to_owned(), 2), ("pdx".to_owned(), 5)],
            },
            Alert::SplitBrainUnresolved {
                writable: vec!["iad".to_owned(), "pdx".to_owned()],
                why: NoWinner::EmptyPriorities,
            },
            Alert::SplitBrainUnresolved {
                writable: vec!["iad".to_owned(), "pdx".to_owned()],
                why: NoWinner::NoListedWritableCandidate,
            },
            Alert::Cooldown { until: at("2026-11-30T17:05:00Z"), would_promote: "pdx".to_owned() },
            Alert::Deferred(Deferral::Claim { run_id: "pf-1".to_owned() }),
            Alert::Deferred(Deferral::Hold { run_id: Some("pf-2".to_owned()) }),
            Alert::Deferred(Deferral::Hold { run_id: None }),
            Alert::FollowerDiverged {
                site: "pdx".to_owned(),
                divergent: "4e11fa47-71ca-11e1-9e33-c80aa9429562:1-3".parse().unwrap(),
            },
            Alert::ReassertBlocked {
                site: "iad".to_owned(),
                ahead: vec!["pdx".to_owned(), "fra".to_owned()],
            },
            Alert::ActiveUnreachable { site: "iad".to_owned(), polls: 2 },
            Alert::ActiveNotCandidate { site: "iad".to_owned(), role: SiteRole::DisasterRecovery },
            Alert::ActiveUnknown { site: "iad".to_owned() },
            Alert::RestoreFrozen,
        ];
        for alert in &alerts {
            match alert {
                Alert::NoPrimary { .. }
                | Alert::AwaitingCandidates { .. }
                | Alert::CandidatesIncomparable { .. }
                | Alert::SplitBrainUnresolved { .. }
                | Alert::Cooldown { .. }
                | Alert::Deferred(_)
                | Alert::FollowerDiverged { .. }
                | Alert::ReassertBlocked { .. }
                | Alert::ActiveUnreachable { .. }
                | Alert::ActiveNotCandidate { .. }
                | Alert::ActiveUnknown { .. }
                | Alert::RestoreFrozen => {}
            }
        }
        alerts
    }

    #[test]
    fn no_alert_text_shows_rust_debug_syntax() {
        for alert in every_alert() {
            let text = alert_text(&alert);
            for debug in ["{", "}", "Some(", "None", "::", "\"", "[", "]"] {
                assert!(!text.contains(debug), "{debug} in the text of {alert:?}: {text}");
            }
            assert!(text.len() > 40, "a sentence, not a label: {text}");
        }
    }

    #[test]
    fn alert_texts_read_as_plain_words() {
        let texts: Vec<String> = every_alert().iter().map(alert_text).collect();
        assert_eq!(
            texts[0],
            "no PrimaryCandidate can be promoted (failed active site: iad; not eligible: \
             pdx (unreachable), fra (not a PrimaryCandidate), sea (held out by \
             RestorePeerHold), ord (answered without an executed GTID set), dub (the failed \
             active site)): restore a candidate site or promote one by hand"
        );
        assert_eq!(
            texts[2],
            "no first primary yet: waiting for PrimaryCandidates iad (unreachable), pdx \
             (unknown) to answer, for up to 3 polls (spec.failureThreshold) after the first \
             candidate answered; the operator then chooses among those that answered"
        );
        assert!(!texts[2].contains("promote one by hand"), "the operator is only waiting");
        assert_eq!(
            texts[4],
            "split brain: iad, pdx are writable and no winner can be named (sitePriorities is \
             empty): set spec.splitBrainPolicy.sitePriorities or fence one by hand"
        );
        assert_eq!(
            texts[7],
            "automatic actions are deferred (planned failover pf-1 holds the claim): see the \
             planned failover"
        );
        assert_eq!(
            texts[11],
            "the active site iad is read-only and pdx, fra hold transactions it lacks: promote \
             the freshest site with a planned failover"
        );
        assert_eq!(
            texts[13],
            "the active site iad is now a DisasterRecovery site in the spec: run a planned \
             failover to a candidate or restore its role"
        );
    }

    #[test]
    fn a_blocked_follower_carries_its_divergent_set_and_count() {
        let facts =
            [fact("iad", SiteState::Writable, false), fact("pdx", SiteState::ReadOnly, false)];
        let divergent: GtidSet = "4e11fa47-71ca-11e1-9e33-c80aa9429562:1-3".parse().unwrap();
        let blocked = [("pdx".to_owned(), divergent)];
        let body = render(&outcome(&facts, Some("iad"), &[], &blocked, &[]));
        let pdx = &body["status"]["sites"][1];
        assert_eq!(pdx["sourceConvergenceState"], "Blocked");
        assert_eq!(pdx["sourceConvergenceReason"], "GTIDDiverged");
        assert_eq!(pdx["divergentGtid"], "4e11fa47-71ca-11e1-9e33-c80aa9429562:1-3");
        assert_eq!(pdx["divergentTransactionCount"], 3);
    }

    #[test]
    fn a_primary_without_a_standby_is_degraded() {
        let mut dr = fact("fra", SiteState::ReadOnly, true);
        dr.role = SiteRole::DisasterRecovery;
        let facts = [
            fact("iad", SiteState::Writable, false),
            fact("pdx", SiteState::Unreachable, false),
            dr,
        ];
        let conditions = conditions(&outcome(&facts, Some("iad"), &[], &[], &[]));
        assert!(conditions[0].is_true(), "still Ready: iad writes");
        assert_eq!(conditions[1].status, ConditionStatus::True);
        let degraded = conditions[1].message.clone().unwrap();
        assert!(
            degraded.contains("no standby: iad is the only answering PrimaryCandidate"),
            "{degraded}"
        );
        assert!(degraded.contains("restore pdx"), "{degraded}");
    }

    #[test]
    fn a_refused_group_keeps_its_record_and_says_why() {
        let group = bloodraven_crd::fixtures::GroupFixture::three_sites().build();
        let previous = group.status.unwrap();
        let body =
            render_refused(&previous, "spec.sites: fix it", Some(9), at("2026-11-30T17:00:01Z"));
        let status = &body["status"];
        assert_eq!(status["activeSite"], "iad");
        assert_eq!(status["sites"].as_array().map(Vec::len), Some(3));
        assert_eq!(status["observedGeneration"], 9);
        for (index, type_, value) in [(0, "Ready", "False"), (1, "Degraded", "True")] {
            let condition = &status["conditions"][index];
            assert_eq!(condition["type"], type_);
            assert_eq!(condition["status"], value);
            assert_eq!(condition["reason"], "InvalidSpec");
            assert_eq!(condition["message"], "spec.sites: fix it");
            assert_eq!(condition["lastTransitionTime"], "2026-11-30T17:00:01Z");
        }
        // Refused again: the transition time stays.
        let again: bloodraven_crd::MysqlFailoverGroupStatus =
            serde_json::from_value(status.clone()).unwrap();
        let body =
            render_refused(&again, "spec.sites: fix it", Some(9), at("2026-11-30T18:00:00Z"));
        assert_eq!(body["status"]["conditions"][0]["lastTransitionTime"], "2026-11-30T17:00:01Z");
    }

    #[test]
    fn an_unchanged_condition_keeps_its_transition_time() {
        let facts = [fact("iad", SiteState::Writable, false)];
        let earlier = Time(at("2026-11-30T16:00:00Z"));
        let previous = [Condition {
            last_transition_time: Some(earlier.clone()),
            ..Condition::new(ConditionType::Ready, ConditionStatus::True)
        }];
        let conditions = conditions(&outcome(&facts, Some("iad"), &[], &[], &previous));
        assert_eq!(conditions[0].last_transition_time, Some(earlier));
        assert_eq!(conditions[1].last_transition_time, Some(Time(at("2026-11-30T17:00:01Z"))));
    }
}
