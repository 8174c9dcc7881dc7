//! The IO around the pure core: one [`Archiver`] per sidecar, driven by scans.
//!
//! A scan: history-integrity check → archive session (create or verify the descriptor) → the
//! site's manifest → [`plan`](super::plan::plan) → records, marker and uploads (one object
//! write, then one manifest save per file, the descriptor re-read before every save) →
//! retention when due → status. Archive writes and cleanup are serialized in the scan; the
//! role sampler ([`sample`], [`run_sampler`]) runs beside it and only updates the tracker.
//!
//! Crash safety: an object is written before the manifest row that names it; objects are
//! content-addressed (`<site>/<name>.<id>`), so a crash between the two leaves an unlisted
//! object that the next scan writes again (same key, same bytes) and lists once. Retirement is
//! two manifest writes; a pending delete is retried by every sweep, also when the object is
//! already gone.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bloodraven_archive::envelope::{EnvelopeError, SealRandom, seal_binlog_object};
use bloodraven_archive::manifest::{FileRow, Manifest};
use bloodraven_archive::refusal::Refusal;
use bloodraven_archive::{ContentIdKey, NormalizedDestination, format_timestamp};
use bloodraven_crashpoint::Step;
use bloodraven_store::{ArchiveRoot, ObjectStore};
use jiff::Timestamp;

use super::episode::{Observation, PendingRecord, Probe, RoleTracker, UploadGate};
use super::integrity::{self, IntegritySettings};
use super::local::{IdentityCache, LocalBinlogs, LocalError, row_for};
use super::mysql::{QueryError, Server};
use super::plan::{Action, Integrity, LocalFile, PlanInput, name_is_known, plan};
use super::retention::{CutoffReply, CutoffSource, eligible};
use super::session::{self, Established, SessionError, WriterIdentity};
use super::status::{ArchiveIdentityStatus, ArchiveState, ArchiverStatus};

/// Static settings of one archiver.
#[derive(Debug, Clone)]
pub struct ArchiverConfig {
    /// Who writes (group, archive ID, key, site).
    pub identity: WriterIdentity,
    /// The normalized destination (for status).
    pub destination: NormalizedDestination,
    /// The archive root inside the store.
    pub root: ArchiveRoot,
    /// `S3` or `PVC`.
    pub storage_type: String,
    /// `PEER_CHECK_INTERVAL` (role probe period and the records' probeInterval floor).
    pub probe_interval: Duration,
    /// How often retention runs (default one hour).
    pub retention_interval: Duration,
    /// The key revision (encrypted profiles), for status.
    pub key_revision: Option<String>,
}

/// Why a scan ended early (also reported in `lastError`).
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The archive session failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The local binlogs could not be read.
    #[error(transparent)]
    Local(#[from] LocalError),
    /// A row could not be built.
    #[error("archive row: {0}")]
    Row(#[from] bloodraven_archive::Error),
    /// A binlog could not be sealed (encrypted archives).
    #[error("sealing the archive object: {0}")]
    Seal(#[from] EnvelopeError),
    /// The kernel gave no randomness for an envelope.
    #[error("drawing the envelope's salt and nonce from the kernel: {0}")]
    Random(std::io::Error),
}

/// A fresh salt and nonce prefix for one envelope, from `getrandom(2)`.
fn kernel_random() -> std::io::Result<SealRandom> {
    let mut bytes = [0u8; SealRandom::LEN];
    bloodraven_store::random::fill(&mut bytes)?;
    Ok(SealRandom::from_bytes(bytes))
}

/// What one scan did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Files uploaded and listed by this scan.
    pub uploaded: Vec<String>,
    /// Records saved by this scan.
    pub records_saved: usize,
    /// Rows retired (first write) by this scan.
    pub retired: Vec<String>,
    /// Pending deletes acknowledged by this scan.
    pub deleted: Vec<String>,
}

/// The shared role tracker.
pub type SharedTracker = Arc<Mutex<RoleTracker>>;
/// The shared status the HTTP layer serves.
pub type SharedStatus = Arc<Mutex<ArchiverStatus>>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One role probe: queries the server, times it on the sidecar clock and feeds the tracker.
pub async fn sample<S: Server>(server: &S, tracker: &Mutex<RoleTracker>) {
    let started_at = Timestamp::now();
    let outcome = server.role().await;
    let returned_at = Timestamp::now();
    let probe = match outcome {
        Ok(row) => Probe::Observed(Observation {
            read_only: row.read_only,
            server_uuid: row.server_uuid,
            server_id: row.server_id,
            gtid_executed: row.gtid_executed,
            started_at,
            returned_at,
        }),
        Err(error) => {
            tracing::debug!(%error, "role probe failed");
            Probe::Failed { at: returned_at }
        }
    };
    lock(tracker).observe(probe);
}

/// Probes every `interval` until `stop` resolves.
pub async fn run_sampler<S: Server>(
    server: S,
    tracker: SharedTracker,
    interval: Duration,
    stop: impl Future<Output = ()>,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            _ = ticker.tick() => sample(&server, &tracker).await,
        }
    }
}

