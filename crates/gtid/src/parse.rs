//! The GTID-set text parser.
//!
//! Grammar (MySQL's, see the crate documentation):
//!
//! ```text
//! set      = ws { "," ws } [ source { "," ws { "," ws } [ source ] } ] EOF
//! source   = uuid ws { ":" ws ( interval | tag ) ws }
//! interval = number ws [ "-" ws number ]
//! ```

use std::str::FromStr;

use crate::error::{ErrorKind, GtidError, Input};
use crate::intervals;
use crate::set::{GtidSet, Interval, SourceIntervals, Tsid};
use crate::tag::{is_tag_continue, is_tag_start};
use crate::uuid::UUID_TEXT_LEN;
use crate::{Gtid, MAX_GNO, Tag, Uuid};

/// A run of up to 19 decimal digits cannot overflow a `u64`.
const MAX_EXACT_DIGITS: usize = 19;

/// MySQL's whitespace (`my_isspace` in latin1 for ASCII): space, `\t`, `\n`, `\v`, `\f`, `\r`.
#[inline]
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

pub(crate) struct Cursor<'a> {
    text: &'a [u8],
    pub(crate) position: usize,
    input: Input,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str, input: Input) -> Self {
        Cursor { text: text.as_bytes(), position: 0, input }
    }

    #[inline]
    pub(crate) fn peek(&self) -> Option<u8> {
        self.text.get(self.position).copied()
    }

    #[inline]
    pub(crate) fn skip_space(&mut self) {
        while let Some(&byte) = self.text.get(self.position) {
            if !is_space(byte) {
                break;
            }
            self.position += 1;
        }
    }

    pub(crate) fn error(&self, offset: usize, kind: ErrorKind) -> GtidError {
        GtidError::new(self.input, offset, kind)
    }

    /// An error for the byte at the cursor (or the end of the text).
    pub(crate) fn unexpected(&self, expected: &'static str) -> GtidError {
        let kind = match self.peek() {
            None => ErrorKind::UnexpectedEnd { expected },
            Some(_) => {
                let rest = self.rest_str();
                let found = rest.chars().next().unwrap_or(char::REPLACEMENT_CHARACTER);
                ErrorKind::UnexpectedCharacter { found, expected }
            }
        };
        self.error(self.position, kind)
    }

    fn rest_str(&self) -> &str {
        // Positions are always at ASCII bytes or at the first byte of a
        // character, because only ASCII bytes are ever consumed.
        std::str::from_utf8(&self.text[self.position..]).unwrap_or("")
    }

    pub(crate) fn is_at_end(&self) -> bool {
        self.position >= self.text.len()
    }

    pub(crate) fn uuid(&mut self) -> Result<Uuid, GtidError> {
        let uuid = Uuid::parse_prefix(&self.text[self.position..])
            .map_err(|error| error.with_input(self.input).shifted(self.position))?;
        self.position += UUID_TEXT_LEN;
        Ok(uuid)
    }

    pub(crate) fn tag(&mut self) -> Result<Tag, GtidError> {
        let (tag, length) = Tag::parse_prefix(&self.text[self.position..])
            .map_err(|error| error.with_input(self.input).shifted(self.position))?;
        self.position += length;
        Ok(tag)
    }

    /// Reads a run of decimal digits: the value (exact when there are at most
    /// 19 digits, because 10^19 - 1 < 2^64) and the number of digits.
    #[inline]
    fn digits(&mut self) -> (u64, usize) {
        let start = self.position;
        let mut value: u64 = 0;
        while let Some(&byte) = self.text.get(self.position) {
            let digit = byte.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
            self.position += 1;
        }
        (value, self.position - start)
    }

    /// An unsigned decimal number no larger than `max` (leading zeros allowed).
    pub(crate) fn number(&mut self, max: u64) -> Result<u64, GtidError> {
        let start = self.position;
        let (value, count) = self.digits();
        if count == 0 {
            return Err(self.unexpected("a transaction number"));
        }
        let too_large = || self.error(start, ErrorKind::NumberTooLarge { max });
        if count <= MAX_EXACT_DIGITS {
            return if value <= max { Ok(value) } else { Err(too_large()) };
        }
        // More than 19 digits: the wrapped value is meaningless, so read them
        // again with overflow checks (leading zeros are fine).
        let mut exact: u64 = 0;
        for &digit in &self.text[start..self.position] {
            exact = match exact.checked_mul(10).and_then(|v| v.checked_add(u64::from(digit - b'0')))
            {
                Some(exact) if exact <= max => exact,
                _ => return Err(too_large()),
            };
        }
        Ok(exact)
    }

    /// A transaction number in a MySQL text: decimal, at most `MAX_GNO`.
    ///
    /// MySQL reads numbers with `strtoll(.., 0)`, which takes `010` as octal
    /// and `0x10` as hexadecimal; such numbers are refused here rather than
    /// read differently from MySQL (`0x10` fails at the `x`).
    #[inline]
    pub(crate) fn mysql_number(&mut self) -> Result<u64, GtidError> {
        let start = self.position;
        let (value, count) = self.digits();
        match count {
            0 => Err(self.unexpected("a transaction number")),
            1..=MAX_EXACT_DIGITS if value <= MAX_GNO => {
                if count > 1 && self.text[start] == b'0' {
                    Err(self.error(start, ErrorKind::LeadingZero))
                } else {
                    Ok(value)
                }
            }
            _ if self.text[start] == b'0' => Err(self.error(start, ErrorKind::LeadingZero)),
            _ => Err(self.error(start, ErrorKind::NumberTooLarge { max: MAX_GNO })),
        }
    }

    /// A transaction number: 1 to `MAX_GNO`.
    pub(crate) fn gno(&mut self) -> Result<u64, GtidError> {
        let start = self.position;
        let gno = self.mysql_number()?;
        if gno == 0 {
            return Err(self.error(start, ErrorKind::ZeroNumber));
        }
        Ok(gno)
    }
}

