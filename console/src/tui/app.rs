//! The runtime: owns the state, runs one biased `select!` over input, context switches,
//! read-only refusals, data and the tick, performs effects and redraws only when something
//! changed.
//!
//! `:ctx` connects in a task (input keeps flowing); when it connects, the new client replaces
//! the old one, every task of the old context (watchers, archive reads) is aborted and the
//! sources restart for the new epoch. Events still in flight from the old ones carry the old
//! epoch and `update` drops them.

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

use super::action::{Action, Effect};
use super::sources::Tagged;
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
    /// Where PVC archives are (`<root>/<namespace>/<claim>/…`); `None` outside the lab
    /// without `--archive-root`.
    pub archive_root: Option<std::path::PathBuf>,
    /// S3 credentials from the profile's Secret (read through the read-only client) instead
    /// of the local AWS environment.
    pub archive_credentials_from_secret: bool,
    /// The kubeconfig `:ctx <name>` reads (`None`: the default one).
    pub kubeconfig: Option<std::path::PathBuf>,
}

/// Runs the console until the user quits, `input` ends, or `shutdown` resolves.
/// `on_draw` sees every completed frame (tests read it; the binary ignores it).
pub async fn run<B, I>(
    terminal: &mut Terminal<B>,
    mut client: Client,
    options: Options,
    mut input: I,
    mut on_draw: impl FnMut(&Buffer),
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()>
where
    B: Backend,
    I: Stream<Item = std::io::Result<TerminalEvent>> + Unpin,
{
    let mut refusals = crate::client::refusals();
    let (sender, mut receiver) = mpsc::channel::<Tagged>(4096);
    let mut state = State::new(Timestamp::now(), options.context, options.scope);
    state.ui.no_color = options.no_color;
    let mut tasks = sources::spawn(&client, &state.scope, &sender, state.epoch);
    let mut archive_tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let mut archive_access = crate::archive::ArchiveAccess {
        archive_root: options.archive_root.clone(),
        secret_client: options.archive_credentials_from_secret.then(|| client.clone()),
    };
    // `:ctx`: the connecting task, and the number of the latest request (an older answer
    // is ignored).
    let (switch_sender, mut switch_receiver) = mpsc::channel::<Switched>(4);
    let mut switch_task: Option<tokio::task::JoinHandle<()>> = None;
    let mut switch_request = 0_u64;
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
        let mut actions = std::collections::VecDeque::new();
        tokio::select! {
            biased;
            () = &mut shutdown => break Ok(()),
            input = input.next() => match input {
                Some(Ok(TerminalEvent::Key(key))) => {
                    if let Some(intent) = keymap::intent(state.ui.mode, key) {
                        actions.push_back(Action::Input(intent));
                    }
                }
                Some(Ok(TerminalEvent::Resize(..))) => actions.push_back(Action::Resize),
                Some(Ok(_)) => {}
                Some(Err(error)) => break Err(anyhow::anyhow!("reading the terminal failed: {error}")),
                None => break Ok(()),
            },
            Some(switched) = switch_receiver.recv() => {
                if switched.request == switch_request {
                    match switched.result {
                        Ok((new_client, connection)) => {
                            tracing::info!(context = %connection.context, "switched context");
                            client = new_client;
                            if archive_access.secret_client.is_some() {
                                archive_access.secret_client = Some(client.clone());
                            }
                            // `update` answers with `Effect::Watch`, which restarts everything.
                            actions.push_back(Action::ContextSwitched(Ok(connection.context)));
                        }
                        Err(error) => {
                            tracing::warn!(context = %switched.context, %error, "switching context failed");
                            actions.push_back(Action::ContextSwitched(Err(format!(
                                "context {}: {error}",
                                switched.context
                            ))));
                        }
                    }
                }
            }
            refused = refusals.recv() => match refused {
                Ok(refused) => actions.push_back(Action::Refused(refused.to_string())),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                    actions.push_back(Action::Refused(format!(
                        "the console is read-only: refused {missed} more requests (see the log)"
                    )));
                }
                // The sender is a process-wide static: it never closes.
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {}
            },
            Some(Tagged { epoch, event }) = receiver.recv() => {
                actions.push_back(Action::Sourced { epoch, event });
                // Coalesce a burst into one redraw.
                while actions.len() < 1024 {
                    match receiver.try_recv() {
                        Ok(Tagged { epoch, event }) => {
                            actions.push_back(Action::Sourced { epoch, event });
                        }
                        Err(_) => break,
                    }
                }
            }
            _ = tick.tick() => actions.push_back(Action::Tick(Timestamp::now())),
        }
        let mut quit = false;
        while let Some(action) = actions.pop_front() {
            for effect in update::update(&mut state, action) {
                match effect {
                    Effect::Render => dirty = true,
                    Effect::Quit => quit = true,
                    Effect::Watch(scope) => {
                        // A new scope or context: nothing of the old one may keep running.
                        for task in tasks.drain(..).chain(archive_tasks.drain(..)) {
                            task.abort();
                        }
                        tracing::info!(%scope, epoch = state.epoch, "watching");
                        tasks = sources::spawn(&client, &scope, &sender, state.epoch);
                    }
                    Effect::SwitchContext(context) => {
                        switch_request += 1;
                        if let Some(task) = switch_task.take() {
                            task.abort();
                        }
                        let kubeconfig = options.kubeconfig.clone();
                        let sender = switch_sender.clone();
                        let request = switch_request;
                        switch_task = Some(tokio::spawn(async move {
                            let result =
                                crate::client::connect(kubeconfig.as_deref(), Some(&context))
                                    .await
                                    .map_err(|error| error.to_string());
                            let _ = sender.send(Switched { request, context, result }).await;
                        }));
                    }
                    Effect::LoadArchive { key, request } => {
                        archive_tasks.retain(|task| !task.is_finished());
                        archive_tasks.push(sources::read_archive(
                            archive_access.clone(),
                            key,
                            request,
                            &sender,
                            state.epoch,
                        ));
                    }
                }
            }
        }
        if quit {
            break Ok(());
        }
    };
    for task in tasks.into_iter().chain(archive_tasks).chain(switch_task) {
        task.abort();
    }
    result
}

/// What a `:ctx` connection task reports.
struct Switched {
    request: u64,
    context: String,
    result: Result<(Client, crate::client::Connection), String>,
}
