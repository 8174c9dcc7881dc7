//! Follower convergence: whether a follower replicates directly from the active primary, and
//! whether it may be repointed there (topology document, "Replication topology").

use bloodraven_gtid::GtidSet;

use crate::observe::ReplicaObservation;

/// Why a follower must be repointed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepointReason {
    /// It has no replication channel.
    NoChannel,
    /// Its channel points at another address: a chain through another replica, or a stale
    /// source after a failover.
    WrongSource {
        /// `Source_Host`.
        host: String,
        /// `Source_Port`.
        port: u16,
    },
    /// Its channel points at the primary without GTID auto-positioning.
    NoAutoPosition,
    /// Its channel points at the primary but a thread is stopped.
    Stopped {
        /// `Replica_IO_Running`.
        io_running: bool,
        /// `Replica_SQL_Running`.
        sql_running: bool,
    },
}

impl std::fmt::Display for RepointReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoChannel => f.write_str("it had no replication channel"),
            Self::WrongSource { host, port } => {
                write!(f, "it replicated from {host}:{port}, not the primary")
            }
            Self::NoAutoPosition => f.write_str("its channel lacked GTID auto-positioning"),
            Self::Stopped { io_running, sql_running } => {
                let stopped = match (io_running, sql_running) {
                    (false, false) => "both replication threads were",
                    (false, true) => "the IO thread was",
                    (true, false) => "the SQL thread was",
                    (true, true) => "no thread was",
                };
                write!(f, "{stopped} stopped")
            }
        }
    }
}

/// The follower's convergence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Convergence {
    /// Replicating from the primary with both threads running.
    Converged,
    /// Contained in the primary and safe to repoint (`CHANGE REPLICATION SOURCE TO … ,
    /// SOURCE_AUTO_POSITION=1` and `START REPLICA`, without resetting metadata). The operator
    /// repeats the containment check after `STOP REPLICA` to close the applier race.
    Repoint(RepointReason),
    /// The follower holds transactions the primary lacks: `sourceConvergenceState: Blocked`,
    /// reason `GTIDDiverged`. Its transactions are kept; a human decides.
    Diverged {
        /// The follower's executed set minus the primary's.
        divergent: GtidSet,
    },
}

/// Where the primary is, as followers must name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceAddress<'a> {
    /// The host followers use for the primary.
    pub host: &'a str,
    /// Its port.
    pub port: u16,
}

/// Decides a follower's convergence from the primary's and the follower's executed sets and
/// the follower's channel. Divergence is checked first: a diverged follower is never repointed,
/// whatever its channel says.
pub fn convergence(
    primary_gtid: &GtidSet,
    primary: SourceAddress<'_>,
    follower_gtid: &GtidSet,
    channel: Option<&ReplicaObservation>,
) -> Convergence {
    let divergent = follower_gtid.difference(primary_gtid);
    if !divergent.is_empty() {
        return Convergence::Diverged { divergent };
    }
    let Some(channel) = channel else {
        return Convergence::Repoint(RepointReason::NoChannel);
    };
    if !channel.source_host.eq_ignore_ascii_case(primary.host)
        || channel.source_port != primary.port
    {
        return Convergence::Repoint(RepointReason::WrongSource {
            host: channel.source_host.clone(),
            port: channel.source_port,
        });
    }
    if !channel.auto_position {
        return Convergence::Repoint(RepointReason::NoAutoPosition);
    }
    if !channel.io_running || !channel.sql_running {
        return Convergence::Repoint(RepointReason::Stopped {
            io_running: channel.io_running,
            sql_running: channel.sql_running,
        });
    }
    Convergence::Converged
}
