//! One test per reader refusal token, the order between them, and transient handling.

use std::collections::BTreeMap;

use bloodraven_archive::descriptor::ArchiveId;
use bloodraven_archive::fixtures::{Fixture, GROUP_UID, PASSPHRASE, Scenario};
use bloodraven_archive::reader::{
    FetchError, OpenError, PermissionCause, ReaderKey, ReaderOptions, check_writer_descriptor,
};
use bloodraven_archive::refusal::{
    REMEDY_DAMAGED_DESCRIPTOR, REMEDY_DAMAGED_MANIFEST, REMEDY_LIST_EACCES,
    REMEDY_LIST_S3_FORBIDDEN, RefusalToken,
};
use bloodraven_archive::{Destination, Manifest, Refusal};

use crate::{Failures, key_of, open_fixture, open_with};

type Objects = BTreeMap<String, Vec<u8>>;
type Edit = Box<dyn Fn(&mut Objects)>;

fn refusal(result: Result<bloodraven_archive::OpenArchive, OpenError>) -> Refusal {
    match result {
        Err(OpenError::Refused(refusal)) => refusal,
        Err(other) => panic!("expected a refusal, got {other:?}"),
        Ok(_) => panic!("expected a refusal, the archive opened"),
    }
}

fn healthy() -> Fixture {
    Fixture::build(Scenario::HealthyPlannedFailover)
}

fn open_objects(
    objects: &BTreeMap<String, Vec<u8>>,
) -> Result<bloodraven_archive::OpenArchive, OpenError> {
    open_with(objects, ReaderOptions::new(ReaderKey::None), Failures::new())
}

fn edit_descriptor(
    objects: &mut BTreeMap<String, Vec<u8>>,
    edit: impl FnOnce(&mut serde_json::Value),
) {
    let mut value: serde_json::Value = serde_json::from_slice(&objects["archive.json"]).unwrap();
    edit(&mut value);
    objects.insert("archive.json".into(), serde_json::to_vec(&value).unwrap());
}

fn edit_manifest(
    objects: &mut BTreeMap<String, Vec<u8>>,
    site: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) {
    let key = format!("manifest-{site}.json");
    let mut value: serde_json::Value = serde_json::from_slice(&objects[&key]).unwrap();
    edit(&mut value);
    objects.insert(key, serde_json::to_vec(&value).unwrap());
}

#[test]
fn every_fixture_but_legacy_opens() {
    for scenario in Scenario::ALL {
        let fixture = Fixture::build(scenario);
        let result = open_fixture(&fixture);
        if scenario == Scenario::LegacyV1 {
            assert_eq!(refusal(result).token, RefusalToken::ArchiveLegacy);
        } else {
            let archive = result.unwrap();
            assert_eq!(archive.manifests, fixture.manifests, "{}", scenario.name());
            assert_eq!(Some(archive.descriptor), fixture.descriptor);
        }
    }
}

#[test]
fn list_failed_s3_forbidden() {
    let fixture = healthy();
    let failures = Failures::from([(
        String::new(),
        vec![FetchError::PermissionDenied {
            cause: PermissionCause::S3Forbidden,
            detail: "AccessDenied".into(),
        }],
    )]);
    let refused =
        refusal(open_with(&fixture.objects, ReaderOptions::new(ReaderKey::None), failures));
    assert_eq!(refused.token, RefusalToken::ArchiveListFailed);
    assert_eq!(refused.remedy, REMEDY_LIST_S3_FORBIDDEN);
    assert!(
        refused
            .to_string()
            .starts_with("PITRArchiveListFailed: listing the archive was refused: S3 returned 403")
    );
    assert!(refused.to_string().ends_with("grant s3:ListBucket on the archive prefix"));
}

#[test]
fn list_failed_eacces() {
    let fixture = healthy();
    let failures = Failures::from([(
        String::new(),
        vec![FetchError::PermissionDenied {
            cause: PermissionCause::FilesystemDenied,
            detail: "open binlogs: permission denied".into(),
        }],
    )]);
    let refused =
        refusal(open_with(&fixture.objects, ReaderOptions::new(ReaderKey::None), failures));
    assert_eq!(refused.token, RefusalToken::ArchiveListFailed);
    assert_eq!(refused.remedy, REMEDY_LIST_EACCES);
}

