//! The object envelope of encrypted archives: `BRV1`, AES-256-GCM in 64 KiB chunks.
//!
//! Pure: values in, values out. The caller supplies the randomness ([`SealRandom`], from the
//! kernel at the IO edge) and the context the object is bound to ([`binlog_context`] for an
//! archived binlog: the archive ID and the object key).
//!
//! Layout (all integers big-endian):
//!
//! ```text
//! offset  size  field
//! 0       4     magic and version: "BRV1"
//! 4       32    salt (random per object)
//! 36      7     nonce prefix (random per object)
//! 43      32    key commitment
//! 75      ...   chunks: each chunk_len (≤ 65536) ciphertext bytes + 16-byte GCM tag
//! ```
//!
//! - Per-object key: `HKDF-SHA256(ikm = passphrase, salt, info = KEY_INFO)` expanded to 64
//!   bytes; the first 32 are the AES-256 key, the last 32 the key commitment stored in the
//!   header (so a wrong passphrase is told apart from altered bytes, and the envelope commits
//!   to its key, which GCM alone does not).
//! - Chunk `i` (0-based): nonce = prefix ‖ `i` as u32 ‖ last flag (`0x01` on the final chunk,
//!   `0x00` before), the STREAM construction, so chunks cannot be reordered, dropped or the
//!   object cut at a chunk boundary without detection. AAD = the 75 header bytes ‖ context.
//! - Every envelope has a final chunk (empty plaintext: one chunk of just a tag). All chunks
//!   but the final one hold exactly 65536 plaintext bytes.
//!
//! [`open`] reports what failed, naming the object: [`EnvelopeError::BadMagic`] (not an
//! envelope), [`EnvelopeError::UnknownVersion`] (`BRV2`…), [`EnvelopeError::Truncated`],
//! [`EnvelopeError::KeyMismatch`] (sealed under another passphrase, or the header altered) and
//! [`EnvelopeError::Tampered`] (a chunk fails authentication: altered bytes, or another
//! context such as a renamed object).

use std::fmt;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};
use hkdf::Hkdf;
use sha2::Sha256;

use crate::descriptor::ArchiveId;
use crate::reader::ReaderKey;

/// The magic and version, the first four bytes of every envelope.
pub const MAGIC: &[u8; 4] = b"BRV1";
/// The magic without its version digit.
const MAGIC_STEM: &[u8; 3] = b"BRV";
/// The salt's length.
pub const SALT_LEN: usize = 32;
/// The nonce prefix's length (12-byte GCM nonce = prefix ‖ u32 counter ‖ last flag).
pub const NONCE_PREFIX_LEN: usize = 7;
/// The key commitment's length.
pub const COMMITMENT_LEN: usize = 32;
/// The header's length.
pub const HEADER_LEN: usize = MAGIC.len() + SALT_LEN + NONCE_PREFIX_LEN + COMMITMENT_LEN;
/// Plaintext bytes per chunk (every chunk but the final one holds exactly this many).
pub const CHUNK_LEN: usize = 64 * 1024;
/// The GCM tag's length.
pub const TAG_LEN: usize = 16;
/// The HKDF `info` of the per-object key.
pub const KEY_INFO: &[u8] = b"bloodraven/brv1/aes-256-gcm/object-key";
/// The context domain of archived binlogs.
pub const BINLOG_CONTEXT_DOMAIN: &[u8] = b"bloodraven/pitr/binlog-object/v1\0";
/// The algorithm name the descriptor records for this envelope.
pub const ALGORITHM: &str = "AES-256-GCM";

/// The largest plaintext one envelope holds (2³² chunks).
pub const MAX_PLAINTEXT_LEN: u64 = (u32::MAX as u64 + 1) * CHUNK_LEN as u64;

/// The passphrase an envelope is sealed and opened with.
#[derive(Clone, PartialEq, Eq)]
pub struct EnvelopeKey {
    passphrase: Vec<u8>,
}

impl fmt::Debug for EnvelopeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnvelopeKey(..)")
    }
}

impl EnvelopeKey {
    /// The key of this passphrase (its bytes exactly).
    pub fn from_passphrase(passphrase: &[u8]) -> Self {
        EnvelopeKey { passphrase: passphrase.to_vec() }
    }

    fn object_keys(&self, salt: &[u8]) -> ([u8; 32], [u8; COMMITMENT_LEN]) {
        let hkdf = Hkdf::<Sha256>::new(Some(salt), &self.passphrase);
        let mut okm = [0u8; 32 + COMMITMENT_LEN];
        // 64 bytes is far below HKDF-SHA256's limit (255 × 32): the error branch is dead, and
        // an all-zero key would only make every open fail, never a panic.
        if hkdf.expand(KEY_INFO, &mut okm).is_err() {
            okm = [0u8; 32 + COMMITMENT_LEN];
        }
        let mut key = [0u8; 32];
        let mut commitment = [0u8; COMMITMENT_LEN];
        key.copy_from_slice(&okm[..32]);
        commitment.copy_from_slice(&okm[32..]);
        (key, commitment)
    }
}

