//! `binlogs/archive.json`: the write-once, plaintext archive identity.

use std::fmt;
use std::str::FromStr;

use data_encoding::BASE32_NOPAD;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::destination::{NormalizedDestination, is_dns_label, is_dns_subdomain};
use crate::{Error, Result};

/// `kind` of every descriptor.
pub const DESCRIPTOR_KIND: &str = "BloodravenPITRArchive";
/// The descriptor version this release writes and reads.
pub const DESCRIPTOR_VERSION: u64 = 1;
/// A descriptor larger than this is damaged.
pub const DESCRIPTOR_MAX_BYTES: usize = 64 * 1024;
/// The algorithm of `Passphrase` archives in this release.
pub const ALGORITHM_AES_256_GCM: &str = "AES-256-GCM";
/// The domain of the archive ID derivation.
pub const ARCHIVE_ID_DOMAIN: &[u8] = b"bloodraven/pitr/archive-id/v1\0";

/// `ar1-` followed by 26 lowercase base32 characters (`[a-z2-7]`).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ArchiveId(String);

impl ArchiveId {
    /// Derives the archive ID of a group (its `metadata.uid`) at a normalized destination:
    /// `ar1-` + base32 (RFC 4648, lowercase, unpadded) of the first 16 bytes of
    /// `SHA-256(ARCHIVE_ID_DOMAIN || uid || 0x00 || destination)`.
    pub fn derive(group_uid: &str, destination: &NormalizedDestination) -> ArchiveId {
        let mut hasher = Sha256::new();
        hasher.update(ARCHIVE_ID_DOMAIN);
        hasher.update(group_uid.as_bytes());
        hasher.update([0u8]);
        hasher.update(destination.as_str().as_bytes());
        let digest = hasher.finalize();
        let encoded = BASE32_NOPAD.encode(&digest[..16]).to_ascii_lowercase();
        ArchiveId(format!("ar1-{encoded}"))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ArchiveId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ArchiveId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArchiveId({})", self.0)
    }
}

impl FromStr for ArchiveId {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let bad = |offset| Error::InvalidArchiveId { text: text.to_owned(), offset };
        let Some(rest) = text.strip_prefix("ar1-") else {
            let matching = text.bytes().zip("ar1-".bytes()).take_while(|(a, b)| a == b).count();
            return Err(bad(matching));
        };
        if let Some(offset) =
            rest.bytes().position(|b| !(b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b)))
        {
            return Err(bad(offset + 4));
        }
        if rest.len() != 26 {
            return Err(bad(text.len().min(30)));
        }
        Ok(ArchiveId(text.to_owned()))
    }
}

impl Serialize for ArchiveId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ArchiveId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The group the archive belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRef {
    /// The group's namespace.
    pub namespace: String,
    /// The group's name.
    pub name: String,
    /// The group's `metadata.uid`.
    pub uid: String,
}

/// The encryption mode of an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EncryptionMode {
    /// Plaintext objects.
    None,
    /// Objects encrypted with a key derived from a passphrase.
    Passphrase,
}

impl fmt::Display for EncryptionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EncryptionMode::None => "None",
            EncryptionMode::Passphrase => "Passphrase",
        })
    }
}

/// The archive's encryption identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Encryption {
    /// `None` or `Passphrase`.
    pub mode: EncryptionMode,
    /// The algorithm (`AES-256-GCM`); empty for `None`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub algorithm: String,
    /// For `Passphrase`: proves a passphrase without decrypting anything (43 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_check: Option<String>,
}

impl Encryption {
    /// A plaintext archive.
    pub fn none() -> Self {
        Encryption { mode: EncryptionMode::None, algorithm: String::new(), key_check: None }
    }

    /// A passphrase archive with the current algorithm and the key check for `archive_id`.
    pub fn passphrase(passphrase: &[u8], archive_id: &ArchiveId) -> Self {
        Encryption {
            mode: EncryptionMode::Passphrase,
            algorithm: ALGORITHM_AES_256_GCM.to_owned(),
            key_check: Some(crate::ident::key_check(passphrase, archive_id)),
        }
    }
}

