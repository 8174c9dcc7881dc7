//! The archive coverage panel's data: where a group's PITR archive lives, opening it through a
//! store that only lists and reads, and an owned, plain-data summary of
//! [`bloodraven_archive::Coverage`] for the view.

use std::path::{Path, PathBuf};

use bloodraven_archive::coverage::{ForkCause, GapKind};
use bloodraven_archive::manifest::RecordKind;
use bloodraven_archive::reader::{ReaderKey, ReaderOptions};
use bloodraven_archive::{Coverage, OpenArchive, Refusal, RefusalToken};
use bloodraven_crd::{MysqlBackup, MysqlFailoverGroup};
use bloodraven_gtid::GtidSet;
use bloodraven_store::{
    ArchiveRoot, Error, FsStore, ObjectStore, Operation, S3Config, S3Credentials, S3Store,
};
use jiff::Timestamp;

/// Where a group's archive lives, from `spec.backup.pitr.profileName` →
/// `spec.backup.profiles[].storage`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArchiveLocation {
    /// A PVC: `<archive root>/<namespace>/<claim>/<subPath>/binlogs`.
    Pvc { namespace: String, claim: String, sub_path: String },
    /// An S3 bucket: `<prefix>/binlogs`.
    S3 {
        namespace: String,
        bucket: String,
        prefix: String,
        endpoint: Option<String>,
        region: Option<String>,
        /// The profile's `credentialsSecretName` (read only with
        /// `--archive-credentials-from-secret`).
        credentials_secret: Option<String>,
    },
}

impl std::fmt::Display for ArchiveLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArchiveLocation::Pvc { namespace, claim, sub_path } => {
                // The normalized destination the operator publishes in
                // status.pitr.archive.destination, when the location normalizes.
                let destination = bloodraven_archive::Destination::Pvc {
                    namespace: namespace.clone(),
                    claim: claim.clone(),
                    sub_path: sub_path.clone(),
                };
                match destination.normalize() {
                    Ok(normalized) => f.write_str(normalized.as_str()),
                    Err(_) => write!(f, "pvc://{namespace}/{claim}/{sub_path}"),
                }
            }
            ArchiveLocation::S3 { bucket, prefix, .. } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// The archive location of `group`, or why there is none.
pub fn locate(group: &MysqlFailoverGroup) -> Result<ArchiveLocation, String> {
    let backup = group.spec.backup.as_ref().ok_or("spec.backup is not set")?;
    let pitr = backup.pitr.as_ref().ok_or("spec.backup.pitr is not set")?;
    if pitr.enabled != Some(true) {
        return Err("PITR is not enabled (spec.backup.pitr.enabled)".to_owned());
    }
    let profile_name =
        pitr.profile_name.as_deref().ok_or("spec.backup.pitr.profileName is not set")?;
    let profile = backup
        .profiles
        .iter()
        .find(|profile| profile.name == profile_name)
        .ok_or_else(|| format!("spec.backup.profiles has no profile {profile_name:?}"))?;
    if let Some(pvc) = &profile.storage.pvc {
        let claim = pvc.claim_name.clone().unwrap_or_else(|| {
            // A provisioned claim is named after the group and the profile.
            format!("{}-{profile_name}", group.metadata.name.as_deref().unwrap_or_default())
        });
        return Ok(ArchiveLocation::Pvc {
            namespace: group.metadata.namespace.clone().unwrap_or_default(),
            claim,
            sub_path: pvc.sub_path.clone().unwrap_or_default(),
        });
    }
    if let Some(s3) = &profile.storage.s3 {
        return Ok(ArchiveLocation::S3 {
            namespace: group.metadata.namespace.clone().unwrap_or_default(),
            bucket: s3.bucket.clone(),
            prefix: s3.prefix.clone().unwrap_or_default(),
            endpoint: s3.endpoint_url.clone(),
            region: s3.region.clone(),
            credentials_secret: s3.credentials_secret_name.clone(),
        });
    }
    Err(format!("profile {profile_name:?} has neither pvc nor s3 storage"))
}

