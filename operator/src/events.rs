//! Recording a Kubernetes Event: the one place every controller of this crate publishes
//! through. An Event is best effort: one the API server refuses is logged at debug and
//! dropped, never failing the pass that announced it.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder};

/// Records an Event about `regarding`: its `reason` is also its `action`.
pub(crate) async fn record(
    recorder: &Recorder,
    regarding: &ObjectReference,
    type_: EventType,
    reason: &str,
    note: String,
) {
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note),
        action: reason.to_owned(),
        secondary: None,
    };
    if let Err(error) = recorder.publish(&event, regarding).await {
        tracing::debug!(%error, reason, "event not recorded");
    }
}

/// Normal, or Warning when `warning`.
pub(crate) fn kind(warning: bool) -> EventType {
    if warning { EventType::Warning } else { EventType::Normal }
}
