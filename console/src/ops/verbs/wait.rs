//! What `--wait` says of a backup or a verification it follows: the phase, and once it ended
//! the outcome — the artifact of a Succeeded backup, the reason of a Failed one — and why the
//! operator ignored an acknowledgement (its Event). Pure: the status or Events in, lines out.

use bloodraven_crd::backup::{BackupPhase, MysqlBackupStatus};
use bloodraven_crd::condition::{Condition, ConditionType};
use bloodraven_crd::verification::{MysqlBackupVerificationStatus, VerificationPhase};
use k8s_openapi::api::core::v1::Event;

/// A followed object's phase and, once terminal, its outcome: `Ok` says what was made,
/// `Err` why it failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Followed {
    /// The phase (`Pending` before the operator wrote one).
    pub(super) phase: String,
    /// `None` while it runs.
    pub(super) outcome: Option<Result<String, String>>,
}

/// Why a Failed object failed: the Ready condition's reason and the status message (or the
/// condition's), whichever exist.
fn failure(conditions: &[Condition], message: Option<&str>) -> String {
    let ready = conditions.iter().find(|c| c.type_ == ConditionType::Ready);
    let reason = ready.and_then(|c| c.reason.as_ref()).map(|r| r.as_str().to_owned());
    let message = message.or_else(|| ready.and_then(|c| c.message.as_deref()));
    match (reason, message) {
        (Some(reason), Some(message)) => format!("Failed ({reason}): {message}"),
        (Some(reason), None) => format!("Failed ({reason})"),
        (None, Some(message)) => format!("Failed: {message}"),
        (None, None) => "Failed (the operator recorded no reason: see the object's Events)".into(),
    }
}

/// A MysqlBackup's progress; a Succeeded one names its artifact.
pub(super) fn backup(status: Option<&MysqlBackupStatus>) -> Followed {
    let phase = status.and_then(|s| s.phase.as_ref());
    let text = phase.map_or("Pending", |p| p.as_str()).to_owned();
    let outcome = match (phase, status) {
        (Some(BackupPhase::Succeeded), Some(status)) => Some(Ok(artifact(status))),
        (Some(BackupPhase::Failed), Some(status)) => {
            Some(Err(failure(&status.conditions, status.message.as_deref())))
        }
        _ => None,
    };
    Followed { phase: text, outcome }
}

/// `Succeeded: artifact <location> (<type> <claim|bucket>), from <site>, gtidExecuted <set>,
/// <n> bytes`, with what the status holds.
fn artifact(status: &MysqlBackupStatus) -> String {
    let storage = status.artifact_storage.as_ref();
    let location = storage.and_then(|s| s.location.as_deref()).unwrap_or("(no location recorded)");
    let mut line = format!("Succeeded: artifact {location}");
    if let Some(storage) = storage {
        let kind = storage.type_.as_ref().map(|t| t.as_str().to_owned());
        let place = storage
            .claim_name
            .as_ref()
            .map(|claim| format!("claim {claim}"))
            .or_else(|| storage.bucket.as_ref().map(|bucket| format!("bucket {bucket}")));
        match (kind, place) {
            (Some(kind), Some(place)) => line.push_str(&format!(" ({kind} {place})")),
            (Some(kind), None) => line.push_str(&format!(" ({kind})")),
            (None, Some(place)) => line.push_str(&format!(" ({place})")),
            (None, None) => {}
        }
    }
    if let Some(site) = &status.source_site {
        line.push_str(&format!(", from site {site}"));
    }
    if let Some(gtids) = &status.gtid_executed {
        let gtids = gtids.replace('\n', "");
        let gtids = if gtids.trim().is_empty() { "(empty: no transaction yet)" } else { &gtids };
        line.push_str(&format!(", gtidExecuted {gtids}"));
    }
    if let Some(size) = status.size_bytes {
        line.push_str(&format!(", {size} bytes"));
    }
    line
}

/// A MysqlBackupVerification's progress; a Failed one names its reason.
pub(super) fn verification(status: Option<&MysqlBackupVerificationStatus>) -> Followed {
    let phase = status.and_then(|s| s.phase.as_ref());
    let text = phase.map_or("Pending", |p| p.as_str()).to_owned();
    let outcome = match (phase, status) {
        (Some(VerificationPhase::Succeeded), Some(_)) => Some(Ok("Succeeded".to_owned())),
        (Some(VerificationPhase::Failed), Some(status)) => {
            Some(Err(failure(&status.conditions, status.message.as_deref())))
        }
        _ => None,
    };
    Followed { phase: text, outcome }
}

/// What `--wait` says of an acknowledgement the operator read and did not act on: why, from
/// its PlannedFailoverHoldAcknowledgmentIgnored Event when one was found.
pub(super) fn ignored(why: Option<&str>) -> String {
    match why {
        Some(message) => format!(
            "ignored by the operator (PlannedFailoverHoldAcknowledgmentIgnored): {message}; the \
             hold still stands"
        ),
        None => "ignored by the operator: the hold still stands and no \
                 PlannedFailoverHoldAcknowledgmentIgnored Event says why yet (see the group's \
                 Events)"
            .to_owned(),
    }
}

