//! `bloodraven lab`: an in-memory API server with a scenario loaded, and a kubeconfig for it.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
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
        let objects = scenarios::objects(scenario, now)?;
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
