//! MariaDB GTIDs, positions and ranges.

use std::cmp::Ordering;

use bloodraven_gtid::{MariaGtid, MariaGtidPosition, MariaGtidRange};
use expect_test::{Expect, expect};

fn check_position(input: &str, expected: Expect) {
    let actual = match input.parse::<MariaGtidPosition>() {
        Ok(position) => {
            assert_eq!(position.to_string().parse::<MariaGtidPosition>().unwrap(), position);
            format!("{position:?} => {position:?}", position = position.to_string())
        }
        Err(error) => format!("error: {error}"),
    };
    expected.assert_eq(&actual);
}

#[test]
fn positions() {
    check_position("", expect![[r#""" => """#]]);
    check_position("0-1-100", expect![[r#""0-1-100" => "0-1-100""#]]);
    check_position("1-2-5,0-1-100", expect![[r#""0-1-100,1-2-5" => "0-1-100,1-2-5""#]]);
    check_position(" 0-1-100 ,\n 1-2-5 ", expect![[r#""0-1-100,1-2-5" => "0-1-100,1-2-5""#]]);
    check_position(
        "4294967295-4294967295-18446744073709551615",
        expect![[
            r#""4294967295-4294967295-18446744073709551615" => "4294967295-4294967295-18446744073709551615""#
        ]],
    );
    check_position("0-1-000000000000000000000000005", expect![[r#""0-1-5" => "0-1-5""#]]);
    check_position(
        "0-1-18446744073709551616",
        expect![
            "error: invalid mariadb gtid position: number is larger than 18446744073709551615 at byte 4"
        ],
    );
    check_position(
        "0-1-99999999999999999999",
        expect![
            "error: invalid mariadb gtid position: number is larger than 18446744073709551615 at byte 4"
        ],
    );
    check_position(
        "4294967296-1-1",
        expect![[
            r#"error: invalid mariadb gtid position: number is larger than 4294967295 at byte 0"#
        ]],
    );
    check_position(
        "0-1-100,0-2-101",
        expect![[r#"error: invalid mariadb gtid position: domain 0 appears twice at byte 8"#]],
    );
    check_position(
        "0-1",
        expect![[
            r#"error: invalid mariadb gtid position: unexpected end of input, expected `-` at byte 3"#
        ]],
    );
    check_position(
        "0-1-100,",
        expect![[
            r#"error: invalid mariadb gtid position: unexpected end of input, expected a transaction number at byte 8"#
        ]],
    );
    check_position(
        "0-1-100;1-1-1",
        expect![[
            r#"error: invalid mariadb gtid position: unexpected character ';', expected `,` or end of input at byte 7"#
        ]],
    );
    check_position(
        "a-1-1",
        expect![[
            r#"error: invalid mariadb gtid position: unexpected character 'a', expected a transaction number at byte 0"#
        ]],
    );
}

#[test]
fn position_operations() {
    let mut position = MariaGtidPosition::new();
    assert!(position.is_empty());
    position.update(MariaGtid::new(1, 2, 5));
    position.update(MariaGtid::new(0, 1, 100));
    position.update(MariaGtid::new(1, 3, 6));
    assert_eq!(position.to_string(), "0-1-100,1-3-6");
    assert_eq!(position.get(1), Some(&MariaGtid::new(1, 3, 6)));
    assert_eq!(position.get(2), None);
    assert_eq!(position.len(), 2);
    assert_eq!(position.iter().map(|gtid| gtid.domain).collect::<Vec<_>>(), [0, 1]);

    let behind: MariaGtidPosition = "0-1-99,1-3-6".parse().unwrap();
    let ahead_elsewhere: MariaGtidPosition = "0-1-99,1-3-7".parse().unwrap();
    assert!(position.includes(&MariaGtid::new(0, 1, 100)));
    assert!(!position.includes(&MariaGtid::new(0, 1, 101)));
    assert!(!position.includes(&MariaGtid::new(5, 1, 1)));
    assert!(position.includes_position(&behind));
    assert_eq!(position.partial_compare(&behind), Some(Ordering::Greater));
    assert_eq!(behind.partial_compare(&position), Some(Ordering::Less));
    assert_eq!(position.partial_compare(&position.clone()), Some(Ordering::Equal));
    assert_eq!(position.partial_compare(&ahead_elsewhere), None);
    assert_eq!(position.compare_domain(&ahead_elsewhere, 0), Ordering::Greater);
    assert_eq!(position.compare_domain(&ahead_elsewhere, 1), Ordering::Less);
    assert_eq!(position.compare_domain(&ahead_elsewhere, 9), Ordering::Equal);
    assert_eq!(position.remove(0), Some(MariaGtid::new(0, 1, 100)));
    assert_eq!(position.to_string(), "1-3-6");
    let collected: MariaGtidPosition =
        [MariaGtid::new(2, 1, 1), MariaGtid::new(2, 1, 2)].into_iter().collect();
    assert_eq!(collected.to_string(), "2-1-2");
}

#[test]
fn single_gtids() {
    assert_eq!("0-1-219".parse::<MariaGtid>().unwrap(), MariaGtid::new(0, 1, 219));
    assert_eq!(" 7-8-9 ".parse::<MariaGtid>().unwrap().to_string(), "7-8-9");
    for bad in ["", "0-1", "0-1-", "-1-2-3", "0-1-2-3", "0--1-2", "0-1-2,"] {
        assert!(bad.parse::<MariaGtid>().is_err(), "{bad}");
    }
}

/// The spec's forked-segment form (001: forkGTIDs "a MariaDB range such as 0-1-219..0-1-225").
#[test]
fn ranges() {
    let range: MariaGtidRange = "0-1-219..0-1-225".parse().unwrap();
    assert_eq!(range.to_string(), "0-1-219..0-1-225");
    assert_eq!(range.first(), MariaGtid::new(0, 1, 219));
    assert_eq!(range.last(), MariaGtid::new(0, 1, 225));
    assert_eq!(range.count(), 7);
    assert!(range.contains(&MariaGtid::new(0, 1, 220)));
    assert!(!range.contains(&MariaGtid::new(0, 2, 220)));
    assert!(!range.contains(&MariaGtid::new(0, 1, 226)));
    let single: MariaGtidRange = "0-1-5".parse().unwrap();
    assert_eq!(single.count(), 1);
    let error = "0-1-225..0-1-219".parse::<MariaGtidRange>().unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid mariadb gtid range: range ends must share domain and server and be in order at byte 0"
    );
    assert!("0-1-1..1-1-2".parse::<MariaGtidRange>().is_err());
    assert!("0-1-1.0-1-2".parse::<MariaGtidRange>().is_err());
    assert!("0-1-1..".parse::<MariaGtidRange>().is_err());
    assert!(MariaGtidRange::new(MariaGtid::new(0, 1, 1), MariaGtid::new(0, 1, 1)).is_ok());
}
