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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_event_changes_the_frame_and_no_write_is_sent() {
    crate::install_crypto();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    let (client, connection) =
        bloodraven_console::client::connect(Some(&running.kubeconfig()), None).await.unwrap();
    let lab_context = connection.context.clone();
    let (keys, input) = futures::channel::mpsc::unbounded::<std::io::Result<Event>>();
    let (frames_sender, mut frames) = watch::channel(String::new());
    let options = Options {
        context: "lab".to_owned(),
        scope: Scope::All,
        no_color: true,
        archive_root: Some(running.directory().to_path_buf()),
        archive_credentials_from_secret: false,
        kubeconfig: Some(running.kubeconfig()),
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

    // The archive panel reads the archive the lab laid (a planned failover a → b).
    keys.unbounded_send(key(KeyCode::Char('6'))).unwrap();
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
    script.extend([KeyCode::Char('/'), KeyCode::Esc, KeyCode::Char(':')]);
    script.extend("ns orders".chars().map(KeyCode::Char));
    script.push(KeyCode::Enter);
    for code in script {
        keys.unbounded_send(key(code)).unwrap();
    }
    frame_with(&mut frames, "ns orders").await;
    frame_with(&mut frames, "Failover groups (2 of 2)").await;

    // `:ctx` rebuilds the client from the kubeconfig: an unknown context is said, the lab's
    // own context reconnects and lists again.
    for command in ["ctx nope".to_owned(), format!("ctx {lab_context}")] {
        keys.unbounded_send(key(KeyCode::Char(':'))).unwrap();
        for c in command.chars() {
            keys.unbounded_send(key(KeyCode::Char(c))).unwrap();
        }
        keys.unbounded_send(key(KeyCode::Enter)).unwrap();
        if command == "ctx nope" {
            frame_with(&mut frames, "context nope:").await;
        }
    }
    frame_with(&mut frames, &format!("context {lab_context}")).await;
    frame_with(&mut frames, "Failover groups (2 of 2)").await;
    keys.unbounded_send(key(KeyCode::Char('q'))).unwrap();
    tokio::time::timeout(Duration::from_secs(10), app).await.unwrap().unwrap().unwrap();

    let requests = running.lab.requests();
    assert!(requests.iter().any(|request| request.verb == "watch"), "{requests:#?}");
    let writes: Vec<_> = requests.iter().filter(|request| request.is_write()).collect();
    assert!(writes.is_empty(), "the console sent writes: {writes:#?}");
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
        let access = ArchiveAccess { archive_root: None, secret_client: Some(client) };
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
