//! Kubernetes `metav1.Duration` values (`5m`, `30s`, `1h0m0s`), kept exactly as written.
//!
//! The API stores durations as Go duration strings. [`Duration`] keeps the text it was given, so
//! a value written as `5m` is written back as `5m` (a status round-trip loses nothing), and
//! parses it on demand with [`Duration::to_std`]. [`Duration::from_std`] formats the way Go's
//! `time.Duration.String()` does (`5m0s`), which is what the operator writes into status.

use std::fmt;

/// A duration in Go syntax, as stored in the API.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Duration(String);

/// Go's `time.ParseDuration` grammar restricted to non-negative values.
pub const DURATION_PATTERN: &str = r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+)$";

/// Why a duration string did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration {input:?}: empty")]
    Empty { input: String },
    #[error("invalid duration {input:?}: expected a digit at byte {position}")]
    ExpectedNumber { input: String, position: usize },
    #[error("invalid duration {input:?}: missing or unknown unit at byte {position}")]
    BadUnit { input: String, position: usize },
    #[error("invalid duration {input:?}: out of range")]
    Overflow { input: String },
}

impl Duration {
    /// Wraps a duration string without checking it (see [`Duration::to_std`]).
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// Formats a duration the way Go's `time.Duration.String()` does: `5m0s`, `1h0m0s`, `1.5s`,
    /// `300ms`, `0s`.
    pub fn from_std(duration: std::time::Duration) -> Self {
        Self(format_go(duration))
    }

