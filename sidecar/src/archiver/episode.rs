//! Writable episodes, promotion records and incarnation-reset records (pure).
//!
//! The role sampler probes the server every `PEER_CHECK_INTERVAL` and feeds each outcome to a
//! [`RoleTracker`]. The tracker decides (spec, "Promotion records and history integrity"):
//!
//! - a new writable episode starts at the first writable observation after the sidecar starts,
//!   after every read-only or failed probe, and while writable when the server becomes a new
//!   incarnation (other `server_uuid`/`server_id`, or `gtid_executed` no longer contains the
//!   previous observation's set);
//! - each episode needs a promotion record, opened only by a probe that returned within 1 s;
//! - a read-only observation that shows a new incarnation needs a Reset record; the first
//!   observation after a start is compared with the site's latest record;
//! - `probeInterval` is the time since the previous probe that still showed the earlier state
//!   (at least the probe interval), reaching back to the site's latest record for the first
//!   observation after a start that finds the server changed.
//!
//! Uploads are allowed only while the current writable episode's record is confirmed (saved and
//! read back) and no Reset record waits to be saved.

use std::time::Duration;

use bloodraven_archive::manifest::{PromotionRecord, RecordKind};
use bloodraven_gtid::{GtidSet, Uuid};
use jiff::{SignedDuration, Timestamp};

/// A probe that ran longer than this cannot open a promotion record.
pub const MAX_RECORD_PROBE: Duration = Duration::from_secs(1);

/// What one role probe saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// `@@read_only` (writable is `false`).
    pub read_only: bool,
    /// `@@server_uuid`.
    pub server_uuid: Uuid,
    /// `@@server_id`.
    pub server_id: u32,
    /// `@@gtid_executed`.
    pub gtid_executed: GtidSet,
    /// When the probe was sent (sidecar clock).
    pub started_at: Timestamp,
    /// When the probe returned (sidecar clock): a record's `observedAt`.
    pub returned_at: Timestamp,
}

impl Observation {
    fn took(&self) -> Duration {
        self.returned_at.duration_since(self.started_at).unsigned_abs()
    }

    /// True when `self` is another incarnation than the server `earlier` saw.
    fn is_new_incarnation_of(&self, uuid: Uuid, server_id: u32, gtids: &GtidSet) -> bool {
        self.server_uuid != uuid
            || self.server_id != server_id
            || !self.gtid_executed.is_superset(gtids)
    }
}

/// The outcome of one probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The probe returned.
    Observed(Observation),
    /// The probe failed (the server could not be queried) at this time.
    Failed { at: Timestamp },
}

/// A record the tracker wants saved.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingRecord {
    /// The episode it belongs to (promotion records) or 0 (reset records).
    pub episode: u64,
    /// The record.
    pub record: PromotionRecord,
}

#[derive(Debug, Clone, PartialEq)]
enum RecordState {
    /// No probe of this episode returned within 1 s yet.
    AwaitingFastProbe,
    /// The record waits to be saved.
    Pending(PromotionRecord),
    /// Saved and read back.
    Confirmed,
}

#[derive(Debug, Clone, PartialEq)]
struct Episode {
    id: u64,
    record: RecordState,
    /// The read-only gtid_executed directly before the episode.
    read_only_gtids: Option<GtidSet>,
    /// Whether the first observation of the episode found a changed server vs. the site's
    /// latest record (then probeInterval reaches back to it).
    reach_back_to: Option<Timestamp>,
}

/// Why uploads may not run now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadGate {
    /// Uploads may run in this episode.
    Open { episode: u64 },
    /// The server is read-only, unreachable or not probed yet.
    NotWritable,
    /// The writable episode has no confirmed promotion record yet; the text is the spec's
    /// `lastError` wording.
    AwaitingRecord(String),
    /// A reset record waits to be saved.
    AwaitingReset,
}

/// The tracker (see the module docs).
#[derive(Debug, Clone)]
pub struct RoleTracker {
    probe_interval: Duration,
    /// The previous successful observation.
    last: Option<Observation>,
    /// When the previous probe (of any outcome) returned.
    last_probe_at: Option<Timestamp>,
    /// The site's latest record when the sidecar started (from its manifest).
    site_latest: Option<PromotionRecord>,
    started: bool,
    episode: Option<Episode>,
    next_episode: u64,
    pending_resets: Vec<PromotionRecord>,
}

