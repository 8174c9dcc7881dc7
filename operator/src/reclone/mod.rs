//! An administrator's reclone request: the group's `bloodraven.shipstream.io/reclone-site`
//! annotation (`<site>:confirm=<group>:uid=<uid>[:gtidPrefix=<source UUID>]`) written by a
//! human or the console for a site that is not the reclone queue's current request (typically
//! a follower left Blocked/GTIDDiverged). The queue's own requests stay with
//! [`crate::restore::queue_io`], which calls [`io::poll`] after its own step in the same poll.
//!
//! - [`core`]: the decision (accept, refuse with RecloneRejected, wait, finish), pure.
//! - [`io`]: the annotation's removal, the Events and the clone task (the queue's CLONE code,
//!   [`crate::restore::clone`]), remembered in process memory.

pub mod core;
pub mod io;

#[cfg(test)]
mod tests;
