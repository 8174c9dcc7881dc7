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
    let (sender, mut receiver) = mpsc::channel::<DataEvent>(4096);
    let mut tasks = sources::spawn(&client, &options.scope, &sender);
    let mut archive_tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let mut archive_access = crate::archive::ArchiveAccess {
        archive_root: options.archive_root.clone(),
        secret_client: options.archive_credentials_from_secret.then(|| client.clone()),
    };
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
            Some(event) = receiver.recv() => {
                actions.push_back(Action::Data(event));
                // Coalesce a burst into one redraw.
                while actions.len() < 1024 {
                    match receiver.try_recv() {
                        Ok(event) => actions.push_back(Action::Data(event)),
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
                        for task in tasks.drain(..) {
                            task.abort();
                        }
                        while receiver.try_recv().is_ok() {}
                        tracing::info!(%scope, "watching another scope");
                        tasks = sources::spawn(&client, &scope, &sender);
                    }
                    Effect::SwitchContext(context) => {
                        let kubeconfig = options.kubeconfig.as_deref();
                        match crate::client::connect(kubeconfig, Some(&context)).await {
                            Ok((new_client, connection)) => {
                                for task in tasks.drain(..) {
                                    task.abort();
                                }
                                while receiver.try_recv().is_ok() {}
                                tracing::info!(context = %connection.context, "switched context");
                                client = new_client;
                                if archive_access.secret_client.is_some() {
                                    archive_access.secret_client = Some(client.clone());
                                }
                                tasks = sources::spawn(&client, &state.scope, &sender);
                                actions.push_back(Action::ContextSwitched(Ok(connection.context)));
                            }
                            Err(error) => {
                                tracing::warn!(%context, %error, "switching context failed");
                                actions.push_back(Action::ContextSwitched(Err(format!(
                                    "context {context}: {error}"
                                ))));
                            }
                        }
                    }
                    Effect::LoadArchive { key, request } => {
                        archive_tasks.retain(|task| !task.is_finished());
                        archive_tasks.push(sources::read_archive(
                            archive_access.clone(),
                            key,
                            request,
                            &sender,
                        ));
                    }
                }
            }
        }
        if quit {
            break Ok(());
        }
    };
    for task in tasks.into_iter().chain(archive_tasks) {
        task.abort();
    }
    result
}
