//! What a standing reclone queue shows (backup-and-restore document, "Expected signals while
//! sites are queued"), pure: `Degraded=True` with reason `RestoreReclonePending`, `Ready=False`
//! ("… await their post-restore reclone"), and the gauge
//! `bloodraven_restore_reclone_pending{site,phase}=1` per queued site. The queued sites'
//! `healthy=false` comes from the endpoint gating: their receivers are stopped.

use bloodraven_crd::group::RestoreReclones;
use jiff::Timestamp;
use serde_json::Value;

/// The Degraded (and Ready) reason while sites are queued.
pub const PENDING_REASON: &str = "RestoreReclonePending";

/// The words of the signal: which sites wait and what to do.
pub fn message(queue: &RestoreReclones) -> Option<String> {
    if queue.pending.is_empty() {
        return None;
    }
    let phase = queue.phase.as_ref().map_or("unknown", |p| p.as_str());
    let advice = match phase {
        "Held" => {
            "; the queue is Held: decide (back up a held site and restore from it, set status.restoreReclones.phase to Draining to keep the primary's data, or remove status.restoreReclones)"
        }
        "Armed" => "; the restore runs",
        _ => "; they are recloned from the primary one at a time",
    };
    Some(format!(
        "sites {} await their post-restore reclone (queue {phase}){advice}",
        queue.pending.join(", ")
    ))
}

/// The gauge's samples: `(site, phase)` for every queued site.
pub fn gauge(queue: Option<&RestoreReclones>) -> Vec<(String, String)> {
    let Some(queue) = queue else { return Vec::new() };
    let phase = queue.phase.as_ref().map_or("Unknown", |p| p.as_str()).to_owned();
    queue.pending.iter().map(|site| (site.clone(), phase.clone())).collect()
}

/// Rewrites a rendered status body (`crate::status::render`): while a queue stands, Ready is
/// False and Degraded True with reason [`PENDING_REASON`], the queue's words first.
pub fn apply(body: &mut Value, queue: Option<&RestoreReclones>, now: Timestamp) {
    let Some(text) = queue.and_then(message) else { return };
    let Some(conditions) = body.pointer_mut("/status/conditions").and_then(Value::as_array_mut)
    else {
        return;
    };
    for condition in conditions {
        let (wanted, keep_old) = match condition.get("type").and_then(Value::as_str) {
            Some("Degraded") => {
                ("True", condition.get("status").and_then(Value::as_str) == Some("True"))
            }
            Some("Ready") => {
                ("False", condition.get("status").and_then(Value::as_str) == Some("False"))
            }
            _ => continue,
        };
        let old = condition.get("message").and_then(Value::as_str).unwrap_or_default().to_owned();
        let words =
            if keep_old && !old.is_empty() { format!("{text}; {old}") } else { text.clone() };
        if condition.get("status").and_then(Value::as_str) != Some(wanted) {
            condition["lastTransitionTime"] = Value::from(now.to_string());
        }
        condition["status"] = Value::from(wanted);
        condition["reason"] = Value::from(PENDING_REASON);
        condition["message"] = Value::from(words);
    }
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::group::{RestoreReclones, RestoreReclonesPhase};
    use serde_json::json;

    use super::*;

    fn body() -> Value {
        json!({ "status": { "conditions": [
            { "type": "Ready", "status": "True", "reason": "Ready", "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z" },
            { "type": "Degraded", "status": "False", "reason": "Healthy", "message": "fine", "lastTransitionTime": "2026-01-01T00:00:00Z" },
        ]}})
    }

    #[test]
    fn a_standing_queue_makes_the_group_degraded_and_not_ready() {
        let queue = RestoreReclones {
            phase: Some(RestoreReclonesPhase::Held),
            pending: vec!["pdx".into(), "fra".into()],
            ..RestoreReclones::default()
        };
        let mut rendered = body();
        let now: Timestamp = "2026-02-01T00:00:00Z".parse().unwrap();
        apply(&mut rendered, Some(&queue), now);
        let conditions = rendered["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions[0]["status"], "False");
        assert_eq!(conditions[1]["status"], "True");
        for condition in conditions {
            assert_eq!(condition["reason"], PENDING_REASON);
            let text = condition["message"].as_str().unwrap();
            assert!(text.contains("pdx, fra await their post-restore reclone"), "{text}");
            assert!(text.contains("Held"), "{text}");
            assert_eq!(condition["lastTransitionTime"], "2026-02-01T00:00:00Z");
        }
        assert_eq!(
            gauge(Some(&queue)),
            vec![("pdx".to_owned(), "Held".to_owned()), ("fra".to_owned(), "Held".to_owned())]
        );
    }

    #[test]
    fn no_queue_changes_nothing() {
        let mut rendered = body();
        apply(&mut rendered, None, Timestamp::UNIX_EPOCH);
        assert_eq!(rendered, body());
        let empty = RestoreReclones::default();
        apply(&mut rendered, Some(&empty), Timestamp::UNIX_EPOCH);
        assert_eq!(rendered, body());
        assert!(gauge(None).is_empty());
    }
}