    /// The duration exactly as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Parses the stored text with Go's `time.ParseDuration` rules (negative values are refused).
    pub fn to_std(&self) -> Result<std::time::Duration, DurationError> {
        parse_go(&self.0)
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
    fn schema_name() -> std::borrow::Cow<'static, str> {
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

/// Parses Go duration syntax: `0`, or a sequence of `<decimal><unit>`.
pub fn parse_go(input: &str) -> Result<std::time::Duration, DurationError> {
    if input.is_empty() {
        return Err(DurationError::Empty { input: input.to_owned() });
    }
    if input == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    let bytes = input.as_bytes();
    let mut position = 0;
    let mut total_nanos: u128 = 0;
    while position < bytes.len() {
        let start = position;
        while position < bytes.len() && bytes[position].is_ascii_digit() {
            position += 1;
        }
        let whole = &input[start..position];
        let mut fraction = "";
        if position < bytes.len() && bytes[position] == b'.' {
            position += 1;
            let fraction_start = position;
            while position < bytes.len() && bytes[position].is_ascii_digit() {
                position += 1;
            }
            fraction = &input[fraction_start..position];
            if fraction.is_empty() && whole.is_empty() {
                return Err(DurationError::ExpectedNumber {
                    input: input.to_owned(),
                    position: start,
                });
            }
        } else if whole.is_empty() {
            return Err(DurationError::ExpectedNumber { input: input.to_owned(), position: start });
        }
        let unit_start = position;
        let rest = &input[unit_start..];
        let (unit_nanos, unit_len): (u128, usize) = [
            ("ns", 1),
            ("us", 1_000),
            ("µs", 1_000),
            ("μs", 1_000),
            ("ms", 1_000_000),
            ("h", 3_600_000_000_000),
            ("m", 60_000_000_000),
            ("s", 1_000_000_000),
        ]
        .iter()
        .find(|(unit, _)| rest.starts_with(unit))
        .map(|(unit, nanos)| (*nanos, unit.len()))
        .ok_or_else(|| DurationError::BadUnit { input: input.to_owned(), position: unit_start })?;
        position += unit_len;
        let overflow = || DurationError::Overflow { input: input.to_owned() };
        let whole_value: u128 =
            if whole.is_empty() { 0 } else { whole.parse().map_err(|_| overflow())? };
        let mut nanos = whole_value.checked_mul(unit_nanos).ok_or_else(overflow)?;
        let mut scale = unit_nanos;
        for digit in fraction.bytes() {
            scale /= 10;
            if scale == 0 {
                break;
            }
            nanos += u128::from(digit - b'0') * scale;
        }
        total_nanos = total_nanos.checked_add(nanos).ok_or_else(overflow)?;
    }
    let seconds = u64::try_from(total_nanos / 1_000_000_000)
        .map_err(|_| DurationError::Overflow { input: input.to_owned() })?;
    let subsec = u32::try_from(total_nanos % 1_000_000_000)
        .map_err(|_| DurationError::Overflow { input: input.to_owned() })?;
    Ok(std::time::Duration::new(seconds, subsec))
}

/// Formats like Go's `time.Duration.String()`.
pub fn format_go(duration: std::time::Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    if nanos < 1_000_000_000 {
        let (unit, per) = if nanos < 1_000 {
            ("ns", 1)
        } else if nanos < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{}{unit}", decimal(nanos, per));
    }
    let hours = nanos / 3_600_000_000_000;
    let minutes = (nanos / 60_000_000_000) % 60;
    let seconds = decimal(nanos % 60_000_000_000, 1_000_000_000);
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{seconds}s"));
    out
}

/// `value / per` as a decimal without trailing zeros.
fn decimal(value: u128, per: u128) -> String {
    let whole = value / per;
    let mut fraction = value % per;
    if fraction == 0 {
        return whole.to_string();
    }
    let mut digits = String::new();
    let mut scale = per / 10;
    while fraction > 0 && scale > 0 {
        digits.push(char::from(b'0' + u8::try_from(fraction / scale).unwrap_or(0)));
        fraction %= scale;
        scale /= 10;
    }
    format!("{whole}.{digits}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration as Std;

    #[test]
    fn formats_like_go() {
        let cases = [
            (Std::ZERO, "0s"),
            (Std::from_secs(30), "30s"),
            (Std::from_secs(300), "5m0s"),
            (Std::from_secs(3600), "1h0m0s"),
            (Std::from_secs(5400), "1h30m0s"),
            (Std::from_millis(1500), "1.5s"),
            (Std::from_millis(300), "300ms"),
            (Std::from_micros(12), "12µs"),
            (Std::from_nanos(1), "1ns"),
        ];
        for (duration, text) in cases {
            assert_eq!(format_go(duration), text);
            assert_eq!(parse_go(text), Ok(duration), "{text}");
        }
    }

    #[test]
    fn parses_go_syntax() {
        assert_eq!(parse_go("5m"), Ok(Std::from_secs(300)));
        assert_eq!(parse_go("1h30m"), Ok(Std::from_secs(5400)));
        assert_eq!(parse_go("0"), Ok(Std::ZERO));
        assert_eq!(parse_go(".5s"), Ok(Std::from_millis(500)));
        assert_eq!(parse_go("2us"), Ok(Std::from_micros(2)));
    }

    #[test]
    fn refuses_bad_input_with_position() {
        assert_eq!(parse_go(""), Err(DurationError::Empty { input: String::new() }));
        assert_eq!(
            parse_go("5"),
            Err(DurationError::BadUnit { input: "5".to_owned(), position: 1 })
        );
        assert_eq!(
            parse_go("5m x"),
            Err(DurationError::ExpectedNumber { input: "5m x".to_owned(), position: 2 })
        );
        assert_eq!(
            parse_go("-5s"),
            Err(DurationError::ExpectedNumber { input: "-5s".to_owned(), position: 0 })
        );
        assert!(matches!(
            parse_go("99999999999999999999999h"),
            Err(DurationError::Overflow { .. })
        ));
    }

    #[test]
    fn keeps_text_verbatim() {
        let duration: Duration = serde_json::from_str("\"5m\"").unwrap();
        assert_eq!(serde_json::to_string(&duration).unwrap(), "\"5m\"");
        assert_eq!(duration.to_std(), Ok(Std::from_secs(300)));
        assert_eq!(Duration::from_std(Std::from_secs(300)).as_str(), "5m0s");
    }

    proptest::proptest! {
        #[test]
        fn go_format_parses_back(nanos in 0u64..=(100 * 3_600 * 1_000_000_000)) {
            let duration = Std::from_nanos(nanos);
            proptest::prop_assert_eq!(parse_go(&format_go(duration)), Ok(duration));
        }

        #[test]
        fn parsing_never_panics(text in "\\PC{0,24}") {
            let _ = parse_go(&text);
        }
    }
}
