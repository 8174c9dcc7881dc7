//! A plan's certified set is the backup plus the included segments minus the exclusions.

use bloodraven_gtid::GtidSet;
use proptest::prelude::*;

use crate::helpers::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Linear histories cut into random rows, with copies on a second site, a random backup,
    /// target and on-history exclusions.
    #[test]
    fn certified_is_backup_plus_segments_minus_excluded(
        cuts in proptest::collection::btree_set(2u64..99, 1..8),
        backup_end in 1u64..50,
        target in 55u64..100,
        excluded in proptest::collection::btree_set(51u64..99, 0..4),
        copy in any::<bool>(),
    ) {
        let mut lab = Lab::new();
        lab.promotion("a", A, &GtidSet::new(), 0);
        let mut bounds: Vec<u64> = vec![1];
        bounds.extend(cuts.iter().copied());
        bounds.push(101);
        for w in bounds.windows(2) {
            let (from, to) = (w[0], w[1] - 1);
            if from > to { continue; }
            let prev = if from > 1 { range(A, 1, from - 1) } else { GtidSet::new() };
            let txns = seq(A, from, to, from as i64 * 10, 10);
            lab.file("a", &prev, &txns);
            if copy {
                lab.file("b", &prev, &txns);
            }
        }
        let backup_set = range(A, 1, backup_end);
        let backup = lab.backup(&backup_set, backup_end as i64 * 10);
        let exclude: Vec<String> = excluded.iter().filter(|&&g| g < target).map(|g| format!("{A}:{g}")).collect();
        let request = request(Some(t(target as i64 * 10)), &exclude.join(","));
        let plan = run(&lab.history, &backup, &request).unwrap();
        let mut union = backup_set.clone();
        for segment in &plan.segments {
            union.union_with(&segment.gtids);
        }
        let x: GtidSet = if exclude.is_empty() { GtidSet::new() } else { exclude.join(",").parse().unwrap() };
        prop_assert_eq!(&plan.certified, &union.difference(&x));
        prop_assert_eq!(&plan.certified, &range(A, 1, target - 1).difference(&x));
        // Segments are disjoint and never hold an excluded GTID.
        let total: u128 = plan.segments.iter().map(|s| s.gtids.count()).sum();
        prop_assert_eq!(total + backup_set.count(), plan.certified.count());
    }
}
