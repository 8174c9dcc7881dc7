//! The planned-failover run catalog (`catalog::planned_failover_run`) against the document.
//! The spec files are not available to CI, so the document's tables are quoted here, each with
//! the section it comes from; a catalog entry that is not in them (and not marked as an
//! extension) fails, and so does a document row the catalog misses.

use std::collections::BTreeSet;

use bloodraven_crd::catalog::planned_failover_run::{
    self as run, EVENTS, EventType, LOG_LINES, METRICS, MetricType, OUTCOME_REASONS, Origin,
};
use bloodraven_crd::group::{PlannedFailoverOutcome, PlannedFailoverReason};

/// Planned-failover document, "Outcomes and reasons", table "Reason | Outcome(s) | Meaning",
/// the first two cells of every row, as written.
const REASON_TABLE: &[(&str, &str)] = &[
    (
        "InvalidAnnotation, UnknownSite, TargetNotPromotable, AlreadyActive, TargetUnhealthy, KeyringRotation, CooldownActive, ConcurrentOperation, InvalidFailoverState, Canceled",
        "NotStarted",
    ),
    // "TargetNotPromotable also ends a run in Promoting ... (RolledBack or SourceLeftFenced)."
    ("TargetNotPromotable", "RolledBack or SourceLeftFenced"),
    ("UnknownSite", "SourceLeftFenced, PromotedUnconfirmed"),
    ("DivergentTarget", "NotStarted; RolledBack or SourceLeftFenced"),
    ("ManualRecoveryPending", "NotStarted"),
    ("AdmissionTimeout", "NotStarted"),
    ("AuthorityChanged", "NotStarted, RolledBack, SourceLeftFenced, ManualRecoveryRequired"),
    ("LegacyRunRefused", "NotStarted, SourceLeftFenced, PromotedUnconfirmed"),
    ("FenceFailed", "RolledBack, SourceLeftFenced"),
    (
        "SourceLost",
        "SourceLeftFenced (RolledBack if the source answers writable again); PromotedUnconfirmed",
    ),
    ("SourceUnfenced", "RolledBack, SourceLeftFenced"),
    ("TargetLost", "RolledBack, SourceLeftFenced, PromotedUnconfirmed"),
    (
        "ForeignWritable",
        "SourceLeftFenced (before a write), ManualRecoveryRequired (after a possible write)",
    ),
    ("PeerUnreadable", "RolledBack or SourceLeftFenced; PromotedUnconfirmed"),
    ("LagTimeout", "RolledBack, SourceLeftFenced"),
    ("InvalidGTID", "RolledBack, SourceLeftFenced"),
    ("DragonflySyncTimeout, DragonflyPromotionFailed", "RolledBack, SourceLeftFenced"),
    ("TargetChanged", "RolledBack, SourceLeftFenced"),
    ("PromotionAborted", "RolledBack, SourceLeftFenced"),
    ("PromotionUnconfirmed", "PromotedUnconfirmed"),
    ("ManagerUnavailable", "SourceLeftFenced, PromotedUnconfirmed"),
    ("StatusStalled", "NotStarted, RolledBack, SourceLeftFenced, PromotedUnconfirmed"),
    ("ExecuteFailed", "ManualRecoveryRequired"),
    ("InternalError", "any"),
];

const FAILURE_OUTCOMES: [&str; 5] = [
    "NotStarted",
    "RolledBack",
    "SourceLeftFenced",
    "PromotedUnconfirmed",
    "ManualRecoveryRequired",
];

/// The pairs the quoted table allows: every outcome token named in the second cell.
fn document_pairs() -> BTreeSet<(String, String)> {
    let mut pairs = BTreeSet::new();
    for (reasons, outcomes) in REASON_TABLE {
        let named: Vec<&str> = if *outcomes == "any" {
            FAILURE_OUTCOMES.to_vec()
        } else {
            FAILURE_OUTCOMES.iter().copied().filter(|outcome| outcomes.contains(outcome)).collect()
        };
        assert!(!named.is_empty(), "row {reasons} names no outcome");
        for reason in reasons.split(", ") {
            for outcome in &named {
                pairs.insert(((*outcome).to_owned(), reason.to_owned()));
            }
        }
    }
    pairs
}

