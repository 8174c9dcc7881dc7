//! The fault proxy on every link of the live lab (issue 11, item 3).
//!
//! A [`ProxyHub`] owns named [`Link`]s. Each link listens on its own `127.0.0.1` port and
//! forwards every connection to its upstream, applying the link's [`Fault`]: pass, delay,
//! blackhole (the partition that hangs: bytes are held, never dropped), refuse (the partition
//! that fails fast: connection refused, live connections reset). [`Link::reset`] resets live
//! connections. Changes take effect on live connections. Each link keeps a log of its
//! connections ([`ConnectionRecord`]).
//!
//! No global state: a hub is a value; dropping it (or [`ProxyHub::shutdown`]) stops its links.
//!
//! ```no_run
//! # async fn demo(upstream: std::net::SocketAddr) -> Result<(), bloodraven_sites::proxy::ProxyError> {
//! use bloodraven_sites::proxy::{Fault, ProxyHub};
//! let hub = ProxyHub::current()?;
//! let link = hub.link("pdx->iad", upstream)?;
//! // point the follower at link.addr() instead of upstream, then:
//! link.set(Fault::Blackhole)?;
//! link.set(Fault::Pass)?;
//! # Ok(()) }
//! ```

mod conn;
mod fault;
mod record;

use std::collections::BTreeMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use socket2::{Domain, Socket, Type};
use tokio::net::TcpListener;
use tokio::runtime::Handle;
use tokio::sync::watch;

pub use fault::{Fault, ParseFaultError};
pub use record::{ConnectionEnd, ConnectionRecord};

use record::ConnectionEntry;

/// Listen backlog of a link's port.
const BACKLOG: i32 = 1024;
/// Pause after a failed accept (EMFILE and the like) before trying again.
const ACCEPT_RETRY: std::time::Duration = std::time::Duration::from_millis(20);
/// Attempts at binding a fresh port (another process may take the probed port in between).
const BIND_ATTEMPTS: usize = 16;

/// What went wrong creating or driving a link.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// No tokio runtime to run the proxy on.
    #[error(
        "the fault proxy needs a tokio runtime: call ProxyHub::current() inside one, or pass a Handle to ProxyHub::new"
    )]
    NoRuntime,
    /// A link of that name already exists in this hub.
    #[error(
        "link {name:?} already exists in this hub; pick another name or reuse hub.get({name:?})"
    )]
    DuplicateLink {
        /// The link name.
        name: String,
    },
    /// The hub was shut down.
    #[error(
        "the proxy hub is shut down; link {name:?} cannot be created or changed; start a new hub"
    )]
    Stopped {
        /// The link name.
        name: String,
    },
    /// The link's port could not be bound on 127.0.0.1.
    #[error("cannot listen on 127.0.0.1 for link {name:?}: {source}")]
    Bind {
        /// The link name.
        name: String,
        /// The socket error.
        #[source]
        source: io::Error,
    },
    /// Starting or stopping to listen (for [`Fault::Refuse`]) failed.
    #[error("cannot {action} on {addr} for link {name:?}: {source}")]
    Listen {
        /// The link name.
        name: String,
        /// The link's address.
        addr: SocketAddr,
        /// `"stop listening"` or `"listen again"`.
        action: &'static str,
        /// The socket error.
        #[source]
        source: io::Error,
    },
}

/// What every connection of a link watches.
#[derive(Clone, Debug)]
struct LinkState {
    fault: Fault,
    upstream: SocketAddr,
    /// Bumped by [`Link::reset`]; a connection accepted before the bump is reset.
    reset_epoch: u64,
    /// Bumped each time the socket listens again after [`Fault::Refuse`].
    listen_epoch: u64,
    stopped: bool,
}

/// A set of named links with no state outside itself. Dropping it stops every link.
#[derive(Debug)]
pub struct ProxyHub {
    runtime: Handle,
    links: Mutex<BTreeMap<String, Link>>,
    stopped: std::sync::atomic::AtomicBool,
}

