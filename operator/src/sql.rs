//! The SQL the topology manager sends, built as plain strings (pure, unit tested).
//!
//! Values that reach a statement (host, user, password) are quoted as MySQL string literals:
//! backslashes and quotes escaped, so a password with a quote cannot end the literal.

/// The observation query: flags and the executed set in one round trip.
pub const READ_FLAGS: &str = "SELECT @@global.read_only, @@global.super_read_only, \
     @@global.offline_mode, @@global.gtid_executed";

/// The replication channel.
pub const SHOW_REPLICA_STATUS: &str = "SHOW REPLICA STATUS";

/// A poll's whole reading of a site in one round trip: [`READ_FLAGS`], then
/// [`SHOW_REPLICA_STATUS`] (two result sets; mysql_async asks for multi-statements).
pub const READ_SITE: &str = "SELECT @@global.read_only, @@global.super_read_only, \
     @@global.offline_mode, @@global.gtid_executed; SHOW REPLICA STATUS";

/// Fence: the server refuses every write, also from privileged accounts.
pub const FENCE: &str = "SET GLOBAL super_read_only = ON";

/// Stop both replication threads (metadata kept).
pub const STOP_REPLICA: &str = "STOP REPLICA";

/// Stop the applier (SQL) thread only: it does not wait on the source, so it stops within the
/// current transaction.
pub const STOP_REPLICA_SQL_THREAD: &str = "STOP REPLICA SQL_THREAD";

/// Stop the receiver (I/O) thread: on a frozen source it can wait until `replica_net_timeout`.
pub const STOP_REPLICA_IO_THREAD: &str = "STOP REPLICA IO_THREAD";

/// Start the applier (SQL) thread alone: a promotion applies what the receiver already wrote
/// to the relay log, also on a candidate whose applier someone stopped.
pub const START_REPLICA_SQL_THREAD: &str = "START REPLICA SQL_THREAD";

/// What the default channel's receiver wrote to the relay log, the transaction it was in the
/// middle of (empty when none), and whether the applier runs; no row without a channel.
/// performance_schema columns present since MySQL 8.0.2.
pub const READ_RECEIVED: &str = "SELECT c.RECEIVED_TRANSACTION_SET, c.QUEUEING_TRANSACTION, \
     a.SERVICE_STATE FROM performance_schema.replication_connection_status AS c \
     JOIN performance_schema.replication_applier_status AS a ON a.CHANNEL_NAME = c.CHANNEL_NAME \
     WHERE c.CHANNEL_NAME = ''";

/// `SELECT WAIT_FOR_EXECUTED_GTID_SET(<set>, <seconds>)`: 0 once the server executed `set`, 1
/// when `seconds` (whole seconds, at least 1: the function's fractional form is not relied on)
/// elapsed first.
pub fn wait_for_executed(set: &bloodraven_gtid::GtidSet, bound: std::time::Duration) -> String {
    let seconds = bound.as_secs() + u64::from(bound.subsec_nanos() > 0);
    format!("SELECT WAIT_FOR_EXECUTED_GTID_SET({}, {})", quote(&set.to_string()), seconds.max(1))
}

/// `KILL <id>`: ends a session (its socket is shut at once) from another connection.
pub fn kill(connection_id: u32) -> String {
    format!("KILL {connection_id}")
}

/// Start both replication threads.
pub const START_REPLICA: &str = "START REPLICA";

/// Remove the replication channel and its metadata: the planned failover's promotion ("`STOP
/// REPLICA`, `RESET REPLICA ALL`"); the topology manager never resets.
pub const RESET_REPLICA_ALL: &str = "RESET REPLICA ALL";

/// Promote: writable. `super_read_only=OFF` first (it implies `read_only`), then `read_only`.
pub const UNFENCE: [&str; 2] = ["SET GLOBAL super_read_only = OFF", "SET GLOBAL read_only = OFF"];

/// The executed set alone (the containment re-check after `STOP REPLICA`).
pub const READ_GTID_EXECUTED: &str = "SELECT @@global.gtid_executed";

/// A MySQL single-quoted string literal of `value`.
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for character in value.chars() {
        match character {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            other => out.push(other),
        }
    }
    out.push('\'');
    out
}

/// Where a follower replicates from, and as whom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceTarget<'a> {
    /// `SOURCE_HOST`: the primary's internal Service as resolved for this follower.
    pub host: &'a str,
    /// `SOURCE_PORT`.
    pub port: u16,
    /// `SOURCE_USER`.
    pub user: &'a str,
    /// `SOURCE_PASSWORD`.
    pub password: &'a str,
}

/// `CHANGE REPLICATION SOURCE TO …` with GTID auto-positioning and the RSA key fetch that
/// `caching_sha2_password` needs over plain TCP (what `bloodraven-sites` chose). Replication
/// metadata is never reset; `CONNECT_RETRY` and `HEARTBEAT_PERIOD` are short so a follower
/// notices a dead source within the detection bound.
pub fn change_source(target: &SourceTarget<'_>) -> String {
    format!(
        "CHANGE REPLICATION SOURCE TO SOURCE_HOST = {}, SOURCE_PORT = {}, SOURCE_USER = {}, \
         SOURCE_PASSWORD = {}, SOURCE_AUTO_POSITION = 1, GET_SOURCE_PUBLIC_KEY = 1, \
         SOURCE_CONNECT_RETRY = 1, SOURCE_HEARTBEAT_PERIOD = 1",
        quote(target.host),
        target.port,
        quote(target.user),
        quote(target.password),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_round_trip_reading_is_the_two_statements() {
        assert_eq!(READ_SITE, format!("{READ_FLAGS}; {SHOW_REPLICA_STATUS}"));
    }

    #[test]
    fn the_catch_up_wait_quotes_the_set_and_rounds_its_bound_up() {
        let set: bloodraven_gtid::GtidSet =
            "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5".parse().unwrap();
        assert_eq!(
            wait_for_executed(&set, std::time::Duration::from_millis(2500)),
            "SELECT WAIT_FOR_EXECUTED_GTID_SET('3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5', 3)"
        );
        assert!(wait_for_executed(&set, std::time::Duration::ZERO).ends_with(", 1)"));
        assert!(wait_for_executed(&set, std::time::Duration::from_secs(30)).ends_with(", 30)"));
    }

    #[test]
    fn kill_names_the_session() {
        assert_eq!(kill(42), "KILL 42");
    }

    #[test]
    fn quote_escapes_what_would_end_the_literal() {
        assert_eq!(quote("plain"), "'plain'");
        assert_eq!(quote("it's"), "'it\\'s'");
        assert_eq!(quote("a\\'b"), "'a\\\\\\'b'");
        assert_eq!(quote("x\ny"), "'x\\ny'");
    }

    #[test]
    fn change_source_uses_auto_position_and_quotes_every_value() {
        let sql = change_source(&SourceTarget {
            host: "127.0.0.1",
            port: 40123,
            user: "bloodraven_repl",
            password: "pw'; DROP",
        });
        assert_eq!(
            sql,
            "CHANGE REPLICATION SOURCE TO SOURCE_HOST = '127.0.0.1', SOURCE_PORT = 40123, \
             SOURCE_USER = 'bloodraven_repl', SOURCE_PASSWORD = 'pw\\'; DROP', \
             SOURCE_AUTO_POSITION = 1, GET_SOURCE_PUBLIC_KEY = 1, SOURCE_CONNECT_RETRY = 1, \
             SOURCE_HEARTBEAT_PERIOD = 1"
        );
        assert!(!sql.contains("RESET"), "metadata is never reset");
    }
}
