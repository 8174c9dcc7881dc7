//! Format round trips: archive.json and manifest version 2.

use bloodraven_archive::descriptor::{ArchiveDescriptor, ArchiveId, DescriptorError};
use bloodraven_archive::fixtures::{
    Fixture, GROUP_UID, PASSPHRASE, Scenario, UUID_A, UUID_B, range,
};
use bloodraven_archive::ident::{ContentIdKey, object_key, verify_key_check};
use bloodraven_archive::manifest::{
    FileRow, GtidCoverage, HistoryIntegrity, MAX_RECORDS, Manifest, ManifestError, PromotionRecord,
    RecordKind, Violation,
};
use bloodraven_archive::{Destination, Encryption, EncryptionMode, SourceRef};
use expect_test::expect;
use jiff::{SignedDuration, Timestamp};

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn archive_id() -> ArchiveId {
    let destination = Destination::Pvc {
        namespace: "prod".into(),
        claim: "lion-archive".into(),
        sub_path: "pitr".into(),
    };
    ArchiveId::derive(GROUP_UID, &destination.normalize().unwrap())
}

#[test]
fn descriptor_round_trip() {
    let id = archive_id();
    let descriptor = ArchiveDescriptor::new(
        id.clone(),
        SourceRef { namespace: "prod".into(), name: "lion".into(), uid: GROUP_UID.into() },
        Encryption::passphrase(PASSPHRASE, &id),
        ts("2026-11-05T09:30:00Z"),
        "iad",
    );
    let bytes = descriptor.to_vec();
    expect![[r#"
        {"kind":"BloodravenPITRArchive","version":1,"archiveID":"ar1-wpw2a5xr6uzse732eaca55brni","source":{"namespace":"prod","name":"lion","uid":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"},"encryption":{"mode":"Passphrase","algorithm":"AES-256-GCM","keyCheck":"RPrXt4V4GQjJr3RPju5sCivgiIapBXC0wJQHdMMvyGI"},"createdAt":"2026-11-05T09:30:00.000000Z","createdBy":"iad"}
    "#]]
    .assert_eq(std::str::from_utf8(&bytes).unwrap());
    let back = ArchiveDescriptor::from_slice(&bytes).unwrap();
    assert_eq!(back, descriptor);
    assert_eq!(back.encryption.mode, EncryptionMode::Passphrase);
    assert!(verify_key_check(PASSPHRASE, &id, back.encryption.key_check.as_deref().unwrap()));
    // The spec's example shape parses; unknown fields are kept.
    let spec = br#"{"kind":"BloodravenPITRArchive","version":1,"archiveID":"ar1-dnvepjhwbapqvfkxvffntk3yfq",
      "source":{"namespace":"prod","name":"lion","uid":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"},
      "encryption":{"mode":"None"},
      "createdAt":"2026-11-05T09:30:00.000000Z","createdBy":"iad","note":"x"}"#;
    let parsed = ArchiveDescriptor::from_slice(spec).unwrap();
    assert_eq!(parsed.encryption, Encryption::none());
    assert_eq!(parsed.extra["note"], "x");
    let again = ArchiveDescriptor::from_slice(&parsed.to_vec()).unwrap();
    assert_eq!(again, parsed);
}

#[test]
fn descriptor_errors() {
    let check = |bytes: &[u8]| ArchiveDescriptor::from_slice(bytes).unwrap_err().to_string();
    expect!["archive.json is damaged: EOF while parsing a value at line 1 column 0"]
        .assert_eq(&check(b""));
    expect!["archive.json is damaged: trailing characters at line 1 column 4"]
        .assert_eq(&check(b"{} x"));
    expect![[r#"archive.json is damaged: kind is "", not "BloodravenPITRArchive""#]]
        .assert_eq(&check(b"{}"));
    expect!["archive.json is damaged: version: 0 is not a supported version"]
        .assert_eq(&check(br#"{"kind":"BloodravenPITRArchive","version":0}"#));
    assert!(matches!(
        ArchiveDescriptor::from_slice(&vec![b' '; 64 * 1024 + 1]),
        Err(DescriptorError::TooLarge { len: 65537 })
    ));
}

fn full_manifest() -> Manifest {
    let key = ContentIdKey::Plain;
    let id = key.content_id(b"binlog bytes");
    let mut manifest = Manifest::new(archive_id(), "iad");
    manifest
        .upsert_file(FileRow {
            name: "mysql-bin.000042".into(),
            id: Some(id),
            key: object_key("iad", "mysql-bin.000042", &id).unwrap(),
            size: 1234,
            previous_gtids: range(UUID_A, 1, 41),
            gtids: range(UUID_A, 42, 50),
            first_event_time: Some(ts("2026-11-05T09:30:01.5Z")),
            last_event_time: Some(ts("2026-11-05T09:31:00Z")),
            archived_at: Some(ts("2026-11-05T09:32:00Z")),
            gtid_coverage: Some(GtidCoverage {
                complete: true,
                gtids: range(UUID_A, 42, 50),
                content_id: Some(id),
                extra: Default::default(),
            }),
            divergent: true,
            quarantined: true,
            base_gtids: Some(range(UUID_A, 1, 41)),
            extra: Default::default(),
        })
        .unwrap();
    manifest.push_record(PromotionRecord {
        kind: RecordKind::Promotion,
        server_uuid: UUID_A,
        server_id: 1,
        gtid_executed: range(UUID_A, 1, 41),
        observed_at: ts("2026-11-05T09:29:00Z"),
        probe_interval: Some(SignedDuration::from_millis(5500)),
        read_only_gtid_executed: Some(range(UUID_A, 1, 40)),
        extra: Default::default(),
    });
    manifest.push_record(PromotionRecord {
        kind: RecordKind::Reset,
        server_uuid: UUID_B,
        server_id: 2,
        gtid_executed: range(UUID_A, 1, 50),
        observed_at: ts("2026-11-05T09:40:00Z"),
        probe_interval: None,
        read_only_gtid_executed: None,
        extra: Default::default(),
    });
    manifest.history_integrity = Some(HistoryIntegrity {
        violation: Violation::CommitOrder,
        detail: "replica_preserve_commit_order=OFF".into(),
        at: ts("2026-11-05T09:41:00Z"),
        extra: Default::default(),
    });
    manifest
}

#[test]
fn manifest_round_trip() {
    let manifest = full_manifest();
    let bytes = manifest.to_vec();
    expect![[r#"
        {
          "version": 2,
          "archiveId": "ar1-wpw2a5xr6uzse732eaca55brni",
          "site": "iad",
          "files": [
            {
              "name": "mysql-bin.000042",
              "id": "dd34acca5f260b19dc653b673ae401eadc65a48dc878a44283b72848570f968d",
              "key": "iad/mysql-bin.000042.dd34acca5f260b19dc653b673ae401eadc65a48dc878a44283b72848570f968d",
              "size": 1234,
              "previousGtids": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-41",
              "gtids": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:42-50",
              "firstEventTime": "2026-11-05T09:30:01.500000Z",
              "lastEventTime": "2026-11-05T09:31:00.000000Z",
              "archivedAt": "2026-11-05T09:32:00.000000Z",
              "gtidCoverage": {
                "complete": true,
                "gtids": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:42-50",
                "contentId": "dd34acca5f260b19dc653b673ae401eadc65a48dc878a44283b72848570f968d"
              },
              "divergent": true,
              "quarantined": true,
              "baseGtids": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-41"
            }
          ],
          "promotions": [
            {
              "serverUuid": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
              "serverId": 1,
              "gtidExecuted": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-41",
              "observedAt": "2026-11-05T09:29:00.000000Z",
              "probeInterval": "5.5s",
              "readOnlyGtidExecuted": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-40"
            },
            {
              "kind": "Reset",
              "serverUuid": "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb",
              "serverId": 2,
              "gtidExecuted": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-50",
              "observedAt": "2026-11-05T09:40:00.000000Z"
            }
          ],
          "historyIntegrity": {
            "violation": "CommitOrder",
            "detail": "replica_preserve_commit_order=OFF",
            "at": "2026-11-05T09:41:00.000000Z"
          }
        }
    "#]]
    .assert_eq(std::str::from_utf8(&bytes).unwrap());
    let back = Manifest::from_slice("manifest-iad.json", &bytes).unwrap();
    assert_eq!(back, manifest);
}

#[test]
fn retirement_and_records() {
    let mut manifest = full_manifest();
    let keys = manifest.retire(|row| row.name == "mysql-bin.000042").unwrap();
    assert_eq!(keys.len(), 1);
    assert!(manifest.files.is_empty());
    assert_eq!(manifest.pruned.len(), 1);
    assert!(!manifest.pruned[0].deleted);
    let id = manifest.pruned[0].id;
    assert!(manifest.acknowledge_deleted("mysql-bin.000042", id.as_ref()));
    assert!(!manifest.acknowledge_deleted("mysql-bin.000042", id.as_ref()));
    let bytes = manifest.to_vec();
    let back = Manifest::from_slice("manifest-iad.json", &bytes).unwrap();
    assert_eq!(back.pruned, manifest.pruned);
    assert!(back.pruned[0].deleted);
    // Only the newest 256 records are kept.
    let record = manifest.promotions[0].clone();
    for n in 0..300 {
        let mut record = record.clone();
        record.server_id = n;
        manifest.push_record(record);
    }
    assert_eq!(manifest.promotions.len(), MAX_RECORDS);
    assert_eq!(manifest.promotions.last().unwrap().server_id, 299);
    assert_eq!(manifest.promotions[0].server_id, 300 - 256);
}

#[test]
fn legacy_rows_and_manifest_errors() {
    // A legacy row: empty id, basename-only key, identity in contentId.
    let json = format!(
        r#"{{"version":2,"archiveId":"{}","site":"iad","files":[{{"name":"mysql-bin.000001","id":"","key":"mysql-bin.000001","size":1}}]}}"#,
        archive_id()
    );
    let manifest = Manifest::from_slice("manifest-iad.json", json.as_bytes()).unwrap();
    assert_eq!(manifest.files[0].id, None);
    assert_eq!(manifest.files[0].object_key("iad").unwrap(), "iad/mysql-bin.000001");
    let check = |name: &str, json: &str| Manifest::from_slice(name, json.as_bytes()).unwrap_err();
    assert!(matches!(
        check("manifest-a.json", r#"{"version":1,"site":"a"}"#),
        ManifestError::Legacy { version: 1, .. }
    ));
    assert!(matches!(
        check("manifest-a.json", r#"{"site":"a"}"#),
        ManifestError::Legacy { version: 0, .. }
    ));
    assert!(matches!(
        check("manifest-a.json", r#"{"version":3}"#),
        ManifestError::VersionUnsupported { version: 3, .. }
    ));
    let wrong_site = json.replace("manifest-iad", "x");
    let error = check("manifest-pdx.json", &wrong_site);
    assert_eq!(error.to_string(), "manifest-pdx.json is damaged: it names site \"iad\"");
    let bad_id = json.replace(r#""id":"""#, r#""id":"ABC""#);
    let error = check("manifest-iad.json", &bad_id);
    assert!(
        error
            .to_string()
            .starts_with("manifest-iad.json is damaged: invalid content id \"ABC\" at byte 0"),
        "{error}"
    );
    let bad_name = json.replace(r#""name":"mysql-bin.000001""#, r#""name":"../etc/passwd""#);
    assert!(
        check("manifest-iad.json", &bad_name).to_string().contains("is not a binlog file name")
    );
}

#[test]
fn fixture_objects_are_real_binlogs_under_their_content_ids() {
    let fixture = Fixture::build(Scenario::HealthyPlannedFailover);
    let mut bodies = 0;
    for (site, manifest) in &fixture.manifests {
        for row in &manifest.files {
            let key = row.object_key(site).unwrap();
            assert_eq!(key, row.key);
            let body = &fixture.objects[&key];
            assert_eq!(body.len() as u64, row.size);
            assert_eq!(Some(ContentIdKey::Plain.content_id(body)), row.id);
            let summary = bloodraven_binlog::scan(body);
            assert!(summary.coverage.is_complete(), "{key}: {:?}", summary.problem);
            assert_eq!(summary.coverage.gtids, row.gtids);
            assert_eq!(summary.previous_gtids.as_ref(), Some(&row.previous_gtids));
            bodies += 1;
        }
    }
    assert_eq!(bodies, 4);
    // Retired objects are gone; the encrypted fixture carries no bodies.
    assert_eq!(fixture.objects.keys().filter(|k| k.contains('/')).count(), 4);
    let encrypted = Fixture::build(Scenario::Encrypted);
    assert!(encrypted.objects.keys().all(|k| !k.contains('/')));
}

#[test]
fn a_failed_retirement_changes_nothing() {
    // A manifest whose site cannot name an object (built in memory, never read from a store):
    // retirement refuses, and the live rows stay where they were.
    let valid = full_manifest();
    let mut manifest = Manifest::new(archive_id(), "IAD");
    manifest.files = valid.files.clone();
    let mut other = valid.files[0].clone();
    other.name = "mysql-bin.000043".into();
    manifest.files.push(other);
    let before = manifest.clone();
    assert!(manifest.retire(|_| true).is_err());
    assert_eq!(manifest, before);
}
