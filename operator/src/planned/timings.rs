//! Every deadline, loss window and cadence of the planned-failover document as one value.
//!
//! Production uses [`Timings::document`]; drills use [`Timings::scaled`] so a 5-minute rule
//! takes seconds. The decision core reads no constant of its own: every bound comes from here.

use jiff::SignedDuration;

/// The planned-failover document's timings. Field docs quote where each comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timings {
    /// "Admitting: 2 minutes from entering Admitting" → NotStarted{AdmissionTimeout}.
    pub admission_deadline: SignedDuration,
    /// "for a new request with no run yet, recorded within the last 2 minutes": how recent a
    /// failover record naming another site than `status.activeSite` keeps authority unsettled.
    pub authority_recent: SignedDuration,
    /// "Fencing: 30 seconds from fence.intentTime" → RollingBack{FenceFailed}.
    pub fence_deadline: SignedDuration,
    /// "10 seconds of consecutive failed probes, counted from the first failed source
    /// observation" → SourceLost.
    pub source_loss_window: SignedDuration,
    /// "the target does not answer: 10 seconds" → TargetLost.
    pub target_loss_window: SignedDuration,
    /// "KillAppConnections runs on the source every second".
    pub drain_cadence: SignedDuration,
    /// "Promoting before a write: statements fail with the target reachable: 2 minutes from
    /// promotion.intentTime" → RollingBack{PromotionAborted}.
    pub promotion_abort: SignedDuration,
    /// "Promoting after a possible write: the target answers but cannot be confirmed:
    /// 2 minutes" → PromotedUnconfirmed{PromotionUnconfirmed}.
    pub promotion_unconfirmed: SignedDuration,
    /// "RollingBack: 30 seconds from rollback.intentTime" → SourceLeftFenced.
    pub rollback_deadline: SignedDuration,
    /// "Status writes stall: 2 minutes from the durable stall-since time" → terminal marker.
    pub status_stall: SignedDuration,
    /// "10 seconds for a run that already released its claim" (only Publishing left).
    pub status_stall_released: SignedDuration,
    /// "It keeps retrying the terminal status record every 10 seconds".
    pub terminal_retry: SignedDuration,
    /// "After 30 seconds it emits the Warning Event PlannedFailoverStalledManagerAbsent".
    pub manager_absent_warning: SignedDuration,
    /// "after 5 minutes, measured from ... planned-failover-manager-absent-since" →
    /// ManagerUnavailable.
    pub manager_absent_end: SignedDuration,
    /// "the Warning Event PlannedFailoverHoldPersisted every 10 minutes while it stands".
    pub hold_reminder: SignedDuration,
    /// "One reconcile pass ... is bounded at 15 seconds".
    pub pass_bound: SignedDuration,
    /// "30 seconds for the promotion statements".
    pub promotion_pass_bound: SignedDuration,
    /// "(each statement at 5 seconds)".
    pub promotion_statement: SignedDuration,
    /// "45 seconds for the confirmed tail".
    pub confirmed_tail_bound: SignedDuration,
    /// "up to 5 seconds for each durable write that needs its reserve".
    pub write_reserve: SignedDuration,
    /// "30 seconds of settlement for each ambiguous write".
    pub settlement: SignedDuration,
    /// How often a waiting run (Admitting, WaitingForLag, a rollback) is re-evaluated. Not in
    /// the document: ours, one second, the drain's cadence.
    pub poll: SignedDuration,
    /// How often WaitingForLag re-reads the target while it has not applied the fenced set.
    /// Not in the document ("polling the target until its GTID_EXECUTED contains
    /// fence.gtidSet" names no cadence): ours, 100 ms, because the source is fenced meanwhile and
    /// every poll interval the target catches up within is added to the write outage (with
    /// the 1 s `poll` a target a few milliseconds behind cost a 1.04 s outage).
    pub lag_poll: SignedDuration,
    /// `spec.plannedFailover.maxLagWait` default, "5m".
    pub default_max_lag_wait: SignedDuration,
    /// `spec.plannedFailover.drainTimeout` default, "30s".
    pub default_drain_timeout: SignedDuration,
    /// `spec.failoverCooldown` default, "The default cooldown is 5 minutes".
    pub default_cooldown: SignedDuration,
    /// `dragonfly.plannedFailover.maxSyncWait` default, "30s".
    pub default_max_sync_wait: SignedDuration,
    /// PromotingDragonfly: "40 seconds (gate waits)".
    pub dragonfly_gate_wait: SignedDuration,
    /// PromotingDragonfly: "+ 12 seconds" for the REPLTAKEOVER reply.
    pub dragonfly_reply_grace: SignedDuration,
    /// The divisor user settings (maxLagWait, drainTimeout, failoverCooldown) are divided by:
    /// 1 in production, the drill's factor in [`Timings::scaled`].
    pub settings_divisor: u32,
}