/// The per-object randomness of [`seal`]: fresh from the kernel for every object (the caller
/// draws it; tests pass fixed values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealRandom {
    /// The HKDF salt (a new per-object key).
    pub salt: [u8; SALT_LEN],
    /// The nonce prefix.
    pub nonce_prefix: [u8; NONCE_PREFIX_LEN],
}

impl SealRandom {
    /// The number of random bytes [`SealRandom::from_bytes`] takes.
    pub const LEN: usize = SALT_LEN + NONCE_PREFIX_LEN;

    /// Splits `LEN` random bytes into salt and nonce prefix.
    pub fn from_bytes(bytes: [u8; Self::LEN]) -> Self {
        let mut salt = [0u8; SALT_LEN];
        let mut nonce_prefix = [0u8; NONCE_PREFIX_LEN];
        salt.copy_from_slice(&bytes[..SALT_LEN]);
        nonce_prefix.copy_from_slice(&bytes[SALT_LEN..]);
        SealRandom { salt, nonce_prefix }
    }
}

/// Why an envelope could not be sealed or opened. Every variant names the object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnvelopeError {
    /// The bytes do not start with `BRV`: not an envelope.
    #[error(
        "{object}: not a BRV1 envelope (it starts with {found}); an encrypted archive holds only sealed objects: restore the original object or re-archive the file"
    )]
    BadMagic {
        /// The object.
        object: String,
        /// The first bytes, escaped.
        found: String,
    },
    /// `BRV` followed by another version.
    #[error(
        "{object}: envelope version BRV{} is not BRV1; it was written by a newer release: upgrade",
        char::from(*version)
    )]
    UnknownVersion {
        /// The object.
        object: String,
        /// The version byte.
        version: u8,
    },
    /// The object ends early.
    #[error(
        "{object}: the envelope is truncated at byte {len} ({detail}); restore the original object"
    )]
    Truncated {
        /// The object.
        object: String,
        /// Its length.
        len: u64,
        /// What is missing.
        detail: &'static str,
    },
    /// The key commitment does not match this passphrase.
    #[error(
        "{object}: sealed under another passphrase (or its header was altered): the key commitment does not match"
    )]
    KeyMismatch {
        /// The object.
        object: String,
    },
    /// A chunk fails authentication.
    #[error(
        "{object}: chunk {chunk} (ciphertext bytes from {offset}) fails authentication: the object was altered or belongs to another archive or key; restore the original object"
    )]
    Tampered {
        /// The object.
        object: String,
        /// The chunk index.
        chunk: u64,
        /// Its offset in the object.
        offset: u64,
    },
    /// The plaintext is larger than one envelope holds.
    #[error("{object}: {len} bytes is more than one envelope holds ({MAX_PLAINTEXT_LEN})")]
    TooLarge {
        /// The object.
        object: String,
        /// The plaintext length.
        len: u64,
    },
}

/// The sealed length of a plaintext of `plain_len` bytes.
pub fn sealed_len(plain_len: u64) -> u64 {
    let chunks = plain_len.div_ceil(CHUNK_LEN as u64).max(1);
    HEADER_LEN as u64 + plain_len + chunks * TAG_LEN as u64
}