fn interval_since(from: Option<Timestamp>, to: Timestamp, floor: Duration) -> SignedDuration {
    let floor = SignedDuration::try_from(floor).unwrap_or(SignedDuration::MAX);
    match from {
        Some(from) => to.duration_since(from).max(floor),
        None => floor,
    }
}

impl RoleTracker {
    /// A tracker for a sidecar that just started; `site_latest` is the newest record of the
    /// site's manifest (promotion or reset), when there is one.
    pub fn new(probe_interval: Duration, site_latest: Option<PromotionRecord>) -> Self {
        RoleTracker {
            probe_interval,
            last: None,
            last_probe_at: None,
            site_latest,
            started: false,
            episode: None,
            next_episode: 1,
            pending_resets: Vec::new(),
        }
    }

    /// Sets the site's latest record when it was not known at construction (the manifest was
    /// read after the first probe). Only used before the first observation.
    pub fn set_site_latest(&mut self, record: Option<PromotionRecord>) {
        if !self.started {
            self.site_latest = record;
        }
    }

    /// The current writable episode, when there is one.
    pub fn episode(&self) -> Option<u64> {
        self.episode.as_ref().map(|e| e.id)
    }

    /// Feeds one probe outcome.
    pub fn observe(&mut self, probe: Probe) {
        match probe {
            Probe::Failed { at } => {
                self.episode = None;
                self.last_probe_at = Some(at);
            }
            Probe::Observed(obs) => self.observe_ok(obs),
        }
    }

    fn observe_ok(&mut self, obs: Observation) {
        let first = !self.started;
        self.started = true;
        // The incarnation change, and how far back the change may reach.
        let (changed, reach_back) = match (&self.last, first, &self.site_latest) {
            (Some(last), _, _) => (
                obs.is_new_incarnation_of(last.server_uuid, last.server_id, &last.gtid_executed),
                None,
            ),
            (None, true, Some(latest)) => (
                obs.is_new_incarnation_of(
                    latest.server_uuid,
                    latest.server_id,
                    &latest.gtid_executed,
                ),
                Some(latest.observed_at),
            ),
            (None, _, None) | (None, false, Some(_)) => (false, None),
        };
        if obs.read_only {
            self.episode = None;
            if changed {
                let from = reach_back.or(self.last_probe_at);
                self.pending_resets.push(PromotionRecord {
                    kind: RecordKind::Reset,
                    server_uuid: obs.server_uuid,
                    server_id: obs.server_id,
                    gtid_executed: obs.gtid_executed.clone(),
                    observed_at: obs.returned_at,
                    probe_interval: Some(interval_since(
                        from,
                        obs.returned_at,
                        self.probe_interval,
                    )),
                    read_only_gtid_executed: None,
                    extra: Default::default(),
                });
            }
        } else {
            let new_episode = self.episode.is_none() || changed;
            if new_episode {
                let read_only_gtids = self
                    .last
                    .as_ref()
                    .filter(|last| last.read_only && !changed)
                    .map(|last| last.gtid_executed.clone());
                let id = self.next_episode;
                self.next_episode += 1;
                self.episode = Some(Episode {
                    id,
                    record: RecordState::AwaitingFastProbe,
                    read_only_gtids,
                    reach_back_to: if changed { reach_back } else { None },
                });
            }
            let since = self.last_probe_at;
            let floor = self.probe_interval;
            if let Some(episode) = self.episode.as_mut()
                && episode.record == RecordState::AwaitingFastProbe
                && obs.took() <= MAX_RECORD_PROBE
            {
                let from = episode.reach_back_to.or(since);
                episode.record = RecordState::Pending(PromotionRecord {
                    kind: RecordKind::Promotion,
                    server_uuid: obs.server_uuid,
                    server_id: obs.server_id,
                    gtid_executed: obs.gtid_executed.clone(),
                    observed_at: obs.returned_at,
                    probe_interval: Some(interval_since(from, obs.returned_at, floor)),
                    read_only_gtid_executed: episode.read_only_gtids.clone(),
                    extra: Default::default(),
                });
            }
        }
        self.last_probe_at = Some(obs.returned_at);
        self.last = Some(obs);
    }

