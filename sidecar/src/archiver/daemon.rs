//! The archiver as a sidecar task: settings from the environment the operator renders, the
//! store built with its checks, the role sampler, and the scan loop publishing
//! `/archiver/status`.
//!
//! Scans run when the binlog index changes (checked every `scan_floor`, 1 s by default: a
//! cheap `stat`, standing in for the spec's inotify) and at least every `archivePollInterval`
//! (default 60 s). A store that cannot be built is reported (`storeReady: false`, `lastError:
//! archive store init: <cause>`, `uploadFailures` + 1) and retried every poll interval.

use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use bloodraven_archive::descriptor::SourceRef;
use bloodraven_archive::reader::ReaderKey;
use bloodraven_archive::{ArchiveId, Destination, NormalizedDestination};
use bloodraven_store::{
    ArchiveRoot, FsStore, MountInfoSource, S3Config, S3Credentials, S3Store, Store, check_pvc_store,
};
use bloodraven_workloads::sidecar_env as env;
use jiff::Timestamp;
use tokio::sync::watch;

use super::local::LocalBinlogs;
use super::mysql::{MysqlServer, Server as _};
use super::retention::OperatorCutoff;
use super::run::{Archiver, ArchiverConfig, run_sampler};
use super::session::WriterIdentity;
use super::status::ArchiverStatus;

/// Where the PVC archive volume is mounted in the sidecar container.
pub const PVC_MOUNT_PATH: &str = env::PVC_MOUNT_PATH;

/// Why the archiver's settings are unusable (the sidecar refuses to start the archiver).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// A variable is missing.
    #[error("{0} is not set; the operator renders it when PITR is enabled")]
    Missing(&'static str),
    /// A variable is malformed.
    #[error("{name}={value:?}: {detail}")]
    Invalid { name: &'static str, value: String, detail: String },
    /// The archive ID does not derive from the group UID and the destination.
    #[error(
        "BLOODRAVEN_PITR_ARCHIVE_ID={given} disagrees with the store settings (derived {derived} from the group uid and {destination}); the sidecar's identity must match its store"
    )]
    IdentityMismatch { given: String, derived: String, destination: String },
}

/// The archiver's settings.
#[derive(Debug, Clone)]
pub struct ArchiverSettings {
    /// This site.
    pub site: String,
    /// The group.
    pub source: SourceRef,
    /// The archive ID.
    pub archive_id: ArchiveId,
    /// The parsed destination.
    pub destination: Destination,
    /// Its normalized text.
    pub normalized: NormalizedDestination,
    /// The key revision (status only).
    pub key_revision: Option<String>,
    /// Encrypted mode: the file holding the archive passphrase (`None`: plaintext archive).
    pub passphrase_file: Option<PathBuf>,
    /// The MySQL data directory (read-only mount) and index name.
    pub data_dir: PathBuf,
    /// `binlog.index` (MySQL's default) unless set; the operator renders `mysql-bin.index`.
    pub index_name: String,
    /// `PEER_CHECK_INTERVAL`.
    pub probe_interval: Duration,
    /// `archivePollInterval`.
    pub poll_interval: Duration,
    /// How often the index is checked for a rotation.
    pub scan_floor: Duration,
    /// The operator's `host:port` (`BLOODRAVEN_ADDRESS`) for `/pitr-cutoff`; `None`: retention
    /// defers.
    pub operator: Option<String>,
    /// The live lab's stand-in for the PVC archive mount (`BLOODRAVEN_LAB_PVC_MOUNT`).
    pub lab_pvc_mount: Option<PathBuf>,
}

fn required(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<String, SettingsError> {
    var(name).filter(|v| !v.is_empty()).ok_or(SettingsError::Missing(name))
}

fn seconds(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: Duration,
) -> Result<Duration, SettingsError> {
    match var(name).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(text) => bloodraven_archive::parse_probe_interval(&text)
            .ok()
            .and_then(|d| Duration::try_from(d).ok())
            .filter(|d| !d.is_zero())
            .ok_or(SettingsError::Invalid {
                name,
                value: text,
                detail: "expected a positive duration such as 5s or 1m".into(),
            }),
    }
}

