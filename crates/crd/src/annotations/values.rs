//! Typed values of the annotations the operator and the console read and write.
//!
//! Every type parses from the annotation's text and formats back to it; for every value `v` a
//! type can hold, `T::parse(&v.to_string()) == Ok(v)`. Constructors apply the same checks as
//! the parsers, so an invalid value cannot be built.
//!
//! Spec says / we chose:
//!
//! | Annotation | Spec says | We chose |
//! |---|---|---|
//! | `planned-failover` | `<site>[:maxLagWait=<duration>]`, 1s to 1h | exactly that; any other key is refused |
//! | `planned-failover-confirmed` | `<runID>:since=<confirmation time>` | the time in the same `YYYYMMDDThhmmssZ` form as the other `since` values: RFC 3339 holds `:`, which the grammar refuses |
//! | `planned-failover-stall-since`, `planned-failover-manager-absent-since` | `<runID>:since=<YYYYMMDDThhmmssZ>` | exactly that, UTC, whole seconds |
//! | `planned-failover-terminal` | `{"schemaVersion":1,"runID":…,"outcome":…,"reason":…,"warnings":[…]}`, `warnings` optional; anything else "proves nothing" | any other payload (other fields, another version, bad JSON, an empty `runID` or `outcome`) is the value [`TerminalMarker::ProvesNothing`], not an error |
//! | `acknowledge-planned-failover-hold` | `<runID>` | a bare subject; any pair is refused |
//! | `reclone-site` | `<site>:confirm=<group>:uid=<uid>[:gtidPrefix=<source UUID>]` | `confirm` and `uid` required, `gtidPrefix` a textual UUID; pairs in any order on input, written in the spec's order |
//! | `planned-failover-status-fence` | a value that "moves past the stored one (by 1ns when the clock has not moved)" | an RFC 3339 timestamp with up to nanosecond precision |

use std::fmt;

use jiff::{Timestamp, civil::DateTime, tz::TimeZone};

use crate::duration::{DurationErrorKind, GoDuration};

use super::{
    ACKNOWLEDGE_PLANNED_FAILOVER_HOLD, PLANNED_FAILOVER, PLANNED_FAILOVER_STATUS_FENCE,
    RECLONE_SITE,
    grammar::{Action, ActionError, ActionErrorKind},
};

/// Why a typed annotation value was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid {annotation} annotation value {input:?}: {kind} at byte {position}")]
pub struct ValueError {
    /// The annotation key.
    pub annotation: &'static str,
    /// The value that was parsed (for constructors, the value as it would have been formatted).
    pub input: String,
    /// Byte offset into `input`.
    pub position: usize,
    /// What was wrong.
    pub kind: ValueErrorKind,
}

/// The ways a typed annotation value can be wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueErrorKind {
    /// The action grammar was broken.
    #[error("{0}")]
    Syntax(ActionErrorKind),
    /// A key this annotation does not take.
    #[error("unknown key {key:?} (allowed: {allowed})")]
    UnknownKey {
        /// The key as written.
        key: String,
        /// The keys the annotation takes.
        allowed: &'static str,
    },
    /// A required key is absent.
    #[error("missing key {key:?}")]
    MissingKey {
        /// The key that is required.
        key: &'static str,
    },
    /// A duration that Go's `time.ParseDuration` refuses.
    #[error("{key} is not a duration: {kind}")]
    InvalidDuration {
        /// The key holding it.
        key: &'static str,
        /// Why the duration parser refused it.
        kind: DurationErrorKind,
    },
    /// A duration outside its bounds.
    #[error("{key} {value} is outside {min} to {max}")]
    DurationOutOfRange {
        /// The key holding it.
        key: &'static str,
        /// The parsed value.
        value: GoDuration,
        /// Smallest allowed value.
        min: GoDuration,
        /// Largest allowed value.
        max: GoDuration,
    },
    /// A time that is not `YYYYMMDDThhmmssZ`.
    #[error("{key} is not a UTC time of the form YYYYMMDDThhmmssZ")]
    InvalidCompactTime {
        /// The key holding it.
        key: &'static str,
    },
    /// A value that is not a textual UUID (`8-4-4-4-12` hexadecimal digits).
    #[error("{key} is not a UUID")]
    InvalidUuid {
        /// The key holding it.
        key: &'static str,
    },
    /// An RFC 3339 timestamp that did not parse.
    #[error("not an RFC 3339 timestamp ({reason})")]
    InvalidTimestamp {
        /// The timestamp parser's explanation.
        reason: String,
    },
    /// A required field of a JSON value is empty.
    #[error("{field} is empty")]
    EmptyField {
        /// The field's JSON name.
        field: &'static str,
    },
}

