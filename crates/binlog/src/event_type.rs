//! Event type codes (MySQL `Log_event_type`, MariaDB's additions from 160).

use std::fmt;

/// An event type code as it appears in byte 4 of the event header.
///
/// Unknown codes are representable: the parser skips such events by length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventType(pub u8);

macro_rules! event_types {
    ($($name:ident = $code:expr, $text:expr;)*) => {
        impl EventType {
            $(pub const $name: EventType = EventType($code);)*

            /// The type's MySQL/MariaDB name without the `_EVENT` suffix, or `None`
            /// for a code neither server defines.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($code => Some($text),)*
                    _ => None,
                }
            }
        }
    };
}

event_types! {
    START_V3 = 1, "START_V3";
    QUERY = 2, "QUERY";
    STOP = 3, "STOP";
    ROTATE = 4, "ROTATE";
    INTVAR = 5, "INTVAR";
    SLAVE = 7, "SLAVE";
    APPEND_BLOCK = 9, "APPEND_BLOCK";
    DELETE_FILE = 11, "DELETE_FILE";
    RAND = 13, "RAND";
    USER_VAR = 14, "USER_VAR";
    FORMAT_DESCRIPTION = 15, "FORMAT_DESCRIPTION";
    XID = 16, "XID";
    BEGIN_LOAD_QUERY = 17, "BEGIN_LOAD_QUERY";
    EXECUTE_LOAD_QUERY = 18, "EXECUTE_LOAD_QUERY";
    TABLE_MAP = 19, "TABLE_MAP";
    WRITE_ROWS_V1 = 23, "WRITE_ROWS_V1";
    UPDATE_ROWS_V1 = 24, "UPDATE_ROWS_V1";
    DELETE_ROWS_V1 = 25, "DELETE_ROWS_V1";
    INCIDENT = 26, "INCIDENT";
    HEARTBEAT = 27, "HEARTBEAT";
    IGNORABLE = 28, "IGNORABLE";
    ROWS_QUERY = 29, "ROWS_QUERY";
    WRITE_ROWS = 30, "WRITE_ROWS";
    UPDATE_ROWS = 31, "UPDATE_ROWS";
    DELETE_ROWS = 32, "DELETE_ROWS";
    GTID = 33, "GTID";
    ANONYMOUS_GTID = 34, "ANONYMOUS_GTID";
    PREVIOUS_GTIDS = 35, "PREVIOUS_GTIDS";
    TRANSACTION_CONTEXT = 36, "TRANSACTION_CONTEXT";
    VIEW_CHANGE = 37, "VIEW_CHANGE";
    XA_PREPARE = 38, "XA_PREPARE";
    PARTIAL_UPDATE_ROWS = 39, "PARTIAL_UPDATE_ROWS";
    TRANSACTION_PAYLOAD = 40, "TRANSACTION_PAYLOAD";
    HEARTBEAT_V2 = 41, "HEARTBEAT_V2";
    GTID_TAGGED = 42, "GTID_TAGGED";
    MARIADB_ANNOTATE_ROWS = 160, "ANNOTATE_ROWS";
    MARIADB_BINLOG_CHECKPOINT = 161, "BINLOG_CHECKPOINT";
    MARIADB_GTID = 162, "MARIADB_GTID";
    MARIADB_GTID_LIST = 163, "GTID_LIST";
    MARIADB_START_ENCRYPTION = 164, "START_ENCRYPTION";
    MARIADB_QUERY_COMPRESSED = 165, "QUERY_COMPRESSED";
    MARIADB_WRITE_ROWS_COMPRESSED_V1 = 166, "WRITE_ROWS_COMPRESSED_V1";
    MARIADB_UPDATE_ROWS_COMPRESSED_V1 = 167, "UPDATE_ROWS_COMPRESSED_V1";
    MARIADB_DELETE_ROWS_COMPRESSED_V1 = 168, "DELETE_ROWS_COMPRESSED_V1";
    MARIADB_WRITE_ROWS_COMPRESSED = 169, "WRITE_ROWS_COMPRESSED";
    MARIADB_UPDATE_ROWS_COMPRESSED = 170, "UPDATE_ROWS_COMPRESSED";
    MARIADB_DELETE_ROWS_COMPRESSED = 171, "DELETE_ROWS_COMPRESSED";
}

impl EventType {
    /// A row event (v1, v2, partial update, or MariaDB's compressed rows): its body is
    /// counted and skipped, never decoded.
    pub fn is_rows(self) -> bool {
        matches!(self.0, 23..=25 | 30..=32 | 39 | 166..=171)
    }

    /// A GTID-carrying event that starts a transaction.
    pub fn is_gtid(self) -> bool {
        matches!(self.0, 33 | 34 | 42 | 162)
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "unknown type {}", self.0),
        }
    }
}
