use bloodraven_archive::fixtures::{Fixture, Scenario};
use bloodraven_store::archive::write_fixture;

use super::*;

fn anchors(fixture: &Fixture) -> Vec<BackupAnchor> {
    fixture
        .backups
        .iter()
        .map(|(name, point)| BackupAnchor {
            name: (*name).to_owned(),
            gtid_executed: Some(point.gtid_executed.to_string()),
            completed: Some(point.dump_end),
        })
        .collect()
}

/// Lays `scenario` at the PVC layout of `location` under a new directory.
async fn laid(scenario: Scenario, location: &ArchiveLocation) -> tempfile::TempDir {
    let directory = tempfile::tempdir().unwrap();
    let (store_root, root) = pvc_store(directory.path(), location).unwrap();
    std::fs::create_dir_all(&store_root).unwrap();
    let store = FsStore::new(&store_root).unwrap();
    write_fixture(&store, &root, &Fixture::build(scenario)).await.unwrap();
    directory
}

/// The planner's view of a fixture archive, every row indexed from its bytes (as `load` reads
/// them through pitr-download).
fn indexed(fixture: &Fixture, archive: &OpenArchive) -> bloodraven_pitr::History {
    let mut index = bloodraven_pitr::RowIndex::new();
    for (site, manifest) in &archive.manifests {
        for row in &manifest.files {
            let key = row.object_key(site).unwrap();
            let bytes = &fixture.objects[&key];
            index.insert(key, bloodraven_pitr::index_row(row, &archive.content_id_key, bytes));
        }
    }
    bloodraven_pitr::History::from_archive(archive, index)
}

/// A summary of a fixture archive, as the archive source builds it.
pub(crate) fn fixture_summary(scenario: Scenario) -> ArchiveSummary {
    let fixture = Fixture::build(scenario);
    let archive = OpenArchive {
        descriptor: fixture.descriptor.clone().unwrap(),
        manifests: fixture.manifests.clone(),
        content_id_key: bloodraven_archive::ContentIdKey::Plain,
    };
    let history = indexed(&fixture, &archive);
    summarize_read(
        "pvc://orders/orders-backups/binlogs",
        &archive,
        Some(&history),
        &anchors(&fixture),
    )
}

/// The summary of the archive `bloodraven lab` lays for group `namespace/group` of lab scenario
/// `name`, its clock at the snapshots' fixed `now`.
pub(crate) fn lab_summary(name: &str, key: &(String, String)) -> ArchiveSummary {
    lab_summary_with(name, key, None)
}

/// [`lab_summary`] with the windows of `backups` (the scenario's MysqlBackups, as the console
/// asks for them) instead of the fixture's named backups.
pub(crate) fn lab_summary_with(
    name: &str,
    (namespace, group): &(String, String),
    backups: Option<&[BackupAnchor]>,
) -> ArchiveSummary {
    let mut objects = crate::scenarios::raw_objects(name).unwrap();
    crate::lab::assign_uids(&mut objects);
    let group: MysqlFailoverGroup = objects
        .iter()
        .find(|object| {
            object["kind"] == "MysqlFailoverGroup"
                && object["metadata"]["namespace"] == namespace.as_str()
                && object["metadata"]["name"] == group.as_str()
        })
        .map(|object| serde_json::from_value(object.clone()).unwrap())
        .unwrap();
    let now = crate::scenarios::SCENARIO_EPOCH.parse().unwrap();
    let lab = crate::lab::group_archive(name, &group, now).unwrap();
    let fixture = lab.fixture;
    let archive = OpenArchive {
        descriptor: fixture.descriptor.clone().unwrap(),
        manifests: fixture.manifests.clone(),
        content_id_key: bloodraven_archive::ContentIdKey::Plain,
    };
    let history = indexed(&fixture, &archive);
    let backups = backups.map_or_else(|| anchors(&fixture), <[BackupAnchor]>::to_vec);
    summarize_read(lab.destination.as_str(), &archive, Some(&history), &backups)
}

