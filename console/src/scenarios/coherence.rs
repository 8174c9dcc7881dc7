//! Scenario coherence: each scenario's status values agree with each other and with its
//! backups and clock (conditions vs site states vs the archive's summary vs backups vs
//! `now`). A contradiction a scenario keeps on purpose (a summary field that lies, as an
//! older operator could write) is named in the file's header as
//! `# Contradiction kept on purpose (<id>)`, and the verdict must flag it.

use std::collections::BTreeSet;

use bloodraven_facts::verdict::Kind;
use jiff::Timestamp;
use serde_json::Value;

use super::*;

/// Keys whose times may lie after `now`: deadlines and planned retries.
const FUTURE_KEYS: [&str; 5] =
    ["retryTime", "deadlineTime", "deadline", "nextScheduleTime", "expiryTime"];

fn time(value: &Value) -> Option<Timestamp> {
    value.as_str()?.parse().ok()
}

fn condition<'a>(group: &'a Value, type_: &str) -> Option<&'a Value> {
    group["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

fn is_true(group: &Value, type_: &str) -> Option<bool> {
    condition(group, type_).map(|c| c["status"] == "True")
}

/// Every time in `value` after `now`, outside [`FUTURE_KEYS`], with its path.
fn future_times(value: &Value, path: &str, now: Timestamp, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if FUTURE_KEYS.contains(&key.as_str()) {
                    continue;
                }
                future_times(child, &format!("{path}.{key}"), now, out);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                future_times(item, &format!("{path}[{index}]"), now, out);
            }
        }
        Value::String(_) => {
            if let Some(at) = time(value)
                && at > now
            {
                out.push(format!("{path} ({at}) is after now"));
            }
        }
        _ => {}
    }
}

