//! Settling an ambiguous status write (a timeout, a reset connection, a 5xx): the
//! planned-failover document's "An ambiguous status write ... is settled before anything else
//! happens: the operator re-reads the object, and if the write did not land it bumps the
//! `planned-failover-status-fence` annotation conditioned on the same resourceVersion, which
//! proves the write can never commit".
//!
//! [`settle`] is pure: it compares the write with one uncached re-read and says what that
//! read proves. The applier (`io::settle`) loops on it within the settlement budget: a write
//! that [`Settlement::Landed`] is committed (its announced effects run, exactly once, by this
//! process), one that [`Settlement::NotLanded`] never will (its effects never run; the next
//! pass decides again from what is durable), and a [`Settlement::Fence`] is bumped and the
//! object read again. Neither success nor failure is assumed: until one of the first two is
//! proven, nothing the write announced runs.
//!
//! | Spec says | We chose |
//! | --- | --- |
//! | "re-reads the object" and decides whether "the write did not land" | landed = the re-read block is the written one: the same `runID`, `revision` (bumped by every write of a run), `phase`, and the same fence, drain, lag-wait, promotion, rollback and result records; for a hold-only write, the hold's run |
//! | the fence "counts as proof only if it moved the object's resourceVersion" | a re-read whose resourceVersion moved past the one the write was conditioned on, without the written record, is proof too: the write's `test` of that version can never pass again |

use bloodraven_crd::annotations::StatusFence;
use bloodraven_crd::group::{PlannedFailoverHold, PlannedFailoverStatus};
use jiff::Timestamp;

use super::decision::{HoldChange, StatusWrite};

/// One uncached re-read of the group after an ambiguous write.
#[derive(Clone, Copy, Debug)]
pub struct Reread<'a> {
    /// Its `metadata.resourceVersion`.
    pub resource_version: &'a str,
    /// Its `status.plannedFailover`.
    pub block: Option<&'a PlannedFailoverStatus>,
    /// Its `status.plannedFailoverHold`.
    pub hold: Option<&'a PlannedFailoverHold>,
    /// Its `planned-failover-status-fence` annotation, when it parses.
    pub status_fence: Option<StatusFence>,
}

/// What one re-read proves about an ambiguous write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settlement {
    /// The written record is durable: the write committed.
    Landed,
    /// The object moved past the version the write was conditioned on without the written
    /// record: the write can never commit.
    NotLanded,
    /// The object has not moved: the write may still commit. Bump the status fence to this
    /// value, conditioned on the same resourceVersion, then read again.
    Fence(StatusFence),
    /// The status fence cannot move past the stored one (it holds the last representable
    /// instant): nothing can be proven.
    Unprovable,
}

/// Whether `reread` carries the record `written` (the fields a write of the run changes).
fn same_record(written: &PlannedFailoverStatus, reread: &PlannedFailoverStatus) -> bool {
    written.run_id == reread.run_id
        && written.revision == reread.revision
        && written.phase == reread.phase
        && written.fence == reread.fence
        && written.drain == reread.drain
        && written.lag_wait == reread.lag_wait
        && written.promotion == reread.promotion
        && written.rollback == reread.rollback
        && written.result == reread.result
}

/// Whether the hold part of `write` reads back in `hold`.
fn same_hold(write: &StatusWrite, hold: Option<&PlannedFailoverHold>) -> bool {
    match &write.hold {
        HoldChange::Keep => true,
        HoldChange::Set(written, _) => hold.is_some_and(|hold| hold.run_id == written.run_id),
        HoldChange::Clear(_) => hold.is_none(),
    }
}

/// `block` as the API server stores it: through its JSON form, so times carry the whole
/// seconds a `Time` serializes to (the decision's own block may hold nanoseconds).
fn as_stored(block: &PlannedFailoverStatus) -> PlannedFailoverStatus {
    serde_json::to_value(block)
        .ok()
        .and_then(|value| serde_json::from_value(value).ok())
        .unwrap_or_else(|| block.clone())
}

