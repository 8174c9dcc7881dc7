use super::*;
use crate::annotations::{PLANNED_FAILOVER_MANAGER_ABSENT_SINCE, PLANNED_FAILOVER_STALL_SINCE};

const RUN: &str = "6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10";

#[track_caller]
fn refused<T: std::fmt::Debug>(result: Result<T, ValueError>) -> (usize, ValueErrorKind) {
    let error = result.unwrap_err();
    (error.position, error.kind)
}

#[test]
fn planned_failover_request() {
    let request = PlannedFailoverRequest::parse("pdx").unwrap();
    assert_eq!((request.target_site(), request.max_lag_wait()), ("pdx", None));
    assert_eq!(request.to_string(), "pdx");

    let request = PlannedFailoverRequest::parse("pdx:maxLagWait=30s").unwrap();
    assert_eq!(request.max_lag_wait(), Some(GoDuration::from_secs(30).unwrap()));
    assert_eq!(request.to_string(), "pdx:maxLagWait=30s");

    // Go accepts 0.5m; we write it back in Go's canonical form.
    let request = PlannedFailoverRequest::parse("pdx:maxLagWait=0.5m").unwrap();
    assert_eq!(request.to_string(), "pdx:maxLagWait=30s");
    let request = PlannedFailoverRequest::parse("pdx:maxLagWait=1h").unwrap();
    assert_eq!(request.to_string(), "pdx:maxLagWait=1h0m0s");
    assert!(PlannedFailoverRequest::parse("pdx:maxLagWait=1s").is_ok());
}

#[test]
fn planned_failover_request_refusals() {
    let max = PlannedFailoverRequest::MAX_LAG_WAIT_MAX;
    let min = PlannedFailoverRequest::MAX_LAG_WAIT_MIN;
    let key = "maxLagWait";
    assert_eq!(
        refused(PlannedFailoverRequest::parse(":maxLagWait=5s")),
        (0, ValueErrorKind::Syntax(ActionErrorKind::MissingSubject))
    );
    assert_eq!(
        refused(PlannedFailoverRequest::parse("pdx:drainTimeout=5s")),
        (4, ValueErrorKind::UnknownKey { key: "drainTimeout".into(), allowed: "maxLagWait" })
    );
    assert_eq!(
        refused(PlannedFailoverRequest::parse("pdx:maxLagWait=5")),
        (16, ValueErrorKind::InvalidDuration { key, kind: DurationErrorKind::MissingUnit })
    );
    assert_eq!(
        refused(PlannedFailoverRequest::parse("pdx:maxLagWait=1h1ns")),
        (
            15,
            ValueErrorKind::DurationOutOfRange {
                key,
                value: GoDuration::from_nanos(3_600_000_000_001),
                min,
                max
            }
        )
    );
    assert_eq!(
        refused(PlannedFailoverRequest::parse("pdx:maxLagWait=999ms")),
        (
            15,
            ValueErrorKind::DurationOutOfRange {
                key,
                value: GoDuration::from_nanos(999_000_000),
                min,
                max
            }
        )
    );
    assert_eq!(
        refused(PlannedFailoverRequest::parse("pdx:maxLagWait=-5s")),
        (
            15,
            ValueErrorKind::DurationOutOfRange {
                key,
                value: GoDuration::from_nanos(-5_000_000_000),
                min,
                max
            }
        )
    );
    let error = PlannedFailoverRequest::parse("pdx:maxLagWait=2h").unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid bloodraven.shipstream.io/planned-failover annotation value \"pdx:maxLagWait=2h\": \
         maxLagWait 2h0m0s is outside 1s to 1h0m0s at byte 15"
    );
    let over = PlannedFailoverRequest::new("pdx")
        .unwrap()
        .with_max_lag_wait(GoDuration::from_mins(61).unwrap());
    assert_eq!(refused(over).0, 15);
}

