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

use super::action::{Action, Effect, SendOutcome};
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
    /// The file holding the passphrase of encrypted archives (`--pitr-passphrase-file`).
    pub archive_passphrase_file: Option<std::path::PathBuf>,
    /// The kubeconfig `:ctx <name>` reads (`None`: the default one).
    pub kubeconfig: Option<std::path::PathBuf>,
    /// How this session may write; `None`: never (the client is read-only and `W` says so).
    pub write: Option<WriteSetup>,
}

/// A session that may write: its client was built with [`crate::client::GuardedLayer`] on
/// `switch` (`connect_guarded`), and `:ctx` rebuilds it the same way.
#[derive(Clone, Debug)]
pub struct WriteSetup {
    /// The switch the client obeys; the runtime sets it from `update`'s
    /// [`Effect::SetWrite`] only.
    pub switch: crate::client::WriteSwitch,
    /// Start in write mode (`--write`; refused before this for a pinned context).
    pub start_on: bool,
    /// The audit journal's folder (`None`: `$XDG_STATE_HOME/bloodraven/journal`).
    pub journal_dir: Option<std::path::PathBuf>,
    /// Contexts pinned read-only.
    pub config: crate::ops::config::Config,
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
    let mut state = State::new(Timestamp::now(), options.context.clone(), options.scope.clone());
    state.ui.no_color = options.no_color;
    if let Some(write) = &options.write {
        state.guided.write.capable = true;
        state.guided.write.config = write.config.clone();
        state.guided.write.on = write.start_on && write.config.pinned_by(&state.context).is_none();
        state.guided.write.journal_dir = match &write.journal_dir {
            Some(dir) => Some(dir.clone()),
            None => crate::journal::default_dir().ok(),
        };
        write.switch.set(state.guided.write.on);
    }
    // Answers of guided operations (reviews and sends) run in tasks and come back here.
    let (guided_sender, mut guided_receiver) = mpsc::channel::<Action>(16);
    let mut guided_tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let mut journal: Option<std::sync::Arc<crate::journal::Journal>> = None;
    let mut tasks = sources::spawn(&client, &state.scope, &sender, state.epoch);
    let mut archive_tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let mut archive_access = crate::archive::ArchiveAccess {
        archive_root: options.archive_root.clone(),
        secret_client: options.archive_credentials_from_secret.then(|| client.clone()),
        passphrase_file: options.archive_passphrase_file.clone(),
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
            Some(answer) = guided_receiver.recv() => actions.push_back(answer),
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
                        let switch = options.write.as_ref().map(|write| write.switch.clone());
                        switch_task = Some(tokio::spawn(async move {
                            let result = match switch {
                                Some(switch) => {
                                    crate::client::connect_guarded(
                                        kubeconfig.as_deref(),
                                        Some(&context),
                                        switch,
                                    )
                                    .await
                                }
                                None => {
                                    crate::client::connect(kubeconfig.as_deref(), Some(&context))
                                        .await
                                }
                            }
                            .map_err(|error| error.to_string());
                            let _ = sender.send(Switched { request, context, result }).await;
                        }));
                    }
                    Effect::SetWrite(on) => {
                        if let Some(write) = &options.write {
                            tracing::info!(on, context = %state.context, "write mode");
                            write.switch.set(on);
                        }
                    }
                    Effect::Review { serial, op, access } => {
                        guided_tasks.retain(|task| !task.is_finished());
                        guided_tasks.push(review(
                            client.clone(),
                            serial,
                            op,
                            access,
                            &guided_sender,
                        ));
                    }
                    Effect::Send { serial, prepared, user, origin } => {
                        let write = options.write.as_ref();
                        let session = match session(write, &client, &state, &mut journal) {
                            Ok(session) => session,
                            Err(error) => {
                                let outcome = SendOutcome::Failed(error);
                                actions.push_back(Action::Sent { serial, outcome });
                                continue;
                            }
                        };
                        let sender = guided_sender.clone();
                        guided_tasks.retain(|task| !task.is_finished());
                        guided_tasks.push(tokio::spawn(async move {
                            let outcome = match crate::ops::send::send(
                                &session,
                                &prepared,
                                user.as_deref(),
                                &origin,
                                Timestamp::now(),
                            )
                            .await
                            {
                                Ok(sent) => SendOutcome::Sent(sent),
                                Err(crate::ops::send::SendError::Conflict { what, message }) => {
                                    SendOutcome::Conflict(format!("{what}: {message}"))
                                }
                                Err(error) => SendOutcome::Failed(error.to_string()),
                            };
                            let _ = sender.send(Action::Sent { serial, outcome }).await;
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
    for task in tasks.into_iter().chain(archive_tasks).chain(switch_task).chain(guided_tasks) {
        task.abort();
    }
    result
}

/// Reads and decides `op` afresh and, when `access`, asks the two self-reviews; answers with
/// [`Action::Reviewed`].
fn review(
    client: Client,
    serial: u64,
    op: crate::ops::WriteOp,
    access: bool,
    sender: &mpsc::Sender<Action>,
) -> tokio::task::JoinHandle<()> {
    let sender = sender.clone();
    tokio::spawn(async move {
        let result = match crate::ops::send::prepare(&client, op, Timestamp::now()).await {
            Ok(prepared) => {
                let access = if access {
                    Some(crate::ops::send::access(&client, &prepared).await)
                } else {
                    None
                };
                Ok(Box::new((prepared, access)))
            }
            Err(error) => Err(error.to_string()),
        };
        let _ = sender.send(Action::Reviewed { serial, result }).await;
    })
}

/// The session a confirmed operation is sent in (the journal is opened at the first send).
fn session(
    write: Option<&WriteSetup>,
    client: &Client,
    state: &State,
    journal: &mut Option<std::sync::Arc<crate::journal::Journal>>,
) -> Result<crate::ops::send::Session, String> {
    let Some(write) = write else {
        return Err("this session cannot write: it was started with a read-only client".to_owned());
    };
    let opened = match journal {
        Some(journal) => journal.clone(),
        None => {
            let dir = match &write.journal_dir {
                Some(dir) => dir.clone(),
                None => crate::journal::default_dir().map_err(|error| error.to_string())?,
            };
            let opened = std::sync::Arc::new(
                crate::journal::Journal::open(&dir).map_err(|error| error.to_string())?,
            );
            *journal = Some(opened.clone());
            opened
        }
    };
    Ok(crate::ops::send::Session {
        client: client.clone(),
        context: state.context.clone(),
        switch: write.switch.clone(),
        journal: opened,
    })
}

/// What a `:ctx` connection task reports.
struct Switched {
    request: u64,
    context: String,
    result: Result<(Client, crate::client::Connection), String>,
}