/// Parses a normalized destination back into its parts.
pub fn parse_destination(text: &str) -> Option<Destination> {
    if let Some(rest) = text.strip_prefix("s3://") {
        let (path, query) = rest.split_once('?')?;
        let endpoint = query.strip_prefix("endpoint=")?.to_owned();
        let path = path.strip_suffix("/binlogs").or_else(|| path.strip_suffix("binlogs"))?;
        let (bucket, prefix) = path.split_once('/').unwrap_or((path, ""));
        return Some(Destination::S3 {
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
            endpoint,
        });
    }
    let rest = text.strip_prefix("pvc://")?.strip_suffix("/binlogs")?;
    let mut parts = rest.splitn(3, '/');
    let namespace = parts.next()?.to_owned();
    let claim = parts.next()?.to_owned();
    let sub_path = parts.next().unwrap_or_default().to_owned();
    Some(Destination::Pvc { namespace, claim, sub_path })
}

impl ArchiverSettings {
    /// Reads the settings through `var` (the binary passes `std::env::var`). `Ok(None)` when
    /// PITR is not configured (no `BLOODRAVEN_PITR_ARCHIVE_ID`).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, SettingsError> {
        let Some(archive_text) = var(env::PITR_ARCHIVE_ID).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let archive_id: ArchiveId =
            archive_text.parse().map_err(|e: bloodraven_archive::Error| {
                SettingsError::Invalid {
                    name: env::PITR_ARCHIVE_ID,
                    value: archive_text.clone(),
                    detail: e.to_string(),
                }
            })?;
        let uid = required(&var, env::FAILOVER_GROUP_UID)?;
        let destination_text = required(&var, env::PITR_DESTINATION)?;
        let invalid_destination = |detail: String| SettingsError::Invalid {
            name: env::PITR_DESTINATION,
            value: destination_text.clone(),
            detail,
        };
        let destination = parse_destination(&destination_text).ok_or_else(|| {
            invalid_destination(
                "expected s3://<bucket>/<prefix>/binlogs?endpoint=<url> or pvc://<namespace>/<claim>/<subPath>/binlogs"
                    .into(),
            )
        })?;
        let normalized = destination.normalize().map_err(|e| invalid_destination(e.to_string()))?;
        let derived = ArchiveId::derive(&uid, &normalized);
        if derived != archive_id {
            return Err(SettingsError::IdentityMismatch {
                given: archive_id.to_string(),
                derived: derived.to_string(),
                destination: normalized.to_string(),
            });
        }
        let mode = var(env::PITR_ENCRYPTION_MODE).unwrap_or_else(|| "None".into());
        let passphrase_file = match mode.as_str() {
            "None" | "" => None,
            "Passphrase" => Some(
                var(env::PITR_PASSPHRASE_FILE)
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| env::PITR_PASSPHRASE_PATH.into())
                    .into(),
            ),
            _ => {
                return Err(SettingsError::Invalid {
                    name: env::PITR_ENCRYPTION_MODE,
                    value: mode,
                    detail: "expected None or Passphrase".into(),
                });
            }
        };
        Ok(Some(ArchiverSettings {
            site: required(&var, env::SITE_NAME)?,
            source: SourceRef {
                namespace: required(&var, env::GROUP_NAMESPACE)?,
                name: required(&var, env::GROUP_NAME)?,
                uid,
            },
            archive_id,
            destination,
            normalized,
            key_revision: var(env::PITR_KEY_REVISION).filter(|v| !v.is_empty()),
            passphrase_file,
            data_dir: var(env::MYSQL_DATA_DIR)
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| "/var/lib/mysql".into())
                .into(),
            index_name: var(env::BINLOG_INDEX)
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| "binlog.index".into()),
            probe_interval: seconds(&var, env::PEER_CHECK_INTERVAL, Duration::from_secs(5))?,
            poll_interval: seconds(&var, env::ARCHIVE_POLL_INTERVAL, Duration::from_secs(60))?,
            scan_floor: seconds(&var, env::ARCHIVE_SCAN_FLOOR, Duration::from_secs(1))?,
            operator: var(env::OPERATOR_ADDRESS).filter(|v| !v.is_empty()),
            lab_pvc_mount: var(env::LAB_PVC_MOUNT).filter(|v| !v.is_empty()).map(PathBuf::from),
        }))
    }

    /// The archive key: `ReaderKey::None` for a plaintext archive, else the passphrase file's
    /// bytes, exactly, read by the one reader of key files (`bloodraven_replay::key`, which
    /// pitr-download and the console use too). An unreadable or empty file is a store init
    /// failure, retried; the message names the file and, for a missing or unreadable one, why
    /// that usually is.
    pub fn read_key(&self) -> Result<ReaderKey, String> {
        use bloodraven_replay::key::{KeyFileError, reader_key};
        reader_key(self.passphrase_file.as_deref()).map_err(|error| {
            let hint = match &error {
                KeyFileError::Unreadable { source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    "; the profile's passphrase Secret or its key (encryption.passphraseSecretKeyRef) is missing, so nothing is archived until it exists"
                }
                KeyFileError::Unreadable { source, .. }
                    if source.kind() == std::io::ErrorKind::PermissionDenied =>
                {
                    "; the sidecar's user cannot read the key file: the site pod's securityContext.fsGroup (999) gives it the group's read, check that nothing overrode it"
                }
                _ => "",
            };
            format!("{error}{hint}")
        })
    }

    fn config(&self, root: ArchiveRoot, storage_type: &str, key: ReaderKey) -> ArchiverConfig {
        ArchiverConfig {
            identity: WriterIdentity {
                source: self.source.clone(),
                archive_id: self.archive_id.clone(),
                key,
                site: self.site.clone(),
            },
            destination: self.normalized.clone(),
            root,
            storage_type: storage_type.to_owned(),
            probe_interval: self.probe_interval,
            retention_interval: Duration::from_secs(3600),
            key_revision: self.key_revision.clone(),
        }
    }
}

