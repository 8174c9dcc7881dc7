//! serde (feature `serde`, enabled for tests by the self dev-dependency).

use bloodraven_gtid::{Gtid, GtidSet, MariaGtid, MariaGtidPosition, MariaGtidRange, Tag, Uuid};
use serde::{Serialize, de::DeserializeOwned};

use crate::{abbreviate, expand};

fn round_trip<T>(value: &T) -> String
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_string(value).unwrap();
    assert_eq!(&serde_json::from_str::<T>(&json).unwrap(), value);
    abbreviate(&json)
}

#[test]
fn canonical_strings() {
    let set: GtidSet = expand("$B:1-3:x:5,\n$A:1").parse().unwrap();
    // Sets serialize compact: one line, no embedded newline.
    assert_eq!(round_trip(&set), r#""$A:1,$B:1-3:x:5""#);
    assert_eq!(round_trip(&GtidSet::new()), r#""""#);
    let gtid: Gtid = expand("$A:t:7").parse().unwrap();
    assert_eq!(round_trip(&gtid), r#""$A:t:7""#);
    let uuid: Uuid = expand("$A").parse().unwrap();
    assert_eq!(round_trip(&uuid), r#""$A""#);
    assert_eq!(round_trip(&Tag::new("Abc").unwrap()), r#""abc""#);
    assert_eq!(round_trip(&MariaGtid::new(0, 1, 2)), r#""0-1-2""#);
    let position: MariaGtidPosition = "1-1-1,0-1-2".parse().unwrap();
    assert_eq!(round_trip(&position), r#""0-1-2,1-1-1""#);
    let range: MariaGtidRange = "0-1-219..0-1-225".parse().unwrap();
    assert_eq!(round_trip(&range), r#""0-1-219..0-1-225""#);
    // Non-canonical input is accepted and normalized.
    let parsed: GtidSet = serde_json::from_str(&format!("{:?}", expand("$A:3,$A:1-2"))).unwrap();
    assert_eq!(abbreviate(&parsed.to_string()), "$A:1-3");
}

#[test]
fn errors_name_the_input() {
    let error = serde_json::from_str::<GtidSet>(r#""nonsense""#).unwrap_err();
    assert!(error.to_string().starts_with("invalid gtid set: expected a uuid"), "{error}");
    let error = serde_json::from_str::<GtidSet>("17").unwrap_err();
    assert!(error.to_string().contains("expected a gtid set"), "{error}");
}
