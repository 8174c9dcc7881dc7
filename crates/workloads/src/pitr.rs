//! The resolved PITR render of a group: which profile's storage holds the archive, its
//! normalized destination and archive ID (backup-and-restore document, "PITR archive
//! identity"), and what the sidecar container gets for it (environment, credentials, the PVC
//! archive volume). The operator's `/pitr-cutoff` checks callers' `archive=` against
//! [`PitrRender::archive_id`], so the sidecar and the operator derive the ID with the same code.

use bloodraven_archive::{ArchiveId, Destination, NormalizedDestination};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::{BackupProfile, StorageType};

use crate::error::WorkloadError;
use crate::names;

/// `None` or `Passphrase` (`BLOODRAVEN_PITR_ENCRYPTION_MODE`).
pub const MODE_NONE: &str = "None";
/// See [`MODE_NONE`].
pub const MODE_PASSPHRASE: &str = "Passphrase";

/// The archive's storage, resolved from the PITR profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PitrStorage {
    /// S3: the credentials Secret (AWS keys) and the region, when the profile names them.
    S3 { credentials_secret: Option<String>, region: Option<String> },
    /// PVC: the claim mounted at [`crate::sidecar_env::PVC_MOUNT_PATH`].
    Pvc { claim: String },
}

/// The passphrase of an encrypted profile: the Secret key the sidecar's key file comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PitrEncryption {
    /// `encryption.passphraseSecretKeyRef.name`.
    pub secret: String,
    /// `encryption.passphraseSecretKeyRef.key`.
    pub key: String,
    /// `encryption.algorithm` (default and only value `AES-256-GCM`).
    pub algorithm: String,
}

/// The only algorithm (`encryption.algorithm`'s default).
pub const ALGORITHM_AES_256_GCM: &str = "AES-256-GCM";

/// The group's PITR render, when PITR is enabled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PitrRender {
    /// `spec.backup.pitr.profileName`.
    pub profile: String,
    /// The profile's storage as the archive sees it.
    pub destination: Destination,
    /// Its normalized text (`status.pitr.archive.destination`).
    pub normalized: NormalizedDestination,
    /// Derived from the group's UID and [`Self::normalized`].
    pub archive_id: ArchiveId,
    /// The group's `metadata.uid`.
    pub group_uid: String,
    /// [`MODE_NONE`] or [`MODE_PASSPHRASE`].
    pub encryption_mode: &'static str,
    /// The passphrase Secret key when [`Self::encryption_mode`] is [`MODE_PASSPHRASE`].
    pub encryption: Option<PitrEncryption>,
    /// Where the objects go and the credentials to reach them.
    pub storage: PitrStorage,
    /// `archivePollInterval` as written (Go duration), when set.
    pub poll_interval: Option<String>,
}

impl PitrRender {
    /// A stable one-line text of everything that, changed, must roll the pods (the pod
    /// template's `pitr-render` annotation).
    pub fn summary(&self) -> String {
        let storage = match &self.storage {
            PitrStorage::S3 { credentials_secret, region } => format!(
                "s3 secret={} region={}",
                credentials_secret.as_deref().unwrap_or(""),
                region.as_deref().unwrap_or("")
            ),
            PitrStorage::Pvc { claim } => format!("pvc claim={claim}"),
        };
        // The key's source is part of the render: pointing the profile at another Secret (or
        // key) rolls the pods so the sidecars mount it.
        let key = match &self.encryption {
            Some(encryption) => format!(
                " algorithm={} key={}/{}",
                encryption.algorithm, encryption.secret, encryption.key
            ),
            None => String::new(),
        };
        format!(
            "enabled destination={} archive={} encryption={}{key} {storage} poll={}",
            self.normalized,
            self.archive_id,
            self.encryption_mode,
            self.poll_interval.as_deref().unwrap_or("")
        )
    }
}

fn profile<'a>(
    group: &'a MysqlFailoverGroup,
    name: &str,
) -> Result<&'a BackupProfile, WorkloadError> {
    group
        .spec
        .backup
        .as_ref()
        .and_then(|backup| backup.profiles.iter().find(|profile| profile.name == name))
        .ok_or_else(|| WorkloadError::UnknownPitrProfile { profile: name.to_owned() })
}