impl ValueError {
    fn new(annotation: &'static str, input: &str, position: usize, kind: ValueErrorKind) -> Self {
        ValueError { annotation, input: input.to_owned(), position, kind }
    }

    fn syntax(annotation: &'static str, error: ActionError) -> Self {
        ValueError {
            annotation,
            input: error.input,
            position: error.position,
            kind: ValueErrorKind::Syntax(error.kind),
        }
    }
}

/// Parses `input` by the grammar and refuses keys outside `allowed`.
fn parse_action(
    annotation: &'static str,
    input: &str,
    allowed: &[&'static str],
    allowed_text: &'static str,
) -> Result<Action, ValueError> {
    let action = Action::parse(input).map_err(|error| ValueError::syntax(annotation, error))?;
    if let Some(pair) = action.pairs().find(|pair| !allowed.contains(&pair.key)) {
        let kind = ValueErrorKind::UnknownKey { key: pair.key.to_owned(), allowed: allowed_text };
        return Err(ValueError::new(annotation, input, pair.key_position, kind));
    }
    Ok(action)
}

fn required<'a>(
    annotation: &'static str,
    input: &str,
    action: &'a Action,
    key: &'static str,
) -> Result<super::grammar::Pair<'a>, ValueError> {
    action.get(key).ok_or_else(|| {
        ValueError::new(annotation, input, input.len(), ValueErrorKind::MissingKey { key })
    })
}

/// A UTC time to the second, written `YYYYMMDDThhmmssZ` (`20260420T143209Z`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CompactTime(Timestamp);

impl CompactTime {
    /// `timestamp` as a compact time; `None` unless it is a whole second in years 0000 to 9999.
    pub fn new(timestamp: Timestamp) -> Option<CompactTime> {
        let year = timestamp.to_zoned(TimeZone::UTC).year();
        (timestamp.subsec_nanosecond() == 0 && year >= 0).then_some(CompactTime(timestamp))
    }

    /// `timestamp` cut to the whole second below it; `None` before year 0000.
    pub fn truncating(timestamp: Timestamp) -> Option<CompactTime> {
        let floor =
            jiff::TimestampRound::new().smallest(jiff::Unit::Second).mode(jiff::RoundMode::Floor);
        timestamp.round(floor).ok().and_then(CompactTime::new)
    }

    /// The instant.
    pub fn timestamp(self) -> Timestamp {
        self.0
    }

    /// Parses `YYYYMMDDThhmmssZ` exactly (16 bytes, UTC, no fraction).
    pub fn parse(text: &str) -> Option<CompactTime> {
        let bytes = text.as_bytes();
        if bytes.len() != 16 || bytes[8] != b'T' || bytes[15] != b'Z' {
            return None;
        }
        let number = |range: std::ops::Range<usize>| -> Option<i32> {
            let digits = &bytes[range];
            digits
                .iter()
                .all(u8::is_ascii_digit)
                .then(|| digits.iter().fold(0i32, |acc, digit| acc * 10 + i32::from(digit - b'0')))
        };
        let datetime = DateTime::new(
            i16::try_from(number(0..4)?).ok()?,
            i8::try_from(number(4..6)?).ok()?,
            i8::try_from(number(6..8)?).ok()?,
            i8::try_from(number(9..11)?).ok()?,
            i8::try_from(number(11..13)?).ok()?,
            i8::try_from(number(13..15)?).ok()?,
            0,
        )
        .ok()?;
        let timestamp = TimeZone::UTC.to_timestamp(datetime).ok()?;
        CompactTime::new(timestamp)
    }
}

impl fmt::Display for CompactTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0.to_zoned(TimeZone::UTC).datetime();
        write!(
            f,
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            t.year(),
            t.month(),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )
    }
}

