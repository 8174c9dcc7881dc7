//! The runtime: owns the state, runs one biased `select!` over input, data and the tick,
//! performs effects and redraws only when something changed.

use std::future::Future;
use std::time::Duration;

use crossterm::event::Event as TerminalEvent;
use futures::{Stream, StreamExt as _};
use jiff::Timestamp;
use kube::Client;
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use tokio::sync::mpsc;

use super::action::{Action, DataEvent, Effect};
use super::state::{Scope, State};
use super::{keymap, sources, update, view};

/// How often the clock (countdowns, ages) moves.
pub const TICK: Duration = Duration::from_millis(250);

/// What the console shows at start.
#[derive(Clone, Debug)]
pub struct Options {
    pub context: String,
    pub scope: Scope,
    pub no_color: bool,
}

/// Runs the console until the user quits, `input` ends, or `shutdown` resolves.
/// `on_draw` sees every completed frame (tests read it; the binary ignores it).
pub async fn run<B, I>(
    terminal: &mut Terminal<B>,
    client: Client,
    options: Options,
    mut input: I,
    mut on_draw: impl FnMut(&Buffer),
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()>
where
    B: Backend,
    I: Stream<Item = std::io::Result<TerminalEvent>> + Unpin,
{
    let (sender, mut receiver) = mpsc::channel::<DataEvent>(4096);
    let mut tasks = sources::spawn(&client, &options.scope, &sender);
    let mut state = State::new(Timestamp::now(), options.context, options.scope);
    state.ui.no_color = options.no_color;
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    tokio::pin!(shutdown);
    let mut dirty = true;
    let result = loop {
        if dirty {
            match terminal.draw(|frame| view::render(&state, frame)) {
                Ok(completed) => on_draw(completed.buffer),
                Err(error) => break Err(anyhow::anyhow!("drawing the console failed: {error}")),
            }
            dirty = false;
        }
        let mut actions = Vec::new();
        tokio::select! {
            biased;
            () = &mut shutdown => break Ok(()),
            input = input.next() => match input {
                Some(Ok(TerminalEvent::Key(key))) => {
                    if let Some(intent) = keymap::intent(state.ui.mode, key) {
                        actions.push(Action::Input(intent));
                    }
                }
                Some(Ok(TerminalEvent::Resize(..))) => actions.push(Action::Resize),
                Some(Ok(_)) => {}
                Some(Err(error)) => break Err(anyhow::anyhow!("reading the terminal failed: {error}")),
                None => break Ok(()),
            },
            Some(event) = receiver.recv() => {
                actions.push(Action::Data(event));
                // Coalesce a burst into one redraw.
                while actions.len() < 1024 {
                    match receiver.try_recv() {
                        Ok(event) => actions.push(Action::Data(event)),
                        Err(_) => break,
                    }
                }
            }
            _ = tick.tick() => actions.push(Action::Tick(Timestamp::now())),
        }
        let mut quit = false;
        for action in actions {
            for effect in update::update(&mut state, action) {
                match effect {
                    Effect::Render => dirty = true,
                    Effect::Quit => quit = true,
                    Effect::Watch(scope) => {
                        for task in tasks.drain(..) {
                            task.abort();
                        }
                        while receiver.try_recv().is_ok() {}
                        tracing::info!(%scope, "watching another scope");
                        tasks = sources::spawn(&client, &scope, &sender);
                    }
                }
            }
        }
        if quit {
            break Ok(());
        }
    };
    for task in tasks {
        task.abort();
    }
    result
}