/// The claim a PVC profile writes to: `claimName`, or the provisioned
/// `mysql-<group>-backup-<profile>`.
pub fn profile_claim(group_name: &str, profile: &BackupProfile) -> Option<String> {
    let pvc = profile.storage.pvc.as_ref()?;
    Some(match &pvc.claim_name {
        Some(claim) => claim.clone(),
        None => names::bounded(format!("mysql-{group_name}-backup-{}", profile.name)),
    })
}

/// The group's PITR render: `Ok(None)` when `spec.backup.pitr.enabled` is not true.
///
/// # Errors
/// PITR enabled without a profile, an unknown profile, a profile whose storage does not match
/// its type, a destination that does not normalize, or a group without `metadata.uid`.
pub fn render(group: &MysqlFailoverGroup) -> Result<Option<PitrRender>, WorkloadError> {
    let Some(pitr) = group.spec.backup.as_ref().and_then(|backup| backup.pitr.as_ref()) else {
        return Ok(None);
    };
    if pitr.enabled != Some(true) {
        return Ok(None);
    }
    let name = pitr
        .profile_name
        .clone()
        .ok_or(WorkloadError::UnknownPitrProfile { profile: String::new() })?;
    let profile = profile(group, &name)?;
    let group_name =
        group.metadata.name.clone().ok_or(WorkloadError::MissingMetadata { field: "name" })?;
    let namespace = group
        .metadata
        .namespace
        .clone()
        .ok_or(WorkloadError::MissingMetadata { field: "namespace" })?;
    let group_uid =
        group.metadata.uid.clone().ok_or(WorkloadError::MissingMetadata { field: "uid" })?;
    let mismatch = || WorkloadError::PitrStorage {
        profile: name.clone(),
        reason: "storage.type does not match the block set (s3 or pvc)".to_owned(),
    };
    let (destination, storage) = match &profile.storage.type_ {
        StorageType::Pvc => {
            let pvc = profile.storage.pvc.as_ref().ok_or_else(mismatch)?;
            let claim = profile_claim(&group_name, profile).ok_or_else(mismatch)?;
            (
                Destination::Pvc {
                    namespace,
                    claim: claim.clone(),
                    sub_path: pvc.sub_path.clone().unwrap_or_default(),
                },
                PitrStorage::Pvc { claim },
            )
        }
        StorageType::S3 => {
            let s3 = profile.storage.s3.as_ref().ok_or_else(mismatch)?;
            (
                Destination::S3 {
                    bucket: s3.bucket.clone(),
                    prefix: s3.prefix.clone().unwrap_or_default(),
                    endpoint: s3.endpoint_url.clone().unwrap_or_default(),
                },
                PitrStorage::S3 {
                    credentials_secret: s3.credentials_secret_name.clone(),
                    region: s3.region.clone(),
                },
            )
        }
        StorageType::Unrecognized(other) => {
            return Err(WorkloadError::PitrStorage {
                profile: name.clone(),
                reason: format!("storage.type {other:?} is neither S3 nor PVC"),
            });
        }
    };
    let normalized = destination
        .normalize()
        .map_err(|e| WorkloadError::PitrStorage { profile: name.clone(), reason: e.to_string() })?;
    Ok(Some(PitrRender {
        profile: name,
        archive_id: ArchiveId::derive(&group_uid, &normalized),
        destination,
        normalized,
        group_uid,
        encryption_mode: if profile.encryption.is_some() { MODE_PASSPHRASE } else { MODE_NONE },
        encryption: profile.encryption.as_ref().map(|encryption| PitrEncryption {
            secret: encryption.passphrase_secret_key_ref.name.clone(),
            key: encryption.passphrase_secret_key_ref.key.clone(),
            algorithm: encryption
                .algorithm
                .clone()
                .unwrap_or_else(|| ALGORITHM_AES_256_GCM.to_owned()),
        }),
        storage,
        poll_interval: pitr
            .archive_poll_interval
            .as_ref()
            .map(|interval| interval.as_str().to_owned()),
    }))
}