/// A backup as an anchor on the timeline: `gtidExecuted` and its completion time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupAnchor {
    pub name: String,
    pub gtid_executed: Option<String>,
    pub completed: Option<Timestamp>,
}

impl BackupAnchor {
    /// The anchor of a backup object.
    pub fn of(backup: &MysqlBackup) -> Self {
        let status = backup.status.as_ref();
        Self {
            name: backup.metadata.name.clone().unwrap_or_default(),
            gtid_executed: status.and_then(|status| status.gtid_executed.clone()),
            completed: status.and_then(|status| status.completion_time.as_ref()).map(|t| t.0),
        }
    }
}

/// What the console asks the archive source for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchiveRequest {
    pub location: ArchiveLocation,
    pub backups: Vec<BackupAnchor>,
}

/// How a file is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFlag {
    Usable,
    Quarantined,
    Divergent,
    /// On a dead branch (a fork).
    Forked,
    /// On a site with a history-integrity marker.
    Unsafe,
}

/// One archived binlog as a time bar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileBar {
    pub name: String,
    pub start: Option<Timestamp>,
    pub end: Option<Timestamp>,
    pub flag: FileFlag,
}

/// A promotion or reset record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordMarker {
    pub label: String,
    pub reset: bool,
    pub at: Timestamp,
}

/// One site's timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteTimeline {
    pub site: String,
    pub files: Vec<FileBar>,
    pub records: Vec<RecordMarker>,
    pub horizon: Option<Timestamp>,
    pub retired: usize,
    /// The history-integrity violation, when the site is marked.
    pub marker: Option<String>,
}

/// A gap in the archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GapLine {
    pub site: String,
    pub gtids: String,
    pub kind: String,
    pub at: Timestamp,
}

/// A dead branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkLine {
    pub site: String,
    pub gtids: String,
    pub start: Option<Timestamp>,
    pub end: Option<Timestamp>,
    pub cause: String,
}

/// A backup's restorable window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupWindow {
    pub name: String,
    pub completed: Option<Timestamp>,
    /// `Err` when the backup has no usable `gtidExecuted` or completion time.
    pub window: Result<WindowLine, String>,
}

/// Where a window starts and ends, and the token a later target refuses with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowLine {
    pub start: Timestamp,
    pub end: Option<Timestamp>,
    pub stop_token: &'static str,
    pub stop_detail: String,
}

/// The coverage summary the view draws.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchiveSummary {
    pub location: String,
    pub archive_id: String,
    /// The earliest and latest time on any timeline.
    pub span: Option<(Timestamp, Timestamp)>,
    pub sites: Vec<SiteTimeline>,
    pub gaps: Vec<GapLine>,
    pub forks: Vec<ForkLine>,
    pub retention_horizon: Option<Timestamp>,
    pub backups: Vec<BackupWindow>,
    /// The planner's view of the archive (every row read), for the PITR workbench; `None`
    /// when the bytes were not read.
    pub history: Option<SharedHistory>,
}

/// The archive as the planner reads it, shared between frames (the workbench plans on it).
/// Two are equal when they are the same read.
#[derive(Clone)]
pub struct SharedHistory(pub std::sync::Arc<bloodraven_pitr::History>);

impl PartialEq for SharedHistory {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedHistory {}

impl std::fmt::Debug for SharedHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedHistory")
            .field("archive_id", &self.0.archive_id)
            .field("files", &self.0.files.len())
            .finish()
    }
}

/// The outcome of reading an archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArchiveOutcome {
    Covered(Box<ArchiveSummary>),
    /// The reader refused the archive with a catalog token.
    Refused {
        token: String,
        message: String,
        remedy: String,
    },
    /// The archive could not be read (store unreachable, transient failures).
    Failed(String),
    /// The archive is encrypted and the console holds no passphrase for it, or a passphrase
    /// that fails its authentication: the console's own key problem, not a refusal the
    /// restore would give.
    Locked(ArchiveKeyError),
}

