//! The console's static scenarios (`console/scenarios/*.yaml`) offer the runbooks they should.

use std::path::Path;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_runbook::{GroupView, applicable};
use serde::Deserialize;

/// The static scenario files.
pub(crate) const NAMES: [&str; 7] = [
    "healthy",
    "hold-standing",
    "reclone-held",
    "reclone-draining",
    "planned-failover-waiting",
    "archive-gap",
    "pitr-divergent",
];

/// The groups of one scenario file (other kinds are skipped).
pub(crate) fn groups(name: &str) -> Vec<MysqlFailoverGroup> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../console/scenarios/{name}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut groups = Vec::new();
    for document in serde_norway::Deserializer::from_str(&text) {
        let value = serde_json::Value::deserialize(document)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if value.get("kind").and_then(|k| k.as_str()) == Some("MysqlFailoverGroup") {
            groups.push(
                serde_json::from_value(value).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            );
        }
    }
    groups
}

#[test]
fn each_scenario_offers_its_runbooks() {
    let all = super::shipped();
    let expected: &[(&str, &[&str])] = &[
        ("healthy", &["planned-failover-before", "no-primary", "planned-failover-before"]),
        ("hold-standing", &["automation-hold"]),
        ("reclone-held", &["held-reclone-queue"]),
        ("reclone-draining", &[]),
        ("planned-failover-waiting", &["planned-failover-during"]),
        ("archive-gap", &["archive-not-ready", "planned-failover-before"]),
        ("pitr-divergent", &["pitr-divergent-history"]),
    ];
    let mut failures = Vec::new();
    for (scenario, want) in expected {
        let groups = groups(scenario);
        assert!(!groups.is_empty(), "scenario {scenario} has no group");
        let mut got = Vec::new();
        for group in &groups {
            let ranked = applicable(&all, &GroupView::of(group));
            assert!(ranked.errors.is_empty(), "{scenario}: {:?}", ranked.errors);
            got.extend(ranked.runbooks.iter().map(|r| r.id.clone()));
        }
        if got != *want {
            failures.push(format!("{scenario}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
