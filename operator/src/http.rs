//! The operator's HTTP server for sidecars and tools (upstream's port 8082): `/healthz`,
//! `/readyz`, `/metrics`, `/status`, `/active-site?namespace=&group=` and
//! `/pitr-cutoff?namespace=&group=&archive=&coverage=gtid-v1` (the archivers' retention proof,
//! [`crate::pitr_cutoff`]).
//!
//! `/active-site` answers what this operator process last observed: the active site, the time
//! of the observation behind it and a topology generation that grows whenever the active site
//! changes. The answer is authoritative only while fresh: a sidecar relaying it to peers must
//! treat it as stale when `observedAt` is older than `3 × pollInterval` (6 s at the default
//! 2 s), the same window after which the topology manager itself calls a reading stale.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use crate::manager::{GroupKey, Published};
use crate::metrics::Metrics;
use crate::pitr_archive::PitrRegistry;
use crate::pitr_cutoff::{self, Backups, CutoffAnswer, CutoffQuery};

/// What the handlers read.
#[derive(Clone, Debug, Default)]
pub struct HttpState {
    /// The managers' latest observations.
    pub published: Published,
    /// Set once the controller runs (this replica holds the leader Lease).
    pub ready: Arc<AtomicBool>,
    /// The Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// The groups' PITR renders and backups (`/pitr-cutoff`).
    pub pitr: PitrRegistry,
}

/// `/active-site`'s query.
#[derive(Debug, serde::Deserialize)]
pub struct ActiveSiteQuery {
    /// The group's namespace.
    pub namespace: String,
    /// The group's name.
    pub group: String,
}

async fn metrics(State(state): State<HttpState>) -> Response {
    (
        [("content-type", "application/openmetrics-text; version=1.0.0; charset=utf-8")],
        state.metrics.render(),
    )
        .into_response()
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(state): State<HttpState>) -> Response {
    if state.ready.load(Ordering::Relaxed) {
        "ok".into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "the controller is not running yet").into_response()
    }
}

async fn status(State(state): State<HttpState>) -> Response {
    let Ok(published) = state.published.lock() else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "state lock poisoned").into_response();
    };
    let groups: Vec<serde_json::Value> = published
        .iter()
        .map(|(key, snapshot)| {
            serde_json::json!({ "namespace": key.namespace, "group": key.name, "snapshot": snapshot })
        })
        .collect();
    Json(serde_json::json!({ "groups": groups })).into_response()
}

async fn active_site(
    State(state): State<HttpState>,
    Query(query): Query<ActiveSiteQuery>,
) -> Response {
    let key = GroupKey { namespace: query.namespace, name: query.group };
    let snapshot = state.published.lock().ok().and_then(|published| published.get(&key).cloned());
    match snapshot {
        Some(snapshot) => Json(snapshot).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            format!(
                "group {}/{} is not managed by this operator (or not polled yet)",
                key.namespace, key.name
            ),
        )
            .into_response(),
    }
}

async fn pitr_cutoff(State(state): State<HttpState>, Query(query): Query<CutoffQuery>) -> Response {
    let key = GroupKey {
        namespace: query.namespace.clone().unwrap_or_default(),
        name: query.group.clone().unwrap_or_default(),
    };
    let entry = state.pitr.group(&key);
    let backups = state.pitr.backups(&key);
    let backups = backups.as_deref().map_or(Backups::Unknown, Backups::Known);
    match pitr_cutoff::answer(&query, entry.as_ref().map(|entry| &entry.render), backups) {
        CutoffAnswer::BadRequest(why) => (StatusCode::BAD_REQUEST, why).into_response(),
        CutoffAnswer::NotFound(why) => (StatusCode::NOT_FOUND, why).into_response(),
        CutoffAnswer::Body(body) => Json(body).into_response(),
    }
}

/// The routes.
pub fn router(state: HttpState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/status", get(status))
        .route("/active-site", get(active_site))
        .route("/pitr-cutoff", get(pitr_cutoff))
        .route("/metrics", get(metrics))
        .with_state(state)
}

