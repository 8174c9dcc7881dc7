//! Pure helpers shared by the `status` report and the TUI: ages, site counts, one-word
//! summaries of each status block, and catalog look-ups. No IO, no clock: `now` is passed in.

use bloodraven_crd::catalog::{self, Kind};
use bloodraven_crd::group::{PlannedFailoverPhase, SiteState};
use bloodraven_crd::{ConditionType, MysqlFailoverGroup};
use bloodraven_gtid::GtidSet;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The placeholder for an empty value.
pub const NONE: &str = "-";

/// An age as upstream prints it: `5s`, `12m`, `3h45m`, `2d6h`, `30d` (days only from 7d);
/// `?` for a time in the future by more than a second.
pub fn age(now: Timestamp, then: Timestamp) -> String {
    let seconds = now.as_second() - then.as_second();
    if seconds < -1 {
        return "?".to_owned();
    }
    short_duration(seconds.max(0))
}

/// A span of whole seconds, in the age format.
pub fn short_duration(seconds: i64) -> String {
    let seconds = seconds.max(0);
    let (days, hours, minutes) = (seconds / 86_400, seconds / 3_600 % 24, seconds / 60 % 60);
    if days >= 7 {
        format!("{days}d")
    } else if days > 0 {
        if hours > 0 { format!("{days}d{hours}h") } else { format!("{days}d") }
    } else if seconds >= 3_600 {
        let total_hours = seconds / 3_600;
        if minutes > 0 { format!("{total_hours}h{minutes}m") } else { format!("{total_hours}h") }
    } else if seconds >= 60 {
        format!("{}m", seconds / 60)
    } else {
        format!("{seconds}s")
    }
}

/// The age of an optional time, or `-`.
pub fn age_of(now: Timestamp, then: Option<&Time>) -> String {
    then.map_or_else(|| NONE.to_owned(), |time| age(now, time.0))
}

/// Time left until `deadline`: `in 1m30s`-style text, or `overdue by 5s`.
pub fn countdown(now: Timestamp, deadline: Timestamp) -> String {
    let seconds = deadline.as_second() - now.as_second();
    if seconds >= 0 {
        let minutes = seconds / 60;
        if minutes > 0 {
            format!("in {minutes}m{:02}s", seconds % 60)
        } else {
            format!("in {seconds}s")
        }
    } else {
        format!("overdue by {}", short_duration(-seconds))
    }
}

/// A timestamp in RFC 3339 with whole seconds.
pub fn timestamp(time: &Time) -> String {
    at(time.0)
}

/// The one time format of every screen and of `status`: RFC 3339 in UTC with its zone
/// (`2026-04-20T14:40:00Z`), as the verdict's facts write it.
pub fn at(time: Timestamp) -> String {
    bloodraven_facts::verdict::format_time(time)
}

/// Byte counts in binary units (`1.5GiB`).
pub fn bytes(count: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = count as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{count}B") } else { format!("{value:.1}{}", UNITS[unit]) }
}

/// Counts of writable, read-only and other sites, over the spec's sites.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteCounts {
    pub writable: usize,
    pub read_only: usize,
    pub other: usize,
}

impl std::fmt::Display for SiteCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}W/{}RO/{}X", self.writable, self.read_only, self.other)
    }
}

/// `<w>W/<r>RO/<x>X` counts: every spec site is counted once, by its status state.
pub fn site_counts(group: &MysqlFailoverGroup) -> SiteCounts {
    let mut counts = SiteCounts::default();
    for site in &group.spec.sites {
        let state = group.status.as_ref().and_then(|status| status.site(&site.name)?.state.clone());
        match state {
            Some(SiteState::Writable) => counts.writable += 1,
            Some(SiteState::ReadOnly) => counts.read_only += 1,
            _ => counts.other += 1,
        }
    }
    counts
}

/// The status of a condition (`True`, `False`, `Unknown`) or `-`.
pub fn condition_status(group: &MysqlFailoverGroup, type_: &ConditionType) -> String {
    group
        .status
        .as_ref()
        .and_then(|status| status.condition(type_))
        .map_or_else(|| NONE.to_owned(), |condition| condition.status.as_str().to_owned())
}

/// Whether automation is held: a `plannedFailoverHold`, `AutomaticFailoverHeld=True`, or a
/// terminal marker that carries `ManualRecoveryRequired` (`MysqlFailoverGroup::automation_held`).
pub fn held(group: &MysqlFailoverGroup) -> bool {
    group.automation_held()
}

/// `READY` with the `+held` marker the spec asks the summary to show.
pub fn ready_with_hold(group: &MysqlFailoverGroup) -> String {
    let ready = condition_status(group, &ConditionType::Ready);
    if held(group) { format!("{ready}+held") } else { ready }
}

