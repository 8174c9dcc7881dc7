//! MySQL GTID sets.

use std::cmp::Ordering;
use std::fmt;

use crate::error::{ErrorKind, GtidError, Input};
use crate::intervals;
use crate::{Gtid, MAX_GNO, TAG_MAX_LEN, Tag, Uuid};

/// A closed interval `start..=end` of transaction numbers, `1 <= start <= end <= MAX_GNO`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Interval {
    /// First transaction number in the interval.
    pub start: u64,
    /// Last transaction number in the interval (inclusive).
    pub end: u64,
}

impl Interval {
    /// The interval `start..=end`, validated as MySQL validates it.
    pub fn new(start: u64, end: u64) -> Result<Interval, GtidError> {
        let error = |kind| GtidError::new(Input::Interval, 0, kind);
        if start == 0 {
            return Err(error(ErrorKind::ZeroNumber));
        }
        if end > MAX_GNO {
            return Err(error(ErrorKind::NumberTooLarge { max: MAX_GNO }));
        }
        if end < start {
            return Err(error(ErrorKind::ReversedInterval { start, end }));
        }
        Ok(Interval { start, end })
    }

    /// Number of transactions in the interval: at least 1 for a valid interval.
    ///
    /// The fields are public, so an interval built by hand may be reversed (0
    /// transactions) or span all of `u64` (saturates at `u64::MAX`).
    pub fn count(&self) -> u64 {
        match self.end.checked_sub(self.start) {
            Some(span) => span.saturating_add(1),
            None => 0,
        }
    }

    /// Whether `gno` is in the interval.
    pub fn contains(&self, gno: u64) -> bool {
        self.start <= gno && gno <= self.end
    }
}

/// A transaction source: a server UUID and an optional tag.
///
/// Untagged and tagged transactions of one UUID are distinct sources. The
/// order is MySQL's: by UUID, then the untagged source, then tags in byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tsid {
    /// The server UUID.
    pub uuid: Uuid,
    /// The tag, if any.
    pub tag: Option<Tag>,
}

impl Tsid {
    /// The untagged source of `uuid`.
    pub const fn untagged(uuid: Uuid) -> Tsid {
        Tsid { uuid, tag: None }
    }
}

impl fmt::Display for Tsid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tag {
            None => write!(f, "{}", self.uuid),
            Some(tag) => write!(f, "{}:{tag}", self.uuid),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SourceIntervals {
    pub(crate) tsid: Tsid,
    /// Canonical: sorted, disjoint, non-adjacent, never empty inside a set.
    pub(crate) intervals: Vec<Interval>,
}

/// A MySQL GTID set, always in canonical form (sources sorted, intervals merged).
///
/// `Display` prints MySQL's `@@gtid_executed` text (sources separated by
/// `",\n"`); [`GtidSet::to_compact_string`] separates them by `","`.
/// `FromStr` accepts every form MySQL accepts (see the crate documentation).
/// All operations merge interval lists in O(n + m); nothing is done per transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GtidSet {
    /// Sorted by `tsid`, no duplicates, no empty interval lists.
    pub(crate) sources: Vec<SourceIntervals>,
}

/// One source's part of a [`GtidSet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source<'a> {
    tsid: &'a Tsid,
    intervals: &'a [Interval],
}

impl<'a> Source<'a> {
    /// The source (UUID and tag).
    pub fn tsid(&self) -> &'a Tsid {
        self.tsid
    }

    /// The server UUID.
    pub fn uuid(&self) -> Uuid {
        self.tsid.uuid
    }

    /// The tag, if any.
    pub fn tag(&self) -> Option<&'a Tag> {
        self.tsid.tag.as_ref()
    }

    /// The source's intervals, sorted and merged; never empty.
    pub fn intervals(&self) -> &'a [Interval] {
        self.intervals
    }

    /// The smallest transaction number of this source.
    pub fn first(&self) -> u64 {
        self.intervals.first().map_or(0, |interval| interval.start)
    }

    /// The largest transaction number of this source.
    pub fn last(&self) -> u64 {
        self.intervals.last().map_or(0, |interval| interval.end)
    }

    /// Number of transactions of this source.
    pub fn count(&self) -> u128 {
        self.intervals.iter().map(|interval| u128::from(interval.count())).sum()
    }

    /// Whether transaction `gno` of this source is in the set.
    pub fn contains(&self, gno: u64) -> bool {
        intervals::contains(self.intervals, gno)
    }
}

impl GtidSet {
    /// The empty set.
    pub fn new() -> Self {
        GtidSet { sources: Vec::new() }
    }

