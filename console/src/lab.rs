//! `bloodraven lab`: an in-memory API server with a scenario loaded, and a kubeconfig for it.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use bloodraven_archive::descriptor::SourceRef;
use bloodraven_archive::destination::{Destination, NormalizedDestination};
use bloodraven_archive::fixtures::{Fixture, FixtureOptions, Scenario};
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
        // The archives derive their ID from each group's UID, which the API server assigns:
        // create the groups first, then describe the archives in the objects loaded next.
        for object in objects.iter_mut().filter(|object| object["kind"] == "MysqlFailoverGroup") {
            let name = object["metadata"]["name"].as_str().unwrap_or("?").to_owned();
            let created = lab.apply(object.clone()).with_context(|| {
                format!("loading MysqlFailoverGroup {name} of scenario {scenario}")
            })?;
            object["metadata"]["uid"] = created["metadata"]["uid"].clone();
        }
        align_with_fixture(&mut objects, scenario, now);
        let archived = objects.clone();
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
        lay_archives(scenario, &archived, directory.path(), now).await?;
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

/// How long before "now" the fixture archive's last moment falls.
const ARCHIVE_LEAD: jiff::SignedDuration = jiff::SignedDuration::from_secs(60);

/// The fixture archive of one group.
pub struct GroupArchive {
    /// The group's namespace.
    pub namespace: String,
    /// The group's name.
    pub name: String,
    /// The group's PVC destination, normalized.
    pub destination: NormalizedDestination,
    /// The archive, built for this group.
    pub fixture: Fixture,
}

/// The fixture archive `group` carries at `now`, or none when it has no PVC archive or no UID:
/// [`archive_scenario`]'s fixture built for the group's namespace, name and UID, its PVC
/// destination, its sites' names in the order the spec lists them (the fixture's `a`, `b`, `c`),
/// and a clock that puts the archive's last moment [`ARCHIVE_LEAD`] before `now`.
pub fn group_archive(
    scenario: &str,
    group: &MysqlFailoverGroup,
    now: jiff::Timestamp,
) -> Option<GroupArchive> {
    let uid = group.metadata.uid.clone().filter(|uid| !uid.is_empty())?;
    let crate::archive::ArchiveLocation::Pvc { namespace, claim, sub_path } =
        crate::archive::locate(group).ok()?
    else {
        return None;
    };
    let name = group.metadata.name.clone().unwrap_or_default();
    let destination = Destination::Pvc { namespace: namespace.clone(), claim, sub_path };
    let normalized = destination.normalize().ok()?;
    let defaults = FixtureOptions::default();
    let mut site_names = defaults.site_names.clone();
    for (slot, site) in site_names.iter_mut().zip(&group.spec.sites) {
        slot.clone_from(&site.name);
    }
    let scenario = archive_scenario(scenario);
    let probe = Fixture::build(scenario);
    let span = probe
        .latest()
        .map_or(jiff::SignedDuration::ZERO, |latest| latest.duration_since(defaults.base_time));
    let base_time = now
        .checked_sub(ARCHIVE_LEAD)
        .and_then(|end| end.checked_sub(span))
        .unwrap_or(defaults.base_time);
    let options = FixtureOptions {
        base_time,
        group: SourceRef { namespace: namespace.clone(), name: name.clone(), uid },
        destination,
        site_names,
    };
    let fixture = Fixture::build_with(scenario, &options);
    Some(GroupArchive { namespace, name, destination: normalized, fixture })
}

/// Makes `objects` describe the archives [`lay_archives`] writes: every group with a PVC
/// archive and a UID gets its [`group_archive`]'s archive ID and encryption mode and the
/// normalized destination in `status.pitr.archive`, and its `MysqlBackup`s (oldest first) take
/// the fixture's named backups (oldest first; the newest repeats when the scenario has more):
/// `gtidExecuted`, `completionTime` (the dump's end, `startTime` keeping the scenario's
/// duration) and `pitrArchiveID`; `status.pitr`'s oldest and newest archived times become the
/// archived files' first and last event times. Objects of other groups are left alone.
pub fn align_with_fixture(objects: &mut [serde_json::Value], scenario: &str, now: jiff::Timestamp) {
    let archives: Vec<GroupArchive> = objects
        .iter()
        .filter(|object| object["kind"] == "MysqlFailoverGroup")
        .filter_map(|object| serde_json::from_value::<MysqlFailoverGroup>(object.clone()).ok())
        .filter_map(|group| group_archive(scenario, &group, now))
        .collect();
    for archive in &archives {
        align_group(objects, archive);
    }
}

