//! The lab's scenarios: data files under `console/scenarios/` (multi-document YAML), plus
//! `fleet-1000`, generated here. Scenario times are written relative to [`SCENARIO_EPOCH`];
//! [`objects`] shifts them so that the epoch becomes `now`.

use jiff::Timestamp;
use serde_json::{Value, json};

/// Every scenario, in the order `--help` lists them.
pub const NAMES: [&str; 8] = [
    "healthy",
    "planned-failover-waiting",
    "hold-standing",
    "reclone-draining",
    "reclone-held",
    "pitr-divergent",
    "archive-gap",
    "fleet-1000",
];

/// Scenarios `lab` also loads but the per-scenario tests and snapshots leave out: generated
/// fleets for measuring (`fleet-10000`: the TUI's memory and frame time at 10,000 groups,
/// `scripts/bench/tui-rss.bench.sh`). Each is a [`fleet`] of the size its name says.
pub const LARGE: [&str; 1] = ["fleet-10000"];

/// How many groups `fleet-10000` has.
pub const LARGE_FLEET_SIZE: usize = 10_000;

/// Every scenario `lab --scenario` accepts: [`NAMES`], then [`LARGE`].
pub fn all_names() -> impl Iterator<Item = &'static str> {
    NAMES.into_iter().chain(LARGE)
}

/// The instant scenario files treat as "now".
pub const SCENARIO_EPOCH: &str = "2026-04-20T14:40:00Z";

/// How many groups `fleet-1000` has.
pub const FLEET_SIZE: usize = 1000;

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown scenario {0:?}; known: {known}", known = all_names().collect::<Vec<_>>().join(", "))]
    UnknownScenario(String),
    #[error("scenario {scenario}: document {document}: {message}")]
    InvalidYaml { scenario: String, document: usize, message: String },
}

/// The file text of a data-file scenario.
pub fn file_text(name: &str) -> Option<&'static str> {
    Some(match name {
        "healthy" => include_str!("../scenarios/healthy.yaml"),
        "planned-failover-waiting" => include_str!("../scenarios/planned-failover-waiting.yaml"),
        "hold-standing" => include_str!("../scenarios/hold-standing.yaml"),
        "reclone-draining" => include_str!("../scenarios/reclone-draining.yaml"),
        "reclone-held" => include_str!("../scenarios/reclone-held.yaml"),
        "pitr-divergent" => include_str!("../scenarios/pitr-divergent.yaml"),
        "archive-gap" => include_str!("../scenarios/archive-gap.yaml"),
        _ => return None,
    })
}

/// The scenario's objects as written (times relative to [`SCENARIO_EPOCH`]).
pub fn raw_objects(name: &str) -> Result<Vec<Value>, Error> {
    match name {
        "fleet-1000" => return Ok(fleet(FLEET_SIZE)),
        "fleet-10000" => return Ok(fleet(LARGE_FLEET_SIZE)),
        _ => {}
    }
    let text = file_text(name).ok_or_else(|| Error::UnknownScenario(name.to_owned()))?;
    let mut objects = Vec::new();
    for (index, document) in serde_norway::Deserializer::from_str(text).enumerate() {
        let value = <Value as serde::Deserialize>::deserialize(document).map_err(|error| {
            Error::InvalidYaml {
                scenario: name.to_owned(),
                document: index + 1,
                message: error.to_string(),
            }
        })?;
        if !value.is_null() {
            objects.push(value);
        }
    }
    Ok(objects)
}

/// The scenario's objects with every timestamp moved so that the epoch is `now`.
pub fn objects(name: &str, now: Timestamp) -> Result<Vec<Value>, Error> {
    let epoch: Timestamp = SCENARIO_EPOCH.parse().unwrap_or(now);
    let offset = now.as_second() - epoch.as_second();
    let mut objects = raw_objects(name)?;
    for object in &mut objects {
        shift_times(object, offset);
    }
    Ok(objects)
}