/// The archiver (see the module docs).
pub struct Archiver<S, C> {
    store: S,
    config: ArchiverConfig,
    local: LocalBinlogs,
    cutoff: C,
    tracker: SharedTracker,
    status: SharedStatus,
    content_key: ContentIdKey,
    descriptor: Option<Vec<u8>>,
    manifest: Option<Manifest>,
    cache: IdentityCache,
    last_retention: Option<Timestamp>,
}

impl<S: ObjectStore, C: CutoffSource> Archiver<S, C> {
    /// An archiver. Reads the descriptor and the site's manifest when they exist, so the role
    /// tracker compares its first observation with the site's latest record.
    pub async fn open(store: S, config: ArchiverConfig, local: LocalBinlogs, cutoff: C) -> Self {
        let content_key = config.identity.key.content_id_key();
        let status = ArchiverStatus {
            enabled: true,
            store_ready: true,
            storage_type: config.storage_type.clone(),
            manifest_prefix: format!("{}/", config.root.as_str()),
            site: config.identity.site.clone(),
            archive: ArchiveIdentityStatus {
                destination: config.destination.to_string(),
                archive_id: config.identity.archive_id.to_string(),
                encryption_mode: match config.identity.key {
                    bloodraven_archive::reader::ReaderKey::None => "None".to_owned(),
                    bloodraven_archive::reader::ReaderKey::Passphrase { .. } => {
                        "Passphrase".to_owned()
                    }
                },
                key_revision: config.key_revision.clone(),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut archiver = Archiver {
            tracker: Arc::new(Mutex::new(RoleTracker::new(config.probe_interval, None))),
            store,
            config,
            local,
            cutoff,
            status: Arc::new(Mutex::new(status)),
            content_key,
            descriptor: None,
            manifest: None,
            cache: IdentityCache::default(),
            last_retention: None,
        };
        if let Ok(Established::Verified { bytes, .. }) = session::establish(
            &archiver.store,
            &archiver.config.root,
            &archiver.config.identity,
            false,
            Timestamp::now(),
        )
        .await
        {
            archiver.descriptor = Some(bytes);
            if let Ok(manifest) = session::load_manifest(
                &archiver.store,
                &archiver.config.root,
                &archiver.config.identity,
            )
            .await
            {
                lock(&archiver.tracker).set_site_latest(manifest.promotions.last().cloned());
                archiver.manifest = Some(manifest);
            }
        }
        archiver
    }

    /// The role tracker, for [`run_sampler`].
    pub fn tracker(&self) -> SharedTracker {
        Arc::clone(&self.tracker)
    }

    /// The status the HTTP layer serves.
    pub fn status_handle(&self) -> SharedStatus {
        Arc::clone(&self.status)
    }

    /// A copy of the status.
    pub fn status(&self) -> ArchiverStatus {
        lock(&self.status).clone()
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The site's manifest as last read or saved.
    pub fn manifest(&self) -> Option<&Manifest> {
        self.manifest.as_ref()
    }

    /// One scan at `now` (the sidecar clock; tests pass their own), with this scan's integrity
    /// settings (or the query error).
    pub async fn scan(
        &mut self,
        integrity: Result<IntegritySettings, QueryError>,
        now: Timestamp,
    ) -> Result<ScanReport, ScanError> {
        let mut report = ScanReport::default();
        let result = self.scan_inner(integrity, now, &mut report).await;
        let mut status = lock(&self.status);
        status.last_scan_at = Some(format_timestamp(now));
        status.primary = lock(&self.tracker).episode().is_some();
        if let Some(manifest) = &self.manifest {
            status.files_archived = manifest.files.len() as u64;
            status.divergent_rows = manifest.files.iter().filter(|r| r.divergent).count() as u64;
            status.quarantined_rows =
                manifest.files.iter().filter(|r| r.quarantined).count() as u64;
            status.history_integrity = manifest.history_integrity.clone();
        }
        match &result {
            Ok(held) => {
                status.consecutive_failed_scans = 0;
                status.last_error = held.clone().unwrap_or_default();
            }
            Err(error) => {
                status.consecutive_failed_scans += 1;
                status.last_error = error.to_string();
                if let ScanError::Session(SessionError::Refused(refusal)) = error {
                    status.archive.state = ArchiveState::Refused;
                    status.archive.reason = Some(refusal.token.reason().to_owned());
                }
                tracing::warn!(site = %self.config.identity.site, %error, "archiver scan failed");
            }
        }
        drop(status);
        result.map(|_| report)
    }

    /// The scan; `Ok(Some(text))` when uploads are held for a reason worth `lastError`.
    async fn scan_inner(
        &mut self,
        integrity: Result<IntegritySettings, QueryError>,
        now: Timestamp,
        report: &mut ScanReport,
    ) -> Result<Option<String>, ScanError> {
        let verdict = match integrity {
            Ok(settings) => match integrity::check(&settings) {
                None => Integrity::Safe,
                Some((violation, detail)) => Integrity::Violated { violation, detail },
            },
            Err(error) => Integrity::Unknown(error.to_string()),
        };
        let writable = lock(&self.tracker).episode().is_some();
        if self.descriptor.is_none() {
            match session::establish(
                &self.store,
                &self.config.root,
                &self.config.identity,
                writable,
                now,
            )
            .await?
            {
                Established::Verified { bytes, .. } => self.descriptor = Some(bytes),
                Established::AwaitingDescriptor => {
                    lock(&self.status).archive.state = ArchiveState::AwaitingDescriptor;
                    return Ok(match verdict {
                        Integrity::Violated { detail, .. } => {
                            Some(format!("PITRArchiveUnsafeHistory: {detail}"))
                        }
                        Integrity::Unknown(cause) => Some(format!("history integrity: {cause}")),
                        Integrity::Safe => None,
                    });
                }
            }
        }
        {
            let mut status = lock(&self.status);
            status.archive.state = ArchiveState::Verified;
            status.archive.reason = None;
        }
        if self.manifest.is_none() {
            self.manifest = Some(
                session::load_manifest(&self.store, &self.config.root, &self.config.identity)
                    .await?,
            );
        }
        let sealed = self.sealed_files()?;
        let mut held = None;
        // At most two rounds: records saved in the first open the gate for the second.
        for _round in 0..2 {
            let (gate, pending) = {
                let tracker = lock(&self.tracker);
                (tracker.gate(), tracker.pending())
            };
            let manifest = self
                .manifest
                .as_ref()
                .ok_or_else(|| SessionError::ReadBack { what: "manifest".to_owned() })?;
            let planned = plan(&PlanInput {
                manifest,
                sealed: &sealed,
                verified: true,
                gate,
                pending_records: &pending,
                integrity: verdict.clone(),
                now,
            });
            lock(&self.status).backlog = planned.backlog;
            held = planned.held.clone();
            let mut saved_records = false;
            for action in planned.actions {
                match action {
                    Action::PersistMarker(marker) => {
                        tracing::warn!(violation = ?marker.violation, detail = %marker.detail, "archive history unsafe");
                        self.edit_and_save(|m| m.history_integrity = Some(marker.clone())).await?;
                    }
                    Action::SaveRecords(records) => {
                        self.save_records(&records, now).await?;
                        report.records_saved += records.len();
                        saved_records = true;
                    }
                    Action::Upload { name, episode } => {
                        if !self.upload(&name, episode, now).await? {
                            break;
                        }
                        report.uploaded.push(name);
                    }
                }
            }
            if !saved_records {
                break;
            }
        }
        self.retention_if_due(now, report).await?;
        Ok(held)
    }

    fn sealed_files(&mut self) -> Result<Vec<LocalFile>, ScanError> {
        let names = self.local.sealed()?;
        let mut files = Vec::with_capacity(names.len());
        for name in names {
            let known = self.manifest.as_ref().is_some_and(|m| name_is_known(m, &name));
            let id = if known {
                Some(self.local.identity(&name, &self.content_key, &mut self.cache)?)
            } else {
                None
            };
            files.push(LocalFile { name, id });
        }
        Ok(files)
    }

    /// Applies `edit` to the manifest and saves it (descriptor re-read first). On a failed
    /// save the cached manifest is dropped so the next scan re-reads the stored one.
    async fn edit_and_save(&mut self, edit: impl FnOnce(&mut Manifest)) -> Result<(), ScanError> {
        let verified = self.descriptor.clone().unwrap_or_default();
        if let Err(error) =
            session::recheck(&self.store, &self.config.root, &self.config.identity, &verified).await
        {
            self.forget_session_on_refusal(&error);
            return Err(error.into());
        }
        let Some(manifest) = self.manifest.as_mut() else {
            return Err(SessionError::ReadBack { what: "manifest".to_owned() }.into());
        };
        edit(manifest);
        if let Err(error) = session::save_manifest(&self.store, &self.config.root, manifest).await {
            self.manifest = None;
            return Err(error.into());
        }
        Ok(())
    }

    fn forget_session_on_refusal(&mut self, error: &SessionError) {
        if matches!(error, SessionError::Refused(_)) {
            self.descriptor = None;
        }
    }

    async fn save_records(
        &mut self,
        records: &[PendingRecord],
        now: Timestamp,
    ) -> Result<(), ScanError> {
        let list = records.to_vec();
        self.edit_and_save(|manifest| {
            for pending in &list {
                manifest.push_record(pending.record.clone());
            }
        })
        .await
        .map_err(|error| match error {
            ScanError::Session(SessionError::Store(e)) => {
                ScanError::Session(SessionError::ReadBack {
                    what: format!("promotion record: {e}"),
                })
            }
            other => other,
        })?;
        let mut tracker = lock(&self.tracker);
        for pending in records {
            tracker.confirm(pending);
            if pending.episode == 0 {
                tracing::warn!(server_uuid = %pending.record.server_uuid, "server incarnation reset recorded");
            } else {
                tracing::info!(server_uuid = %pending.record.server_uuid, episode = pending.episode, "promotion recorded");
                lock(&self.status).promotion_recorded_at = Some(format_timestamp(now));
            }
        }
        Ok(())
    }

    /// Uploads one file and lists it. `Ok(false)` when the episode ended mid-scan (nothing more
    /// is written this scan).
    async fn upload(
        &mut self,
        name: &str,
        episode: u64,
        now: Timestamp,
    ) -> Result<bool, ScanError> {
        let still_open = || lock(&self.tracker).gate() == UploadGate::Open { episode };
        if !still_open() {
            return Ok(false);
        }
        let file = self.local.read(name, &self.content_key)?;
        let summary = bloodraven_binlog::scan(&file.bytes);
        let row: FileRow = row_for(&self.config.identity.site, &file, &summary, now)?;
        let key = self.config.root.key(&row.key);
        let size = file.bytes.len();
        // Encrypted archives store the BRV1 envelope, bound to the archive and this key; the
        // row (size, content id, coverage) describes the plaintext.
        let identity = &self.config.identity;
        let body = seal_binlog_object(
            &identity.key,
            &identity.archive_id,
            &row.key,
            file.bytes,
            kernel_random,
        )
        .map_err(ScanError::Random)??;
        if let Err(error) = self.store.put(&key, body).await {
            lock(&self.status).upload_failures += 1;
            return Err(SessionError::Store(error).into());
        }
        bloodraven_crashpoint::hit(Step::SidecarArchiveAfterObjectWrite);
        if !still_open() {
            tracing::info!(
                file = name,
                "writable episode ended mid-scan; the row waits for the next episode"
            );
            return Ok(false);
        }
        self.edit_and_save(|manifest| {
            let _ = manifest.upsert_file(row);
        })
        .await
        .inspect_err(|_| lock(&self.status).upload_failures += 1)?;
        bloodraven_crashpoint::hit(Step::SidecarArchiveAfterManifestWrite);
        tracing::info!(file = name, key = %key, size, "binlog archived");
        Ok(true)
    }

    async fn retention_if_due(
        &mut self,
        now: Timestamp,
        report: &mut ScanReport,
    ) -> Result<(), ScanError> {
        let interval =
            jiff::SignedDuration::try_from(self.config.retention_interval).unwrap_or_default();
        if self.last_retention.is_some_and(|last| now.duration_since(last) < interval) {
            return Ok(());
        }
        self.last_retention = Some(now);
        self.retain(now, report).await
    }

    /// One retention sweep: pending deletes first, then a fresh proof and the two writes.
    pub async fn retain(
        &mut self,
        now: Timestamp,
        report: &mut ScanReport,
    ) -> Result<(), ScanError> {
        self.finish_pending_deletes(report).await?;
        let reply = match self.cutoff.fetch().await {
            Ok(reply) => reply,
            Err(error) => {
                tracing::warn!(%error, "retention deferred");
                lock(&self.status).retention_deferred_reason = Some(error.to_string());
                return Ok(());
            }
        };
        let proof = match reply {
            CutoffReply::Proof(proof) => proof,
            CutoffReply::Deferred(reason) => {
                tracing::info!(%reason, "retention deferred");
                lock(&self.status).retention_deferred_reason = Some(reason);
                return Ok(());
            }
        };
        let Some(manifest) = self.manifest.as_ref() else { return Ok(()) };
        let selected = match eligible(manifest, &proof, &self.config.identity.archive_id, now) {
            Ok(selected) => selected,
            Err(deferral) => {
                tracing::info!(%deferral, "retention deferred");
                lock(&self.status).retention_deferred_reason = Some(deferral.to_string());
                return Ok(());
            }
        };
        lock(&self.status).retention_deferred_reason = None;
        if selected.is_empty() {
            return Ok(());
        }
        // First write: rows move to `pruned` with deleted: false.
        let chosen = selected.clone();
        self.edit_and_save(|manifest| {
            let _ =
                manifest.retire(|row| chosen.iter().any(|(n, id)| *n == row.name && *id == row.id));
        })
        .await?;
        // Crash point 1 of 2: the rows are pruned (deleted: false), no object deleted yet.
        bloodraven_crashpoint::hit(Step::SidecarRetireBetweenWrites);
        report.retired.extend(selected.iter().map(|(name, _)| name.clone()));
        self.finish_pending_deletes(report).await
    }

    /// Deletes the objects of pending retirement records and acknowledges them (second write).
    async fn finish_pending_deletes(&mut self, report: &mut ScanReport) -> Result<(), ScanError> {
        let Some(manifest) = self.manifest.as_ref() else { return Ok(()) };
        let site = manifest.site.clone();
        let pending: Vec<(String, Option<bloodraven_archive::ContentId>)> = manifest
            .pruned
            .iter()
            .filter(|record| !record.deleted)
            .map(|record| (record.name.clone(), record.id))
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        let live_keys: Vec<String> =
            manifest.files.iter().filter_map(|row| row.object_key(&site).ok()).collect();
        let verified = self.descriptor.clone().unwrap_or_default();
        let mut done = Vec::new();
        for (name, id) in pending {
            // The delete target is rebuilt from the trusted site and the validated name and id.
            let relative = match id {
                Some(id) => bloodraven_archive::ident::object_key(&site, &name, &id)?,
                None => format!("{site}/{name}"),
            };
            if live_keys.contains(&relative) {
                continue;
            }
            session::recheck(&self.store, &self.config.root, &self.config.identity, &verified)
                .await?;
            match self.store.delete(&self.config.root.key(&relative)).await {
                Ok(()) => done.push((name, id)),
                Err(error) => {
                    tracing::warn!(%error, file = %name, "retention delete failed; retried next sweep")
                }
            }
        }
        if done.is_empty() {
            return Ok(());
        }
        // Crash point 2 of 2: the objects are deleted, the records not yet acknowledged.
        bloodraven_crashpoint::hit(Step::SidecarRetireBetweenWrites);
        let acknowledged = done.clone();
        self.edit_and_save(|manifest| {
            for (name, id) in &acknowledged {
                manifest.acknowledge_deleted(name, id.as_ref());
            }
        })
        .await?;
        report.deleted.extend(done.into_iter().map(|(name, _)| name));
        Ok(())
    }
}

/// A refusal as `lastError` text (`<token>: <message>; <remedy>`).
pub fn last_error(refusal: &Refusal) -> String {
    refusal.to_string()
}
