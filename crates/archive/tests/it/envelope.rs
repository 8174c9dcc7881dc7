//! The BRV1 object envelope: golden vectors from an independent implementation, round trips,
//! and every alteration refused with the variant that names it.

use bloodraven_archive::ArchiveId;
use bloodraven_archive::envelope::{
    CHUNK_LEN, EnvelopeError, EnvelopeKey, HEADER_LEN, SealRandom, TAG_LEN, binlog_context, open,
    open_binlog_object, seal, seal_binlog_object,
};
use bloodraven_archive::reader::ReaderKey;
use proptest::prelude::*;
use sha2::{Digest, Sha256};

const PASSPHRASE: &[u8] = b"correct horse battery staple";

fn fixed_random() -> SealRandom {
    let mut salt = [0u8; 32];
    for (i, byte) in salt.iter_mut().enumerate() {
        *byte = i as u8;
    }
    SealRandom { salt, nonce_prefix: [0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6] }
}

fn archive_id() -> ArchiveId {
    "ar1-abcdefghijklmnopqrstuvwxyz".parse().unwrap()
}

fn object_key() -> String {
    format!("iad/mysql-bin.000042.{}", "ab".repeat(32))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The vectors were computed with Python's `cryptography` (HKDF-SHA256 and AESGCM), an
/// implementation independent of this crate's, from the layout in `envelope.rs`'s docs.
#[test]
fn golden_vectors_match_an_independent_implementation() {
    let key = EnvelopeKey::from_passphrase(PASSPHRASE);
    let context = binlog_context(&archive_id(), &object_key());
    let short = seal("short", b"hello, archive", &key, &context, &fixed_random()).unwrap();
    assert_eq!(
        hex(&short),
        "42525631000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fa0a1a2a3a4a5a6\
         b550c27678eaeba6cdc72fb70424cd7d8c9723d3498c992d0a82df9933a4311a0fa1a97edc1fb2916e3051\
         6937fb51981cd4f986b28f95bd751df05343b7"
    );
    assert_eq!(open("short", &short, &key, &context).unwrap(), b"hello, archive");

    let long: Vec<u8> = (0..2 * CHUNK_LEN + 100).map(|i| ((i * 31 + 7) % 251) as u8).collect();
    let sealed = seal("long", &long, &key, &context, &fixed_random()).unwrap();
    assert_eq!(sealed.len(), 131_295);
    assert_eq!(
        hex(&Sha256::digest(&sealed)),
        "dfe0534ec72abafdbd8a3570ca69f03cbd9bd219720a888fd8c1d378c82feafb"
    );
    assert_eq!(open("long", &sealed, &key, &context).unwrap(), long);

    let empty = seal("empty", b"", &key, b"", &fixed_random()).unwrap();
    assert_eq!(
        hex(&empty),
        "42525631000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fa0a1a2a3a4a5a6\
         b550c27678eaeba6cdc72fb70424cd7d8c9723d3498c992d0a82df9933a4311a3cec8788b9ac2c36a6521b\
         e7373cf333"
    );
    assert_eq!(open("empty", &empty, &key, b"").unwrap(), b"");
}

#[test]
fn a_wrong_passphrase_is_a_key_mismatch_and_another_context_fails_the_first_chunk() {
    let key = EnvelopeKey::from_passphrase(PASSPHRASE);
    let sealed = seal("o", &[5u8; 1000], &key, b"ctx", &fixed_random()).unwrap();
    let wrong = EnvelopeKey::from_passphrase(b"Correct horse battery staple");
    assert_eq!(
        open("iad/x", &sealed, &wrong, b"ctx").unwrap_err(),
        EnvelopeError::KeyMismatch { object: "iad/x".into() }
    );
    // A renamed object (another key or archive in the context).
    assert_eq!(
        open("iad/y", &sealed, &key, b"ctx2").unwrap_err(),
        EnvelopeError::Tampered { object: "iad/y".into(), chunk: 0, offset: HEADER_LEN as u64 }
    );
}

#[test]
fn an_object_cut_at_a_chunk_boundary_is_truncated_not_shorter() {
    let key = EnvelopeKey::from_passphrase(PASSPHRASE);
    let plain = vec![1u8; 3 * CHUNK_LEN + 10];
    let sealed = seal("o", &plain, &key, b"", &fixed_random()).unwrap();
    for chunks in 1..=3 {
        let cut = &sealed[..HEADER_LEN + chunks * (CHUNK_LEN + TAG_LEN)];
        assert!(
            matches!(open("o", cut, &key, b""), Err(EnvelopeError::Truncated { .. })),
            "{chunks} chunks: {:?}",
            open("o", cut, &key, b"")
        );
    }
    // Chunks swapped: the first fails.
    let mut swapped = sealed.clone();
    let a = HEADER_LEN..HEADER_LEN + CHUNK_LEN + TAG_LEN;
    let b = a.end..a.end + CHUNK_LEN + TAG_LEN;
    let first = swapped[a.clone()].to_vec();
    let second = swapped[b.clone()].to_vec();
    swapped[a].copy_from_slice(&second);
    swapped[b].copy_from_slice(&first);
    assert!(matches!(
        open("o", &swapped, &key, b""),
        Err(EnvelopeError::Tampered { chunk: 0, .. })
    ));
    // Bytes appended after the final chunk.
    let mut longer = sealed.clone();
    longer.extend_from_slice(&[0u8; 20]);
    assert!(open("o", &longer, &key, b"").is_err());
}

#[test]
fn reader_keys_open_what_writer_keys_seal() {
    let id = archive_id();
    let name = object_key();
    let passphrase =
        ReaderKey::Passphrase { algorithm: "AES-256-GCM".into(), passphrase: PASSPHRASE.to_vec() };
    let never = || -> Result<SealRandom, ()> { panic!("a plaintext archive draws no randomness") };
    assert_eq!(
        seal_binlog_object(&ReaderKey::None, &id, &name, b"plain".to_vec(), never).unwrap(),
        Ok(b"plain".to_vec())
    );
    assert_eq!(
        open_binlog_object(&ReaderKey::None, &id, &name, b"plain".to_vec()).unwrap(),
        b"plain"
    );
    let sealed = seal_binlog_object(&passphrase, &id, &name, b"binlog".to_vec(), || {
        Ok::<_, ()>(fixed_random())
    })
    .unwrap()
    .unwrap();
    assert!(!sealed.windows(6).any(|w| w == b"binlog"));
    assert_eq!(open_binlog_object(&passphrase, &id, &name, sealed.clone()).unwrap(), b"binlog");
    // The same bytes under another object key or archive do not open.
    let other = format!("pdx/mysql-bin.000042.{}", "ab".repeat(32));
    assert!(matches!(
        open_binlog_object(&passphrase, &id, &other, sealed.clone()),
        Err(EnvelopeError::Tampered { .. })
    ));
    let other_archive: ArchiveId = "ar1-abcdefghijklmnopqrstuvwxy2".parse().unwrap();
    assert!(open_binlog_object(&passphrase, &other_archive, &name, sealed).is_err());
    // A plaintext object in an encrypted archive.
    assert!(matches!(
        open_binlog_object(&passphrase, &id, &name, b"\xfebin....".to_vec()),
        Err(EnvelopeError::BadMagic { .. })
    ));
}

fn plaintexts() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        // Around one and two chunk boundaries.
        (CHUNK_LEN - 20..CHUNK_LEN + 20).prop_map(|n| vec![0x5a; n]),
        (2 * CHUNK_LEN - 2..2 * CHUNK_LEN + 2).prop_map(|n| (0..n).map(|i| i as u8).collect()),
    ]
}

