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

fn key(code: KeyCode) -> std::io::Result<Event> {
    Ok(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_event_changes_the_frame_and_no_write_is_sent() {
    crate::install_crypto();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    let (client, _) =
        bloodraven_console::client::connect(Some(&running.kubeconfig()), None).await.unwrap();
    let (keys, input) = futures::channel::mpsc::unbounded::<std::io::Result<Event>>();
    let (frames_sender, mut frames) = watch::channel(String::new());
    let options = Options { context: "lab".to_owned(), scope: Scope::All, no_color: true };
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
    keys.unbounded_send(key(KeyCode::Char('q'))).unwrap();
    tokio::time::timeout(Duration::from_secs(10), app).await.unwrap().unwrap().unwrap();

    let requests = running.lab.requests();
    assert!(requests.iter().any(|request| request.verb == "watch"), "{requests:#?}");
    let writes: Vec<_> = requests.iter().filter(|request| request.is_write()).collect();
    assert!(writes.is_empty(), "the console sent writes: {writes:#?}");
    running.stop().await.unwrap();
}
