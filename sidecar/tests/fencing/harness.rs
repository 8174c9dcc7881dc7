//! The drill's parts: a real mysqld, the fault proxy, a stand-in for the operator's
//! `/active-site` (its documented contract: `{activeSite, observedAt, topologyGeneration}`),
//! and sidecar processes (the built binary, so a drill can SIGKILL it).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bloodraven_sidecar::http_get;
use bloodraven_sites::accounts::SIDECAR;
use bloodraven_sites::mysqld::{Instance, InstanceSpec, MysqlDist};
use bloodraven_sites::template::ensure_template_async;
use serde_json::Value;
use tokio::process::{Child, Command};

pub(crate) const READY: Duration = Duration::from_secs(120);

/// Lease and check interval of the drills (scaled down from 20 s / 5 s).
pub(crate) const LEASE: &str = "3s";
pub(crate) const INTERVAL: &str = "300ms";

pub(crate) async fn mysqld(name: &str, server_id: u32, extra: &[(&str, &str)]) -> Instance {
    let dist = MysqlDist::from_env()
        .unwrap_or_else(|e| panic!("{e} (run `source scripts/provision.sh` before these tests)"));
    let template = ensure_template_async(&dist).await.expect("the template data directory");
    let mut spec = InstanceSpec::new(name, server_id);
    spec.extra_options =
        extra.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect();
    let mut instance = Instance::create(&dist, &template, spec).await.expect("an instance");
    instance.start_and_wait(READY).await.expect("mysqld ready");
    instance
}

/// What the stand-in operator names active (`None`: nothing).
#[derive(Clone, Default)]
pub(crate) struct FakeOperator {
    pub(crate) active: Arc<Mutex<Option<String>>>,
    pub(crate) addr: Option<SocketAddr>,
    task: Option<Arc<tokio::task::JoinHandle<()>>>,
}

async fn active_site(State(active): State<Arc<Mutex<Option<String>>>>) -> Response {
    let active = active.lock().unwrap().clone();
    axum::Json(serde_json::json!({
        "activeSite": active,
        "observedAt": jiff::Timestamp::now().to_string(),
        "topologyGeneration": 1,
    }))
    .into_response()
}

impl FakeOperator {
    pub(crate) async fn start(active: Option<&str>) -> Self {
        let active = Arc::new(Mutex::new(active.map(str::to_owned)));
        let router =
            Router::new().route("/active-site", get(active_site)).with_state(active.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Self { active, addr: Some(addr), task: Some(Arc::new(task)) }
    }

    pub(crate) fn name(&self, site: Option<&str>) {
        *self.active.lock().unwrap() = site.map(str::to_owned);
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr.unwrap()
    }
}

impl Drop for FakeOperator {
    fn drop(&mut self) {
        if let Some(task) = self.task.take()
            && Arc::strong_count(&task) == 1
        {
            task.abort();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A sidecar process (killed on drop; its log kept in a temp folder for failure reports).
pub(crate) struct Sidecar {
    pub(crate) site: String,
    pub(crate) addr: SocketAddr,
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

pub(crate) struct SidecarSpec<'a> {
    pub(crate) site: &'a str,
    pub(crate) operator: String,
    pub(crate) peers: Vec<String>,
    pub(crate) mysql_port: u16,
}

impl Sidecar {
    pub(crate) async fn start(spec: SidecarSpec<'_>) -> Self {
        let dir = tempfile::Builder::new().prefix("brsidecar-").tempdir().unwrap();
        let log = dir.path().join("sidecar.log");
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_bloodraven-sidecar"))
            .env_clear()
            .env("BLOODRAVEN_SITE", spec.site)
            .env("BLOODRAVEN_GROUP", "orders")
            .env("POD_NAMESPACE", "orders")
            .env("BLOODRAVEN_ADDRESS", &spec.operator)
            .env("PEER_ADDRESSES", spec.peers.join(","))
            .env("LEASE_TIMEOUT", LEASE)
            .env("PEER_CHECK_INTERVAL", INTERVAL)
            .env("ACTIVE_SITE_FRESHNESS", "3s")
            .env("MYSQL_HOST", "127.0.0.1")
            .env("MYSQL_PORT", spec.mysql_port.to_string())
            .env("MYSQL_USER", SIDECAR.user)
            .env("MYSQL_PASSWORD", SIDECAR.password)
            .env("SIDECAR_LISTEN", addr.to_string())
            .env("RUST_LOG", "info,bloodraven_sidecar=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .kill_on_drop(true)
            .spawn()
            .expect("the sidecar binary starts");
        let mut sidecar = Self { site: spec.site.to_owned(), addr, child, log, _dir: dir };
        sidecar.wait_serving().await;
        sidecar
    }

    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    async fn wait_serving(&mut self) {
        let started = Instant::now();
        loop {
            if let Ok(reply) = self.get("/peer/ping").await
                && reply.0 == 200
            {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("sidecar {} exited with {status}:\n{}", self.site, self.log_tail());
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "sidecar {} did not answer /peer/ping at {} within 30 s:\n{}",
                self.site,
                self.addr,
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) async fn get(&self, path: &str) -> Result<(u16, String), String> {
        http_get::get(&self.addr.to_string(), path, Duration::from_secs(2))
            .await
            .map(|reply| (reply.status, reply.body))
            .map_err(|e| e.to_string())
    }

    pub(crate) async fn status_json(&self) -> Value {
        let (_, body) = self.get("/fence/status").await.unwrap();
        serde_json::from_str(&body).unwrap()
    }

    /// Polls `/fence/status` until `done` holds (bounded; says what it last saw).
    pub(crate) async fn wait_status(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let started = Instant::now();
        let mut last = Value::Null;
        while started.elapsed() < timeout {
            if let Ok((200, body)) = self.get("/fence/status").await {
                last = serde_json::from_str(&body).unwrap();
                if done(&last) {
                    return last;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "waited {timeout:?} for sidecar {} to report {what}; last /fence/status: {last:#}\nlog:\n{}",
            self.site,
            self.log_tail()
        );
    }

    /// SIGKILL.
    pub(crate) async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }
}