fn pvc() -> ArchiveLocation {
    ArchiveLocation::Pvc {
        namespace: "orders".to_owned(),
        claim: "orders-backups".to_owned(),
        sub_path: String::new(),
    }
}

#[test]
fn locates_the_pitr_profile_storage() {
    let objects = crate::scenarios::objects("healthy", Timestamp::UNIX_EPOCH).unwrap();
    let group: MysqlFailoverGroup = objects
        .iter()
        .find(|object| object["kind"] == "MysqlFailoverGroup")
        .map(|object| serde_json::from_value(object.clone()).unwrap())
        .unwrap();
    assert_eq!(locate(&group), Ok(pvc()));
    let mut off = group.clone();
    if let Some(pitr) = off.spec.backup.as_mut().and_then(|backup| backup.pitr.as_mut()) {
        pitr.enabled = Some(false);
    }
    assert_eq!(locate(&off), Err("PITR is not enabled (spec.backup.pitr.enabled)".to_owned()));
    let mut unknown = group;
    if let Some(pitr) = unknown.spec.backup.as_mut().and_then(|backup| backup.pitr.as_mut()) {
        pitr.profile_name = Some("weekly".to_owned());
    }
    assert_eq!(locate(&unknown), Err("spec.backup.profiles has no profile \"weekly\"".to_owned()));
}