#[test]
fn the_reason_outcome_table_is_the_documents_plus_marked_extensions() {
    let document = document_pairs();
    let mut catalog = BTreeSet::new();
    for row in OUTCOME_REASONS {
        for outcome in row.outcomes {
            let pair = ((*outcome).to_owned(), row.reason.to_owned());
            match row.origin {
                Origin::Document => {
                    assert!(document.contains(&pair), "the catalog invents {pair:?}");
                }
                Origin::Extension => {
                    assert!(!document.contains(&pair), "{pair:?} is the document's, not ours");
                }
            }
            catalog.insert(pair);
        }
    }
    for pair in &document {
        assert!(catalog.contains(pair), "the catalog misses {pair:?}");
    }
    let extensions: Vec<&str> = OUTCOME_REASONS
        .iter()
        .filter(|row| row.origin == Origin::Extension)
        .map(|row| row.reason)
        .collect();
    assert_eq!(extensions, ["DragonflyUnsupported"]);
}

/// Every (outcome, reason) the types know, and no other, is accepted exactly when the table
/// lists it.
#[test]
fn any_other_pair_is_refused() {
    let allowed: BTreeSet<(String, String)> =
        run::outcome_reason_pairs().map(|(o, r)| (o.to_owned(), r.to_owned())).collect();
    let mut checked = 0;
    for outcome in PlannedFailoverOutcome::KNOWN {
        assert!(!run::outcome_allows(outcome, Some("NoSuchReason")));
        for reason in PlannedFailoverReason::KNOWN {
            let listed = allowed.contains(&((*outcome).to_owned(), (*reason).to_owned()));
            assert_eq!(run::outcome_allows(outcome, Some(reason)), listed, "{outcome}/{reason}");
            checked += 1;
        }
    }
    assert_eq!(checked, 6 * PlannedFailoverReason::KNOWN.len());
    assert!(run::outcome_allows("Succeeded", None));
    // Every reason of the table is a token the types know.
    for row in OUTCOME_REASONS {
        assert!(PlannedFailoverReason::KNOWN.contains(&row.reason), "{}", row.reason);
    }
}

/// Planned-failover document, "Observability" / "Events", table "Event | Type | When": the
/// first two cells; the Dragonfly row lists five reasons and refers to "Dragonfly during
/// failover" for them (no type given).
const EVENT_TABLE: &[(&str, &str)] = &[
    ("PlannedFailoverStarted", "Normal"),
    ("PlannedFailoverSkipped", "Normal"),
    ("PlannedFailoverDeferred", "Normal"),
    ("PlannedFailoverAdmissionDelayed", "Normal"),
    ("PlannedFailoverClaimGranted", "Normal"),
    ("PlannedFailoverDrainStarted", "Normal"),
    ("PlannedFailoverTargetCaughtUp", "Normal"),
    ("PlannedFailoverSucceeded", "Normal"),
    ("PlannedFailoverRejected", "Warning"),
    ("PlannedFailoverRollbackStarted", "Warning"),
    ("PlannedFailoverFailed", "Warning"),
    ("PlannedFailoverDNSUpdateFailed", "Warning"),
    ("PlannedFailoverPromotionConfirmationFailed", "Warning"),
    ("PlannedFailoverStalledManagerAbsent", "Warning"),
    ("PlannedFailoverStatusStalled", "Warning"),
    ("PlannedFailoverLegacyRunRefused", "Warning"),
    ("PlannedFailoverManualRecoveryRequired", "Warning"),
    ("PlannedFailoverHoldPersisted", "Warning"),
    ("PlannedFailoverHoldAcknowledgmentIgnored", "Warning"),
    ("PlannedFailoverHoldAcknowledged", "Normal"),
    (
        "DragonflyPromotionStarted, DragonflyPromotionSucceeded, DragonflyPromotionFailed, DragonflySyncTimedOut, DragonflyPromotionDeferred",
        "",
    ),
];

#[test]
fn every_event_of_the_document_and_no_other() {
    let mut document = BTreeSet::new();
    for (reasons, kind) in EVENT_TABLE {
        for reason in reasons.split(", ") {
            document.insert(reason);
            let entry = run::event_entry(reason)
                .unwrap_or_else(|| panic!("the catalog misses the Event {reason}"));
            let ours = match entry.event_type {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            };
            if !kind.is_empty() {
                assert_eq!(ours, *kind, "{reason}");
            }
        }
    }
    for entry in EVENTS {
        assert!(document.contains(&entry.reason), "the catalog invents the Event {}", entry.reason);
        assert_eq!(entry.origin, Origin::Document);
    }
    assert_eq!(document.len(), EVENTS.len());
}