/// Serves the routes on `addr` until the task is dropped.
///
/// # Errors
/// When the address cannot be bound or the server fails.
pub async fn serve(addr: SocketAddr, state: HttpState) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "HTTP server listening");
    axum::serve(listener, router(state)).await
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    use super::*;
    use crate::manager::ActiveSnapshot;

    async fn get_text(state: HttpState, uri: &str) -> (StatusCode, String) {
        let response =
            router(state).oneshot(Request::get(uri).body(Body::empty()).unwrap()).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn active_site_answers_the_published_snapshot_or_404() {
        let state = HttpState::default();
        let key = GroupKey { namespace: "orders".to_owned(), name: "orders".to_owned() };
        state.published.lock().unwrap().insert(
            key,
            ActiveSnapshot {
                active_site: Some("pdx".to_owned()),
                observed_at: "2026-11-30T17:00:00Z".parse().unwrap(),
                topology_generation: 2,
            },
        );
        let (status, body) =
            get_text(state.clone(), "/active-site?namespace=orders&group=orders").await;
        assert_eq!(status, StatusCode::OK);
        let body: BTreeMap<String, serde_json::Value> = serde_json::from_str(&body).unwrap();
        assert_eq!(body["activeSite"], "pdx");
        assert_eq!(body["observedAt"], "2026-11-30T17:00:00Z");
        assert_eq!(body["topologyGeneration"], 2);
        let (status, body) =
            get_text(state.clone(), "/active-site?namespace=orders&group=other").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(body.contains("orders/other"), "{body}");
        let (status, _) = get_text(state.clone(), "/active-site?namespace=orders").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
    }

    #[tokio::test]
    async fn readyz_follows_the_controller() {
        let state = HttpState::default();
        assert_eq!(get_text(state.clone(), "/healthz").await.0, StatusCode::OK);
        assert_eq!(get_text(state.clone(), "/readyz").await.0, StatusCode::SERVICE_UNAVAILABLE);
        state.ready.store(true, Ordering::Relaxed);
        assert_eq!(get_text(state, "/readyz").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn pitr_cutoff_checks_the_archive_and_defers_without_backups() {
        let group =
            bloodraven_crd::fixtures::GroupFixture::three_sites().with_s3_profile("nightly");
        let mut group = group.build();
        group.spec.backup.as_mut().unwrap().pitr = Some(bloodraven_crd::group::PitrSpec {
            enabled: Some(true),
            profile_name: Some("nightly".to_owned()),
            ..Default::default()
        });
        let render = bloodraven_workloads::pitr::render(&group).unwrap().unwrap();
        let archive = render.archive_id.to_string();
        let state = HttpState::default();
        let key = GroupKey { namespace: "orders".to_owned(), name: "orders".to_owned() };
        state.pitr.set_group(
            &key,
            Some(crate::pitr_archive::GroupPitr { render, sites: vec!["iad".to_owned()] }),
        );
        let path = |archive: &str| {
            format!("/pitr-cutoff?namespace=orders&group=orders&archive={archive}&coverage=gtid-v1")
        };
        // The backup watch has not listed yet: no cutoff.
        let (status, body) = get_text(state.clone(), &path(&archive)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body.contains("backupsUnknown"), "{body}");
        // Listed, none: the document's noRetainedBackups, the archive echoed.
        state.pitr.set_backups(Vec::new());
        let (status, body) = get_text(state.clone(), &path(&archive)).await;
        assert_eq!(status, StatusCode::OK);
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["retentionDeferredReason"], "noRetainedBackups");
        assert_eq!(body["archive"], archive.as_str());
        let (status, _) = get_text(state.clone(), &path("ar1-aaaaaaaaaaaaaaaaaaaaaaaaaa")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, body) =
            get_text(state.clone(), "/pitr-cutoff?namespace=orders&group=orders&profile=nightly")
                .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body.contains("profile="), "{body}");
    }
}
