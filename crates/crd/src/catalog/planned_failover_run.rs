//! Planned failover as data beyond its tokens: which reasons each outcome allows, the Events,
//! the metrics and the log lines of the document's "Observability" section (and the log lines
//! its other sections name), each marked with where it comes from.
//!
//! The tables are the planned-failover document's, copied by hand: "Outcomes and reasons" (the
//! Reason | Outcome(s) table), "Observability" (Metrics, Events, Logs). Entries this project
//! adds are [`Origin::Extension`], never passed off as the document's.

/// Where a catalog entry comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The planned-failover document names it.
    Document,
    /// Ours, not from the document (the document is silent or the part is not built yet).
    Extension,
}

/// The outcomes a `result.reason` may end a run with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OutcomeReasons {
    /// `result.reason`.
    pub reason: &'static str,
    /// Every `result.outcome` the reason may come with.
    pub outcomes: &'static [&'static str],
    /// Where the row comes from.
    pub origin: Origin,
}

const NS: &str = "NotStarted";
const RB: &str = "RolledBack";
const SLF: &str = "SourceLeftFenced";
const PU: &str = "PromotedUnconfirmed";
const MRR: &str = "ManualRecoveryRequired";

const fn doc(reason: &'static str, outcomes: &'static [&'static str]) -> OutcomeReasons {
    OutcomeReasons { reason, outcomes, origin: Origin::Document }
}

/// The reason → outcome table ("Outcomes and reasons", table Reason | Outcome(s) | Meaning; rows
/// that list several reasons are split, the two UnknownSite rows are merged, "any" is every
/// failure outcome). `Succeeded` carries no reason. Any pair not listed here is refused.
pub static OUTCOME_REASONS: &[OutcomeReasons] = &[
    doc("InvalidAnnotation", &[NS]),
    doc("UnknownSite", &[NS, SLF, PU]),
    doc("TargetNotPromotable", &[NS, RB, SLF]),
    doc("AlreadyActive", &[NS]),
    doc("TargetUnhealthy", &[NS]),
    doc("KeyringRotation", &[NS]),
    doc("CooldownActive", &[NS]),
    doc("ConcurrentOperation", &[NS]),
    doc("InvalidFailoverState", &[NS]),
    doc("Canceled", &[NS]),
    doc("DivergentTarget", &[NS, RB, SLF]),
    doc("ManualRecoveryPending", &[NS]),
    doc("AdmissionTimeout", &[NS]),
    doc("AuthorityChanged", &[NS, RB, SLF, MRR]),
    doc("LegacyRunRefused", &[NS, SLF, PU]),
    doc("FenceFailed", &[RB, SLF]),
    doc("SourceLost", &[SLF, RB, PU]),
    doc("SourceUnfenced", &[RB, SLF]),
    doc("TargetLost", &[RB, SLF, PU]),
    doc("ForeignWritable", &[SLF, MRR]),
    doc("PeerUnreadable", &[RB, SLF, PU]),
    doc("LagTimeout", &[RB, SLF]),
    doc("InvalidGTID", &[RB, SLF]),
    doc("DragonflySyncTimeout", &[RB, SLF]),
    doc("DragonflyPromotionFailed", &[RB, SLF]),
    doc("TargetChanged", &[RB, SLF]),
    doc("PromotionAborted", &[RB, SLF]),
    doc("PromotionUnconfirmed", &[PU]),
    doc("ManagerUnavailable", &[SLF, PU]),
    doc("StatusStalled", &[NS, RB, SLF, PU]),
    doc("ExecuteFailed", &[MRR]),
    doc("InternalError", &[NS, RB, SLF, PU, MRR]),
    // Ours: Dragonfly coordination is not built; a request on a group with
    // spec.dragonfly.enabled ends NotStarted at once (issue 13).
    OutcomeReasons { reason: "DragonflyUnsupported", outcomes: &[NS], origin: Origin::Extension },
];

/// Whether `outcome` may carry `reason` (a `Succeeded` run carries none).
pub fn outcome_allows(outcome: &str, reason: Option<&str>) -> bool {
    match reason {
        None => outcome == "Succeeded",
        Some(reason) => OUTCOME_REASONS
            .iter()
            .any(|row| row.reason == reason && row.outcomes.contains(&outcome)),
    }
}

/// Every allowed (outcome, reason) pair, in table order.
pub fn outcome_reason_pairs() -> impl Iterator<Item = (&'static str, &'static str)> {
    OUTCOME_REASONS
        .iter()
        .flat_map(|row| row.outcomes.iter().map(move |outcome| (*outcome, row.reason)))
}

/// An Event's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

/// One Event reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventEntry {
    /// The Event's reason.
    pub reason: &'static str,
    /// Normal or Warning.
    pub event_type: EventType,
    /// When it is emitted.
    pub when: &'static str,
    /// Where the row comes from.
    pub origin: Origin,
}

