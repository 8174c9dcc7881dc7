//! `events.k8s.io/v1` Events are the core/v1 Events under other field names: one storage,
//! converted on the way in and out, so an event recorded through either API is seen by both.

use serde_json::{Value, json};

/// core/v1 field name, events.k8s.io/v1 field name.
const RENAMES: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

fn rename(object: &Value, from_core: bool) -> Value {
    let mut converted = object.clone();
    if let Some(map) = converted.as_object_mut() {
        for (core, events) in RENAMES {
            let (from, to) = if from_core { (core, events) } else { (events, core) };
            if let Some(value) = map.remove(*from) {
                map.insert(to.to_string(), value);
            }
        }
    }
    converted
}

/// A stored (core/v1) Event as events.k8s.io/v1 presents it.
pub(crate) fn to_events_v1(core: &Value) -> Value {
    let mut converted = rename(core, true);
    if converted.is_object() {
        converted["apiVersion"] = json!("events.k8s.io/v1");
        converted["kind"] = json!("Event");
    }
    converted
}

/// An events.k8s.io/v1 Event (or a patch of one) in the stored core/v1 form.
pub(crate) fn to_core(events: &Value) -> Value {
    let mut converted = rename(events, false);
    if let Some(map) = converted.as_object_mut()
        && map.contains_key("apiVersion")
    {
        map.insert("apiVersion".to_string(), json!("v1"));
    }
    converted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_between_the_two_apis() {
        let recorded = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Pod", "name": "p"}, "note": "pulled", "reason": "Pulled",
            "reportingController": "kubelet", "reportingInstance": "node-1", "type": "Normal",
            "eventTime": "2026-01-01T00:00:00.000000Z",
        });
        let core = to_core(&recorded);
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["message"], "pulled");
        assert_eq!(core["reportingComponent"], "kubelet");
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(to_events_v1(&core), recorded);
    }
}
