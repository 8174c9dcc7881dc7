//! What was seen of each site at one poll: plain values, with the time they were seen.

use bloodraven_gtid::GtidSet;
use jiff::Timestamp;

/// Why a site could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unreachable {
    /// The connection was refused or reset: nothing listens (a crashed server, a fast partition).
    Refused,
    /// No answer within the poll's bound: a hung server or a partition that drops packets.
    Timeout,
    /// Connected, but the server answered with an error (authentication, privileges, a query
    /// that failed). Not proof that the server is down: it may still take writes.
    Error,
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Refused => "connection refused or reset",
            Self::Timeout => "no answer within the poll's bound",
            Self::Error => "the server answered with an error",
        })
    }
}

/// A follower's replication channel as `SHOW REPLICA STATUS` reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicaObservation {
    /// `Source_Host`.
    pub source_host: String,
    /// `Source_Port`.
    pub source_port: u16,
    /// `Replica_IO_Running` is `Yes`.
    pub io_running: bool,
    /// `Replica_IO_Running` is `Connecting`: the receiver is started and retries its source
    /// (it receives the moment the source answers).
    pub io_connecting: bool,
    /// `Replica_SQL_Running` is `Yes`.
    pub sql_running: bool,
    /// `Seconds_Behind_Source`; `None` when the server reports NULL.
    pub seconds_behind_source: Option<i64>,
    /// `Auto_Position` is 1.
    pub auto_position: bool,
    /// `Last_IO_Error`, empty when none.
    pub last_io_error: String,
    /// `Last_SQL_Error`, empty when none.
    pub last_sql_error: String,
    /// `Retrieved_Gtid_Set`: every transaction the receiver wrote to the relay log, applied or
    /// not. What it holds beyond the executed set is received but not yet applied: a promotion
    /// applies it first, so emergency selection ranks by executed ∪ retrieved.
    pub retrieved_gtid_set: GtidSet,
}

/// The server's own flags and sets, read in one round trip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerReading {
    /// `@@global.read_only`.
    pub read_only: bool,
    /// `@@global.super_read_only`.
    pub super_read_only: bool,
    /// `@@global.offline_mode`.
    pub offline_mode: bool,
    /// `@@global.gtid_executed`.
    pub gtid_executed: GtidSet,
    /// The replication channel, when the site has replication metadata.
    pub replica: Option<ReplicaObservation>,
}

/// One site at one poll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteObservation {
    /// The site's name (`spec.sites[].name`).
    pub site: String,
    /// When the reading was taken (or given up on).
    pub observed_at: Timestamp,
    /// What the server said, or why it said nothing.
    pub reading: Result<ServerReading, Unreachable>,
}

impl SiteObservation {
    /// The reading, when the site answered.
    pub fn server(&self) -> Option<&ServerReading> {
        self.reading.as_ref().ok()
    }

    /// The site's executed set, when it answered.
    pub fn gtid_executed(&self) -> Option<&GtidSet> {
        self.server().map(|reading| &reading.gtid_executed)
    }
}

/// Every site of a group at one poll.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupObservation {
    /// One entry per site that was polled, in any order.
    pub sites: Vec<SiteObservation>,
}

impl GroupObservation {
    /// The observation of a site.
    pub fn site(&self, name: &str) -> Option<&SiteObservation> {
        self.sites.iter().find(|site| site.site == name)
    }
}
