//! The reason catalog (being written).