/// The message of the newest PlannedFailoverHoldAcknowledgmentIgnored Event on group `name`
/// (any namespace the caller listed) from `since` on, compared to the second: Event times have
/// no finer grain.
pub(crate) fn newest_ignored<'a>(
    events: impl IntoIterator<Item = &'a Event>,
    name: &str,
    since: jiff::Timestamp,
) -> Option<String> {
    let since = since.as_second();
    events
        .into_iter()
        .filter(|event| {
            event.reason.as_deref() == Some("PlannedFailoverHoldAcknowledgmentIgnored")
                && event.involved_object.kind.as_deref() == Some("MysqlFailoverGroup")
                && event.involved_object.name.as_deref() == Some(name)
        })
        .filter_map(|event| {
            let at = event
                .last_timestamp
                .as_ref()
                .or(event.first_timestamp.as_ref())
                .map(|time| time.0)
                .or(event.event_time.as_ref().map(|time| time.0))?;
            (at.as_second() >= since).then(|| (at, event.message.clone().unwrap_or_default()))
        })
        .max_by_key(|(at, _)| *at)
        .map(|(_, message)| message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn backup_status(value: serde_json::Value) -> MysqlBackupStatus {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_running_backup_has_no_outcome_and_pending_before_any_phase() {
        assert_eq!(backup(None), Followed { phase: "Pending".into(), outcome: None });
        let running = backup_status(json!({"phase": "Running"}));
        assert_eq!(backup(Some(&running)), Followed { phase: "Running".into(), outcome: None });
    }

    #[test]
    fn a_succeeded_backup_names_its_artifact() {
        let done = backup_status(json!({
            "phase": "Succeeded",
            "sourceSite": "pdx",
            "artifactStorage": {"type": "PVC", "claimName": "backups",
                                "location": "orders/orders-pvc-1"},
            "gtidExecuted": "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5\n",
            "sizeBytes": 2048,
        }));
        assert_eq!(
            backup(Some(&done)).outcome,
            Some(Ok("Succeeded: artifact orders/orders-pvc-1 (PVC claim backups), from site \
                     pdx, gtidExecuted 3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5, 2048 bytes"
                .to_owned()))
        );
    }

    #[test]
    fn a_failed_backup_names_its_reason() {
        let failed = backup_status(json!({
            "phase": "Failed",
            "conditions": [{"type": "Ready", "status": "False", "reason": "BackupFailed",
                            "message": "the job's upload failed"}],
            "message": "S3 at http://127.0.0.1:1 refused the connection",
        }));
        assert_eq!(
            backup(Some(&failed)).outcome,
            Some(Err(
                "Failed (BackupFailed): S3 at http://127.0.0.1:1 refused the connection".to_owned()
            ))
        );
        let bare = backup_status(json!({"phase": "Failed"}));
        assert_eq!(
            backup(Some(&bare)).outcome,
            Some(Err("Failed (the operator recorded no reason: see the object's Events)".into()))
        );
    }

    fn event(reason: &str, name: &str, at: &str, message: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("{name}.{at}"), "namespace": "orders"},
            "involvedObject": {"kind": "MysqlFailoverGroup", "name": name, "namespace": "orders"},
            "reason": reason, "message": message, "type": "Warning", "lastTimestamp": at,
        }))
        .unwrap()
    }

    #[test]
    fn an_ignored_acknowledgement_is_explained_by_its_newest_event_since_the_send() {
        const IGNORED: &str = "PlannedFailoverHoldAcknowledgmentIgnored";
        let events = [
            event(IGNORED, "orders", "2026-04-20T14:39:00Z", "an older acknowledgement"),
            event(IGNORED, "orders", "2026-04-20T14:40:02Z", "the claim is held for run r-2"),
            event(IGNORED, "orders", "2026-04-20T14:40:01Z", "an earlier one of this second"),
            event(IGNORED, "payments", "2026-04-20T14:40:05Z", "another group"),
            event("PlannedFailoverHoldPersisted", "orders", "2026-04-20T14:40:06Z", "reminder"),
        ];
        // Sent within the second of 14:40:00: Event times are whole seconds.
        let sent: jiff::Timestamp = "2026-04-20T14:40:00.700Z".parse().unwrap();
        let why = newest_ignored(&events, "orders", sent);
        assert_eq!(why.as_deref(), Some("the claim is held for run r-2"));
        assert_eq!(
            ignored(why.as_deref()),
            "ignored by the operator (PlannedFailoverHoldAcknowledgmentIgnored): the claim is \
             held for run r-2; the hold still stands"
        );
        let later: jiff::Timestamp = "2026-04-20T14:41:00Z".parse().unwrap();
        assert_eq!(newest_ignored(&events, "orders", later), None);
        assert!(ignored(None).contains("see the group's Events"));
    }

    #[test]
    fn a_failed_verification_names_its_reason() {
        let failed: MysqlBackupVerificationStatus = serde_json::from_value(json!({
            "phase": "Failed",
            "conditions": [{"type": "Ready", "status": "False", "reason": "VerificationFailed",
                            "message": "checksums differ"}],
        }))
        .unwrap();
        assert_eq!(
            verification(Some(&failed)).outcome,
            Some(Err("Failed (VerificationFailed): checksums differ".to_owned()))
        );
    }
}
