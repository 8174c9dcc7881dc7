//! The action grammar and the typed annotation values: parse and format are inverse.

use bloodraven_crd::annotations::{
    Action, ActionErrorKind, CompactTime, GoDuration, HoldAcknowledgement,
    PLANNED_FAILOVER_CONFIRMED, PlannedFailoverRequest, RecloneRequest, RunSince, StatusFence,
    TerminalMarker, TerminalRecord, ValueErrorKind,
};
use jiff::Timestamp;
use proptest::prelude::*;

const SUBJECT: &str = "[A-Za-z0-9._/+-]{1,24}";
const KEY: &str = "[A-Za-z0-9]{1,12}";
const VALUE: &str = "[A-Za-z0-9._/+-]{1,24}";
const UUID: &str = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

fn action() -> impl Strategy<Value = Action> {
    (SUBJECT, proptest::collection::vec((KEY, VALUE), 0..6)).prop_map(|(subject, pairs)| {
        let mut action = Action::new(subject).unwrap();
        for (key, value) in pairs {
            if action.get(&key).is_none() {
                action = action.with_pair(key, value).unwrap();
            }
        }
        action
    })
}

/// Text near the grammar: its own alphabet plus the characters that break it.
fn near_grammar_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            4 => proptest::char::range('a', 'c'),
            2 => Just(':'),
            2 => Just('='),
            1 => Just('5'),
            1 => Just('.'),
            1 => Just(' '),
            1 => Just('\t'),
            1 => Just('µ'),
            1 => Just('\u{2003}'),
        ],
        0..24,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

/// Whole seconds jiff can represent from year 0000 on.
fn compact_time() -> impl Strategy<Value = CompactTime> {
    (-62_167_219_200i64..253_402_127_999)
        .prop_map(|second| CompactTime::new(Timestamp::from_second(second).unwrap()).unwrap())
}

fn go_duration_text() -> impl Strategy<Value = String> {
    let component = ("[0-9]{0,4}", proptest::option::of("[0-9]{0,4}"), "(ns|us|µs|μs|ms|s|m|h)")
        .prop_map(|(whole, fraction, unit)| match fraction {
            Some(fraction) => format!("{whole}.{fraction}{unit}"),
            None => format!("{whole}{unit}"),
        });
    ("[-+]?", proptest::collection::vec(component, 1..4))
        .prop_map(|(sign, parts)| format!("{sign}{}", parts.concat()))
}