const fn event(reason: &'static str, event_type: EventType, when: &'static str) -> EventEntry {
    EventEntry { reason, event_type, when, origin: Origin::Document }
}

/// The Events of planned failover ("Observability", table Event | Type | When; the Dragonfly
/// row lists five reasons whose type the document leaves to "Dragonfly during failover": we
/// file the failures as Warning).
pub static EVENTS: &[EventEntry] = &[
    event(
        "PlannedFailoverStarted",
        EventType::Normal,
        "A request was accepted (or a deferred one resumed).",
    ),
    event("PlannedFailoverSkipped", EventType::Normal, "The target is already the active primary."),
    event(
        "PlannedFailoverDeferred",
        EventType::Normal,
        "Cooldown with onCooldown: Defer, or a deployment hold; again when a deferral switches from DeploymentHold to CooldownActive.",
    ),
    event(
        "PlannedFailoverAdmissionDelayed",
        EventType::Normal,
        "The admission wait reason or its detail changed.",
    ),
    event(
        "PlannedFailoverClaimGranted",
        EventType::Normal,
        "The claim was granted; the message names the run, source and target.",
    ),
    event(
        "PlannedFailoverDrainStarted",
        EventType::Normal,
        "The source is fenced; draining connections.",
    ),
    event("PlannedFailoverTargetCaughtUp", EventType::Normal, "The target applied the fenced set."),
    event(
        "PlannedFailoverSucceeded",
        EventType::Normal,
        "Succeeded; the message lists the warnings.",
    ),
    event(
        "PlannedFailoverRejected",
        EventType::Warning,
        "NotStarted, an invalid annotation, or an annotation ignored while another run is running, a hold stands, or an earlier run's fenced source has not healed.",
    ),
    event("PlannedFailoverRollbackStarted", EventType::Warning, "The run entered RollingBack."),
    event(
        "PlannedFailoverFailed",
        EventType::Warning,
        "Any Failed outcome other than NotStarted and ManualRecoveryRequired.",
    ),
    event(
        "PlannedFailoverDNSUpdateFailed",
        EventType::Warning,
        "The promotion succeeded but DNS did not update.",
    ),
    event(
        "PlannedFailoverPromotionConfirmationFailed",
        EventType::Warning,
        "PromotedUnconfirmed (followed by PlannedFailoverFailed).",
    ),
    event(
        "PlannedFailoverStalledManagerAbsent",
        EventType::Warning,
        "No topology manager for 30 seconds while the run holds the claim.",
    ),
    event(
        "PlannedFailoverStatusStalled",
        EventType::Warning,
        "The run ended with a terminal marker, or the operator cannot write the group at all.",
    ),
    event(
        "PlannedFailoverLegacyRunRefused",
        EventType::Warning,
        "A block written by an older operator was refused.",
    ),
    event(
        "PlannedFailoverManualRecoveryRequired",
        EventType::Warning,
        "The run ended ManualRecoveryRequired; automation is held.",
    ),
    event(
        "PlannedFailoverHoldPersisted",
        EventType::Warning,
        "Every 10 minutes while a hold stands.",
    ),
    event(
        "PlannedFailoverHoldAcknowledgmentIgnored",
        EventType::Warning,
        "The acknowledgement names another run, finds no standing hold, or finds the claim held for another run.",
    ),
    event(
        "PlannedFailoverHoldAcknowledged",
        EventType::Normal,
        "The hold was acknowledged and cleared.",
    ),
    event(
        "DragonflyPromotionStarted",
        EventType::Normal,
        "The Dragonfly phases (see Dragonfly during failover).",
    ),
    event(
        "DragonflyPromotionSucceeded",
        EventType::Normal,
        "The Dragonfly phases (see Dragonfly during failover).",
    ),
    event(
        "DragonflyPromotionFailed",
        EventType::Warning,
        "The Dragonfly phases (see Dragonfly during failover).",
    ),
    event(
        "DragonflySyncTimedOut",
        EventType::Warning,
        "The Dragonfly phases (see Dragonfly during failover).",
    ),
    event(
        "DragonflyPromotionDeferred",
        EventType::Normal,
        "The Dragonfly phases (see Dragonfly during failover).",
    ),
];

/// The entry of an Event reason.
pub fn event_entry(reason: &str) -> Option<&'static EventEntry> {
    EVENTS.iter().find(|entry| entry.reason == reason)
}