/// True when `bytes` start like an envelope (`BRV1`).
pub fn is_sealed(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// The context an archived binlog is bound to: its archive and its object key (relative to
/// `binlogs/`, `<site>/<name>.<id>`), so an object moved to another key or archive fails.
pub fn binlog_context(archive_id: &ArchiveId, object_key: &str) -> Vec<u8> {
    let mut context = Vec::with_capacity(
        BINLOG_CONTEXT_DOMAIN.len() + archive_id.as_str().len() + 1 + object_key.len(),
    );
    context.extend_from_slice(BINLOG_CONTEXT_DOMAIN);
    context.extend_from_slice(archive_id.as_str().as_bytes());
    context.push(0);
    context.extend_from_slice(object_key.as_bytes());
    context
}

fn nonce(prefix: &[u8], counter: u32, last: bool) -> [u8; 12] {
    let mut nonce = [0u8; 12];
    nonce[..NONCE_PREFIX_LEN].copy_from_slice(prefix);
    nonce[NONCE_PREFIX_LEN..NONCE_PREFIX_LEN + 4].copy_from_slice(&counter.to_be_bytes());
    nonce[11] = u8::from(last);
    nonce
}

fn aad(header: &[u8], context: &[u8]) -> Vec<u8> {
    let mut aad = Vec::with_capacity(header.len() + context.len());
    aad.extend_from_slice(header);
    aad.extend_from_slice(context);
    aad
}

/// Seals `plaintext` (named `object` in errors) under `key`, bound to `context`.
pub fn seal(
    object: &str,
    plaintext: &[u8],
    key: &EnvelopeKey,
    context: &[u8],
    random: &SealRandom,
) -> Result<Vec<u8>, EnvelopeError> {
    let len = plaintext.len() as u64;
    if len > MAX_PLAINTEXT_LEN {
        return Err(EnvelopeError::TooLarge { object: object.to_owned(), len });
    }
    let (aes_key, commitment) = key.object_keys(&random.salt);
    let cipher = Aes256Gcm::new(&aes_key.into());
    let mut out = Vec::with_capacity(usize::try_from(sealed_len(len)).unwrap_or(0));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&random.salt);
    out.extend_from_slice(&random.nonce_prefix);
    out.extend_from_slice(&commitment);
    let aad = aad(&out, context);
    let chunks = plaintext.len().div_ceil(CHUNK_LEN).max(1);
    for index in 0..chunks {
        let start = index * CHUNK_LEN;
        let end = (start + CHUNK_LEN).min(plaintext.len());
        let body_start = out.len();
        out.extend_from_slice(&plaintext[start..end]);
        // `index` < 2³² by the length check above.
        let counter = u32::try_from(index).unwrap_or(u32::MAX);
        let nonce = nonce(&random.nonce_prefix, counter, index + 1 == chunks);
        let tag = cipher
            .encrypt_in_place_detached(Nonce::from_slice(&nonce), &aad, &mut out[body_start..])
            .map_err(|_| EnvelopeError::TooLarge { object: object.to_owned(), len })?;
        out.extend_from_slice(&tag);
    }
    Ok(out)
}

fn escaped(bytes: &[u8]) -> String {
    let mut text = String::from("\"");
    for &byte in bytes.iter().take(4) {
        text.extend(std::ascii::escape_default(byte).map(char::from));
    }
    text.push('"');
    text
}

/// Checks the first bytes: magic, version, header length.
fn check_header(object: &str, bytes: &[u8]) -> Result<(), EnvelopeError> {
    let stem = &bytes[..bytes.len().min(MAGIC_STEM.len())];
    if stem != &MAGIC_STEM[..stem.len()] {
        return Err(EnvelopeError::BadMagic { object: object.to_owned(), found: escaped(bytes) });
    }
    let truncated = |detail| EnvelopeError::Truncated {
        object: object.to_owned(),
        len: bytes.len() as u64,
        detail,
    };
    let Some(&version) = bytes.get(MAGIC_STEM.len()) else {
        return Err(truncated("inside the magic"));
    };
    if version != MAGIC[3] {
        return Err(EnvelopeError::UnknownVersion { object: object.to_owned(), version });
    }
    if bytes.len() < HEADER_LEN {
        return Err(truncated("inside the 75-byte header"));
    }
    Ok(())
}