proptest! {
    #[test]
    fn action_format_then_parse_is_identity(action in action()) {
        let text = action.to_string();
        prop_assert_eq!(Action::parse(&text), Ok(action));
    }

    #[test]
    fn action_parse_then_format_is_identity(text in near_grammar_text()) {
        match Action::parse(&text) {
            Ok(action) => prop_assert_eq!(action.to_string(), text),
            Err(error) => {
                prop_assert!(error.position <= text.len());
                prop_assert!(text.is_char_boundary(error.position));
                prop_assert_eq!(error.input, text);
            }
        }
    }

    #[test]
    fn action_parse_never_panics(text in any::<String>()) {
        let _ = Action::parse(&text);
    }

    #[test]
    fn duration_format_then_parse_is_identity(nanos in any::<i64>()) {
        let duration = GoDuration::from_nanos(nanos);
        prop_assert_eq!(GoDuration::parse(&duration.to_string()), Ok(duration));
    }

    #[test]
    fn duration_parse_then_format_is_stable(text in go_duration_text()) {
        if let Ok(duration) = GoDuration::parse(&text) {
            let canonical = duration.to_string();
            prop_assert_eq!(GoDuration::parse(&canonical), Ok(duration));
            prop_assert_eq!(GoDuration::parse(&canonical).unwrap().to_string(), canonical);
        }
    }

    #[test]
    fn planned_failover_request_identity(
        site in SUBJECT,
        max_lag_wait in proptest::option::of(1_000_000_000i64..=3_600_000_000_000),
    ) {
        let mut request = PlannedFailoverRequest::new(site).unwrap();
        if let Some(nanos) = max_lag_wait {
            request = request.with_max_lag_wait(GoDuration::from_nanos(nanos)).unwrap();
        }
        prop_assert_eq!(PlannedFailoverRequest::parse(&request.to_string()), Ok(request));
    }

    #[test]
    fn planned_failover_request_refuses_out_of_range(nanos in any::<i64>()) {
        let duration = GoDuration::from_nanos(nanos);
        let text = format!("pdx:maxLagWait={duration}");
        let in_range = (1_000_000_000..=3_600_000_000_000).contains(&nanos);
        match PlannedFailoverRequest::parse(&text) {
            Ok(request) => prop_assert!(in_range && request.max_lag_wait() == Some(duration)),
            Err(error) => {
                // µs does not fit the value charset; everything else is out of range.
                let out_of_range = matches!(error.kind, ValueErrorKind::DurationOutOfRange { .. });
                let charset = matches!(
                    error.kind,
                    ValueErrorKind::Syntax(ActionErrorKind::InvalidValueCharacter { .. })
                );
                prop_assert!(!in_range && (out_of_range || charset), "{error}");
            }
        }
    }

    #[test]
    fn run_since_identity(run_id in SUBJECT, since in compact_time()) {
        let value = RunSince::new(PLANNED_FAILOVER_CONFIRMED, run_id, since).unwrap();
        prop_assert_eq!(RunSince::parse(PLANNED_FAILOVER_CONFIRMED, &value.to_string()), Ok(value));
    }

    #[test]
    fn hold_acknowledgement_identity(run_id in SUBJECT) {
        let ack = HoldAcknowledgement::new(run_id).unwrap();
        prop_assert_eq!(HoldAcknowledgement::parse(&ack.to_string()), Ok(ack));
    }

    #[test]
    fn reclone_request_identity(
        site in SUBJECT,
        group in VALUE,
        uid in VALUE,
        gtid_prefix in proptest::option::of(UUID),
    ) {
        let mut request = RecloneRequest::new(site, group, uid).unwrap();
        if let Some(uuid) = gtid_prefix {
            request = request.with_gtid_prefix(uuid).unwrap();
        }
        prop_assert_eq!(RecloneRequest::parse(&request.to_string()), Ok(request));
    }

    #[test]
    fn status_fence_identity(second in -377_705_116_800i64..253_402_207_200, nanos in 0i32..1_000_000_000) {
        if let Ok(timestamp) = Timestamp::new(second, nanos) {
            let fence = StatusFence::new(timestamp);
            prop_assert_eq!(StatusFence::parse(&fence.to_string()), Ok(fence));
        }
    }

    #[test]
    fn status_fence_always_moves_forward(
        stored in 0i64..4_000_000_000,
        now in 0i64..4_000_000_000,
        nanos in 0i32..1_000_000_000,
    ) {
        let stored = StatusFence::new(Timestamp::new(stored, nanos).unwrap());
        let now = Timestamp::new(now, 0).unwrap();
        let next = StatusFence::next(Some(stored), now).unwrap();
        prop_assert!(next > stored);
        prop_assert!(next.timestamp() >= now);
    }

    #[test]
    fn terminal_record_identity(
        run_id in ".{1,40}",
        outcome in ".{1,24}",
        reason in ".{0,24}",
        warnings in proptest::option::of(proptest::collection::vec(".{0,16}", 0..4)),
    ) {
        let record = TerminalRecord::new(run_id, outcome, reason, warnings).unwrap();
        let marker = TerminalMarker::Record(record);
        prop_assert_eq!(TerminalMarker::parse(&marker.to_string()), marker);
    }

    #[test]
    fn terminal_marker_parse_then_format_is_identity_for_ignored(text in any::<String>()) {
        let marker = TerminalMarker::parse(&text);
        if let TerminalMarker::ProvesNothing(_) = &marker {
            prop_assert_eq!(marker.to_string(), text.clone());
        }
        prop_assert_eq!(TerminalMarker::parse(&marker.to_string()), marker);
    }
}

#[test]
fn the_spec_examples_parse() {
    let request = PlannedFailoverRequest::parse("pdx:maxLagWait=30s").unwrap();
    assert_eq!(request.target_site(), "pdx");
    assert_eq!(request.max_lag_wait().unwrap().to_string(), "30s");

    let text = r#"{"schemaVersion":1,"runID":"6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10","outcome":"ManualRecoveryRequired","reason":"ForeignWritable","warnings":["StatusStalled"]}"#;
    let marker = TerminalMarker::parse(text);
    assert_eq!(marker.record().unwrap().reason(), "ForeignWritable");
    assert_eq!(marker.to_string(), text);

    let ack = HoldAcknowledgement::parse("6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10").unwrap();
    assert_eq!(ack.run_id(), "6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10");
}

#[test]
fn every_spec_rule_is_refused_with_its_position() {
    let cases: &[(&str, usize, ActionErrorKind)] = &[
        ("", 0, ActionErrorKind::Empty),
        (":maxLagWait=5s", 0, ActionErrorKind::MissingSubject),
        (
            "pdx:maxLagWait=5s:maxLagWait=5s",
            18,
            ActionErrorKind::DuplicateKey { key: "maxLagWait".into() },
        ),
        ("pdx::maxLagWait=5s", 4, ActionErrorKind::EmptyPair),
        (
            "pdx:maxLagWait=5s,",
            17,
            ActionErrorKind::InvalidValueCharacter { key: "maxLagWait".into(), found: ',' },
        ),
        ("pdx:maxLagWait=5 s", 16, ActionErrorKind::Whitespace { found: ' ' }),
        (
            "pdx:maxLagWait=a=b",
            16,
            ActionErrorKind::InvalidValueCharacter { key: "maxLagWait".into(), found: '=' },
        ),
    ];
    for (input, position, kind) in cases {
        let error = Action::parse(input).unwrap_err();
        assert_eq!((error.position, &error.kind), (*position, kind), "{input:?}");
    }
    // Unknown keys are the typed value's business, not the grammar's.
    let error = PlannedFailoverRequest::parse("pdx:maxLagWaitt=5s").unwrap_err();
    assert_eq!(error.position, 4);
    assert!(matches!(error.kind, ValueErrorKind::UnknownKey { .. }));
}
