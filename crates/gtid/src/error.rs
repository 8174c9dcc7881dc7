//! The one error type of this crate.

/// What kind of text an error was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Input {
    /// A MySQL GTID set (`uuid:1-5,uuid:tag:7`).
    GtidSet,
    /// A single MySQL GTID (`uuid:7`, `uuid:tag:7`).
    Gtid,
    /// A server UUID.
    Uuid,
    /// A GTID tag.
    Tag,
    /// An interval passed to [`crate::GtidSet::insert_interval`].
    Interval,
    /// A MariaDB GTID (`0-1-100`).
    MariaGtid,
    /// A MariaDB GTID position (`0-1-100,1-2-5`).
    MariaGtidPosition,
    /// A MariaDB GTID range (`0-1-219..0-1-225`).
    MariaGtidRange,
}

impl std::fmt::Display for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Input::GtidSet => "gtid set",
            Input::Gtid => "gtid",
            Input::Uuid => "uuid",
            Input::Tag => "gtid tag",
            Input::Interval => "gtid interval",
            Input::MariaGtid => "mariadb gtid",
            Input::MariaGtidPosition => "mariadb gtid position",
            Input::MariaGtidRange => "mariadb gtid range",
        })
    }
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Not a UUID in the 8-4-4-4-12 hexadecimal form.
    #[error("expected a uuid (8-4-4-4-12 hexadecimal digits)")]
    ExpectedUuid,
    /// A digit was expected.
    #[error("expected a transaction number")]
    ExpectedNumber,
    /// A digit or a tag was expected after `:`.
    #[error("expected a transaction number or a tag")]
    ExpectedNumberOrTag,
    /// MySQL and MariaDB never use transaction number 0.
    #[error("transaction number 0 is not allowed")]
    ZeroNumber,
    /// A number with a leading zero, which MySQL would read as octal.
    #[error("number has a leading zero (mysql would read it as octal)")]
    LeadingZero,
    /// A number above the largest allowed value.
    #[error("number is larger than {max}")]
    NumberTooLarge {
        /// The largest allowed value.
        max: u64,
    },
    /// An interval whose end is below its start.
    #[error("interval end {end} is below its start {start}")]
    ReversedInterval {
        /// The interval's start.
        start: u64,
        /// The interval's end.
        end: u64,
    },
    /// A tag that does not match `[a-z_][a-z0-9_]{0,31}`.
    #[error("expected a tag of 1 to 32 characters [a-z_][a-z0-9_]*")]
    InvalidTag,
    /// A character that cannot appear here.
    #[error("unexpected character {found:?}, expected {expected}")]
    UnexpectedCharacter {
        /// The character found.
        found: char,
        /// What could appear instead.
        expected: &'static str,
    },
    /// The text ended too early.
    #[error("unexpected end of input, expected {expected}")]
    UnexpectedEnd {
        /// What should have followed.
        expected: &'static str,
    },
    /// A MariaDB position naming one domain twice.
    #[error("domain {domain} appears twice")]
    DuplicateDomain {
        /// The repeated domain.
        domain: u32,
    },
    /// A MariaDB range whose ends are in different domains or out of order.
    #[error("range ends must share domain and server and be in order")]
    InvalidRange,
}

/// A parse or validation error: which input, which byte, what went wrong.
///
/// The offset counts bytes from the start of the text given to the parser (for
/// [`crate::GtidSet::insert_interval`] it is 0).
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("invalid {input}: {kind} at byte {offset}")]
pub struct GtidError {
    input: Input,
    offset: usize,
    kind: ErrorKind,
}

impl GtidError {
    pub(crate) const fn new(input: Input, offset: usize, kind: ErrorKind) -> Self {
        GtidError { input, offset, kind }
    }

    /// The byte offset in the input where the problem was found.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// What kind of text was being read.
    pub fn input(&self) -> Input {
        self.input
    }

    pub(crate) fn with_input(mut self, input: Input) -> Self {
        self.input = input;
        self
    }

    pub(crate) fn shifted(mut self, by: usize) -> Self {
        self.offset += by;
        self
    }
}

/// The crate's error type under its conventional name.
pub type Error = GtidError;

/// `Result` with this crate's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
