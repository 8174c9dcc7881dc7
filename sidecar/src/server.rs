//! The sidecar's HTTP server (`:8080`): `/health` (MySQL only), `/peer/ping`,
//! `/peer/active-site`, `/fence/status` and `/archiver/status`. No credentials, no writes:
//! every route is a GET that reads.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use jiff::Timestamp;
use tokio::sync::watch;

use crate::decide::{Timings, is_fresh};
use crate::monitor::Published;
use crate::mysql::Server;

/// What the archiver publishes for `/archiver/status` (its status, serialized). The archiver
/// module owns the value; this server only relays it.
pub type ArchiverStatusSource = watch::Receiver<Option<serde_json::Value>>;

/// What the handlers read.
#[derive(Clone, Debug)]
pub struct HttpState {
    /// The local server (for `/health`).
    pub server: Server,
    /// The peer-awareness loop's snapshot.
    pub published: Published,
    /// The freshness window for relaying observations.
    pub timings: Timings,
    /// The archiver's status, when an archiver runs in this sidecar.
    pub archiver: Option<ArchiverStatusSource>,
}

async fn health(State(state): State<HttpState>) -> Response {
    match state.server.ping().await {
        Ok(()) => "ok".into_response(),
        Err(error) => {
            (StatusCode::SERVICE_UNAVAILABLE, format!("mysql is not answering: {error}\n"))
                .into_response()
        }
    }
}

async fn ping() -> &'static str {
    "pong"
}

/// The newest operator observation this sidecar holds, when it is still fresh; 204 otherwise.
async fn active_site(State(state): State<HttpState>) -> Response {
    let held = state.published.lock().ok().and_then(|snapshot| snapshot.authority.clone());
    match held {
        Some(authority) if is_fresh(&authority, &state.timings, Timestamp::now()) => {
            Json(authority).into_response()
        }
        _ => StatusCode::NO_CONTENT.into_response(),
    }
}

async fn fence_status(State(state): State<HttpState>) -> Response {
    match state.published.lock() {
        Ok(snapshot) => Json(snapshot.clone()).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "state lock poisoned").into_response(),
    }
}

async fn archiver_status(State(state): State<HttpState>) -> Response {
    let value = state.archiver.as_ref().map(|source| source.borrow().clone());
    match value {
        Some(Some(status)) => Json(status).into_response(),
        Some(None) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the archiver has not reported its first status yet; retry in a few seconds\n",
        )
            .into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            "no binlog archiver runs in this sidecar build; /archiver/status is unavailable\n",
        )
            .into_response(),
    }
}

/// The router.
pub fn router(state: HttpState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/peer/ping", get(ping))
        .route("/peer/active-site", get(active_site))
        .route("/fence/status", get(fence_status))
        .route("/archiver/status", get(archiver_status))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tower::ServiceExt;

    use super::*;
    use crate::decide::Authority;
    use crate::monitor::{MonitorConfig, initial};
    use crate::mysql::MysqlTarget;

    fn state(archiver: Option<ArchiverStatusSource>) -> HttpState {
        let config = MonitorConfig {
            site: "iad".to_owned(),
            namespace: "orders".to_owned(),
            group: "orders".to_owned(),
            operator: String::new(),
            peers: vec![],
            interval: Duration::from_secs(1),
            timings: Timings {
                lease_timeout: Duration::from_secs(3),
                freshness: Duration::from_secs(6),
            },
        };
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let target = MysqlTarget {
            host: "127.0.0.1".to_owned(),
            port: closed.port(),
            user: "nobody".to_owned(),
            password: String::new(),
        };
        HttpState {
            server: Server::new(&target, Duration::from_millis(500)),
            published: initial(&config, Timestamp::now()),
            timings: config.timings,
            archiver,
        }
    }

    async fn get_path(state: HttpState, path: &str) -> (StatusCode, String) {
        let request = axum::http::Request::get(path).body(axum::body::Body::empty()).unwrap();
        let response = router(state).oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn routes_answer_without_credentials() {
        let state = state(None);
        assert_eq!(
            get_path(state.clone(), "/peer/ping").await,
            (StatusCode::OK, "pong".to_owned())
        );
        let (status, body) = get_path(state.clone(), "/health").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.contains("mysql is not answering"), "{body}");
        let (status, body) = get_path(state.clone(), "/archiver/status").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.contains("no binlog archiver"), "{body}");
        let (status, body) = get_path(state.clone(), "/fence/status").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("\"startup\":\"Pending\""), "{body}");
    }

    #[tokio::test]
    async fn the_relay_serves_only_a_fresh_observation() {
        let state = state(None);
        assert_eq!(get_path(state.clone(), "/peer/active-site").await.0, StatusCode::NO_CONTENT);
        let fresh = Authority {
            active_site: Some("pdx".to_owned()),
            observed_at: Timestamp::now(),
            topology_generation: 3,
        };
        state.published.lock().unwrap().authority = Some(fresh.clone());
        let (status, body) = get_path(state.clone(), "/peer/active-site").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(serde_json::from_str::<Authority>(&body).unwrap(), fresh);
        let stale = Authority {
            observed_at: Timestamp::now() - jiff::SignedDuration::from_secs(60),
            ..fresh
        };
        state.published.lock().unwrap().authority = Some(stale);
        assert_eq!(get_path(state.clone(), "/peer/active-site").await.0, StatusCode::NO_CONTENT);
    }

    #[tokio::test]
    async fn the_archiver_status_is_relayed_when_an_archiver_reports() {
        let (sender, receiver) = watch::channel(None);
        let state = state(Some(receiver));
        assert_eq!(
            get_path(state.clone(), "/archiver/status").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        sender.send_replace(Some(serde_json::json!({ "enabled": true, "primary": false })));
        let (status, body) = get_path(state, "/archiver/status").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("\"enabled\":true"), "{body}");
    }
}
