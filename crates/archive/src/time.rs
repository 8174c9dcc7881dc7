//! Timestamps (RFC 3339, UTC, microseconds) and durations as the archive writes them.

use jiff::{SignedDuration, Timestamp};

use crate::Error;

/// Formats `ts` as the archive writes every time: UTC with six fractional digits,
/// `2026-11-05T09:30:00.000000Z`. Sub-microsecond digits are dropped.
pub fn format_timestamp(ts: Timestamp) -> String {
    let micros = ts.as_microsecond();
    let seconds = micros.div_euclid(1_000_000);
    let fraction = micros.rem_euclid(1_000_000);
    match Timestamp::from_second(seconds) {
        Ok(whole) => {
            let text = whole.strftime("%Y-%m-%dT%H:%M:%S").to_string();
            format!("{text}.{fraction:06}Z")
        }
        // Unreachable for a valid Timestamp, but formatting never panics.
        Err(_) => ts.to_string(),
    }
}

/// Formats a duration as seconds with up to six fractional digits: `5s`, `1.5s`, `90s`.
pub(crate) fn format_duration(duration: SignedDuration) -> String {
    let micros = duration.as_micros();
    let sign = if micros < 0 { "-" } else { "" };
    let micros = micros.unsigned_abs();
    let seconds = micros / 1_000_000;
    let fraction = micros % 1_000_000;
    if fraction == 0 {
        format!("{sign}{seconds}s")
    } else {
        let digits = format!("{fraction:06}");
        format!("{sign}{seconds}.{}s", digits.trim_end_matches('0'))
    }
}

/// Parses a probe interval: a non-negative Go-style duration (`5s`, `1.5s`, `1m30s`, `250ms`,
/// units `h`, `m`, `s`, `ms`, `us`/`µs`, `ns`).
pub fn parse_probe_interval(text: &str) -> Result<SignedDuration, Error> {
    let bad = |offset: usize| Error::InvalidDuration { text: text.to_owned(), offset };
    if text.is_empty() {
        return Err(bad(0));
    }
    if text == "0" {
        return Ok(SignedDuration::ZERO);
    }
    let bytes = text.as_bytes();
    let mut at = 0;
    let mut total_nanos: i128 = 0;
    while at < bytes.len() {
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        let whole = &text[start..at];
        let mut fraction = "";
        if at < bytes.len() && bytes[at] == b'.' {
            at += 1;
            let fraction_start = at;
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
            fraction = &text[fraction_start..at];
        }
        if whole.is_empty() && fraction.is_empty() {
            return Err(bad(start));
        }
        let unit_start = at;
        while at < bytes.len() && !bytes[at].is_ascii_digit() && bytes[at] != b'.' {
            at += 1;
        }
        let unit_nanos: i128 = match &text[unit_start..at] {
            "h" => 3_600_000_000_000,
            "m" => 60_000_000_000,
            "s" => 1_000_000_000,
            "ms" => 1_000_000,
            "us" | "µs" => 1_000,
            "ns" => 1,
            _ => return Err(bad(unit_start)),
        };
        let whole_value: i128 =
            if whole.is_empty() { 0 } else { whole.parse::<i128>().map_err(|_| bad(start))? };
        let limit = i128::from(i64::MAX) * 1_000_000_000;
        let mut part = whole_value.checked_mul(unit_nanos).ok_or_else(|| bad(start))?;
        if part > limit {
            return Err(bad(start));
        }
        // The fraction adds less than one unit (at most an hour): no overflow below `limit`.
        let mut scale = unit_nanos;
        for digit in fraction.bytes().take(18) {
            scale /= 10;
            part += i128::from(digit - b'0') * scale;
        }
        total_nanos = total_nanos.checked_add(part).ok_or_else(|| bad(start))?;
        if total_nanos > limit {
            return Err(bad(start));
        }
    }
    let seconds = i64::try_from(total_nanos / 1_000_000_000).map_err(|_| bad(0))?;
    let nanos = i32::try_from(total_nanos % 1_000_000_000).map_err(|_| bad(0))?;
    Ok(SignedDuration::new(seconds, nanos))
}

/// serde for a required timestamp in the archive's format.
pub(crate) mod ts {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(ts: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_timestamp(*ts))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(d)?;
        text.parse::<Timestamp>()
            .map_err(|e| serde::de::Error::custom(format!("invalid timestamp {text:?}: {e}")))
    }
}

/// serde for an optional timestamp (absent or empty string = none).
pub(crate) mod ts_opt {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        ts: &Option<Timestamp>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match ts {
            Some(ts) => s.serialize_str(&super::format_timestamp(*ts)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Timestamp>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        match text.as_deref() {
            None | Some("") => Ok(None),
            Some(text) => text
                .parse::<Timestamp>()
                .map(Some)
                .map_err(|e| serde::de::Error::custom(format!("invalid timestamp {text:?}: {e}"))),
        }
    }
}

/// serde for an optional probe interval.
pub(crate) mod duration_opt {
    use jiff::SignedDuration;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        duration: &Option<SignedDuration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match duration {
            Some(duration) => s.serialize_str(&super::format_duration(*duration)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<SignedDuration>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        match text.as_deref() {
            None | Some("") => Ok(None),
            Some(text) => {
                super::parse_probe_interval(text).map(Some).map_err(serde::de::Error::custom)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_have_six_fractional_digits() {
        let ts: Timestamp = "2026-11-05T09:30:00Z".parse().unwrap();
        assert_eq!(format_timestamp(ts), "2026-11-05T09:30:00.000000Z");
        let ts: Timestamp = "2026-11-05T10:30:00.1234567+01:00".parse().unwrap();
        assert_eq!(format_timestamp(ts), "2026-11-05T09:30:00.123456Z");
        let ts: Timestamp = "1969-12-31T23:59:59.5Z".parse().unwrap();
        assert_eq!(format_timestamp(ts), "1969-12-31T23:59:59.500000Z");
    }

    #[test]
    fn durations_round_trip() {
        for (text, micros, back) in [
            ("5s", 5_000_000, "5s"),
            ("1.5s", 1_500_000, "1.5s"),
            ("1m30s", 90_000_000, "90s"),
            ("250ms", 250_000, "0.25s"),
            ("0", 0, "0s"),
            ("1h", 3_600_000_000, "3600s"),
        ] {
            let parsed = parse_probe_interval(text).unwrap();
            assert_eq!(parsed.as_micros(), micros, "{text}");
            assert_eq!(format_duration(parsed), back);
        }
        // Values near i128::MAX nanoseconds (a fraction on top of a whole part that already
        // fills the range) are refused, never overflowed.
        let huge = "170141183460469231731687303715884105.999us";
        for (text, offset) in
            [("", 0), ("5", 1), ("5x", 1), ("s", 0), ("-5s", 0), ("5s3", 3), (huge, 0)]
        {
            match parse_probe_interval(text) {
                Err(Error::InvalidDuration { offset: got, .. }) => {
                    assert_eq!(got, offset, "{text}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
