//! The whole app, scripted, against the lab API server.

use std::time::Duration;

use bloodraven_console::lab::RunningLab;
use bloodraven_console::tui::app::{Options, run};
use bloodraven_console::tui::state::Scope;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use serde_json::json;
use tokio::sync::watch;

fn text(buffer: &Buffer) -> String {
    let width = usize::from(buffer.area.width);
    buffer
        .content()
        .chunks(width.max(1))
        .map(|row| row.iter().map(|cell| cell.symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn frame_with(frames: &mut watch::Receiver<String>, needle: &str) -> String {
    let outcome = {
        let wait = frames.wait_for(|frame| frame.contains(needle));
        match tokio::time::timeout(Duration::from_secs(20), wait).await {
            Ok(Ok(frame)) => Ok(frame.clone()),
            Ok(Err(_)) => Err("the app ended first"),
            Err(_) => Err("20 s passed"),
        }
    };
    outcome.unwrap_or_else(|why| {
        panic!("no frame showed {needle:?} ({why}); last frame:\n{}", *frames.borrow())
    })
}

/// Every file under `root` with its length and modification time.
fn tree(root: &std::path::Path) -> Vec<(String, (u64, std::time::SystemTime))> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let entry = entry.unwrap();
            let metadata = entry.metadata().unwrap();
            if metadata.is_dir() {
                pending.push(entry.path());
            } else {
                let path = entry.path().strip_prefix(root).unwrap().display().to_string();
                files.push((path, (metadata.len(), metadata.modified().unwrap())));
            }
        }
    }
    files.sort();
    files
}

/// Stores the profile Secret `orders/archive-keys` with S3 keys in the lab.
fn apply_archive_keys(running: &RunningLab, access_key: &str, secret_key: &str) {
    let bytes = |text: &str| k8s_openapi::ByteString(text.as_bytes().to_vec());
    let secret = k8s_openapi::api::core::v1::Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("archive-keys".to_owned()),
            namespace: Some("orders".to_owned()),
            ..Default::default()
        },
        data: Some(
            [
                ("AWS_ACCESS_KEY_ID".to_owned(), bytes(access_key)),
                ("AWS_SECRET_ACCESS_KEY".to_owned(), bytes(secret_key)),
            ]
            .into(),
        ),
        ..Default::default()
    };
    let mut object = serde_json::to_value(&secret).unwrap();
    object["apiVersion"] = json!("v1");
    object["kind"] = json!("Secret");
    running.lab.apply(object).unwrap();
}

