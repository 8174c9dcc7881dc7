//! The encrypted archive (profile encryption `Passphrase`): the archiver seals every binlog in
//! the BRV1 envelope under keyed content ids, and the restore's reader
//! (`bloodraven_replay::download`) opens it with the key and refuses without it. PVC layout in
//! a temp dir and SeaweedFS, real binlog files from `crates/binlog/test_data`.

use std::path::Path;

use bloodraven_archive::envelope::{self, EnvelopeKey};
use bloodraven_archive::reader::{ReaderKey, ReaderOptions};
use bloodraven_archive::refusal::RefusalToken;
use bloodraven_archive::{ContentIdKey, EncryptionMode};
use bloodraven_replay::download::{Opened, download};
use bloodraven_sidecar::archiver::local::LocalBinlogs;
use bloodraven_sidecar::archiver::retention::NoCutoff;
use bloodraven_sidecar::archiver::status::ArchiveState;
use bloodraven_sidecar::archiver::{Archiver, ArchiverConfig, ScanError};
use bloodraven_store::{ArchiveRoot, FsStore, ObjectStore, list_all};

use super::archiver::{
    SERVER_UUID, config_for, datadir, destination, now, safe_settings, writable,
};

const PASSPHRASE: &[u8] = b"s3cret passphrase from the key snapshot";

/// Strings every test binlog holds in clear: the server version of the format description
/// event, a statement, and the binlog magic.
const MARKERS: [&[u8]; 3] = [b"8.4.3-bloodraven", b"ALTER TABLE orders", b"\xfebin"];

fn passphrase(bytes: &[u8]) -> ReaderKey {
    ReaderKey::Passphrase { algorithm: "AES-256-GCM".into(), passphrase: bytes.to_vec() }
}

fn encrypted_config(
    site: &str,
    root: &ArchiveRoot,
    storage: &str,
    key: ReaderKey,
) -> ArchiverConfig {
    let mut config = config_for(site, root, &destination(), storage);
    config.identity.key = key;
    config.key_revision = Some("1".into());
    config
}

async fn archive_encrypted<S: ObjectStore + Clone>(
    store: &S,
    root: &ArchiveRoot,
    data: &Path,
    storage: &str,
) -> Archiver<S, NoCutoff> {
    let local = LocalBinlogs::new(data, "binlog.index");
    let mut archiver = Archiver::open(
        store.clone(),
        encrypted_config("a", root, storage, passphrase(PASSPHRASE)),
        local,
        NoCutoff,
    )
    .await;
    archiver.tracker().lock().unwrap().observe(writable(0, &format!("{SERVER_UUID}:1-3")));
    let report = archiver.scan(Ok(safe_settings()), now()).await.unwrap();
    assert_eq!(report.uploaded, ["binlog.000001", "binlog.000002", "binlog.000003"]);
    assert_eq!(archiver.status().archive.encryption_mode, "Passphrase");
    archiver
}

/// Every stored binlog object is a BRV1 envelope holding none of the plaintext markers, and
/// its manifest row names the plaintext (keyed id, plaintext size).
async fn assert_sealed_at_rest<S: ObjectStore>(store: &S, root: &ArchiveRoot, data: &Path) {
    let keys: Vec<String> = list_all(store, &format!("{}/a/", root.as_str()))
        .await
        .unwrap()
        .into_iter()
        .map(|object| object.key)
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    let keyed = ContentIdKey::from_passphrase(PASSPHRASE);
    let originals: Vec<Vec<u8>> =
        (1..=3).map(|n| std::fs::read(data.join(format!("binlog.{n:06}"))).unwrap()).collect();
    for key in &keys {
        let bytes = store.get(key).await.unwrap().bytes;
        assert!(envelope::is_sealed(&bytes), "{key} is not a BRV1 envelope");
        for marker in MARKERS {
            assert!(
                !bytes.windows(marker.len()).any(|w| w == marker),
                "{key} holds the plaintext marker {:?}",
                String::from_utf8_lossy(marker)
            );
        }
        // The object name carries the keyed id, never the plaintext SHA-256.
        let plain = originals
            .iter()
            .find(|original| key.ends_with(&keyed.content_id(original).to_string()))
            .unwrap_or_else(|| panic!("{key} is not named by the keyed id of a local binlog"));
        assert!(!key.ends_with(&ContentIdKey::Plain.content_id(plain).to_string()));
        assert_eq!(bytes.len() as u64, envelope::sealed_len(plain.len() as u64));
    }
}

async fn refusal_token<S: ObjectStore>(
    store: &S,
    root: &ArchiveRoot,
    key: ReaderKey,
) -> RefusalToken {
    let staging = tempfile::tempdir().unwrap();
    match download(store, root, ReaderOptions::new(key), Some(staging.path())).await.unwrap() {
        Opened::Refused(refusal) => refusal.token,
        Opened::Archive(_) => panic!("the archive opened"),
    }
}

/// Downloads with the passphrase; every staged file is the original plaintext.
async fn assert_round_trip<S: ObjectStore>(store: &S, root: &ArchiveRoot, data: &Path) {
    let staging = tempfile::tempdir().unwrap();
    let opened =
        download(store, root, ReaderOptions::new(passphrase(PASSPHRASE)), Some(staging.path()))
            .await
            .unwrap();
    let downloaded = match opened {
        Opened::Archive(downloaded) => downloaded,
        Opened::Refused(refusal) => panic!("refused: {refusal}"),
    };
    assert_eq!(downloaded.archive.descriptor.encryption.mode, EncryptionMode::Passphrase);
    let rows = &downloaded.archive.manifests["a"].files;
    assert_eq!(downloaded.staged.len(), 3, "staged {:?}", downloaded.staged.keys());
    for row in rows {
        let local = std::fs::read(data.join(&row.name)).unwrap();
        let staged = &downloaded.staged[&row.object_key("a").unwrap()];
        assert_eq!(std::fs::read(staged).unwrap(), local, "{}", row.name);
        assert_eq!(row.size, local.len() as u64);
    }
}

