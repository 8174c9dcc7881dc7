//! Exact GTID-set algebra for MySQL (including MySQL 8.3+ tagged GTIDs) and
//! MariaDB GTID positions.
//!
//! See `README.md` next to this crate for the text forms, the ordering rule and
//! how to run the benchmarks.
//!
//! # MySQL text forms
//!
//! A GTID set is a list of sources separated by `,`. Each source is a UUID
//! (`8-4-4-4-12` hexadecimal digits, either case) followed by `:`-separated
//! items: an interval `n` or `n-m`, or a tag (`[a-z_][a-z0-9_]{0,31}`, either
//! case, stored in lower case) that applies to the intervals after it.
//! Whitespace (space, tab, newline, vertical tab, form feed, carriage return)
//! may appear between tokens, empty entries between commas are ignored, and
//! the empty or all-blank text is the empty set. Transaction numbers are
//! decimal, 1 to 2^63-2 ([`MAX_GNO`]); `0` as an interval start is refused, and an interval
//! whose end is below its start is empty, as in MySQL. A blank item
//! (`uuid:a:1: :2`) switches back to the untagged source, as MySQL's tag
//! reader does. MySQL reads numbers with `strtoll(.., 0)` (so `010` is octal);
//! numbers it would read differently from decimal (leading zeros, `0x..`,
//! signs) are refused instead of reinterpreted.
//!
//! # Canonical text
//!
//! UUIDs ascend (byte order, which is the order of their lowercase text).
//! Under one UUID, the untagged intervals come first, then each tag in
//! ascending byte order of its lowercase name, each followed by its merged
//! intervals: `uuid:1-5:7:alpha:1-3:beta:9`. Sources are separated by `",\n"`
//! (as `@@gtid_executed` prints them: [`GtidSet`]'s `Display`) or by `","`
//! ([`GtidSet::to_compact_string`], `{:#}`). The empty set prints as `""`.

mod error;
mod gtid;
mod intervals;
mod mariadb;
mod parse;
#[cfg(feature = "serde")]
mod serde_impl;
mod set;
mod tag;
mod uuid;

pub use crate::error::{Error, ErrorKind, GtidError, Input, Result};
pub use crate::gtid::Gtid;
pub use crate::mariadb::{MariaGtid, MariaGtidPosition, MariaGtidRange};
pub use crate::set::{GtidSet, Interval, Source, Tsid};
pub use crate::tag::{TAG_MAX_LEN, Tag};
pub use crate::uuid::Uuid;

/// The largest transaction number MySQL accepts: 2^63 - 2.
///
/// MySQL keeps intervals half-open with an `i64` end, so `GNO_END = 2^63 - 1`
/// is "one past the last" and its parser refuses any number `>= GNO_END`.
pub const MAX_GNO: u64 = i64::MAX as u64 - 1;

#[cfg(test)]
mod tests;
