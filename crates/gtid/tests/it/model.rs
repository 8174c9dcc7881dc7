//! Property tests against a naive model: a set of single `(uuid, tag, gno)`.

use std::collections::BTreeSet;

use bloodraven_gtid::{Gtid, GtidSet, MAX_GNO, Tag, Uuid};
use proptest::prelude::*;

type Single = (Uuid, Option<Tag>, u64);
type Model = BTreeSet<Single>;

fn uuids() -> [Uuid; 3] {
    [Uuid::from_bytes([0x11; 16]), Uuid::from_bytes([0x22; 16]), Uuid::from_bytes([0xee; 16])]
}

fn tags() -> [Option<Tag>; 3] {
    [None, Some(Tag::new("a").unwrap()), Some(Tag::new("b_2").unwrap())]
}

/// One interval: a source and `start..=end`, either near 1 or near `MAX_GNO`
/// (to exercise the top of the range), at most 12 long.
#[derive(Clone, Debug)]
struct Spec {
    uuid: usize,
    tag: usize,
    start: u64,
    end: u64,
}

fn spec() -> impl Strategy<Value = Spec> {
    (0..3usize, 0..3usize, any::<bool>(), 0..40u64, 0..12u64).prop_map(
        |(uuid, tag, high, offset, length)| {
            let (start, end) = if high {
                (MAX_GNO - offset - length.min(MAX_GNO - offset - 1), MAX_GNO - offset)
            } else {
                (offset + 1, offset + 1 + length)
            };
            Spec { uuid, tag, start, end }
        },
    )
}

fn specs() -> impl Strategy<Value = Vec<Spec>> {
    prop::collection::vec(spec(), 0..12)
}

fn build(specs: &[Spec]) -> (GtidSet, Model) {
    let mut set = GtidSet::new();
    let mut model = Model::new();
    for spec in specs {
        let uuid = uuids()[spec.uuid];
        let tag = tags()[spec.tag];
        set.insert_interval(uuid, tag.as_ref(), spec.start, spec.end).unwrap();
        for gno in spec.start..=spec.end {
            model.insert((uuid, tag, gno));
        }
    }
    (set, model)
}

fn flatten(set: &GtidSet) -> Model {
    let mut model = Model::new();
    for (uuid, tag, start, end) in set.intervals() {
        for gno in start..=end {
            model.insert((uuid, tag.copied(), gno));
        }
    }
    model
}

/// Checks the set's invariants: canonical order, merged, non-empty sources.
fn assert_canonical(set: &GtidSet) {
    let mut previous: Option<(Uuid, Option<Tag>, u64)> = None;
    for (uuid, tag, start, end) in set.intervals() {
        assert!(1 <= start && start <= end && end <= MAX_GNO);
        if let Some((p_uuid, p_tag, p_end)) = previous
            && p_uuid == uuid
            && p_tag.as_ref() == tag
        {
            assert!(p_end + 1 < start, "intervals touch or overlap: {set:#}");
        } else if let Some((p_uuid, p_tag, _)) = previous {
            assert!((p_uuid, p_tag) < (uuid, tag.copied()), "sources out of order: {set:#}");
        }
        previous = Some((uuid, tag.copied(), end));
    }
}