#[test]
fn not_found() {
    let refused = refusal(open_objects(&BTreeMap::new()));
    assert_eq!(refused.token, RefusalToken::ArchiveNotFound);
    // Probe objects of a writer that never created the descriptor do not count.
    let objects =
        BTreeMap::from([(".bloodraven-cas-probe-0123456789abcdef".to_owned(), Vec::new())]);
    assert_eq!(refusal(open_objects(&objects)).token, RefusalToken::ArchiveNotFound);
    // A listing error NotFound is an empty prefix.
    let failures = Failures::from([(String::new(), vec![FetchError::NotFound])]);
    let refused =
        refusal(open_with(&BTreeMap::new(), ReaderOptions::new(ReaderKey::None), failures));
    assert_eq!(refused.token, RefusalToken::ArchiveNotFound);
}

#[test]
fn version_unsupported_newer_descriptor_and_unknown_mode() {
    let mut objects = healthy().objects;
    edit_descriptor(&mut objects, |v| v["version"] = 2.into());
    let refused = refusal(open_objects(&objects));
    assert_eq!(refused.token, RefusalToken::ArchiveVersionUnsupported);
    assert_eq!(refused.message, "archive.json has version 2; this release reads version 1");
    assert_eq!(refused.remedy, RefusalToken::ArchiveVersionUnsupported.remedy());

    let mut objects = healthy().objects;
    edit_descriptor(&mut objects, |v| v["encryption"]["mode"] = "Kms".into());
    let refused = refusal(open_objects(&objects));
    assert_eq!(refused.token, RefusalToken::ArchiveVersionUnsupported);
    assert!(refused.message.contains("encryption mode \"Kms\""), "{}", refused.message);
}

#[test]
fn version_unsupported_damaged_descriptor() {
    let base = healthy().objects;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "undecodable",
            Box::new(|o| {
                o.insert("archive.json".into(), b"{\"kind\": ".to_vec());
            }),
        ),
        (
            "trailing data",
            Box::new(|o| {
                o.get_mut("archive.json").unwrap().extend_from_slice(b"{}");
            }),
        ),
        ("wrong kind", Box::new(|o| edit_descriptor(o, |v| v["kind"] = "Other".into()))),
        (
            "malformed archive id",
            Box::new(|o| edit_descriptor(o, |v| v["archiveID"] = "ar1-X".into())),
        ),
        (
            "malformed createdAt",
            Box::new(|o| edit_descriptor(o, |v| v["createdAt"] = "yesterday".into())),
        ),
        (
            "namespace outside bounds",
            Box::new(|o| edit_descriptor(o, |v| v["source"]["namespace"] = "x".repeat(64).into())),
        ),
        (
            "name outside bounds",
            Box::new(|o| edit_descriptor(o, |v| v["source"]["name"] = "Lion".into())),
        ),
        (
            "keyCheck on plaintext",
            Box::new(|o| edit_descriptor(o, |v| v["encryption"]["keyCheck"] = "x".into())),
        ),
        (
            "larger than 64 KiB",
            Box::new(|o| edit_descriptor(o, |v| v["padding"] = "x".repeat(70_000).into())),
        ),
    ];
    for (what, edit) in cases {
        let mut objects = base.clone();
        edit(&mut objects);
        let refused = refusal(open_objects(&objects));
        assert_eq!(refused.token, RefusalToken::ArchiveVersionUnsupported, "{what}");
        assert!(
            refused.message.starts_with("archive.json is damaged"),
            "{what}: {}",
            refused.message
        );
        assert_eq!(refused.remedy, REMEDY_DAMAGED_DESCRIPTOR, "{what}");
    }
}

