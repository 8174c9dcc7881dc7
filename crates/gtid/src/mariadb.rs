//! MariaDB GTIDs (`domain-server-seq`), positions and ranges.
//!
//! MariaDB numbers transactions per replication domain; a position
//! (`@@gtid_binlog_pos`, `@@gtid_current_pos`, `@@gtid_slave_pos`) holds the
//! last GTID of each domain, and a server has applied a transaction of a
//! domain when its position's sequence number there is at least as large.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::error::{ErrorKind, GtidError, Input};
use crate::parse::Cursor;

/// One MariaDB GTID: `domain-server_id-seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MariaGtid {
    /// Replication domain (`gtid_domain_id`).
    pub domain: u32,
    /// Originating server's `server_id`.
    pub server_id: u32,
    /// Sequence number within the domain.
    pub seq: u64,
}

impl MariaGtid {
    /// The GTID `domain-server_id-seq`.
    pub const fn new(domain: u32, server_id: u32, seq: u64) -> MariaGtid {
        MariaGtid { domain, server_id, seq }
    }

    fn parse_at(cursor: &mut Cursor<'_>) -> Result<MariaGtid, GtidError> {
        let domain = number_u32(cursor)?;
        expect_byte(cursor, b'-', "`-`")?;
        let server_id = number_u32(cursor)?;
        expect_byte(cursor, b'-', "`-`")?;
        let seq = cursor.number(u64::MAX)?;
        Ok(MariaGtid { domain, server_id, seq })
    }
}

fn number_u32(cursor: &mut Cursor<'_>) -> Result<u32, GtidError> {
    let value = cursor.number(u64::from(u32::MAX))?;
    // `number` refused anything above u32::MAX.
    Ok(u32::try_from(value).unwrap_or(u32::MAX))
}

fn expect_byte(cursor: &mut Cursor<'_>, byte: u8, expected: &'static str) -> Result<(), GtidError> {
    if cursor.peek() != Some(byte) {
        return Err(cursor.unexpected(expected));
    }
    cursor.position += 1;
    Ok(())
}

fn expect_end(cursor: &mut Cursor<'_>) -> Result<(), GtidError> {
    cursor.skip_space();
    if !cursor.is_at_end() {
        return Err(cursor.unexpected("end of input"));
    }
    Ok(())
}

impl fmt::Display for MariaGtid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.domain, self.server_id, self.seq)
    }
}

impl FromStr for MariaGtid {
    type Err = GtidError;

    /// Parses `domain-server_id-seq` (surrounding whitespace allowed).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut cursor = Cursor::new(text, Input::MariaGtid);
        cursor.skip_space();
        let gtid = MariaGtid::parse_at(&mut cursor)?;
        expect_end(&mut cursor)?;
        Ok(gtid)
    }
}

/// A MariaDB GTID position: the last GTID of each domain, sorted by domain.
///
/// Text form: GTIDs separated by `,` (whitespace allowed around them), as in
/// `@@gtid_binlog_pos`; the empty string is the empty position. Printed sorted
/// by domain, separated by `,`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MariaGtidPosition {
    /// Sorted by domain, one entry per domain.
    gtids: Vec<MariaGtid>,
}

impl MariaGtidPosition {
    /// The empty position.
    pub fn new() -> Self {
        MariaGtidPosition { gtids: Vec::new() }
    }

    /// Whether no domain has a GTID.
    pub fn is_empty(&self) -> bool {
        self.gtids.is_empty()
    }

    /// Number of domains.
    pub fn len(&self) -> usize {
        self.gtids.len()
    }

    /// The GTID of `domain`.
    pub fn get(&self, domain: u32) -> Option<&MariaGtid> {
        let index = self.gtids.binary_search_by_key(&domain, |gtid| gtid.domain).ok()?;
        self.gtids.get(index)
    }

    /// Sets the GTID of `gtid.domain` to `gtid` (the latest transaction wins).
    pub fn update(&mut self, gtid: MariaGtid) {
        match self.gtids.binary_search_by_key(&gtid.domain, |existing| existing.domain) {
            Ok(index) => self.gtids[index] = gtid,
            Err(index) => self.gtids.insert(index, gtid),
        }
    }

    /// Removes the GTID of `domain`.
    pub fn remove(&mut self, domain: u32) -> Option<MariaGtid> {
        let index = self.gtids.binary_search_by_key(&domain, |gtid| gtid.domain).ok()?;
        Some(self.gtids.remove(index))
    }

    /// The GTIDs, sorted by domain.
    pub fn iter(&self) -> impl Iterator<Item = &MariaGtid> {
        self.gtids.iter()
    }

