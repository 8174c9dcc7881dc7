//! `bloodraven lab`: an in-memory API server with a scenario loaded, and a kubeconfig for it.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use bloodraven_archive::destination::Destination;
use bloodraven_archive::fixtures::{Fixture, Scenario};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_store::FsStore;
use bloodraven_store::archive::write_fixture;

use crate::scenarios;

/// The CRDs, as generated into `deploy/crds/` (embedded so the binary runs anywhere).
pub const CRDS: [(&str, &str); 3] = [
    (
        "mysqlfailovergroups.shipstream.io.yaml",
        include_str!("../../deploy/crds/mysqlfailovergroups.shipstream.io.yaml"),
    ),
    (
        "mysqlbackups.shipstream.io.yaml",
        include_str!("../../deploy/crds/mysqlbackups.shipstream.io.yaml"),
    ),
    (
        "mysqlbackupverifications.shipstream.io.yaml",
        include_str!("../../deploy/crds/mysqlbackupverifications.shipstream.io.yaml"),
    ),
];

/// A running lab with its kubeconfig in a temporary directory (removed on drop).
pub struct RunningLab {
    pub lab: Lab,
    directory: tempfile::TempDir,
}

impl RunningLab {
    /// Starts a lab on 127.0.0.1 with the CRDs and `scenario` loaded (times shifted to `now`).
    pub async fn start(scenario: &str, now: jiff::Timestamp) -> anyhow::Result<Self> {
        let mut objects = scenarios::objects(scenario, now)?;
        align_with_fixture(&mut objects, &Fixture::build(archive_scenario(scenario)));
        let archived = objects.clone();
        let lab = Lab::start(LabConfig::default()).await.context("starting the lab API server")?;
        for (file, text) in CRDS {
            lab.load_crds(text).with_context(|| format!("loading {file}"))?;
        }
        let namespaces: std::collections::BTreeSet<String> = objects
            .iter()
            .filter_map(|object| object["metadata"]["namespace"].as_str().map(str::to_owned))
            .collect();
        for namespace in namespaces {
            let object = serde_json::json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": { "name": namespace },
            });
            lab.apply(object).with_context(|| format!("creating namespace {namespace}"))?;
        }
        for object in objects {
            let what = format!(
                "{} {}",
                object["kind"].as_str().unwrap_or("?"),
                object["metadata"]["name"].as_str().unwrap_or("?")
            );
            lab.apply(object).with_context(|| format!("loading {what} of scenario {scenario}"))?;
        }
        let directory = tempfile::Builder::new()
            .prefix("bloodraven-lab-")
            .tempdir()
            .context("creating the kubeconfig directory")?;
        lab.write_kubeconfig(&directory.path().join("kubeconfig"), None)
            .context("writing the kubeconfig")?;
        lay_archives(scenario, &archived, directory.path()).await?;
        Ok(Self { lab, directory })
    }

    /// The kubeconfig file.
    pub fn kubeconfig(&self) -> PathBuf {
        self.directory.path().join("kubeconfig")
    }

    /// The temporary directory.
    pub fn directory(&self) -> &Path {
        self.directory.path()
    }

    /// Stops the server (the directory goes when `self` drops).
    pub async fn stop(self) -> anyhow::Result<()> {
        self.lab.stop().await.context("stopping the lab API server")
    }
}

/// The fixture archive a scenario's PITR groups carry.
pub fn archive_scenario(scenario: &str) -> Scenario {
    match scenario {
        "archive-gap" => Scenario::ArchiveGap,
        "pitr-divergent" => Scenario::LossyFailoverFork,
        _ => Scenario::HealthyPlannedFailover,
    }
}