/// Intervals of one source as read, before sorting and merging.
struct Pending {
    tsid: Tsid,
    intervals: Vec<Interval>,
    /// Whether `intervals` is still canonical (the usual case: MySQL's own text).
    canonical: bool,
}

impl Pending {
    #[inline]
    fn push(&mut self, interval: Interval) {
        match self.intervals.last_mut() {
            Some(last) if self.canonical && interval.start >= last.start => {
                if interval.start <= last.end + 1 {
                    last.end = last.end.max(interval.end);
                } else {
                    self.intervals.push(interval);
                }
            }
            None => self.intervals.push(interval),
            Some(_) => {
                self.canonical = false;
                self.intervals.push(interval);
            }
        }
    }
}

/// Index of the entry for `tsid`: the last one if it matches, else a new one.
/// (Repeated sources are merged at the end, so nothing is searched here.)
fn entry_for(entries: &mut Vec<Pending>, tsid: Tsid) -> usize {
    match entries.last() {
        Some(last) if last.tsid == tsid => entries.len() - 1,
        _ => {
            entries.push(Pending { tsid, intervals: Vec::new(), canonical: true });
            entries.len() - 1
        }
    }
}

/// Parses MySQL's GTID-set text.
///
/// Canonical text (sorted, merged) is read in one pass with no searching.
/// Anything else costs one sort: O(n log n) in intervals whatever the order.
pub(crate) fn parse_gtid_set(text: &str) -> Result<GtidSet, GtidError> {
    let mut cursor = Cursor::new(text, Input::GtidSet);
    let mut entries: Vec<Pending> = Vec::new();
    cursor.skip_space();
    loop {
        while cursor.peek() == Some(b',') {
            cursor.position += 1;
            cursor.skip_space();
        }
        if cursor.is_at_end() {
            break;
        }
        let uuid = cursor.uuid()?;
        cursor.skip_space();
        let mut current = entry_for(&mut entries, Tsid::untagged(uuid));
        while cursor.peek() == Some(b':') {
            cursor.position += 1;
            let item_start = cursor.position;
            cursor.skip_space();
            match cursor.peek() {
                // MySQL reads blank space followed by `:`, `,` or the end as an
                // empty tag, which switches back to the untagged source.
                None | Some(b':' | b',') if cursor.position > item_start => {
                    current = entry_for(&mut entries, Tsid::untagged(uuid));
                }
                Some(byte) if byte.is_ascii_digit() => {
                    let start = cursor.gno()?;
                    cursor.skip_space();
                    let mut end = start;
                    if cursor.peek() == Some(b'-') {
                        cursor.position += 1;
                        cursor.skip_space();
                        // MySQL reads the end with the same reader but accepts 0
                        // there; an end below the start makes an empty interval.
                        end = cursor.mysql_number()?;
                        cursor.skip_space();
                    }
                    if start <= end {
                        entries[current].push(Interval { start, end });
                    }
                }
                Some(byte) if is_tag_start(byte) => {
                    let tag_start = cursor.position;
                    let tag = cursor.tag()?;
                    if cursor.peek().is_some_and(is_tag_continue) {
                        return Err(cursor.error(tag_start, ErrorKind::InvalidTag));
                    }
                    cursor.skip_space();
                    current = entry_for(&mut entries, Tsid { uuid, tag: Some(tag) });
                }
                _ => return Err(cursor.unexpected("a transaction number or a tag")),
            }
        }
        match cursor.peek() {
            None | Some(b',') => {}
            Some(_) => return Err(cursor.unexpected("`:`, `,` or end of input")),
        }
    }
    Ok(finish(entries))
}