#[test]
fn summaries_show_gaps_forks_and_windows() {
    let healthy = fixture_summary(Scenario::HealthyPlannedFailover);
    assert!(healthy.gaps.is_empty() && healthy.forks.is_empty(), "{healthy:?}");
    assert_eq!(
        healthy.sites.iter().map(|site| site.site.as_str()).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    assert!(healthy.retention_horizon.is_some());
    assert!(healthy.sites.iter().any(|site| site.records.iter().any(|record| !record.reset)));

    let gap = fixture_summary(Scenario::ArchiveGap);
    assert_eq!(gap.gaps.len(), 1, "{:?}", gap.gaps);
    assert!(gap.gaps[0].gtids.ends_with(":41-60"), "{:?}", gap.gaps[0]);
    assert_eq!(gap.gaps[0].kind, "never archived");
    assert!(gap.backups.iter().any(|backup| {
        backup.window.as_ref().is_ok_and(|window| window.stop_token == "PITRArchiveGap")
    }));

    let fork = fixture_summary(Scenario::LossyFailoverFork);
    assert_eq!(fork.forks.len(), 1, "{:?}", fork.forks);
    assert!(fork.forks[0].gtids.ends_with(":96-100"), "{:?}", fork.forks[0]);
    assert!(fork.forks[0].cause.starts_with("lost at failover"));
    assert!(fork.sites.iter().any(|site| site.files.iter().any(|f| f.flag == FileFlag::Forked)));
    assert!(fork.sites.iter().any(|site| site.records.iter().any(|record| record.reset)));
}

#[tokio::test]
async fn loads_a_laid_archive_read_only() {
    let directory = laid(Scenario::ArchiveGap, &pvc()).await;
    let request = ArchiveRequest { location: pvc(), backups: Vec::new() };
    let access = |root: Option<&std::path::Path>| ArchiveAccess {
        archive_root: root.map(std::path::Path::to_path_buf),
        secret_client: None,
        passphrase_file: None,
    };
    let outcome = load(&access(Some(directory.path())), &request).await;
    let ArchiveOutcome::Covered(summary) = outcome else { panic!("{outcome:?}") };
    assert_eq!(summary.gaps.len(), 1);
    assert_eq!(summary.location, "pvc://orders/orders-backups/binlogs");

    // An empty claim directory: the reader's refusal, with its token.
    let empty = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(empty.path().join("orders/orders-backups")).unwrap();
    let outcome = load(&access(Some(empty.path())), &request).await;
    assert!(
        matches!(&outcome, ArchiveOutcome::Refused { token, .. } if token == "PITRArchiveNotFound"),
        "{outcome:?}"
    );
    // No root: said, not guessed.
    let outcome = load(&access(None), &request).await;
    assert!(matches!(&outcome, ArchiveOutcome::Failed(error) if error.contains("--archive-root")));
    // A PVC location is not S3, and an S3 location needs no archive root.
    let s3 = ArchiveLocation::S3 {
        namespace: "orders".to_owned(),
        bucket: "b".to_owned(),
        prefix: "p".to_owned(),
        endpoint: Some("http://127.0.0.1:9".to_owned()),
        region: None,
        credentials_secret: None,
    };
    assert!(pvc_store(directory.path(), &s3).is_err());
}

#[tokio::test]
async fn the_store_refuses_writes() {
    let directory = tempfile::tempdir().unwrap();
    let store = ReadOnlyStore::new(FsStore::new(directory.path()).unwrap());
    let error = store.put("x", b"y".to_vec()).await.unwrap_err();
    assert!(error.to_string().contains("read-only"), "{error}");
    assert!(store.create("x", Vec::new()).await.is_err());
    assert!(store.delete("x").await.is_err());
    assert_eq!(std::fs::read_dir(directory.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn the_lab_lays_each_scenario_archive_where_the_panel_reads_it() {
    for (scenario, gaps, forks) in
        [("healthy", 0, 0), ("archive-gap", 1, 0), ("pitr-divergent", 0, 1)]
    {
        let now: Timestamp = "2026-11-29T20:00:00Z".parse().unwrap();
        let mut objects = crate::scenarios::objects(scenario, now).unwrap();
        crate::lab::assign_uids(&mut objects);
        let directory = tempfile::tempdir().unwrap();
        crate::lab::lay_archives(scenario, &objects, directory.path(), now).await.unwrap();
        let group: MysqlFailoverGroup = objects
            .iter()
            .find(|object| object["kind"] == "MysqlFailoverGroup")
            .map(|object| serde_json::from_value(object.clone()).unwrap())
            .unwrap();
        let request = ArchiveRequest { location: locate(&group).unwrap(), backups: Vec::new() };
        let access = ArchiveAccess {
            archive_root: Some(directory.path().to_path_buf()),
            secret_client: None,
            passphrase_file: None,
        };
        let outcome = load(&access, &request).await;
        let ArchiveOutcome::Covered(summary) = outcome else { panic!("{scenario}: {outcome:?}") };
        assert_eq!((summary.gaps.len(), summary.forks.len()), (gaps, forks), "{scenario}");
    }
}

/// One truth: the window the panel shows for the `pitr-divergent` lab's backups is the
/// planner's answer over the same archive: its start plans, every target through its end
/// plans, and the second after is refused with the token the panel names.
#[tokio::test]
async fn the_panel_window_is_the_planners_answer() {
    let now: Timestamp = "2026-11-29T20:00:00Z".parse().unwrap();
    let mut objects = crate::scenarios::objects("pitr-divergent", now).unwrap();
    crate::lab::assign_uids(&mut objects);
    crate::lab::align_with_fixture(&mut objects, "pitr-divergent", now);
    let directory = tempfile::tempdir().unwrap();
    crate::lab::lay_archives("pitr-divergent", &objects, directory.path(), now).await.unwrap();
    let group: MysqlFailoverGroup = objects
        .iter()
        .find(|object| object["kind"] == "MysqlFailoverGroup")
        .map(|object| serde_json::from_value(object.clone()).unwrap())
        .unwrap();
    let backups: Vec<BackupAnchor> = objects
        .iter()
        .filter(|object| object["kind"] == "MysqlBackup")
        .map(|object| BackupAnchor::of(&serde_json::from_value(object.clone()).unwrap()))
        .collect();
    assert!(!backups.is_empty(), "the pitr-divergent lab has backups");
    let location = locate(&group).unwrap();
    let request = ArchiveRequest { location: location.clone(), backups: backups.clone() };
    let access = ArchiveAccess {
        archive_root: Some(directory.path().to_path_buf()),
        secret_client: None,
        passphrase_file: None,
    };
    let ArchiveOutcome::Covered(summary) = load(&access, &request).await else {
        panic!("the lab archive opens")
    };
    let ArchiveStore::Fs(store, root) = open_store(&access, &location).await.unwrap() else {
        panic!("a PVC archive")
    };
    let options = ReaderOptions::new(ReaderKey::None);
    let bloodraven_replay::download::Opened::Archive(downloaded) =
        bloodraven_replay::download::download(&store, &root, options, None).await.unwrap()
    else {
        panic!("the lab archive opens")
    };
    let history = &downloaded.history;
    let mut windows = 0;
    for (shown, anchor) in summary.backups.iter().zip(&backups) {
        let Ok(window) = &shown.window else { continue };
        windows += 1;
        let meta = backup_meta(
            anchor.gtid_executed.as_deref().unwrap().parse().unwrap(),
            anchor.completed.unwrap(),
            &history.archive_id,
        );
        let answer = |at: Timestamp| {
            bloodraven_pitr::answer(history, None, &meta, "", Default::default(), at)
        };
        let end = window.end.expect("the lab's window ends");
        let mut at = window.start;
        while at <= end {
            assert_eq!(answer(at), bloodraven_pitr::Answer::Plans, "{}: target {at}", shown.name);
            at = at.checked_add(jiff::SignedDuration::from_secs(1)).unwrap();
        }
        let bloodraven_pitr::Answer::Refused { token, .. } = answer(at) else {
            panic!("{}: the second after the window plans", shown.name)
        };
        assert_eq!(token.as_str(), window.stop_token, "{}", shown.name);
    }
    assert!(windows > 0, "{:?}", summary.backups);
}

/// The encrypted fixture with its objects sealed (`Fixture::build_sealed`), laid at the PVC
/// layout of [`pvc`] under a new directory, and a directory for passphrase files.
async fn laid_sealed() -> (tempfile::TempDir, Fixture) {
    let directory = tempfile::tempdir().unwrap();
    let (store_root, root) = pvc_store(directory.path(), &pvc()).unwrap();
    std::fs::create_dir_all(&store_root).unwrap();
    let store = FsStore::new(&store_root).unwrap();
    let fixture = Fixture::build_sealed(&bloodraven_archive::fixtures::FixtureOptions::default());
    write_fixture(&store, &root, &fixture).await.unwrap();
    (directory, fixture)
}

/// The access of the console to the archives under `root`, holding the passphrase in `file`.
pub(crate) fn keyed_access(root: &Path, file: Option<&Path>) -> ArchiveAccess {
    ArchiveAccess {
        archive_root: Some(root.to_path_buf()),
        secret_client: None,
        passphrase_file: file.map(Path::to_path_buf),
    }
}

/// With the archive's passphrase the sealed archive opens and the panel shows what the
/// manifests describe (the same sites, files, records and horizon as the unsealed build's
/// coverage), with the backup's window planned from the opened bodies.
#[tokio::test]
async fn a_sealed_archive_opens_with_its_passphrase_file() {
    use bloodraven_archive::fixtures::{PASSPHRASE, UUID_A};
    let (directory, fixture) = laid_sealed().await;
    let keys = tempfile::tempdir().unwrap();
    let file = keys.path().join("passphrase");
    std::fs::write(&file, PASSPHRASE).unwrap();
    let request = ArchiveRequest { location: pvc(), backups: anchors(&fixture) };
    let outcome = load(&keyed_access(directory.path(), Some(&file)), &request).await;
    let ArchiveOutcome::Covered(summary) = outcome else { panic!("{outcome:?}") };

    // The unsealed build of the same scenario, summarized from its manifests alone.
    let unsealed = Fixture::build(Scenario::Encrypted);
    let archive = OpenArchive {
        descriptor: unsealed.descriptor.clone().unwrap(),
        manifests: unsealed.manifests.clone(),
        content_id_key: bloodraven_archive::ContentIdKey::from_passphrase(PASSPHRASE),
    };
    let expected = summarize(&pvc().to_string(), &archive, &[]);
    assert_eq!(summary.archive_id, expected.archive_id);
    assert_eq!(summary.sites, expected.sites);
    assert_eq!((&summary.gaps, &summary.forks), (&expected.gaps, &expected.forks));
    assert_eq!(summary.span, expected.span);
    assert_eq!(summary.retention_horizon, expected.retention_horizon);
    assert_eq!(summary.sites.len(), 1, "{:?}", summary.sites);
    assert_eq!(summary.sites[0].files.len(), 2, "{:?}", summary.sites[0]);
    assert!(summary.sites[0].files.iter().all(|file| file.flag == FileFlag::Usable));
    // The bodies were read: the window is the planner's, up to the last archived commit.
    let history = summary.history.as_ref().expect("the sealed bodies were read");
    assert_eq!(history.0.files.len(), 2);
    let [backup] = summary.backups.as_slice() else { panic!("{:?}", summary.backups) };
    let window = backup.window.as_ref().unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(window.end, fixture.commit_time(UUID_A, 20), "{window:?}");

    // One passphrase file serves plaintext archives too.
    let plain = laid(Scenario::ArchiveGap, &pvc()).await;
    let outcome = load(&keyed_access(plain.path(), Some(&file)), &request).await;
    assert!(matches!(&outcome, ArchiveOutcome::Covered(summary) if summary.gaps.len() == 1));
}

/// Without a passphrase the sealed archive is Locked with what to set, never a panic and
/// never a coverage.
#[tokio::test]
async fn a_sealed_archive_without_a_passphrase_is_locked_naming_the_flag() {
    let (directory, fixture) = laid_sealed().await;
    let request = ArchiveRequest { location: pvc(), backups: anchors(&fixture) };
    let outcome = load(&keyed_access(directory.path(), None), &request).await;
    let ArchiveOutcome::Locked(error) = &outcome else { panic!("{outcome:?}") };
    assert_eq!(error, &ArchiveKeyError::Encrypted { location: pvc().to_string() });
    assert_eq!(error.token(), RefusalToken::ArchiveEncryptionMismatch);
    let text = error.to_string();
    for needle in [
        "pvc://orders/orders-backups/binlogs",
        "--pitr-passphrase-file",
        "BLOODRAVEN_PITR_PASSPHRASE_FILE",
    ] {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }
    assert_eq!(error.remedy(), REMEDY_NO_KEY);
}

/// A passphrase that does not verify the keyCheck (here the right words with the trailing
/// newline `kubectl create secret --from-file` would keep: the bytes count exactly) is Locked
/// naming the key file; a key file that cannot be read fails naming it. Neither shows a
/// coverage.
#[tokio::test]
async fn a_sealed_archive_with_a_wrong_passphrase_names_the_key_file() {
    use bloodraven_archive::fixtures::PASSPHRASE;
    let (directory, fixture) = laid_sealed().await;
    let keys = tempfile::tempdir().unwrap();
    let file = keys.path().join("passphrase");
    std::fs::write(&file, [PASSPHRASE, b"\n"].concat()).unwrap();
    let request = ArchiveRequest { location: pvc(), backups: anchors(&fixture) };
    let outcome = load(&keyed_access(directory.path(), Some(&file)), &request).await;
    let ArchiveOutcome::Locked(error) = &outcome else { panic!("{outcome:?}") };
    let ArchiveKeyError::WrongKey { file: named, location, .. } = error else {
        panic!("{error:?}")
    };
    assert_eq!((named, location.as_str()), (&file, "pvc://orders/orders-backups/binlogs"));
    assert_eq!(error.token(), RefusalToken::ArchiveKeyMismatch);
    let text = error.to_string();
    assert!(text.starts_with("authentication failed: the passphrase in "), "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains("--pitr-passphrase-file"), "{text}");
    assert!(!text.contains("correct horse"), "the passphrase is never shown: {text}");

    let missing = keys.path().join("missing");
    let outcome = load(&keyed_access(directory.path(), Some(&missing)), &request).await;
    let ArchiveOutcome::Failed(error) = &outcome else { panic!("{outcome:?}") };
    assert!(error.contains(&missing.display().to_string()), "{error}");
}