    /// The records waiting to be saved: reset records first (oldest first), then the current
    /// episode's promotion record.
    pub fn pending(&self) -> Vec<PendingRecord> {
        let mut out: Vec<PendingRecord> = self
            .pending_resets
            .iter()
            .map(|record| PendingRecord { episode: 0, record: record.clone() })
            .collect();
        if let Some(Episode { id, record: RecordState::Pending(record), .. }) = &self.episode {
            out.push(PendingRecord { episode: *id, record: record.clone() });
        }
        out
    }

    /// Marks a record saved and read back.
    pub fn confirm(&mut self, saved: &PendingRecord) {
        if saved.episode == 0 {
            self.pending_resets.retain(|record| record != &saved.record);
            return;
        }
        if let Some(episode) = self.episode.as_mut()
            && episode.id == saved.episode
            && episode.record == RecordState::Pending(saved.record.clone())
        {
            episode.record = RecordState::Confirmed;
        }
    }

    /// Whether uploads may run now.
    pub fn gate(&self) -> UploadGate {
        if !self.pending_resets.is_empty() {
            return UploadGate::AwaitingReset;
        }
        match &self.episode {
            None => UploadGate::NotWritable,
            Some(Episode { id, record: RecordState::Confirmed, .. }) => {
                UploadGate::Open { episode: *id }
            }
            Some(Episode { record: RecordState::AwaitingFastProbe, .. }) => {
                UploadGate::AwaitingRecord(format!(
                    "promotion record: no role probe of this writable episode returned within {}s",
                    MAX_RECORD_PROBE.as_secs()
                ))
            }
            Some(Episode { record: RecordState::Pending(_), .. }) => {
                UploadGate::AwaitingRecord("promotion record: not saved yet".to_owned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID_A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
    const UUID_B: &str = "4e11fa47-71ca-11e1-9e33-c80aa9429562";
    const INTERVAL: Duration = Duration::from_secs(5);

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + second).unwrap()
    }

    fn obs(second: i64, read_only: bool, uuid: &str, gtids: &str) -> Probe {
        Probe::Observed(Observation {
            read_only,
            server_uuid: uuid.parse().unwrap(),
            server_id: 1,
            gtid_executed: gtids.parse().unwrap(),
            started_at: at(second),
            returned_at: at(second),
        })
    }

    fn slow(second: i64) -> Probe {
        Probe::Observed(Observation {
            read_only: false,
            server_uuid: UUID_A.parse().unwrap(),
            server_id: 1,
            gtid_executed: format!("{UUID_A}:1-5").parse().unwrap(),
            started_at: at(second) - SignedDuration::from_millis(1500),
            returned_at: at(second),
        })
    }

    fn confirm_all(tracker: &mut RoleTracker) -> Vec<PromotionRecord> {
        let pending = tracker.pending();
        for record in &pending {
            tracker.confirm(record);
        }
        pending.into_iter().map(|p| p.record).collect()
    }

    #[test]
    fn promotion_after_read_only_carries_the_interval_and_read_only_set() {
        let mut tracker = RoleTracker::new(INTERVAL, None);
        let set = format!("{UUID_A}:1-5");
        tracker.observe(obs(0, true, UUID_A, &set));
        assert_eq!(tracker.gate(), UploadGate::NotWritable);
        tracker.observe(obs(7, false, UUID_A, &set));
        assert!(matches!(tracker.gate(), UploadGate::AwaitingRecord(_)));
        let records = confirm_all(&mut tracker);
        assert_eq!(records.len(), 1);
        let record = &records[0];
        assert_eq!(record.kind, RecordKind::Promotion);
        assert_eq!(record.observed_at, at(7));
        assert_eq!(record.probe_interval, Some(SignedDuration::from_secs(7)));
        assert_eq!(record.read_only_gtid_executed, Some(set.parse().unwrap()));
        assert_eq!(tracker.gate(), UploadGate::Open { episode: 1 });
        // A further writable probe keeps the episode.
        tracker.observe(obs(12, false, UUID_A, &format!("{UUID_A}:1-9")));
        assert_eq!(tracker.gate(), UploadGate::Open { episode: 1 });
        assert!(tracker.pending().is_empty());
    }

    #[test]
    fn a_slow_probe_opens_no_record_and_the_next_fast_one_does() {
        let mut tracker = RoleTracker::new(INTERVAL, None);
        tracker.observe(slow(0));
        assert!(tracker.pending().is_empty());
        match tracker.gate() {
            UploadGate::AwaitingRecord(text) => {
                assert!(text.contains("returned within 1s"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        tracker.observe(obs(5, false, UUID_A, &format!("{UUID_A}:1-5")));
        let records = confirm_all(&mut tracker);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].observed_at, at(5));
        assert_eq!(tracker.gate(), UploadGate::Open { episode: 1 });
    }

    #[test]
    fn a_failed_probe_ends_the_episode_and_a_new_incarnation_starts_one() {
        let mut tracker = RoleTracker::new(INTERVAL, None);
        tracker.observe(obs(0, false, UUID_A, &format!("{UUID_A}:1-5")));
        confirm_all(&mut tracker);
        tracker.observe(Probe::Failed { at: at(5) });
        assert_eq!(tracker.gate(), UploadGate::NotWritable);
        tracker.observe(obs(10, false, UUID_A, &format!("{UUID_A}:1-6")));
        confirm_all(&mut tracker);
        assert_eq!(tracker.gate(), UploadGate::Open { episode: 2 });
        // gtid_executed lost transactions while writable: a new episode, no Reset record.
        tracker.observe(obs(15, false, UUID_A, &format!("{UUID_A}:1-3")));
        let records = confirm_all(&mut tracker);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].kind, RecordKind::Promotion);
        assert_eq!(records[0].read_only_gtid_executed, None);
        assert_eq!(tracker.gate(), UploadGate::Open { episode: 3 });
    }

    #[test]
    fn a_read_only_incarnation_change_needs_a_reset_record_before_uploads() {
        let mut tracker = RoleTracker::new(INTERVAL, None);
        tracker.observe(obs(0, true, UUID_A, &format!("{UUID_A}:1-5")));
        tracker.observe(obs(5, true, UUID_B, &format!("{UUID_A}:1-5")));
        assert_eq!(tracker.gate(), UploadGate::AwaitingReset);
        let records = confirm_all(&mut tracker);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].kind, RecordKind::Reset);
        assert_eq!(records[0].probe_interval, Some(SignedDuration::from_secs(5)));
        assert_eq!(tracker.gate(), UploadGate::NotWritable);
    }