/// The planned-failover phase, `Failed(<reason>)` when failed with a reason, or `-`.
pub fn planned_phase(group: &MysqlFailoverGroup) -> String {
    let Some(record) = group.status.as_ref().and_then(|status| status.planned_failover.as_ref())
    else {
        return NONE.to_owned();
    };
    let Some(phase) = &record.phase else { return NONE.to_owned() };
    let reason = record.result.as_ref().and_then(|result| result.reason.as_ref());
    match (phase, reason) {
        (PlannedFailoverPhase::Failed, Some(reason)) => format!("Failed({})", reason.as_str()),
        _ => phase.as_str().to_owned(),
    }
}

/// The reclone queue: `<phase>(<pending>)` or `-`.
pub fn reclone_queue(group: &MysqlFailoverGroup) -> String {
    let Some(queue) = group.status.as_ref().and_then(|status| status.restore_reclones.as_ref())
    else {
        return NONE.to_owned();
    };
    let phase = queue.phase.as_ref().map_or("?", |phase| phase.as_str());
    format!("{phase}({})", queue.pending.len())
}

/// The restore in flight or last ended: in-place first, then the bootstrap restore.
pub fn restore_phase(group: &MysqlFailoverGroup) -> String {
    let Some(status) = group.status.as_ref() else { return NONE.to_owned() };
    if let Some(phase) = status.restore_in_place.as_ref().and_then(|r| r.phase.as_ref()) {
        return format!("in-place:{}", phase.as_str());
    }
    if let Some(phase) = status.restore.as_ref().and_then(|r| r.phase.as_ref()) {
        return format!("init:{}", phase.as_str());
    }
    NONE.to_owned()
}

/// The archive's state (with its refusal reason), from `status.pitr.archive`.
pub fn archive_state(group: &MysqlFailoverGroup) -> String {
    let Some(archive) = group
        .status
        .as_ref()
        .and_then(|status| status.pitr.as_ref())
        .and_then(|pitr| pitr.archive.as_ref())
    else {
        return NONE.to_owned();
    };
    match (&archive.state, &archive.reason) {
        (Some(state), Some(reason)) => format!("{}({})", state.as_str(), reason.as_str()),
        (Some(state), None) => state.as_str().to_owned(),
        (None, _) => NONE.to_owned(),
    }
}

/// The age of the last failover record, or `-`.
pub fn last_failover_age(group: &MysqlFailoverGroup, now: Timestamp) -> String {
    age_of(
        now,
        group
            .status
            .as_ref()
            .and_then(|status| status.last_failover.as_ref())
            .and_then(|last| last.time.as_ref()),
    )
}

/// The first site with a recovery state, as `<site>=<state>`, or `-`.
pub fn recovery(group: &MysqlFailoverGroup) -> String {
    group
        .status
        .as_ref()
        .and_then(|status| {
            status.sites.iter().find_map(|site| {
                site.recovery_state
                    .as_ref()
                    .map(|state| format!("{}={}", site.name, state.as_str()))
            })
        })
        .unwrap_or_else(|| NONE.to_owned())
}

/// The active site or `-`.
pub fn active_site(group: &MysqlFailoverGroup) -> String {
    group
        .status
        .as_ref()
        .and_then(|status| status.active_site.clone())
        .unwrap_or_else(|| NONE.to_owned())
}

/// The catalog's one-line meaning of `token` in `kind`, or a note that it is unknown.
pub fn meaning(kind: Kind, token: &str) -> &'static str {
    catalog::lookup(kind, token)
        .or_else(|| catalog::lookup_any(token).next().map(|(_, entry)| entry))
        .map_or("(not in this console's catalog: a newer operator wrote it)", |entry| entry.meaning)
}

/// The catalog's remedy for `token` in `kind`, when it has one.
pub fn remedy(kind: Kind, token: &str) -> Option<&'static str> {
    catalog::lookup(kind, token)
        .or_else(|| catalog::lookup_any(token).next().map(|(_, entry)| entry))
        .map(|entry| entry.remedy)
}

/// A GTID set as the status reports it: absent, parsed by `bloodraven-gtid`, or text that is
/// not a GTID set (shown as such, never as 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GtidText {
    Absent,
    Set(GtidSet),
    Unparsable(String),
}

/// What a count or difference shows for text that is not a GTID set.
pub const UNPARSABLE: &str = "invalid";

impl GtidText {
    /// Parses `text` (a `gtidExecuted` value) with `bloodraven-gtid`.
    pub fn of(text: Option<&str>) -> Self {
        match text {
            None => GtidText::Absent,
            Some(text) => match text.parse::<GtidSet>() {
                Ok(set) => GtidText::Set(set),
                Err(error) => GtidText::Unparsable(error.to_string()),
            },
        }
    }