/// A metric's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetricType {
    /// A counter.
    Counter,
    /// A histogram.
    Histogram,
}

/// One metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MetricEntry {
    /// The metric's name.
    pub name: &'static str,
    /// Counter or histogram.
    pub metric_type: MetricType,
    /// Its label names.
    pub labels: &'static [&'static str],
    /// The values the document lists for its `result` or `reason` label (empty when open).
    pub values: &'static [&'static str],
}

/// The metrics ("Observability", table Metric | Type | Labels).
pub static METRICS: &[MetricEntry] = &[
    MetricEntry {
        name: "bloodraven_planned_failovers_total",
        metric_type: MetricType::Counter,
        labels: &["target_site", "result"],
        values: &[
            "succeeded",
            "not-started",
            "rolled-back",
            "source-left-fenced",
            "promoted-unconfirmed",
            "manual-recovery-required",
        ],
    },
    MetricEntry {
        name: "bloodraven_planned_failover_duration_seconds",
        metric_type: MetricType::Histogram,
        labels: &["target_site"],
        values: &[],
    },
    MetricEntry {
        name: "bloodraven_planned_failover_lag_wait_seconds",
        metric_type: MetricType::Histogram,
        labels: &["target_site"],
        values: &[],
    },
    MetricEntry {
        name: "bloodraven_planned_failovers_deferred_total",
        metric_type: MetricType::Counter,
        labels: &["group", "reason"],
        values: &["CooldownActive", "DeploymentHold"],
    },
    MetricEntry {
        name: "bloodraven_dragonfly_promotions_total",
        metric_type: MetricType::Counter,
        labels: &["group", "target_site", "result"],
        values: &["success", "failed", "skipped", "sessions_lost"],
    },
];

/// A log line's level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogLevel {
    /// `INFO`.
    Info,
    /// `WARN`.
    Warn,
    /// `ERROR`.
    Error,
}

/// One `planned failover: …` log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LogLine {
    /// The message, exactly.
    pub message: &'static str,
    /// Its level (the document names WARN and ERROR where it gives one; the rest are ours).
    pub level: LogLevel,
    /// Structured fields the document names.
    pub fields: &'static [&'static str],
}

const fn log(message: &'static str, level: LogLevel) -> LogLine {
    LogLine { message, level, fields: &[] }
}

/// Every `planned failover: …` log line the document names, in the order it names them.
pub static LOG_LINES: &[LogLine] = &[
    log("planned failover: draining the source failed", LogLevel::Warn),
    log("planned failover: confirming recorded side effect", LogLevel::Info),
    log(
        "planned failover: could not record the promotion's confirmation; keeping the claim",
        LogLevel::Warn,
    ),
    log(
        "planned failover: promotion already recorded; publishing without the claim",
        LogLevel::Info,
    ),
    LogLine {
        message: "planned failover: claim released",
        level: LogLevel::Info,
        fields: &["why"],
    },
    log("planned failover: rollback found another writable site beside the source", LogLevel::Warn),
    log("planned failover: could not restore the target's super_read_only", LogLevel::Warn),
    log("planned failover: named fenced source for re-assert", LogLevel::Info),
    log(
        "planned failover: a failover was recorded during the run; the unconfirmed target is not named",
        LogLevel::Warn,
    ),
    log("planned failover: released an automation hold no durable record backs", LogLevel::Warn),
    log(
        "planned failover: status stalled, but the promotion's failover record is not durable yet; retrying",
        LogLevel::Warn,
    ),
    log("planned failover: status stalled; ended the run with a terminal marker", LogLevel::Error),
    log("planned failover: status write ambiguous; settling", LogLevel::Warn),
    log("planned failover: the group was recreated; its claim slot starts empty", LogLevel::Warn),
    log("planned failover: pass on an early-returning reconcile failed", LogLevel::Warn),
];

/// The log line whose message is `message`.
pub fn log_line(message: &str) -> Option<&'static LogLine> {
    LOG_LINES.iter().find(|line| line.message == message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_listed_once() {
        let mut reasons: Vec<&str> = OUTCOME_REASONS.iter().map(|row| row.reason).collect();
        reasons.sort_unstable();
        let before = reasons.len();
        reasons.dedup();
        assert_eq!(before, reasons.len());
    }

    #[test]
    fn succeeded_takes_no_reason_and_failures_need_one() {
        assert!(outcome_allows("Succeeded", None));
        assert!(!outcome_allows("Succeeded", Some("LagTimeout")));
        assert!(!outcome_allows("NotStarted", None));
        assert!(outcome_allows("RolledBack", Some("LagTimeout")));
        assert!(!outcome_allows("NotStarted", Some("LagTimeout")));
    }
}