/// The console cannot open an encrypted archive with the key it holds. The messages name the
/// archive and the passphrase file, never the passphrase.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArchiveKeyError {
    /// An encrypted archive and no passphrase.
    #[error(
        "the archive {location} is encrypted (passphrase mode) and the console holds no passphrase; {REMEDY_NO_KEY}"
    )]
    Encrypted {
        /// Where the archive is.
        location: String,
    },
    /// The passphrase does not verify the archive's key check.
    #[error(
        "authentication failed: the passphrase in {file} does not verify the archive {location} ({archive}); {REMEDY_WRONG_KEY}"
    )]
    WrongKey {
        /// Where the archive is.
        location: String,
        /// The passphrase file.
        file: PathBuf,
        /// The reader's words (they name the archive ID).
        archive: String,
    },
}

/// How to give the console a passphrase.
pub const REMEDY_NO_KEY: &str = "give the console the archive's passphrase with --pitr-passphrase-file PATH (or BLOODRAVEN_PITR_PASSPHRASE_FILE=PATH): a file holding the value of the profile's passphraseSecretKeyRef, for example `kubectl get secret NAME -o jsonpath='{.data.KEY}' | base64 -d > PATH`";
/// What to do about a passphrase that does not verify.
pub const REMEDY_WRONG_KEY: &str = "point --pitr-passphrase-file at the passphrase the archive was written with (the profile's passphraseSecretKeyRef; the bytes count exactly, a trailing newline included)";

impl ArchiveKeyError {
    /// The refusal token the reader gave.
    pub fn token(&self) -> RefusalToken {
        match self {
            ArchiveKeyError::Encrypted { .. } => RefusalToken::ArchiveEncryptionMismatch,
            ArchiveKeyError::WrongKey { .. } => RefusalToken::ArchiveKeyMismatch,
        }
    }

    /// What to do.
    pub fn remedy(&self) -> &'static str {
        match self {
            ArchiveKeyError::Encrypted { .. } => REMEDY_NO_KEY,
            ArchiveKeyError::WrongKey { .. } => REMEDY_WRONG_KEY,
        }
    }
}

fn gap_kind(kind: &GapKind) -> &'static str {
    match kind {
        GapKind::NeverArchived => "never archived",
        GapKind::Quarantined => "quarantined only",
        GapKind::UnsafeHistory => "unsafe history only",
        GapKind::Retired => "retired",
        GapKind::BeforeArchive => "before the archive",
        GapKind::Unreachable => "unreachable",
    }
}

/// The backup metadata the console plans with: the MysqlBackup's `status.gtidExecuted` and
/// `completionTime` (as the dump's end and `serverClock.end`). The console does not read the
/// dump's stamp, so the identity checks of step 2 are satisfied by construction. The archive
/// panel's windows and `bloodraven pitr plan` both plan with this (one truth).
pub fn backup_meta(
    gtid_executed: GtidSet,
    completed: Timestamp,
    archive_id: &str,
) -> bloodraven_pitr::BackupMeta {
    bloodraven_pitr::BackupMeta::complete(gtid_executed, completed, "console", archive_id)
}

/// A backup's restorable window, from the planner ([`bloodraven_pitr::timeline`]).
fn planned_window(
    history: &bloodraven_pitr::History,
    gtid_executed: GtidSet,
    completed: Timestamp,
) -> Result<WindowLine, String> {
    let meta = backup_meta(gtid_executed, completed, &history.archive_id);
    let timeline =
        bloodraven_pitr::timeline(history, None, &meta, "", bloodraven_pitr::Limits::default());
    match timeline.window() {
        Ok(window) => {
            let (stop_token, mut stop_detail) = match window.stop {
                Some((token, message)) => (token.as_str(), message),
                None => ("", "every later target plans".to_owned()),
            };
            if window.later_runs > 0 {
                stop_detail.push_str(&format!(
                    " ({} later run(s) of targets plan again)",
                    window.later_runs
                ));
            }
            Ok(WindowLine { start: window.start, end: window.end, stop_token, stop_detail })
        }
        Err((token, message)) => Err(format!("no target plans: {token}: {message}")),
    }
}

