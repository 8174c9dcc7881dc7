//! The index pass (`index_row`): real binlog bytes of the archive crate's fixtures, authenticated
//! by content ID and size, give the same transactions (GTID and commit time) the fixture wrote,
//! and the planner plans the same over them; tampered bytes refuse `PITRArchiveObjectInvalid`.

use bloodraven_archive::fixtures::{Fixture, Scenario};
use bloodraven_pitr::{History, RowBytes, RowIndex, Token, index_row};

use crate::helpers::*;

/// The fixture's history with every row indexed from its bytes; `tamper` may change a row's
/// bytes first (by object key).
fn indexed(fixture: &Fixture, tamper: impl Fn(&str, &mut Vec<u8>)) -> History {
    let open = open(fixture).expect("fixture opens");
    let mut index = RowIndex::new();
    for (site, manifest) in &open.manifests {
        for row in &manifest.files {
            let key = row.object_key(site).unwrap();
            let mut bytes = fixture.objects[&key].clone();
            tamper(&key, &mut bytes);
            index.insert(key, index_row(row, &open.content_id_key, &bytes));
        }
    }
    History::from_archive(&open, index)
}

#[test]
fn indexed_bytes_hold_the_fixtures_transactions_and_commit_times() {
    for scenario in [Scenario::HealthyPlannedFailover, Scenario::LossyFailoverFork] {
        let fixture = Fixture::build(scenario);
        let history = indexed(&fixture, |_, _| {});
        let mut seen = 0;
        for file in &history.files {
            let RowBytes::Read(txns) = &file.bytes else {
                panic!("{}: {:?}", file.key, file.bytes);
            };
            for txn in txns {
                let gtid = txn.gtid.unwrap();
                assert_eq!(txn.commit, Some(fixture.commit_times[&gtid.to_string()]), "{gtid}");
                assert!(file.hint.contains(&gtid), "{gtid} outside {}'s hint", file.key);
                seen += 1;
            }
        }
        assert!(seen > 0, "{scenario:?} has transactions");
    }
}

#[test]
fn plans_over_indexed_bytes_equal_plans_over_the_fixture() {
    let fixture = Fixture::build(Scenario::LossyFailoverFork);
    let from_bytes = indexed(&fixture, |_, _| {});
    let from_fixture = history(&fixture);
    let backup = meta(&fixture, "b-before-failover", &from_fixture);
    for target in [at(&fixture, A, 80), at(&fixture, A, 98), at(&fixture, B, 10)] {
        let request = request(Some(target), "");
        assert_eq!(
            run(&from_bytes, &backup, &request),
            run(&from_fixture, &backup, &request),
            "target {target}"
        );
    }
}

#[test]
fn a_row_whose_bytes_do_not_match_its_content_id_is_object_invalid() {
    let fixture = Fixture::build(Scenario::LossyFailoverFork);
    let clean = history(&fixture);
    let backup = meta(&fixture, "b-before-failover", &clean);
    let request = request(Some(at(&fixture, A, 80)), "");
    let plan = run(&clean, &backup, &request).unwrap();
    let needed = plan.segments[0].key.clone();
    let tampered = indexed(&fixture, |key, bytes| {
        if key == needed {
            let last = bytes.len() - 1;
            bytes[last] ^= 1;
        }
    });
    let row = tampered.files.iter().find(|file| file.key == needed).unwrap();
    let RowBytes::Unreadable(reason) = &row.bytes else { panic!("{:?}", row.bytes) };
    assert!(reason.contains("content ID"), "{reason}");
    let refusal = run(&tampered, &backup, &request).unwrap_err();
    assert_eq!(refusal.token, Token::ArchiveObjectInvalid, "{refusal}");
}

#[test]
fn a_row_whose_size_disagrees_with_its_authenticated_bytes_is_unreadable() {
    let fixture = Fixture::build(Scenario::HealthyPlannedFailover);
    let open = open(&fixture).unwrap();
    let (site, manifest) = open.manifests.iter().next().unwrap();
    let mut row = manifest.files[0].clone();
    let bytes = fixture.objects[&row.object_key(site).unwrap()].clone();
    row.size += 1;
    let RowBytes::Unreadable(reason) = index_row(&row, &open.content_id_key, &bytes) else {
        panic!("a size mismatch was accepted")
    };
    assert!(reason.contains("bytes"), "{reason}");
}
