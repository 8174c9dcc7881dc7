//! The peer-awareness loop: every `peerCheckInterval` it asks the operator for its active-site
//! observation, pings every peer (and takes the observation each relays), reads the server's
//! flags, folds it all into the [`PeerView`], and carries out [`decide`]'s answer. What it
//! knows is published in [`Published`] for the HTTP server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use jiff::Timestamp;
use serde::Serialize;
use tokio::sync::watch;
use tracing::{debug, error, info, warn};

use crate::decide::{
    Action, Authority, FenceReason, PeerView, ServerState, Startup, Timings, Via, decide,
};
use crate::http_get::{self, encode};
use crate::mysql::Server;

/// The loop's settings.
#[derive(Debug, Clone)]
pub struct MonitorConfig {
    /// This site.
    pub site: String,
    /// The group's namespace.
    pub namespace: String,
    /// The group.
    pub group: String,
    /// The operator's `host:port` (empty: none configured).
    pub operator: String,
    /// The peers' `host:port`.
    pub peers: Vec<String>,
    /// `spec.sidecar.peerCheckInterval`.
    pub interval: Duration,
    /// Lease and freshness.
    pub timings: Timings,
}

/// The last fence this sidecar sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FenceEvent {
    /// When `super_read_only=ON` read back.
    pub at: Timestamp,
    /// Why.
    #[serde(flatten)]
    pub reason: FenceReason,
}

/// One peer, as `/fence/status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerStatus {
    /// `host:port`.
    pub address: String,
    /// Its last answer.
    pub last_ok: Option<Timestamp>,
}

/// What the HTTP server shows (`/fence/status`, `/peer/active-site`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// This site.
    pub site: String,
    /// The startup safety net.
    pub startup: Startup,
    /// The server's flags as last read.
    pub server: ServerState,
    /// The operator's last answer.
    pub operator_last_ok: Option<Timestamp>,
    /// Every peer.
    pub peers: Vec<PeerStatus>,
    /// The newest operator observation held, fresh or not.
    pub authority: Option<Authority>,
    /// Whether that observation came from a peer (its address) rather than the operator.
    pub authority_via_peer: Option<String>,
    /// Fences sent by this sidecar, in order (the last 16).
    pub fences: Vec<FenceEvent>,
    /// The last error fencing or reading the server.
    pub last_error: Option<String>,
    /// When the loop last finished a check.
    pub checked_at: Option<Timestamp>,
}

/// Shared between the loop and the HTTP server.
pub type Published = Arc<Mutex<Snapshot>>;

impl Snapshot {
    fn of(
        view: &PeerView,
        fences: &[FenceEvent],
        last_error: Option<String>,
        now: Timestamp,
    ) -> Self {
        Self {
            site: view.site.clone(),
            startup: view.startup,
            server: view.server,
            operator_last_ok: view.operator_last_ok,
            peers: view
                .peers
                .iter()
                .map(|peer| PeerStatus { address: peer.address.clone(), last_ok: peer.last_ok })
                .collect(),
            authority: view.authority.as_ref().map(|held| held.authority.clone()),
            authority_via_peer: view.authority.as_ref().and_then(|held| match &held.via {
                Via::Operator => None,
                Via::Peer(address) => Some(address.clone()),
            }),
            fences: fences.to_vec(),
            last_error,
            checked_at: Some(now),
        }
    }
}

/// A snapshot before the first check.
pub fn initial(config: &MonitorConfig, now: Timestamp) -> Published {
    let view = PeerView::new(config.site.clone(), &config.peers, now);
    let mut snapshot = Snapshot::of(&view, &[], None, now);
    snapshot.checked_at = None;
    Arc::new(Mutex::new(snapshot))
}

/// The probes' bound: the interval, within 0.5–2 s.
fn probe_bound(interval: Duration) -> Duration {
    interval.clamp(Duration::from_millis(500), Duration::from_secs(2))
}