/// The summary of an opened archive, with the windows of `backups`. Without the archive's
/// bytes (`history`: the planner's view after reading every row) no window is computed.
pub fn summarize(
    location: &str,
    archive: &OpenArchive,
    backups: &[BackupAnchor],
) -> ArchiveSummary {
    summarize_read(location, archive, None, backups)
}

/// [`summarize`] with the bytes read: each backup's window is the planner's answer.
pub fn summarize_read(
    location: &str,
    archive: &OpenArchive,
    history: Option<&bloodraven_pitr::History>,
    backups: &[BackupAnchor],
) -> ArchiveSummary {
    let coverage = Coverage::of(archive);
    let forked: std::collections::BTreeSet<usize> =
        coverage.forks.iter().flat_map(|fork| fork.files.iter().copied()).collect();
    let mut earliest: Option<Timestamp> = None;
    let mut latest: Option<Timestamp> = None;
    let mut see = |at: Option<Timestamp>| {
        if let Some(at) = at {
            earliest = Some(earliest.map_or(at, |e| e.min(at)));
            latest = Some(latest.map_or(at, |l| l.max(at)));
        }
    };
    let sites = coverage
        .sites
        .iter()
        .map(|site| {
            let files = site
                .files
                .iter()
                .filter_map(|index| coverage.files.get(*index).map(|file| (*index, file)))
                .map(|(index, file)| {
                    let flag = if file.quarantined {
                        FileFlag::Quarantined
                    } else if forked.contains(&index) {
                        FileFlag::Forked
                    } else if file.divergent {
                        FileFlag::Divergent
                    } else if site.history_integrity.is_some() {
                        FileFlag::Unsafe
                    } else {
                        FileFlag::Usable
                    };
                    FileBar { name: file.name.clone(), start: file.start, end: file.end, flag }
                })
                .collect::<Vec<_>>();
            let records = site
                .episodes
                .iter()
                .filter_map(|index| coverage.episodes.get(*index))
                .map(|episode| RecordMarker {
                    label: episode.label.clone(),
                    reset: !matches!(episode.kind, RecordKind::Promotion),
                    at: episode.observed_at,
                })
                .collect::<Vec<_>>();
            SiteTimeline {
                site: site.site.clone(),
                files,
                records,
                horizon: site.retention.horizon,
                retired: site.retention.retired,
                marker: site
                    .history_integrity
                    .as_ref()
                    .map(|marker| format!("{:?}", marker.violation)),
            }
        })
        .collect::<Vec<_>>();
    for site in &sites {
        for file in &site.files {
            see(file.start);
            see(file.end);
        }
        for record in &site.records {
            see(Some(record.at));
        }
    }
    let backups = backups
        .iter()
        .map(|backup| {
            let window = match (&backup.gtid_executed, backup.completed) {
                (Some(gtids), Some(completed)) => match (gtids.parse::<GtidSet>(), history) {
                    (Ok(gtid_executed), Some(history)) => {
                        planned_window(history, gtid_executed, completed)
                    }
                    (Ok(_), None) => Err("the archive's binlogs were not read".to_owned()),
                    (Err(error), _) => Err(format!("gtidExecuted is not a GTID set: {error}")),
                },
                (None, _) => Err("no gtidExecuted yet".to_owned()),
                (_, None) => Err("not completed yet".to_owned()),
            };
            BackupWindow { name: backup.name.clone(), completed: backup.completed, window }
        })
        .collect();
    ArchiveSummary {
        location: location.to_owned(),
        archive_id: archive.descriptor.archive_id.to_string(),
        span: earliest.zip(latest),
        sites,
        gaps: coverage
            .gaps
            .iter()
            .map(|gap| GapLine {
                site: gap.site.clone(),
                gtids: format!("{:#}", gap.gtids),
                kind: gap_kind(&gap.kind).to_owned(),
                at: gap.at,
            })
            .collect(),
        forks: coverage
            .forks
            .iter()
            .map(|fork| ForkLine {
                site: fork.site.clone(),
                gtids: format!("{:#}", fork.gtids),
                start: fork.start,
                end: fork.end,
                cause: match &fork.cause {
                    ForkCause::LostAtFailover(label) => format!("lost at failover {label}"),
                    ForkCause::Branch => "branch (split brain or errant)".to_owned(),
                },
            })
            .collect(),
        retention_horizon: coverage.retention_horizon,
        backups,
        history: history.map(|history| SharedHistory(std::sync::Arc::new(history.clone()))),
    }
}