    /// How many transactions the set holds (`GtidSet::count`: overlaps counted once), `-`
    /// when absent, [`UNPARSABLE`] when the text is not a GTID set.
    pub fn count(&self) -> String {
        match self {
            GtidText::Absent => NONE.to_owned(),
            GtidText::Set(set) => set.count().to_string(),
            GtidText::Unparsable(_) => UNPARSABLE.to_owned(),
        }
    }

    /// This site against the primary, by set difference: `-N` transactions the primary has
    /// and this site lacks, `+M` transactions only this site has (errant), `+0` when equal;
    /// `-` when either is absent, [`UNPARSABLE`] when either is not a GTID set.
    pub fn delta(&self, primary: &GtidText) -> String {
        match (self, primary) {
            (GtidText::Unparsable(_), _) | (_, GtidText::Unparsable(_)) => UNPARSABLE.to_owned(),
            (GtidText::Set(site), GtidText::Set(primary)) => {
                let missing = primary.difference(site).count();
                let extra = site.difference(primary).count();
                match (missing, extra) {
                    (0, extra) => format!("+{extra}"),
                    (missing, 0) => format!("-{missing}"),
                    (missing, extra) => format!("-{missing} +{extra}"),
                }
            }
            _ => NONE.to_owned(),
        }
    }
}

/// Truncates `text` to `limit` characters, ending with `…` when cut.
pub fn truncate(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(limit.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn ages_follow_the_upstream_format() {
        let now = at("2026-04-20T14:40:00Z");
        let cases = [
            ("2026-04-20T14:39:55Z", "5s"),
            ("2026-04-20T14:28:00Z", "12m"),
            ("2026-04-20T10:55:00Z", "3h45m"),
            ("2026-04-20T12:40:00Z", "2h"),
            ("2026-04-18T08:40:00Z", "2d6h"),
            ("2026-03-21T14:40:00Z", "30d"),
            ("2026-04-20T14:45:00Z", "?"),
        ];
        for (then, expected) in cases {
            assert_eq!(age(now, at(then)), expected, "{then}");
        }
    }

    #[test]
    fn countdowns_and_bytes() {
        let now = at("2026-04-20T14:40:00Z");
        assert_eq!(countdown(now, at("2026-04-20T14:41:30Z")), "in 1m30s");
        assert_eq!(countdown(now, at("2026-04-20T14:40:09Z")), "in 9s");
        assert_eq!(countdown(now, at("2026-04-20T14:39:00Z")), "overdue by 1m");
        assert_eq!(bytes(512), "512B");
        assert_eq!(bytes(1536 * 1024 * 1024), "1.5GiB");
    }

    #[test]
    fn gtid_counts_and_differences_come_from_the_gtid_crate() {
        const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
        const B: &str = "4f22ab58-82db-22f2-8f44-d91bb0530673";
        let count = |text: &str| GtidText::of(Some(text)).count();
        assert_eq!(count(&format!("{A}:1-9182731")), "9182731");
        // Overlapping intervals count once; a repeated UUID merges.
        assert_eq!(count(&format!("{A}:1-5:3-6")), "6");
        assert_eq!(count(&format!("{A}:1-5,{A}:4-8")), "8");
        // Tagged and untagged transactions of one UUID are separate sources.
        assert_eq!(count(&format!("{A}:1-5:tag_1:1-3,{B}:1-2")), "10");
        // An end below its start is an empty interval, as in MySQL.
        assert_eq!(count(&format!("{A}:5-1")), "0");
        assert_eq!(count(""), "0");
        // Not a GTID set: said, never counted as 0.
        assert_eq!(count("a:1-5"), UNPARSABLE);
        assert_eq!(count(&format!("{A}:x-y")), UNPARSABLE);
        assert_eq!(GtidText::of(None).count(), NONE);

        let delta = |site: &str, primary: &str| {
            GtidText::of(Some(site)).delta(&GtidText::of(Some(primary)))
        };
        assert_eq!(delta(&format!("{A}:1-6:3-4"), &format!("{A}:1-6")), "+0");
        assert_eq!(delta(&format!("{A}:1-3"), &format!("{A}:1-5:4-9")), "-6");
        // Same count, different transactions: a plain subtraction would say +0.
        assert_eq!(delta(&format!("{A}:1-5:tag_1:1-2"), &format!("{A}:1-7")), "-2 +2");
        assert_eq!(delta(&format!("{A}:1-9,{B}:1"), &format!("{A}:1-9")), "+1");
        assert_eq!(delta("a:1", &format!("{A}:1-9")), UNPARSABLE);
        assert_eq!(GtidText::of(None).delta(&GtidText::of(Some(A))), NONE);
    }

    #[test]
    fn truncation_marks_the_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
