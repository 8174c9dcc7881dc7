//! Planner tests: the refusal order, every token, the document's worked examples, properties.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod anchors;
mod archive_bugs;
mod examples;
mod helpers;
mod index;
mod order;
mod property;
mod tokens;
mod window;