#[tokio::test]
async fn an_encrypted_archive_on_the_pvc_layout_round_trips_and_holds_no_plaintext() {
    crate::bounded(
        "an_encrypted_archive_on_the_pvc_layout_round_trips_and_holds_no_plaintext",
        120,
        async {
            let pvc = tempfile::tempdir().unwrap();
            let store = FsStore::new(pvc.path()).unwrap();
            let root = ArchiveRoot::under_profile("lion").unwrap();
            let data = datadir();
            let _archiver = archive_encrypted(&store, &root, data.path(), "PVC").await;

            assert_sealed_at_rest(&store, &root, data.path()).await;
            assert_round_trip(&store, &root, data.path()).await;

            // Without the key, or with another passphrase, the reader refuses with the tokens.
            assert_eq!(
                refusal_token(&store, &root, ReaderKey::None).await,
                RefusalToken::ArchiveEncryptionMismatch
            );
            assert_eq!(
                refusal_token(&store, &root, passphrase(b"wrong")).await,
                RefusalToken::ArchiveKeyMismatch
            );

            // A sidecar mounting another passphrase refuses the archive and writes nothing.
            let before = list_all(&store, "").await.unwrap();
            let local = LocalBinlogs::new(data.path(), "binlog.index");
            let mut wrong = Archiver::open(
                store.clone(),
                encrypted_config("b", &root, "PVC", passphrase(b"wrong")),
                local,
                NoCutoff,
            )
            .await;
            wrong.tracker().lock().unwrap().observe(writable(0, &format!("{SERVER_UUID}:1-3")));
            let error = wrong.scan(Ok(safe_settings()), now()).await.unwrap_err();
            assert!(matches!(error, ScanError::Session(_)), "{error}");
            let status = wrong.status();
            assert!(
                status.last_error.starts_with("PITRArchiveKeyMismatch"),
                "{}",
                status.last_error
            );
            assert_eq!(status.archive.state, ArchiveState::Refused);
            assert_eq!(list_all(&store, "").await.unwrap(), before);
        },
    )
    .await;
}

#[tokio::test]
async fn an_altered_or_moved_object_is_not_accepted_by_the_reader() {
    crate::bounded("an_altered_or_moved_object_is_not_accepted_by_the_reader", 120, async {
        let pvc = tempfile::tempdir().unwrap();
        let store = FsStore::new(pvc.path()).unwrap();
        let root = ArchiveRoot::under_profile("lion").unwrap();
        let data = datadir();
        let _archiver = archive_encrypted(&store, &root, data.path(), "PVC").await;
        let keys: Vec<String> = list_all(&store, &format!("{}/a/", root.as_str()))
            .await
            .unwrap()
            .into_iter()
            .map(|object| object.key)
            .collect();

        // One byte of the first object flipped, the second object's bytes under the third's key.
        let mut altered = store.get(&keys[0]).await.unwrap().bytes;
        let last = altered.len() - 1;
        altered[last] ^= 1;
        store.put(&keys[0], altered).await.unwrap();
        let moved = store.get(&keys[1]).await.unwrap().bytes;
        store.put(&keys[2], moved).await.unwrap();

        let staging = tempfile::tempdir().unwrap();
        let opened = download(
            &store,
            &root,
            ReaderOptions::new(passphrase(PASSPHRASE)),
            Some(staging.path()),
        )
        .await
        .unwrap();
        let downloaded = match opened {
            Opened::Archive(downloaded) => downloaded,
            Opened::Refused(refusal) => panic!("refused: {refusal}"),
        };
        let staged: Vec<&String> = downloaded.staged.keys().collect();
        assert_eq!(staged.len(), 1, "only the untouched object authenticates: {staged:?}");
        let untouched = keys[1].strip_prefix(&format!("{}/", root.as_str())).unwrap();
        assert_eq!(staged[0], untouched);
        // The envelope names the object it refused.
        let error = envelope::open(
            &keys[0],
            &store.get(&keys[0]).await.unwrap().bytes,
            &EnvelopeKey::from_passphrase(PASSPHRASE),
            b"",
        )
        .unwrap_err();
        assert!(error.to_string().starts_with(&keys[0]), "{error}");
    })
    .await;
}

#[tokio::test]
async fn an_encrypted_archive_on_seaweedfs_round_trips_and_holds_no_plaintext() {
    crate::bounded(
        "an_encrypted_archive_on_seaweedfs_round_trips_and_holds_no_plaintext",
        240,
        async {
            let weed =
                bloodraven_store::testing::SeaweedFs::start().unwrap_or_else(|e| panic!("{e}"));
            let store = weed.bucket_store("encrypted", "").await.unwrap();
            let root = ArchiveRoot::under_profile("lion").unwrap();
            let data = datadir();
            let _archiver = archive_encrypted(&store, &root, data.path(), "S3").await;
            assert_sealed_at_rest(&store, &root, data.path()).await;
            assert_round_trip(&store, &root, data.path()).await;
        },
    )
    .await;
}