/// The RFC 3339 form scenario files use.
fn rfc3339(time: jiff::Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Makes `objects` describe the archive [`lay_archives`] writes from `fixture`: every group with
/// a PVC archive gets the descriptor's archive ID and encryption mode and the normalized
/// destination in `status.pitr.archive`, and its `MysqlBackup`s (oldest first) take the
/// fixture's named backups (oldest first; the newest repeats when the scenario has more):
/// `gtidExecuted`, `completionTime` (the dump's end, `startTime` keeping the scenario's
/// duration) and `pitrArchiveID`; `status.pitr`'s oldest and newest archived times become the
/// archived files' first and last event times. Objects of groups without a PVC archive are left alone.
pub fn align_with_fixture(objects: &mut [serde_json::Value], fixture: &Fixture) {
    let Some(descriptor) = &fixture.descriptor else { return };
    let mut points: Vec<_> = fixture.backups.values().collect();
    points.sort_by_key(|point| point.dump_end);
    let archived: Vec<_> = fixture
        .manifests
        .values()
        .flat_map(|manifest| &manifest.files)
        .filter(|row| !row.quarantined)
        .collect();
    let mut groups = Vec::new();
    for object in objects.iter().filter(|object| object["kind"] == "MysqlFailoverGroup") {
        let Ok(group) = serde_json::from_value::<MysqlFailoverGroup>(object.clone()) else {
            continue;
        };
        let Ok(crate::archive::ArchiveLocation::Pvc { namespace, claim, sub_path }) =
            crate::archive::locate(&group)
        else {
            continue;
        };
        let destination = Destination::Pvc { namespace: namespace.clone(), claim, sub_path };
        let Ok(normalized) = destination.normalize() else { continue };
        groups.push((namespace, group.metadata.name.unwrap_or_default(), normalized));
    }
    for (namespace, name, destination) in groups {
        let in_group = |object: &serde_json::Value| {
            object["metadata"]["namespace"] == namespace.as_str()
                && object["metadata"]["name"] == name.as_str()
        };
        if let Some(group) = objects
            .iter_mut()
            .find(|object| object["kind"] == "MysqlFailoverGroup" && in_group(object))
            && let Some(archive) = group["status"]["pitr"]["archive"].as_object_mut()
        {
            archive.insert("archiveID".into(), descriptor.archive_id.as_str().into());
            archive.insert("destination".into(), destination.as_str().into());
            archive.insert("encryptionMode".into(), descriptor.encryption.mode.to_string().into());
            let pitr = &mut group["status"]["pitr"];
            if let Some(oldest) = archived.iter().filter_map(|row| row.first_event_time).min() {
                pitr["oldestArchivedTime"] = rfc3339(oldest).into();
            }
            if let Some(newest) = archived.iter().filter_map(|row| row.last_event_time).max() {
                pitr["newestArchivedTime"] = rfc3339(newest).into();
            }
        }
        let mut backups: Vec<&mut serde_json::Value> = objects
            .iter_mut()
            .filter(|object| {
                object["kind"] == "MysqlBackup"
                    && object["metadata"]["namespace"] == namespace.as_str()
                    && object["spec"]["failoverGroupRef"]["name"] == name.as_str()
            })
            .collect();
        backups.sort_by(|a, b| {
            let completed =
                |o: &serde_json::Value| o["status"]["completionTime"].as_str().map(str::to_owned);
            completed(a).cmp(&completed(b))
        });
        for (index, backup) in backups.into_iter().enumerate() {
            let Some(point) = points.get(index).or(points.last()) else { break };
            let Some(status) = backup["status"].as_object_mut() else { continue };
            let time = |key: &str| {
                status.get(key).and_then(serde_json::Value::as_str)?.parse::<jiff::Timestamp>().ok()
            };
            let took = time("startTime")
                .zip(time("completionTime"))
                .and_then(|(start, end)| end.since(start).ok());
            if let Some(start) = took.and_then(|took| point.dump_end.checked_sub(took).ok()) {
                status.insert("startTime".into(), rfc3339(start).into());
            }
            status.insert("completionTime".into(), rfc3339(point.dump_end).into());
            status.insert("gtidExecuted".into(), point.gtid_executed.to_string().into());
            status.insert("pitrArchiveID".into(), descriptor.archive_id.as_str().into());
        }
    }
}

/// Lays a real archive (`bloodraven-archive`'s fixture, written through the store as a writer
/// leaves it) for every group among `objects` with PITR enabled, at its PVC layout under `root`
/// (`<root>/<namespace>/<claim>/<subPath>/binlogs`, as `--archive-root` reads it).
pub async fn lay_archives(
    scenario: &str,
    objects: &[serde_json::Value],
    root: &Path,
) -> anyhow::Result<()> {
    let mut fixture = None;
    for object in objects.iter().filter(|object| object["kind"] == "MysqlFailoverGroup") {
        let Ok(group) = serde_json::from_value::<MysqlFailoverGroup>(object.clone()) else {
            continue;
        };
        let Ok(location) = crate::archive::locate(&group) else { continue };
        let Ok((directory, archive_root)) = crate::archive::pvc_store(root, &location) else {
            continue;
        };
        std::fs::create_dir_all(&directory)
            .with_context(|| format!("creating {}", directory.display()))?;
        let store = FsStore::new(&directory)
            .with_context(|| format!("opening the store at {}", directory.display()))?;
        let fixture = fixture.get_or_insert_with(|| Fixture::build(archive_scenario(scenario)));
        write_fixture(&store, &archive_root, fixture)
            .await
            .with_context(|| format!("writing the archive of {location}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned(scenario: &str) -> (Vec<serde_json::Value>, Fixture) {
        let now: jiff::Timestamp = "2026-11-29T20:00:00Z".parse().unwrap();
        let mut objects = scenarios::objects(scenario, now).unwrap();
        let fixture = Fixture::build(archive_scenario(scenario));
        align_with_fixture(&mut objects, &fixture);
        (objects, fixture)
    }

    #[test]
    fn scenario_status_describes_the_archive_the_lab_writes() {
        for scenario in ["healthy", "archive-gap", "pitr-divergent"] {
            let (objects, fixture) = aligned(scenario);
            let descriptor = fixture.descriptor.as_ref().unwrap();
            let archive_id = descriptor.archive_id.as_str();
            assert!(archive_id.starts_with("ar1-"), "{archive_id}");
            let fixture_sets: Vec<String> =
                fixture.backups.values().map(|point| point.gtid_executed.to_string()).collect();
            let groups: Vec<_> =
                objects.iter().filter(|object| object["kind"] == "MysqlFailoverGroup").collect();
            assert!(!groups.is_empty(), "{scenario}");
            for group in groups {
                let archive = &group["status"]["pitr"]["archive"];
                assert_eq!(archive["archiveID"], archive_id, "{scenario}");
                assert_eq!(archive["encryptionMode"], "None", "{scenario}");
                let pitr = &group["status"]["pitr"];
                let first = fixture
                    .manifests
                    .values()
                    .flat_map(|m| &m.files)
                    .filter(|row| !row.quarantined);
                let oldest = first.filter_map(|row| row.first_event_time).min().unwrap();
                assert_eq!(pitr["oldestArchivedTime"], rfc3339(oldest), "{scenario}");
                let destination = archive["destination"].as_str().unwrap();
                let namespace = group["metadata"]["namespace"].as_str().unwrap();
                assert!(
                    destination.starts_with(&format!("pvc://{namespace}/"))
                        && destination.ends_with("/binlogs"),
                    "{scenario}: {destination}"
                );
            }
            let backups: Vec<_> =
                objects.iter().filter(|object| object["kind"] == "MysqlBackup").collect();
            assert!(!backups.is_empty(), "{scenario}");
            for backup in backups {
                let status = &backup["status"];
                let executed = status["gtidExecuted"].as_str().unwrap();
                assert!(fixture_sets.iter().any(|set| set == executed), "{scenario}: {executed}");
                assert_eq!(status["pitrArchiveID"], archive_id, "{scenario}");
                let completed: jiff::Timestamp =
                    status["completionTime"].as_str().unwrap().parse().unwrap();
                assert!(fixture.backups.values().any(|point| point.dump_end == completed));
                let started: jiff::Timestamp =
                    status["startTime"].as_str().unwrap().parse().unwrap();
                assert!(started < completed, "{scenario}");
            }
        }
    }

    #[test]
    fn the_divergent_scenario_backup_is_the_one_before_the_failover() {
        let (objects, fixture) = aligned("pitr-divergent");
        let before = &fixture.backups["b-before-failover"];
        let backup = objects.iter().find(|object| object["kind"] == "MysqlBackup").unwrap();
        assert_eq!(backup["status"]["gtidExecuted"], before.gtid_executed.to_string());
    }

    #[test]
    fn the_patched_objects_still_match_the_crd_types() {
        for scenario in ["healthy", "archive-gap", "pitr-divergent"] {
            for object in aligned(scenario).0 {
                match object["kind"].as_str().unwrap() {
                    "MysqlFailoverGroup" => {
                        serde_json::from_value::<MysqlFailoverGroup>(object).unwrap();
                    }
                    "MysqlBackup" => {
                        serde_json::from_value::<bloodraven_crd::MysqlBackup>(object).unwrap();
                    }
                    _ => {}
                }
            }
        }
    }
}