/// The operator's `/active-site` answer: `Ok(None)` when it answered without an observation.
async fn ask_operator(
    config: &MonitorConfig,
    bound: Duration,
) -> Result<Option<Authority>, String> {
    let path = format!(
        "/active-site?namespace={}&group={}",
        encode(&config.namespace),
        encode(&config.group)
    );
    let reply = http_get::get(&config.operator, &path, bound).await.map_err(|e| e.to_string())?;
    if reply.status != 200 {
        debug!(status = reply.status, body = %reply.body, "operator has no active-site observation");
        return Ok(None);
    }
    serde_json::from_str::<Authority>(&reply.body)
        .map(Some)
        .map_err(|e| format!("operator /active-site answer is not an observation: {e}"))
}

/// A peer's ping, then its relayed observation: `Err` when it did not answer the ping.
async fn ask_peer(address: &str, bound: Duration) -> Result<Option<Authority>, String> {
    let ping = http_get::get(address, "/peer/ping", bound).await.map_err(|e| e.to_string())?;
    if ping.status != 200 {
        return Err(format!("peer {address} answered /peer/ping with {}", ping.status));
    }
    match http_get::get(address, "/peer/active-site", bound).await {
        Ok(reply) if reply.status == 200 => Ok(serde_json::from_str::<Authority>(&reply.body).ok()),
        _ => Ok(None),
    }
}

/// Runs until `stop` turns true.
pub async fn run(
    config: MonitorConfig,
    server: Server,
    published: Published,
    mut stop: watch::Receiver<bool>,
) {
    let timings = config.timings;
    let bound = probe_bound(config.interval);
    let mut view = PeerView::new(config.site.clone(), &config.peers, Timestamp::now());
    let mut fences: Vec<FenceEvent> = Vec::new();
    info!(site = %config.site, peers = ?config.peers, operator = %config.operator,
          lease = ?timings.lease_timeout, interval = ?config.interval, "peer awareness started");
    loop {
        let started = tokio::time::Instant::now();
        let operator = async {
            if config.operator.is_empty() {
                Err("no operator address configured".to_owned())
            } else {
                ask_operator(&config, bound).await
            }
        };
        let peers = join_all(config.peers.iter().map(|address| ask_peer(address, bound)));
        let (operator, peers) = tokio::join!(operator, peers);
        let now = Timestamp::now();
        match operator {
            Ok(observation) => view.record_operator(observation, &timings, now),
            Err(error) => debug!(%error, "operator unreachable"),
        }
        for (address, answer) in config.peers.iter().zip(peers) {
            match answer {
                Ok(relayed) => view.record_peer(address, relayed, &timings, now),
                Err(error) => debug!(peer = %address, %error, "peer unreachable"),
            }
        }
        let mut last_error = None;
        let read = server.state().await;
        let now = Timestamp::now();
        match read {
            Ok(state) => view.record_server(state, now),
            Err(error) => {
                warn!(%error, "cannot read the server's read_only flags");
                view.record_server(ServerState::Unknown, now);
                last_error = Some(error.to_string());
            }
        }
        if let Action::Fence(reason) = decide(&view, &timings, now) {
            error!(site = %config.site, ?reason, operator_last_ok = ?view.operator_last_ok,
                   peer_last_ok = ?view.peer_last_ok(), "self-fencing: SET GLOBAL super_read_only=ON");
            match server.fence().await {
                Ok(()) => {
                    let at = Timestamp::now();
                    view.record_server(ServerState::Fenced, at);
                    fences.push(FenceEvent { at, reason });
                    if fences.len() > 16 {
                        fences.remove(0);
                    }
                    error!(site = %config.site, "self-fenced: super_read_only=ON reads back; only the operator lifts it");
                }
                Err(error) => {
                    error!(%error, "self-fencing failed; retrying on the next check");
                    last_error = Some(error.to_string());
                }
            }
        }
        let now = Timestamp::now();
        if let Ok(mut snapshot) = published.lock() {
            *snapshot = Snapshot::of(&view, &fences, last_error, now);
        }
        let next = started + config.interval;
        tokio::select! {
            () = tokio::time::sleep_until(next) => {}
            _ = stop.wait_for(|stopped| *stopped) => break,
        }
    }
    info!(site = %config.site, "peer awareness stopped");
}