#[test]
fn run_since() {
    let key = PLANNED_FAILOVER_STALL_SINCE;
    let text = format!("{RUN}:since=20260420T143209Z");
    let value = RunSince::parse(key, &text).unwrap();
    assert_eq!(value.run_id(), RUN);
    assert_eq!(value.since().timestamp(), "2026-04-20T14:32:09Z".parse::<Timestamp>().unwrap());
    assert_eq!(value.to_string(), text);

    let since_at = RUN.len() + 7;
    assert_eq!(
        refused(RunSince::parse(key, RUN)),
        (RUN.len(), ValueErrorKind::MissingKey { key: "since" })
    );
    for bad in [
        "20260420T143209",
        "2026-04-20T14.32.09Z",
        "20261320T143209Z",
        "20260230T000000Z",
        "20260420T246000Z",
        "20260420t143209Z",
        "+0260420T143209Z",
    ] {
        assert_eq!(
            refused(RunSince::parse(key, &format!("{RUN}:since={bad}"))),
            (since_at, ValueErrorKind::InvalidCompactTime { key: "since" }),
            "{bad}"
        );
    }
    assert_eq!(
        refused(RunSince::parse(
            PLANNED_FAILOVER_MANAGER_ABSENT_SINCE,
            &format!("{RUN}:since=20260420T143209Z:at=1")
        ))
        .1,
        ValueErrorKind::UnknownKey { key: "at".into(), allowed: "since" }
    );
    // RFC 3339 holds ':', which the grammar refuses before the time is read.
    assert_eq!(
        refused(RunSince::parse(key, &format!("{RUN}:since=2026-04-20T14:32:09Z"))).1,
        ValueErrorKind::Syntax(ActionErrorKind::MissingEquals { pair: "32".into() })
    );
}

#[test]
fn compact_time_bounds() {
    let whole: Timestamp = "2026-04-20T14:32:09Z".parse().unwrap();
    let fractional: Timestamp = "2026-04-20T14:32:09.5Z".parse().unwrap();
    assert_eq!(CompactTime::new(fractional), None);
    assert_eq!(CompactTime::truncating(fractional), CompactTime::new(whole));
    let before_epoch: Timestamp = "1969-12-31T23:59:59.5Z".parse().unwrap();
    assert_eq!(CompactTime::truncating(before_epoch).unwrap().to_string(), "19691231T235959Z");
    assert_eq!(CompactTime::new("-000001-01-01T00:00:00Z".parse().unwrap()), None);
    assert_eq!(CompactTime::parse("00000101T000000Z").unwrap().to_string(), "00000101T000000Z");
    assert_eq!(CompactTime::parse("99991230T000000Z").unwrap().to_string(), "99991230T000000Z");
    // jiff's Timestamp ends at 9999-12-30T22:00:00Z.
    assert_eq!(CompactTime::parse("99991231T235959Z"), None);
}

#[test]
fn hold_acknowledgement() {
    let ack = HoldAcknowledgement::parse(RUN).unwrap();
    assert_eq!(ack.run_id(), RUN);
    assert_eq!(ack.to_string(), RUN);
    assert_eq!(
        refused(HoldAcknowledgement::parse(&format!("{RUN}:x=1"))),
        (RUN.len() + 1, ValueErrorKind::UnknownKey { key: "x".into(), allowed: "none" })
    );
    assert_eq!(
        refused(HoldAcknowledgement::parse("")).1,
        ValueErrorKind::Syntax(ActionErrorKind::Empty)
    );
}

#[test]
fn reclone_request() {
    let uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
    let text =
        format!("fra:confirm=orders:uid=0b7c1e52-0000-4000-8000-000000000001:gtidPrefix={uuid}");
    let request = RecloneRequest::parse(&text).unwrap();
    assert_eq!(
        (request.site(), request.confirm_group(), request.group_uid(), request.gtid_prefix()),
        ("fra", "orders", "0b7c1e52-0000-4000-8000-000000000001", Some(uuid))
    );
    assert_eq!(request.to_string(), text);

    // Any order in, the spec's order out.
    let request = RecloneRequest::parse("fra:uid=u1:confirm=orders").unwrap();
    assert_eq!(request.to_string(), "fra:confirm=orders:uid=u1");
    let built = RecloneRequest::new("fra", "orders", "u1").unwrap().with_gtid_prefix(uuid).unwrap();
    assert_eq!(
        built,
        RecloneRequest::parse(&format!("fra:confirm=orders:uid=u1:gtidPrefix={uuid}")).unwrap()
    );

    assert_eq!(
        refused(RecloneRequest::parse("fra:confirm=orders")),
        (18, ValueErrorKind::MissingKey { key: "uid" })
    );
    assert_eq!(
        refused(RecloneRequest::parse("fra:uid=u1")),
        (10, ValueErrorKind::MissingKey { key: "confirm" })
    );
    assert_eq!(
        refused(RecloneRequest::parse("fra:confirm=orders:uid=u1:gtidPrefix=3e11fa47")),
        (37, ValueErrorKind::InvalidUuid { key: "gtidPrefix" })
    );
    assert_eq!(
        refused(RecloneRequest::parse("fra:confirm=orders:uid=u1:cold=true")).1,
        ValueErrorKind::UnknownKey { key: "cold".into(), allowed: "confirm, uid, gtidPrefix" }
    );
    assert!(RecloneRequest::new("fra", "orders", "u:1").is_err());
}