impl ProxyHub {
    /// A hub whose links run on `runtime`.
    pub fn new(runtime: Handle) -> Self {
        Self {
            runtime,
            links: Mutex::new(BTreeMap::new()),
            stopped: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// A hub on the tokio runtime this is called from.
    ///
    /// # Errors
    /// [`ProxyError::NoRuntime`] outside a tokio runtime.
    pub fn current() -> Result<Self, ProxyError> {
        Handle::try_current().map(Self::new).map_err(|_| ProxyError::NoRuntime)
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Link>> {
        self.links.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates link `name` listening on a fresh `127.0.0.1` port, forwarding to `upstream`,
    /// starting with [`Fault::Pass`].
    ///
    /// # Errors
    /// [`ProxyError::DuplicateLink`] if the name is taken, [`ProxyError::Bind`] if no port can
    /// be bound, [`ProxyError::Stopped`] after [`ProxyHub::shutdown`].
    pub fn link(&self, name: impl Into<String>, upstream: SocketAddr) -> Result<Link, ProxyError> {
        let name = name.into();
        let mut links = self.lock();
        if self.stopped.load(Ordering::SeqCst) {
            return Err(ProxyError::Stopped { name });
        }
        if links.contains_key(&name) {
            return Err(ProxyError::DuplicateLink { name });
        }
        let bind_error = |source| ProxyError::Bind { name: name.clone(), source };
        let socket = bind_fixed_port().map_err(bind_error)?;
        let addr =
            socket.local_addr().ok().and_then(|addr| addr.as_socket()).ok_or_else(|| {
                bind_error(io::Error::other("the bound socket has no IP address"))
            })?;
        let (state, _) = watch::channel(LinkState {
            fault: Fault::Pass,
            upstream,
            reset_epoch: 0,
            listen_epoch: 0,
            stopped: false,
        });
        let link = Link {
            shared: Arc::new(LinkShared {
                name: name.clone(),
                addr,
                socket,
                state,
                log: Mutex::new(Vec::new()),
                next_id: AtomicU64::new(1),
            }),
        };
        self.runtime.spawn(accept_loop(Arc::clone(&link.shared)));
        tracing::debug!(link = %name, %addr, %upstream, "proxy link listening");
        links.insert(name, link.clone());
        Ok(link)
    }

    /// The link called `name`, if any.
    pub fn get(&self, name: &str) -> Option<Link> {
        self.lock().get(name).cloned()
    }

    /// Every link, by name.
    pub fn links(&self) -> Vec<Link> {
        self.lock().values().cloned().collect()
    }

    /// Stops every link: ports stop listening (refused), live connections are reset. Link
    /// handles stay readable (address, log) but cannot be changed.
    pub fn shutdown(&self) {
        let links = self.lock();
        self.stopped.store(true, Ordering::SeqCst);
        for link in links.values() {
            link.stop();
        }
    }
}

impl Drop for ProxyHub {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Binds `127.0.0.1` on a concrete port: a socket bound to port 0 loses its port when it stops
/// listening, one bound to a named port keeps it (so [`Fault::Refuse`] can stop and resume
/// listening without another process taking the port).
fn bind_fixed_port() -> io::Result<Socket> {
    let mut last = io::Error::new(io::ErrorKind::AddrInUse, "no free port");
    for _ in 0..BIND_ATTEMPTS {
        let port = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
        socket.set_reuse_address(true)?;
        match socket.bind(&SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).into()) {
            Ok(()) => {
                socket.listen(BACKLOG)?;
                socket.set_nonblocking(true)?;
                return Ok(socket);
            }
            Err(error) if error.kind() == io::ErrorKind::AddrInUse => last = error,
            Err(error) => return Err(error),
        }
    }
    Err(last)
}

#[derive(Debug)]
struct LinkShared {
    name: String,
    addr: SocketAddr,
    /// The listening socket. The accept loop registers a duplicate of it with tokio, and a
    /// fresh one after each listen again: tokio keeps a stopped listener's "closed" readiness
    /// for good, so the old registration would spin.
    socket: Socket,
    state: watch::Sender<LinkState>,
    log: Mutex<Vec<Arc<ConnectionEntry>>>,
    next_id: AtomicU64,
}

impl LinkShared {
    fn log(&self) -> MutexGuard<'_, Vec<Arc<ConnectionEntry>>> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One named link: a `127.0.0.1` port forwarding to an upstream under a [`Fault`]. Cheap to
/// clone; every clone drives the same link.
#[derive(Clone, Debug)]
pub struct Link {
    shared: Arc<LinkShared>,
}

impl Link {
    /// The link's name, e.g. `pdx->iad`.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Where clients connect (`127.0.0.1:<port>`); fixed for the link's life.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// Where new connections are forwarded.
    pub fn upstream(&self) -> SocketAddr {
        self.shared.state.borrow().upstream
    }

    /// The current fault.
    pub fn fault(&self) -> Fault {
        self.shared.state.borrow().fault
    }

    /// Applies `fault` now, to live connections too: [`Fault::Blackhole`] stalls them (bytes
    /// held), [`Fault::Refuse`] resets them and stops listening, [`Fault::Pass`] or
    /// [`Fault::Delay`] resume held bytes in order.
    ///
    /// # Errors
    /// [`ProxyError::Stopped`] after the hub shut down; [`ProxyError::Listen`] if the port
    /// cannot stop or resume listening (the fault is then unchanged).
    pub fn set(&self, fault: Fault) -> Result<(), ProxyError> {
        let shared = &self.shared;
        let mut result = Ok(());
        shared.state.send_if_modified(|state| {
            if state.stopped {
                result = Err(ProxyError::Stopped { name: shared.name.clone() });
                return false;
            }
            let socket = &shared.socket;
            let change = match (state.fault == Fault::Refuse, fault == Fault::Refuse) {
                (false, true) => {
                    Some(("stop listening", socket.shutdown(std::net::Shutdown::Read)))
                }
                (true, false) => {
                    let listened = socket.listen(BACKLOG);
                    if listened.is_ok() {
                        state.listen_epoch += 1;
                    }
                    Some(("listen again", listened))
                }
                _ => None,
            };
            if let Some((action, Err(source))) = change {
                result = Err(ProxyError::Listen {
                    name: shared.name.clone(),
                    addr: shared.addr,
                    action,
                    source,
                });
                return false;
            }
            let changed = state.fault != fault;
            state.fault = fault;
            changed
        });
        if result.is_ok() {
            tracing::info!(link = %shared.name, %fault, "proxy link fault set");
        }
        result
    }

    /// Back to [`Fault::Pass`].
    ///
    /// # Errors
    /// As [`Link::set`].
    pub fn heal(&self) -> Result<(), ProxyError> {
        self.set(Fault::Pass)
    }

    /// Resets (RST both ways) every connection live now; later connections are unaffected.
    pub fn reset(&self) {
        self.shared.state.send_modify(|state| state.reset_epoch += 1);
        tracing::info!(link = %self.shared.name, "proxy link connections reset");
    }

    /// Forwards new connections to `upstream` (live ones keep theirs): a Service following the
    /// active site.
    pub fn set_upstream(&self, upstream: SocketAddr) {
        self.shared.state.send_if_modified(|state| {
            let changed = state.upstream != upstream;
            state.upstream = upstream;
            changed
        });
        tracing::info!(link = %self.shared.name, %upstream, "proxy link upstream set");
    }

    /// Every connection the link accepted, in accept order, live ones included.
    pub fn connections(&self) -> Vec<ConnectionRecord> {
        self.shared.log().iter().map(|entry| entry.record()).collect()
    }

    /// How many connections are live now.
    pub fn live_connections(&self) -> usize {
        self.shared.log().iter().filter(|entry| entry.is_live()).count()
    }

    fn stop(&self) {
        let shared = &self.shared;
        shared.state.send_modify(|state| {
            if !state.stopped
                && state.fault != Fault::Refuse
                && let Err(error) = shared.socket.shutdown(std::net::Shutdown::Read)
            {
                tracing::warn!(link = %shared.name, %error, "cannot stop listening");
            }
            state.stopped = true;
        });
    }
}

async fn accept_loop(shared: Arc<LinkShared>) {
    let mut state = shared.state.subscribe();
    // The tokio registration in use and the listen epoch it was made in.
    let mut listener: Option<(u64, TcpListener)> = None;
    loop {
        let (stopped, refusing, listen_epoch) = {
            let state = state.borrow_and_update();
            (state.stopped, state.fault == Fault::Refuse, state.listen_epoch)
        };
        if stopped {
            break;
        }
        if refusing {
            // Not listening: accept would only fail. Wait for the fault to change.
            listener = None;
            if state.changed().await.is_err() {
                break;
            }
            continue;
        }
        let current = match &listener {
            Some((epoch, listener)) if *epoch == listen_epoch => listener,
            _ => match register(&shared.socket) {
                Ok(fresh) => &listener.insert((listen_epoch, fresh)).1,
                Err(error) => {
                    tracing::warn!(link = %shared.name, %error, "cannot register the proxy listener; retrying");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            },
        };
        tokio::select! {
            accepted = current.accept() => match accepted {
                Ok((stream, client)) => spawn_connection(&shared, stream, client),
                Err(error) => {
                    // Refuse set meanwhile (the loop then waits), or a transient error (EMFILE).
                    if shared.state.borrow().fault != Fault::Refuse {
                        tracing::warn!(link = %shared.name, %error, "proxy accept failed; retrying");
                        tokio::time::sleep(ACCEPT_RETRY).await;
                    }
                }
            },
            changed = state.changed() => {
                if changed.is_err() {
                    break;
                }
            }
        }
    }
    tracing::debug!(link = %shared.name, "proxy link accept loop ended");
}

/// A tokio listener on a duplicate of the link's socket (same port, same listen state).
fn register(socket: &Socket) -> io::Result<TcpListener> {
    let duplicate: std::net::TcpListener = socket.try_clone()?.into();
    TcpListener::from_std(duplicate)
}

fn spawn_connection(shared: &LinkShared, stream: tokio::net::TcpStream, client: SocketAddr) {
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let entry = Arc::new(ConnectionEntry::new(id, client, SystemTime::now()));
    shared.log().push(Arc::clone(&entry));
    let state = shared.state.subscribe();
    let epoch = state.borrow().reset_epoch;
    tracing::debug!(link = %shared.name, id, %client, "proxy connection accepted");
    tokio::spawn(conn::serve(stream, entry, state, epoch));
}