/// `bloodraven.shipstream.io/planned-failover`: `<site>[:maxLagWait=<duration>]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlannedFailoverRequest {
    target_site: String,
    max_lag_wait: Option<GoDuration>,
}

impl PlannedFailoverRequest {
    /// The shortest `maxLagWait` override: 1s.
    pub const MAX_LAG_WAIT_MIN: GoDuration = GoDuration::from_nanos(1_000_000_000);
    /// The longest `maxLagWait` override: 1h.
    pub const MAX_LAG_WAIT_MAX: GoDuration = GoDuration::from_nanos(3_600_000_000_000);
    const KEY_MAX_LAG_WAIT: &'static str = "maxLagWait";

    /// A request to move the primary role to `target_site`.
    pub fn new(target_site: impl Into<String>) -> Result<PlannedFailoverRequest, ValueError> {
        let action =
            Action::new(target_site).map_err(|e| ValueError::syntax(PLANNED_FAILOVER, e))?;
        Ok(PlannedFailoverRequest { target_site: action.subject().to_owned(), max_lag_wait: None })
    }

    /// This request with a `maxLagWait` override (1s to 1h).
    pub fn with_max_lag_wait(
        mut self,
        max_lag_wait: GoDuration,
    ) -> Result<PlannedFailoverRequest, ValueError> {
        let key = Self::KEY_MAX_LAG_WAIT;
        let (min, max) = (Self::MAX_LAG_WAIT_MIN, Self::MAX_LAG_WAIT_MAX);
        if !(min..=max).contains(&max_lag_wait) {
            self.max_lag_wait = Some(max_lag_wait);
            let input = self.to_string();
            let position = self.target_site.len() + key.len() + 2;
            let kind = ValueErrorKind::DurationOutOfRange { key, value: max_lag_wait, min, max };
            return Err(ValueError::new(PLANNED_FAILOVER, &input, position, kind));
        }
        self.max_lag_wait = Some(max_lag_wait);
        Ok(self)
    }

    /// Parses the annotation value.
    pub fn parse(input: &str) -> Result<PlannedFailoverRequest, ValueError> {
        let key = Self::KEY_MAX_LAG_WAIT;
        let action = parse_action(PLANNED_FAILOVER, input, &[key], "maxLagWait")?;
        let mut request =
            PlannedFailoverRequest { target_site: action.subject().to_owned(), max_lag_wait: None };
        if let Some(pair) = action.get(key) {
            let value = GoDuration::parse(pair.value).map_err(|error| {
                let kind = ValueErrorKind::InvalidDuration { key, kind: error.kind };
                ValueError::new(PLANNED_FAILOVER, input, pair.value_position + error.position, kind)
            })?;
            let (min, max) = (Self::MAX_LAG_WAIT_MIN, Self::MAX_LAG_WAIT_MAX);
            if !(min..=max).contains(&value) {
                let kind = ValueErrorKind::DurationOutOfRange { key, value, min, max };
                return Err(ValueError::new(PLANNED_FAILOVER, input, pair.value_position, kind));
            }
            request.max_lag_wait = Some(value);
        }
        Ok(request)
    }

    /// The site the request promotes.
    pub fn target_site(&self) -> &str {
        &self.target_site
    }

    /// The per-request `maxLagWait` override, if any.
    pub fn max_lag_wait(&self) -> Option<GoDuration> {
        self.max_lag_wait
    }
}

impl fmt::Display for PlannedFailoverRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.target_site)?;
        if let Some(max_lag_wait) = self.max_lag_wait {
            write!(f, ":{}={max_lag_wait}", Self::KEY_MAX_LAG_WAIT)?;
        }
        Ok(())
    }
}

/// `<runID>:since=<YYYYMMDDThhmmssZ>`: the value of `planned-failover-confirmed`,
/// `planned-failover-stall-since` and `planned-failover-manager-absent-since`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RunSince {
    run_id: String,
    since: CompactTime,
}

impl RunSince {
    const KEY_SINCE: &'static str = "since";