#[test]
fn status_fence_moves_forward() {
    let now: Timestamp = "2026-04-20T14:32:09.123456789Z".parse().unwrap();
    let first = StatusFence::next(None, now).unwrap();
    assert_eq!(first.timestamp(), now);
    let again = StatusFence::next(Some(first), now).unwrap();
    assert_eq!(again.to_string(), "2026-04-20T14:32:09.12345679Z");
    let earlier: Timestamp = "2026-04-20T14:00:00Z".parse().unwrap();
    assert_eq!(
        StatusFence::next(Some(again), earlier).unwrap().timestamp(),
        now + jiff::SignedDuration::from_nanos(2)
    );
    let later: Timestamp = "2026-04-20T15:00:00Z".parse().unwrap();
    assert_eq!(StatusFence::next(Some(again), later).unwrap().timestamp(), later);
    assert_eq!(StatusFence::next(Some(StatusFence::new(Timestamp::MAX)), later), None);

    assert_eq!(StatusFence::parse(&again.to_string()).unwrap(), again);
    assert!(matches!(
        StatusFence::parse("yesterday").unwrap_err().kind,
        ValueErrorKind::InvalidTimestamp { .. }
    ));
}

#[test]
fn terminal_marker_record() {
    let text = format!(
        r#"{{"schemaVersion":1,"runID":"{RUN}","outcome":"SourceLeftFenced","reason":"StatusStalled","warnings":["FenceNotAttributable"]}}"#
    );
    let marker = TerminalMarker::parse(&text);
    let record = marker.record().unwrap();
    assert_eq!(
        (record.run_id(), record.outcome(), record.reason(), record.warnings()),
        (RUN, "SourceLeftFenced", "StatusStalled", Some(&["FenceNotAttributable".to_owned()][..]))
    );
    assert_eq!(marker.to_string(), text);

    let without_warnings =
        format!(r#"{{"schemaVersion":1,"runID":"{RUN}","outcome":"Succeeded","reason":""}}"#);
    let marker = TerminalMarker::parse(&without_warnings);
    assert_eq!(marker.record().unwrap().warnings(), None);
    assert_eq!(marker.to_string(), without_warnings);

    // Whitespace and field order do not matter on input.
    let spaced = format!(
        r#"{{ "reason": "x", "outcome": "RolledBack", "runID": "{RUN}", "schemaVersion": 1 }}"#
    );
    assert_eq!(TerminalMarker::parse(&spaced).record().unwrap().outcome(), "RolledBack");
}

#[test]
fn terminal_marker_that_proves_nothing() {
    let cases = [
        ("", "not JSON"),
        ("ended", "not JSON"),
        ("[1]", "no schemaVersion"),
        (r#"{"runID":"r","outcome":"Succeeded","reason":""}"#, "no schemaVersion"),
        (
            r#"{"schemaVersion":2,"runID":"r","outcome":"Succeeded","reason":""}"#,
            "schemaVersion 2 is not 1",
        ),
        (
            r#"{"schemaVersion":"1","runID":"r","outcome":"Succeeded","reason":""}"#,
            "schemaVersion \"1\" is not 1",
        ),
        (
            r#"{"schemaVersion":1.0,"runID":"r","outcome":"Succeeded","reason":""}"#,
            "schemaVersion 1.0 is not 1",
        ),
        (
            r#"{"schemaVersion":1,"runID":"r","outcome":"Succeeded"}"#,
            "not the schemaVersion 1 payload",
        ),
        (
            r#"{"schemaVersion":1,"runID":"r","outcome":"Succeeded","reason":"","extra":1}"#,
            "not the schemaVersion 1 payload",
        ),
        (
            r#"{"schemaVersion":1,"runID":"r","runID":"s","outcome":"Succeeded","reason":""}"#,
            "not the schemaVersion 1 payload",
        ),
        (r#"{"schemaVersion":1,"runID":"","outcome":"Succeeded","reason":""}"#, "runID is empty"),
        (r#"{"schemaVersion":1,"runID":"r","outcome":"","reason":""}"#, "outcome is empty"),
        (
            r#"{"schemaVersion":1,"runID":"r","outcome":"Succeeded","reason":"","warnings":"x"}"#,
            "not the schemaVersion 1 payload",
        ),
    ];
    for (text, why) in cases {
        let marker = TerminalMarker::parse(text);
        let TerminalMarker::ProvesNothing(ignored) = &marker else {
            panic!("{text:?} was accepted");
        };
        assert!(ignored.why().starts_with(why), "{text:?}: {}", ignored.why());
        assert_eq!(ignored.raw(), text);
        assert_eq!(marker.to_string(), text);
        assert_eq!(TerminalMarker::parse(&marker.to_string()), marker);
    }
    assert!(TerminalRecord::new("", "Succeeded", "", None).is_err());
}
