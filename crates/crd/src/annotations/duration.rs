//! Kubernetes `metav1.Duration` text: Go's `time.Duration` `String()` and `ParseDuration`.
//!
//! The API server stores durations such as `spec.plannedFailover.maxLagWait` and
//! `status.plannedFailover.settings.maxLagWait` as the string Go prints (`5m0s`, `1h0m0s`,
//! `1.5s`, `300ms`) and accepts anything `time.ParseDuration` accepts (`5m`, `90s`, `1h30m`,
//! `.5h`, `+1s`, `-2m`, `0`). [`Duration`] reproduces both directions bit for bit: the same
//! nanosecond value for every input Go accepts, the same refusal for every input Go refuses,
//! and the same canonical text on output.

use std::{borrow::Cow, fmt, str::FromStr};

/// A signed span of nanoseconds, printed and parsed the way Go's `time.Duration` is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    nanos: i64,
}

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// `1 << 63`, the magnitude of `i64::MIN`: Go's overflow bound while accumulating.
const MAGNITUDE_LIMIT: u64 = 1 << 63;

impl Duration {
    /// The zero duration, printed `0s`.
    pub const ZERO: Duration = Duration { nanos: 0 };

    /// A duration of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Duration {
        Duration { nanos }
    }

    /// A duration of whole seconds; `None` when it does not fit in `i64` nanoseconds.
    pub const fn from_secs(secs: i64) -> Option<Duration> {
        match secs.checked_mul(SECOND as i64) {
            Some(nanos) => Some(Duration { nanos }),
            None => None,
        }
    }

    /// A duration of whole minutes; `None` when it does not fit.
    pub const fn from_mins(mins: i64) -> Option<Duration> {
        match mins.checked_mul(MINUTE as i64) {
            Some(nanos) => Some(Duration { nanos }),
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
    pub fn from_std(duration: std::time::Duration) -> Option<Duration> {
        i64::try_from(duration.as_nanos()).ok().map(Duration::from_nanos)
    }

    /// Parses Go duration text exactly as `time.ParseDuration` does.
    pub fn parse(input: &str) -> Result<Duration, DurationError> {
        parse_go_duration(input)
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

/// The ways Go's `time.ParseDuration` refuses its input.
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

fn parse_go_duration(input: &str) -> Result<Duration, DurationError> {
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
        return Ok(Duration::ZERO);
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
        return Ok(Duration::from_nanos(nanos));
    }
    match i64::try_from(total) {
        Ok(nanos) => Ok(Duration::from_nanos(nanos)),
        Err(_) => Err(fail(bytes.len(), DurationErrorKind::Overflow)),
    }
}

/// Writes `value / 10^precision`'s fraction (".123", trailing zeros dropped) in front of `out`,
/// returning the integer part, as Go's `fmtFrac` does.
fn push_fraction(out: &mut Vec<u8>, mut value: u64, precision: u32) -> u64 {
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

fn push_integer(out: &mut Vec<u8>, mut value: u64) {
    if value == 0 {
        out.push(b'0');
        return;
    }
    while value > 0 {
        out.push(b'0' + (value % 10) as u8);
        value /= 10;
    }
}

impl fmt::Display for Duration {
    /// Go's `time.Duration.String()`: `0s`, `1.5µs`, `300ms`, `1.5s`, `5m0s`, `1h0m0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Built back to front, as Go does, then reversed.
        let mut reversed: Vec<u8> = Vec::with_capacity(32);
        let mut magnitude = self.nanos.unsigned_abs();
        reversed.push(b's');
        if magnitude < SECOND {
            let precision = match magnitude {
                0 => return f.write_str("0s"),
                m if m < MICROSECOND => {
                    reversed.push(b'n');
                    0
                }
                m if m < MILLISECOND => {
                    // "µ" (U+00B5) is 0xC2 0xB5; pushed reversed.
                    reversed.extend_from_slice(&[0xB5, 0xC2]);
                    3
                }
                _ => {
                    reversed.push(b'm');
                    6
                }
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
        if self.nanos < 0 {
            reversed.push(b'-');
        }
        reversed.reverse();
        f.write_str(&String::from_utf8_lossy(&reversed))
    }
}

impl FromStr for Duration {
    type Err = DurationError;

    fn from_str(input: &str) -> Result<Duration, DurationError> {
        Duration::parse(input)
    }
}

impl serde::Serialize for Duration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Duration {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        // metav1.Duration unmarshals only from a JSON string.
        let text = Cow::<'de, str>::deserialize(deserializer)?;
        Duration::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Duration {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Duration")
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn parses_to(input: &str, nanos: i64) {
        assert_eq!(Duration::parse(input), Ok(Duration::from_nanos(nanos)), "input {input:?}");
    }

    #[track_caller]
    fn refuses(input: &str, position: usize, kind: DurationErrorKind) {
        let err = Duration::parse(input).unwrap_err();
        assert_eq!((err.position, err.kind), (position, kind), "input {input:?}");
    }

    #[test]
    fn parses_what_go_parses() {
        // Cases from Go's time/time_test.go parseDurationTests.
        parses_to("0", 0);
        parses_to("5s", 5 * SECOND as i64);
        parses_to("30s", 30 * SECOND as i64);
        parses_to("1478s", 1478 * SECOND as i64);
        parses_to("-5s", -5 * SECOND as i64);
        parses_to("+5s", 5 * SECOND as i64);
        parses_to("-0", 0);
        parses_to("+0", 0);
        parses_to("5.0s", 5 * SECOND as i64);
        parses_to("5.6s", 5 * SECOND as i64 + 600 * MILLISECOND as i64);
        parses_to("5.s", 5 * SECOND as i64);
        parses_to(".5s", 500 * MILLISECOND as i64);
        parses_to("1.0s", SECOND as i64);
        parses_to("1.00s", SECOND as i64);
        parses_to("1.004s", SECOND as i64 + 4 * MILLISECOND as i64);
        parses_to("1.0040s", SECOND as i64 + 4 * MILLISECOND as i64);
        parses_to("100.00100s", 100 * SECOND as i64 + MILLISECOND as i64);
        parses_to("10ns", 10);
        parses_to("11us", 11 * MICROSECOND as i64);
        parses_to("12µs", 12 * MICROSECOND as i64);
        parses_to("12μs", 12 * MICROSECOND as i64);
        parses_to("13ms", 13 * MILLISECOND as i64);
        parses_to("14s", 14 * SECOND as i64);
        parses_to("15m", 15 * MINUTE as i64);
        parses_to("16h", 16 * HOUR as i64);
        parses_to("3h30m", (3 * HOUR + 30 * MINUTE) as i64);
        parses_to("10.5s4m", (4 * MINUTE + 10 * SECOND + 500 * MILLISECOND) as i64);
        parses_to("-2m3.4s", -((2 * MINUTE + 3 * SECOND + 400 * MILLISECOND) as i64));
        parses_to(
            "1h2m3s4ms5us6ns",
            (HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6) as i64,
        );
        parses_to(
            "39h9m14.425s",
            (39 * HOUR + 9 * MINUTE + 14 * SECOND + 425 * MILLISECOND) as i64,
        );
        parses_to("52763797000ns", 52_763_797_000);
        parses_to("0.3333333333333333333h", 20 * MINUTE as i64);
        parses_to("9007199254740993ns", (1 << 53) + 1);
        parses_to("9223372036854775807ns", i64::MAX);
        parses_to("9223372036854775.807us", i64::MAX);
        parses_to("9223372036s854ms775us807ns", i64::MAX);
        parses_to("-9223372036854775808ns", i64::MIN);
        parses_to("-9223372036854775.808us", i64::MIN);
        parses_to("-9223372036s854ms775us808ns", i64::MIN);
        parses_to("-2562047h47m16.854775808s", i64::MIN);
        parses_to("0.100000000000000000000h", 6 * MINUTE as i64);
        parses_to("0.830103483285477580700h", (49 * MINUTE + 48 * SECOND + 372_539_827) as i64);
    }

    #[test]
    fn refuses_what_go_refuses() {
        refuses("", 0, DurationErrorKind::Empty);
        refuses("-", 1, DurationErrorKind::Empty);
        refuses("3", 1, DurationErrorKind::MissingUnit);
        refuses("00", 2, DurationErrorKind::MissingUnit);
        refuses("s", 0, DurationErrorKind::ExpectedNumber);
        refuses(".", 0, DurationErrorKind::ExpectedNumber);
        refuses("-.", 1, DurationErrorKind::ExpectedNumber);
        refuses(".s", 0, DurationErrorKind::ExpectedNumber);
        refuses("+.s", 1, DurationErrorKind::ExpectedNumber);
        refuses("1d", 1, DurationErrorKind::UnknownUnit { unit: "d".into() });
        refuses("1hx", 1, DurationErrorKind::UnknownUnit { unit: "hx".into() });
        refuses("5m ", 1, DurationErrorKind::UnknownUnit { unit: "m ".into() });
        refuses("1.1.1s", 3, DurationErrorKind::MissingUnit);
        refuses("9223372036854775808ns", 21, DurationErrorKind::Overflow);
        refuses("9223372036854775.808us", 22, DurationErrorKind::Overflow);
        refuses("9223372036854ms775us808ns", 25, DurationErrorKind::Overflow);
        refuses("-9223372036854775809ns", 1, DurationErrorKind::Overflow);
        refuses("3000000h", 0, DurationErrorKind::Overflow);
        refuses("99999999999999999999s", 0, DurationErrorKind::Overflow);
    }

    #[test]
    fn prints_what_go_prints() {
        // Cases from Go's time/time_test.go durationTests, plus the Kubernetes forms.
        let cases: &[(i64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (1100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (4 * MINUTE as i64 + 5 * SECOND as i64, "4m5s"),
            (4 * MINUTE as i64 + 5_001 * MILLISECOND as i64, "4m5.001s"),
            (5 * HOUR as i64 + 6 * MINUTE as i64 + 7_001 * MILLISECOND as i64, "5h6m7.001s"),
            (8 * MINUTE as i64 + 1, "8m0.000000001s"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
            (5 * MINUTE as i64, "5m0s"),
            (HOUR as i64, "1h0m0s"),
            (30 * SECOND as i64, "30s"),
            (1_500 * MILLISECOND as i64, "1.5s"),
            (-1_500 * MILLISECOND as i64, "-1.5s"),
            (999_999_999, "999.999999ms"),
            (1_000, "1µs"),
        ];
        for &(nanos, text) in cases {
            assert_eq!(Duration::from_nanos(nanos).to_string(), text);
            assert_eq!(Duration::parse(text), Ok(Duration::from_nanos(nanos)), "{text}");
        }
    }

    #[test]
    fn serde_uses_the_string_form() {
        let five = Duration::from_mins(5).unwrap();
        assert_eq!(serde_json::to_string(&five).unwrap(), "\"5m0s\"");
        assert_eq!(serde_json::from_str::<Duration>("\"5m\"").unwrap(), five);
        assert!(serde_json::from_str::<Duration>("300").is_err());
        assert!(serde_json::from_str::<Duration>("\"5 m\"").is_err());
    }

    #[test]
    fn converts_to_and_from_std() {
        assert_eq!(Duration::from_nanos(-1).to_std(), None);
        assert_eq!(
            Duration::from_secs(2).unwrap().to_std(),
            Some(std::time::Duration::from_secs(2))
        );
        assert_eq!(Duration::from_std(std::time::Duration::MAX), None);
        assert_eq!(Duration::from_secs(i64::MAX), None);
    }
}