    /// Whether the set holds no transaction.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    fn source_index(&self, tsid: &Tsid) -> Result<usize, usize> {
        // Fast path for building in order.
        match self.sources.last() {
            None => return Err(0),
            Some(last) => match last.tsid.cmp(tsid) {
                Ordering::Less => return Err(self.sources.len()),
                Ordering::Equal => return Ok(self.sources.len() - 1),
                Ordering::Greater => {}
            },
        }
        self.sources.binary_search_by(|source| source.tsid.cmp(tsid))
    }

    fn source_intervals_mut(&mut self, tsid: Tsid) -> &mut Vec<Interval> {
        let index = match self.source_index(&tsid) {
            Ok(index) => index,
            Err(index) => {
                self.sources.insert(index, SourceIntervals { tsid, intervals: Vec::new() });
                index
            }
        };
        &mut self.sources[index].intervals
    }

    /// Adds the closed interval `start..=end`, merging; requires
    /// `1 <= start <= end <= MAX_GNO` (2^63-2, as in MySQL).
    pub fn insert_interval(
        &mut self,
        uuid: Uuid,
        tag: Option<&Tag>,
        start: u64,
        end: u64,
    ) -> Result<(), GtidError> {
        let interval = Interval::new(start, end)?;
        let tsid = Tsid { uuid, tag: tag.copied() };
        intervals::insert(self.source_intervals_mut(tsid), interval);
        Ok(())
    }

    /// Adds one GTID.
    pub fn insert(&mut self, gtid: &Gtid) -> Result<(), GtidError> {
        self.insert_interval(gtid.uuid, gtid.tag.as_ref(), gtid.gno, gtid.gno)
    }

    /// Removes the closed interval `start..=end` of one source (validated like
    /// [`GtidSet::insert_interval`]).
    pub fn remove_interval(
        &mut self,
        uuid: Uuid,
        tag: Option<&Tag>,
        start: u64,
        end: u64,
    ) -> Result<(), GtidError> {
        let interval = Interval::new(start, end)?;
        let tsid = Tsid { uuid, tag: tag.copied() };
        if let Ok(index) = self.source_index(&tsid) {
            intervals::remove(&mut self.sources[index].intervals, interval);
            if self.sources[index].intervals.is_empty() {
                self.sources.remove(index);
            }
        }
        Ok(())
    }

    /// Removes one GTID.
    pub fn remove(&mut self, gtid: &Gtid) -> Result<(), GtidError> {
        self.remove_interval(gtid.uuid, gtid.tag.as_ref(), gtid.gno, gtid.gno)
    }

    /// Whether the set holds `gtid`.
    pub fn contains(&self, gtid: &Gtid) -> bool {
        let tsid = Tsid { uuid: gtid.uuid, tag: gtid.tag };
        self.source_of(&tsid).is_some_and(|source| source.contains(gtid.gno))
    }

    /// Every transaction in `self` or `other`.
    pub fn union(&self, other: &GtidSet) -> GtidSet {
        let mut sources = Vec::with_capacity(self.sources.len().max(other.sources.len()));
        merge_sources(&self.sources, &other.sources, |step| match step {
            Step::Left(source) | Step::Right(source) => sources.push(source.clone()),
            Step::Both(left, right) => sources.push(SourceIntervals {
                tsid: left.tsid,
                intervals: intervals::union(&left.intervals, &right.intervals),
            }),
        });
        GtidSet { sources }
    }

    /// Adds every transaction of `other` to `self`.
    pub fn union_with(&mut self, other: &GtidSet) {
        if other.is_empty() {
            return;
        }
        *self = self.union(other);
    }

    /// Transactions in both `self` and `other`.
    pub fn intersection(&self, other: &GtidSet) -> GtidSet {
        let mut sources = Vec::new();
        merge_sources(&self.sources, &other.sources, |step| {
            if let Step::Both(left, right) = step {
                let common = intervals::intersection(&left.intervals, &right.intervals);
                if !common.is_empty() {
                    sources.push(SourceIntervals { tsid: left.tsid, intervals: common });
                }
            }
        });
        GtidSet { sources }
    }

    /// Transactions in `self` but not in `other`: MySQL's `GTID_SUBTRACT(self, other)`.
    pub fn difference(&self, other: &GtidSet) -> GtidSet {
        let mut sources = Vec::with_capacity(self.sources.len());
        merge_sources(&self.sources, &other.sources, |step| match step {
            Step::Left(source) => sources.push(source.clone()),
            Step::Right(_) => {}
            Step::Both(left, right) => {
                let rest = intervals::difference(&left.intervals, &right.intervals);
                if !rest.is_empty() {
                    sources.push(SourceIntervals { tsid: left.tsid, intervals: rest });
                }
            }
        });
        GtidSet { sources }
    }

    /// Removes every transaction of `other` from `self`.
    pub fn subtract(&mut self, other: &GtidSet) {
        if other.is_empty() {
            return;
        }
        *self = self.difference(other);
    }

    /// Transactions in exactly one of `self` and `other`.
    pub fn symmetric_difference(&self, other: &GtidSet) -> GtidSet {
        self.difference(other).union(&other.difference(self))
    }

    /// Whether every transaction of `self` is in `other`: MySQL's `GTID_SUBSET(self, other)`.
    pub fn is_subset(&self, other: &GtidSet) -> bool {
        if self.sources.len() > other.sources.len() {
            return false;
        }
        let mut j = 0;
        for source in &self.sources {
            while j < other.sources.len() && other.sources[j].tsid < source.tsid {
                j += 1;
            }
            match other.sources.get(j) {
                Some(cover) if cover.tsid == source.tsid => {
                    if !intervals::is_subset(&source.intervals, &cover.intervals) {
                        return false;
                    }
                }
                _ => return false,
            }
        }
        true
    }

    /// Whether every transaction of `other` is in `self`.
    pub fn is_superset(&self, other: &GtidSet) -> bool {
        other.is_subset(self)
    }

    /// Whether `self` and `other` share no transaction.
    pub fn is_disjoint(&self, other: &GtidSet) -> bool {
        let mut disjoint = true;
        merge_sources(&self.sources, &other.sources, |step| {
            if let Step::Both(left, right) = step {
                disjoint = disjoint && intervals::is_disjoint(&left.intervals, &right.intervals);
            }
        });
        disjoint
    }

    /// Number of transactions (cannot overflow: at most 2^63 per source).
    pub fn count(&self) -> u128 {
        self.sources
            .iter()
            .flat_map(|source| &source.intervals)
            .map(|i| u128::from(i.count()))
            .sum()
    }

    /// Number of intervals over all sources.
    pub fn interval_count(&self) -> usize {
        self.sources.iter().map(|source| source.intervals.len()).sum()
    }

    /// `(uuid, tag, start, end)` closed intervals in canonical order.
    pub fn intervals(&self) -> impl Iterator<Item = (Uuid, Option<&Tag>, u64, u64)> + '_ {
        self.sources.iter().flat_map(|source| {
            source.intervals.iter().map(move |interval| {
                (source.tsid.uuid, source.tsid.tag.as_ref(), interval.start, interval.end)
            })
        })
    }

    /// Every single GTID, in canonical order. This is per transaction: use it
    /// only on sets known to be small.
    pub fn gtids(&self) -> impl Iterator<Item = Gtid> + '_ {
        self.sources.iter().flat_map(|source| {
            source.intervals.iter().flat_map(move |interval| {
                (interval.start..=interval.end).map(move |gno| Gtid {
                    uuid: source.tsid.uuid,
                    tag: source.tsid.tag,
                    gno,
                })
            })
        })
    }

    /// The per-source view, in canonical order.
    pub fn sources(&self) -> impl ExactSizeIterator<Item = Source<'_>> + '_ {
        self.sources
            .iter()
            .map(|source| Source { tsid: &source.tsid, intervals: &source.intervals })
    }

    /// One source's part of the set, if it has any transaction.
    pub fn source(&self, uuid: Uuid, tag: Option<&Tag>) -> Option<Source<'_>> {
        self.source_of(&Tsid { uuid, tag: tag.copied() })
    }

    fn source_of(&self, tsid: &Tsid) -> Option<Source<'_>> {
        let index = self.sources.binary_search_by(|source| source.tsid.cmp(tsid)).ok()?;
        let source = &self.sources[index];
        Some(Source { tsid: &source.tsid, intervals: &source.intervals })
    }

    /// The smallest transaction number of one source.
    pub fn first(&self, uuid: Uuid, tag: Option<&Tag>) -> Option<u64> {
        self.source(uuid, tag).map(|source| source.first())
    }

    /// The largest transaction number of one source.
    pub fn last(&self, uuid: Uuid, tag: Option<&Tag>) -> Option<u64> {
        self.source(uuid, tag).map(|source| source.last())
    }

    /// The UUIDs that have any transaction (tagged or not), sorted, without repeats.
    pub fn uuids(&self) -> impl Iterator<Item = Uuid> + '_ {
        let mut previous = None;
        self.sources.iter().filter_map(move |source| {
            let uuid = source.tsid.uuid;
            if previous == Some(uuid) {
                None
            } else {
                previous = Some(uuid);
                Some(uuid)
            }
        })
    }

    /// Only the transactions of `uuid` (untagged and tagged).
    pub fn restricted_to_uuid(&self, uuid: Uuid) -> GtidSet {
        let sources =
            self.sources.iter().filter(|source| source.tsid.uuid == uuid).cloned().collect();
        GtidSet { sources }
    }

    /// Whether any source has a tag.
    pub fn has_tags(&self) -> bool {
        self.sources.iter().any(|source| source.tsid.tag.is_some())
    }

    /// The canonical text with sources separated by `","` instead of `",\n"`.
    pub fn to_compact_string(&self) -> String {
        self.to_string_with(",")
    }

    /// The canonical text as MySQL prints `@@gtid_executed` (sources separated by `",\n"`).
    pub fn to_gtid_executed_string(&self) -> String {
        self.to_string_with(",\n")
    }

    /// A `Display` adapter using the compact `","` separator.
    pub fn display_compact(&self) -> impl fmt::Display + '_ {
        Compact(self)
    }

    fn to_string_with(&self, separator: &str) -> String {
        let mut out = Vec::with_capacity(self.estimated_text_len(separator.len()));
        self.write_text(&mut out, separator.as_bytes());
        // Only ASCII is ever written.
        String::from_utf8(out).unwrap_or_default()
    }

    fn estimated_text_len(&self, separator_len: usize) -> usize {
        self.sources.len() * (UUID_AND_SEPARATOR + separator_len + TAG_MAX_LEN)
            + self.interval_count() * 16
    }

    fn write_text(&self, out: &mut Vec<u8>, separator: &[u8]) {
        let mut previous_uuid = None;
        for source in &self.sources {
            if previous_uuid != Some(source.tsid.uuid) {
                if previous_uuid.is_some() {
                    out.extend_from_slice(separator);
                }
                out.extend_from_slice(&source.tsid.uuid.encode());
                previous_uuid = Some(source.tsid.uuid);
            }
            if let Some(tag) = &source.tsid.tag {
                out.push(b':');
                out.extend_from_slice(tag.as_str().as_bytes());
            }
            for interval in &source.intervals {
                out.push(b':');
                push_number(out, interval.start);
                if interval.end != interval.start {
                    out.push(b'-');
                    push_number(out, interval.end);
                }
            }
        }
    }
}

