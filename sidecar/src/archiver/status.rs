//! `/archiver/status`: the value the HTTP layer serves (spec: "Archiver status").
//!
//! `{enabled, storeReady, primary, lastScanAt, filesArchived, lastError, storageType,
//! manifestPrefix, site, uploadFailures, consecutiveFailedScans, archive{destination, archiveID,
//! encryptionMode, state, reason, keyRevision}, promotionRecordedAt, historyIntegrity,
//! divergentRows, quarantinedRows}`.

use bloodraven_archive::manifest::HistoryIntegrity;
use serde::Serialize;

/// The archive session's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub enum ArchiveState {
    /// No descriptor yet and this site may not create it (not the writable primary).
    #[default]
    AwaitingDescriptor,
    /// The descriptor exists and verifies.
    Verified,
    /// The archive is refused (the reason says why).
    Refused,
}

/// `archive{…}` of the status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveIdentityStatus {
    /// The normalized destination.
    pub destination: String,
    /// The archive ID this sidecar was given.
    #[serde(rename = "archiveID")]
    pub archive_id: String,
    /// `None` or `Passphrase`.
    pub encryption_mode: String,
    /// `AwaitingDescriptor`, `Verified` or `Refused`.
    pub state: ArchiveState,
    /// The `PITRArchiveReady` reason when refused (`ArchiveForeign`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The key revision (encrypted profiles).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_revision: Option<String>,
}

/// The archiver's status.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ArchiverStatus {
    /// PITR is configured on this pod.
    pub enabled: bool,
    /// The archive store could be built.
    pub store_ready: bool,
    /// The server is the writable primary (the last role probe).
    pub primary: bool,
    /// When the last scan finished (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_scan_at: Option<String>,
    /// Live rows in the site's manifest.
    pub files_archived: u64,
    /// The last error; a refusal starts with its token. Empty when the last scan succeeded.
    pub last_error: String,
    /// `S3` or `PVC`.
    pub storage_type: String,
    /// Where the manifests live (`<prefix>/binlogs/`).
    pub manifest_prefix: String,
    /// This site.
    pub site: String,
    /// Failed upload attempts since start (also failed store inits).
    pub upload_failures: u64,
    /// Scans in a row that ended with an error.
    pub consecutive_failed_scans: u64,
    /// The archive identity.
    pub archive: ArchiveIdentityStatus,
    /// When this episode's promotion record was saved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub promotion_recorded_at: Option<String>,
    /// The persisted marker, or absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_integrity: Option<HistoryIntegrity>,
    /// Divergent rows in the site's own manifest.
    pub divergent_rows: u64,
    /// Quarantined rows in the site's own manifest.
    pub quarantined_rows: u64,
    /// Sealed local files not archived yet (and not retired).
    pub backlog: u64,
    /// Why retention did not retire anything at its last run, when it deferred.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention_deferred_reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_are_the_specs() {
        let status = ArchiverStatus { enabled: true, ..Default::default() };
        let json = serde_json::to_value(&status).unwrap();
        for field in [
            "enabled",
            "storeReady",
            "primary",
            "filesArchived",
            "lastError",
            "storageType",
            "manifestPrefix",
            "site",
            "uploadFailures",
            "consecutiveFailedScans",
            "divergentRows",
            "quarantinedRows",
        ] {
            assert!(json.get(field).is_some(), "{field} missing in {json}");
        }
        let archive = &json["archive"];
        for field in ["destination", "archiveID", "encryptionMode", "state"] {
            assert!(archive.get(field).is_some(), "archive.{field} missing in {json}");
        }
        assert_eq!(archive["state"], "AwaitingDescriptor");
    }
}