fn randoms() -> impl Strategy<Value = SealRandom> {
    any::<[u8; SealRandom::LEN]>().prop_map(SealRandom::from_bytes)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn open_undoes_seal(
        plain in plaintexts(),
        passphrase in proptest::collection::vec(any::<u8>(), 1..64),
        context in proptest::collection::vec(any::<u8>(), 0..64),
        random in randoms(),
    ) {
        let key = EnvelopeKey::from_passphrase(&passphrase);
        let sealed = seal("o", &plain, &key, &context, &random).unwrap();
        prop_assert_eq!(open("o", &sealed, &key, &context).unwrap(), plain);
    }

    #[test]
    fn any_flipped_byte_fails(
        plain in plaintexts(),
        random in randoms(),
        position in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let key = EnvelopeKey::from_passphrase(PASSPHRASE);
        let mut sealed = seal("o", &plain, &key, b"ctx", &random).unwrap();
        let at = position.index(sealed.len());
        sealed[at] ^= 1 << bit;
        let error = open("o", &sealed, &key, b"ctx").unwrap_err();
        // The header's bytes are the magic (BadMagic/UnknownVersion), the salt and the
        // commitment (KeyMismatch) or the nonce prefix (Tampered); the rest is a chunk.
        if at >= HEADER_LEN {
            let is_tampered = matches!(error, EnvelopeError::Tampered { .. });
            prop_assert!(is_tampered, "byte {}: {:?}", at, error);
        }
    }

    #[test]
    fn a_wrong_passphrase_never_opens(
        plain in proptest::collection::vec(any::<u8>(), 0..2000),
        passphrase in proptest::collection::vec(any::<u8>(), 1..32),
        other in proptest::collection::vec(any::<u8>(), 1..32),
        random in randoms(),
    ) {
        prop_assume!(passphrase != other);
        let sealed = seal("o", &plain, &EnvelopeKey::from_passphrase(&passphrase), b"", &random).unwrap();
        let error = open("o", &sealed, &EnvelopeKey::from_passphrase(&other), b"").unwrap_err();
        prop_assert_eq!(error, EnvelopeError::KeyMismatch { object: "o".into() });
    }

    #[test]
    fn every_truncation_fails(
        plain in plaintexts(),
        random in randoms(),
        cut in any::<prop::sample::Index>(),
    ) {
        let key = EnvelopeKey::from_passphrase(PASSPHRASE);
        let sealed = seal("o", &plain, &key, b"", &random).unwrap();
        let len = cut.index(sealed.len());
        prop_assert!(open("o", &sealed[..len], &key, b"").is_err());
    }

    #[test]
    fn open_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = open("o", &bytes, &EnvelopeKey::from_passphrase(PASSPHRASE), b"");
        let mut branded = b"BRV1".to_vec();
        branded.extend_from_slice(&bytes);
        let _ = open("o", &branded, &EnvelopeKey::from_passphrase(PASSPHRASE), b"");
    }
}
