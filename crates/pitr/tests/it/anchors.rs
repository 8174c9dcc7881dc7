//! Witnesses archived only on a replica (000 lines 892–902).

use bloodraven_gtid::GtidSet;
use bloodraven_pitr::{Record, Token};
use jiff::SignedDuration;

use crate::helpers::*;

/// b (primary first) wrote Bu:1; a was promoted at t30 holding it (a#0) and wrote A:1-10
/// (t35..t44), never archived; replica b's row holds Bu:1 and A:1-10, then b is promoted again.
/// A later record of site a, a#1, is observed at t50 with the given probe interval.
fn lab(probe: Option<SignedDuration>) -> Lab {
    let mut lab = Lab::new();
    lab.promotion("b", B, &GtidSet::new(), 0);
    lab.promotion("a", A, &range(B, 1, 1), 30);
    let mut txns = vec![(B, 1, 5)];
    txns.extend(seq(A, 1, 10, 35, 1));
    txns.push((B, 2, 101));
    lab.file("b", &GtidSet::new(), &txns);
    lab.promotion("b", B, &range(B, 1, 1).union(&range(A, 1, 10)), 100);
    lab.history.records.push(Record {
        site: "a".into(),
        label: "a#1".into(),
        promotion: false,
        server_uuid: A,
        gtid_executed: range(B, 1, 1),
        observed_at: t(50),
        probe_interval: probe,
    });
    lab
}

#[test]
fn a_promotion_record_older_than_delta_anchors_the_replica_only_witness() {
    let lab = lab(Some(SignedDuration::from_secs(1)));
    let backup = lab.backup(&GtidSet::new(), 1);
    let plan = run(&lab.history, &backup, &request(Some(t(40)), "")).unwrap();
    assert_eq!(plan.certified, range(B, 1, 1).union(&range(A, 1, 5)));
}

#[test]
fn a_later_record_without_probe_interval_is_unbounded_and_sets_the_anchor_aside() {
    let lab = lab(None);
    let backup = lab.backup(&GtidSet::new(), 1);
    let refusal = run(&lab.history, &backup, &request(Some(t(40)), "")).unwrap_err();
    assert_eq!(refusal.token, Token::StopAmbiguous, "{refusal}");
    assert!(refusal.message.contains("a#0 is not an anchor"), "{}", refusal.message);
    assert!(refusal.message.contains("a#1"), "{}", refusal.message);
}

#[test]
fn a_record_within_delta_of_the_witness_does_not_anchor() {
    let lab = lab(Some(SignedDuration::from_secs(1)));
    let backup = lab.backup(&GtidSet::new(), 1);
    // Witness A:1 at t35: a#0 (t30) + δ is not before it.
    let refusal = run(&lab.history, &backup, &request(Some(t(35)), "")).unwrap_err();
    assert_eq!(refusal.token, Token::StopAmbiguous, "{refusal}");
}

#[test]
fn another_servers_promotion_between_anchor_and_witness_sets_the_anchor_aside() {
    let mut lab = lab(Some(SignedDuration::from_secs(1)));
    // c's server was promoted at t33 without A:6: a lost its role and regained it in between.
    lab.promotion("c", bloodraven_archive::fixtures::UUID_C, &range(B, 1, 1), 33);
    let backup = lab.backup(&GtidSet::new(), 1);
    let refusal = run(&lab.history, &backup, &request(Some(t(40)), "")).unwrap_err();
    assert_eq!(refusal.token, Token::StopAmbiguous, "{refusal}");
    assert!(refusal.message.contains("c#0"), "{}", refusal.message);
}
