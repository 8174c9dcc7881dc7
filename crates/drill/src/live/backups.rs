//! Backups and in-place restores in the live lab ([`super::LiveOptions::jobs`]): a claim
//! standing in for a PVC backup store, a backup by the operator's MysqlBackup controller and
//! its Job, and the in-place restore of a backup damaged so that its Job fails after its DROP,
//! which is how the operator comes to hold the post-restore reclone queue (spec 000, "Peer
//! reclones after a full-instance restore").

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bloodraven_crd::backup::{BackupPhase, MysqlBackupStatus};
use bloodraven_crd::group::{
    RestoreInPlacePhase, RestoreInPlaceStatus, RestoreReclones, RestoreReclonesPhase,
};
use bloodraven_crd::{MysqlFailoverGroup, MysqlFailoverGroupStatus};
use bloodraven_kubelet::JobConfig;
use bloodraven_kubelet::claims::claim_folder;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::{LiveError, LiveLab};

/// How often a wait here reads the API server.
const POLL: Duration = Duration::from_millis(500);

/// The MySQL client tools a backup or restore Job runs, by the variable that names each.
const JOB_TOOLS: [&str; 2] = ["BLOODRAVEN_MYSQL", "BLOODRAVEN_MYSQLDUMP"];

/// Jobs run as processes of the sidecar `binary`, their attempts kept below `root`.
pub(super) fn job_config(root: PathBuf, binary: &Path) -> Result<JobConfig, LiveError> {
    let mut jobs = JobConfig::new(root).executable("bloodraven-sidecar", binary);
    for var in JOB_TOOLS {
        let value = std::env::var(var).map_err(|_| {
            LiveError::Other(format!(
                "{var} is unset: the lab's backup and restore Jobs need it; run `source \
                 scripts/provision.sh` first"
            ))
        })?;
        jobs = jobs.env(var, value);
    }
    Ok(jobs)
}

/// How a backup Job writes its chunks: every file of the artifact folder whose name does not
/// start with `@` (those are the manifest and the markers).
fn is_chunk(path: &Path) -> bool {
    path.is_file() && path.file_name().is_some_and(|name| !name.to_string_lossy().starts_with('@'))
}

/// Damages one chunk of the backup artifact in `artifact` in place: its first 64 bytes
/// inverted, its size unchanged, so the restore's artifact check passes and its load fails on
/// the chunk's SHA-256, after its DROP. Returns the chunk.
pub fn damage_a_chunk(artifact: &Path) -> Result<PathBuf, LiveError> {
    let io = |what: String| move |source| LiveError::Io { what, source };
    let listing = std::fs::read_dir(artifact)
        .map_err(io(format!("listing the backup artifact {}", artifact.display())))?;
    let chunk = listing
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| is_chunk(path))
        .ok_or_else(|| {
            LiveError::Other(format!(
                "the backup artifact {} holds no chunk file: did the backup succeed?",
                artifact.display()
            ))
        })?;
    let mut bytes = std::fs::read(&chunk).map_err(io(format!("reading {}", chunk.display())))?;
    bytes.iter_mut().take(64).for_each(|byte| *byte ^= 0xff);
    std::fs::write(&chunk, bytes).map_err(io(format!("writing {}", chunk.display())))?;
    Ok(chunk)
}

/// What a failed in-place restore left: the run and the Held queue.
#[derive(Clone, Debug)]
pub struct HeldByRestore {
    /// `status.restoreInPlace` (phase Failed).
    pub run: RestoreInPlaceStatus,
    /// `status.restoreReclones` (phase Held, every peer pending).
    pub queue: RestoreReclones,
}