    /// `run_id` since `since`; `annotation` names the key in errors.
    pub fn new(
        annotation: &'static str,
        run_id: impl Into<String>,
        since: CompactTime,
    ) -> Result<RunSince, ValueError> {
        let action = Action::new(run_id).map_err(|e| ValueError::syntax(annotation, e))?;
        Ok(RunSince { run_id: action.subject().to_owned(), since })
    }

    /// Parses the value of `annotation` (one of the three keys above; it only names errors).
    pub fn parse(annotation: &'static str, input: &str) -> Result<RunSince, ValueError> {
        let key = Self::KEY_SINCE;
        let action = parse_action(annotation, input, &[key], "since")?;
        let pair = required(annotation, input, &action, key)?;
        let since = CompactTime::parse(pair.value).ok_or_else(|| {
            let kind = ValueErrorKind::InvalidCompactTime { key };
            ValueError::new(annotation, input, pair.value_position, kind)
        })?;
        Ok(RunSince { run_id: action.subject().to_owned(), since })
    }

    /// The run the annotation belongs to.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The recorded time.
    pub fn since(&self) -> CompactTime {
        self.since
    }
}

impl fmt::Display for RunSince {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}={}", self.run_id, Self::KEY_SINCE, self.since)
    }
}

/// `bloodraven.shipstream.io/acknowledge-planned-failover-hold`: the run id of the hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HoldAcknowledgement {
    run_id: String,
}

impl HoldAcknowledgement {
    /// An acknowledgement of the hold of run `run_id`.
    pub fn new(run_id: impl Into<String>) -> Result<HoldAcknowledgement, ValueError> {
        let action = Action::new(run_id)
            .map_err(|e| ValueError::syntax(ACKNOWLEDGE_PLANNED_FAILOVER_HOLD, e))?;
        Ok(HoldAcknowledgement { run_id: action.subject().to_owned() })
    }

    /// Parses the annotation value: a run id and nothing else.
    pub fn parse(input: &str) -> Result<HoldAcknowledgement, ValueError> {
        let action = parse_action(ACKNOWLEDGE_PLANNED_FAILOVER_HOLD, input, &[], "none")?;
        Ok(HoldAcknowledgement { run_id: action.subject().to_owned() })
    }

    /// The run whose hold is acknowledged.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }
}

impl fmt::Display for HoldAcknowledgement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.run_id)
    }
}

/// Whether `text` is a textual UUID: 8-4-4-4-12 hexadecimal digits, either case.
pub fn is_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(index, byte)| match index {
            8 | 13 | 18 | 23 => *byte == b'-',
            _ => byte.is_ascii_hexdigit(),
        })
}

/// `bloodraven.shipstream.io/reclone-site`:
/// `<site>:confirm=<group>:uid=<uid>[:gtidPrefix=<source UUID>]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RecloneRequest {
    site: String,
    confirm_group: String,
    group_uid: String,
    gtid_prefix: Option<String>,
}

impl RecloneRequest {
    const KEY_CONFIRM: &'static str = "confirm";
    const KEY_UID: &'static str = "uid";
    const KEY_GTID_PREFIX: &'static str = "gtidPrefix";
    const ALLOWED: &'static str = "confirm, uid, gtidPrefix";

    /// A reclone of `site` in group `group` (UID `uid`).
    pub fn new(
        site: impl Into<String>,
        group: impl Into<String>,
        uid: impl Into<String>,
    ) -> Result<RecloneRequest, ValueError> {
        let action = Action::new(site)
            .and_then(|a| a.with_pair(Self::KEY_CONFIRM, group))
            .and_then(|a| a.with_pair(Self::KEY_UID, uid))
            .map_err(|e| ValueError::syntax(RECLONE_SITE, e))?;
        RecloneRequest::from_action(&action.to_string(), &action)
    }

    /// This request with the divergent source's UUID.
    pub fn with_gtid_prefix(
        mut self,
        uuid: impl Into<String>,
    ) -> Result<RecloneRequest, ValueError> {
        self.gtid_prefix = None;
        let action = Action::parse(&self.to_string())
            .and_then(|a| a.with_pair(Self::KEY_GTID_PREFIX, uuid))
            .map_err(|e| ValueError::syntax(RECLONE_SITE, e))?;
        RecloneRequest::from_action(&action.to_string(), &action)
    }

