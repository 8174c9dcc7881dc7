//! The self-fencing decision (pure: values in, an [`Action`] out; no IO, no clock).
//!
//! The topology document's rule ("Sidecar peer awareness"): the sidecar self-fences its MySQL
//! (`super_read_only=ON`) only when the operator and every peer have been unreachable beyond
//! `spec.sidecar.leaseTimeout`; a single reachable peer keeps the primary writable. The backup
//! document's startup safety net: a booting server comes up fenced (`read_only` from `my.cnf`,
//! plus the sidecar's `super_read_only`) until the operator names the site active. And the
//! operator's authoritative active-site observation, direct or relayed by a peer, fences a
//! writable server the operator no longer names (a stale primary the operator cannot reach).
//!
//! [`PeerView`] is what the sidecar knows; its `record_*` methods fold in one probe result each
//! (pure, `now` passed in). [`decide`] reads the view and says what to do.

use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The timing knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    /// `spec.sidecar.leaseTimeout`: silence from the operator and every peer beyond this
    /// fences a writable server.
    pub lease_timeout: Duration,
    /// How old an operator observation may be and still count (the operator's `3 ×
    /// pollInterval`).
    pub freshness: Duration,
}

/// Who handed this sidecar an observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Via {
    /// The operator's `/active-site`.
    Operator,
    /// A peer's `/peer/active-site` (its address).
    Peer(String),
}

/// The operator's authoritative active-site observation (its `/active-site` answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authority {
    /// The site the operator names active (`None`: it names none).
    pub active_site: Option<String>,
    /// When the operator made the observation (the operator's clock).
    pub observed_at: Timestamp,
    /// The operator's topology generation.
    #[serde(default)]
    pub topology_generation: u64,
}

/// An [`Authority`] and who handed it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldAuthority {
    /// The observation.
    pub authority: Authority,
    /// Its source.
    pub via: Via,
}

/// The local server's fencing flags, as last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ServerState {
    /// Not read yet, or the last read failed.
    Unknown,
    /// `super_read_only=ON` (hence `read_only=ON`).
    Fenced,
    /// `read_only=ON`, `super_read_only=OFF`: only accounts with SUPER/CONNECTION_ADMIN write.
    ReadOnly,
    /// `read_only=OFF`: the server takes writes.
    Writable,
}

/// The startup safety net's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Startup {
    /// Since this sidecar booted, nothing has named this site active yet: the server is kept
    /// fenced.
    Pending,
    /// The operator named this site active (or made it writable): the lease rule applies.
    Released,
}

/// One peer's liveness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerLiveness {
    /// `host:port` from `PEER_ADDRESSES`.
    pub address: String,
    /// The last time it answered `/peer/ping`.
    pub last_ok: Option<Timestamp>,
}

/// Everything the decision reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerView {
    /// This sidecar's site.
    pub site: String,
    /// When this sidecar started (the lease counts from here at the earliest).
    pub started_at: Timestamp,
    /// The last time the operator answered.
    pub operator_last_ok: Option<Timestamp>,
    /// Every peer, in `PEER_ADDRESSES` order.
    pub peers: Vec<PeerLiveness>,
    /// The newest operator observation held (direct or relayed).
    pub authority: Option<HeldAuthority>,
    /// The server's flags.
    pub server: ServerState,
    /// Since when the server has been writable, by this sidecar's readings (`None` unless
    /// [`ServerState::Writable`]).
    pub writable_since: Option<Timestamp>,
    /// The startup safety net.
    pub startup: Startup,
    /// Whether the server has been read since this sidecar started.
    pub read_once: bool,
}

/// Why the sidecar fences.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all_fields = "camelCase")]
pub enum FenceReason {
    /// Startup safety net: nothing has named this site active since the sidecar started.
    StartupUnconfirmed,
    /// A fresh operator observation, made after this server turned writable, names another
    /// site (or was relayed naming it).
    AuthorityNamesOther {
        /// The site the operator names.
        active_site: String,
        /// When it observed that.
        observed_at: Timestamp,
    },
    /// The operator and every peer have been silent beyond the lease.
    LeaseExpired {
        /// The operator's last answer.
        operator_last_ok: Option<Timestamp>,
        /// The most recent answer of any peer.
        peer_last_ok: Option<Timestamp>,
    },
}

/// What to do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing.
    Hold,
    /// `SET GLOBAL super_read_only=ON` and read it back.
    Fence(FenceReason),
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// Milliseconds from `then` to `now` (negative when `then` is later).
fn age_ms(now: Timestamp, then: Timestamp) -> i64 {
    now.as_millisecond().saturating_sub(then.as_millisecond())
}

/// Whether `authority` is fresh at `now`: no older than the window, and not from further in
/// the future than the window either (a skewed clock must not make an observation eternal).
pub fn is_fresh(authority: &Authority, timings: &Timings, now: Timestamp) -> bool {
    let age = age_ms(now, authority.observed_at);
    let window = millis(timings.freshness);
    age <= window && age >= -window
}