/// A store that only lists and reads: writes fail inside the process (the console is
/// read-only, as [`crate::client::ReadOnlyLayer`] is for the API server).
pub struct ReadOnlyStore<S> {
    inner: S,
}

impl<S: ObjectStore> ReadOnlyStore<S> {
    pub fn new(inner: S) -> Self {
        Self { inner }
    }

    fn refuse(&self, operation: Operation, key: &str) -> Error {
        Error::Permanent {
            store: self.inner.describe().to_owned(),
            operation,
            key: key.to_owned(),
            detail: "the console is read-only".to_owned(),
        }
    }
}

impl<S: ObjectStore> ObjectStore for ReadOnlyStore<S> {
    fn describe(&self) -> &str {
        self.inner.describe()
    }

    async fn list(
        &self,
        prefix: &str,
        continuation: Option<&str>,
        page_size: u32,
    ) -> bloodraven_store::Result<bloodraven_store::ListPage> {
        self.inner.list(prefix, continuation, page_size).await
    }

    async fn head(&self, key: &str) -> bloodraven_store::Result<bloodraven_store::ObjectMeta> {
        self.inner.head(key).await
    }

    async fn get(&self, key: &str) -> bloodraven_store::Result<bloodraven_store::Object> {
        self.inner.get(key).await
    }

    async fn get_range(
        &self,
        key: &str,
        range: std::ops::Range<u64>,
    ) -> bloodraven_store::Result<bloodraven_store::Object> {
        self.inner.get_range(key, range).await
    }

    async fn put(&self, key: &str, _body: Vec<u8>) -> bloodraven_store::Result<()> {
        Err(self.refuse(Operation::Put, key))
    }

    async fn create(&self, key: &str, _body: Vec<u8>) -> bloodraven_store::Result<()> {
        Err(self.refuse(Operation::Create, key))
    }

    async fn delete(&self, key: &str) -> bloodraven_store::Result<()> {
        Err(self.refuse(Operation::Delete, key))
    }
}

/// The filesystem store and archive root of a PVC location under `archive_root`.
pub fn pvc_store(
    archive_root: &Path,
    location: &ArchiveLocation,
) -> Result<(PathBuf, ArchiveRoot), String> {
    match location {
        ArchiveLocation::Pvc { namespace, claim, sub_path } => {
            let directory = archive_root.join(namespace).join(claim);
            let root = ArchiveRoot::under_profile(sub_path)
                .map_err(|error| format!("the archive root under {location}: {error}"))?;
            Ok((directory, root))
        }
        ArchiveLocation::S3 { .. } => Err(format!("{location} is not a PVC archive")),
    }
}

