#![allow(clippy::unwrap_used, reason = "test code")]

use super::*;
use crate::scenarios;

fn epoch() -> Timestamp {
    scenarios::SCENARIO_EPOCH.parse().unwrap()
}

fn objects(name: &str) -> (Vec<DynamicObject>, Vec<MysqlBackup>, Vec<MysqlBackupVerification>) {
    let mut groups = Vec::new();
    let mut backups = Vec::new();
    let mut verifications = Vec::new();
    for object in scenarios::objects(name, epoch()).unwrap() {
        match object["kind"].as_str() {
            Some("MysqlFailoverGroup") => groups.push(serde_json::from_value(object).unwrap()),
            Some("MysqlBackup") => backups.push(serde_json::from_value(object).unwrap()),
            Some("MysqlBackupVerification") => {
                verifications.push(serde_json::from_value(object).unwrap());
            }
            _ => {}
        }
    }
    (groups, backups, verifications)
}

fn doctor(name: &str, format: DoctorFormat) -> String {
    let runbooks = bloodraven_runbook::shipped().unwrap();
    let (groups, backups, verifications) = objects(name);
    report(groups, &backups, &verifications, &runbooks, format, true, epoch()).unwrap().0
}

/// Every candidate names a shipped runbook.
#[test]
fn every_candidate_runbook_is_shipped() {
    use bloodraven_facts::verdict::Kind as K;
    let runbooks = bloodraven_runbook::shipped().unwrap();
    let kinds = [
        K::NoStatus,
        K::NoWriter,
        K::SplitBrain,
        K::WriterMoved,
        K::NonCandidateWritable,
        K::SiteUnreachable,
        K::SiteStale,
        K::SiteDiverged,
        K::OperatorSilent,
        K::AutomationHeld,
        K::PlannedFailoverInFlight,
        K::PlannedFailoverFailed,
        K::RecloneHeld,
        K::RecloneStuck,
        K::RecloneDraining,
        K::RestoreRefused,
        K::RestoreInPlaceFailed,
        K::ArchiveNotReady,
        K::ArchiveDamaged,
        K::ArchiverFailing,
        K::ArchiveStale,
        K::BackupFailing,
        K::BackupTooOld,
        K::VerificationFailed,
        K::SummaryDisagrees,
    ];
    for kind in kinds {
        for id in candidates(kind) {
            assert!(runbooks.iter().any(|r| r.id == *id), "{kind:?} names unknown runbook {id}");
        }
    }
}

/// Every lab scenario: exactly the expected findings, each with the runbook to open.
#[test]
fn doctor_on_every_lab_scenario() {
    let mut out = String::new();
    for name in scenarios::NAMES.iter().filter(|name| **name != "fleet-1000") {
        out.push_str(&format!("== {name}\n{}", doctor(name, DoctorFormat::Table)));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn doctor_json_names_the_runbook_of_each_finding() {
    let json: Value = serde_json::from_str(&doctor("hold-standing", DoctorFormat::Json)).unwrap();
    let findings = &json["groups"][0]["findings"];
    assert_eq!(findings[0]["kind"], "AutomationHeld");
    assert_eq!(findings[0]["runbook"], "automation-hold");
    assert_eq!(json["groups"][0]["worst"], "critical");
    assert_eq!(json["groups"][0]["runbooks"][0], "automation-hold");
}

/// Only groups with findings are evaluated against the runbooks; the counts add up.
#[test]
fn doctor_over_fleet_1000() {
    let text = doctor("fleet-1000", DoctorFormat::Table);
    let last = text.lines().last().unwrap();
    assert_eq!(last, "1000 group(s), 64 with findings, 936 healthy");
    assert!(text.contains("AutomationHeld") && text.contains("automation-hold"), "{text}");
}
