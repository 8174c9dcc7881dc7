//! Server UUIDs, the source part of a MySQL GTID.

use std::fmt;
use std::str::FromStr;

use crate::error::{ErrorKind, GtidError, Input};

/// Length of the text form `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub(crate) const UUID_TEXT_LEN: usize = 36;

/// A server UUID (`server_uuid`), the source of MySQL GTIDs.
///
/// Ordered by its bytes, which is the order of its lowercase text and the
/// order in which MySQL prints the sources of a GTID set.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Uuid([u8; 16]);

const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";
/// Byte positions of the dashes in the text form.
const DASHES: [usize; 4] = [8, 13, 18, 23];
const INVALID: u8 = 0xff;

/// Hex digit value, or `INVALID`.
const HEX_VALUE: [u8; 256] = {
    let mut table = [INVALID; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

impl Uuid {
    /// The UUID with these bytes.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Uuid(bytes)
    }

    /// The UUID's bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Parses the 36 bytes at the start of `text`; the error offset is relative to `text`.
    pub(crate) fn parse_prefix(text: &[u8]) -> Result<Uuid, GtidError> {
        let error = |offset: usize| GtidError::new(Input::Uuid, offset, ErrorKind::ExpectedUuid);
        if text.len() < UUID_TEXT_LEN {
            // Point at the first byte that is wrong, or at the end.
            let bad = (0..text.len()).find(|&i| !uuid_byte_ok(i, text[i])).unwrap_or(text.len());
            return Err(error(bad));
        }
        let mut bytes = [0u8; 16];
        let mut out = 0;
        let mut i = 0;
        while i < UUID_TEXT_LEN {
            if DASHES.contains(&i) {
                if text[i] != b'-' {
                    return Err(error(i));
                }
                i += 1;
                continue;
            }
            let high = HEX_VALUE[text[i] as usize];
            if high == INVALID {
                return Err(error(i));
            }
            let low = HEX_VALUE[text[i + 1] as usize];
            if low == INVALID {
                return Err(error(i + 1));
            }
            bytes[out] = (high << 4) | low;
            out += 1;
            i += 2;
        }
        Ok(Uuid(bytes))
    }

    /// The lowercase 8-4-4-4-12 text form.
    pub(crate) fn encode(&self) -> [u8; UUID_TEXT_LEN] {
        let mut text = [b'-'; UUID_TEXT_LEN];
        let mut position = 0;
        for (index, byte) in self.0.iter().enumerate() {
            if matches!(index, 4 | 6 | 8 | 10) {
                position += 1;
            }
            text[position] = HEX_LOWER[usize::from(byte >> 4)];
            text[position + 1] = HEX_LOWER[usize::from(byte & 0xf)];
            position += 2;
        }
        text
    }
}

fn uuid_byte_ok(index: usize, byte: u8) -> bool {
    if DASHES.contains(&index) { byte == b'-' } else { HEX_VALUE[byte as usize] != INVALID }
}

impl FromStr for Uuid {
    type Err = GtidError;

    /// Parses `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, upper or lower case.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let uuid = Uuid::parse_prefix(text.as_bytes())?;
        if text.len() > UUID_TEXT_LEN {
            let found = text[UUID_TEXT_LEN..].chars().next().unwrap_or(' ');
            return Err(GtidError::new(
                Input::Uuid,
                UUID_TEXT_LEN,
                ErrorKind::UnexpectedCharacter { found, expected: "end of input" },
            ));
        }
        Ok(uuid)
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.encode();
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}