/// What `reread` proves about `write` (conditioned on `write.resource_version`), at `now`.
pub fn settle(write: &StatusWrite, reread: &Reread<'_>, now: Timestamp) -> Settlement {
    let record_there = match (&write.block, reread.block) {
        (Some(written), Some(read)) => same_record(&as_stored(written), read),
        (Some(_), None) => false,
        // A hold-only write (an acknowledgement): the hold decides, but only once the object
        // moved (an unchanged object may read the same without the write).
        (None, _) => reread.resource_version != write.resource_version,
    };
    if record_there && same_hold(write, reread.hold) {
        return Settlement::Landed;
    }
    if reread.resource_version != write.resource_version {
        return Settlement::NotLanded;
    }
    match StatusFence::next(reread.status_fence, now) {
        Some(fence) => Settlement::Fence(fence),
        None => Settlement::Unprovable,
    }
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::group::{
        Fence, FenceState, PlannedFailoverPhase, Promotion, PromotionState,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    /// The recorded blocks of one run: WaitingForLag (revision 5), then the promotion intent
    /// the ambiguous write carried (revision 6).
    fn waiting() -> PlannedFailoverStatus {
        PlannedFailoverStatus {
            run_id: Some("run-1".into()),
            revision: Some(5),
            phase: Some(PlannedFailoverPhase::WaitingForLag),
            fence: Some(Fence {
                state: Some(FenceState::Applied),
                gtid_set: Some("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-90".into()),
                ..Fence::default()
            }),
            ..PlannedFailoverStatus::default()
        }
    }

    fn promoting() -> PlannedFailoverStatus {
        PlannedFailoverStatus {
            revision: Some(6),
            phase: Some(PlannedFailoverPhase::Promoting),
            promotion: Some(Promotion {
                state: Some(PromotionState::Intended),
                intent_time: Some(Time(at(0))),
                target_server_uuid: Some("7a1d0c22-71ca-11e1-9e33-c80aa9429562".into()),
                ..Promotion::default()
            }),
            ..waiting()
        }
    }

    fn write(block: PlannedFailoverStatus) -> StatusWrite {
        StatusWrite {
            resource_version: "41".into(),
            block: Some(block),
            hold: HoldChange::Keep,
            last_failover: None,
        }
    }

    fn reread<'a>(version: &'a str, block: &'a PlannedFailoverStatus) -> Reread<'a> {
        Reread { resource_version: version, block: Some(block), hold: None, status_fence: None }
    }

    #[test]
    fn a_write_that_applied_before_its_5xx_or_timeout_is_landed() {
        // Recorded: the promotion intent was applied (41 → 42), the client saw a 500.
        let written = write(promoting());
        let read = promoting();
        assert_eq!(settle(&written, &reread("42", &read), at(1)), Settlement::Landed);
        // Another writer (the topology manager's status) moved it again since: still ours.
        assert_eq!(settle(&written, &reread("57", &read), at(1)), Settlement::Landed);
    }

    #[test]
    fn times_compare_as_stored() {
        // Recorded in the live drill: the decision's intent time carried nanoseconds, the
        // stored record whole seconds (a `Time`'s JSON form). Still the same record.
        let mut written = promoting();
        let fine = at(0).checked_add(jiff::SignedDuration::from_nanos(934_564_219)).unwrap();
        if let Some(promotion) = written.promotion.as_mut() {
            promotion.intent_time = Some(Time(fine));
        }
        let stored: PlannedFailoverStatus =
            serde_json::from_value(serde_json::to_value(&written).unwrap()).unwrap();
        assert_eq!(settle(&write(written), &reread("42", &stored), at(1)), Settlement::Landed);
    }

    #[test]
    fn an_unchanged_object_is_fenced_before_anything_is_decided() {
        // Recorded: the object still reads the WaitingForLag record at the version the write
        // was conditioned on: the write may still be in flight and commit later.
        let written = write(promoting());
        let read = waiting();
        assert_eq!(
            settle(&written, &reread("41", &read), at(1)),
            Settlement::Fence(StatusFence::new(at(1)))
        );
        // The fence always moves past the stored one, by 1ns when the clock has not.
        let stored = Reread { status_fence: Some(StatusFence::new(at(5))), ..reread("41", &read) };
        let Settlement::Fence(next) = settle(&written, &stored, at(1)) else {
            panic!("not fenced")
        };
        assert!(next > StatusFence::new(at(5)), "{next} does not move past the stored fence");
    }

    #[test]
    fn a_moved_object_without_the_record_proves_the_write_never_commits() {
        // Recorded: the fence (or any other writer) moved 41 → 43, the block is still the
        // WaitingForLag record: the write's test of 41 can never pass.
        let written = write(promoting());
        let read = waiting();
        assert_eq!(settle(&written, &reread("43", &read), at(1)), Settlement::NotLanded);
        // Another run's block, or no block at all, is not the record either.
        let other = PlannedFailoverStatus { run_id: Some("run-2".into()), ..promoting() };
        assert_eq!(settle(&written, &reread("43", &other), at(1)), Settlement::NotLanded);
        let none = Reread { block: None, ..reread("43", &read) };
        assert_eq!(settle(&written, &none, at(1)), Settlement::NotLanded);
    }

    #[test]
    fn the_same_phase_with_another_record_is_not_the_write() {
        // The same run and phase, a revision or an intent that differs: a different record
        // (an earlier Promoting write, say), so it does not prove this write landed.
        let written = write(promoting());
        let earlier = PlannedFailoverStatus { revision: Some(4), ..promoting() };
        assert_eq!(settle(&written, &reread("43", &earlier), at(1)), Settlement::NotLanded);
        let mut confirmed = promoting();
        if let Some(promotion) = confirmed.promotion.as_mut() {
            promotion.state = Some(PromotionState::Confirmed);
        }
        assert_eq!(settle(&written, &reread("43", &confirmed), at(1)), Settlement::NotLanded);
        assert!(matches!(settle(&written, &reread("41", &earlier), at(1)), Settlement::Fence(_)));
    }

    #[test]
    fn a_hold_write_lands_only_with_its_hold() {
        let hold = PlannedFailoverHold { run_id: Some("run-1".into()), ..Default::default() };
        let condition = bloodraven_crd::Condition::new(
            bloodraven_crd::ConditionType::AutomaticFailoverHeld,
            bloodraven_crd::ConditionStatus::True,
        );
        let written =
            StatusWrite { hold: HoldChange::Set(hold.clone(), condition), ..write(promoting()) };
        let read = promoting();
        let without = reread("42", &read);
        assert_eq!(settle(&written, &without, at(1)), Settlement::NotLanded);
        let with = Reread { hold: Some(&hold), ..without };
        assert_eq!(settle(&written, &with, at(1)), Settlement::Landed);
    }

    #[test]
    fn a_fence_at_the_end_of_time_proves_nothing() {
        let written = write(promoting());
        let read = waiting();
        let stored =
            Reread { status_fence: Some(StatusFence::new(Timestamp::MAX)), ..reread("41", &read) };
        assert_eq!(settle(&written, &stored, at(1)), Settlement::Unprovable);
    }
}