impl PeerView {
    /// A sidecar that just started: nothing heard, nothing read, startup pending.
    pub fn new(site: impl Into<String>, peers: &[String], now: Timestamp) -> Self {
        Self {
            site: site.into(),
            started_at: now,
            operator_last_ok: None,
            peers: peers
                .iter()
                .map(|address| PeerLiveness { address: address.clone(), last_ok: None })
                .collect(),
            authority: None,
            server: ServerState::Unknown,
            writable_since: None,
            startup: Startup::Pending,
            read_once: false,
        }
    }

    /// The operator answered (any HTTP answer), with an observation when it had one.
    pub fn record_operator(
        &mut self,
        observation: Option<Authority>,
        timings: &Timings,
        now: Timestamp,
    ) {
        self.operator_last_ok = Some(now);
        if let Some(authority) = observation {
            self.hold(authority, Via::Operator, timings, now);
        }
    }

    /// A peer answered `/peer/ping` (and relayed an observation when it held a fresh one).
    pub fn record_peer(
        &mut self,
        address: &str,
        relayed: Option<Authority>,
        timings: &Timings,
        now: Timestamp,
    ) {
        if let Some(peer) = self.peers.iter_mut().find(|peer| peer.address == address) {
            peer.last_ok = Some(now);
        }
        if let Some(authority) = relayed {
            self.hold(authority, Via::Peer(address.to_owned()), timings, now);
        }
    }

    /// Keeps the newer observation (the operator's own answer replaces an equally dated one).
    fn hold(&mut self, authority: Authority, via: Via, timings: &Timings, now: Timestamp) {
        if !is_fresh(&authority, timings, now) {
            return;
        }
        let newer = match &self.authority {
            None => true,
            Some(held) => {
                authority.observed_at > held.authority.observed_at
                    || (authority.observed_at == held.authority.observed_at && via == Via::Operator)
            }
        };
        if newer {
            self.authority = Some(HeldAuthority { authority, via });
        }
        self.release_if_named(timings, now);
    }

    fn release_if_named(&mut self, timings: &Timings, now: Timestamp) {
        if self.startup == Startup::Pending
            && self.fresh_authority(timings, now).and_then(|held| held.active_site.as_deref())
                == Some(self.site.as_str())
        {
            self.startup = Startup::Released;
        }
    }

    /// The held observation if it is fresh at `now`.
    pub fn fresh_authority(&self, timings: &Timings, now: Timestamp) -> Option<&Authority> {
        self.authority
            .as_ref()
            .map(|held| &held.authority)
            .filter(|authority| is_fresh(authority, timings, now))
    }

    /// The server's flags were read (or could not be: [`ServerState::Unknown`]).
    ///
    /// A server that turns writable after this sidecar read it read-only was made writable by
    /// an account allowed to lift the fence: by contract the operator promoting or re-asserting
    /// it. That names the site active as surely as `/active-site` does, and releases the startup
    /// net (so a promotion racing the operator's published observation is not undone).
    pub fn record_server(&mut self, state: ServerState, now: Timestamp) {
        if state == ServerState::Unknown {
            self.server = state;
            return;
        }
        let was = self.server;
        if state == ServerState::Writable {
            if was != ServerState::Writable {
                self.writable_since = Some(now);
            }
            if self.read_once && matches!(was, ServerState::Fenced | ServerState::ReadOnly) {
                self.startup = Startup::Released;
            }
        } else {
            self.writable_since = None;
        }
        self.server = state;
        self.read_once = true;
    }

    /// The most recent answer of any peer.
    pub fn peer_last_ok(&self) -> Option<Timestamp> {
        self.peers.iter().filter_map(|peer| peer.last_ok).max()
    }
}

/// What to do now (see the module documentation).
pub fn decide(view: &PeerView, timings: &Timings, now: Timestamp) -> Action {
    match (view.startup, view.server) {
        (_, ServerState::Unknown | ServerState::Fenced) => Action::Hold,
        (Startup::Pending, ServerState::ReadOnly | ServerState::Writable) => {
            Action::Fence(FenceReason::StartupUnconfirmed)
        }
        (Startup::Released, ServerState::ReadOnly) => Action::Hold,
        (Startup::Released, ServerState::Writable) => writable(view, timings, now),
    }
}

fn writable(view: &PeerView, timings: &Timings, now: Timestamp) -> Action {
    let since = view.writable_since.unwrap_or(view.started_at).max(view.started_at);
    if let Some(authority) = view.fresh_authority(timings, now)
        && let Some(active) = authority.active_site.as_deref()
        && active != view.site
        && authority.observed_at > since
    {
        return Action::Fence(FenceReason::AuthorityNamesOther {
            active_site: active.to_owned(),
            observed_at: authority.observed_at,
        });
    }
    let lease = millis(timings.lease_timeout);
    let silent =
        |last: Option<Timestamp>| age_ms(now, last.map_or(since, |t| t.max(since))) > lease;
    let operator_silent = silent(view.operator_last_ok);
    let peers_silent = view.peers.iter().all(|peer| silent(peer.last_ok));
    if operator_silent && peers_silent {
        return Action::Fence(FenceReason::LeaseExpired {
            operator_last_ok: view.operator_last_ok,
            peer_last_ok: view.peer_last_ok(),
        });
    }
    Action::Hold
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
