//! Little-endian readers and writers for event bodies.
//!
//! Every read is bounds-checked and returns `None` past the end, so a decoder
//! turns a short body into an error instead of a panic.

/// A forward-only reader over one event body.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }

    pub(crate) fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(len)?;
        let out = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let slice = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(slice);
        Some(out)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|b| b[0])
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }

    /// An unsigned little-endian integer of `len` (at most 8) bytes.
    pub(crate) fn uint(&mut self, len: usize) -> Option<u64> {
        if len > 8 {
            return None;
        }
        let slice = self.take(len)?;
        let mut out = [0u8; 8];
        out[..len].copy_from_slice(slice);
        Some(u64::from_le_bytes(out))
    }

    /// MySQL's length-encoded integer (`net_field_length`): one byte below 251,
    /// else `0xfc` + 2, `0xfd` + 3 or `0xfe` + 8 bytes. `0xfb` (SQL NULL) and
    /// `0xff` are refused.
    pub(crate) fn packed(&mut self) -> Option<u64> {
        match self.u8()? {
            byte @ 0..=250 => Some(u64::from(byte)),
            0xfc => self.uint(2),
            0xfd => self.uint(3),
            0xfe => self.u64(),
            _ => None,
        }
    }

    /// The MySQL serialization library's variable-length unsigned integer:
    /// the count of trailing one bits of the first byte, plus one, is the
    /// total byte count; `0xff` is followed by the full 8-byte value.
    pub(crate) fn varlen(&mut self) -> Option<u64> {
        let first = *self.bytes.get(self.pos)?;
        let len = first.trailing_ones() as usize + 1;
        let bytes = self.take(len)?;
        if len == 9 {
            let mut out = [0u8; 8];
            out.copy_from_slice(&bytes[1..]);
            return Some(u64::from_le_bytes(out));
        }
        let mut out = [0u8; 8];
        out[..len].copy_from_slice(bytes);
        Some(u64::from_le_bytes(out) >> len)
    }

    /// The serialization library's zig-zag signed form.
    pub(crate) fn varlen_signed(&mut self) -> Option<i64> {
        let raw = self.varlen()?;
        let magnitude = (raw >> 1) as i64;
        Some(if raw & 1 == 1 { -magnitude - 1 } else { magnitude })
    }
}

pub(crate) fn put_u16(out: &mut Vec<u8>, value: u16) {
    out.extend_from_slice(&value.to_le_bytes());
}

pub(crate) fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

pub(crate) fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

pub(crate) fn put_uint(out: &mut Vec<u8>, value: u64, len: usize) {
    out.extend_from_slice(&value.to_le_bytes()[..len.min(8)]);
}

pub(crate) fn packed_len(value: u64) -> usize {
    match value {
        0..=250 => 1,
        251..=0xffff => 3,
        0x1_0000..=0xff_ffff => 4,
        _ => 9,
    }
}

pub(crate) fn put_packed(out: &mut Vec<u8>, value: u64) {
    match value {
        0..=250 => out.push(value as u8),
        251..=0xffff => {
            out.push(0xfc);
            put_uint(out, value, 2);
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            put_uint(out, value, 3);
        }
        _ => {
            out.push(0xfe);
            put_u64(out, value);
        }
    }
}

pub(crate) fn put_varlen(out: &mut Vec<u8>, value: u64) {
    let bits = 64 - value.leading_zeros() as usize;
    let len = ((bits * 575) >> 12) + 1;
    if len == 9 {
        out.push(0xff);
        put_u64(out, value);
        return;
    }
    let encoded = (value << len) | ((1u64 << (len - 1)) - 1);
    out.extend_from_slice(&encoded.to_le_bytes()[..len]);
}

pub(crate) fn put_varlen_signed(out: &mut Vec<u8>, value: i64) {
    let raw = if value >= 0 { (value as u64) << 1 } else { ((-(value + 1)) as u64) << 1 | 1 };
    put_varlen(out, raw);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varlen_matches_the_serialization_library_examples() {
        // libs/mysql/serialization/readme.md: 65535 is "00000111 11111111 11111011" (BE).
        let mut out = Vec::new();
        put_varlen(&mut out, 65535);
        assert_eq!(out, [0b1111_1011, 0xff, 0b0000_0111]);
        // Signed 65535 -> "00001111 11111111 11110011", -65535 -> "... 11101011".
        out.clear();
        put_varlen_signed(&mut out, 65535);
        assert_eq!(out, [0b1111_0011, 0xff, 0b0000_1111]);
        out.clear();
        put_varlen_signed(&mut out, -65535);
        assert_eq!(out, [0b1110_1011, 0xff, 0b0000_1111]);
        out.clear();
        put_varlen_signed(&mut out, -65536);
        assert_eq!(out, [0b1111_1011, 0xff, 0b0000_1111]);
    }

    #[test]
    fn varlen_and_packed_round_trip_at_every_width() {
        let mut values = vec![0u64, 1, 127, 128, 250, 251, 0xffff, 0x1_0000, 0xff_ffff, 1 << 24];
        for bits in 0..64 {
            values.push(1u64 << bits);
            values.push((1u64 << bits) - 1);
        }
        values.push(u64::MAX);
        for value in values {
            let mut out = Vec::new();
            put_varlen(&mut out, value);
            let mut reader = Reader::new(&out);
            assert_eq!(reader.varlen(), Some(value), "varlen {value}");
            assert_eq!(reader.remaining(), 0);

            out.clear();
            put_packed(&mut out, value);
            assert_eq!(out.len(), packed_len(value));
            let mut reader = Reader::new(&out);
            assert_eq!(reader.packed(), Some(value), "packed {value}");
        }
        for value in [0i64, 1, -1, i64::MAX, i64::MIN, 1 << 40, -(1 << 40)] {
            let mut out = Vec::new();
            put_varlen_signed(&mut out, value);
            assert_eq!(Reader::new(&out).varlen_signed(), Some(value));
        }
    }

    #[test]
    fn short_input_reads_none() {
        assert_eq!(Reader::new(&[0b0000_0011]).varlen(), None);
        assert_eq!(Reader::new(&[0xfc, 1]).packed(), None);
        assert_eq!(Reader::new(&[0xfb]).packed(), None);
        assert_eq!(Reader::new(&[1, 2, 3]).u32(), None);
    }
}