fn key(code: KeyCode) -> std::io::Result<Event> {
    Ok(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

type Keys = futures::channel::mpsc::UnboundedSender<std::io::Result<Event>>;

/// Types `:<line>` and enter.
fn command(keys: &Keys, line: &str) {
    keys.unbounded_send(key(KeyCode::Char(':'))).unwrap();
    for c in line.chars() {
        keys.unbounded_send(key(KeyCode::Char(c))).unwrap();
    }
    keys.unbounded_send(key(KeyCode::Enter)).unwrap();
}

/// Starts the console on `client` with every frame sent to the returned receiver and kept,
/// in order, in the returned log.
#[allow(clippy::type_complexity, reason = "a test helper's tuple of handles")]
fn start_app(
    client: kube::Client,
    options: Options,
) -> (
    Keys,
    watch::Receiver<String>,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    tokio::task::JoinHandle<anyhow::Result<()>>,
) {
    let (keys, input) = futures::channel::mpsc::unbounded::<std::io::Result<Event>>();
    let (frames_sender, frames) = watch::channel(String::new());
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = log.clone();
    let app = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
        run(
            &mut terminal,
            client,
            options,
            input,
            move |buffer| {
                let frame = text(buffer);
                kept.lock().unwrap().push(frame.clone());
                frames_sender.send_replace(frame);
            },
            std::future::pending(),
        )
        .await
    });
    (keys, frames, log, app)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_event_changes_the_frame_and_no_write_is_sent() {
    crate::install_crypto();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    let (client, connection) =
        bloodraven_console::client::connect(Some(&running.kubeconfig()), None).await.unwrap();
    let lab_context = connection.context.clone();
    let (keys, input) = futures::channel::mpsc::unbounded::<std::io::Result<Event>>();
    let (frames_sender, mut frames) = watch::channel(String::new());
    let writer = client.clone();
    let options = Options {
        context: "lab".to_owned(),
        scope: Scope::All,
        no_color: true,
        archive_root: Some(running.directory().to_path_buf()),
        archive_credentials_from_secret: true,
        archive_passphrase_file: None,
        kubeconfig: Some(running.kubeconfig()),
        write: None,
    };
    let archive_before = tree(running.directory());
    assert!(
        archive_before.iter().any(|(path, _)| path.ends_with("binlogs/archive.json")),
        "the lab laid no archive: {archive_before:#?}"
    );
    let app = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
        run(
            &mut terminal,
            client,
            options,
            input,
            move |buffer| {
                frames_sender.send_replace(text(buffer));
            },
            std::future::pending(),
        )
        .await
    });

    let first = frame_with(&mut frames, "ledger").await;
    assert!(first.contains("Failover groups (3 of 3)"), "{first}");
    assert!(!first.contains("+held"), "{first}");

    // A watch event: the operator sets a hold on orders/orders.
    let mut group = running
        .lab
        .get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some("orders"), "orders")
        .unwrap();
    group["status"]["plannedFailoverHold"] = json!({
        "runID": "0d7c0a5e-2b1f-4c3d-9e8f-7a6b5c4d3e2f",
        "reason": "ForeignWritable",
        "sourceSite": "iad",
        "targetSite": "pdx",
        "ambiguousSites": ["iad", "pdx"],
        "holdTime": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    });
    running.lab.apply(group).unwrap();
    frame_with(&mut frames, "+held").await;

    // Open orders/orders (sorted by namespace/name: orders/carts, orders/orders,
    // payments/ledger) and read its hold.
    for code in [KeyCode::Char('j'), KeyCode::Enter, KeyCode::Char('3')] {
        keys.unbounded_send(key(code)).unwrap();
    }
    let hold = frame_with(&mut frames, "0d7c0a5e-2b1f-4c3d-9e8f-7a6b5c4d3e2f").await;
    assert!(hold.contains("iad, pdx"), "{hold}");

    // A write through the console's own client is refused in the process, and the status
    // line says so.
    let configmaps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(writer, "orders");
    let refused = configmaps
        .create(&kube::api::PostParams::default(), &Default::default())
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(refused.to_string().contains("read-only"), "{refused}");
    frame_with(
        &mut frames,
        "the console is read-only: refused POST /api/v1/namespaces/orders/configmaps",
    )
    .await;

    // The archive panel (`:view archive`, with --archive-credentials-from-secret) reads the
    // archive the lab laid (a planned failover a → b).
    command(&keys, "view archive");
    let coverage = frame_with(&mut frames, "archive read").await;
    assert!(coverage.contains("at pvc://orders/orders-backups/"), "{coverage}");
    assert!(coverage.contains("ar1-"), "{coverage}");

    // Drive every view and key; the console must stay read-only throughout.
    let mut script =
        vec![KeyCode::Char('1'), KeyCode::Char('2'), KeyCode::Char('4'), KeyCode::Char('5')];
    script.extend([
        KeyCode::Char('6'),
        KeyCode::Char('7'),
        KeyCode::Tab,
        KeyCode::BackTab,
        KeyCode::Left,
    ]);
    script.extend([
        KeyCode::Right,
        KeyCode::Char('?'),
        KeyCode::Esc,
        KeyCode::Char(' '),
        KeyCode::Char(' '),
    ]);
    script.extend([
        KeyCode::Esc,
        KeyCode::Char('/'),
        KeyCode::Char('o'),
        KeyCode::Enter,
        KeyCode::Char('s'),
    ]);
    script.extend([KeyCode::Char('S'), KeyCode::Char('G'), KeyCode::Char('g'), KeyCode::Char('k')]);
    script.extend([KeyCode::Char('/'), KeyCode::Esc]);
    for code in script {
        keys.unbounded_send(key(code)).unwrap();
    }
    command(&keys, "ns orders");
    frame_with(&mut frames, "ns orders").await;
    frame_with(&mut frames, "Failover groups (2 of 2)").await;
    command(&keys, "ns all");
    frame_with(&mut frames, "Failover groups (3 of 3)").await;
    for (keys_first, view, shows) in [
        (true, "planned", "orders/carts · Planned failover"),
        (false, "backups", "orders/carts · Backups"),
        (false, "hold", "orders/carts · Hold"),
        (false, "fleet", "Failover groups (3 of 3)"),
    ] {
        if keys_first {
            keys.unbounded_send(key(KeyCode::Enter)).unwrap();
        }
        command(&keys, &format!("view {view}"));
        frame_with(&mut frames, shows).await;
    }
    command(&keys, "ns orders");
    frame_with(&mut frames, "Failover groups (2 of 2)").await;

    // `:ctx` rebuilds the client from the kubeconfig: an unknown context is said, the lab's
    // own context reconnects and lists again.
    command(&keys, "ctx nope");
    frame_with(&mut frames, "context nope:").await;
    command(&keys, &format!("ctx {lab_context}"));
    frame_with(&mut frames, &format!("context {lab_context}")).await;
    frame_with(&mut frames, "Failover groups (2 of 2)").await;
    keys.unbounded_send(key(KeyCode::Char('q'))).unwrap();
    tokio::time::timeout(Duration::from_secs(10), app).await.unwrap().unwrap().unwrap();

    let requests = running.lab.requests();
    assert!(requests.iter().any(|request| request.verb == "watch"), "{requests:#?}");
    let writes: Vec<_> = requests.iter().filter(|request| request.is_write()).collect();
    assert!(writes.is_empty(), "the console sent writes: {writes:#?}");
    crate::readonly::assert_only_reads_and_reviews(&requests);
    // The archive was only listed and read: every file is as the lab laid it.
    assert_eq!(tree(running.directory()), archive_before);
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_credentials_come_from_the_profile_secret_with_a_get() {
    use bloodraven_store::S3Credentials;

    crate::install_crypto();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    apply_archive_keys(&running, "AKIDEXAMPLE", "secret\n");
    let (client, _) =
        bloodraven_console::client::connect(Some(&running.kubeconfig()), None).await.unwrap();
    let credentials =
        bloodraven_console::archive::secret_credentials(&client, "orders", "archive-keys")
            .await
            .unwrap();
    let S3Credentials::Static { access_key_id, secret_access_key, session_token } = credentials
    else {
        panic!("not static keys")
    };
    assert_eq!(
        (access_key_id.as_str(), secret_access_key.as_str(), session_token),
        ("AKIDEXAMPLE", "secret", None)
    );
    let missing = bloodraven_console::archive::secret_credentials(&client, "orders", "nope")
        .await
        .err()
        .unwrap();
    assert!(missing.contains("reading Secret orders/nope"), "{missing}");
    let writes: Vec<_> =
        running.lab.requests().into_iter().filter(|request| request.is_write()).collect();
    assert!(writes.is_empty(), "{writes:#?}");
    running.stop().await.unwrap();
}

