//! Guided operations end to end: the real binary in tmux, in write mode, on a lab API server
//! holding `hold-standing` (split brain resolved by hand: pdx fenced). The hold runbook is
//! offered and walked to its acknowledgement dialog, which is confirmed and sent; the lab sees
//! exactly that PATCH, the audit journal holds one record pair with the runbook origin and no
//! secret. Then a guided promote from the fleet view reaches its dialog and is cancelled.

use std::time::{Duration, Instant};

use bloodraven_console::journal::Journal;
use bloodraven_console::lab::RunningLab;

use crate::ops::{SECRET_VALUE, group, plant_secret, resolve_split_brain};
use crate::tmux::{BINARY, Server, tmux_path};

const RUN_ID: &str = "6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10";

/// Presses `Down` on the runbook list until the `automation-hold` row is the selected one.
fn select_runbook(server: &Server, id: &str) {
    for _ in 0..12 {
        let screen = server.wait_for(&[id]);
        if screen.lines().any(|line| line.contains(id) && line.contains('▶')) {
            return;
        }
        server.tmux(&["send-keys", "-t", "console", "Down"]);
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("the runbook {id} never got selected:\n{}", server.capture());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_runbook_to_the_acknowledgement_sent_then_a_promote_from_the_fleet() {
    crate::install_crypto();
    let running = RunningLab::start("hold-standing", jiff::Timestamp::now()).await.unwrap();
    plant_secret(&running);
    resolve_split_brain(&running);
    running.lab.clear_requests();
    let folder = tempfile::tempdir().unwrap();
    let journal = folder.path().join("journal");
    let config = folder.path().join("config");
    let log = folder.path().join("console.log");
    let command = format!(
        "exec env TERM=xterm-256color XDG_CONFIG_HOME={} BLOODRAVEN_JOURNAL_DIR={} {BINARY} \
         --log-file {} --kubeconfig {} -A --write",
        config.display(),
        journal.display(),
        log.display(),
        running.kubeconfig().display()
    );
    let server = Server {
        tmux: tmux_path(),
        socket: format!("bloodraven-e2e-guided-{}", std::process::id()),
    };
    let driven = tokio::task::spawn_blocking(move || {
        let started =
            server.tmux(&["new-session", "-d", "-s", "console", "-x", "120", "-y", "36", &command]);
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
        // Write mode from --write, shown in the header.
        server.wait_for(&["orders", "+held", "connected", "WRITE"]);
        server.tmux(&["send-keys", "-t", "console", "Enter"]);
        server.wait_for(&["Overview", "orders/orders"]);
        // The runbook player offers the hold runbook; walk it.
        server.tmux(&["send-keys", "-t", "console", "8"]);
        server.wait_for(&["Runbooks that apply", "automation-hold"]);
        select_runbook(&server, "automation-hold");
        server.tmux(&["send-keys", "-t", "console", "Enter"]);
        server.wait_for(&["Step 1/4: understand", "[PASS]"]);
        server.tmux(&["send-keys", "-t", "console", "Enter"]);
        server.wait_for(&["Step 2/4: one-writable", "[PASS]"]);
        server.tmux(&["send-keys", "-t", "console", "Enter"]);
        server.wait_for(&["Step 3/4: acknowledge", "enter: open its confirm dialog"]);
        // The step's action: the acknowledgement dialog, from the runbook, asking the name.
        server.tmux(&["send-keys", "-t", "console", "Enter"]);
        let dialog = server.wait_for(&[
            "confirm: acknowledge-hold",
            "from runbook automation-hold, step acknowledge",
            "RBAC: allowed",
            "type \"orders\" to confirm",
        ]);
        assert!(dialog.contains(RUN_ID), "{dialog}");
        server.tmux(&["send-keys", "-t", "console", "-l", "orders"]);
        server.wait_for(&["type \"orders\" to confirm: orders_"]);
        server.tmux(&["send-keys", "-t", "console", "Tab"]);
        server.wait_for(&["[ Confirm ]"]);
        server.tmux(&["send-keys", "-t", "console", "Enter"]);
        // Sent, then the follow-through from the watch (no operator here: the hold stands).
        server.wait_for(&["sent: operation acknowledge-hold-", "follow-through (live)"]);
        server.tmux(&["send-keys", "-t", "console", "x"]);
        server.wait_for(&["sent: acknowledge the automation hold"]);
        // Back to the fleet; a guided promote from there reaches its dialog; esc cancels.
        // (One esc at a time: two at once read as one alt-esc.)
        server.tmux(&["send-keys", "-t", "console", "Escape"]);
        server.wait_for(&["Runbooks that apply", "(at step"]);
        server.tmux(&["send-keys", "-t", "console", "Escape"]);
        server.wait_for(&["NAMESPACE", "+held"]);
        server.tmux(&["send-keys", "-t", "console", "a"]);
        server.wait_for(&["guided operations: orders/orders (fleet view)", "planned failover of"]);
        server.tmux(&["send-keys", "-t", "console", "Enter"]);
        server.wait_for(&["confirm: request-planned-failover", "preflight", "UnknownSite"]);
        server.tmux(&["send-keys", "-t", "console", "Escape"]);
        server.wait_for(&["cancelled: planned failover of"]);
        server.tmux(&["send-keys", "-t", "console", "q"]);
        let deadline = Instant::now() + Duration::from_secs(20);
        while server.tmux(&["has-session", "-t", "console"]).status.success() {
            assert!(Instant::now() < deadline, "the console did not quit on q");
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    driven.await.unwrap();

    // Exactly one write of state: the acknowledgement annotation (plus the reviews and the
    // ConsoleOperation Event).
    let writes: Vec<(String, String)> = running
        .lab
        .requests()
        .iter()
        .filter(|request| request.is_write() && !request.path.contains("selfsubject"))
        .map(|request| (request.method.clone(), request.path.clone()))
        .collect();
    let state_writes: Vec<&(String, String)> =
        writes.iter().filter(|(_, path)| !path.ends_with("/events")).collect();
    assert_eq!(
        state_writes,
        [&(
            "PATCH".to_owned(),
            "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups/orders".to_owned()
        )],
        "{writes:?}"
    );
    let after = group(&running);
    assert_eq!(
        after["metadata"]["annotations"]["bloodraven.shipstream.io/acknowledge-planned-failover-hold"],
        RUN_ID
    );
    running.stop().await.unwrap();

    let records = Journal::read_all(&journal).unwrap();
    assert_eq!(records.len(), 2, "{records:#?}");
    assert_eq!((&records[0]["phase"], &records[1]["phase"]), (&"before".into(), &"after".into()));
    assert_eq!(records[0]["id"], records[1]["id"]);
    assert_eq!(records[1]["result"], "sent");
    for record in &records {
        assert_eq!(record["origin"]["runbook"], "automation-hold", "{record:#}");
        assert_eq!(record["origin"]["step"], "acknowledge", "{record:#}");
    }
    let text: String = std::fs::read_dir(&journal)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    assert!(
        !text.contains(SECRET_VALUE) && !text.contains("bGFiLXMzY3JldC1wYXNzd29yZC1kby1ub3QtbG9n")
    );
}