/// The contradictions in a scenario's objects: `(id, what)`, ids as the file header names
/// them.
pub(super) fn incoherences(objects: &[Value], now: Timestamp) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut push = |id: &str, what: String| found.push((id.to_owned(), what));
    for object in objects {
        let name = format!(
            "{} {}/{}",
            object["kind"].as_str().unwrap_or("?"),
            object["metadata"]["namespace"].as_str().unwrap_or("?"),
            object["metadata"]["name"].as_str().unwrap_or("?")
        );
        let mut future = Vec::new();
        future_times(object, "", now, &mut future);
        for what in future {
            push("clock", format!("{name}: {what}"));
        }
        if object["kind"] != "MysqlFailoverGroup" {
            continue;
        }
        let group = object;
        let status = &group["status"];
        let spec_sites: BTreeSet<&str> = group["spec"]["sites"]
            .as_array()
            .map(|sites| sites.iter().filter_map(|s| s["name"].as_str()).collect())
            .unwrap_or_default();
        let writable: Vec<&str> = status["sites"]
            .as_array()
            .map(|sites| {
                sites
                    .iter()
                    .filter(|site| site["state"] == "writable")
                    .filter_map(|site| site["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        let active = status["activeSite"].as_str();
        if let Some(active) = active
            && !spec_sites.contains(active)
        {
            push("active-not-a-site", format!("{name}: activeSite {active} is not in spec.sites"));
        }
        let phase = status["plannedFailover"]["phase"].as_str();
        let in_flight = phase.is_some_and(|phase| !["Succeeded", "Failed"].contains(&phase));
        let fenced = status["plannedFailover"]["fence"]["state"] == "Applied";
        if is_true(group, "Ready") == Some(true) {
            if in_flight && fenced {
                push(
                    "ready-while-writes-blocked",
                    format!(
                        "{name}: Ready=True while planned failover {} blocks writes",
                        phase.unwrap_or("?")
                    ),
                );
            } else if active.is_none_or(|active| writable != [active]) {
                push(
                    "ready-without-writer",
                    format!(
                        "{name}: Ready=True but writable sites are {writable:?}, active {active:?}"
                    ),
                );
            }
        }
        let hold = !status["plannedFailoverHold"].is_null();
        if is_true(group, "AutomaticFailoverHeld").unwrap_or(false) != hold {
            push(
                "hold-condition",
                format!("{name}: AutomaticFailoverHeld disagrees with plannedFailoverHold"),
            );
        }
        if status["pitr"]["archive"]["state"] == "Verified"
            && is_true(group, "PITRArchiveReady") == Some(false)
        {
            push(
                "archive-verified-not-ready",
                format!("{name}: status.pitr.archive.state=Verified while PITRArchiveReady=False"),
            );
        }
        for site in status["restoreReclones"]["pending"].as_array().into_iter().flatten() {
            let site = site.as_str().unwrap_or("?");
            if !spec_sites.contains(site) || Some(site) == active {
                push("reclone-site", format!("{name}: queued site {site} is not a peer"));
            }
        }
        // Backups: lastBackupTime is the newest Succeeded backup of this group.
        let group_name = group["metadata"]["name"].as_str();
        let newest = objects
            .iter()
            .filter(|o| o["kind"] == "MysqlBackup")
            .filter(|o| o["metadata"]["namespace"] == group["metadata"]["namespace"])
            .filter(|o| o["spec"]["failoverGroupRef"]["name"].as_str() == group_name)
            .filter(|o| o["status"]["phase"] == "Succeeded")
            .filter_map(|o| time(&o["status"]["completionTime"]))
            .max();
        if let (Some(newest), Some(last)) = (newest, time(&status["lastBackupTime"]))
            && newest != last
        {
            push(
                "last-backup-time",
                format!("{name}: lastBackupTime {last} but the newest backup completed {newest}"),
            );
        }
    }
    found
}

/// The ids a scenario file names as kept on purpose.
fn declared(name: &str) -> BTreeSet<String> {
    let prefix = "# Contradiction kept on purpose (";
    file_text(name)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.strip_prefix(prefix))
        .filter_map(|rest| rest.split_once(')').map(|(id, _)| id.to_owned()))
        .collect()
}

fn now() -> Timestamp {
    SCENARIO_EPOCH.parse().unwrap()
}

#[test]
fn every_scenario_is_coherent_but_for_what_it_names() {
    for name in NAMES {
        let objects = raw_objects(name).unwrap();
        let found = incoherences(&objects, now());
        let ids: BTreeSet<String> = found.iter().map(|(id, _)| id.clone()).collect();
        assert_eq!(ids, declared(name), "{name}: {found:#?}");
    }
}

/// Each contradiction a scenario keeps is flagged by the verdict as `SummaryDisagrees`.
#[test]
fn the_verdict_flags_every_contradiction_kept_on_purpose() {
    for name in NAMES {
        let declared = declared(name);
        if declared.is_empty() {
            continue;
        }
        let objects = raw_objects(name).unwrap();
        let flagged = incoherences(&objects, now()).into_iter().all(|(_, what)| {
            objects.iter().filter(|o| o["kind"] == "MysqlFailoverGroup").any(|object| {
                let group: bloodraven_crd::MysqlFailoverGroup =
                    serde_json::from_value(object.clone()).unwrap();
                let label = format!(
                    "MysqlFailoverGroup {}/{}:",
                    object["metadata"]["namespace"].as_str().unwrap_or("?"),
                    object["metadata"]["name"].as_str().unwrap_or("?")
                );
                what.starts_with(&label)
                    && crate::verdict::of(&group, &[], &[], now())
                        .findings
                        .iter()
                        .any(|finding| finding.kind == Kind::SummaryDisagrees)
            })
        });
        assert!(flagged, "{name}: a contradiction it keeps is not flagged by the verdict");
    }
}

/// The checks catch what they are for: each made-up contradiction is named.
#[test]
fn the_coherence_checks_catch_contradictions() {
    type Spoil = fn(&mut Value);
    let cases: [(&str, Spoil); 6] = [
        ("ready-without-writer", |group| {
            group["status"]["sites"][0]["state"] = "read-only".into();
        }),
        ("archive-verified-not-ready", |group| {
            group["status"]["pitr"]["archive"]["state"] = "Verified".into();
            let conditions = group["status"]["conditions"].as_array_mut().unwrap();
            for condition in conditions.iter_mut().filter(|c| c["type"] == "PITRArchiveReady") {
                condition["status"] = "False".into();
            }
        }),
        ("clock", |group| group["status"]["sites"][0]["lastSeen"] = "2026-04-21T00:00:00Z".into()),
        ("hold-condition", |group| {
            group["status"]["plannedFailoverHold"] = serde_json::json!({"runID": "x"})
        }),
        ("active-not-a-site", |group| group["status"]["activeSite"] = "nowhere".into()),
        ("last-backup-time", |group| {
            group["status"]["lastBackupTime"] = "2026-04-20T01:00:00Z".into()
        }),
    ];
    for (id, spoil) in cases {
        let mut objects = raw_objects("healthy").unwrap();
        // orders/orders: the first group, coherent as written.
        spoil(&mut objects[0]);
        let found = incoherences(&objects, now());
        assert!(found.iter().any(|(found, _)| found == id), "{id} not caught: {found:#?}");
    }
}