#[test]
fn version_unsupported_newer_manifest() {
    let mut objects = healthy().objects;
    edit_manifest(&mut objects, "b", |v| v["version"] = 3.into());
    let refused = refusal(open_objects(&objects));
    assert_eq!(refused.token, RefusalToken::ArchiveVersionUnsupported);
    assert_eq!(refused.message, "manifest-b.json is version 3; this release reads version 2");
    // A damaged manifest is refused the same way, with the damaged wording.
    let mut objects = healthy().objects;
    objects.insert("manifest-b.json".into(), b"{\"version\":2,\"archiveId\":".to_vec());
    let refused = refusal(open_objects(&objects));
    assert_eq!(refused.token, RefusalToken::ArchiveVersionUnsupported);
    assert!(refused.message.starts_with("manifest-b.json is damaged"), "{}", refused.message);
    assert_eq!(refused.remedy, REMEDY_DAMAGED_MANIFEST);
}

#[test]
fn legacy() {
    // A version 1 prefix without a descriptor.
    let fixture = Fixture::build(Scenario::LegacyV1);
    let refused = refusal(open_fixture(&fixture));
    assert_eq!(refused.token, RefusalToken::ArchiveLegacy);
    assert!(refused.message.contains("manifest-a.json"), "{}", refused.message);
    // An older writer rewrote one manifest as version 1 under a descriptor.
    let mut objects = healthy().objects;
    edit_manifest(&mut objects, "a", |v| {
        v["version"] = 1.into();
        v.as_object_mut().unwrap().remove("archiveId");
    });
    let refused = refusal(open_objects(&objects));
    assert_eq!(refused.token, RefusalToken::ArchiveLegacy);
    // Objects but neither descriptor nor manifests.
    let objects = BTreeMap::from([("a/mysql-bin.000001".to_owned(), b"x".to_vec())]);
    assert_eq!(refusal(open_objects(&objects)).token, RefusalToken::ArchiveLegacy);
}

#[test]
fn descriptor_missing() {
    let mut objects = healthy().objects;
    objects.remove("archive.json");
    let refused = refusal(open_objects(&objects));
    assert_eq!(refused.token, RefusalToken::ArchiveDescriptorMissing);
    assert!(refused.message.contains("manifest-a.json"));
}

#[test]
fn identity_mismatch() {
    let mut objects = healthy().objects;
    edit_manifest(&mut objects, "c", |v| v["archiveId"] = "ar1-aaaaaaaaaaaaaaaaaaaaaaaaaa".into());
    let refused = refusal(open_objects(&objects));
    assert_eq!(refused.token, RefusalToken::ArchiveIdentityMismatch);
    assert!(
        refused.message.starts_with("manifest-c.json names archive ar1-aaaaaaaaaaaaaaaaaaaaaaaaaa")
    );

    let fixture = healthy();
    let mut options = ReaderOptions::new(ReaderKey::None);
    options.expected_archive_id = Some("ar1-aaaaaaaaaaaaaaaaaaaaaaaaaa".parse().unwrap());
    let refused = refusal(open_with(&fixture.objects, options, Failures::new()));
    assert_eq!(refused.token, RefusalToken::ArchiveIdentityMismatch);

    let mut options = ReaderOptions::new(ReaderKey::None);
    options.expected_source_uid = Some("another-uid".into());
    let refused = refusal(open_with(&fixture.objects, options, Failures::new()));
    assert_eq!(refused.token, RefusalToken::ArchiveIdentityMismatch);

    let mut options = ReaderOptions::new(ReaderKey::None);
    options.expected_archive_id = fixture.descriptor.as_ref().map(|d| d.archive_id.clone());
    options.expected_source_uid = Some(GROUP_UID.into());
    assert!(open_with(&fixture.objects, options, Failures::new()).is_ok());
}

