//! Test helpers: states built from the lab scenarios at a fixed `now`.

use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;

use super::action::{Action, Change, DataEvent};
use super::state::{ConnectionStatus, OperatorLease, Scope, SourceKind, State};
use super::update::update;
use crate::scenarios;

/// The fixed `now` of every snapshot: the scenarios' epoch.
pub(crate) fn now() -> Timestamp {
    scenarios::SCENARIO_EPOCH.parse().unwrap()
}

/// The data events a scenario's objects make, as the sources would send them.
pub(crate) fn scenario_events(name: &str) -> Vec<DataEvent> {
    // As `bloodraven lab` loads them: describing the fixture archive it lays.
    let mut objects = scenarios::raw_objects(name).unwrap();
    crate::lab::assign_uids(&mut objects);
    crate::lab::align_with_fixture(&mut objects, name, now());
    let of_kind = |kind: &'static str| objects.iter().filter(move |o| o["kind"] == kind).cloned();
    let groups: Vec<MysqlFailoverGroup> =
        of_kind("MysqlFailoverGroup").map(|o| serde_json::from_value(o).unwrap()).collect();
    let backups: Vec<MysqlBackup> =
        of_kind("MysqlBackup").map(|o| serde_json::from_value(o).unwrap()).collect();
    let verifications: Vec<MysqlBackupVerification> =
        of_kind("MysqlBackupVerification").map(|o| serde_json::from_value(o).unwrap()).collect();
    let events: Vec<Event> = of_kind("Event").map(|o| serde_json::from_value(o).unwrap()).collect();
    vec![
        DataEvent::Groups(Change::Restarted(groups)),
        DataEvent::Backups(Change::Restarted(backups)),
        DataEvent::Verifications(Change::Restarted(verifications)),
        DataEvent::Events(Change::Restarted(events)),
    ]
}

/// A state with a scenario loaded 3 seconds before [`now`], every source connected.
pub(crate) fn scenario_state(name: &str) -> State {
    let loaded: Timestamp = "2026-04-20T14:39:57Z".parse().unwrap();
    let mut state = State::new(loaded, "lab", Scope::All);
    for event in scenario_events(name) {
        update(&mut state, Action::Data(event));
    }
    for source in SourceKind::ALL {
        let status = ConnectionStatus::Connected;
        update(&mut state, Action::Data(DataEvent::Connection { source, status, at: loaded }));
    }
    update(
        &mut state,
        Action::Data(DataEvent::OperatorLease(lease_renewed_at("2026-04-20T14:39:55Z"))),
    );
    update(&mut state, Action::Tick(now()));
    state
}

/// The operator's leader Lease as the sources report it, renewed at `renewed`.
pub(crate) fn lease_renewed_at(renewed: &str) -> OperatorLease {
    OperatorLease::Seen {
        namespace: "bloodraven-system".to_owned(),
        name: "bloodraven-operator".to_owned(),
        holder: Some("bloodraven-operator-5d8f7c9b6d-x2x7q".to_owned()),
        renewed: Some(renewed.parse().unwrap()),
    }
}
