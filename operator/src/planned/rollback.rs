//! RollingBack: every step decided live, on each attempt, until it finishes or its deadline
//! passes (planned-failover document, "Rollback").

use bloodraven_crd::group::{
    PlannedFailoverOutcome as Outcome, PlannedFailoverReason as Reason,
    PlannedFailoverWarning as Warning,
};
use bloodraven_gtid::GtidSet;

use super::Pass;
use super::decision::Effect;
use super::model::Probe;

impl Pass<'_> {
    /// The fence is the run's: this process recorded sending it to that server (a restarted
    /// process attributes it when the durable intent names the server's current uuid).
    fn fence_attributable(&self, source_uuid: Option<&str>) -> bool {
        source_uuid.is_some() && self.decision.memory.fence_sent_to.as_deref() == source_uuid
    }

    pub(crate) fn rolling_back(&mut self) {
        let Some(block) = self.block().cloned() else { return };
        let (source, target) = (self.source(), self.target());
        let reason =
            block.rollback.as_ref().and_then(|r| r.reason.clone()).unwrap_or(Reason::InternalError);
        let intent = block
            .rollback
            .as_ref()
            .and_then(|r| Self::at(r.intent_time.as_ref()))
            .unwrap_or(self.now);
        let deadline = intent + self.t.rollback_deadline;
        let expired = self.now >= deadline;
        let promotion_intent = block.promotion.is_some();
        let fence_uuid = block.fence.as_ref().and_then(|f| f.source_server_uuid.clone());
        let fenced: Option<GtidSet> = self.fenced_set().and_then(Result::ok);
        let source_probe = self.site(&source).map_or(Probe::Unreadable, |s| s.probe.clone());
        let target_probe = self.site(&target).map_or(Probe::Unreadable, |s| s.probe.clone());
        let target_reading = target_probe.reading().filter(|r| r.server_uuid.is_some()).cloned();

        // 1. A possible write: the target must answer and hold nothing outside the fenced set.
        if promotion_intent && self.decision.memory.write_possibly_sent {
            match &target_reading {
                None => {
                    if self.target_lost(false) || expired {
                        let message = format!(
                            "the rollback could not read {target:?}, to which super_read_only=OFF may have been sent"
                        );
                        self.end(Outcome::PromotedUnconfirmed, Some(Reason::TargetLost), message);
                    }
                    return;
                }
                Some(reading) => {
                    self.target_lost(true);
                    let executed: Option<GtidSet> = reading.gtid_executed.parse().ok();
                    let outside = match (&executed, &fenced) {
                        (Some(executed), Some(fenced)) => !executed.is_subset(fenced),
                        _ => true,
                    };
                    if outside {
                        let message = format!(
                            "the rollback found transactions on {target:?} outside the fenced set"
                        );
                        self.end(
                            Outcome::ManualRecoveryRequired,
                            Some(Reason::ExecuteFailed),
                            message,
                        );
                        return;
                    }
                }
            }
        }

        let target_needs_refence = target_reading.as_ref().is_some_and(|r| !r.super_read_only);
        let target_channel_gone = target_reading
            .as_ref()
            .is_none_or(|r| r.channel.as_ref().is_none_or(|c| !c.io_running || !c.sql_running));

        // 2. The source already answers writable.
        if let Some(reading) = source_probe.reading().filter(|r| r.writable()) {
            self.source_lost(true);
            if reading.server_uuid != fence_uuid {
                self.warn(Warning::SourceReplaced);
                self.warn(Warning::TargetReplicationNotRestored);
            }
            if Self::reads_writable(&target_probe) && promotion_intent {
                let message = "the rollback found another writable site beside the writable source"
                    .to_owned();
                self.end(Outcome::ManualRecoveryRequired, Some(Reason::ForeignWritable), message);
                return;
            }
            let others = self.writable_sites(&[&source, &target]);
            if !others.is_empty() {
                self.decision.log(
                    "planned failover: rollback found another writable site beside the source",
                    vec![("sites", others.join(","))],
                );
            }
            if target_needs_refence && !self.decision.memory.target_refenced
                || target_reading.is_none() && promotion_intent
            {
                if expired {
                    self.warn(Warning::TargetSuperReadOnlyNotRestored);
                    self.warn(Warning::TargetReplicationNotRestored);
                    let message = format!(
                        "rolled back: {source:?} is writable; {target:?} could not be set back to super_read_only=ON"
                    );
                    self.end(Outcome::RolledBack, Some(reason), message);
                } else if target_reading.is_some() {
                    self.decision.effects.push(Effect::RefenceTarget { site: target });
                }
                return;
            }
            let message =
                format!("rolled back ({}): {source:?} is writable again", reason.as_str());
            self.end(Outcome::RolledBack, Some(reason), message);
            return;
        }

        // 3. Any other site writable: unfencing would make two writable primaries.
        let others = self.writable_sites(&[&source]);
        if !others.is_empty() {
            if target_channel_gone {
                self.warn(Warning::TargetReplicationNotRestored);
            }
            let message =
                format!("source {source:?} left fenced: {} answers writable", others.join(", "));
            self.end(Outcome::SourceLeftFenced, Some(reason), message);
            return;
        }

        // 4. A lost source is left fenced; emergency failover takes over.
        let Some(source_reading) =
            source_probe.reading().filter(|r| r.server_uuid.is_some()).cloned()
        else {
            if reason == Reason::SourceLost || self.source_lost(false) {
                if target_channel_gone {
                    self.warn(Warning::TargetReplicationNotRestored);
                }
                let message = format!(
                    "source {source:?} did not answer for {}; left fenced for emergency failover",
                    self.t.source_loss_window
                );
                self.end(Outcome::SourceLeftFenced, Some(Reason::SourceLost), message);
            } else if expired {
                let message = format!(
                    "source {source:?} left fenced: it did not answer before the rollback deadline"
                );
                self.end(Outcome::SourceLeftFenced, Some(reason), message);
            }
            return;
        };
        self.source_lost(true);
        // Step 4 holds for a source that answers again read-only too: a source lost for the
        // loss window "is left fenced with no unfence retries" (a mysqld restarted fenced
        // within the rollback is no reason to unfence it; only a source that already answers
        // writable ends RolledBack, step 2).
        if reason == Reason::SourceLost {
            if target_channel_gone {
                self.warn(Warning::TargetReplicationNotRestored);
            }
            let message = format!(
                "source {source:?} was lost for {} and answers again read-only; left fenced with no unfence (emergency failover decides)",
                self.t.source_loss_window
            );
            self.end(Outcome::SourceLeftFenced, Some(Reason::SourceLost), message);
            return;
        }

        // 5. A fence that cannot be attributed to the run is not cleared.
        if !self.fence_attributable(source_reading.server_uuid.as_deref()) {
            self.warn(Warning::FenceNotAttributable);
            if source_reading.server_uuid != fence_uuid {
                self.warn(Warning::SourceReplaced);
            }
            if target_channel_gone {
                self.warn(Warning::TargetReplicationNotRestored);
            }
            let message = format!(
                "source {source:?} is read-only but the fence is not this run's: check which site is writable; if none is, unfence the site with the most complete GTID set by hand (confirm no other site is writable first); re-annotate only once a site is writable"
            );
            self.end(Outcome::SourceLeftFenced, Some(reason), message);
            return;
        }

        // 6. Re-fence the target, restore its channel, unfence the source.
        if expired {
            if target_channel_gone {
                self.warn(Warning::TargetReplicationNotRestored);
            }
            let message = format!(
                "source {source:?} left fenced: the unfence was not confirmed within {}",
                self.t.rollback_deadline
            );
            self.end(Outcome::SourceLeftFenced, Some(reason), message);
            return;
        }
        if target_needs_refence && !self.decision.memory.target_refenced {
            if self.decision.memory.target_failing_since.is_some() {
                self.decision.log(
                    "planned failover: could not restore the target's super_read_only",
                    vec![("site", target.clone())],
                );
            }
            self.decision.effects.push(Effect::RefenceTarget { site: target });
            return;
        }
        // "The target's replication channel is then restored if the promotion had stopped or
        // reset it": only under a promotion intent (before it nothing touched the channel), and
        // only on a target that answers: "a site that merely does not answer does not stop
        // the unfence" (a target lost in WaitingForLag: "nothing was written, so the source is
        // unfenced").
        let restore_channel_of =
            (promotion_intent && target_reading.is_some() && target_channel_gone)
                .then(|| target.clone());
        if promotion_intent && target_reading.is_none() {
            self.warn(Warning::TargetReplicationNotRestored);
        }
        self.decision.effects.push(Effect::Unfence {
            site: source,
            server_uuid: fence_uuid.unwrap_or_default(),
            restore_channel_of,
        });
    }
}
