//! GTID tags (MySQL 8.3 and later).

use std::fmt;
use std::str::FromStr;

use crate::error::{ErrorKind, GtidError, Input};

/// The longest tag MySQL accepts.
pub const TAG_MAX_LEN: usize = 32;

/// A GTID tag: 1 to 32 characters `[a-z_][a-z0-9_]*`, normalized to lower case.
///
/// MySQL compares tags case-insensitively and stores them in lower case, so
/// `Tag::new("Alpha")` equals `Tag::new("alpha")`. Tags are ordered by their
/// (lowercase) bytes, as MySQL orders them when printing a GTID set.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag {
    len: u8,
    /// Lowercase ASCII; bytes past `len` are zero.
    bytes: [u8; TAG_MAX_LEN],
}

impl Tag {
    /// Validates and normalizes `text`.
    pub fn new(text: &str) -> Result<Tag, GtidError> {
        let (tag, consumed) = Tag::parse_prefix(text.as_bytes())?;
        if consumed != text.len() {
            let found = text[consumed..].chars().next().unwrap_or(' ');
            let kind = if consumed == TAG_MAX_LEN && is_tag_continue(text.as_bytes()[consumed]) {
                ErrorKind::InvalidTag
            } else {
                ErrorKind::UnexpectedCharacter { found, expected: "end of input" }
            };
            return Err(GtidError::new(Input::Tag, consumed, kind));
        }
        Ok(tag)
    }

    /// The normalized (lowercase) tag.
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever stored, so this never fails.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }

    /// Reads a tag at the start of `text`, returning it and its length in bytes.
    /// Stops at the first byte that cannot continue a tag; fails on a tag longer
    /// than 32 bytes or one that does not start with a letter or `_`.
    pub(crate) fn parse_prefix(text: &[u8]) -> Result<(Tag, usize), GtidError> {
        let invalid = |offset| GtidError::new(Input::Tag, offset, ErrorKind::InvalidTag);
        match text.first() {
            Some(&first) if is_tag_start(first) => {}
            _ => return Err(invalid(0)),
        }
        let mut bytes = [0u8; TAG_MAX_LEN];
        let mut len = 0;
        while len < text.len() && is_tag_continue(text[len]) {
            if len == TAG_MAX_LEN {
                return Err(invalid(0));
            }
            bytes[len] = text[len].to_ascii_lowercase();
            len += 1;
        }
        // `len` is at most 32 here.
        Ok((Tag { len: len as u8, bytes }, len))
    }
}

pub(crate) fn is_tag_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_'
}

pub(crate) fn is_tag_continue(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

impl PartialOrd for Tag {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Tag {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl FromStr for Tag {
    type Err = GtidError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Tag::new(text)
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tag({:?})", self.as_str())
    }
}
