#![allow(clippy::unwrap_used, reason = "test code")]

use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};

use super::*;
use crate::scenarios;

fn epoch() -> Timestamp {
    scenarios::SCENARIO_EPOCH.parse().unwrap()
}

struct Loaded {
    groups: Vec<MysqlFailoverGroup>,
    backups: Vec<MysqlBackup>,
    verifications: Vec<MysqlBackupVerification>,
}

fn load(name: &str) -> Loaded {
    let mut loaded = Loaded { groups: vec![], backups: vec![], verifications: vec![] };
    for object in scenarios::objects(name, epoch()).unwrap() {
        match object["kind"].as_str() {
            Some("MysqlFailoverGroup") => {
                loaded.groups.push(serde_json::from_value(object).unwrap())
            }
            Some("MysqlBackup") => loaded.backups.push(serde_json::from_value(object).unwrap()),
            Some("MysqlBackupVerification") => {
                loaded.verifications.push(serde_json::from_value(object).unwrap());
            }
            _ => {}
        }
    }
    loaded
}

fn summary(name: &str) -> Vec<String> {
    let loaded = load(name);
    loaded
        .groups
        .iter()
        .map(|group| {
            let verdict = of(group, &loaded.backups, &loaded.verifications, epoch());
            let findings: Vec<String> = verdict
                .findings
                .iter()
                .map(|finding| format!("{}:{}", finding.severity.as_str(), finding.kind.as_str()))
                .collect();
            format!(
                "{}/{} archive={} [{}]",
                group.metadata.namespace.as_deref().unwrap_or("-"),
                group.metadata.name.as_deref().unwrap_or("-"),
                verdict.archive.state,
                findings.join(" ")
            )
        })
        .collect()
}

/// Every lab scenario's verdict, group by group: the contradictions each scenario keeps on
/// purpose (named in its file) are flagged, and nothing else is.
#[test]
fn every_scenario_gets_the_verdict_its_facts_call_for() {
    let table: [(&str, &[&str]); 7] = [
        (
            "healthy",
            &[
                "orders/orders archive=Verified []",
                "orders/carts archive=Verified [critical:NoWriter warning:SummaryDisagrees]",
                "payments/ledger archive=Verified []",
            ],
        ),
        (
            "planned-failover-waiting",
            &[
                "orders/orders archive=Verified [warning:PlannedFailoverInFlight warning:SummaryDisagrees]",
            ],
        ),
        (
            "hold-standing",
            &["orders/orders archive=Verified [critical:AutomationHeld critical:SplitBrain]"],
        ),
        ("reclone-draining", &["orders/orders archive=Verified [info:RecloneDraining]"]),
        (
            "reclone-held",
            &["orders/orders archive=Verified [critical:RecloneHeld warning:RestoreInPlaceFailed]"],
        ),
        (
            "pitr-divergent",
            &["orders/orders archive=Verified [critical:RestoreRefused warning:BackupTooOld]"],
        ),
        (
            "archive-gap",
            &[
                "orders/orders archive=NotReady(ArchiverError) [warning:ArchiveNotReady warning:ArchiverFailing warning:SummaryDisagrees]",
            ],
        ),
    ];
    for (name, expected) in table {
        assert_eq!(summary(name), expected, "scenario {name}");
    }
    let covered: Vec<&str> = table.iter().map(|(name, _)| *name).collect();
    for name in scenarios::NAMES {
        assert!(name == "fleet-1000" || covered.contains(&name), "scenario {name} has no row");
    }
}

#[test]
fn the_next_action_of_each_problem_scenario_names_the_cause_and_a_command() {
    let cases = [
        (
            "hold-standing",
            "bloodraven.shipstream.io/acknowledge-planned-failover-hold=6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10",
        ),
        ("reclone-held", r#"-p '{"status":{"restoreReclones":{"phase":"Draining"}}}'"#),
        ("planned-failover-waiting", "kubectl get mfg orders -n orders -w"),
    ];
    for (name, command) in cases {
        let loaded = load(name);
        let verdict = of(&loaded.groups[0], &loaded.backups, &loaded.verifications, epoch());
        let line = verdict.headline().unwrap().next_action();
        assert!(line.contains(command), "{name}: {line}");
    }
    // The divergent restore's finding carries the archive's real sets, from its message.
    let loaded = load("pitr-divergent");
    let verdict = of(&loaded.groups[0], &loaded.backups, &loaded.verifications, epoch());
    assert!(
        verdict.headline().unwrap().fact.contains("3e11fa47-71ca-11e1-9e33-c80aa9429562:96-100")
    );
}

#[test]
fn fleet_1000_counts_problems_by_severity() {
    let loaded = load("fleet-1000");
    let verdicts: Vec<Verdict> =
        loaded.groups.iter().map(|group| of(group, &[], &[], epoch())).collect();
    // index % 37 == 5: fra unreachable (Warning); % 50 == 3: WaitingForLag without a fence
    // (Info); % 125 == 7: a hold (Critical); % 100 == 11: a draining queue (Info).
    assert_eq!(fleet_counts(&verdicts), [8, 27, 29]);
    let json = to_json(&verdicts[7]);
    assert_eq!(json["worst"], "critical");
    assert_eq!(json["findings"][0]["kind"], "AutomationHeld");
}
