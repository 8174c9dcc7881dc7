//! Single MySQL GTIDs.

use std::fmt;
use std::str::FromStr;

use crate::error::GtidError;
use crate::{Tag, Uuid};

/// One MySQL transaction identifier: `uuid:gno` or, tagged, `uuid:tag:gno`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gtid {
    /// The source server's UUID.
    pub uuid: Uuid,
    /// The tag (MySQL 8.3 and later), if any.
    pub tag: Option<Tag>,
    /// The transaction number, 1 to [`crate::MAX_GNO`] (2^63-2).
    pub gno: u64,
}

impl Gtid {
    /// An untagged GTID.
    pub const fn new(uuid: Uuid, gno: u64) -> Gtid {
        Gtid { uuid, tag: None, gno }
    }

    /// A tagged GTID.
    pub const fn tagged(uuid: Uuid, tag: Tag, gno: u64) -> Gtid {
        Gtid { uuid, tag: Some(tag), gno }
    }
}

impl fmt::Display for Gtid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tag {
            None => write!(f, "{}:{}", self.uuid, self.gno),
            Some(tag) => write!(f, "{}:{tag}:{}", self.uuid, self.gno),
        }
    }
}

impl FromStr for Gtid {
    type Err = GtidError;

    /// Parses `uuid:gno` or `uuid:tag:gno` (surrounding whitespace allowed).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        crate::parse::parse_gtid(text)
    }
}
