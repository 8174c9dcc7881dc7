//! S3-store specifics against a real SeaweedFS: credentials, missing buckets, unreachable
//! endpoints, and the harness itself.

use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bloodraven_store::testing::{HarnessError, SeaweedFs};
use bloodraven_store::{
    Denial, ErrorKind, ObjectStore, RetryPolicy, S3Config, S3Credentials, S3Store, list_all,
    retry_transient,
};

use crate::bounded;

/// Starts a server, failing (never skipping) with the harness's message when `weed` is
/// missing.
pub(crate) fn server() -> SeaweedFs {
    SeaweedFs::start().unwrap_or_else(|error| panic!("{error}"))
}

pub(crate) async fn store(server: &SeaweedFs, bucket: &str, prefix: &str) -> S3Store {
    server.bucket_store(bucket, prefix).await.unwrap_or_else(|error| panic!("{error}"))
}

fn with_secret(server: &SeaweedFs, bucket: &str, access_key_id: &str, secret: &str) -> S3Config {
    let mut config = server.config(bucket, "");
    config.credentials = S3Credentials::Static {
        access_key_id: access_key_id.to_owned(),
        secret_access_key: secret.to_owned(),
        session_token: None,
    };
    config
}

fn assert_denied_403(error: &bloodraven_store::Error, code: &str) {
    assert_eq!(error.kind(), ErrorKind::PermissionDenied, "{error}");
    match error.denial() {
        Some(Denial::S3 { status: 403, code: Some(found), .. }) => {
            assert_eq!(found, code, "{error}")
        }
        other => panic!("expected an S3 403 denial, got {other:?}: {error}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_credentials_are_permission_denied() {
    let server = server();
    bounded(async {
        let good = store(&server, "locked", "").await;
        good.put("binlogs/archive.json", b"{}".to_vec()).await.unwrap();

        let wrong_secret =
            S3Store::connect(with_secret(&server, "locked", "bloodraventest", "wrong"))
                .await
                .unwrap();
        let error = wrong_secret.list("binlogs/", None, 10).await.unwrap_err();
        assert_denied_403(&error, "SignatureDoesNotMatch");
        assert!(
            error.to_string().contains("permission denied: S3 403 SignatureDoesNotMatch"),
            "{error}"
        );
        assert!(!error.is_transient());
        let error = wrong_secret.get("binlogs/archive.json").await.unwrap_err();
        assert_denied_403(&error, "SignatureDoesNotMatch");
        let error = wrong_secret.put("binlogs/x", vec![1]).await.unwrap_err();
        assert_denied_403(&error, "SignatureDoesNotMatch");
        let error = wrong_secret.create("binlogs/y", vec![1]).await.unwrap_err();
        assert_denied_403(&error, "SignatureDoesNotMatch");

        let unknown_key =
            S3Store::connect(with_secret(&server, "locked", "nobody", "whatever")).await.unwrap();
        let error = unknown_key.list("", None, 10).await.unwrap_err();
        assert_denied_403(&error, "InvalidAccessKeyId");

        // Nothing was written by the refused requests.
        let keys: Vec<_> = list_all(&good, "").await.unwrap().into_iter().map(|o| o.key).collect();
        assert_eq!(keys, ["binlogs/archive.json"]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_bucket_is_a_configuration_error_even_for_delete() {
    let server = server();
    bounded(async {
        let _existing = store(&server, "exists", "").await;
        let missing = S3Store::connect(server.config("no-such-bucket", "p")).await.unwrap();
        let error = missing.list("", None, 10).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidConfig, "{error}");
        assert!(
            error.to_string().contains("the bucket does not exist: S3 404 NoSuchBucket"),
            "{error}"
        );
        for error in [
            missing.get("k").await.unwrap_err(),
            missing.put("k", vec![1]).await.unwrap_err(),
            missing.create("k", vec![1]).await.unwrap_err(),
            missing.delete("k").await.unwrap_err(),
        ] {
            assert_eq!(error.kind(), ErrorKind::InvalidConfig, "{error}");
        }
        // HEAD responses have no body, so no error code: a missing bucket looks like a
        // missing object there.
        assert_eq!(missing.head("k").await.unwrap_err().kind(), ErrorKind::NotFound);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_without_a_root_prefix_and_with_one_see_the_same_keys() {
    let server = server();
    bounded(async {
        let rooted = store(&server, "shared", "/prod//binlogs/").await;
        let bare = store(&server, "shared", "").await;
        rooted.put("iad/mysql-bin.000001.aa", b"1".to_vec()).await.unwrap();
        rooted.put("archive.json", b"{}".to_vec()).await.unwrap();
        bare.put("elsewhere/x", b"x".to_vec()).await.unwrap();
        let keys = |objects: Vec<bloodraven_store::ObjectMeta>| {
            objects.into_iter().map(|object| object.key).collect::<Vec<_>>()
        };
        assert_eq!(
            keys(list_all(&rooted, "").await.unwrap()),
            ["archive.json", "iad/mysql-bin.000001.aa"]
        );
        assert_eq!(
            keys(list_all(&bare, "").await.unwrap()),
            ["elsewhere/x", "prod/binlogs/archive.json", "prod/binlogs/iad/mysql-bin.000001.aa"]
        );
        assert_eq!(bare.get("prod/binlogs/archive.json").await.unwrap().bytes, b"{}");
        assert!(
            rooted.describe().starts_with("s3://shared/prod/binlogs?endpoint=http://127.0.0.1:")
        );
    })
    .await;
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn an_unreachable_endpoint_is_transient_and_retried_a_bounded_number_of_times() {
    bounded(async {
        let credentials = S3Credentials::Static {
            access_key_id: "a".into(),
            secret_access_key: "b".into(),
            session_token: None,
        };
        let mut config = S3Config::new("bucket", "", credentials)
            .with_endpoint(format!("http://127.0.0.1:{}", closed_port()))
            .with_region("us-east-1");
        config.connect_timeout = Duration::from_secs(2);
        let store = S3Store::connect(config).await.unwrap();
        let error = store.get("k").await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Transient, "{error}");

        let attempts = AtomicU32::new(0);
        let policy = RetryPolicy {
            attempts: 3,
            first_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(20),
        };
        let result = retry_transient(policy, || {
            attempts.fetch_add(1, Ordering::SeqCst);
            store.list("", None, 10)
        })
        .await;
        assert_eq!(result.unwrap_err().kind(), ErrorKind::Transient);
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_run_side_by_side_and_clean_up() {
    let first = server();
    let second = server();
    assert_ne!(first.endpoint(), second.endpoint());
    let dirs = [first.dir().to_owned(), second.dir().to_owned()];
    bounded(async {
        let a = store(&first, "one", "").await;
        let b = store(&second, "one", "").await;
        a.put("k", b"first".to_vec()).await.unwrap();
        b.put("k", b"second".to_vec()).await.unwrap();
        assert_eq!(a.get("k").await.unwrap().bytes, b"first");
        assert_eq!(b.get("k").await.unwrap().bytes, b"second");
    })
    .await;
    let sockets: Vec<_> =
        first.grpc_sockets().iter().chain(second.grpc_sockets()).cloned().collect();
    assert_eq!(sockets.len(), 10);
    assert!(sockets.iter().all(|socket| socket.exists()), "{sockets:?}");
    drop(first);
    drop(second);
    for dir in dirs {
        assert!(!dir.exists(), "{} removed", dir.display());
    }
    for socket in sockets {
        assert!(!socket.exists(), "{} removed", socket.display());
    }
}

#[test]
fn a_missing_weed_names_the_setup_command() {
    let message =
        HarnessError::WeedMissing { venv: "target/tools/venv/bin/weed".into() }.to_string();
    assert!(message.contains("scripts/test.sh"), "{message}");
    assert!(message.contains("BLOODRAVEN_WEED"), "{message}");
}

/// Set in the child process of `environment_credentials_are_used`.
const ENV_CHILD: &str = "BLOODRAVEN_STORE_TEST_ENV_CHILD_ENDPOINT";

/// `S3Credentials::Environment` reads the SDK's chain. The process environment cannot be
/// changed in a test (set_var races), so the test re-runs itself as a child process with
/// `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` set and shared config files and IMDS disabled;
/// the child writes an object with environment credentials and the parent reads it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_credentials_are_used() {
    if let Ok(endpoint) = std::env::var(ENV_CHILD) {
        let config =
            S3Config::new("envbucket", "", S3Credentials::Environment).with_endpoint(endpoint);
        let store = S3Store::connect(config).await.unwrap();
        bounded(store.put("written-by-child", b"environment".to_vec())).await.unwrap();
        return;
    }
    let server = server();
    let store = store(&server, "envbucket", "").await;
    let empty = tempfile::NamedTempFile::new().unwrap();
    let run_child = |secret: &str, region: Option<&str>| {
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        match region {
            Some(region) => command.env("AWS_REGION", region),
            // No region anywhere: the store falls back to us-east-1.
            None => command.env_remove("AWS_REGION").env_remove("AWS_DEFAULT_REGION"),
        };
        command
            .args(["--exact", "s3::environment_credentials_are_used", "--nocapture"])
            .env(ENV_CHILD, server.endpoint())
            .env("AWS_ACCESS_KEY_ID", bloodraven_store::testing::ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_CONFIG_FILE", empty.path())
            .env("AWS_SHARED_CREDENTIALS_FILE", empty.path())
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE")
            .output()
            .unwrap()
    };
    let wrong = run_child("not-the-secret", Some("us-east-1"));
    assert!(!wrong.status.success(), "a wrong secret in the environment must fail");
    assert_eq!(store.get("written-by-child").await.unwrap_err().kind(), ErrorKind::NotFound);
    for region in [Some("us-east-1"), None] {
        let output = run_child(bloodraven_store::testing::SECRET_KEY, region);
        assert!(
            output.status.success(),
            "child (region {region:?}) failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let object = bounded(store.get("written-by-child")).await.unwrap();
        assert_eq!(object.bytes, b"environment");
        store.delete("written-by-child").await.unwrap();
    }
}