/// An S3 archive (SeaweedFS, `scripts/test.sh` installs `weed`), read with the keys of the
/// profile's Secret: the fixture's lossy fork comes back.
#[test]
fn an_s3_archive_is_read_with_the_profile_secret() {
    use bloodraven_archive::fixtures::{Fixture, Scenario};
    use bloodraven_console::archive::{
        ArchiveAccess, ArchiveLocation, ArchiveOutcome, ArchiveRequest, load,
    };
    use bloodraven_store::testing::{ACCESS_KEY, SECRET_KEY, SeaweedFs};

    crate::install_crypto();
    let seaweed = SeaweedFs::start()
        .unwrap_or_else(|error| panic!("{error} (scripts/test.sh installs weed)"));
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let store = seaweed.bucket_store("archives", "").await.unwrap();
        let root = bloodraven_store::ArchiveRoot::under_profile("prod").unwrap();
        let fixture = Fixture::build(Scenario::LossyFailoverFork);
        bloodraven_store::archive::write_fixture(&store, &root, &fixture).await.unwrap();

        let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
        apply_archive_keys(&running, ACCESS_KEY, SECRET_KEY);
        let (client, _) =
            bloodraven_console::client::connect(Some(&running.kubeconfig()), None).await.unwrap();
        let request = ArchiveRequest {
            location: ArchiveLocation::S3 {
                namespace: "orders".to_owned(),
                bucket: "archives".to_owned(),
                prefix: "prod".to_owned(),
                endpoint: Some(seaweed.endpoint().to_owned()),
                region: Some("us-east-1".to_owned()),
                credentials_secret: Some("archive-keys".to_owned()),
            },
            backups: Vec::new(),
        };
        let access = ArchiveAccess {
            archive_root: None,
            secret_client: Some(client),
            passphrase_file: None,
        };
        let outcome =
            tokio::time::timeout(Duration::from_secs(60), load(&access, &request)).await.unwrap();
        let ArchiveOutcome::Covered(summary) = outcome else { panic!("{outcome:?}") };
        assert_eq!(summary.forks.len(), 1, "{summary:?}");
        assert_eq!(summary.location, "s3://archives/prod");
        let writes: Vec<_> =
            running.lab.requests().into_iter().filter(|request| request.is_write()).collect();
        assert!(writes.is_empty(), "{writes:#?}");
        running.stop().await.unwrap();
    });
}

