//! Issue #16's end to end on the LIVE lab: the example 3-site group on real MySQL 9.7 (the lab
//! kubelet's mysqlds, the workspace's `bloodraven-operator` binary; `source
//! scripts/provision.sh` and `cargo build -p bloodraven-operator`), the console binary in tmux
//! in write mode against the live lab's API server. With the application workload committing
//! through the `-primary` Service before, during and after, the group is opened, a planned
//! failover to pdx is proposed from the overview (`a`), confirmed by typing the target, and
//! followed in the dialog to `Succeeded`. The ledger then proves RPO 0 (every acknowledged
//! commit is on pdx), and the audit journal holds the operation's before/after pair and no lab
//! secret.
//!
//! The live lab runs in this process (`bloodraven_console::live::start`, what `bloodraven lab
//! --live` runs) so the test can dial the `-primary` Service's proxy link and read pdx; the
//! console is the real binary, as an on-call engineer runs it.

use std::time::{Duration, Instant, SystemTime};

use bloodraven_console::journal::Journal;
use bloodraven_console::live;
use bloodraven_sites::accounts::APPLICATION;
use bloodraven_sites::workload::{Workload, WorkloadConfig, verify_at};

use crate::tmux::{BINARY, Server, tmux_path};

/// The lab's passwords (deploy/examples/group.yaml and the bloodraven-sites accounts): none may
/// reach the journal.
pub(crate) const LAB_SECRETS: [&str; 5] =
    ["lab-operator-pw", "lab-root-pw", "lab-repl-pw", "lab-app-pw", "bGFiLW9wZXJhdG9yLXB3"];

/// Generous bounds: CI shares 2 cores with three mysqlds, the operator and the console.
const READY_BOUND: Duration = Duration::from_secs(240);
const SCREEN_BOUND: Duration = Duration::from_secs(90);
const RUN_BOUND: Duration = Duration::from_secs(300);