/// Builds the store and the archive root, with the PVC mount check.
pub async fn build_store(
    settings: &ArchiverSettings,
    mountinfo: &MountInfoSource,
    pvc_mount: &std::path::Path,
) -> Result<(Store, ArchiveRoot, &'static str), String> {
    match &settings.destination {
        Destination::S3 { bucket, prefix, endpoint } => {
            let mut config = S3Config::new(bucket, prefix, S3Credentials::Environment);
            if !endpoint.is_empty() {
                config = config.with_endpoint(endpoint);
            }
            let store = S3Store::connect(config).await.map_err(|e| e.to_string())?;
            let root = ArchiveRoot::under_profile("").map_err(|e| e.to_string())?;
            Ok((store.into(), root, "S3"))
        }
        Destination::Pvc { sub_path, .. } => {
            // `pvc_mount` is the claim's root: the archive is `<subPath>/binlogs` in it, the
            // document's `<profile-prefix>/binlogs/`, where the restore Job's pitr-download
            // (the claim mounted at /backups) reads it.
            let root = ArchiveRoot::under_profile(sub_path).map_err(|e| e.to_string())?;
            check_pvc_store(pvc_mount, &pvc_mount.join(root.as_str()), mountinfo)
                .map_err(|e| e.to_string())?;
            let store = FsStore::new(pvc_mount).map_err(|e| e.to_string())?;
            Ok((store.into(), root, "PVC"))
        }
    }
}

fn publish(sender: &watch::Sender<Option<serde_json::Value>>, status: &ArchiverStatus) {
    let value = serde_json::to_value(status).ok();
    sender.send_replace(value);
}