/// Sorts the entries by source, joins repeated sources and merges intervals.
fn finish(mut entries: Vec<Pending>) -> GtidSet {
    if !entries.windows(2).all(|pair| pair[0].tsid < pair[1].tsid) {
        entries.sort_by_key(|entry| entry.tsid);
    }
    let mut joined: Vec<Pending> = Vec::with_capacity(entries.len());
    for entry in entries {
        if entry.intervals.is_empty() {
            continue;
        }
        match joined.last_mut() {
            Some(last) if last.tsid == entry.tsid => {
                last.intervals.extend(entry.intervals);
                last.canonical = false;
            }
            _ => joined.push(entry),
        }
    }
    let sources = joined
        .into_iter()
        .map(|mut entry| {
            if !entry.canonical {
                intervals::canonicalize(&mut entry.intervals);
            }
            SourceIntervals { tsid: entry.tsid, intervals: entry.intervals }
        })
        .collect();
    GtidSet { sources }
}

impl FromStr for GtidSet {
    type Err = GtidError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_gtid_set(text)
    }
}

/// Parses `uuid:gno` or `uuid:tag:gno` with optional surrounding whitespace.
pub(crate) fn parse_gtid(text: &str) -> Result<Gtid, GtidError> {
    let mut cursor = Cursor::new(text, Input::Gtid);
    cursor.skip_space();
    let uuid = cursor.uuid()?;
    let expect_colon = |cursor: &mut Cursor<'_>| {
        cursor.skip_space();
        if cursor.peek() != Some(b':') {
            return Err(cursor.unexpected("`:`"));
        }
        cursor.position += 1;
        cursor.skip_space();
        Ok(())
    };
    expect_colon(&mut cursor)?;
    let mut tag = None;
    if cursor.peek().is_some_and(is_tag_start) {
        let tag_start = cursor.position;
        tag = Some(cursor.tag()?);
        if cursor.peek().is_some_and(is_tag_continue) {
            return Err(cursor.error(tag_start, ErrorKind::InvalidTag));
        }
        expect_colon(&mut cursor)?;
    }
    let gno = cursor.gno()?;
    cursor.skip_space();
    if !cursor.is_at_end() {
        return Err(cursor.unexpected("end of input"));
    }
    Ok(Gtid { uuid, tag, gno })
}
