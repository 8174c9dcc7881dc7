//! Annotation keys and the one-shot action grammar (being written).