fn equal_constant_time(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Opens an envelope (named `object` in errors) with `key` and the `context` it was sealed
/// with, returning the plaintext.
pub fn open(
    object: &str,
    bytes: &[u8],
    key: &EnvelopeKey,
    context: &[u8],
) -> Result<Vec<u8>, EnvelopeError> {
    check_header(object, bytes)?;
    let header = &bytes[..HEADER_LEN];
    let salt = &header[MAGIC.len()..MAGIC.len() + SALT_LEN];
    let prefix = &header[MAGIC.len() + SALT_LEN..MAGIC.len() + SALT_LEN + NONCE_PREFIX_LEN];
    let stored_commitment = &header[HEADER_LEN - COMMITMENT_LEN..];
    let (aes_key, commitment) = key.object_keys(salt);
    if !equal_constant_time(&commitment, stored_commitment) {
        return Err(EnvelopeError::KeyMismatch { object: object.to_owned() });
    }
    let cipher = Aes256Gcm::new(&aes_key.into());
    let aad = aad(header, context);
    let body = &bytes[HEADER_LEN..];
    if body.len() < TAG_LEN {
        return Err(EnvelopeError::Truncated {
            object: object.to_owned(),
            len: bytes.len() as u64,
            detail: "no final chunk",
        });
    }
    let sealed_chunk = CHUNK_LEN + TAG_LEN;
    let mut plaintext = Vec::with_capacity(body.len());
    let mut offset = 0usize;
    let mut index = 0u64;
    loop {
        let remaining = body.len() - offset;
        let last = remaining <= sealed_chunk;
        let take = remaining.min(sealed_chunk);
        if take < TAG_LEN {
            return Err(EnvelopeError::Truncated {
                object: object.to_owned(),
                len: bytes.len() as u64,
                detail: "inside the final chunk's tag",
            });
        }
        let Ok(counter) = u32::try_from(index) else {
            return Err(EnvelopeError::TooLarge {
                object: object.to_owned(),
                len: body.len() as u64,
            });
        };
        let chunk = &body[offset..offset + take];
        let (ciphertext, tag) = chunk.split_at(take - TAG_LEN);
        let start = plaintext.len();
        plaintext.extend_from_slice(ciphertext);
        let tag = Tag::from_slice(tag);
        let opened = cipher.decrypt_in_place_detached(
            Nonce::from_slice(&nonce(prefix, counter, last)),
            &aad,
            &mut plaintext[start..],
            tag,
        );
        if opened.is_err() {
            // A full chunk that opens as a middle chunk, at the end: the object was cut at a
            // chunk boundary.
            let mut probe = ciphertext.to_vec();
            let cut = last
                && take == sealed_chunk
                && cipher
                    .decrypt_in_place_detached(
                        Nonce::from_slice(&nonce(prefix, counter, false)),
                        &aad,
                        &mut probe,
                        tag,
                    )
                    .is_ok();
            if cut {
                return Err(EnvelopeError::Truncated {
                    object: object.to_owned(),
                    len: bytes.len() as u64,
                    detail: "the final chunk is missing (cut at a chunk boundary)",
                });
            }
            return Err(EnvelopeError::Tampered {
                object: object.to_owned(),
                chunk: index,
                offset: (HEADER_LEN + offset) as u64,
            });
        }
        offset += take;
        index += 1;
        if last {
            return Ok(plaintext);
        }
    }
}

/// The plaintext of the archived binlog at `object_key` (relative to `binlogs/`) read with
/// `key`: the bytes themselves in a plaintext archive, the opened envelope in a passphrase
/// archive (bound to `archive_id` and `object_key`).
pub fn open_binlog_object(
    key: &ReaderKey,
    archive_id: &ArchiveId,
    object_key: &str,
    bytes: Vec<u8>,
) -> Result<Vec<u8>, EnvelopeError> {
    match key.envelope_key() {
        None => Ok(bytes),
        Some(envelope) => {
            open(object_key, &bytes, &envelope, &binlog_context(archive_id, object_key))
        }
    }
}

/// The stored bytes of the binlog `plaintext` archived at `object_key` with `key`: the
/// plaintext itself in a plaintext archive, sealed in a passphrase archive with `random`
/// (asked for only then).
pub fn seal_binlog_object<E>(
    key: &ReaderKey,
    archive_id: &ArchiveId,
    object_key: &str,
    plaintext: Vec<u8>,
    random: impl FnOnce() -> Result<SealRandom, E>,
) -> Result<Result<Vec<u8>, EnvelopeError>, E> {
    match key.envelope_key() {
        None => Ok(Ok(plaintext)),
        Some(envelope) => {
            let random = random()?;
            let context = binlog_context(archive_id, object_key);
            Ok(seal(object_key, &plaintext, &envelope, &context, &random))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random() -> SealRandom {
        SealRandom { salt: [7u8; SALT_LEN], nonce_prefix: [9u8; NONCE_PREFIX_LEN] }
    }

    #[test]
    fn lengths_are_predicted() {
        let key = EnvelopeKey::from_passphrase(b"p");
        for len in [0, 1, CHUNK_LEN - 1, CHUNK_LEN, CHUNK_LEN + 1, 3 * CHUNK_LEN] {
            let sealed = seal("x", &vec![0u8; len], &key, b"", &random()).unwrap();
            assert_eq!(sealed.len() as u64, sealed_len(len as u64), "{len}");
            assert!(is_sealed(&sealed));
            assert_eq!(open("x", &sealed, &key, b"").unwrap().len(), len);
        }
    }

    #[test]
    fn header_errors_name_the_object() {
        let key = EnvelopeKey::from_passphrase(b"p");
        let bad = open("iad/x", b"\xfebin\x00", &key, b"").unwrap_err();
        assert_eq!(
            bad.to_string(),
            "iad/x: not a BRV1 envelope (it starts with \"\\xfebin\"); an encrypted archive holds only sealed objects: restore the original object or re-archive the file"
        );
        assert!(matches!(
            open("o", b"BRV2rest", &key, b""),
            Err(EnvelopeError::UnknownVersion { version: b'2', .. })
        ));
        assert!(matches!(open("o", b"BR", &key, b""), Err(EnvelopeError::Truncated { .. })));
        assert!(matches!(open("o", b"", &key, b""), Err(EnvelopeError::Truncated { .. })));
        assert!(matches!(open("o", b"BRV1abc", &key, b""), Err(EnvelopeError::Truncated { .. })));
    }
}