impl LiveLab {
    /// Creates PersistentVolumeClaim `name` (1Gi) in the group's namespace and returns the
    /// folder that stands in for it (the same one the lab kubelet mounts into Jobs).
    pub fn claim(&self, name: &str) -> Result<PathBuf, LiveError> {
        let claim = self.lab().apply(json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": { "name": name, "namespace": self.namespace },
            "spec": { "accessModes": ["ReadWriteOnce"],
                      "resources": { "requests": { "storage": "1Gi" } } },
        }))?;
        let uid = claim["metadata"]["uid"].as_str().ok_or_else(|| {
            LiveError::Other(format!("the lab gave PersistentVolumeClaim {name} no uid"))
        })?;
        let folder = claim_folder(&self.dir.path().join("claims"), &self.namespace, name, uid);
        std::fs::create_dir_all(&folder).map_err(|source| LiveError::Io {
            what: format!("creating claim {name}'s folder {}", folder.display()),
            source,
        })?;
        Ok(folder)
    }

    fn groups(&self) -> Api<MysqlFailoverGroup> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Merge-patches the group's spec with `spec`.
    async fn patch_spec(&self, what: &str, spec: Value) -> Result<(), LiveError> {
        let body = json!({ "spec": spec });
        self.groups()
            .patch(&self.group, &PatchParams::default(), &Patch::Merge(body))
            .await
            .map(drop)
            .map_err(|source| LiveError::Kube { what: what.to_owned(), source })
    }

    /// Sets the group's backup profiles to one, `profile`, storing into claim `claim` (see
    /// [`LiveLab::claim`]).
    pub async fn pvc_backup_profile(&self, profile: &str, claim: &str) -> Result<(), LiveError> {
        let spec = json!({ "backup": { "profiles": [
            { "name": profile, "storage": { "type": "PVC", "pvc": { "claimName": claim } } },
        ]}});
        self.patch_spec(&format!("adding backup profile {profile} to the group"), spec).await
    }

    /// Creates MysqlBackup `name` of `profile` and waits, at most `timeout`, for the operator's
    /// controller and its Job to succeed. Fails when the backup fails or the wait gives up,
    /// with the last status seen.
    pub async fn backup(
        &self,
        name: &str,
        profile: &str,
        timeout: Duration,
    ) -> Result<MysqlBackupStatus, LiveError> {
        self.lab().apply(json!({
            "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
            "metadata": { "name": name, "namespace": self.namespace },
            "spec": { "failoverGroupRef": { "name": self.group }, "profileName": profile },
        }))?;
        let status = self
            .poll(&format!("MysqlBackup {name} to end"), timeout, || {
                let object = self.lab().get(
                    "shipstream.io/v1alpha1",
                    "MysqlBackup",
                    Some(&self.namespace),
                    name,
                );
                let status = object.as_ref().map(|o| &o["status"]);
                let parsed = status
                    .and_then(|s| serde_json::from_value::<MysqlBackupStatus>(s.clone()).ok());
                match parsed {
                    Some(parsed)
                        if matches!(
                            parsed.phase,
                            Some(BackupPhase::Succeeded | BackupPhase::Failed)
                        ) =>
                    {
                        Ok(parsed)
                    }
                    _ => Err(format!("its status: {}", status.cloned().unwrap_or_default())),
                }
            })
            .await?;
        if status.phase == Some(BackupPhase::Failed) {
            return Err(LiveError::Other(format!(
                "MysqlBackup {name} failed (see its Job's log in the lab's jobs folder): \
                 {status:?}"
            )));
        }
        Ok(status)
    }

    /// Requests the in-place restore of backup `backup` (`spec.restoreInPlace`), confirmed by
    /// `confirm` (a timestamp no earlier run used).
    pub async fn restore_in_place(&self, backup: &str, confirm: &str) -> Result<(), LiveError> {
        let spec = json!({ "restoreInPlace": {
            "confirm": confirm,
            "source": { "backupRef": { "name": backup } },
        }});
        self.patch_spec(&format!("requesting the in-place restore of {backup}"), spec).await
    }

    /// The Held queue a failed in-place restore leaves, made by the operator: a backup of the
    /// primary (claim and profile `backups`, MysqlBackup `name`), one of its chunks damaged in
    /// place ([`damage_a_chunk`]), and its in-place restore, whose Job fails after its DROP.
    /// Waits at most `timeout` for each of the backup and the Held queue; a restore that
    /// succeeds (the damage went unnoticed) is an error.
    pub async fn hold_queue_by_failed_restore(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<HeldByRestore, LiveError> {
        let folder = self.claim("backups")?;
        self.pvc_backup_profile("backups", "backups").await?;
        self.backup(name, "backups", timeout).await?;
        damage_a_chunk(&folder.join(name))?;
        self.restore_in_place(name, "2030-01-01T00:00:00Z").await?;
        let status = self
            .poll("the in-place restore to fail and hold the reclone queue", timeout, || {
                let last = self.group_object().map(|o| o["status"].clone()).unwrap_or_default();
                let status: Option<MysqlFailoverGroupStatus> =
                    serde_json::from_value(last.clone()).ok();
                let run = status.as_ref().and_then(|s| s.restore_in_place.as_ref());
                let phase = run.and_then(|run| run.phase.clone());
                let held = status
                    .as_ref()
                    .and_then(|s| s.restore_reclones.as_ref())
                    .and_then(|queue| queue.phase.clone())
                    == Some(RestoreReclonesPhase::Held);
                match (status, phase) {
                    (Some(status), Some(RestoreInPlacePhase::Succeeded)) => Ok(status),
                    (Some(status), Some(RestoreInPlacePhase::Failed)) if held => Ok(status),
                    _ => Err(format!("the group's status: {last}")),
                }
            })
            .await?;
        match (status.restore_in_place, status.restore_reclones) {
            (Some(run), Some(queue)) if run.phase == Some(RestoreInPlacePhase::Failed) => {
                Ok(HeldByRestore { run, queue })
            }
            (run, _) => Err(LiveError::Other(format!(
                "the in-place restore of the damaged backup {name} did not fail: {run:?}"
            ))),
        }
    }

    /// Calls `check` every [`POLL`] until it yields a value or `timeout` passed; then fails
    /// naming `what` and what `check` last saw.
    async fn poll<T>(
        &self,
        what: &str,
        timeout: Duration,
        check: impl Fn() -> Result<T, String>,
    ) -> Result<T, LiveError> {
        let started = Instant::now();
        loop {
            let last = match check() {
                Ok(value) => return Ok(value),
                Err(last) => last,
            };
            if started.elapsed() >= timeout {
                return Err(LiveError::Other(format!(
                    "waited {} s for {what}; last saw {last}",
                    timeout.as_secs()
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