const UUID_AND_SEPARATOR: usize = crate::uuid::UUID_TEXT_LEN + 1;

#[inline]
fn push_number(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut position = digits.len();
    loop {
        position -= 1;
        digits[position] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[position..]);
}

struct Compact<'a>(&'a GtidSet);

impl fmt::Display for Compact<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_compact_string())
    }
}

impl fmt::Display for GtidSet {
    /// MySQL's `@@gtid_executed` text; `{:#}` prints the compact form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let separator = if f.alternate() { "," } else { ",\n" };
        f.write_str(&self.to_string_with(separator))
    }
}

impl TryFrom<Gtid> for GtidSet {
    type Error = GtidError;

    /// The set of one GTID; fails for a number outside `1..=MAX_GNO`.
    fn try_from(gtid: Gtid) -> Result<Self, Self::Error> {
        let mut set = GtidSet::new();
        set.insert(&gtid)?;
        Ok(set)
    }
}

enum Step<'a> {
    Left(&'a SourceIntervals),
    Right(&'a SourceIntervals),
    Both(&'a SourceIntervals, &'a SourceIntervals),
}

/// Walks two sorted source lists in order, pairing equal sources.
fn merge_sources<'a>(
    left: &'a [SourceIntervals],
    right: &'a [SourceIntervals],
    mut visit: impl FnMut(Step<'a>),
) {
    let (mut i, mut j) = (0, 0);
    while i < left.len() && j < right.len() {
        match left[i].tsid.cmp(&right[j].tsid) {
            Ordering::Less => {
                visit(Step::Left(&left[i]));
                i += 1;
            }
            Ordering::Greater => {
                visit(Step::Right(&right[j]));
                j += 1;
            }
            Ordering::Equal => {
                visit(Step::Both(&left[i], &right[j]));
                i += 1;
                j += 1;
            }
        }
    }
    left[i..].iter().for_each(|source| visit(Step::Left(source)));
    right[j..].iter().for_each(|source| visit(Step::Right(source)));
}
