//! Data-driven tables: input text in, canonical text or error out.

use bloodraven_gtid::{Gtid, GtidSet, MAX_GNO, Tag, Uuid};
use expect_test::{Expect, expect};

use crate::{abbreviate, expand};

/// Parses `input` (with `$A`.. expanded) and renders the compact canonical
/// text, the transaction count, or the error.
fn check(input: &str, expected: Expect) {
    let text = expand(input);
    let actual = match text.parse::<GtidSet>() {
        Ok(set) => {
            // Canonical text always parses back to the same set, in both forms.
            assert_eq!(set.to_string().parse::<GtidSet>().unwrap(), set);
            assert_eq!(set.to_compact_string().parse::<GtidSet>().unwrap(), set);
            format!("{:#} ({} gtids)", set, set.count())
        }
        Err(error) => format!("error: {error}"),
    };
    expected.assert_eq(&abbreviate(&actual));
}

#[test]
fn empty_forms() {
    check("", expect![[r#" (0 gtids)"#]]);
    check("  \n\t ", expect![[r#" (0 gtids)"#]]);
    check(",, ,\n,", expect![[r#" (0 gtids)"#]]);
    // A UUID without intervals, or a tag without intervals, adds nothing.
    check("$A", expect![[r#" (0 gtids)"#]]);
    check("$A:tag", expect![[r#" (0 gtids)"#]]);
    // An interval whose end is below its start is empty in MySQL.
    check("$A:5-3", expect![[r#" (0 gtids)"#]]);
    check("$A:5-0", expect![[r#" (0 gtids)"#]]);
}

#[test]
fn untagged_forms() {
    check("$A:1-5", expect![[r#"$A:1-5 (5 gtids)"#]]);
    check("$A:7", expect![[r#"$A:7 (1 gtids)"#]]);
    check("$A:1-5:7", expect![[r#"$A:1-5:7 (6 gtids)"#]]);
    check("$A:5-5", expect![[r#"$A:5 (1 gtids)"#]]);
    // Touching and overlapping intervals merge; order does not matter.
    check("$A:1-5:6-9", expect![[r#"$A:1-9 (9 gtids)"#]]);
    check("$A:7:1-5:3-6", expect![[r#"$A:1-7 (7 gtids)"#]]);
    check("$A:10-20:1-3:5:4", expect![[r#"$A:1-5:10-20 (16 gtids)"#]]);
    // Sources sort by UUID; one UUID given twice is one source.
    check("$B:1,$A:2", expect![[r#"$A:2,$B:1 (2 gtids)"#]]);
    check("$A:1-3,$A:4-6", expect![[r#"$A:1-6 (6 gtids)"#]]);
    check("$E:1,$D:1,$C:1", expect![[r#"$D:1,$C:1,$E:1 (3 gtids)"#]]);
    // Upper-case UUIDs print in lower case.
    check("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-2", expect![[r#"$A:1-2 (2 gtids)"#]]);
    // Whitespace between tokens, and empty entries, as MySQL allows.
    check(" $A : 1 - 3 : 5 ,\n\t$B:1 ", expect!["$A:1-3:5,$B:1 (5 gtids)"]);
    check("$A:1,,\n,$B:2,", expect![[r#"$A:1,$B:2 (2 gtids)"#]]);
    // MySQL reads a blank item as the untagged source.
    check("$A:1: ", expect![[r#"$A:1 (1 gtids)"#]]);
    // gtid_executed exactly as the server prints it.
    check("$A:1-100,\n$B:1-50", expect![[r#"$A:1-100,$B:1-50 (150 gtids)"#]]);
}

/// Text in reverse order, repeated sources and interleaved tags cost one
/// sort, not a search per item; the result is the same canonical set.
#[test]
fn unordered_and_repeated_sources() {
    let forward: Vec<String> = (1..=2000u64).map(|n| format!("{}", 2 * n)).collect();
    let reversed: Vec<String> = forward.iter().rev().cloned().collect();
    let text = expand(&format!("$B:{},$A:t:5,$B:x:1,$A:1", reversed.join(":")));
    let set: GtidSet = text.parse().unwrap();
    assert_eq!(set.count(), 2003);
    let expected = expand(&format!("$A:1:t:5,$B:{}:x:1", forward.join(":")));
    assert_eq!(set.to_compact_string(), expected);
    // One entry per UUID in descending UUID order.
    let many: Vec<String> = (0..500u32)
        .rev()
        .map(|n| format!("{n:08x}-0000-0000-0000-000000000000:{}", n + 1))
        .collect();
    let set: GtidSet = many.join(",").parse().unwrap();
    assert_eq!(set.sources().len(), 500);
    assert_eq!(set.sources().next().unwrap().first(), 1);
}

#[test]
fn number_limits() {
    check("$A:9223372036854775806", expect![[r#"$A:9223372036854775806 (1 gtids)"#]]);
    check(
        "$A:1-9223372036854775806",
        expect![[r#"$A:1-9223372036854775806 (9223372036854775806 gtids)"#]],
    );
    check(
        "$A:9223372036854775807",
        expect![[
            r#"error: invalid gtid set: number is larger than 9223372036854775806 at byte 37"#
        ]],
    );
    check(
        "$A:1-9223372036854775807",
        expect![[
            r#"error: invalid gtid set: number is larger than 9223372036854775806 at byte 39"#
        ]],
    );
    check(
        "$A:99999999999999999999999",
        expect![[
            r#"error: invalid gtid set: number is larger than 9223372036854775806 at byte 37"#
        ]],
    );
    check(
        "$A:12345678901234567890",
        expect!["error: invalid gtid set: number is larger than 9223372036854775806 at byte 37"],
    );
    check(
        "$A:00000000000000000000001",
        expect![
            "error: invalid gtid set: number has a leading zero (mysql would read it as octal) at byte 37"
        ],
    );
    check(
        "$A:0",
        expect![[r#"error: invalid gtid set: transaction number 0 is not allowed at byte 37"#]],
    );
    check(
        "$A:0-5",
        expect![[r#"error: invalid gtid set: transaction number 0 is not allowed at byte 37"#]],
    );
    check(
        "$A:010",
        expect![[
            r#"error: invalid gtid set: number has a leading zero (mysql would read it as octal) at byte 37"#
        ]],
    );
    check(
        "$A:0x10",
        expect![[r#"error: invalid gtid set: transaction number 0 is not allowed at byte 37"#]],
    );
    check(
        "$A:5-0x10",
        expect![[
            r#"error: invalid gtid set: unexpected character 'x', expected `:`, `,` or end of input at byte 40"#
        ]],
    );
    check(
        "$A:+5",
        expect![[
            r#"error: invalid gtid set: unexpected character '+', expected a transaction number or a tag at byte 37"#
        ]],
    );
    check(
        "$A:-5",
        expect![[
            r#"error: invalid gtid set: unexpected character '-', expected a transaction number or a tag at byte 37"#
        ]],
    );
    let max = GtidSet::new();
    assert!(max.clone().insert_interval(uuid("$A"), None, 1, MAX_GNO).is_ok());
    assert!(max.clone().insert_interval(uuid("$A"), None, 1, MAX_GNO + 1).is_err());
    assert!(max.clone().insert_interval(uuid("$A"), None, 0, 1).is_err());
    assert!(max.clone().insert_interval(uuid("$A"), None, 5, 4).is_err());
}

#[test]
fn malformed() {
    check(
        "$A:",
        expect![[
            r#"error: invalid gtid set: unexpected end of input, expected a transaction number or a tag at byte 37"#
        ]],
    );
    check(
        "$A:1:",
        expect![[
            r#"error: invalid gtid set: unexpected end of input, expected a transaction number or a tag at byte 39"#
        ]],
    );
    check(
        "$A:1-",
        expect![[
            r#"error: invalid gtid set: unexpected end of input, expected a transaction number at byte 39"#
        ]],
    );
    check(
        "$A::1",
        expect![[
            r#"error: invalid gtid set: unexpected character ':', expected a transaction number or a tag at byte 37"#
        ]],
    );
    check(
        "$A:1;",
        expect![[
            r#"error: invalid gtid set: unexpected character ';', expected `:`, `,` or end of input at byte 38"#
        ]],
    );
    check(
        "$A:1 $B:2",
        expect![[
            r#"error: invalid gtid set: unexpected character '4', expected `:`, `,` or end of input at byte 39"#
        ]],
    );
    check(
        "3e11fa47-71ca-11e1-9e33-c80aa942956:1",
        expect![[
            r#"error: invalid gtid set: expected a uuid (8-4-4-4-12 hexadecimal digits) at byte 35"#
        ]],
    );
    check(
        "3e11fa47x71ca-11e1-9e33-c80aa9429562:1",
        expect![[
            r#"error: invalid gtid set: expected a uuid (8-4-4-4-12 hexadecimal digits) at byte 8"#
        ]],
    );
    check(
        "$A:1,g3e11fa47-71ca-11e1-9e33-c80aa9429562:1",
        expect![[
            r#"error: invalid gtid set: expected a uuid (8-4-4-4-12 hexadecimal digits) at byte 39"#
        ]],
    );
    check(
        "3e11fa47",
        expect![[
            r#"error: invalid gtid set: expected a uuid (8-4-4-4-12 hexadecimal digits) at byte 8"#
        ]],
    );
    check(
        "$A:1é",
        expect![[
            r#"error: invalid gtid set: unexpected character 'é', expected `:`, `,` or end of input at byte 38"#
        ]],
    );
    check(
        "é",
        expect![[
            r#"error: invalid gtid set: expected a uuid (8-4-4-4-12 hexadecimal digits) at byte 0"#
        ]],
    );
}

#[test]
fn tagged_forms() {
    check("$A:tag:1-5", expect![[r#"$A:tag:1-5 (5 gtids)"#]]);
    // Untagged intervals first, then tags in byte order, each merged.
    check("$A:1-5:Tag1:1-3:tag2:7", expect![[r#"$A:1-5:tag1:1-3:tag2:7 (9 gtids)"#]]);
    check("$A:z:1:a:2:3", expect![[r#"$A:a:2-3:z:1 (3 gtids)"#]]);
    check("$A:tag:1,$A:3", expect![[r#"$A:3:tag:1 (2 gtids)"#]]);
    check("$A:b:1,$B:1,$A:a:1", expect![[r#"$A:a:1:b:1,$B:1 (3 gtids)"#]]);
    check("$A:_x9:1", expect![[r#"$A:_x9:1 (1 gtids)"#]]);
    // `_` sorts after digits and upper case but before lower case letters.
    check("$A:a:1:_:2:a_:3:a0:4", expect![[r#"$A:_:2:a:1:a0:4:a_:3 (4 gtids)"#]]);
    // Tagged and untagged transactions of one UUID are distinct.
    check("$A:1,$A:x:1", expect![[r#"$A:1:x:1 (2 gtids)"#]]);
    // A blank item switches back to the untagged source, as in MySQL.
    check("$A:a:1: :2", expect![[r#"$A:2:a:1 (2 gtids)"#]]);
    check(" $A : t : 1 ", expect![[r#"$A:t:1 (1 gtids)"#]]);
    check(
        "$A:abcdefghijklmnopqrstuvwxyz012345:1",
        expect![[r#"$A:abcdefghijklmnopqrstuvwxyz012345:1 (1 gtids)"#]],
    );
    check(
        "$A:abcdefghijklmnopqrstuvwxyz0123456:1",
        expect![[
            r#"error: invalid gtid set: expected a tag of 1 to 32 characters [a-z_][a-z0-9_]* at byte 37"#
        ]],
    );
    check(
        "$A:1tag:1",
        expect![[
            r#"error: invalid gtid set: unexpected character 't', expected `:`, `,` or end of input at byte 38"#
        ]],
    );
    check(
        "$A:ta-g:1",
        expect![[
            r#"error: invalid gtid set: unexpected character '-', expected `:`, `,` or end of input at byte 39"#
        ]],
    );
    check("$A:tag", expect![[r#" (0 gtids)"#]]);
}

#[test]
fn display_forms() {
    let set: GtidSet = expand("$B:1-3:x:5,$A:1").parse().unwrap();
    assert_eq!(abbreviate(&set.to_string()), "$A:1,\n$B:1-3:x:5");
    assert_eq!(abbreviate(&set.to_gtid_executed_string()), "$A:1,\n$B:1-3:x:5");
    assert_eq!(abbreviate(&set.to_compact_string()), "$A:1,$B:1-3:x:5");
    assert_eq!(abbreviate(&set.display_compact().to_string()), "$A:1,$B:1-3:x:5");
    assert_eq!(abbreviate(&format!("{set:#}")), "$A:1,$B:1-3:x:5");
    assert_eq!(GtidSet::new().to_string(), "");
}

/// Renders every operation of two sets.
fn check_ops(left: &str, right: &str, expected: Expect) {
    let left: GtidSet = expand(left).parse().unwrap();
    let right: GtidSet = expand(right).parse().unwrap();
    let actual = format!(
        "union        {:#}\nintersection {:#}\nsubtract     {:#}\nsubtract_rev {:#}\n\
         symmetric    {:#}\nsubset {} superset {} disjoint {} equal {}\n",
        left.union(&right),
        left.intersection(&right),
        left.difference(&right),
        right.difference(&left),
        left.symmetric_difference(&right),
        left.is_subset(&right),
        left.is_superset(&right),
        left.is_disjoint(&right),
        left == right,
    );
    expected.assert_eq(&abbreviate(&actual));
}

#[test]
fn operations() {
    check_ops(
        "$A:1-10:20-30",
        "$A:5-25,$B:1",
        expect![[r#"
            union        $A:1-30,$B:1
            intersection $A:5-10:20-25
            subtract     $A:1-4:26-30
            subtract_rev $A:11-19,$B:1
            symmetric    $A:1-4:11-19:26-30,$B:1
            subset false superset false disjoint false equal false
        "#]],
    );
    check_ops(
        "$A:1-5",
        "$A:1-10,$B:1-3",
        expect![[r#"
            union        $A:1-10,$B:1-3
            intersection $A:1-5
            subtract     
            subtract_rev $A:6-10,$B:1-3
            symmetric    $A:6-10,$B:1-3
            subset true superset false disjoint false equal false
        "#]],
    );
    check_ops(
        "$A:1-5",
        "$A:6-10",
        expect![[r#"
            union        $A:1-10
            intersection 
            subtract     $A:1-5
            subtract_rev $A:6-10
            symmetric    $A:1-10
            subset false superset false disjoint true equal false
        "#]],
    );
    // Tagged and untagged sources never mix.
    check_ops(
        "$A:1-5:t:1-5",
        "$A:t:3-9",
        expect![[r#"
            union        $A:1-5:t:1-9
            intersection $A:t:3-5
            subtract     $A:1-5:t:1-2
            subtract_rev $A:t:6-9
            symmetric    $A:1-5:t:1-2:6-9
            subset false superset false disjoint false equal false
        "#]],
    );
    check_ops(
        "",
        "",
        expect![[r#"
            union        
            intersection 
            subtract     
            subtract_rev 
            symmetric    
            subset true superset true disjoint true equal true
        "#]],
    );
    // One interval of the right side covering several of the left.
    check_ops(
        "$A:1:3:5:7:9-12",
        "$A:2-10",
        expect![[r#"
            union        $A:1-12
            intersection $A:3:5:7:9-10
            subtract     $A:1:11-12
            subtract_rev $A:2:4:6:8
            symmetric    $A:1-2:4:6:8:11-12
            subset false superset false disjoint false equal false
        "#]],
    );
    check_ops(
        "$A:1-9223372036854775806",
        "$A:9223372036854775806",
        expect![[r#"
            union        $A:1-9223372036854775806
            intersection $A:9223372036854775806
            subtract     $A:1-9223372036854775805
            subtract_rev 
            symmetric    $A:1-9223372036854775805
            subset false superset true disjoint false equal false
        "#]],
    );
}

/// The spec's PITR examples (000 "Lossy failover"): `a` archived A:96-100 and
/// died; `b` was promoted with only A:1-95 and wrote Bu:1-50.
#[test]
fn spec_lossy_failover() {
    let archived: GtidSet = expand("$A:1-100").parse().unwrap();
    let promoted: GtidSet = expand("$A:1-95,$B:1-50").parse().unwrap();
    let divergent = archived.difference(&promoted);
    assert_eq!(abbreviate(&divergent.to_string()), "$A:96-100");
    assert!(!archived.is_subset(&promoted));
    // excludeGtids "A:96-100": the restore is b's history.
    let exclude: GtidSet = expand("$A:96-100").parse().unwrap();
    assert!(archived.union(&promoted).difference(&exclude) == promoted);
    assert!(promoted.is_disjoint(&exclude));
    // The lag gate: the target's executed set contains the fence.
    let fence: GtidSet = expand("$A:1-95").parse().unwrap();
    assert!(fence.is_subset(&promoted));
    assert!(promoted.is_superset(&fence));
    // A target holding a transaction outside the fence is divergent.
    assert!(!promoted.is_subset(&fence));
    assert_eq!(abbreviate(&promoted.difference(&fence).to_string()), "$B:1-50");
}

#[test]
fn single_gtids() {
    let uuid_a = uuid("$A");
    let gtid: Gtid = expand("$A:7").parse().unwrap();
    assert_eq!(gtid, Gtid::new(uuid_a, 7));
    let tagged: Gtid = expand(" $A:TaG:7 ").parse().unwrap();
    assert_eq!(tagged, Gtid::tagged(uuid_a, Tag::new("tag").unwrap(), 7));
    assert_eq!(abbreviate(&tagged.to_string()), "$A:tag:7");
    assert_eq!(abbreviate(&gtid.to_string()), "$A:7");
    for bad in ["$A", "$A:", "$A:0", "$A:1-2", "$A:t", "$A:t:", "$A:1,", "$A:t:x:1"] {
        let error = expand(bad).parse::<Gtid>().unwrap_err();
        assert!(error.to_string().starts_with("invalid gtid: "), "{bad}: {error}");
    }

    let mut set = GtidSet::new();
    set.insert(&gtid).unwrap();
    set.insert(&tagged).unwrap();
    set.insert(&Gtid::new(uuid_a, 8)).unwrap();
    assert!(set.contains(&gtid));
    assert!(set.contains(&tagged));
    assert!(!set.contains(&Gtid::new(uuid_a, 6)));
    assert!(!set.contains(&Gtid::tagged(uuid_a, Tag::new("other").unwrap(), 7)));
    assert_eq!(abbreviate(&set.to_compact_string()), "$A:7-8:tag:7");
    let all: Vec<String> = set.gtids().map(|gtid| abbreviate(&gtid.to_string())).collect();
    assert_eq!(all, ["$A:7", "$A:8", "$A:tag:7"]);
    set.remove(&Gtid::new(uuid_a, 7)).unwrap();
    assert_eq!(abbreviate(&set.to_compact_string()), "$A:8:tag:7");
    assert_eq!(GtidSet::try_from(gtid).unwrap().count(), 1);
    assert!(GtidSet::try_from(Gtid::new(uuid_a, 0)).is_err());
    assert!(GtidSet::try_from(Gtid::new(uuid_a, MAX_GNO + 1)).is_err());
}

#[test]
fn per_source_views() {
    let set: GtidSet = expand("$A:3-5:9:t:1-2,$B:10-20:30").parse().unwrap();
    let uuid_a = uuid("$A");
    let uuid_b = uuid("$B");
    let tag = Tag::new("t").unwrap();
    assert_eq!(set.first(uuid_a, None), Some(3));
    assert_eq!(set.last(uuid_a, None), Some(9));
    assert_eq!(set.first(uuid_a, Some(&tag)), Some(1));
    assert_eq!(set.last(uuid_b, None), Some(30));
    assert_eq!(set.last(uuid_b, Some(&tag)), None);
    let rendered: Vec<String> = set
        .sources()
        .map(|source| {
            format!(
                "{} count={} first={} last={} intervals={}",
                abbreviate(&source.tsid().to_string()),
                source.count(),
                source.first(),
                source.last(),
                source.intervals().len()
            )
        })
        .collect();
    assert_eq!(
        rendered,
        [
            "$A count=4 first=3 last=9 intervals=2",
            "$A:t count=2 first=1 last=2 intervals=1",
            "$B count=12 first=10 last=30 intervals=2",
        ]
    );
    assert_eq!(set.uuids().collect::<Vec<_>>(), [uuid_a, uuid_b]);
    assert_eq!(abbreviate(&set.restricted_to_uuid(uuid_a).to_compact_string()), "$A:3-5:9:t:1-2");
    let intervals: Vec<_> = set.intervals().map(|(u, t, s, e)| (u, t.cloned(), s, e)).collect();
    assert_eq!(
        intervals,
        [
            (uuid_a, None, 3, 5),
            (uuid_a, None, 9, 9),
            (uuid_a, Some(tag), 1, 2),
            (uuid_b, None, 10, 20),
            (uuid_b, None, 30, 30)
        ]
    );
    assert_eq!(set.interval_count(), 5);
    assert!(set.has_tags());
    assert_eq!(set.source(uuid_b, None).unwrap().count(), 12);
}

#[test]
fn uuid_and_tag_values() {
    let uuid_a = uuid("$A");
    assert_eq!(uuid_a.to_string(), "3e11fa47-71ca-11e1-9e33-c80aa9429562");
    assert_eq!(Uuid::from_bytes(*uuid_a.as_bytes()), uuid_a);
    assert_eq!(format!("{uuid_a:?}"), "Uuid(3e11fa47-71ca-11e1-9e33-c80aa9429562)");
    assert!(uuid("$D") < uuid("$A") && uuid("$A") < uuid("$E"));
    for bad in ["", "3e11fa47-71ca-11e1-9e33-c80aa94295620", "3e11fa47-71ca-11e1-9e33_c80aa9429562"]
    {
        assert!(bad.parse::<Uuid>().is_err(), "{bad}");
    }
    assert_eq!(Tag::new("Hello_World9").unwrap().as_str(), "hello_world9");
    assert_eq!(format!("{:?}", Tag::new("x").unwrap()), "Tag(\"x\")");
    for bad in ["", "9a", "a-b", "a b", "é", &"a".repeat(33)] {
        let error = Tag::new(bad).unwrap_err();
        assert!(error.to_string().starts_with("invalid gtid tag: "), "{bad}: {error}");
    }
    assert!(Tag::new(&"a".repeat(32)).is_ok());
    assert!(Tag::new("a").unwrap() < Tag::new("b").unwrap());
}

#[test]
fn error_offsets() {
    // The second UUID starts at byte 42, its first item at byte 79.
    let error = expand("$A:1-5,\n$B:x-7").parse::<GtidSet>().unwrap_err();
    assert_eq!(error.offset(), 80);
    let error = expand("$A:1-5,\n$B:7x").parse::<GtidSet>().unwrap_err();
    assert_eq!(error.offset(), 80);
    assert_eq!(error.input(), bloodraven_gtid::Input::GtidSet);
    assert!(matches!(error.kind(), bloodraven_gtid::ErrorKind::UnexpectedCharacter { .. }));
}

pub(crate) fn uuid(name: &str) -> Uuid {
    expand(name).parse().unwrap()
}
