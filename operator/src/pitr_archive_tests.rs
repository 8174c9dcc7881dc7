use bloodraven_archive::{ArchiveId, Destination};
use bloodraven_crd::fixtures::GroupFixture;
use bloodraven_workloads::pitr::{MODE_NONE, PitrStorage};
use serde_json::json;

use super::*;

fn render() -> PitrRender {
    let destination =
        Destination::Pvc { namespace: "orders".into(), claim: "b".into(), sub_path: String::new() };
    let normalized = destination.normalize().unwrap();
    PitrRender {
        profile: "local".into(),
        archive_id: ArchiveId::derive("uid-1", &normalized),
        destination,
        normalized,
        group_uid: "uid-1".into(),
        encryption_mode: MODE_NONE,
        encryption: None,
        storage: PitrStorage::Pvc { claim: "b".into() },
        poll_interval: None,
    }
}

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + second).unwrap()
}

/// A healthy sidecar's answer for the render's archive.
fn healthy(state: &str) -> serde_json::Value {
    let render = render();
    json!({
        "enabled": true, "storeReady": true, "primary": false, "filesArchived": 3,
        "lastError": "", "storageType": "PVC", "manifestPrefix": "binlogs/", "site": "x",
        "uploadFailures": 0, "consecutiveFailedScans": 0, "divergentRows": 0,
        "quarantinedRows": 0, "backlog": 0, "lastScanAt": "2027-01-15T08:00:00Z",
        "archive": {
            "destination": render.normalized.to_string(),
            "archiveID": render.archive_id.to_string(),
            "encryptionMode": "None", "state": state,
        },
    })
}

fn sites(polls: Vec<SitePoll>) -> Vec<(String, SitePoll)> {
    ["iad", "pdx", "fra"].iter().map(|s| (*s).to_owned()).zip(polls).collect()
}

#[test]
fn every_site_verified_is_true_and_verified() {
    let polls = sites(vec![
        SitePoll::Answered(healthy("Verified")),
        SitePoll::Answered(healthy("Verified")),
        SitePoll::Answered(healthy("Verified")),
    ]);
    let roll = roll_up(&render(), &polls, at(0));
    assert_eq!(roll.status, ConditionStatus::True, "{}", roll.message);
    assert_eq!(roll.archive.state, Some(ArchiveState::Verified));
    assert_eq!(roll.archive.archive_id.as_deref(), Some(render().archive_id.as_str()));
    assert_eq!(roll.sites.len(), 3);
    assert_eq!(roll.sites[0].files_archived, Some(3));
    assert!(roll.sites[0].last_scan_at.is_some());
    // One site still waiting for the descriptor: True (archiving runs), not Verified.
    let polls = sites(vec![
        SitePoll::Answered(healthy("Verified")),
        SitePoll::Answered(healthy("AwaitingDescriptor")),
        SitePoll::Answered(healthy("Verified")),
    ]);
    let roll = roll_up(&render(), &polls, at(0));
    assert_eq!(roll.status, ConditionStatus::True);
    assert_eq!(roll.archive.state, Some(ArchiveState::AwaitingDescriptor));
}

#[test]
fn one_failed_scan_is_not_an_error_two_are() {
    let mut one = healthy("Verified");
    one["consecutiveFailedScans"] = json!(1);
    one["lastError"] = json!("upload: connection refused");
    let mut two = one.clone();
    two["consecutiveFailedScans"] = json!(2);
    let ok = SitePoll::Answered(healthy("Verified"));
    let roll =
        roll_up(&render(), &sites(vec![ok.clone(), SitePoll::Answered(one), ok.clone()]), at(0));
    assert_eq!(roll.status, ConditionStatus::True);
    let roll = roll_up(&render(), &sites(vec![ok.clone(), SitePoll::Answered(two), ok]), at(0));
    assert_eq!(roll.status, ConditionStatus::False);
    assert_eq!(roll.reason, ConditionReason::ArchiverError);
    assert!(
        roll.message.contains("pdx") && roll.message.contains("connection refused"),
        "{}",
        roll.message
    );
}

#[test]
fn reasons_rank_as_the_document_orders_them() {
    let mut store = healthy("AwaitingDescriptor");
    store["storeReady"] = json!(false);
    store["lastError"] = json!(
        "archive store init: pvc archive store: /run/bloodraven/pitr-archive is not a mount point (it does not exist)"
    );
    let mut refused = healthy("Refused");
    refused["archive"]["reason"] = json!("ArchiveLegacy");
    let mut error = healthy("Verified");
    error["consecutiveFailedScans"] = json!(5);
    let outdated = json!({ "enabled": true, "storeReady": true, "consecutiveFailedScans": 0 });
    let disabled = json!({ "enabled": false });
    let roll = |polls: Vec<SitePoll>| roll_up(&render(), &sites(polls), at(0));
    let a = SitePoll::Answered;
    let r = roll(vec![a(error.clone()), a(refused.clone()), a(store)]);
    assert_eq!(r.reason, ConditionReason::ArchiveStoreInitFailed);
    assert!(r.message.contains("fra: archive store init"), "{}", r.message);
    let r = roll(vec![a(error.clone()), a(refused.clone()), a(healthy("Verified"))]);
    assert_eq!(r.reason, ConditionReason::ArchiveLegacy);
    assert_eq!(r.archive.state, Some(ArchiveState::Refused));
    assert_eq!(r.archive.reason, Some(ArchiveRefusal::ArchiveLegacy));
    let r = roll(vec![a(disabled.clone()), a(outdated.clone()), a(error)]);
    assert_eq!(r.reason, ConditionReason::ArchiverError);
    let r = roll(vec![a(disabled.clone()), a(outdated), SitePoll::Unreachable("refused".into())]);
    assert_eq!(r.reason, ConditionReason::SidecarOutdated);
    let r =
        roll(vec![a(disabled), a(healthy("Verified")), SitePoll::Unreachable("refused".into())]);
    assert_eq!(r.reason, ConditionReason::ArchiverDisabled);
    let r = roll(vec![
        a(healthy("Verified")),
        a(healthy("Verified")),
        SitePoll::Unreachable("connection refused".into()),
    ]);
    assert_eq!((r.status, r.reason), (ConditionStatus::False, ConditionReason::SidecarUnreachable));
    let r =
        roll(vec![a(healthy("Verified")), a(healthy("Verified")), SitePoll::Waiting("x".into())]);
    assert_eq!(r.status, ConditionStatus::Unknown);
}

