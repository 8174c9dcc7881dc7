use super::*;
use std::time::Duration as Std;

// GoDuration: Go's own ParseDuration and String tables.

#[track_caller]
fn parses_to(input: &str, nanos: i64) {
    assert_eq!(GoDuration::parse(input), Ok(GoDuration::from_nanos(nanos)), "input {input:?}");
}

#[track_caller]
fn refuses(input: &str, position: usize, kind: DurationErrorKind) {
    let err = GoDuration::parse(input).unwrap_err();
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
    parses_to("39h9m14.425s", (39 * HOUR + 9 * MINUTE + 14 * SECOND + 425 * MILLISECOND) as i64);
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
        assert_eq!(GoDuration::from_nanos(nanos).to_string(), text);
        assert_eq!(GoDuration::parse(text), Ok(GoDuration::from_nanos(nanos)), "{text}");
    }
}

#[test]
fn serde_uses_the_string_form() {
    let five = GoDuration::from_mins(5).unwrap();
    assert_eq!(serde_json::to_string(&five).unwrap(), "\"5m0s\"");
    assert_eq!(serde_json::from_str::<GoDuration>("\"5m\"").unwrap(), five);
    assert!(serde_json::from_str::<GoDuration>("300").is_err());
    assert!(serde_json::from_str::<GoDuration>("\"5 m\"").is_err());
}

#[test]
fn converts_to_and_from_std() {
    assert_eq!(GoDuration::from_nanos(-1).to_std(), None);
    assert_eq!(GoDuration::from_secs(2).unwrap().to_std(), Some(std::time::Duration::from_secs(2)));
    assert_eq!(GoDuration::from_std(std::time::Duration::MAX), None);
    assert_eq!(GoDuration::from_secs(i64::MAX), None);
}

// Duration: the text-preserving type delegates to the same parser and formatter.

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
        assert_eq!(Duration::from_std(duration).as_str(), text);
        assert_eq!(Duration::new(text).to_std(), Ok(duration), "{text}");
    }
}

#[test]
fn formats_beyond_go_range_without_truncating() {
    // A std duration past i64 nanoseconds still prints Go's shape, with more hours; Go (and so
    // to_std) cannot read it back.
    let text = Duration::from_std(Std::MAX);
    assert_eq!(text.as_str(), "5124095576030431h0m15.999999999s");
    assert_eq!(text.to_std().unwrap_err().kind, DurationErrorKind::Overflow);
}

#[test]
fn parses_go_syntax() {
    let parse = |text: &str| Duration::new(text).to_std();
    assert_eq!(parse("5m"), Ok(Std::from_secs(300)));
    assert_eq!(parse("1h30m"), Ok(Std::from_secs(5400)));
    assert_eq!(parse("0"), Ok(Std::ZERO));
    assert_eq!(parse(".5s"), Ok(Std::from_millis(500)));
    assert_eq!(parse("2us"), Ok(Std::from_micros(2)));
}

#[test]
fn refuses_bad_input_with_position() {
    #[track_caller]
    fn refused(input: &str, position: usize, kind: DurationErrorKind) {
        let expected = DurationError { input: input.to_owned(), position, kind };
        assert_eq!(Duration::new(input).to_std(), Err(expected));
    }
    refused("", 0, DurationErrorKind::Empty);
    refused("5", 1, DurationErrorKind::MissingUnit);
    refused("5m x", 1, DurationErrorKind::UnknownUnit { unit: "m x".into() });
    refused("-5s", 0, DurationErrorKind::Negative);
    assert!(matches!(
        Duration::new("99999999999999999999999h").to_std(),
        Err(DurationError { kind: DurationErrorKind::Overflow, .. })
    ));
    assert_eq!(
        Duration::new("-5s").to_std().unwrap_err().to_string(),
        "invalid duration \"-5s\": negative value at byte 0"
    );
    assert_eq!(
        Duration::new("5 minutes").to_std().unwrap_err().to_string(),
        "invalid duration \"5 minutes\": unknown unit \" minutes\" at byte 1"
    );
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
        proptest::prop_assert_eq!(Duration::from_std(duration).to_std(), Ok(duration));
    }

    #[test]
    fn parsing_never_panics(text in "\\PC{0,24}") {
        let _ = Duration::new(text).to_std();
    }
}