/// `:ctx` while an archive read of the old context is slow: the old read is dropped (its task
/// aborted, its late event of an older epoch ignored), never shown under the new context.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_switch_never_shows_an_archive_read_of_the_old_context() {
    crate::install_crypto();
    const SLOW: Duration = Duration::from_secs(8);
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    let (client, connection) =
        bloodraven_console::client::connect(Some(&running.kubeconfig()), None).await.unwrap();
    let lab_context = connection.context.clone();
    // orders/orders archives to S3 with a credentials Secret that does not exist: with
    // --archive-credentials-from-secret its read GETs that Secret, which the lab holds for
    // SLOW and then answers 404 ("reading Secret orders/archive-keys: …").
    let original = running
        .lab
        .get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some("orders"), "orders")
        .unwrap();
    let mut on_s3 = original.clone();
    on_s3["spec"]["backup"]["profiles"][0]["storage"] = json!({
        "type": "S3",
        "s3": {
            "bucket": "archives",
            "prefix": "prod",
            "region": "us-east-1",
            "endpointURL": "http://127.0.0.1:9",
            "credentialsSecretName": "archive-keys",
        },
    });
    running.lab.apply(on_s3).unwrap();
    running.lab.inject(bloodraven_lab::Fault::delay(SLOW).verb("get").resource("secrets"));
    let started = std::time::Instant::now();
    let options = Options {
        context: "lab".to_owned(),
        scope: Scope::All,
        no_color: true,
        archive_root: Some(running.directory().to_path_buf()),
        archive_credentials_from_secret: true,
        archive_passphrase_file: None,
        kubeconfig: Some(running.kubeconfig()),
        write: None,
    };
    let (keys, mut frames, log, app) = start_app(client, options);
    frame_with(&mut frames, "Failover groups (3 of 3)").await;
    // Open orders/orders (the second row) on its archive panel: the read hangs on the Secret.
    for code in [KeyCode::Char('j'), KeyCode::Enter] {
        keys.unbounded_send(key(code)).unwrap();
    }
    command(&keys, "view archive");
    frame_with(&mut frames, "reading the archive…").await;

    // Meanwhile the group goes back to its PVC archive, and the user switches context.
    running.lab.apply(original).unwrap();
    command(&keys, &format!("ctx {lab_context}"));
    frame_with(&mut frames, &format!("context {lab_context}")).await;
    let switched = log.lock().unwrap().len();
    frame_with(&mut frames, "Failover groups (3 of 3)").await;
    for code in [KeyCode::Char('j'), KeyCode::Enter] {
        keys.unbounded_send(key(code)).unwrap();
    }
    command(&keys, "view archive");
    // Either the new read (or, were the old one let through, the old one) answers.
    let old = "reading Secret orders/archive-keys";
    let answered = {
        let wait = frames.wait_for(|frame| frame.contains("archive read") || frame.contains(old));
        let frame = tokio::time::timeout(Duration::from_secs(20), wait).await;
        frame.expect("no archive answer within 20 s").unwrap().clone()
    };
    assert!(!answered.contains(old), "the old context's archive read was shown:\n{answered}");
    assert!(answered.contains("at pvc://orders/orders-backups/"), "{answered}");

    // The old read would have answered by now (SLOW, plus a margin for a loaded machine).
    tokio::time::sleep((SLOW + Duration::from_secs(3)).saturating_sub(started.elapsed())).await;
    keys.unbounded_send(key(KeyCode::Char('j'))).unwrap();
    let last = frame_with(&mut frames, "orders/orders · Archive").await;
    let after: Vec<String> = log.lock().unwrap()[switched..].to_vec();
    let stale: Vec<&String> =
        after.iter().filter(|frame| frame.contains("reading Secret orders/archive-keys")).collect();
    assert!(stale.is_empty(), "the old context's archive read was shown:\n{}", stale[0]);
    assert!(last.contains("archive read"), "{last}");
    keys.unbounded_send(key(KeyCode::Char('q'))).unwrap();
    tokio::time::timeout(Duration::from_secs(10), app).await.unwrap().unwrap().unwrap();
    running.stop().await.unwrap();
}