/// The text of `specs` in arbitrary order with arbitrary spacing and
/// separators, as a human might write it.
fn scrambled_text(specs: &[Spec], spacing: &[u8]) -> String {
    let mut text = String::new();
    let space = |index: usize| match spacing.get(index % spacing.len().max(1)).copied() {
        Some(0) => " ",
        Some(1) => "\n",
        Some(2) => "\t ",
        _ => "",
    };
    for (index, spec) in specs.iter().enumerate() {
        if index > 0 {
            text.push(',');
            text.push_str(space(index));
        }
        let mut uuid = uuids()[spec.uuid].to_string();
        if index % 2 == 1 {
            uuid = uuid.to_uppercase();
        }
        text.push_str(&uuid);
        text.push_str(space(index + 1));
        if let Some(tag) = tags()[spec.tag] {
            text.push(':');
            text.push_str(&if index % 3 == 0 {
                tag.as_str().to_uppercase()
            } else {
                tag.to_string()
            });
        }
        text.push(':');
        text.push_str(space(index + 2));
        if spec.start == spec.end && index % 2 == 0 {
            text.push_str(&spec.start.to_string());
        } else {
            text.push_str(&format!("{}{}-{}", spec.start, space(index + 3), spec.end));
        }
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn building_matches_model(specs in specs()) {
        let (set, model) = build(&specs);
        assert_canonical(&set);
        prop_assert_eq!(flatten(&set), model.clone());
        prop_assert_eq!(set.count(), model.len() as u128);
        prop_assert_eq!(set.is_empty(), model.is_empty());
        let singles: Model = set.gtids().map(|gtid| (gtid.uuid, gtid.tag, gtid.gno)).collect();
        prop_assert_eq!(singles, model);
    }

    #[test]
    fn format_then_parse_is_identity(specs in specs()) {
        let (set, _) = build(&specs);
        prop_assert_eq!(set.to_string().parse::<GtidSet>().unwrap(), set.clone());
        prop_assert_eq!(set.to_compact_string().parse::<GtidSet>().unwrap(), set.clone());
        // Canonical text is a fixed point.
        let text = set.to_string();
        prop_assert_eq!(text.parse::<GtidSet>().unwrap().to_string(), text);
    }

    #[test]
    fn scrambled_text_parses_to_model(
        specs in specs(),
        spacing in prop::collection::vec(0..4u8, 1..8),
    ) {
        let (set, model) = build(&specs);
        let text = scrambled_text(&specs, &spacing);
        let parsed: GtidSet = text.parse().unwrap();
        prop_assert_eq!(flatten(&parsed), model);
        prop_assert_eq!(parsed, set);
    }

    #[test]
    fn operations_match_model(left in specs(), right in specs()) {
        let (a, model_a) = build(&left);
        let (b, model_b) = build(&right);

        let union = a.union(&b);
        assert_canonical(&union);
        prop_assert_eq!(flatten(&union), &model_a | &model_b);

        let intersection = a.intersection(&b);
        assert_canonical(&intersection);
        prop_assert_eq!(flatten(&intersection), &model_a & &model_b);

        let difference = a.difference(&b);
        assert_canonical(&difference);
        prop_assert_eq!(flatten(&difference), &model_a - &model_b);

        let symmetric = a.symmetric_difference(&b);
        assert_canonical(&symmetric);
        prop_assert_eq!(flatten(&symmetric), &model_a ^ &model_b);

        prop_assert_eq!(a.is_subset(&b), model_a.is_subset(&model_b));
        prop_assert_eq!(a.is_superset(&b), model_a.is_superset(&model_b));
        prop_assert_eq!(a.is_disjoint(&b), model_a.is_disjoint(&model_b));
        prop_assert_eq!(a == b, model_a == model_b);
        prop_assert!(intersection.is_subset(&a) && a.is_subset(&union));

        let mut in_place = a.clone();
        in_place.union_with(&b);
        prop_assert_eq!(&in_place, &union);
        let mut in_place = a.clone();
        in_place.subtract(&b);
        prop_assert_eq!(&in_place, &difference);
    }

    #[test]
    fn subset_of_own_parts(specs in specs(), keep in prop::collection::vec(any::<bool>(), 12)) {
        // Subsets built from a part of the same intervals (the interesting case
        // for is_subset, which random pairs rarely hit).
        let (whole, model) = build(&specs);
        let part: Vec<Spec> =
            specs.iter().zip(&keep).filter(|(_, k)| **k).map(|(s, _)| s.clone()).collect();
        let (part, part_model) = build(&part);
        prop_assert!(part.is_subset(&whole));
        prop_assert!(part_model.is_subset(&model));
        let rest = whole.difference(&part);
        prop_assert!(rest.is_disjoint(&part));
        prop_assert_eq!(rest.union(&part), whole);
    }

    #[test]
    fn membership_and_removal_match_model(
        specs in specs(),
        removals in specs(),
        probes in prop::collection::vec(spec(), 0..8),
    ) {
        let (mut set, mut model) = build(&specs);
        for probe in probes.iter().chain(&specs) {
            let below = probe.start.saturating_sub(1).max(1);
            let above = (probe.end + 1).min(MAX_GNO);
            for gno in [probe.start, probe.end, below, above] {
                let gtid = Gtid { uuid: uuids()[probe.uuid], tag: tags()[probe.tag], gno };
                prop_assert_eq!(set.contains(&gtid), model.contains(&(gtid.uuid, gtid.tag, gno)));
            }
        }
        for removal in &removals {
            let uuid = uuids()[removal.uuid];
            let tag = tags()[removal.tag];
            set.remove_interval(uuid, tag.as_ref(), removal.start, removal.end).unwrap();
            for gno in removal.start..=removal.end {
                model.remove(&(uuid, tag, gno));
            }
            assert_canonical(&set);
            prop_assert_eq!(flatten(&set), model.clone());
        }
    }

    #[test]
    fn per_source_first_last_match_model(specs in specs()) {
        let (set, model) = build(&specs);
        for uuid in uuids() {
            for tag in tags() {
                let gnos: Vec<u64> = model
                    .iter()
                    .filter(|(u, t, _)| *u == uuid && *t == tag)
                    .map(|(_, _, n)| *n)
                    .collect();
                prop_assert_eq!(set.first(uuid, tag.as_ref()), gnos.first().copied());
                prop_assert_eq!(set.last(uuid, tag.as_ref()), gnos.last().copied());
                let count = set.source(uuid, tag.as_ref()).map_or(0, |source| source.count());
                prop_assert_eq!(count, gnos.len() as u128);
            }
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,80}") {
        if let Ok(set) = text.parse::<GtidSet>() {
            prop_assert_eq!(set.to_string().parse::<GtidSet>().unwrap(), set);
        }
        let _ = text.parse::<Gtid>();
        let _ = text.parse::<bloodraven_gtid::MariaGtidPosition>();
        let _ = text.parse::<bloodraven_gtid::MariaGtidRange>();
    }

    #[test]
    fn near_miss_text_never_panics(
        specs in specs(),
        cut in 0..200usize,
        junk in "[-:, 0-9a-fA-Fx_\n]{0,6}",
    ) {
        // Valid text with a piece cut out or junk spliced in.
        let text = scrambled_text(&specs, &[0, 1]);
        let at = cut.min(text.len());
        let mut broken = text[..at].to_owned();
        broken.push_str(&junk);
        broken.push_str(&text[at..]);
        if let Ok(set) = broken.parse::<GtidSet>() {
            prop_assert_eq!(set.to_string().parse::<GtidSet>().unwrap(), set);
        }
    }
}
