//! bloodraven-gtid (being written).