const fn secs(seconds: i64) -> SignedDuration {
    SignedDuration::from_secs(seconds)
}

impl Timings {
    /// The document's values.
    pub const fn document() -> Timings {
        Timings {
            admission_deadline: secs(120),
            authority_recent: secs(120),
            fence_deadline: secs(30),
            source_loss_window: secs(10),
            target_loss_window: secs(10),
            drain_cadence: secs(1),
            promotion_abort: secs(120),
            promotion_unconfirmed: secs(120),
            rollback_deadline: secs(30),
            status_stall: secs(120),
            status_stall_released: secs(10),
            terminal_retry: secs(10),
            manager_absent_warning: secs(30),
            manager_absent_end: secs(300),
            hold_reminder: secs(600),
            pass_bound: secs(15),
            promotion_pass_bound: secs(30),
            promotion_statement: secs(5),
            confirmed_tail_bound: secs(45),
            write_reserve: secs(5),
            settlement: secs(30),
            poll: secs(1),
            lag_poll: SignedDuration::from_millis(100),
            default_max_lag_wait: secs(300),
            default_drain_timeout: secs(30),
            default_cooldown: secs(300),
            default_max_sync_wait: secs(30),
            dragonfly_gate_wait: secs(40),
            dragonfly_reply_grace: secs(12),
            settings_divisor: 1,
        }
    }

    /// Every timing divided by `factor` (at least 1), user settings included, so a drill runs
    /// a 5-minute rule in 5 minutes / `factor`. Durations never go below one millisecond.
    pub fn scaled(factor: u32) -> Timings {
        let factor = factor.max(1);
        let d = |duration: SignedDuration| -> SignedDuration {
            (duration / i32::try_from(factor).unwrap_or(i32::MAX))
                .max(SignedDuration::from_millis(1))
        };
        let base = Timings::document();
        Timings {
            admission_deadline: d(base.admission_deadline),
            authority_recent: d(base.authority_recent),
            fence_deadline: d(base.fence_deadline),
            source_loss_window: d(base.source_loss_window),
            target_loss_window: d(base.target_loss_window),
            drain_cadence: d(base.drain_cadence),
            promotion_abort: d(base.promotion_abort),
            promotion_unconfirmed: d(base.promotion_unconfirmed),
            rollback_deadline: d(base.rollback_deadline),
            status_stall: d(base.status_stall),
            status_stall_released: d(base.status_stall_released),
            terminal_retry: d(base.terminal_retry),
            manager_absent_warning: d(base.manager_absent_warning),
            manager_absent_end: d(base.manager_absent_end),
            hold_reminder: d(base.hold_reminder),
            pass_bound: d(base.pass_bound),
            promotion_pass_bound: d(base.promotion_pass_bound),
            promotion_statement: d(base.promotion_statement),
            confirmed_tail_bound: d(base.confirmed_tail_bound),
            write_reserve: d(base.write_reserve),
            settlement: d(base.settlement),
            poll: d(base.poll),
            // Ours (100 ms), never slower than the scaled idle poll.
            lag_poll: base.lag_poll.min(d(base.poll)),
            default_max_lag_wait: d(base.default_max_lag_wait),
            default_drain_timeout: d(base.default_drain_timeout),
            default_cooldown: d(base.default_cooldown),
            default_max_sync_wait: d(base.default_max_sync_wait),
            dragonfly_gate_wait: d(base.dragonfly_gate_wait),
            dragonfly_reply_grace: d(base.dragonfly_reply_grace),
            settings_divisor: factor,
        }
    }

    /// A user setting (maxLagWait, drainTimeout, failoverCooldown) as this value runs it.
    pub fn setting(&self, duration: SignedDuration) -> SignedDuration {
        let divisor = i32::try_from(self.settings_divisor.max(1)).unwrap_or(i32::MAX);
        if divisor == 1 {
            duration
        } else {
            (duration / divisor).max(SignedDuration::from_millis(1))
        }
    }

    /// The longest a run can live once it holds the claim with these settings, before its
    /// terminal record (or marker) is due: the document's per-phase bounds added up (fence,
    /// drain, lag wait, promotion, rollback, then a status stall or a manager absence on top).
    pub fn worst_case_after_claim(
        &self,
        drain_timeout: SignedDuration,
        max_lag_wait: SignedDuration,
    ) -> SignedDuration {
        self.fence_deadline
            + self.source_loss_window
            + drain_timeout
            + max_lag_wait
            + self.target_loss_window
            + self.promotion_abort.max(self.promotion_unconfirmed)
            + self.target_loss_window
            + self.rollback_deadline
            + self.status_stall.max(self.manager_absent_end)
    }
}

impl Default for Timings {
    fn default() -> Timings {
        Timings::document()
    }
}
