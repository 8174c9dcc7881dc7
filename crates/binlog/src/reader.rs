//! Framing: magic number, event boundaries, checksums, and the format description.
//!
//! [`EventReader`] walks a complete in-memory byte slice and yields borrowed
//! [`Event`]s; the [`Scanner`](crate::Scanner) uses the same [`Framer`] over bytes
//! fed in chunks.

use crate::EventType;
use crate::error::{Error, ErrorKind};
use crate::event::{
    CHECKSUM_LEN, ChecksumAlgorithm, Event, EventBody, EventHeader, FormatDescription, HEADER_LEN,
    MAGIC, decode_body, decode_format_description, event_crc32,
};

/// Result of trying to frame the next event.
pub(crate) enum Framed<'a> {
    /// More bytes are needed: `needed` counts from the event start.
    Incomplete { needed: u64 },
    /// One whole event of `len` bytes.
    Event { event: Event<'a>, len: usize },
}

/// Per-file framing state: whether the magic was seen, and the checksum setting.
#[derive(Debug, Clone, Default)]
pub(crate) struct Framer {
    magic_seen: bool,
    format: Option<FormatDescription>,
}

impl Framer {
    pub(crate) fn format(&self) -> Option<&FormatDescription> {
        self.format.as_ref()
    }

    pub(crate) fn checksum(&self) -> bool {
        matches!(self.format.as_ref().map(|f| f.checksum), Some(ChecksumAlgorithm::Crc32))
    }

    /// Consumes the magic number at the start of `bytes`: `Ok(Some(4))`, `Ok(None)`
    /// when fewer than 4 bytes are available, or an error for a wrong magic.
    pub(crate) fn magic(&mut self, bytes: &[u8]) -> Result<Option<usize>, Error> {
        if self.magic_seen {
            return Ok(Some(0));
        }
        // Decided only on all four bytes, so chunked and whole input agree.
        let Some(found) = bytes.get(..MAGIC.len()) else {
            return Ok(None);
        };
        if found != MAGIC {
            return Err(Error::new(0, None, ErrorKind::BadMagic { found: found.to_vec() }));
        }
        self.magic_seen = true;
        Ok(Some(MAGIC.len()))
    }

    /// The problem with a file shorter than the magic number: a wrong prefix, or truncation.
    pub(crate) fn short_file(bytes: &[u8]) -> Error {
        let kind = if MAGIC.starts_with(bytes) {
            ErrorKind::Truncated { needed: MAGIC.len() as u64, available: bytes.len() as u64 }
        } else {
            ErrorKind::BadMagic { found: bytes.to_vec() }
        };
        Error::new(0, None, kind)
    }

    /// Frames, checks and decodes the event at the start of `bytes`, which sits
    /// at file offset `offset`.
    pub(crate) fn next<'a>(&mut self, bytes: &'a [u8], offset: u64) -> Result<Framed<'a>, Error> {
        let Some(header) = EventHeader::decode(bytes) else {
            return Ok(Framed::Incomplete { needed: HEADER_LEN as u64 });
        };
        let event_type = header.event_type;
        let fail = |kind| Error::new(offset, Some(event_type), kind);
        let size = header.event_size as usize;
        let first = self.format.is_none();
        let trailer = if first || self.checksum() { CHECKSUM_LEN } else { 0 };
        // A format description always carries a checksum field (possibly unused).
        let minimum = HEADER_LEN + trailer;
        if size < minimum {
            return Err(fail(ErrorKind::EventTooSmall {
                size: header.event_size,
                minimum: minimum as u32,
            }));
        }
        let Some(raw) = bytes.get(..size) else {
            return Ok(Framed::Incomplete { needed: u64::from(header.event_size) });
        };
        if first {
            if event_type != EventType::FORMAT_DESCRIPTION {
                return Err(fail(ErrorKind::MissingFormatDescription));
            }
            let format = decode_format_description(&raw[HEADER_LEN..]).map_err(fail)?;
            if usize::from(format.header_length) != HEADER_LEN {
                return Err(fail(ErrorKind::UnsupportedHeaderLength(format.header_length)));
            }
            if format.checksum == ChecksumAlgorithm::Crc32 {
                verify(raw).map_err(fail)?;
            }
            self.format = Some(format.clone());
            let event = Event { header, body: EventBody::FormatDescription(format) };
            return Ok(Framed::Event { event, len: size });
        }
        let body_end = if self.checksum() {
            verify(raw).map_err(fail)?;
            size - CHECKSUM_LEN
        } else {
            size
        };
        let body = if event_type == EventType::FORMAT_DESCRIPTION {
            // A later format description (relay logs) keeps the file's checksum setting.
            EventBody::FormatDescription(
                decode_format_description(&raw[HEADER_LEN..]).map_err(fail)?,
            )
        } else {
            decode_body(event_type, &raw[HEADER_LEN..body_end]).map_err(fail)?
        };
        Ok(Framed::Event { event: Event { header, body }, len: size })
    }
}

