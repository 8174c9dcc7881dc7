//! Kubernetes `metav1.Duration` text: Go's `time.Duration` `String()` and `ParseDuration`, one
//! parser and one formatter for the two types that carry it.
//!
//! The API server stores durations such as `spec.plannedFailover.maxLagWait` and
//! `status.plannedFailover.settings.maxLagWait` as the string Go prints (`5m0s`, `1h0m0s`,
//! `1.5s`, `300ms`) and accepts anything `time.ParseDuration` accepts (`5m`, `90s`, `1h30m`,
//! `.5h`, `+1s`, `-2m`, `0`). The parser and formatter here reproduce both directions bit for
//! bit: the same nanosecond value for every input Go accepts, the same refusal for every input
//! Go refuses, and the same canonical text on output.
//!
//! | Type | Holds | Used by |
//! |---|---|---|
//! | [`Duration`] | the text exactly as written (`5m` stays `5m`), parsed on demand by [`Duration::to_std`] | the fields of the CRD types, so a spec or status round-trip loses nothing |
//! | [`GoDuration`] | a signed count of nanoseconds, printed canonically (`5m0s`) | the annotation values (`pdx:maxLagWait=30s`) |

use std::{borrow::Cow, fmt, str::FromStr};

/// A duration in Go syntax, as stored in the API: the text it was given, kept verbatim.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Duration(String);

/// A signed span of nanoseconds, printed and parsed the way Go's `time.Duration` is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoDuration {
    nanos: i64,
}

/// Go's `time.ParseDuration` grammar restricted to non-negative values.
pub const DURATION_PATTERN: &str = r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+)$";

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// `1 << 63`, the magnitude of `i64::MIN`: Go's overflow bound while accumulating.
const MAGNITUDE_LIMIT: u64 = 1 << 63;

impl Duration {
    /// Wraps a duration string without checking it (see [`Duration::to_std`]).
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// Formats a duration the way Go's `time.Duration.String()` does: `5m0s`, `1h0m0s`, `1.5s`,
    /// `300ms`, `0s`.
    pub fn from_std(duration: std::time::Duration) -> Self {
        Self(format_go(false, duration.as_nanos()))
    }

    /// The duration exactly as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Parses the stored text with Go's `time.ParseDuration` rules ([`GoDuration::parse`]);
    /// a negative value is refused with [`DurationErrorKind::Negative`].
    pub fn to_std(&self) -> Result<std::time::Duration, DurationError> {
        GoDuration::parse(&self.0)?.to_std().ok_or_else(|| DurationError {
            input: self.0.clone(),
            position: 0,
            kind: DurationErrorKind::Negative,
        })
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<std::time::Duration> for Duration {
    fn from(duration: std::time::Duration) -> Self {
        Self::from_std(duration)
    }
}

impl schemars::JsonSchema for Duration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration in Go syntax, such as 30s, 5m or 1h30m.",
            "pattern": DURATION_PATTERN,
        })
    }
}

impl GoDuration {
    /// The zero duration, printed `0s`.
    pub const ZERO: GoDuration = GoDuration { nanos: 0 };

    /// A duration of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> GoDuration {
        GoDuration { nanos }
    }

    /// A duration of whole seconds; `None` when it does not fit in `i64` nanoseconds.
    pub const fn from_secs(secs: i64) -> Option<GoDuration> {
        match secs.checked_mul(SECOND as i64) {
            Some(nanos) => Some(GoDuration { nanos }),
            None => None,
        }
    }

    /// A duration of whole minutes; `None` when it does not fit.
    pub const fn from_mins(mins: i64) -> Option<GoDuration> {
        match mins.checked_mul(MINUTE as i64) {
            Some(nanos) => Some(GoDuration { nanos }),
            None => None,
        }
    }

    /// The signed number of nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.nanos
    }

    /// The span as a `std::time::Duration`; `None` when negative.
    pub fn to_std(self) -> Option<std::time::Duration> {
        u64::try_from(self.nanos).ok().map(std::time::Duration::from_nanos)
    }

    /// A `std::time::Duration` as a Go duration; `None` above `i64::MAX` nanoseconds.
    pub fn from_std(duration: std::time::Duration) -> Option<GoDuration> {
        i64::try_from(duration.as_nanos()).ok().map(GoDuration::from_nanos)
    }

    /// Parses Go duration text exactly as `time.ParseDuration` does.
    pub fn parse(input: &str) -> Result<GoDuration, DurationError> {
        parse_go(input)
    }
}