    /// Parses the annotation value; the pairs may come in any order.
    pub fn parse(input: &str) -> Result<RecloneRequest, ValueError> {
        let allowed = [Self::KEY_CONFIRM, Self::KEY_UID, Self::KEY_GTID_PREFIX];
        let action = parse_action(RECLONE_SITE, input, &allowed, Self::ALLOWED)?;
        RecloneRequest::from_action(input, &action)
    }

    fn from_action(input: &str, action: &Action) -> Result<RecloneRequest, ValueError> {
        let confirm = required(RECLONE_SITE, input, action, Self::KEY_CONFIRM)?;
        let uid = required(RECLONE_SITE, input, action, Self::KEY_UID)?;
        let gtid_prefix = match action.get(Self::KEY_GTID_PREFIX) {
            Some(pair) if !is_uuid(pair.value) => {
                let kind = ValueErrorKind::InvalidUuid { key: Self::KEY_GTID_PREFIX };
                return Err(ValueError::new(RECLONE_SITE, input, pair.value_position, kind));
            }
            Some(pair) => Some(pair.value.to_owned()),
            None => None,
        };
        Ok(RecloneRequest {
            site: action.subject().to_owned(),
            confirm_group: confirm.value.to_owned(),
            group_uid: uid.value.to_owned(),
            gtid_prefix,
        })
    }

    /// The site to reclone.
    pub fn site(&self) -> &str {
        &self.site
    }

    /// The group name the request confirms.
    pub fn confirm_group(&self) -> &str {
        &self.confirm_group
    }

    /// The group's `metadata.uid`.
    pub fn group_uid(&self) -> &str {
        &self.group_uid
    }

    /// The divergent source's server UUID, when the site recorded divergence.
    pub fn gtid_prefix(&self) -> Option<&str> {
        self.gtid_prefix.as_deref()
    }
}

impl fmt::Display for RecloneRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:confirm={}:uid={}", self.site, self.confirm_group, self.group_uid)?;
        if let Some(uuid) = &self.gtid_prefix {
            write!(f, ":gtidPrefix={uuid}")?;
        }
        Ok(())
    }
}

/// `bloodraven.shipstream.io/planned-failover-status-fence`: an RFC 3339 instant that each
/// settlement of an ambiguous status write moves forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StatusFence(Timestamp);

impl StatusFence {
    /// A fence at `timestamp`.
    pub fn new(timestamp: Timestamp) -> StatusFence {
        StatusFence(timestamp)
    }

    /// The fence value to write next: `now`, or 1ns past `stored` when the clock has not moved
    /// past it. `None` only when `stored` is the last representable instant.
    pub fn next(stored: Option<StatusFence>, now: Timestamp) -> Option<StatusFence> {
        match stored {
            Some(StatusFence(stored)) if now <= stored => {
                stored.checked_add(jiff::SignedDuration::from_nanos(1)).ok().map(StatusFence)
            }
            _ => Some(StatusFence(now)),
        }
    }

    /// Parses an RFC 3339 timestamp.
    pub fn parse(input: &str) -> Result<StatusFence, ValueError> {
        input.parse::<Timestamp>().map(StatusFence).map_err(|error| {
            let kind = ValueErrorKind::InvalidTimestamp { reason: error.to_string() };
            ValueError::new(PLANNED_FAILOVER_STATUS_FENCE, input, 0, kind)
        })
    }

    /// The instant.
    pub fn timestamp(self) -> Timestamp {
        self.0
    }
}

impl fmt::Display for StatusFence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The only `schemaVersion` of the terminal marker this release understands.
pub const TERMINAL_MARKER_SCHEMA_VERSION: u64 = 1;

/// `bloodraven.shipstream.io/planned-failover-terminal`: either the run's terminal record, or a
/// payload that proves nothing (to be ignored and logged, never an error).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TerminalMarker {
    /// A schemaVersion 1 marker: the run it names is terminal.
    Record(TerminalRecord),
    /// Anything else. It names no run and ends nothing.
    ProvesNothing(IgnoredMarker),
}

/// A marker payload that is not the schemaVersion 1 record, kept verbatim.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IgnoredMarker {
    raw: String,
    why: String,
}

