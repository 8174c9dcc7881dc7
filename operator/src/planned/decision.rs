//! What one pass decides: the next durable record, the side effects it announces, and the
//! Events, log lines and metrics that go with it.
//!
//! The applier commits [`Decision::bookkeeping`], then [`Decision::write`] (conditioned on
//! [`StatusWrite::resource_version`]), then [`Decision::annotations`], and runs
//! [`Decision::effects`] only once they committed; a status write proven not to have
//! committed drops the annotations and the effects (and releases a claim taken for it).

use bloodraven_crd::Condition;
use bloodraven_crd::catalog::planned_failover_run::{EventType, LogLevel};
use bloodraven_crd::group::{LastFailover, PlannedFailoverHold, PlannedFailoverStatus};
use jiff::SignedDuration;

use super::model::Memory;

/// How a write treats `status.plannedFailoverHold` and the `AutomaticFailoverHeld` condition.
#[derive(Clone, Debug, PartialEq)]
pub enum HoldChange {
    /// Leave both as they are.
    Keep,
    /// Record the hold and set the condition True.
    Set(PlannedFailoverHold, Condition),
    /// Remove the hold and set the condition False (acknowledged).
    Clear(Condition),
}

/// One durable status write.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusWrite {
    /// The resourceVersion of the uncached read the write is conditioned on.
    pub resource_version: String,
    /// The next `status.plannedFailover` (`None`: leave the block as it is).
    pub block: Option<PlannedFailoverStatus>,
    /// The hold and its condition.
    pub hold: HoldChange,
    /// `status.lastFailover`, written in the same write as a Succeeded record.
    pub last_failover: Option<LastFailover>,
}

/// A metadata change, conditioned like the status write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnnotationChange {
    /// Set `key` to `value`.
    Set {
        /// The key.
        key: &'static str,
        /// The value.
        value: String,
    },
    /// Remove `key`, only while it still holds `value` (a request written meanwhile stays).
    Remove {
        /// The key.
        key: &'static str,
        /// The value that was evaluated.
        value: String,
    },
}

/// A side effect, run only after the record that announces it committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Take the claim slot for the run (in-process; released again if the Fencing write is
    /// proven not to have committed).
    TakeClaim {
        /// The run.
        run_id: String,
    },
    /// On one pinned session: re-check the server and that it is writable, set
    /// `super_read_only=ON`, read it back, snapshot `GTID_EXECUTED`, re-probe every peer, and
    /// strip the source's `role=primary` pod label.
    Fence {
        /// The source site.
        site: String,
        /// The server the intent names.
        server_uuid: String,
    },
    /// Kill application sessions on the source and count what is left.
    KillAppConnections {
        /// The source site.
        site: String,
    },
    /// On one pinned target session: `STOP REPLICA`, `RESET REPLICA ALL`, the pre-write gate,
    /// `super_read_only=OFF`, `read_only=OFF`, confirm by live reads.
    Promote {
        /// The target site.
        site: String,
        /// The server the intent names.
        server_uuid: String,
    },
    /// Record the confirmed promotion in the topology manager, publish DNS, write the
    /// planned-failover-confirmed annotation, then release the claim.
    Publish {
        /// The promoted site.
        site: String,
        /// The confirmed run.
        run_id: String,
    },
    /// Set the target back to `super_read_only=ON` and read it back.
    RefenceTarget {
        /// The target site.
        site: String,
    },
    /// Restore the target's channel toward a verified source when the promotion stopped or
    /// reset it, then unfence the source on a pinned session and read it back.
    Unfence {
        /// The source site.
        site: String,
        /// The server the fence recorded.
        server_uuid: String,
        /// Re-create the target's channel toward the source.
        restore_channel_of: Option<String>,
    },
    /// Name the fenced source for the topology manager's re-assert.
    NameForReassert {
        /// The source site.
        site: String,
    },
    /// Name the unconfirmed target as the topology manager's last failover target.
    NameLastFailoverTarget {
        /// The target site.
        site: String,
    },
    /// Release the run's claim.
    ReleaseClaim {
        /// Why (logged as the `why` field).
        why: &'static str,
    },
    /// Turn the run's claim into an automation hold.
    KeepClaimAsHold {
        /// The run.
        run_id: String,
    },
    /// Release an automation hold.
    ReleaseHold {
        /// Why (logged as the `why` field).
        why: &'static str,
    },
}