/// How the archive source reaches archives.
#[derive(Clone, Default)]
pub struct ArchiveAccess {
    /// Where PVC archives are (`--archive-root`).
    pub archive_root: Option<PathBuf>,
    /// With `--archive-credentials-from-secret`: the read-only client that reads the profile's
    /// Secret. Without it S3 uses the local AWS environment (the SDK's default chain).
    pub secret_client: Option<kube::Client>,
    /// With `--pitr-passphrase-file`: the file holding the passphrase of encrypted archives
    /// (read at each open, never logged; a plaintext archive opens without it).
    pub passphrase_file: Option<PathBuf>,
}

impl std::fmt::Debug for ArchiveAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveAccess")
            .field("archive_root", &self.archive_root)
            .field("credentials_from_secret", &self.secret_client.is_some())
            .field("passphrase_file", &self.passphrase_file)
            .finish()
    }
}

impl ArchiveAccess {
    /// The access the command line gives (`--archive-root`, `--archive-credentials-from-secret`
    /// with `client`, `--pitr-passphrase-file`).
    pub fn of(global: &crate::cli::GlobalOptions, client: &kube::Client) -> Self {
        Self {
            archive_root: global.archive_root.clone(),
            secret_client: global.archive_credentials_from_secret.then(|| client.clone()),
            passphrase_file: global.pitr_passphrase_file.clone(),
        }
    }
}