/// `binlogs/archive.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveDescriptor {
    /// Always [`DESCRIPTOR_KIND`].
    pub kind: String,
    /// Always [`DESCRIPTOR_VERSION`].
    pub version: u64,
    /// The archive ID.
    #[serde(rename = "archiveID")]
    pub archive_id: ArchiveId,
    /// The group.
    pub source: SourceRef,
    /// The encryption identity.
    pub encryption: Encryption,
    /// When the first writer created it.
    #[serde(with = "crate::time::ts")]
    pub created_at: Timestamp,
    /// Who created it (a site, or a tool).
    pub created_by: String,
    /// Fields of a newer writer, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Why `archive.json` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DescriptorError {
    /// Larger than [`DESCRIPTOR_MAX_BYTES`].
    #[error("archive.json is damaged: it is larger than 64 KiB ({len} bytes or more)")]
    TooLarge {
        /// The size seen.
        len: usize,
    },
    /// Not one JSON object (undecodable, or trailing data).
    #[error("archive.json is damaged: {detail} at line {line} column {column}")]
    Undecodable {
        /// serde_json's message.
        detail: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The kind is not [`DESCRIPTOR_KIND`].
    #[error("archive.json is damaged: kind is {found:?}, not {DESCRIPTOR_KIND:?}")]
    WrongKind {
        /// The kind found.
        found: String,
    },
    /// A newer release wrote it.
    #[error("archive.json has version {version}; this release reads version {DESCRIPTOR_VERSION}")]
    VersionUnsupported {
        /// The version found.
        version: u64,
    },
    /// An encryption mode this release does not know.
    #[error("archive.json names encryption mode {mode:?}, unknown to this release")]
    UnknownEncryptionMode {
        /// The mode found.
        mode: String,
    },
    /// A field is missing or malformed.
    #[error("archive.json is damaged: {field}: {detail}")]
    Malformed {
        /// The JSON path of the field.
        field: &'static str,
        /// What is wrong.
        detail: String,
    },
}

impl DescriptorError {
    /// True for the "from a newer release" cases (the rest are damage).
    pub fn is_newer_release(&self) -> bool {
        matches!(
            self,
            DescriptorError::VersionUnsupported { .. }
                | DescriptorError::UnknownEncryptionMode { .. }
        )
    }
}

fn malformed(field: &'static str, detail: impl Into<String>) -> DescriptorError {
    DescriptorError::Malformed { field, detail: detail.into() }
}

impl ArchiveDescriptor {
    /// A new version 1 descriptor.
    pub fn new(
        archive_id: ArchiveId,
        source: SourceRef,
        encryption: Encryption,
        created_at: Timestamp,
        created_by: impl Into<String>,
    ) -> Self {
        ArchiveDescriptor {
            kind: DESCRIPTOR_KIND.to_owned(),
            version: DESCRIPTOR_VERSION,
            archive_id,
            source,
            encryption,
            created_at,
            created_by: created_by.into(),
            extra: Map::new(),
        }
    }