/// Checks the CRC32 in the last four bytes of `raw` against the rest (see [`event_crc32`]).
fn verify(raw: &[u8]) -> Result<(), ErrorKind> {
    let split = raw.len() - CHECKSUM_LEN;
    let mut stored = [0u8; 4];
    stored.copy_from_slice(&raw[split..]);
    let stored = u32::from_le_bytes(stored);
    let computed = event_crc32(&raw[..split]);
    if stored == computed { Ok(()) } else { Err(ErrorKind::ChecksumMismatch { stored, computed }) }
}

/// A problem with an event inside a transaction payload (offsets are the caller's).
#[derive(Debug)]
pub(crate) struct InnerError {
    pub(crate) event_type: Option<EventType>,
    pub(crate) kind: ErrorKind,
}

/// Decodes the next event of a run without checksums (the inside of a transaction
/// payload): `Ok(None)` at the end of `bytes`.
pub(crate) fn next_plain(bytes: &[u8]) -> Result<Option<(Event<'_>, usize)>, InnerError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let available = bytes.len() as u64;
    let Some(header) = EventHeader::decode(bytes) else {
        let kind = ErrorKind::Truncated { needed: HEADER_LEN as u64, available };
        return Err(InnerError { event_type: None, kind });
    };
    let event_type = Some(header.event_type);
    let size = header.event_size as usize;
    if size < HEADER_LEN {
        let kind = ErrorKind::EventTooSmall { size: header.event_size, minimum: HEADER_LEN as u32 };
        return Err(InnerError { event_type, kind });
    }
    let Some(raw) = bytes.get(..size) else {
        let kind = ErrorKind::Truncated { needed: u64::from(header.event_size), available };
        return Err(InnerError { event_type, kind });
    };
    let body = decode_body(header.event_type, &raw[HEADER_LEN..])
        .map_err(|kind| InnerError { event_type, kind })?;
    Ok(Some((Event { header, body }, size)))
}

/// Iterates the events of a complete binlog held in memory.
///
/// Yields each event with its file offset; after the first error (a bad magic,
/// a checksum mismatch, a malformed or truncated event) it yields that error
/// once and then ends.
#[derive(Debug, Clone)]
pub struct EventReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    framer: Framer,
    done: bool,
}

impl<'a> EventReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        EventReader { bytes, pos: 0, framer: Framer::default(), done: false }
    }

    /// Offset just past the last event yielded.
    pub fn position(&self) -> u64 {
        self.pos as u64
    }

    /// The file's format description, once read.
    pub fn format(&self) -> Option<&FormatDescription> {
        self.framer.format()
    }
}

impl<'a> Iterator for EventReader<'a> {
    type Item = Result<(u64, Event<'a>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let bytes = self.bytes;
        if self.pos == 0 {
            match self.framer.magic(bytes) {
                Ok(Some(len)) => self.pos = len,
                Ok(None) => {
                    self.done = true;
                    return Some(Err(Framer::short_file(bytes)));
                }
                Err(err) => {
                    self.done = true;
                    return Some(Err(err));
                }
            }
        }
        if self.pos == bytes.len() {
            self.done = true;
            return None;
        }
        let offset = self.pos as u64;
        match self.framer.next(&bytes[self.pos..], offset) {
            Ok(Framed::Event { event, len }) => {
                self.pos += len;
                Some(Ok((offset, event)))
            }
            Ok(Framed::Incomplete { needed }) => {
                self.done = true;
                let available = (bytes.len() - self.pos) as u64;
                let event_type = bytes.get(self.pos + 4).map(|&code| EventType(code));
                let event_type = if available >= HEADER_LEN as u64 { event_type } else { None };
                Some(Err(Error::new(
                    offset,
                    event_type,
                    ErrorKind::Truncated { needed, available },
                )))
            }
            Err(err) => {
                self.done = true;
                Some(Err(err))
            }
        }
    }
}
