//! Object keys, content ids and the passphrase key check.
//!
//! - Object keys (relative to the archive root `binlogs/`): `<site>/<binlog-file>.<id>`.
//! - Content ids: 64 lowercase hexadecimal characters. Plaintext archives use SHA-256 of the
//!   binlog's bytes. Encrypted archives use HMAC-SHA256 keyed by a binlog-specific key derived from
//!   the archive passphrase (`HMAC-SHA256(passphrase, BINLOG_ID_DOMAIN)`), so object names do not
//!   expose a plaintext SHA-256.
//! - The key check (`encryption.keyCheck` of `archive.json`): base64url without padding (43
//!   characters) of `HMAC-SHA256(passphrase, KEY_CHECK_DOMAIN || archiveID)`.

use std::fmt;
use std::str::FromStr;

use data_encoding::{BASE64URL_NOPAD, HEXLOWER};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::descriptor::ArchiveId;
use crate::{Error, Result, check_site};

type HmacSha256 = Hmac<Sha256>;

/// The domain that separates binlog content ids from every other use of the passphrase.
pub const BINLOG_ID_DOMAIN: &[u8] = b"bloodraven/pitr/binlog-content-id/v1";
/// The domain of the descriptor's key check.
pub const KEY_CHECK_DOMAIN: &[u8] = b"bloodraven/pitr/archive-key-check/v1\0";
/// The descriptor file name under the archive root.
pub const DESCRIPTOR_NAME: &str = "archive.json";
/// The prefix of the store-capability probe objects.
pub const CAS_PROBE_PREFIX: &str = ".bloodraven-cas-probe-";

/// A 32-byte content digest, written as 64 lowercase hexadecimal characters.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContentId([u8; 32]);

impl ContentId {
    /// Wraps raw digest bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        ContentId(bytes)
    }

    /// The raw digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&HEXLOWER.encode(&self.0))
    }
}

impl fmt::Debug for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentId({self})")
    }
}

impl FromStr for ContentId {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let bad = |offset| Error::InvalidContentId { text: text.to_owned(), offset };
        if let Some(offset) =
            text.bytes().position(|b| !(b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        {
            return Err(bad(offset));
        }
        if text.len() != 64 {
            return Err(bad(text.len().min(64)));
        }
        let mut bytes = [0u8; 32];
        HEXLOWER.decode_mut(text.as_bytes(), &mut bytes).map_err(|e| bad(e.error.position))?;
        Ok(ContentId(bytes))
    }
}

impl serde::Serialize for ContentId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for ContentId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How content ids of an archive are computed.
#[derive(Clone, PartialEq, Eq)]
pub enum ContentIdKey {
    /// Plaintext archive: SHA-256.
    Plain,
    /// Encrypted archive: HMAC-SHA256 under the binlog-specific key derived from the passphrase.
    Keyed([u8; 32]),
}

impl fmt::Debug for ContentIdKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContentIdKey::Plain => f.write_str("ContentIdKey::Plain"),
            ContentIdKey::Keyed(_) => f.write_str("ContentIdKey::Keyed(..)"),
        }
    }
}

impl ContentIdKey {
    /// The key of an encrypted archive with this passphrase.
    pub fn from_passphrase(passphrase: &[u8]) -> Self {
        ContentIdKey::Keyed(hmac_sha256(passphrase, &[BINLOG_ID_DOMAIN]))
    }

    /// Starts a streaming content id computation.
    pub fn hasher(&self) -> ContentHasher {
        match self {
            ContentIdKey::Plain => ContentHasher(HasherState::Plain(Sha256::new())),
            ContentIdKey::Keyed(key) => ContentHasher(HasherState::Keyed(new_hmac(key))),
        }
    }

    /// The content id of `bytes`.
    pub fn content_id(&self, bytes: &[u8]) -> ContentId {
        let mut hasher = self.hasher();
        hasher.update(bytes);
        hasher.finish()
    }
}

/// A streaming content id computation (feed a binlog in pieces).
#[derive(Clone)]
pub struct ContentHasher(HasherState);

#[derive(Clone)]
enum HasherState {
    Plain(Sha256),
    Keyed(HmacSha256),
}

impl ContentHasher {
    /// Feeds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        match &mut self.0 {
            HasherState::Plain(hasher) => hasher.update(bytes),
            HasherState::Keyed(mac) => mac.update(bytes),
        }
    }

    /// The content id of everything fed.
    pub fn finish(self) -> ContentId {
        match self.0 {
            HasherState::Plain(hasher) => ContentId(hasher.finalize().into()),
            HasherState::Keyed(mac) => ContentId(mac.finalize().into_bytes().into()),
        }
    }
}