/// Adds `seconds` to every RFC 3339 timestamp string inside `value`.
pub fn shift_times(value: &mut Value, seconds: i64) {
    match value {
        Value::String(text) => {
            if text.len() >= 20
                && text.as_bytes().get(10) == Some(&b'T')
                && let Ok(time) = text.parse::<Timestamp>()
                && let Ok(shifted) = Timestamp::from_second(time.as_second() + seconds)
            {
                *text = shifted.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| shift_times(item, seconds)),
        Value::Object(map) => map.values_mut().for_each(|item| shift_times(item, seconds)),
        _ => {}
    }
}

/// `count` groups over 20 namespaces, in a deterministic mix of states.
pub fn fleet(count: usize) -> Vec<Value> {
    (0..count).map(fleet_group).collect()
}

fn fleet_group(index: usize) -> Value {
    const SITES: [&str; 3] = ["iad", "pdx", "fra"];
    let namespace = format!("team-{:02}", index % 20);
    let name = format!("db-{index:04}");
    let active = SITES[index % 2];
    let mut status_sites = Vec::new();
    for (position, site) in SITES.iter().enumerate() {
        let state = if *site == active {
            "writable"
        } else if index % 37 == 5 && position == 2 {
            "unreachable"
        } else {
            "read-only"
        };
        status_sites.push(json!({
            "name": site,
            "state": state,
            "lastSeen": "2026-04-20T14:39:58Z",
            "gtidExecuted": format!("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-{}", 100_000 + index * 10 - position),
            "replicating": *site != active,
            "secondsBehindSource": if *site == active { 0 } else { (index % 7) as i64 },
        }));
    }
    let ready = if index % 37 == 5 { "False" } else { "True" };
    let mut status = json!({
        "activeSite": active,
        "sites": status_sites,
        "conditions": [{
            "type": "Ready", "status": ready,
            "reason": if ready == "True" { "Healthy" } else { "NoPrimary" },
            "message": if ready == "True" { "every site is reachable" } else { "site fra is unreachable" },
            "lastTransitionTime": "2026-04-19T09:10:44Z",
        }],
        "lastFailover": { "time": format!("2026-04-{:02}T09:10:44Z", 1 + index % 19), "target": active },
        "pitr": {
            "archive": { "archiveID": format!("00000000-0000-4000-8000-{index:012}"), "state": "Verified", "encryptionMode": "None" },
            "oldestArchivedTime": "2026-04-13T03:00:00Z",
            "newestArchivedTime": "2026-04-20T14:39:30Z",
        },
    });
    if index % 50 == 3 {
        status["plannedFailover"] = json!({
            "runID": format!("6f1c2a4e-4b7d-4a1f-9a0e-{index:012}"),
            "phase": "WaitingForLag", "sourceSite": active, "targetSite": SITES[(index + 1) % 2],
            "settings": { "maxLagWait": "5m0s" },
            "startTime": "2026-04-20T14:38:00Z",
            "lagWait": { "startTime": "2026-04-20T14:38:30Z" },
        });
    }
    if index % 125 == 7 {
        status["plannedFailoverHold"] = json!({
            "runID": format!("6f1c2a4e-4b7d-4a1f-9a0e-{index:012}"),
            "reason": "ForeignWritable", "sourceSite": "iad", "targetSite": "pdx",
            "ambiguousSites": ["iad", "pdx"], "holdTime": "2026-04-20T14:32:09Z",
        });
        // The condition that goes with the hold (scenario coherence).
        if let Some(conditions) = status["conditions"].as_array_mut() {
            conditions.push(json!({
                "type": "AutomaticFailoverHeld", "status": "True", "reason": "PlannedFailoverManualRecoveryRequired",
                "message": "planned failover ended ManualRecoveryRequired (ForeignWritable)",
                "lastTransitionTime": "2026-04-20T14:32:09Z",
            }));
        }
    }
    if index % 100 == 11 {
        // The peers of the active site, candidates first.
        let pending: Vec<&str> = SITES.iter().copied().filter(|site| *site != active).collect();
        status["restoreReclones"] = json!({ "phase": "Draining", "pending": pending });
    }
    json!({
        "apiVersion": "shipstream.io/v1alpha1",
        "kind": "MysqlFailoverGroup",
        "metadata": { "name": name, "namespace": namespace, "creationTimestamp": "2026-03-01T09:00:00Z" },
        "spec": {
            "sites": [
                { "name": "iad", "serverID": 1, "role": "PrimaryCandidate" },
                { "name": "pdx", "serverID": 2, "role": "PrimaryCandidate" },
                { "name": "fra", "serverID": 3, "role": "DisasterRecovery" },
            ],
        },
        "status": status,
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod coherence;