/// [`align_with_fixture`] for one group.
fn align_group(objects: &mut [serde_json::Value], archive: &GroupArchive) {
    let GroupArchive { namespace, name, destination, fixture } = archive;
    let Some(descriptor) = &fixture.descriptor else { return };
    let mut points: Vec<_> = fixture.backups.values().collect();
    points.sort_by_key(|point| point.dump_end);
    let archived: Vec<_> = fixture
        .manifests
        .values()
        .flat_map(|manifest| &manifest.files)
        .filter(|row| !row.quarantined)
        .collect();
    let in_group = |object: &serde_json::Value| {
        object["metadata"]["namespace"] == namespace.as_str()
            && object["metadata"]["name"] == name.as_str()
    };
    if let Some(group) =
        objects.iter_mut().find(|object| object["kind"] == "MysqlFailoverGroup" && in_group(object))
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
        name_the_archived_fork(group, destination.as_str(), fixture);
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

/// A divergent-history refusal in `status.restore.message` names the archive's real fork: the
/// scenario's set, its site and its first and last commit times are replaced by the first fork
/// the archive panel reads from the laid fixture, so the restore and archive panels show one
/// divergent set from one source.
fn name_the_archived_fork(group: &mut serde_json::Value, location: &str, fixture: &Fixture) {
    const SCENARIO_SET: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562:96-100";
    const SCENARIO_FIRST: &str = "2026-04-20T10:02:11Z";
    const SCENARIO_LAST: &str = "2026-04-20T10:02:15Z";
    let restore = &mut group["status"]["restore"];
    if restore["reason"] != "PITRArchiveDivergentHistory" {
        return;
    }
    let Some(descriptor) = fixture.descriptor.clone() else { return };
    let archive = bloodraven_archive::OpenArchive {
        descriptor,
        manifests: fixture.manifests.clone(),
        content_id_key: bloodraven_archive::ContentIdKey::Plain,
    };
    let summary = crate::archive::summarize(location, &archive, &[]);
    let Some(fork) = summary.forks.first() else { return };
    let Some(message) = restore["message"].as_str() else { return };
    let mut message = message
        .replace(SCENARIO_SET, &fork.gtids)
        .replace("(sites iad,", &format!("(sites {},", fork.site));
    if let Some(first) = fork.start {
        message = message.replace(SCENARIO_FIRST, &rfc3339(first));
    }
    if let Some(last) = fork.end {
        message = message.replace(SCENARIO_LAST, &rfc3339(last));
    }
    restore["message"] = message.into();
}

/// Lays a real archive (`bloodraven-archive`'s fixture, written through the store as a writer
/// leaves it) for every group among `objects` that has a [`group_archive`], at its PVC layout
/// under `root` (`<root>/<namespace>/<claim>/<subPath>/binlogs`, as `--archive-root` reads it).
pub async fn lay_archives(
    scenario: &str,
    objects: &[serde_json::Value],
    root: &Path,
    now: jiff::Timestamp,
) -> anyhow::Result<()> {
    for object in objects.iter().filter(|object| object["kind"] == "MysqlFailoverGroup") {
        let Ok(group) = serde_json::from_value::<MysqlFailoverGroup>(object.clone()) else {
            continue;
        };
        let Some(archive) = group_archive(scenario, &group, now) else { continue };
        let Ok(location) = crate::archive::locate(&group) else { continue };
        let Ok((directory, archive_root)) = crate::archive::pvc_store(root, &location) else {
            continue;
        };
        std::fs::create_dir_all(&directory)
            .with_context(|| format!("creating {}", directory.display()))?;
        let store = FsStore::new(&directory)
            .with_context(|| format!("opening the store at {}", directory.display()))?;
        write_fixture(&store, &archive_root, &archive.fixture)
            .await
            .with_context(|| format!("writing the archive of {location}"))?;
    }
    Ok(())
}

/// Gives every group among `objects` a fixed UID, as the API server would assign one.
#[cfg(test)]
pub(crate) fn assign_uids(objects: &mut [serde_json::Value]) {
    let groups = objects.iter_mut().filter(|object| object["kind"] == "MysqlFailoverGroup");
    for (index, group) in groups.enumerate() {
        group["metadata"]["uid"] = format!("{:08x}-0000-4000-8000-00000000000a", index + 1).into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> jiff::Timestamp {
        "2026-11-29T20:00:00Z".parse().unwrap()
    }

    fn aligned(scenario: &str) -> (Vec<serde_json::Value>, Vec<GroupArchive>) {
        let mut objects = scenarios::objects(scenario, now()).unwrap();
        assign_uids(&mut objects);
        align_with_fixture(&mut objects, scenario, now());
        let archives = objects
            .iter()
            .filter(|object| object["kind"] == "MysqlFailoverGroup")
            .map(|object| serde_json::from_value::<MysqlFailoverGroup>(object.clone()).unwrap())
            .filter_map(|group| group_archive(scenario, &group, now()))
            .collect();
        (objects, archives)
    }

    #[test]
    fn scenario_status_describes_the_archive_the_lab_writes() {
        for scenario in ["healthy", "archive-gap", "pitr-divergent"] {
            let (objects, archives) = aligned(scenario);
            assert!(!archives.is_empty(), "{scenario}");
            for archive in archives {
                let fixture = &archive.fixture;
                let descriptor = fixture.descriptor.as_ref().unwrap();
                let archive_id = descriptor.archive_id.as_str();
                let group = objects
                    .iter()
                    .find(|object| {
                        object["kind"] == "MysqlFailoverGroup"
                            && object["metadata"]["namespace"] == archive.namespace.as_str()
                            && object["metadata"]["name"] == archive.name.as_str()
                    })
                    .unwrap();
                let typed: MysqlFailoverGroup = serde_json::from_value(group.clone()).unwrap();
                let uid = group["metadata"]["uid"].as_str().unwrap();
                let status = &group["status"]["pitr"]["archive"];
                let destination = status["destination"].as_str().unwrap();
                let namespace = archive.namespace.as_str();
                assert!(
                    destination.starts_with(&format!("pvc://{namespace}/"))
                        && destination.ends_with("/binlogs"),
                    "{scenario}: {destination}"
                );
                // The ID the group's own UID and PVC destination derive, as a writer would.
                let Ok(crate::archive::ArchiveLocation::Pvc { namespace: pvc, claim, sub_path }) =
                    crate::archive::locate(&typed)
                else {
                    panic!("{scenario}: not a PVC archive")
                };
                let pvc = Destination::Pvc { namespace: pvc, claim, sub_path }.normalize().unwrap();
                assert_eq!(destination, pvc.as_str(), "{scenario}");
                let own = bloodraven_archive::descriptor::ArchiveId::derive(uid, &pvc);
                assert_eq!(archive_id, own.as_str(), "{scenario}");
                assert_eq!(status["archiveID"], archive_id, "{scenario}");
                assert_eq!(status["encryptionMode"], "None", "{scenario}");
                assert_eq!(descriptor.source.uid, uid, "{scenario}");
                assert_eq!(descriptor.source.name, archive.name, "{scenario}");
                let site_names: Vec<&str> =
                    typed.spec.sites.iter().map(|site| site.name.as_str()).collect();
                for (site, manifest) in &fixture.manifests {
                    assert!(site_names.contains(&site.as_str()), "{scenario}: {site}");
                    assert_eq!(&manifest.site, site, "{scenario}");
                }
                let pitr = &group["status"]["pitr"];
                let rows = || {
                    fixture.manifests.values().flat_map(|m| &m.files).filter(|row| !row.quarantined)
                };
                let oldest = rows().filter_map(|row| row.first_event_time).min().unwrap();
                assert_eq!(pitr["oldestArchivedTime"], rfc3339(oldest), "{scenario}");
                let newest = rows().filter_map(|row| row.last_event_time).max().unwrap();
                assert_eq!(pitr["newestArchivedTime"], rfc3339(newest), "{scenario}");
                // The archive ends a little before now.
                let latest = fixture.latest().unwrap();
                assert_eq!(latest, now().checked_sub(ARCHIVE_LEAD).unwrap(), "{scenario}");
                assert!(newest <= latest && latest < now(), "{scenario}");
                let fixture_sets: Vec<String> =
                    fixture.backups.values().map(|point| point.gtid_executed.to_string()).collect();
                let backups: Vec<_> = objects
                    .iter()
                    .filter(|object| {
                        object["kind"] == "MysqlBackup"
                            && object["metadata"]["namespace"] == namespace
                            && object["spec"]["failoverGroupRef"]["name"] == archive.name.as_str()
                    })
                    .collect();
                assert!(!backups.is_empty(), "{scenario}");
                for backup in backups {
                    let status = &backup["status"];
                    let executed = status["gtidExecuted"].as_str().unwrap();
                    assert!(
                        fixture_sets.iter().any(|set| set == executed),
                        "{scenario}: {executed}"
                    );
                    assert_eq!(status["pitrArchiveID"], archive_id, "{scenario}");
                    let completed: jiff::Timestamp =
                        status["completionTime"].as_str().unwrap().parse().unwrap();
                    assert!(fixture.backups.values().any(|point| point.dump_end == completed));
                    assert!(completed < now(), "{scenario}");
                    let started: jiff::Timestamp =
                        status["startTime"].as_str().unwrap().parse().unwrap();
                    assert!(started < completed, "{scenario}");
                }
            }
        }
    }

    #[test]
    fn the_fixture_sites_take_the_spec_sites_names_in_order() {
        let (_, archives) = aligned("pitr-divergent");
        let fixture = &archives[0].fixture;
        // The fixture's a and b are the spec's first two sites.
        let sites: Vec<&str> = fixture.manifests.keys().map(String::as_str).collect();
        assert_eq!(sites, ["iad", "pdx"]);
        assert_eq!(fixture.descriptor.as_ref().unwrap().created_by, "iad");
    }

    #[test]
    fn a_group_without_a_uid_is_left_alone() {
        let mut objects = scenarios::objects("pitr-divergent", now()).unwrap();
        let before = objects.clone();
        align_with_fixture(&mut objects, "pitr-divergent", now());
        assert_eq!(objects, before);
    }

    #[test]
    fn the_divergent_scenario_backup_is_the_one_before_the_failover() {
        let (objects, archives) = aligned("pitr-divergent");
        let before = &archives[0].fixture.backups["b-before-failover"];
        let backup = objects.iter().find(|object| object["kind"] == "MysqlBackup").unwrap();
        assert_eq!(backup["status"]["gtidExecuted"], before.gtid_executed.to_string());
    }

    /// The restore panel (status.restore.message) and the archive panel (the laid archive's
    /// forks) show one divergent set: the archive's.
    #[test]
    fn the_divergent_restore_message_names_the_archived_fork() {
        let (objects, archives) = aligned("pitr-divergent");
        let fixture = &archives[0].fixture;
        let archive = bloodraven_archive::OpenArchive {
            descriptor: fixture.descriptor.clone().unwrap(),
            manifests: fixture.manifests.clone(),
            content_id_key: bloodraven_archive::ContentIdKey::Plain,
        };
        let summary = crate::archive::summarize(archives[0].destination.as_str(), &archive, &[]);
        let fork = &summary.forks[0];
        let group = objects.iter().find(|o| o["kind"] == "MysqlFailoverGroup").unwrap();
        let message = group["status"]["restore"]["message"].as_str().unwrap();
        assert!(message.contains(&format!(": {} (sites {},", fork.gtids, fork.site)), "{message}");
        assert!(!message.contains("3e11fa47-71ca-11e1-9e33-c80aa9429562:96-100"), "{message}");
        assert!(message.contains(&rfc3339(fork.start.unwrap())), "{message}");
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
