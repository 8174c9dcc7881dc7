//! bloodraven-crd: the API of the spec (Bloodraven v1.7) as Rust types.

pub mod annotations;
pub mod catalog;
