use bloodraven_archive::OpenArchive;
use bloodraven_archive::fixtures::{Fixture, Scenario, UUID_A, UUID_B, range};

use super::*;
use crate::archive::backup_meta;

fn lossy() -> (Fixture, History, Vec<(String, BackupMeta)>) {
    let fixture = Fixture::build(Scenario::LossyFailoverFork);
    let archive = OpenArchive {
        descriptor: fixture.descriptor.clone().unwrap(),
        manifests: fixture.manifests.clone(),
        content_id_key: bloodraven_archive::ContentIdKey::Plain,
    };
    let mut index = bloodraven_pitr::RowIndex::new();
    for (site, manifest) in &archive.manifests {
        for row in &manifest.files {
            let key = row.object_key(site).unwrap();
            let indexed =
                bloodraven_pitr::index_row(row, &archive.content_id_key, &fixture.objects[&key]);
            index.insert(key, indexed);
        }
    }
    let history = History::from_archive(&archive, index);
    let backups = fixture
        .backups
        .iter()
        .map(|(name, point)| {
            let meta =
                backup_meta(point.gtid_executed.clone(), point.dump_end, &history.archive_id);
            ((*name).to_owned(), meta)
        })
        .collect();
    (fixture, history, backups)
}

#[test]
fn a_divergent_refusal_offers_the_three_remedies_each_with_its_verdict() {
    let (fixture, history, backups) = lossy();
    let target = fixture.commit_time(UUID_B, 10).unwrap();
    let request = Request { target: Some(target.to_string()), ..Request::default() };
    let bench = bench(&history, &backups, "b-before-failover", &request).unwrap();
    let refusal = bench.verdict.as_ref().unwrap_err();
    assert_eq!(refusal.token, Token::ArchiveDivergentHistory);
    // D by site and time: a's lost tail.
    let d = range(UUID_A, 96, 100);
    assert_eq!(bench.divergent.len(), 1, "{:?}", bench.divergent);
    assert_eq!(bench.divergent[0].site, "a");
    assert_eq!(bench.divergent[0].gtids, d);
    assert_eq!(bench.divergent[0].first, fixture.commit_time(UUID_A, 96));
    assert_eq!(bench.divergent[0].last, fixture.commit_time(UUID_A, 100));
    assert_eq!(bench.choices.len(), 3);

    // Exclude D: b's history at the target, no on-history exclusion.
    let exclude = &bench.choices[0];
    assert!(exclude.label.starts_with("exclude D (5"), "{}", exclude.label);
    let corrected = exclude.request.as_ref().unwrap();
    assert_eq!(corrected.exclude_gtids, d.to_compact_string());
    let plan = exclude.verdict.as_ref().unwrap();
    assert_eq!(plan.certified, range(UUID_A, 1, 95).union(&range(UUID_B, 1, 9)));
    assert!(exclude.on_history.is_empty());
    let yaml = preview(&exclude.backup, corrected);
    assert!(yaml.contains("backupRef:\n  name: b-before-failover"), "{yaml}");
    assert!(yaml.contains(&format!("excludeGtids: {}", d.to_compact_string())), "{yaml}");
    assert!(yaml.contains("stopTime:"), "{yaml}");

    // An earlier target at or before D's first commit plans (a's history).
    let earlier = &bench.choices[1];
    assert!(earlier.verdict.is_ok(), "{:?}", earlier.verdict);

    // A later backup: the one taken on b after the failover finished after this target, and
    // the verdict says so before the user picks it.
    let later = &bench.choices[2];
    assert_eq!(later.backup, "b-after-failover", "{later:?}");
    let refusal = later.verdict.as_ref().unwrap_err();
    assert_eq!(refusal.token, Token::BackupAfterTarget, "{refusal}");
    // With a target after that backup, the same remedy plans.
    let late = fixture.commit_time(UUID_B, 50).unwrap();
    let request = Request { target: Some(late.to_string()), ..Request::default() };
    let bench = super::bench(&history, &backups, "b-before-failover", &request).unwrap();
    assert_eq!(bench.verdict.as_ref().unwrap_err().token, Token::ArchiveDivergentHistory);
    let later = &bench.choices[2];
    assert_eq!(later.backup, "b-after-failover", "{later:?}");
    assert!(later.verdict.is_ok(), "{:?}", later.verdict);
}

#[test]
fn a_plan_needs_no_remedy() {
    let (fixture, history, backups) = lossy();
    let target = fixture.commit_time(UUID_A, 80).unwrap();
    let request = Request { target: Some(target.to_string()), ..Request::default() };
    let bench = bench(&history, &backups, "b-before-failover", &request).unwrap();
    assert!(bench.verdict.is_ok());
    assert!(bench.choices.is_empty() && bench.divergent.is_empty());
    assert!(super::bench(&history, &backups, "no-such-backup", &request).is_none());
}