    #[test]
    fn the_first_observation_is_compared_with_the_sites_latest_record() {
        let latest = PromotionRecord {
            kind: RecordKind::Promotion,
            server_uuid: UUID_A.parse().unwrap(),
            server_id: 1,
            gtid_executed: format!("{UUID_A}:1-50").parse().unwrap(),
            observed_at: at(-3600),
            probe_interval: Some(SignedDuration::from_secs(5)),
            read_only_gtid_executed: None,
            extra: Default::default(),
        };
        // Read-only and recloned while the sidecar was down: a Reset reaching back an hour.
        let mut tracker = RoleTracker::new(INTERVAL, Some(latest.clone()));
        tracker.observe(obs(0, true, UUID_A, &format!("{UUID_A}:1-10")));
        let records = confirm_all(&mut tracker);
        assert_eq!(records[0].kind, RecordKind::Reset);
        assert_eq!(records[0].probe_interval, Some(SignedDuration::from_secs(3600)));
        // Writable and changed: the promotion record carries it, reaching back too.
        let mut tracker = RoleTracker::new(INTERVAL, Some(latest.clone()));
        tracker.observe(obs(0, false, UUID_B, &format!("{UUID_A}:1-50")));
        let records = confirm_all(&mut tracker);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].kind, RecordKind::Promotion);
        assert_eq!(records[0].probe_interval, Some(SignedDuration::from_secs(3600)));
        // Unchanged: the floor.
        let mut tracker = RoleTracker::new(INTERVAL, Some(latest));
        tracker.observe(obs(0, false, UUID_A, &format!("{UUID_A}:1-60")));
        let records = confirm_all(&mut tracker);
        assert_eq!(records[0].probe_interval, Some(SignedDuration::from_secs(5)));
    }
}
