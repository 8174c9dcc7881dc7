//! The archiver's pure core: from what one scan knows, the next actions.
//!
//! Inputs: the site's manifest, the sealed local files with their content ids, the archive
//! session's state, the role tracker's gate and pending records, and the history-integrity
//! verdict. Output: the actions in order. Only the writable primary uploads, only sealed files,
//! only after the archive is verified and the episode's promotion record is saved; a marked
//! site uploads nothing; records and the marker are written in any role once the archive is
//! verified.

use bloodraven_archive::ContentId;
use bloodraven_archive::manifest::{HistoryIntegrity, Manifest, Violation};

use super::episode::{PendingRecord, UploadGate};

/// A sealed local file and its identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalFile {
    /// The file name.
    pub name: String,
    /// Its content id; `None` when the manifest knows no row or record of this name (the file
    /// is new, so it is not hashed before its upload reads it).
    pub id: Option<ContentId>,
}

/// The history-integrity verdict of this scan.
#[derive(Debug, Clone, PartialEq)]
pub enum Integrity {
    /// Every setting is safe.
    Safe,
    /// A setting violates; persist this marker (unless one is already set).
    Violated { violation: Violation, detail: String },
    /// The check could not run (query error, privilege): uploads stop, no marker.
    Unknown(String),
}

/// What one scan may do.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanInput<'a> {
    /// The site's manifest as last read or saved.
    pub manifest: &'a Manifest,
    /// Sealed local files, oldest first.
    pub sealed: &'a [LocalFile],
    /// The archive is verified (descriptor created or checked).
    pub verified: bool,
    /// The role gate.
    pub gate: UploadGate,
    /// Records waiting to be saved.
    pub pending_records: &'a [PendingRecord],
    /// The integrity verdict.
    pub integrity: Integrity,
    /// Now (for the marker's `at`).
    pub now: jiff::Timestamp,
}

/// One action.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Persist the history-integrity marker (WARN archive history unsafe).
    PersistMarker(HistoryIntegrity),
    /// Append these records to the manifest, save and read back, then confirm them.
    SaveRecords(Vec<PendingRecord>),
    /// Upload this sealed file, then add its row (one manifest save per file).
    Upload { name: String, episode: u64 },
}

/// The plan: actions, and why uploads do not run (the `lastError`, empty when none).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// In order.
    pub actions: Vec<Action>,
    /// Why uploads are held (for `lastError`), when they are and it is an error.
    pub held: Option<String>,
    /// Sealed files neither archived nor retired.
    pub backlog: u64,
}

/// True when the file (name, id) is already live or retired in the manifest. Legacy retirement
/// records match by their `contentId`; names alone never suppress a file.
pub fn is_archived(manifest: &Manifest, file: &LocalFile) -> bool {
    let Some(id) = file.id else { return false };
    manifest.files.iter().any(|row| row.name == file.name && row.id == Some(id))
        || manifest.pruned.iter().any(|record| {
            record.name == file.name
                && (record.id == Some(id) || (record.id.is_none() && record.content_id == Some(id)))
        })
}

/// True when the manifest names `name` in a live row or a retirement record (then the local
/// file's content id is needed to tell a reused name from an archived file).
pub fn name_is_known(manifest: &Manifest, name: &str) -> bool {
    manifest.files.iter().any(|row| row.name == name)
        || manifest.pruned.iter().any(|record| record.name == name)
}