#[test]
fn encryption_mismatch() {
    let fixture = Fixture::build(Scenario::Encrypted);
    let refused =
        refusal(open_with(&fixture.objects, ReaderOptions::new(ReaderKey::None), Failures::new()));
    assert_eq!(refused.token, RefusalToken::ArchiveEncryptionMismatch);
    let key = ReaderKey::Passphrase {
        algorithm: "ChaCha20-Poly1305".into(),
        passphrase: PASSPHRASE.to_vec(),
    };
    let refused = refusal(open_with(&fixture.objects, ReaderOptions::new(key), Failures::new()));
    assert_eq!(refused.token, RefusalToken::ArchiveEncryptionMismatch);
    let plain = healthy();
    let refused =
        refusal(open_with(&plain.objects, ReaderOptions::new(key_of(&fixture)), Failures::new()));
    assert_eq!(refused.token, RefusalToken::ArchiveEncryptionMismatch);
}

#[test]
fn key_mismatch() {
    let fixture = Fixture::build(Scenario::Encrypted);
    let key =
        ReaderKey::Passphrase { algorithm: "AES-256-GCM".into(), passphrase: b"wrong".to_vec() };
    let refused = refusal(open_with(&fixture.objects, ReaderOptions::new(key), Failures::new()));
    assert_eq!(refused.token, RefusalToken::ArchiveKeyMismatch);
    // The right key opens it, and content ids are keyed.
    let archive = open_fixture(&fixture).unwrap();
    assert_eq!(
        archive.content_id_key,
        bloodraven_archive::ContentIdKey::from_passphrase(PASSPHRASE)
    );
}

#[test]
fn history_reset() {
    let mut objects = healthy().objects;
    edit_manifest(&mut objects, "b", |v| v["resetEpoch"] = 1.into());
    let refused = refusal(open_objects(&objects));
    assert_eq!(refused.token, RefusalToken::ArchiveHistoryReset);
    assert_eq!(refused.message, "manifest-b.json records reset epoch 1");
}

#[test]
fn refusal_order_follows_the_spec() {
    // Legacy manifest + foreign manifest + reset epoch: Legacy wins over identity and reset.
    let mut objects = healthy().objects;
    edit_manifest(&mut objects, "a", |v| v["version"] = 1.into());
    edit_manifest(&mut objects, "b", |v| v["archiveId"] = "ar1-aaaaaaaaaaaaaaaaaaaaaaaaaa".into());
    edit_manifest(&mut objects, "c", |v| v["resetEpoch"] = 2.into());
    assert_eq!(refusal(open_objects(&objects)).token, RefusalToken::ArchiveLegacy);
    // Identity before encryption.
    let mut fixture = Fixture::build(Scenario::Encrypted);
    edit_manifest(&mut fixture.objects, "a", |v| {
        v["archiveId"] = "ar1-aaaaaaaaaaaaaaaaaaaaaaaaaa".into()
    });
    let refused =
        refusal(open_with(&fixture.objects, ReaderOptions::new(ReaderKey::None), Failures::new()));
    assert_eq!(refused.token, RefusalToken::ArchiveIdentityMismatch);
}

#[test]
fn transient_errors_are_retried_and_never_damage() {
    let fixture = healthy();
    let transient = || FetchError::Transient { detail: "503 SlowDown".into() };
    // Two transient failures on the listing and on a manifest, then success.
    let failures = Failures::from([
        (String::new(), vec![transient(), transient()]),
        (
            "manifest-b.json".into(),
            vec![
                transient(),
                FetchError::PermissionDenied {
                    cause: PermissionCause::S3Forbidden,
                    detail: "403".into(),
                },
            ],
        ),
    ]);
    assert!(open_with(&fixture.objects, ReaderOptions::new(ReaderKey::None), failures).is_ok());
    // Persisting failures end without a token.
    let failures = Failures::from([("archive.json".into(), vec![transient(); 6])]);
    match open_with(&fixture.objects, ReaderOptions::new(ReaderKey::None), failures) {
        Err(OpenError::Transient { what, attempts, detail }) => {
            assert_eq!(
                (what.as_str(), attempts, detail.as_str()),
                ("archive.json", 6, "503 SlowDown")
            );
        }
        other => panic!("{other:?}"),
    }
    // A manifest listed and then gone: the reader lists again.
    let failures = Failures::from([("manifest-a.json".into(), vec![FetchError::NotFound])]);
    assert!(open_with(&fixture.objects, ReaderOptions::new(ReaderKey::None), failures).is_ok());
    // Without a descriptor, a manifest read failure while classifying is transient, not Legacy.
    let mut objects = Fixture::build(Scenario::LegacyV1).objects;
    objects.remove("archive.json");
    let failures = Failures::from([("manifest-a.json".into(), vec![transient(); 6])]);
    assert!(matches!(
        open_with(&objects, ReaderOptions::new(ReaderKey::None), failures),
        Err(OpenError::Transient { .. })
    ));
}