/// Why a duration did not parse, with the byte position in the input where Go's parser gave up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {input:?}: {kind} at byte {position}")]
pub struct DurationError {
    /// The text that was parsed.
    pub input: String,
    /// Byte offset into `input`.
    pub position: usize,
    /// What was wrong.
    pub kind: DurationErrorKind,
}

/// The ways Go's `time.ParseDuration` refuses its input, and the one refusal it adds for
/// [`Duration::to_std`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationErrorKind {
    /// Nothing (or only a sign) to parse.
    #[error("no number")]
    Empty,
    /// A number was expected (`[0-9.]`), or a `.` had no digit on either side.
    #[error("expected a number")]
    ExpectedNumber,
    /// A number without a unit after it (`5`, `1h30`).
    #[error("missing unit")]
    MissingUnit,
    /// A unit other than `ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`.
    #[error("unknown unit {unit:?}")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
    },
    /// The value does not fit in a signed 64-bit count of nanoseconds.
    #[error("out of range")]
    Overflow,
    /// Go accepts it, but [`Duration::to_std`] has no negative spans (`-5s`).
    #[error("negative value")]
    Negative,
}

fn unit_nanos(unit: &[u8]) -> Option<u64> {
    match unit {
        b"ns" => Some(NANOSECOND),
        // "us", "µs" (U+00B5 micro sign) and "μs" (U+03BC Greek small letter mu).
        b"us" | b"\xC2\xB5s" | b"\xCE\xBCs" => Some(MICROSECOND),
        b"ms" => Some(MILLISECOND),
        b"s" => Some(SECOND),
        b"m" => Some(MINUTE),
        b"h" => Some(HOUR),
        _ => None,
    }
}

/// The one parser: Go's `time.ParseDuration`.
fn parse_go(input: &str) -> Result<GoDuration, DurationError> {
    let fail = |position: usize, kind: DurationErrorKind| DurationError {
        input: input.to_owned(),
        position,
        kind,
    };
    let bytes = input.as_bytes();
    let mut at = 0;
    let mut negative = false;
    if let Some(&sign @ (b'-' | b'+')) = bytes.first() {
        negative = sign == b'-';
        at = 1;
    }
    if &bytes[at..] == b"0" {
        return Ok(GoDuration::ZERO);
    }
    if at == bytes.len() {
        return Err(fail(at, DurationErrorKind::Empty));
    }
    let mut total: u64 = 0;
    while at < bytes.len() {
        let component_start = at;
        let first = bytes[at];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(fail(at, DurationErrorKind::ExpectedNumber));
        }
        // Leading integer: Go refuses once the value passes 1 << 63.
        let mut whole: u64 = 0;
        let whole_start = at;
        while let Some(&digit) = bytes.get(at).filter(|b| b.is_ascii_digit()) {
            if whole > MAGNITUDE_LIMIT / 10 {
                return Err(fail(component_start, DurationErrorKind::Overflow));
            }
            whole = whole * 10 + u64::from(digit - b'0');
            if whole > MAGNITUDE_LIMIT {
                return Err(fail(component_start, DurationErrorKind::Overflow));
            }
            at += 1;
        }
        let had_whole = at != whole_start;
        // Optional fraction: Go stops accumulating precision on overflow instead of failing.
        let mut fraction: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut had_fraction = false;
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            let fraction_start = at;
            let mut overflowed = false;
            while let Some(&digit) = bytes.get(at).filter(|b| b.is_ascii_digit()) {
                at += 1;
                if overflowed {
                    continue;
                }
                if fraction > (MAGNITUDE_LIMIT - 1) / 10 {
                    overflowed = true;
                    continue;
                }
                let next = fraction * 10 + u64::from(digit - b'0');
                if next > MAGNITUDE_LIMIT {
                    overflowed = true;
                    continue;
                }
                fraction = next;
                scale *= 10.0;
            }
            had_fraction = at != fraction_start;
        }
        if !had_whole && !had_fraction {
            return Err(fail(component_start, DurationErrorKind::ExpectedNumber));
        }
        // Unit: every byte up to the next '.' or digit.
        let unit_start = at;
        while let Some(&byte) = bytes.get(at) {
            if byte == b'.' || byte.is_ascii_digit() {
                break;
            }
            at += 1;
        }
        if at == unit_start {
            return Err(fail(unit_start, DurationErrorKind::MissingUnit));
        }
        let unit_bytes = &bytes[unit_start..at];
        let Some(unit) = unit_nanos(unit_bytes) else {
            let unit = String::from_utf8_lossy(unit_bytes).into_owned();
            return Err(fail(unit_start, DurationErrorKind::UnknownUnit { unit }));
        };
        if whole > MAGNITUDE_LIMIT / unit {
            return Err(fail(component_start, DurationErrorKind::Overflow));
        }
        let mut value = whole * unit;
        if fraction > 0 {
            // Go computes the fractional part in float64 and truncates; the product is at most
            // 3.6e12 (one hour in nanoseconds), so the conversion cannot saturate.
            let fractional = (fraction as f64 * (unit as f64 / scale)) as u64;
            value = value.saturating_add(fractional);
            if value > MAGNITUDE_LIMIT {
                return Err(fail(component_start, DurationErrorKind::Overflow));
            }
        }
        total = total.saturating_add(value);
        if total > MAGNITUDE_LIMIT {
            return Err(fail(component_start, DurationErrorKind::Overflow));
        }
    }
    if negative {
        // total <= 1 << 63, so its negation fits: i64::MIN is allowed.
        let nanos = 0i64.wrapping_sub_unsigned(total);
        return Ok(GoDuration::from_nanos(nanos));
    }
    match i64::try_from(total) {
        Ok(nanos) => Ok(GoDuration::from_nanos(nanos)),
        Err(_) => Err(fail(bytes.len(), DurationErrorKind::Overflow)),
    }
}