/// The pure core.
pub fn plan(input: &PlanInput<'_>) -> Plan {
    let todo: Vec<&LocalFile> =
        input.sealed.iter().filter(|file| !is_archived(input.manifest, file)).collect();
    let mut out = Plan { backlog: todo.len() as u64, ..Plan::default() };
    let marked = input.manifest.history_integrity.is_some();
    match &input.integrity {
        Integrity::Violated { violation, detail } => {
            if input.verified && !marked {
                out.actions.push(Action::PersistMarker(HistoryIntegrity {
                    violation: violation.clone(),
                    detail: detail.clone(),
                    at: input.now,
                    extra: Default::default(),
                }));
            }
            out.held = Some(format!("PITRArchiveUnsafeHistory: {detail}"));
        }
        Integrity::Unknown(cause) => out.held = Some(format!("history integrity: {cause}")),
        Integrity::Safe => {}
    }
    if !input.verified {
        return out;
    }
    if !input.pending_records.is_empty() {
        out.actions.push(Action::SaveRecords(input.pending_records.to_vec()));
    }
    if marked && out.held.is_none() {
        out.held = Some(
            "PITRArchiveUnsafeHistory: this site's history-integrity marker is set".to_owned(),
        );
    }
    if out.held.is_some() {
        return out;
    }
    // Records confirmed by this scan open the gate only on the next evaluation: the runner
    // re-plans after saving records.
    match &input.gate {
        UploadGate::Open { episode } if input.pending_records.is_empty() => {
            out.actions.extend(
                todo.into_iter()
                    .map(|file| Action::Upload { name: file.name.clone(), episode: *episode }),
            );
        }
        UploadGate::AwaitingRecord(text) => out.held = Some(text.clone()),
        UploadGate::Open { .. } | UploadGate::NotWritable | UploadGate::AwaitingReset => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use bloodraven_archive::manifest::{FileRow, RecordKind, RetirementRecord};
    use bloodraven_archive::{ArchiveId, ContentIdKey, Destination};
    use jiff::Timestamp;

    use super::*;

    fn archive_id() -> ArchiveId {
        let destination =
            Destination::Pvc { namespace: "ns".into(), claim: "c".into(), sub_path: String::new() };
        ArchiveId::derive("uid", &destination.normalize().unwrap())
    }

    fn file(name: &str, body: &str) -> LocalFile {
        LocalFile { name: name.into(), id: Some(ContentIdKey::Plain.content_id(body.as_bytes())) }
    }

    fn row(file: &LocalFile) -> FileRow {
        FileRow {
            name: file.name.clone(),
            id: file.id,
            key: String::new(),
            size: 0,
            previous_gtids: Default::default(),
            gtids: Default::default(),
            first_event_time: None,
            last_event_time: None,
            archived_at: None,
            gtid_coverage: None,
            divergent: false,
            quarantined: false,
            base_gtids: None,
            extra: Default::default(),
        }
    }

    fn input<'a>(
        manifest: &'a Manifest,
        sealed: &'a [LocalFile],
        gate: UploadGate,
    ) -> PlanInput<'a> {
        PlanInput {
            manifest,
            sealed,
            verified: true,
            gate,
            pending_records: &[],
            integrity: Integrity::Safe,
            now: Timestamp::UNIX_EPOCH,
        }
    }

    fn uploads(plan: &Plan) -> Vec<&str> {
        plan.actions
            .iter()
            .filter_map(|a| match a {
                Action::Upload { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_writable_primary_uploads_sealed_files_not_yet_archived_or_retired() {
        let mut manifest = Manifest::new(archive_id(), "a");
        let files =
            [file("binlog.000001", "1"), file("binlog.000002", "2"), file("binlog.000003", "3")];
        manifest.files.push(row(&files[1]));
        manifest.pruned.push(RetirementRecord {
            name: files[0].name.clone(),
            id: files[0].id,
            key: String::new(),
            previous_gtids: Default::default(),
            first_event_time: None,
            deleted: true,
            content_id: None,
            extra: Default::default(),
        });
        let plan = plan(&input(&manifest, &files, UploadGate::Open { episode: 1 }));
        assert_eq!(uploads(&plan), ["binlog.000003"]);
        assert_eq!(plan.backlog, 1);
        // A reused name with other bytes is eligible again.
        let reused = [file("binlog.000001", "other bytes")];
        let plan = super::plan(&input(&manifest, &reused, UploadGate::Open { episode: 1 }));
        assert_eq!(uploads(&plan), ["binlog.000001"]);
    }

    #[test]
    fn replicas_unverified_archives_and_unrecorded_episodes_upload_nothing() {
        let manifest = Manifest::new(archive_id(), "a");
        let files = [file("binlog.000001", "1")];
        assert!(uploads(&plan(&input(&manifest, &files, UploadGate::NotWritable))).is_empty());
        let mut unverified = input(&manifest, &files, UploadGate::Open { episode: 1 });
        unverified.verified = false;
        assert!(plan(&unverified).actions.is_empty());
        let waiting = plan(&input(
            &manifest,
            &files,
            UploadGate::AwaitingRecord("promotion record: x".into()),
        ));
        assert!(uploads(&waiting).is_empty());
        assert_eq!(waiting.held.as_deref(), Some("promotion record: x"));
    }

    #[test]
    fn a_violation_persists_the_marker_once_and_stops_uploads() {
        let mut manifest = Manifest::new(archive_id(), "a");
        let files = [file("binlog.000001", "1")];
        let mut violated = input(&manifest, &files, UploadGate::Open { episode: 1 });
        violated.integrity = Integrity::Violated {
            violation: Violation::BinlogFormat,
            detail: "binlog_format=MIXED".into(),
        };
        let first = plan(&violated);
        assert!(matches!(first.actions.as_slice(), [Action::PersistMarker(_)]));
        assert!(first.held.as_deref().unwrap().starts_with("PITRArchiveUnsafeHistory"));
        manifest.history_integrity = match &first.actions[0] {
            Action::PersistMarker(marker) => Some(marker.clone()),
            _ => None,
        };
        // Marked: no second marker, no uploads even when the setting is fixed.
        let fixed = plan(&input(&manifest, &files, UploadGate::Open { episode: 1 }));
        assert!(fixed.actions.is_empty());
        assert!(fixed.held.unwrap().starts_with("PITRArchiveUnsafeHistory"));
    }

    #[test]
    fn pending_records_are_saved_before_any_upload() {
        let manifest = Manifest::new(archive_id(), "a");
        let files = [file("binlog.000001", "1")];
        let record = PendingRecord {
            episode: 1,
            record: bloodraven_archive::PromotionRecord {
                kind: RecordKind::Promotion,
                server_uuid: "3e11fa47-71ca-11e1-9e33-c80aa9429562".parse().unwrap(),
                server_id: 1,
                gtid_executed: Default::default(),
                observed_at: Timestamp::UNIX_EPOCH,
                probe_interval: None,
                read_only_gtid_executed: None,
                extra: Default::default(),
            },
        };
        let records = [record];
        let mut with_records = input(&manifest, &files, UploadGate::Open { episode: 1 });
        with_records.pending_records = &records;
        let plan = plan(&with_records);
        assert!(matches!(plan.actions.as_slice(), [Action::SaveRecords(_)]));
    }
}