/// The S3 keys of a profile's credentials Secret (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, optionally `AWS_SESSION_TOKEN`), read with a GET.
pub async fn secret_credentials(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<S3Credentials, String> {
    let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(client.clone(), namespace);
    let secret = api
        .get(name)
        .await
        .map_err(|error| format!("reading Secret {namespace}/{name}: {error}"))?;
    let data = secret.data.unwrap_or_default();
    let value =
        |key: &str| data.get(key).map(|bytes| String::from_utf8_lossy(&bytes.0).trim().to_owned());
    let field = |key: &str| {
        value(key)
            .filter(|text| !text.is_empty())
            .ok_or_else(|| format!("Secret {namespace}/{name} has no {key}"))
    };
    Ok(S3Credentials::Static {
        access_key_id: field("AWS_ACCESS_KEY_ID")?,
        secret_access_key: field("AWS_SECRET_ACCESS_KEY")?,
        session_token: value("AWS_SESSION_TOKEN").filter(|text| !text.is_empty()),
    })
}

/// A read-only store holding an archive, and the archive's root in it.
pub enum ArchiveStore {
    Fs(ReadOnlyStore<FsStore>, ArchiveRoot),
    S3(ReadOnlyStore<S3Store>, ArchiveRoot),
}

/// Connects to the store of `location` (list and get only).
pub async fn open_store(
    access: &ArchiveAccess,
    location: &ArchiveLocation,
) -> Result<ArchiveStore, String> {
    if let ArchiveLocation::S3 { namespace, bucket, prefix, endpoint, region, credentials_secret } =
        location
    {
        let credentials = match (&access.secret_client, credentials_secret) {
            (Some(client), Some(name)) => secret_credentials(client, namespace, name).await?,
            (Some(_), None) => {
                return Err(format!("{location}: the profile names no credentialsSecretName"));
            }
            (None, _) => S3Credentials::Environment,
        };
        let root = ArchiveRoot::under_profile(prefix).map_err(|error| error.to_string())?;
        let mut config = S3Config::new(bucket.clone(), "", credentials);
        config.endpoint.clone_from(endpoint);
        config.region.clone_from(region);
        let store = S3Store::connect(config).await.map_err(|error| error.to_string())?;
        return Ok(ArchiveStore::S3(ReadOnlyStore::new(store), root));
    }
    let Some(archive_root) = &access.archive_root else {
        return Err(format!(
            "{location}: no archive root: start the console with --archive-root DIR"
        ));
    };
    let (directory, root) = pvc_store(archive_root, location)?;
    let store = FsStore::new(&directory).map_err(|error| error.to_string())?;
    Ok(ArchiveStore::Fs(ReadOnlyStore::new(store), root))
}

/// What reading an archive with the console's key gave.
#[derive(Debug)]
pub enum Read {
    /// Opened, every row read and indexed.
    Opened(Box<bloodraven_replay::download::Downloaded>),
    /// The reader refused the archive (a refusal the restore would give too).
    Refused(Refusal),
    /// The console's key cannot open it.
    Locked(ArchiveKeyError),
}

/// Opens the archive at `root` with the key of `access` (pitr-download's path: the envelope
/// opened, every row authenticated and indexed, nothing staged). A passphrase is for encrypted
/// archives: a plaintext archive refuses it (`ArchiveEncryptionMismatch`) and is then opened
/// without it, so one `BLOODRAVEN_PITR_PASSPHRASE_FILE` serves a fleet of both kinds.
///
/// # Errors
/// An unreadable or empty passphrase file, or a store failure without a token.
pub async fn read<S: ObjectStore>(
    store: &S,
    root: &ArchiveRoot,
    access: &ArchiveAccess,
    location: &ArchiveLocation,
) -> Result<Read, String> {
    use bloodraven_replay::download::{Opened, download};
    let key = bloodraven_replay::key::reader_key(access.passphrase_file.as_deref())
        .map_err(|error| error.to_string())?;
    let opened = download(store, root, ReaderOptions::new(key), None)
        .await
        .map_err(|error| error.to_string())?;
    let refusal = match opened {
        Opened::Archive(downloaded) => return Ok(Read::Opened(downloaded)),
        Opened::Refused(refusal) => refusal,
    };
    let location = location.to_string();
    Ok(match (refusal.token, &access.passphrase_file) {
        (RefusalToken::ArchiveEncryptionMismatch, None) => {
            Read::Locked(ArchiveKeyError::Encrypted { location })
        }
        (RefusalToken::ArchiveKeyMismatch, Some(file)) => Read::Locked(ArchiveKeyError::WrongKey {
            location,
            file: file.clone(),
            archive: refusal.message,
        }),
        (RefusalToken::ArchiveEncryptionMismatch, Some(_)) => {
            match download(store, root, ReaderOptions::new(ReaderKey::None), None)
                .await
                .map_err(|error| error.to_string())?
            {
                Opened::Archive(downloaded) => Read::Opened(downloaded),
                // Plaintext does not open either: the first answer (the key's) stands.
                Opened::Refused(_) => Read::Refused(refusal),
            }
        }
        _ => Read::Refused(refusal),
    })
}

async fn open_summary<S: ObjectStore>(
    store: &S,
    root: &ArchiveRoot,
    access: &ArchiveAccess,
    request: &ArchiveRequest,
) -> ArchiveOutcome {
    // Every row is read and indexed, as pitr-download reads it, so the windows are the
    // planner's answers.
    match read(store, root, access, &request.location).await {
        Ok(Read::Opened(downloaded)) => ArchiveOutcome::Covered(Box::new(summarize_read(
            &request.location.to_string(),
            &downloaded.archive,
            Some(&downloaded.history),
            &request.backups,
        ))),
        Ok(Read::Refused(refusal)) => ArchiveOutcome::Refused {
            token: refusal.token.as_str().to_owned(),
            message: refusal.message.clone(),
            remedy: refusal.remedy.to_owned(),
        },
        Ok(Read::Locked(error)) => ArchiveOutcome::Locked(error),
        Err(error) => ArchiveOutcome::Failed(error),
    }
}

/// Opens the archive of `request` (list and get only) and summarizes it.
pub async fn load(access: &ArchiveAccess, request: &ArchiveRequest) -> ArchiveOutcome {
    match open_store(access, &request.location).await {
        Ok(ArchiveStore::Fs(store, root)) => open_summary(&store, &root, access, request).await,
        Ok(ArchiveStore::S3(store, root)) => open_summary(&store, &root, access, request).await,
        Err(error) => ArchiveOutcome::Failed(error),
    }
}

pub mod plan;
pub mod workbench;

#[cfg(test)]
pub(crate) mod tests;