fn index_stamp(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Runs the archiver until `stop` resolves: builds the store (retrying), starts the role
/// sampler, scans on rotations and every poll interval, and publishes its status.
pub async fn run(
    settings: ArchiverSettings,
    server: MysqlServer,
    status: watch::Sender<Option<serde_json::Value>>,
    stop: impl Future<Output = ()> + Send,
) {
    match settings.lab_pvc_mount.clone() {
        // The lab: one directory stands in for every claim, this one's at
        // `<dir>/<namespace>/<claim>`, declared a mount point so the check passes there.
        Some(dir) => {
            let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
            let claim_dir = match &settings.destination {
                Destination::Pvc { namespace, claim, .. }
                    if one_component(namespace) && one_component(claim) =>
                {
                    dir.join(namespace).join(claim)
                }
                Destination::Pvc { .. } => dir,
                Destination::S3 { .. } => dir,
            };
            if let Err(error) = std::fs::create_dir_all(&claim_dir) {
                tracing::warn!(dir = %claim_dir.display(), %error, "cannot create the lab's claim folder");
            }
            let mountinfo = MountInfoSource::Text(format!(
                "1 0 0:1 / / rw - ext4 /dev/root rw\n2 1 0:2 / {} rw - ext4 /dev/lab-pvc rw\n",
                claim_dir.display()
            ));
            run_with(settings, server, status, stop, &mountinfo, &claim_dir).await;
        }
        None => {
            let pvc = std::path::Path::new(PVC_MOUNT_PATH);
            run_with(settings, server, status, stop, &MountInfoSource::ProcSelf, pvc).await;
        }
    }
}

/// Whether `name` is one plain path component (a namespace or claim name is a DNS label).
fn one_component(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// [`run`] with the mount table and the PVC mount path injected (tests and the lab).
pub async fn run_with(
    settings: ArchiverSettings,
    server: MysqlServer,
    status: watch::Sender<Option<serde_json::Value>>,
    stop: impl Future<Output = ()> + Send,
    mountinfo: &MountInfoSource,
    pvc_mount: &std::path::Path,
) {
    tokio::pin!(stop);
    let mut failed =
        ArchiverStatus { enabled: true, site: settings.site.clone(), ..Default::default() };
    let (store, root, kind, key) = loop {
        let built = match settings.read_key() {
            Ok(key) => build_store(&settings, mountinfo, pvc_mount)
                .await
                .map(|(store, root, kind)| (store, root, kind, key)),
            Err(cause) => Err(cause),
        };
        match built {
            Ok(built) => break built,
            Err(cause) => {
                failed.upload_failures += 1;
                failed.last_error = format!("archive store init: {cause}");
                tracing::warn!(%cause, "archive store init failed");
                publish(&status, &failed);
                tokio::select! {
                    () = &mut stop => return,
                    () = tokio::time::sleep(settings.poll_interval) => {}
                }
            }
        }
    };
    let local = LocalBinlogs::new(&settings.data_dir, &settings.index_name);
    let index_path = settings.data_dir.join(&settings.index_name);
    let cutoff = OperatorCutoff {
        operator: settings.operator.clone(),
        namespace: settings.source.namespace.clone(),
        group: settings.source.name.clone(),
        archive: settings.archive_id.to_string(),
    };
    let mut archiver = Archiver::open(store, settings.config(root, kind, key), local, cutoff).await;
    let tracker = archiver.tracker();
    let episodes = tracker.clone();
    let (stop_sampler, sampler_stopped) = tokio::sync::oneshot::channel::<()>();
    let sampler =
        tokio::spawn(run_sampler(server.clone(), tracker, settings.probe_interval, async {
            let _ = sampler_stopped.await;
        }));
    let mut last_stamp = None;
    let mut last_episode = None;
    let mut last_scan: Option<tokio::time::Instant> = None;
    let mut ticker = tokio::time::interval(settings.scan_floor);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = &mut stop => break,
            _ = ticker.tick() => {}
        }
        let stamp = index_stamp(&index_path);
        let due = last_scan.is_none_or(|at| at.elapsed() >= settings.poll_interval);
        // A promotion (a new writable episode) scans at once: the promotion record is saved
        // and the files sealed meanwhile are uploaded without waiting for a rotation.
        let episode = episodes.lock().ok().and_then(|tracker| tracker.episode());
        if stamp == last_stamp && episode == last_episode && !due {
            continue;
        }
        last_stamp = stamp;
        last_episode = episode;
        last_scan = Some(tokio::time::Instant::now());
        let integrity = server.integrity().await;
        let _ = archiver.scan(integrity, Timestamp::now()).await;
        publish(&status, &archiver.status());
    }
    let _ = stop_sampler.send(());
    let _ = sampler.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: std::collections::HashMap<String, String> =
            pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn settings_refuse_an_identity_that_disagrees_with_the_destination() {
        let destination = Destination::Pvc {
            namespace: "prod".into(),
            claim: "backups".into(),
            sub_path: "lion".into(),
        };
        let normalized = destination.normalize().unwrap();
        assert_eq!(parse_destination(normalized.as_str()), Some(destination.clone()));
        let id = ArchiveId::derive("uid-1", &normalized);
        let base = vec![
            ("BLOODRAVEN_PITR_ARCHIVE_ID", id.to_string()),
            ("BLOODRAVEN_FAILOVER_GROUP_UID", "uid-1".to_owned()),
            ("BLOODRAVEN_PITR_DESTINATION", normalized.to_string()),
            ("SITE_NAME", "iad".to_owned()),
            ("BLOODRAVEN_GROUP_NAMESPACE", "prod".to_owned()),
            ("BLOODRAVEN_GROUP_NAME", "lion".to_owned()),
        ];
        let settings = ArchiverSettings::from_vars(vars(&base)).unwrap().unwrap();
        assert_eq!(settings.archive_id, id);
        assert_eq!(settings.poll_interval, Duration::from_secs(60));

        let mut other = base.clone();
        other[1].1 = "uid-2".to_owned();
        let error = ArchiverSettings::from_vars(vars(&other)).unwrap_err();
        assert!(matches!(error, SettingsError::IdentityMismatch { .. }), "{error}");
        assert!(ArchiverSettings::from_vars(vars(&[])).unwrap().is_none());

        let s3 = Destination::S3 {
            bucket: "b".into(),
            prefix: "prod/x".into(),
            endpoint: "http://127.0.0.1:8333".into(),
        };
        let text = s3.normalize().unwrap();
        assert_eq!(parse_destination(text.as_str()).unwrap().normalize().unwrap(), text);
    }

    #[test]
    fn passphrase_mode_reads_the_key_file_exactly_and_refuses_what_it_cannot_use() {
        let destination = Destination::Pvc {
            namespace: "prod".into(),
            claim: "backups".into(),
            sub_path: "lion".into(),
        };
        let normalized = destination.normalize().unwrap();
        let id = ArchiveId::derive("uid-1", &normalized);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("passphrase");
        let mut pairs = vec![
            ("BLOODRAVEN_PITR_ARCHIVE_ID", id.to_string()),
            ("BLOODRAVEN_FAILOVER_GROUP_UID", "uid-1".to_owned()),
            ("BLOODRAVEN_PITR_DESTINATION", normalized.to_string()),
            ("SITE_NAME", "iad".to_owned()),
            ("BLOODRAVEN_GROUP_NAMESPACE", "prod".to_owned()),
            ("BLOODRAVEN_GROUP_NAME", "lion".to_owned()),
            ("BLOODRAVEN_PITR_ENCRYPTION_MODE", "Passphrase".to_owned()),
        ];
        let default = ArchiverSettings::from_vars(vars(&pairs)).unwrap().unwrap();
        assert_eq!(default.passphrase_file, Some(PathBuf::from(env::PITR_PASSPHRASE_PATH)));
        pairs.push(("BLOODRAVEN_PITR_PASSPHRASE_FILE", file.display().to_string()));
        let settings = ArchiverSettings::from_vars(vars(&pairs)).unwrap().unwrap();
        // Missing, then empty: store init failures naming the file (retried, never a panic).
        let missing = settings.read_key().unwrap_err();
        assert!(
            missing.starts_with(&format!(
                "cannot read the archive passphrase file {}",
                file.display()
            )),
            "{missing}"
        );
        assert!(missing.contains("passphraseSecretKeyRef) is missing"), "{missing}");
        std::fs::write(&file, b"").unwrap();
        assert!(settings.read_key().unwrap_err().contains("is empty"));
        std::fs::write(&file, b"pass phrase\n").unwrap();
        assert_eq!(
            settings.read_key().unwrap(),
            ReaderKey::Passphrase {
                algorithm: "AES-256-GCM".into(),
                passphrase: b"pass phrase\n".to_vec()
            }
        );
        pairs[6].1 = "Vault".to_owned();
        let error = ArchiverSettings::from_vars(vars(&pairs)).unwrap_err();
        assert!(error.to_string().contains("expected None or Passphrase"), "{error}");
    }

    /// The contract between the operator's render and this reader: the sidecar container's
    /// environment, as `bloodraven-workloads` renders it, starts the archiver with the identity
    /// the operator derived.
    #[test]
    fn the_operators_render_starts_the_archiver_with_its_identity() {
        use bloodraven_crd::fixtures::GroupFixture;
        use bloodraven_crd::group::PitrSpec;

        let mut group = GroupFixture::three_sites().with_s3_profile("nightly").build();
        group.spec.backup.get_or_insert_with(Default::default).pitr = Some(PitrSpec {
            enabled: Some(true),
            profile_name: Some("nightly".to_owned()),
            max_binlog_size: None,
            archive_poll_interval: Some(Duration::from_secs(120).into()),
        });
        let render = bloodraven_workloads::pitr::render(&group).unwrap().unwrap();
        let objects = bloodraven_workloads::site_objects(&group, "pdx").unwrap();
        let pod = objects.deployment.spec.template.spec.unwrap();
        let container = pod
            .containers
            .into_iter()
            .find(|c| c.name == bloodraven_workloads::containers::SIDECAR)
            .unwrap();
        let pairs: Vec<(&str, String)> = container
            .env
            .iter()
            .flatten()
            .filter_map(|var| Some((var.name.as_str(), var.value.clone()?)))
            .collect();
        let settings = ArchiverSettings::from_vars(vars(&pairs)).unwrap().unwrap();
        assert_eq!(settings.archive_id, render.archive_id);
        assert_eq!(settings.normalized, render.normalized);
        assert_eq!(settings.site, "pdx");
        assert_eq!(settings.source.uid, render.group_uid);
        assert_eq!(settings.source.namespace, "orders");
        assert_eq!(settings.index_name, "mysql-bin.index");
        assert_eq!(settings.data_dir, PathBuf::from("/var/lib/mysql"));
        assert_eq!(settings.poll_interval, Duration::from_secs(120));
        assert_eq!(settings.passphrase_file, None, "a plaintext profile has no key file");
    }

    /// An encrypted profile's render names the key file the operator mounts; a missing file
    /// (the Secret or its key absent) is a store init failure that says so.
    #[test]
    fn the_operators_encrypted_render_reads_the_mounted_key_file() {
        use bloodraven_crd::fixtures::GroupFixture;
        use bloodraven_crd::group::{BackupEncryption, PitrSpec};
        use k8s_openapi::api::core::v1::SecretKeySelector;

        let mut group = GroupFixture::three_sites().with_s3_profile("nightly").build();
        let backup = group.spec.backup.get_or_insert_with(Default::default);
        backup.profiles[0].encryption = Some(BackupEncryption {
            algorithm: None,
            passphrase_secret_key_ref: SecretKeySelector {
                name: "archive-key".to_owned(),
                key: "passphrase".to_owned(),
                optional: None,
            },
        });
        backup.pitr = Some(PitrSpec {
            enabled: Some(true),
            profile_name: Some("nightly".to_owned()),
            ..PitrSpec::default()
        });
        let objects = bloodraven_workloads::site_objects(&group, "pdx").unwrap();
        let pod = objects.deployment.spec.template.spec.unwrap();
        let container = pod
            .containers
            .into_iter()
            .find(|c| c.name == bloodraven_workloads::containers::SIDECAR)
            .unwrap();
        let pairs: Vec<(&str, String)> = container
            .env
            .iter()
            .flatten()
            .filter_map(|var| Some((var.name.as_str(), var.value.clone()?)))
            .collect();
        let settings = ArchiverSettings::from_vars(vars(&pairs)).unwrap().unwrap();
        assert_eq!(settings.passphrase_file, Some(PathBuf::from(env::PITR_PASSPHRASE_PATH)));
        let mounted = container.volume_mounts.unwrap_or_default();
        assert!(
            mounted
                .iter()
                .any(|m| env::PITR_PASSPHRASE_PATH.starts_with(&format!("{}/", m.mount_path))
                    && m.name == env::PITR_KEY_VOLUME),
            "the key file is inside a rendered mount: {mounted:?}"
        );
        let missing = ArchiverSettings {
            passphrase_file: Some(PathBuf::from("/nonexistent/bloodraven/pitr-key/passphrase")),
            ..settings
        };
        let error = missing.read_key().unwrap_err();
        assert!(error.contains("passphraseSecretKeyRef) is missing"), "{error}");
    }
}