/// The screen once every needle shows on two captures in a row, 200 ms apart (the live
/// console redraws as the watch moves, so "identical twice" may never come; twice in a row
/// keeps a half-drawn frame out). Gives up after `bound`, saying what it waited for.
pub(crate) fn wait_live(server: &Server, needles: &[&str], bound: Duration) -> String {
    let deadline = Instant::now() + bound;
    let mut seen_once = false;
    loop {
        let screen = server.capture();
        let shows = needles.iter().all(|needle| screen.contains(needle));
        if shows && seen_once {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "waited {bound:?} for the pane to show {needles:?}; it shows:\n{screen}"
        );
        seen_once = shows;
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub(crate) fn keys(server: &Server, keys: &[&str]) {
    let mut arguments = vec!["send-keys", "-t", "console"];
    arguments.extend_from_slice(keys);
    let sent = server.tmux(&arguments);
    assert!(sent.status.success(), "tmux send-keys {keys:?} failed");
}

/// The group converged: Ready=True, an active site, and both other sites replicating with no
/// lag (the preflight's TargetUnhealthy and LagWait read these). Returns the active site.
async fn converged(live: &bloodraven_drill::live::LiveLab, bound: Duration) -> String {
    let started = Instant::now();
    loop {
        let group = live.group_object().unwrap_or_default();
        let status = &group["status"];
        let ready = status["conditions"].as_array().is_some_and(|conditions| {
            conditions.iter().any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        let active = status["activeSite"].as_str().unwrap_or_default().to_owned();
        let sites = status["sites"].as_array().cloned().unwrap_or_default();
        let replicas_caught_up = sites.len() == 3
            && sites.iter().filter(|site| site["name"] != active.as_str()).all(|site| {
                site["replicating"] == true && site["secondsBehindSource"].as_i64() == Some(0)
            });
        if ready && !active.is_empty() && replicas_caught_up {
            return active;
        }
        assert!(
            started.elapsed() < bound,
            "waited {bound:?} for the group to converge (Ready=True, an active site, both \
             replicas replicating with no lag); status: {status:#}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::print_stdout, reason = "the final screen and the ledger are the test's record")]
async fn guided_planned_failover_on_the_live_lab_succeeds_with_the_ledger_at_rpo_zero() {
    crate::install_crypto();
    let live = live::start(crate::live::operator_bin()).await.unwrap_or_else(|e| panic!("{e:#}"));
    live::wait_ready(&live, READY_BOUND).await.unwrap_or_else(|e| panic!("{e:#}"));
    let active = converged(&live, READY_BOUND).await;
    assert_eq!(active, "iad", "the example group starts on its first PrimaryCandidate");

    // Before: the writer commits through the -primary Service.
    let primary = live.primary_addr().unwrap_or_else(|e| panic!("{e}"));
    let mut config = WorkloadConfig::new(primary);
    config.rate_per_sec = 20;
    config.first_key = 1_000;
    config.writer = "guided-live".into();
    let workload = Workload::start(config);
    workload.wait_acknowledged(20, SCREEN_BOUND).await.unwrap_or_else(|e| panic!("{e}"));

    let folder = tempfile::tempdir().unwrap();
    let journal = folder.path().join("journal");
    let command = format!(
        "exec env TERM=xterm-256color XDG_CONFIG_HOME={} BLOODRAVEN_JOURNAL_DIR={} {BINARY} \
         --log-file {} --kubeconfig {} -n orders --write",
        folder.path().join("config").display(),
        journal.display(),
        folder.path().join("console.log").display(),
        live.kubeconfig().display()
    );
    let server = Server {
        tmux: tmux_path(),
        socket: format!("bloodraven-e2e-guided-live-{}", std::process::id()),
    };
    // The tmux session is driven off the runtime: the workload keeps committing meanwhile.
    let driven = tokio::task::spawn_blocking(move || {
        let started =
            server.tmux(&["new-session", "-d", "-s", "console", "-x", "120", "-y", "40", &command]);
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
        wait_live(&server, &["orders", "connected", "WRITE"], SCREEN_BOUND);
        keys(&server, &["Enter"]);
        wait_live(&server, &["Overview", "orders/orders"], SCREEN_BOUND);
        keys(&server, &["a"]);
        wait_live(
            &server,
            &["guided operations: orders/orders", "planned failover of"],
            SCREEN_BOUND,
        );
        // The only other PrimaryCandidate: pdx (fra is DisasterRecovery).
        let picker = server.capture();
        assert!(picker.contains("1 planned failover of orders/orders to pdx"), "{picker}");
        assert!(!picker.contains("to fra"), "{picker}");
        keys(&server, &["Enter"]);
        let dialog = wait_live(
            &server,
            &["confirm: request-planned-failover", "RBAC: allowed", "type \"pdx\" to confirm"],
            SCREEN_BOUND,
        );
        assert!(dialog.contains("AlreadyActive: pdx is not the active primary"), "{dialog}");
        assert!(!dialog.contains(" refuse "), "nothing refuses on a converged group:\n{dialog}");
        keys(&server, &["-l", "pdx"]);
        wait_live(&server, &["type \"pdx\" to confirm: pdx_"], SCREEN_BOUND);
        keys(&server, &["Tab"]);
        wait_live(&server, &["[ Confirm ]"], SCREEN_BOUND);
        let sent_at = SystemTime::now();
        keys(&server, &["Enter"]);
        wait_live(&server, &["sent: operation request-planned-failover-"], SCREEN_BOUND);
        // The follow-through, from the watch, to the outcome.
        let done = wait_live(&server, &["planned failover to pdx: Succeeded (run "], RUN_BOUND);
        let succeeded_at = SystemTime::now();
        keys(&server, &["Escape"]);
        wait_live(&server, &["sent: planned failover of orders/orders to pdx"], SCREEN_BOUND);
        keys(&server, &["q"]);
        let deadline = Instant::now() + Duration::from_secs(20);
        while server.tmux(&["has-session", "-t", "console"]).status.success() {
            assert!(Instant::now() < deadline, "the console did not quit on q");
            std::thread::sleep(Duration::from_millis(100));
        }
        (sent_at, succeeded_at, done)
    });
    let (sent_at, succeeded_at, done) = tokio::time::timeout(READY_BOUND + RUN_BOUND, driven)
        .await
        .unwrap_or_else(|_| panic!("the tmux run did not end within {:?}", READY_BOUND + RUN_BOUND))
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()));

    // The operator moved the primary; the -primary Service follows pdx.
    assert_eq!(converged(&live, READY_BOUND).await, "pdx", "after:\n{done}");
    let group = live.group_object().unwrap_or_default();
    let record = &group["status"]["plannedFailover"];
    assert_eq!(record["targetSite"], "pdx", "{record:#}");
    assert_eq!(record["sourceSite"], "iad", "{record:#}");
    assert_eq!(record["result"]["outcome"], "Succeeded", "{record:#}");
    // A session the workload re-dialled before the Service shed iad stays there, refused
    // (read-only): reset it, as a pool drops a read-only server.
    live.drill_link("app:primary").unwrap_or_else(|e| panic!("{e}")).reset();
    // After: more commits, now on pdx.
    let before_after = workload.acknowledged();
    workload
        .wait_acknowledged(before_after + 20, SCREEN_BOUND)
        .await
        .unwrap_or_else(|e| panic!("no commits after the failover: {e}"));
    let ledger = workload.stop().await.unwrap_or_else(|e| panic!("{e}"));
    let during = ledger
        .attempts
        .iter()
        .filter(|attempt| attempt.started_at >= sent_at && attempt.started_at <= succeeded_at)
        .count();
    assert!(during > 0, "the writer kept trying while the failover ran");
    let pdx = live.mysql_addr("pdx").unwrap_or_else(|e| panic!("{e}"));
    let report = verify_at(&ledger, pdx, &APPLICATION).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        report.rpo_zero(),
        "acknowledged commits missing on the new primary pdx: {:?} (of {} acknowledged)",
        report.lost,
        report.acknowledged
    );
    assert!(report.acknowledged >= 40, "{} acknowledged", report.acknowledged);
    println!(
        "{done}\nledger: {} attempts ({during} while the failover ran), {} acknowledged, all on \
         pdx; failures {:?}; failover followed to Succeeded in {:?}",
        report.attempts,
        report.acknowledged,
        report.failures,
        succeeded_at.duration_since(sent_at).unwrap_or_default()
    );

    let directory = live.dir().to_owned();
    live.stop().await;
    assert!(!directory.exists(), "{} left behind", directory.display());

    // One record pair: the request before sending, the result after.
    let records = Journal::read_all(&journal).unwrap();
    assert_eq!(records.len(), 2, "{records:#?}");
    assert_eq!((&records[0]["phase"], &records[1]["phase"]), (&"before".into(), &"after".into()));
    assert_eq!(records[0]["id"], records[1]["id"]);
    assert_eq!(records[1]["result"], "sent", "{:#}", records[1]);
    for record in &records {
        assert_eq!(record["operation"]["target"], "pdx", "{record:#}");
    }
    let text: String = std::fs::read_dir(&journal)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    for secret in LAB_SECRETS {
        assert!(!text.contains(secret), "the journal holds the lab secret {secret}");
    }
}