/// One group whose `spec.sites` is a string (planted past the lab's validation, as a CRD
/// version skew would) among healthy ones: the fleet shows the rest and lists the bad one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_group_does_not_blind_the_fleet() {
    crate::install_crypto();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    running.lab.insert_unvalidated(crate::binary::broken_group()).unwrap();
    let (client, _) =
        bloodraven_console::client::connect(Some(&running.kubeconfig()), None).await.unwrap();
    let options = Options {
        context: "lab".to_owned(),
        scope: Scope::All,
        no_color: true,
        archive_root: None,
        archive_credentials_from_secret: false,
        archive_passphrase_file: None,
        kubeconfig: Some(running.kubeconfig()),
        write: None,
    };
    let (keys, mut frames, _log, app) = start_app(client, options);
    let fleet = frame_with(&mut frames, "Failover groups (3 of 3, 1 unreadable)").await;
    assert!(fleet.contains("ledger"), "{fleet}");
    assert!(fleet.contains("orders/broken at spec.sites: invalid type: string"), "{fleet}");
    // The group watch does not fail (no reconnecting over one bad object).
    let connected = frame_with(&mut frames, "│ connected │").await;
    assert!(connected.contains("(3 of 3, 1 unreadable)"), "{connected}");

    // Replaced by a good object, it joins the list.
    running
        .lab
        .delete("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some("orders"), "broken")
        .unwrap();
    let mut fixed = running
        .lab
        .get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some("orders"), "carts")
        .unwrap();
    fixed["metadata"] = json!({ "name": "broken", "namespace": "orders" });
    running.lab.apply(fixed).unwrap();
    let fleet = frame_with(&mut frames, "Failover groups (4 of 4)").await;
    assert!(!fleet.contains("unreadable"), "{fleet}");
    keys.unbounded_send(key(KeyCode::Char('q'))).unwrap();
    tokio::time::timeout(Duration::from_secs(10), app).await.unwrap().unwrap().unwrap();
    running.stop().await.unwrap();
}