impl Effect {
    /// Whether the effect talks to MySQL.
    pub fn touches_mysql(&self) -> bool {
        matches!(
            self,
            Effect::Fence { .. }
                | Effect::KillAppConnections { .. }
                | Effect::Promote { .. }
                | Effect::RefenceTarget { .. }
                | Effect::Unfence { .. }
        )
    }
}

/// An Event to emit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The Event reason (a `catalog::planned_failover_run::EVENTS` entry).
    pub reason: &'static str,
    /// Normal or Warning.
    pub event_type: EventType,
    /// The message.
    pub message: String,
}

/// A log line to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Log {
    /// Its level.
    pub level: LogLevel,
    /// The message (a `catalog::planned_failover_run::LOG_LINES` entry).
    pub message: &'static str,
    /// Fields, as (name, value).
    pub fields: Vec<(&'static str, String)>,
}

/// A metric sample, emitted once the write it belongs to committed.
#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    /// `bloodraven_planned_failovers_total{target_site, result}` + 1.
    Finished {
        /// The requested target.
        target_site: String,
        /// The kebab-case outcome.
        result: String,
    },
    /// `bloodraven_planned_failover_duration_seconds{target_site}`.
    Duration {
        /// The target.
        target_site: String,
        /// Seconds from startTime to completion.
        seconds: f64,
    },
    /// `bloodraven_planned_failover_lag_wait_seconds{target_site}` (one sample per run).
    LagWait {
        /// The target.
        target_site: String,
        /// Seconds of the lag wait.
        seconds: f64,
    },
    /// `bloodraven_planned_failovers_deferred_total{group, reason}` + 1.
    Deferred {
        /// CooldownActive or DeploymentHold.
        reason: &'static str,
    },
}

/// What one pass decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The durable status write, if any.
    pub write: Option<StatusWrite>,
    /// Metadata changes that go with the status write (request removal, markers,
    /// acknowledgement removal): committed after it, and dropped when it did not commit.
    pub annotations: Vec<AnnotationChange>,
    /// Metadata changes that stand on their own (the stall-since and manager-absent-since
    /// bookkeeping): committed whether or not the status write commits.
    pub bookkeeping: Vec<AnnotationChange>,
    /// Side effects, in order, run after the writes committed.
    pub effects: Vec<Effect>,
    /// Events.
    pub events: Vec<Event>,
    /// Log lines.
    pub logs: Vec<Log>,
    /// Metric samples.
    pub metrics: Vec<Metric>,
    /// This process's memory of the run after the pass.
    pub memory: Memory,
    /// When the next pass is due.
    pub requeue_after: SignedDuration,
}

impl Decision {
    /// A decision that changes nothing, keeping `memory`.
    pub fn idle(memory: Memory, requeue_after: SignedDuration) -> Decision {
        Decision {
            write: None,
            annotations: Vec::new(),
            bookkeeping: Vec::new(),
            effects: Vec::new(),
            events: Vec::new(),
            logs: Vec::new(),
            metrics: Vec::new(),
            memory,
            requeue_after,
        }
    }

    /// Adds an Event; its type comes from the catalog.
    pub(crate) fn event(&mut self, reason: &'static str, message: impl Into<String>) {
        let event_type = bloodraven_crd::catalog::planned_failover_run::event_entry(reason)
            .map_or(EventType::Warning, |entry| entry.event_type);
        self.events.push(Event { reason, event_type, message: message.into() });
    }

    /// Adds a log line; its level comes from the catalog.
    pub(crate) fn log(&mut self, message: &'static str, fields: Vec<(&'static str, String)>) {
        let level = bloodraven_crd::catalog::planned_failover_run::log_line(message)
            .map_or(LogLevel::Info, |line| line.level);
        self.logs.push(Log { level, message, fields });
    }

    /// The reasons of the Events, in order (for tests and drills).
    pub fn event_reasons(&self) -> Vec<&'static str> {
        self.events.iter().map(|event| event.reason).collect()
    }

    /// The block this decision writes, if any.
    pub fn written_block(&self) -> Option<&PlannedFailoverStatus> {
        self.write.as_ref().and_then(|write| write.block.as_ref())
    }
}
