//! serde support (feature `serde`): every type is its canonical string.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::{Gtid, GtidSet, MariaGtid, MariaGtidPosition, MariaGtidRange, Tag, Uuid};

struct FromStrVisitor<T>(PhantomData<T>, &'static str);

impl<T> Visitor<'_> for FromStrVisitor<T>
where
    T: FromStr,
    T::Err: fmt::Display,
{
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.1)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<T, E> {
        value.parse().map_err(E::custom)
    }
}

macro_rules! string_serde {
    ($type:ty, $expecting:literal, |$value:ident| $to_string:expr) => {
        impl Serialize for $type {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let $value = self;
                serializer.collect_str(&$to_string)
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_str(FromStrVisitor(PhantomData, $expecting))
            }
        }
    };
}

// GTID sets serialize in the compact form: one line, no embedded newlines.
string_serde!(GtidSet, "a gtid set", |value| value.display_compact());
string_serde!(Gtid, "a gtid", |value| value);
string_serde!(Uuid, "a uuid", |value| value);
string_serde!(Tag, "a gtid tag", |value| value);
string_serde!(MariaGtid, "a mariadb gtid", |value| value);
string_serde!(MariaGtidPosition, "a mariadb gtid position", |value| value);
string_serde!(MariaGtidRange, "a mariadb gtid range", |value| value);