/// The one formatter: Go's `time.Duration.String()` (`0s`, `1.5µs`, `300ms`, `1.5s`, `5m0s`,
/// `1h0m0s`) for `magnitude` nanoseconds. The magnitude is wider than Go's so that a
/// `std::time::Duration` beyond `i64` nanoseconds still prints, with more hours.
fn format_go(negative: bool, mut magnitude: u128) -> String {
    if magnitude == 0 {
        return "0s".to_owned();
    }
    // Built back to front, as Go does, then reversed.
    let mut reversed: Vec<u8> = Vec::with_capacity(48);
    reversed.push(b's');
    if magnitude < u128::from(SECOND) {
        let precision = if magnitude < u128::from(MICROSECOND) {
            reversed.push(b'n');
            0
        } else if magnitude < u128::from(MILLISECOND) {
            // "µ" (U+00B5) is 0xC2 0xB5; pushed reversed.
            reversed.extend_from_slice(&[0xB5, 0xC2]);
            3
        } else {
            reversed.push(b'm');
            6
        };
        magnitude = push_fraction(&mut reversed, magnitude, precision);
        push_integer(&mut reversed, magnitude);
    } else {
        magnitude = push_fraction(&mut reversed, magnitude, 9);
        push_integer(&mut reversed, magnitude % 60);
        magnitude /= 60;
        if magnitude > 0 {
            reversed.push(b'm');
            push_integer(&mut reversed, magnitude % 60);
            magnitude /= 60;
            if magnitude > 0 {
                reversed.push(b'h');
                push_integer(&mut reversed, magnitude);
            }
        }
    }
    if negative {
        reversed.push(b'-');
    }
    reversed.reverse();
    String::from_utf8_lossy(&reversed).into_owned()
}

/// Writes `value / 10^precision`'s fraction (".123", trailing zeros dropped) in front of `out`,
/// returning the integer part, as Go's `fmtFrac` does.
fn push_fraction(out: &mut Vec<u8>, mut value: u128, precision: u32) -> u128 {
    let mut printing = false;
    for _ in 0..precision {
        let digit = value % 10;
        printing = printing || digit != 0;
        if printing {
            out.push(b'0' + digit as u8);
        }
        value /= 10;
    }
    if printing {
        out.push(b'.');
    }
    value
}

fn push_integer(out: &mut Vec<u8>, mut value: u128) {
    if value == 0 {
        out.push(b'0');
        return;
    }
    while value > 0 {
        out.push(b'0' + (value % 10) as u8);
        value /= 10;
    }
}

impl fmt::Display for GoDuration {
    /// Go's `time.Duration.String()`: `0s`, `1.5µs`, `300ms`, `1.5s`, `5m0s`, `1h0m0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_go(self.nanos < 0, u128::from(self.nanos.unsigned_abs())))
    }
}

impl FromStr for GoDuration {
    type Err = DurationError;

    fn from_str(input: &str) -> Result<GoDuration, DurationError> {
        GoDuration::parse(input)
    }
}

impl serde::Serialize for GoDuration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for GoDuration {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<GoDuration, D::Error> {
        // metav1.Duration unmarshals only from a JSON string.
        let text = Cow::<'de, str>::deserialize(deserializer)?;
        GoDuration::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for GoDuration {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("GoDuration")
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

#[cfg(test)]
mod tests;
