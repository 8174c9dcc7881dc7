//! Coverage-guided fuzzing of every parser.
//!
//! Invariants checked on any input: no panic; a parsed set's canonical text
//! (both separators) parses back to the same set and is a fixed point; count
//! and intervals agree; a set is a subset of itself and of its union with
//! anything; parsed MariaDB values round-trip through their text.

#![no_main]

use bloodraven_gtid::{Gtid, GtidSet, MariaGtid, MariaGtidPosition, MariaGtidRange};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(set) = text.parse::<GtidSet>() {
        let canonical = set.to_string();
        let reparsed: GtidSet = canonical.parse().expect("canonical text parses");
        assert_eq!(reparsed, set);
        assert_eq!(reparsed.to_string(), canonical);
        let compact: GtidSet = set.to_compact_string().parse().expect("compact text parses");
        assert_eq!(compact, set);
        let counted: u128 =
            set.intervals().map(|(_, _, start, end)| u128::from(end - start) + 1).sum();
        assert_eq!(counted, set.count());
        assert!(set.is_subset(&set));
        // Split the text in two at a comma and check union/difference laws.
        if let Some((left, right)) = text.split_once(',') {
            if let (Ok(left), Ok(right)) = (left.parse::<GtidSet>(), right.parse::<GtidSet>()) {
                let union = left.union(&right);
                assert_eq!(union, set);
                assert!(left.is_subset(&union) && right.is_subset(&union));
                let rest = union.difference(&left);
                assert!(rest.is_disjoint(&left));
                assert_eq!(rest.union(&left), union);
                assert_eq!(left.intersection(&right), left.difference(&left.difference(&right)));
            }
        }
    }
    if let Ok(gtid) = text.parse::<Gtid>() {
        assert_eq!(gtid.to_string().parse::<Gtid>().expect("gtid text parses"), gtid);
        let set = GtidSet::try_from(gtid).expect("a parsed gtid is valid");
        assert!(set.contains(&gtid));
    }
    if let Ok(gtid) = text.parse::<MariaGtid>() {
        assert_eq!(gtid.to_string().parse::<MariaGtid>().expect("mariadb gtid parses"), gtid);
    }
    if let Ok(position) = text.parse::<MariaGtidPosition>() {
        let again = position.to_string().parse::<MariaGtidPosition>();
        assert_eq!(again.expect("position text parses"), position);
    }
    if let Ok(range) = text.parse::<MariaGtidRange>() {
        assert_eq!(range.to_string().parse::<MariaGtidRange>().expect("range parses"), range);
    }
});
