//! The interactive console: TEA (state, update, view) with one runtime loop.
//!
//! - [`state`]: plain data (`Clone`, no channels); `now` lives here.
//! - [`action`]: what happens (input intents, data events, ticks) and the effects `update` asks for.
//! - [`update`]: the only function that changes the state.
//! - [`view`]: `&State` in, frame out; no IO, no clock.
//! - [`keymap`]: every key, once per mode; feeds the help popup and the hint bar.
//! - [`sources`]: kube-runtime watchers turned into owned data events.
//! - [`app`]: the runtime: one biased `select!` over input, data and the tick.

pub mod action;
pub mod app;
pub mod keymap;
pub mod sources;
pub mod state;
pub mod update;
pub mod view;

#[cfg(test)]
pub(crate) mod testing;