#[test]
fn backoff_doubles() {
    let mut reader = bloodraven_archive::ArchiveReader::new(ReaderOptions::new(ReaderKey::None));
    let mut waits = Vec::new();
    while let Some(fetch) = reader.next_fetch() {
        waits.push(fetch.backoff.as_secs());
        reader.feed_listing(Err(FetchError::Transient { detail: "x".into() }));
    }
    assert_eq!(waits, [0, 1, 2, 4, 8, 16]);
}

#[test]
fn writer_acceptance() {
    let fixture = healthy();
    let descriptor = fixture.descriptor.unwrap();
    let own = descriptor.archive_id.clone();
    assert!(check_writer_descriptor(&descriptor, GROUP_UID, &own, &ReaderKey::None).is_ok());
    let refused =
        check_writer_descriptor(&descriptor, "other-uid", &own, &ReaderKey::None).unwrap_err();
    assert_eq!(refused.token, RefusalToken::ArchiveForeign);
    let copy_destination = Destination::S3 {
        bucket: "lion-dr".into(),
        prefix: "prod".into(),
        endpoint: String::new(),
    };
    let copy_id = ArchiveId::derive(GROUP_UID, &copy_destination.normalize().unwrap());
    let refused =
        check_writer_descriptor(&descriptor, GROUP_UID, &copy_id, &ReaderKey::None).unwrap_err();
    assert_eq!(refused.token, RefusalToken::ArchiveCopy);
    let key = ReaderKey::Passphrase { algorithm: "AES-256-GCM".into(), passphrase: b"p".to_vec() };
    let refused = check_writer_descriptor(&descriptor, GROUP_UID, &own, &key).unwrap_err();
    assert_eq!(refused.token, RefusalToken::ArchiveEncryptionMismatch);
}

#[test]
fn unknown_manifest_fields_survive_a_read_modify_write() {
    let mut objects = healthy().objects;
    edit_manifest(&mut objects, "a", |v| {
        v["futureTopLevel"] = serde_json::json!({"x": 1});
        v["files"][0]["futureRowField"] = "kept".into();
        v["promotions"][0]["futureRecordField"] = 7.into();
    });
    let archive = open_objects(&objects).unwrap();
    let mut manifest: Manifest = archive.manifests["a"].clone();
    manifest.push_record(manifest.promotions[0].clone());
    let written: serde_json::Value = serde_json::from_slice(&manifest.to_vec()).unwrap();
    assert_eq!(written["futureTopLevel"], serde_json::json!({"x": 1}));
    assert_eq!(written["files"][0]["futureRowField"], "kept");
    assert_eq!(written["promotions"][1]["futureRecordField"], 7);
}

#[test]
fn a_manifest_key_with_an_invalid_site_is_object_invalid_never_dropped() {
    let mut objects = healthy().objects;
    let bytes = objects["manifest-b.json"].clone();
    for bad in ["manifest-Bad_Site.json", "manifest-.json", "manifest-a.b.json"] {
        let mut objects = objects.clone();
        objects.insert(bad.to_owned(), bytes.clone());
        let refused = refusal(open_objects(&objects));
        assert_eq!(refused.token, RefusalToken::ArchiveObjectInvalid, "{bad}");
        assert!(refused.message.contains(bad), "{bad}: {}", refused.message);
    }
    // Other objects whose names merely start with "manifest-" are not manifests.
    objects.insert("manifest-notes.txt".to_owned(), Vec::new());
    assert!(open_objects(&objects).is_ok());
}
