//! bloodraven-binlog (being written).
