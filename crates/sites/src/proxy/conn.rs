//! One proxied connection: two pumps per direction (a reader that never stops reading while
//! the link holds bytes, a writer that forwards them when the fault allows), all in one task so
//! that a reset can abort them and close both sockets with RST.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::LinkState;
use super::fault::Fault;
use super::record::{ConnectionEnd, ConnectionEntry};

/// Largest chunk one read takes.
const CHUNK: usize = 64 * 1024;
/// Chunks held per direction before the reader stops reading (TCP flow control then stalls the
/// sender): at most `QUEUE × CHUNK` = 4 MiB held per direction, never dropped.
const QUEUE: usize = 64;
/// How long the proxy waits for the upstream's TCP handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Bytes read from one side, stamped with when they were read (delays count from there).
struct Chunk {
    read_at: Instant,
    bytes: Vec<u8>,
}

#[derive(Clone, Copy)]
enum Side {
    Client,
    Upstream,
}

impl Side {
    fn error(self, error: &io::Error) -> ConnectionEnd {
        match self {
            Side::Client => ConnectionEnd::ClientError(error.kind()),
            Side::Upstream => ConnectionEnd::UpstreamError(error.kind()),
        }
    }
}

/// Serves one accepted connection until it ends, then records how.
///
/// `epoch` is the link's reset epoch when the connection was accepted: a later
/// [`Link::reset`](super::Link::reset) bumps it and this connection is reset.
pub(super) async fn serve(
    mut client: TcpStream,
    entry: Arc<ConnectionEntry>,
    state: watch::Receiver<LinkState>,
    epoch: u64,
) {
    if let Err(error) = client.set_nodelay(true) {
        tracing::debug!(%error, "cannot set TCP_NODELAY on a proxied client connection");
    }
    let mut upstream: Option<TcpStream> = None;
    let end = {
        let mut kill = state.clone();
        tokio::select! {
            end = forward(&mut client, &mut upstream, state, &entry) => end,
            end = killed(&mut kill, epoch) => end,
        }
    };
    if end.is_abortive() {
        abort(&client);
        if let Some(upstream) = &upstream {
            abort(upstream);
        }
    }
    drop(client);
    drop(upstream);
    entry.ended(end, SystemTime::now());
}

/// Makes the coming close send RST instead of FIN (SO_LINGER 0).
fn abort(stream: &TcpStream) {
    if let Err(error) = socket2::SockRef::from(stream).set_linger(Some(Duration::ZERO)) {
        tracing::debug!(%error, "cannot set SO_LINGER 0; the connection closes with FIN");
    }
}

/// Resolves when the link wants this connection gone.
async fn killed(state: &mut watch::Receiver<LinkState>, epoch: u64) -> ConnectionEnd {
    loop {
        {
            let state = state.borrow_and_update();
            if state.stopped {
                return ConnectionEnd::Stopped;
            }
            if state.reset_epoch != epoch {
                return ConnectionEnd::Reset;
            }
            if state.fault == Fault::Refuse {
                return ConnectionEnd::Refused;
            }
        }
        if state.changed().await.is_err() {
            return ConnectionEnd::Stopped;
        }
    }
}

async fn forward(
    client: &mut TcpStream,
    upstream: &mut Option<TcpStream>,
    state: watch::Receiver<LinkState>,
    entry: &ConnectionEntry,
) -> ConnectionEnd {
    let (mut client_read, mut client_write) = client.split();
    let (to_upstream_tx, to_upstream_rx) = mpsc::channel(QUEUE);
    let (to_client_tx, to_client_rx) = mpsc::channel(QUEUE);
    let read_client = pump_read(&mut client_read, to_upstream_tx, Side::Client);
    let upstream_side = async {
        let mut gate = state.clone();
        wait_forwarding(&mut gate).await;
        let addr = gate.borrow().upstream;
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => return Err(ConnectionEnd::UpstreamConnectFailed(error.kind())),
            Err(_) => return Err(ConnectionEnd::UpstreamConnectFailed(io::ErrorKind::TimedOut)),
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY on a proxied upstream connection");
        }
        entry.connected(addr);
        let stream = upstream.insert(stream);
        let (mut upstream_read, mut upstream_write) = stream.split();
        tokio::try_join!(
            pump_write(
                to_upstream_rx,
                &mut upstream_write,
                state.clone(),
                Side::Upstream,
                &entry.to_upstream
            ),
            pump_read(&mut upstream_read, to_client_tx, Side::Upstream),
            pump_write(
                to_client_rx,
                &mut client_write,
                state.clone(),
                Side::Client,
                &entry.to_client
            ),
        )
        .map(|_| ())
    };
    match tokio::try_join!(read_client, upstream_side) {
        Ok(_) => ConnectionEnd::Closed,
        Err(end) => end,
    }
}

/// Reads until EOF, queueing chunks; a full queue stops reading (flow control, no loss).
async fn pump_read<R: AsyncRead + Unpin>(
    source: &mut R,
    queue: mpsc::Sender<Chunk>,
    side: Side,
) -> Result<(), ConnectionEnd> {
    let mut buffer = vec![0u8; CHUNK];
    loop {
        let read = source.read(&mut buffer).await.map_err(|error| side.error(&error))?;
        if read == 0 {
            return Ok(());
        }
        let chunk = Chunk { read_at: Instant::now(), bytes: buffer[..read].to_vec() };
        if queue.send(chunk).await.is_err() {
            // The writer is gone only when the connection is ending anyway.
            return Ok(());
        }
    }
}

/// Forwards queued chunks when the fault lets them through, then passes the EOF on (FIN).
async fn pump_write<W: AsyncWrite + Unpin>(
    mut queue: mpsc::Receiver<Chunk>,
    destination: &mut W,
    mut state: watch::Receiver<LinkState>,
    side: Side,
    counter: &AtomicU64,
) -> Result<(), ConnectionEnd> {
    while let Some(chunk) = queue.recv().await {
        wait_due(&mut state, chunk.read_at).await;
        destination.write_all(&chunk.bytes).await.map_err(|error| side.error(&error))?;
        counter.fetch_add(chunk.bytes.len() as u64, Ordering::Relaxed);
    }
    // The peer may already be gone; the other direction reports that if it matters.
    let _ = destination.shutdown().await;
    Ok(())
}

/// Resolves once the link forwards (not blackholed or refusing).
async fn wait_forwarding(state: &mut watch::Receiver<LinkState>) {
    loop {
        if state.borrow_and_update().fault.forwards() {
            return;
        }
        if state.changed().await.is_err() {
            // The link is gone; `killed` ends the connection.
            std::future::pending::<()>().await;
        }
    }
}

/// Resolves when a chunk read at `read_at` may be forwarded under the current fault.
async fn wait_due(state: &mut watch::Receiver<LinkState>, read_at: Instant) {
    loop {
        let fault = state.borrow_and_update().fault;
        let due = match fault {
            Fault::Pass => return,
            Fault::Delay { ms } => read_at + Duration::from_millis(ms),
            Fault::Blackhole | Fault::Refuse => {
                wait_forwarding(state).await;
                continue;
            }
        };
        if Instant::now() >= due {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep_until(due) => {}
            changed = state.changed() => {
                if changed.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}