#[test]
fn a_report_for_another_destination_does_not_count() {
    let mut old = healthy("Refused");
    old["archive"]["destination"] = json!("pvc://orders/old/binlogs");
    old["archive"]["reason"] = json!("ArchiveForeign");
    let a = SitePoll::Answered;
    let roll = roll_up(
        &render(),
        &sites(vec![a(old), a(healthy("Verified")), a(healthy("Verified"))]),
        at(0),
    );
    assert_eq!(roll.status, ConditionStatus::True, "{}", roll.message);
    assert_eq!(roll.archive.state, Some(ArchiveState::AwaitingDescriptor));
}

#[test]
fn unreachable_needs_three_failures_over_a_minute_or_five_minutes_of_silence() {
    let started = at(0);
    let mut track = PollTrack::default();
    assert!(matches!(track.poll(started, at(299)), SitePoll::Waiting(_)));
    assert!(matches!(track.poll(started, at(300)), SitePoll::Unreachable(_)));
    track.answered(healthy("Verified"), at(10));
    track.failed("refused".into(), at(40));
    track.failed("refused".into(), at(70));
    track.failed("refused".into(), at(99));
    // Three failures but only 59 s apart: the last answer still stands.
    assert!(matches!(track.poll(started, at(99)), SitePoll::Answered(_)));
    assert!(matches!(track.poll(started, at(100)), SitePoll::Unreachable(_)));
    track.answered(healthy("Verified"), at(130));
    assert!(matches!(track.poll(started, at(130)), SitePoll::Answered(_)));
}

#[test]
fn the_status_body_carries_the_other_conditions_and_keeps_the_transition_time() {
    let group = GroupFixture::three_sites().build();
    let polls = sites(vec![
        SitePoll::Answered(healthy("Verified")),
        SitePoll::Answered(healthy("Verified")),
        SitePoll::Answered(healthy("Verified")),
    ]);
    let roll = roll_up(&render(), &polls, at(0));
    let body = status_body(&roll, &group, at(0));
    let conditions = body["status"]["conditions"].as_array().unwrap();
    let before = group.status.as_ref().unwrap().conditions.len();
    assert_eq!(conditions.len(), before + 1, "{body}");
    assert_eq!(conditions.last().unwrap()["type"], "PITRArchiveReady");
    assert_eq!(body["status"]["pitr"]["archive"]["state"], "Verified");
    let previous = vec![condition(&roll, &[], None, at(0))];
    let later = condition(&roll, &previous, None, at(60));
    assert_eq!(later.last_transition_time, previous[0].last_transition_time);
}

#[test]
fn the_group_wide_archived_times_bound_every_site_reporting_one() {
    let group = GroupFixture::three_sites().build();
    let with_times = |oldest: &str, newest: &str| {
        let mut answer = healthy("Verified");
        answer["oldestArchivedTime"] = json!(oldest);
        answer["newestArchivedTime"] = json!(newest);
        SitePoll::Answered(answer)
    };
    let polls = sites(vec![
        with_times("2027-01-15T07:00:00Z", "2027-01-15T08:00:00Z"),
        with_times("2027-01-15T06:00:00Z", "2027-01-15T07:30:00Z"),
        SitePoll::Answered(healthy("Verified")),
    ]);
    let roll = roll_up(&render(), &polls, at(0));
    let body = status_body(&roll, &group, at(0));
    let pitr = &body["status"]["pitr"];
    assert_eq!(pitr["oldestArchivedTime"], "2027-01-15T06:00:00Z", "{pitr}");
    assert_eq!(pitr["newestArchivedTime"], "2027-01-15T08:00:00Z", "{pitr}");
    // No site reports one: the fields are left out, not written null.
    let polls = sites(vec![
        SitePoll::Answered(healthy("Verified")),
        SitePoll::Answered(healthy("Verified")),
        SitePoll::Answered(healthy("Verified")),
    ]);
    let body = status_body(&roll_up(&render(), &polls, at(0)), &group, at(0));
    assert!(body["status"]["pitr"].get("newestArchivedTime").is_none(), "{body}");
}
