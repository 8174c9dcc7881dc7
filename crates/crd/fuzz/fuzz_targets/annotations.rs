//! The action grammar and every typed annotation value: no input panics, and whatever parses
//! formats back to text that parses to the same value (the grammar: to the same text).
#![no_main]

use bloodraven_crd::annotations::{
    Action, CompactTime, GoDuration, HoldAcknowledgement, PLANNED_FAILOVER_MANAGER_ABSENT_SINCE,
    PlannedFailoverRequest, RecloneRequest, RunSince, StatusFence, TerminalMarker,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };

    match Action::parse(text) {
        Ok(action) => {
            assert_eq!(action.to_string(), text);
            for pair in action.pairs() {
                assert_eq!(&text[pair.key_position..][..pair.key.len()], pair.key);
                assert_eq!(&text[pair.value_position..][..pair.value.len()], pair.value);
            }
        }
        Err(error) => {
            assert!(error.position <= text.len() && text.is_char_boundary(error.position));
            let _ = error.to_string();
        }
    }

    match GoDuration::parse(text) {
        Ok(duration) => assert_eq!(GoDuration::parse(&duration.to_string()), Ok(duration)),
        Err(error) => assert!(error.position <= text.len()),
    }

    if let Ok(request) = PlannedFailoverRequest::parse(text) {
        assert_eq!(PlannedFailoverRequest::parse(&request.to_string()), Ok(request));
    } else if let Err(error) = PlannedFailoverRequest::parse(text) {
        assert!(error.position <= text.len());
    }

    match RunSince::parse(PLANNED_FAILOVER_MANAGER_ABSENT_SINCE, text) {
        Ok(value) => {
            let again = RunSince::parse(PLANNED_FAILOVER_MANAGER_ABSENT_SINCE, &value.to_string());
            assert_eq!(again, Ok(value));
        }
        Err(error) => assert!(error.position <= text.len()),
    }

    if let Some(time) = CompactTime::parse(text) {
        assert_eq!(time.to_string(), text);
    }

    if let Ok(ack) = HoldAcknowledgement::parse(text) {
        assert_eq!(ack.to_string(), text);
    }

    match RecloneRequest::parse(text) {
        Ok(request) => assert_eq!(RecloneRequest::parse(&request.to_string()), Ok(request)),
        Err(error) => assert!(error.position <= text.len()),
    }

    if let Ok(fence) = StatusFence::parse(text) {
        assert_eq!(StatusFence::parse(&fence.to_string()), Ok(fence));
    }

    let marker = TerminalMarker::parse(text);
    if let TerminalMarker::ProvesNothing(ignored) = &marker {
        assert_eq!(ignored.raw(), text);
    }
    assert_eq!(TerminalMarker::parse(&marker.to_string()), marker);
});