impl IgnoredMarker {
    /// The payload as found.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// Why it proves nothing, for the log line.
    pub fn why(&self) -> &str {
        &self.why
    }
}

/// The terminal record a stalled run wrote outside `/status`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TerminalRecord {
    run_id: String,
    outcome: String,
    reason: String,
    warnings: Option<Vec<String>>,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TerminalWire {
    #[serde(rename = "schemaVersion")]
    schema_version: u64,
    #[serde(rename = "runID")]
    run_id: String,
    outcome: String,
    reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    warnings: Option<Vec<String>>,
}

impl TerminalRecord {
    /// A record for `run_id` ending `outcome` with `reason` (empty for a plain success).
    pub fn new(
        run_id: impl Into<String>,
        outcome: impl Into<String>,
        reason: impl Into<String>,
        warnings: Option<Vec<String>>,
    ) -> Result<TerminalRecord, ValueError> {
        let record = TerminalRecord {
            run_id: run_id.into(),
            outcome: outcome.into(),
            reason: reason.into(),
            warnings,
        };
        let empty = if record.run_id.is_empty() {
            Some("runID")
        } else if record.outcome.is_empty() {
            Some("outcome")
        } else {
            None
        };
        match empty {
            Some(field) => {
                let input = record.to_string();
                let kind = ValueErrorKind::EmptyField { field };
                Err(ValueError::new(super::PLANNED_FAILOVER_TERMINAL, &input, 0, kind))
            }
            None => Ok(record),
        }
    }

    /// The run the marker ends.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// `result.outcome` of the run (`Succeeded`, `SourceLeftFenced`, ...).
    pub fn outcome(&self) -> &str {
        &self.outcome
    }

    /// `result.reason` of the run.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The run's warnings; `None` when the marker has no `warnings` field.
    pub fn warnings(&self) -> Option<&[String]> {
        self.warnings.as_deref()
    }

    fn wire(&self) -> TerminalWire {
        TerminalWire {
            schema_version: TERMINAL_MARKER_SCHEMA_VERSION,
            run_id: self.run_id.clone(),
            outcome: self.outcome.clone(),
            reason: self.reason.clone(),
            warnings: self.warnings.clone(),
        }
    }
}

impl fmt::Display for TerminalRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let json = serde_json::to_string(&self.wire()).map_err(|_| fmt::Error)?;
        f.write_str(&json)
    }
}

impl TerminalMarker {
    /// Reads a marker. Never fails: a payload that is not the schemaVersion 1 record is
    /// [`TerminalMarker::ProvesNothing`].
    pub fn parse(input: &str) -> TerminalMarker {
        let ignored = |why: String| {
            TerminalMarker::ProvesNothing(IgnoredMarker { raw: input.to_owned(), why })
        };
        let value: serde_json::Value = match serde_json::from_str(input) {
            Ok(value) => value,
            Err(error) => return ignored(format!("not JSON: {error}")),
        };
        match value.get("schemaVersion") {
            Some(version) if version.as_u64() == Some(TERMINAL_MARKER_SCHEMA_VERSION) => {}
            Some(version) => return ignored(format!("schemaVersion {version} is not 1")),
            None => return ignored("no schemaVersion".to_owned()),
        }
        let wire: TerminalWire = match serde_json::from_str(input) {
            Ok(wire) => wire,
            Err(error) => return ignored(format!("not the schemaVersion 1 payload: {error}")),
        };
        match TerminalRecord::new(wire.run_id, wire.outcome, wire.reason, wire.warnings) {
            Ok(record) => TerminalMarker::Record(record),
            Err(error) => ignored(error.kind.to_string()),
        }
    }

    /// The record, when the marker is one.
    pub fn record(&self) -> Option<&TerminalRecord> {
        match self {
            TerminalMarker::Record(record) => Some(record),
            TerminalMarker::ProvesNothing(_) => None,
        }
    }
}

impl fmt::Display for TerminalMarker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TerminalMarker::Record(record) => record.fmt(f),
            TerminalMarker::ProvesNothing(ignored) => f.write_str(&ignored.raw),
        }
    }
}

#[cfg(test)]
mod tests;
