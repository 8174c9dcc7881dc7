//! The per-link connection log: one entry per accepted connection, live counters while it runs,
//! how it ended once it has.

use std::io;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// One connection a link accepted, as [`Link::connections`](super::Link::connections) reports
/// it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionRecord {
    /// Number of the connection on its link, from 1 in accept order.
    pub id: u64,
    /// The client's address (the proxy's peer).
    pub client: SocketAddr,
    /// The upstream it was forwarded to; `None` while it waits (blackholed) or if it never got
    /// that far (refused, reset, stopped before connecting).
    pub upstream: Option<SocketAddr>,
    /// When the proxy accepted it (wall clock, for reports).
    pub opened: SystemTime,
    /// When it ended; `None` while live.
    pub closed: Option<SystemTime>,
    /// Bytes written to the upstream so far (held bytes are not counted until forwarded).
    pub bytes_to_upstream: u64,
    /// Bytes written to the client so far.
    pub bytes_to_client: u64,
    /// How it ended; `None` while live.
    pub end: Option<ConnectionEnd>,
}

/// How a proxied connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionEnd {
    /// Both directions finished with an orderly close (FIN), all bytes forwarded.
    Closed,
    /// Reading from or writing to the client failed; the upstream side was reset.
    ClientError(io::ErrorKind),
    /// Reading from or writing to the upstream failed; the client side was reset.
    UpstreamError(io::ErrorKind),
    /// The upstream could not be reached (refused, timed out); the client was reset.
    UpstreamConnectFailed(io::ErrorKind),
    /// [`Link::reset`](super::Link::reset) reset it (RST both ways).
    Reset,
    /// [`Fault::Refuse`](super::Fault::Refuse) was set while it was live (RST both ways).
    Refused,
    /// The hub shut down (RST both ways).
    Stopped,
}

impl ConnectionEnd {
    /// Whether the proxy closes the sockets with RST rather than FIN.
    pub(crate) fn is_abortive(self) -> bool {
        self != ConnectionEnd::Closed
    }
}

/// The live side of a [`ConnectionRecord`]: counters updated by the pumps without a lock.
#[derive(Debug)]
pub(crate) struct ConnectionEntry {
    id: u64,
    client: SocketAddr,
    opened: SystemTime,
    pub(crate) to_upstream: AtomicU64,
    pub(crate) to_client: AtomicU64,
    finish: Mutex<Finish>,
}

#[derive(Debug, Default)]
struct Finish {
    upstream: Option<SocketAddr>,
    closed: Option<SystemTime>,
    end: Option<ConnectionEnd>,
}

impl ConnectionEntry {
    pub(crate) fn new(id: u64, client: SocketAddr, opened: SystemTime) -> Self {
        Self {
            id,
            client,
            opened,
            to_upstream: AtomicU64::new(0),
            to_client: AtomicU64::new(0),
            finish: Mutex::new(Finish::default()),
        }
    }

    fn finish(&self) -> std::sync::MutexGuard<'_, Finish> {
        // A poisoned lock only means a panic elsewhere; the record is still plain data.
        self.finish.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn connected(&self, upstream: SocketAddr) {
        self.finish().upstream = Some(upstream);
    }

    pub(crate) fn ended(&self, end: ConnectionEnd, at: SystemTime) {
        let mut finish = self.finish();
        finish.closed = Some(at);
        finish.end = Some(end);
    }

    pub(crate) fn is_live(&self) -> bool {
        self.finish().end.is_none()
    }

    pub(crate) fn record(&self) -> ConnectionRecord {
        let finish = self.finish();
        ConnectionRecord {
            id: self.id,
            client: self.client,
            upstream: finish.upstream,
            opened: self.opened,
            closed: finish.closed,
            bytes_to_upstream: self.to_upstream.load(Ordering::Relaxed),
            bytes_to_client: self.to_client.load(Ordering::Relaxed),
            end: finish.end,
        }
    }
}