fn new_hmac(key: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length; the error branch cannot be taken, and falling back to an
    // empty key keeps this total without a panic path.
    match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => <HmacSha256 as hmac::digest::KeyInit>::new(&Default::default()),
    }
}

fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = new_hmac(key);
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// The descriptor's `keyCheck` for this passphrase and archive: 43 characters of base64url.
pub fn key_check(passphrase: &[u8], archive_id: &ArchiveId) -> String {
    BASE64URL_NOPAD
        .encode(&hmac_sha256(passphrase, &[KEY_CHECK_DOMAIN, archive_id.as_str().as_bytes()]))
}

/// True when `passphrase` verifies `key_check` for `archive_id` (constant-time comparison).
pub fn verify_key_check(passphrase: &[u8], archive_id: &ArchiveId, key_check: &str) -> bool {
    let Ok(expected) = BASE64URL_NOPAD.decode(key_check.as_bytes()) else {
        return false;
    };
    let mut mac = new_hmac(passphrase);
    mac.update(KEY_CHECK_DOMAIN);
    mac.update(archive_id.as_str().as_bytes());
    mac.verify_slice(&expected).is_ok()
}

/// True when `name` is a plain binlog file name: 1 to 255 of `[A-Za-z0-9._-]`, not starting
/// with `.`.
pub fn is_valid_binlog_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The object key of an archived binlog: `<site>/<binlog-file>.<id>` (relative to `binlogs/`).
pub fn object_key(site: &str, binlog_name: &str, id: &ContentId) -> Result<String> {
    check_site(site)?;
    if !is_valid_binlog_name(binlog_name) {
        return Err(Error::InvalidBinlogName(binlog_name.to_owned()));
    }
    Ok(format!("{site}/{binlog_name}.{id}"))
}

/// The manifest object name of a site: `manifest-<site>.json`.
pub fn manifest_name(site: &str) -> Result<String> {
    check_site(site)?;
    Ok(format!("manifest-{site}.json"))
}

/// The site of a manifest object name, when `name` is `manifest-<site>.json` with a valid site.
pub fn manifest_site(name: &str) -> Option<&str> {
    let site = name.strip_prefix("manifest-")?.strip_suffix(".json")?;
    crate::is_valid_site(site).then_some(site)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ids() {
        let plain = ContentIdKey::Plain.content_id(b"abc");
        assert_eq!(
            plain.to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let keyed = ContentIdKey::from_passphrase(b"secret");
        let id = keyed.content_id(b"abc");
        assert_ne!(id, plain);
        let mut streaming = keyed.hasher();
        streaming.update(b"a");
        streaming.update(b"bc");
        assert_eq!(streaming.finish(), id);
        assert_ne!(ContentIdKey::from_passphrase(b"other").content_id(b"abc"), id);
        assert_eq!(id.to_string().parse::<ContentId>().unwrap(), id);
    }

    #[test]
    fn content_id_parse_errors() {
        let upper = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
        for (text, offset) in [("", 0), ("abc", 3), (upper, 0), ("g", 0), (&"a".repeat(65)[..], 64)]
        {
            match text.parse::<ContentId>() {
                Err(Error::InvalidContentId { offset: got, .. }) => {
                    assert_eq!(got, offset, "{text}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn keys() {
        let id = ContentIdKey::Plain.content_id(b"x");
        assert_eq!(
            object_key("iad", "mysql-bin.000042", &id).unwrap(),
            format!("iad/mysql-bin.000042.{id}")
        );
        assert!(object_key("IAD", "mysql-bin.000042", &id).is_err());
        assert!(object_key("iad", "../x", &id).is_err());
        assert!(object_key("iad", ".hidden", &id).is_err());
        assert_eq!(manifest_name("pdx").unwrap(), "manifest-pdx.json");
        assert_eq!(manifest_site("manifest-pdx.json"), Some("pdx"));
        assert_eq!(manifest_site("manifest-P.json"), None);
        assert_eq!(manifest_site("archive.json"), None);
    }

    #[test]
    fn key_check_verifies_only_the_right_passphrase() {
        let id: ArchiveId = "ar1-abcdefghijklmnopqrstuvwxyz".parse().unwrap();
        let check = key_check(b"pass", &id);
        assert_eq!(check.len(), 43);
        assert!(verify_key_check(b"pass", &id, &check));
        assert!(!verify_key_check(b"wrong", &id, &check));
        let other: ArchiveId = "ar1-abcdefghijklmnopqrstuvwxy2".parse().unwrap();
        assert!(!verify_key_check(b"pass", &other, &check));
        assert!(!verify_key_check(b"pass", &id, "not base64!"));
    }
}
