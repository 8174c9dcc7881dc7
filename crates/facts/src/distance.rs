//! GTID distance between a site and the primary.

use bloodraven_gtid::GtidSet;

/// How far a site is from the primary, in transactions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GtidDistance {
    /// Transactions the primary has and the site lacks (what the site still has to apply).
    pub behind: u128,
    /// Transactions the site has and the primary lacks (errant or lost writes). Non-empty means
    /// the site cannot simply follow the primary.
    pub ahead: GtidSet,
}

impl GtidDistance {
    /// The site holds everything the primary holds and nothing else.
    pub fn is_caught_up(&self) -> bool {
        self.behind == 0 && self.ahead.is_empty()
    }

    /// The site's executed set is contained in the primary's.
    pub fn is_contained(&self) -> bool {
        self.ahead.is_empty()
    }
}

/// The distance from `site` to `primary`.
pub fn distance(primary: &GtidSet, site: &GtidSet) -> GtidDistance {
    GtidDistance { behind: primary.difference(site).count(), ahead: site.difference(primary) }
}
