//! The on-call console (library part; see `main.rs`).