    /// Decodes and validates `archive.json`'s bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, DescriptorError> {
        if bytes.len() > DESCRIPTOR_MAX_BYTES {
            return Err(DescriptorError::TooLarge { len: bytes.len() });
        }
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| DescriptorError::Undecodable {
                detail: e.to_string().split(" at line ").next().unwrap_or_default().to_owned(),
                line: e.line(),
                column: e.column(),
            })?;
        let Value::Object(object) = &value else {
            return Err(DescriptorError::Undecodable {
                detail: "not a JSON object".to_owned(),
                line: 1,
                column: 1,
            });
        };
        match object.get("kind") {
            Some(Value::String(kind)) if kind == DESCRIPTOR_KIND => {}
            Some(Value::String(kind)) => {
                return Err(DescriptorError::WrongKind { found: kind.clone() });
            }
            Some(other) => return Err(DescriptorError::WrongKind { found: other.to_string() }),
            None => return Err(DescriptorError::WrongKind { found: String::new() }),
        }
        match object.get("version") {
            Some(Value::Number(n)) => match n.as_u64() {
                Some(DESCRIPTOR_VERSION) => {}
                Some(version) if version > DESCRIPTOR_VERSION => {
                    return Err(DescriptorError::VersionUnsupported { version });
                }
                _ => return Err(malformed("version", format!("{n} is not a supported version"))),
            },
            _ => return Err(malformed("version", "missing or not a number")),
        }
        if let Some(Value::Object(encryption)) = object.get("encryption")
            && let Some(Value::String(mode)) = encryption.get("mode")
            && mode != "None"
            && mode != "Passphrase"
        {
            return Err(DescriptorError::UnknownEncryptionMode { mode: mode.clone() });
        }
        let descriptor: ArchiveDescriptor =
            serde_json::from_value(value).map_err(|e| malformed("archive.json", e.to_string()))?;
        descriptor.validate()?;
        Ok(descriptor)
    }

    /// Checks every field's shape (the checks [`ArchiveDescriptor::from_slice`] applies).
    pub fn validate(&self) -> Result<(), DescriptorError> {
        if self.kind != DESCRIPTOR_KIND {
            return Err(DescriptorError::WrongKind { found: self.kind.clone() });
        }
        if self.version != DESCRIPTOR_VERSION {
            return Err(DescriptorError::VersionUnsupported { version: self.version });
        }
        if !is_dns_label(&self.source.namespace) {
            return Err(malformed(
                "source.namespace",
                format!("{:?} is not a DNS label", self.source.namespace),
            ));
        }
        if !is_dns_subdomain(&self.source.name) {
            return Err(malformed(
                "source.name",
                format!("{:?} is not a DNS subdomain", self.source.name),
            ));
        }
        let uid = &self.source.uid;
        if uid.is_empty()
            || uid.len() > 128
            || !uid.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(malformed("source.uid", format!("{uid:?} is not a Kubernetes uid")));
        }
        if self.created_by.is_empty()
            || self.created_by.len() > 253
            || self.created_by.chars().any(|c| c.is_control() || c.is_whitespace())
        {
            return Err(malformed(
                "createdBy",
                format!("{:?} is not a site or tool name", self.created_by),
            ));
        }
        match self.encryption.mode {
            EncryptionMode::None => {
                if !self.encryption.algorithm.is_empty() || self.encryption.key_check.is_some() {
                    return Err(malformed("encryption", "mode None with an algorithm or keyCheck"));
                }
            }
            EncryptionMode::Passphrase => {
                let algorithm = &self.encryption.algorithm;
                if algorithm.is_empty()
                    || algorithm.len() > 64
                    || !algorithm.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                {
                    return Err(malformed(
                        "encryption.algorithm",
                        format!("{algorithm:?} is not an algorithm name"),
                    ));
                }
                match &self.encryption.key_check {
                    Some(check)
                        if check.len() == 43
                            && data_encoding::BASE64URL_NOPAD.decode(check.as_bytes()).is_ok() => {}
                    Some(check) => {
                        return Err(malformed(
                            "encryption.keyCheck",
                            format!("{check:?} is not 43 characters of base64url"),
                        ));
                    }
                    None => {
                        return Err(malformed(
                            "encryption.keyCheck",
                            "missing for mode Passphrase",
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The JSON a writer creates (compact, with a trailing newline).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::destination::Destination;

    #[test]
    fn archive_id_derivation() {
        let destination = Destination::S3 {
            bucket: "lion".into(),
            prefix: "/prod".into(),
            endpoint: String::new(),
        }
        .normalize()
        .unwrap();
        let id = ArchiveId::derive("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", &destination);
        assert_eq!(id.as_str().len(), 30);
        assert!(id.as_str().starts_with("ar1-"));
        assert_eq!(id.as_str().parse::<ArchiveId>().unwrap(), id);
        let same = Destination::S3 {
            bucket: "lion".into(),
            prefix: "prod/".into(),
            endpoint: String::new(),
        }
        .normalize()
        .unwrap();
        assert_eq!(ArchiveId::derive("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", &same), id);
        assert_ne!(ArchiveId::derive("another-uid", &same), id);
        expect_test::expect!["ar1-mni6oj7ygvx2vxgdpuqxzktibu"].assert_eq(id.as_str());
    }

    #[test]
    fn archive_id_parse_errors() {
        for (text, offset) in [
            ("", 0),
            ("ar2-", 2),
            ("ar1-ABCDEFGHIJKLMNOPQRSTUVWXYZ", 4),
            ("ar1-abc", 7),
            ("ar1-abcdefghijklmnopqrstuvwxyz1", 30),
        ] {
            match text.parse::<ArchiveId>() {
                Err(Error::InvalidArchiveId { offset: got, .. }) => {
                    assert_eq!(got, offset, "{text}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