/// Planned-failover document, "Observability" / "Metrics", table "Metric | Type | Labels".
const METRIC_TABLE: &[(&str, &str, &str)] = &[
    (
        "bloodraven_planned_failovers_total",
        "counter",
        "target_site, result (succeeded, not-started, rolled-back, source-left-fenced, promoted-unconfirmed, manual-recovery-required)",
    ),
    ("bloodraven_planned_failover_duration_seconds", "histogram", "target_site"),
    ("bloodraven_planned_failover_lag_wait_seconds", "histogram", "target_site"),
    (
        "bloodraven_planned_failovers_deferred_total",
        "counter",
        "group, reason (CooldownActive, DeploymentHold)",
    ),
    (
        "bloodraven_dragonfly_promotions_total",
        "counter",
        "group, target_site, result (success, failed, skipped, sessions_lost)",
    ),
];

#[test]
fn every_metric_of_the_document_and_no_other() {
    assert_eq!(METRICS.len(), METRIC_TABLE.len());
    for (name, kind, labels) in METRIC_TABLE {
        let entry = METRICS
            .iter()
            .find(|entry| entry.name == *name)
            .unwrap_or_else(|| panic!("the catalog misses {name}"));
        let ours = match entry.metric_type {
            MetricType::Counter => "counter",
            MetricType::Histogram => "histogram",
        };
        assert_eq!(ours, *kind, "{name}");
        let (names, values) = labels.split_once(" (").unwrap_or((labels, ""));
        let names: Vec<&str> = names.split(", ").collect();
        assert_eq!(entry.labels, names.as_slice(), "{name}");
        let values: Vec<&str> =
            values.trim_end_matches(')').split(", ").filter(|v| !v.is_empty()).collect();
        assert_eq!(entry.values, values.as_slice(), "{name}");
    }
    // "result is the kebab-case of the terminal result.outcome".
    let results = METRICS[0].values;
    for outcome in PlannedFailoverOutcome::KNOWN {
        let label = PlannedFailoverOutcome::parse(outcome).metric_label();
        assert!(results.contains(&label.as_str()), "{label}");
    }
}

/// Every `planned failover: …` log line the document names (it says they "are listed in the
/// log schema", which is not part of the spec given to us), found by searching the document
/// for "planned failover: " and cutting each at the end of its message, with the section.
const DOCUMENT_LOG_LINES: &[(&str, &str)] = &[
    ("Lifecycle / Draining", "planned failover: draining the source failed"),
    ("Lifecycle (every transition)", "planned failover: confirming recorded side effect"),
    (
        "The claim",
        "planned failover: could not record the promotion's confirmation; keeping the claim",
    ),
    ("The claim", "planned failover: promotion already recorded; publishing without the claim"),
    ("The claim", "planned failover: claim released"),
    (
        "Rollback, step 2",
        "planned failover: rollback found another writable site beside the source",
    ),
    ("Rollback, step 6", "planned failover: could not restore the target's super_read_only"),
    ("Healing a fenced source", "planned failover: named fenced source for re-assert"),
    (
        "Healing a fenced source (PromotedUnconfirmed)",
        "planned failover: a failover was recorded during the run; the unconfirmed target is not named",
    ),
    (
        "The automation hold",
        "planned failover: released an automation hold no durable record backs",
    ),
    (
        "Status stalls and the terminal marker, step 2",
        "planned failover: status stalled, but the promotion's failover record is not durable yet; retrying",
    ),
    (
        "Status stalls and the terminal marker, step 4",
        "planned failover: status stalled; ended the run with a terminal marker",
    ),
    ("Status stalls and the terminal marker", "planned failover: status write ambiguous; settling"),
    (
        "Operator restarts, manager restarts",
        "planned failover: the group was recreated; its claim slot starts empty",
    ),
    (
        "Operator restarts, a reconcile that returns early",
        "planned failover: pass on an early-returning reconcile failed",
    ),
];

#[test]
fn every_log_line_of_the_document_and_no_other() {
    let document: BTreeSet<&str> = DOCUMENT_LOG_LINES.iter().map(|(_, line)| *line).collect();
    let ours: BTreeSet<&str> = LOG_LINES.iter().map(|line| line.message).collect();
    assert_eq!(document, ours);
    assert_eq!(run::log_line("planned failover: claim released").unwrap().fields, ["why"]);
}