    /// Compares the sequence numbers of `domain`; a missing domain is before any GTID.
    pub fn compare_domain(&self, other: &MariaGtidPosition, domain: u32) -> Ordering {
        let seq = |position: &MariaGtidPosition| position.get(domain).map(|gtid| gtid.seq);
        seq(self).cmp(&seq(other))
    }

    /// Whether this position has reached `gtid`: same domain, sequence number at least `gtid.seq`.
    pub fn includes(&self, gtid: &MariaGtid) -> bool {
        self.get(gtid.domain).is_some_and(|own| own.seq >= gtid.seq)
    }

    /// Whether this position has reached `other` in every domain of `other`.
    pub fn includes_position(&self, other: &MariaGtidPosition) -> bool {
        other.gtids.iter().all(|gtid| self.includes(gtid))
    }

    /// Per-domain order of two positions: `Some(Less)` if `self` is behind or
    /// equal in every domain and behind in one, `None` if each is ahead in some domain.
    pub fn partial_compare(&self, other: &MariaGtidPosition) -> Option<Ordering> {
        match (self.includes_position(other), other.includes_position(self)) {
            (true, true) => Some(Ordering::Equal),
            (true, false) => Some(Ordering::Greater),
            (false, true) => Some(Ordering::Less),
            (false, false) => None,
        }
    }
}

impl FromIterator<MariaGtid> for MariaGtidPosition {
    /// Later GTIDs of a domain replace earlier ones.
    fn from_iter<I: IntoIterator<Item = MariaGtid>>(iter: I) -> Self {
        let mut position = MariaGtidPosition::new();
        for gtid in iter {
            position.update(gtid);
        }
        position
    }
}

impl fmt::Display for MariaGtidPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, gtid) in self.gtids.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{gtid}")?;
        }
        Ok(())
    }
}

impl FromStr for MariaGtidPosition {
    type Err = GtidError;

    /// Parses `d-s-n[,d-s-n...]`; refuses a domain given twice, as MariaDB does.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut cursor = Cursor::new(text, Input::MariaGtidPosition);
        let mut position = MariaGtidPosition::new();
        cursor.skip_space();
        if cursor.is_at_end() {
            return Ok(position);
        }
        loop {
            cursor.skip_space();
            let start = cursor.position;
            let gtid = MariaGtid::parse_at(&mut cursor)?;
            if position.get(gtid.domain).is_some() {
                return Err(cursor.error(start, ErrorKind::DuplicateDomain { domain: gtid.domain }));
            }
            position.update(gtid);
            cursor.skip_space();
            match cursor.peek() {
                None => return Ok(position),
                Some(b',') => cursor.position += 1,
                Some(_) => return Err(cursor.unexpected("`,` or end of input")),
            }
        }
    }
}

/// A run of MariaDB transactions of one domain and server: `0-1-219..0-1-225`,
/// as the spec prints forked segments. Both ends are included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MariaGtidRange {
    first: MariaGtid,
    last: MariaGtid,
}

impl MariaGtidRange {
    /// The range `first..last`; both must share domain and server, `first.seq <= last.seq`.
    pub fn new(first: MariaGtid, last: MariaGtid) -> Result<MariaGtidRange, GtidError> {
        if first.domain != last.domain || first.server_id != last.server_id || first.seq > last.seq
        {
            return Err(GtidError::new(Input::MariaGtidRange, 0, ErrorKind::InvalidRange));
        }
        Ok(MariaGtidRange { first, last })
    }

    /// The first GTID of the range.
    pub fn first(&self) -> MariaGtid {
        self.first
    }

    /// The last GTID of the range (included).
    pub fn last(&self) -> MariaGtid {
        self.last
    }

    /// Whether `gtid` is in the range.
    pub fn contains(&self, gtid: &MariaGtid) -> bool {
        gtid.domain == self.first.domain
            && gtid.server_id == self.first.server_id
            && self.first.seq <= gtid.seq
            && gtid.seq <= self.last.seq
    }

    /// Number of sequence numbers in the range.
    pub fn count(&self) -> u128 {
        u128::from(self.last.seq - self.first.seq) + 1
    }
}

impl fmt::Display for MariaGtidRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.first, self.last)
    }
}

impl FromStr for MariaGtidRange {
    type Err = GtidError;

    /// Parses `d-s-a..d-s-b`; a single GTID `d-s-a` is the range of one.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut cursor = Cursor::new(text, Input::MariaGtidRange);
        cursor.skip_space();
        let start = cursor.position;
        let first = MariaGtid::parse_at(&mut cursor)?;
        let mut last = first;
        if cursor.peek() == Some(b'.') {
            cursor.position += 1;
            expect_byte(&mut cursor, b'.', "`..`")?;
            last = MariaGtid::parse_at(&mut cursor)?;
        }
        expect_end(&mut cursor)?;
        MariaGtidRange::new(first, last).map_err(|error| error.shifted(start))
    }
}
