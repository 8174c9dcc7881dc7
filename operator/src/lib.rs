//! `bloodraven-operator` as a library: the controllers' pure cores and, around them, the
//! observe and apply layers the binary wires together.
//!
//! Every decision is a pure function of values (`topology::plan`); IO lives in the layers that
//! observe MySQL and the API server and apply the planned steps.

pub mod topology;
