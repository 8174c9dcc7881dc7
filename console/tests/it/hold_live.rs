//! Issue #16, an automation hold the operator made, cleared from the console on the LIVE lab:
//! the example 3-site group on real MySQL 9.7 (`source scripts/provision.sh`), the operator's
//! controller in this process with the planned-failover document's timings divided by 10.
//!
//! A real planned failover iad → pdx: the operator is killed at the crash point
//! `operator.planned.after-promote` (pdx was sent `super_read_only=OFF`, nothing confirmed it);
//! while no operator runs a human makes the DisasterRecovery site fra writable; the restarted
//! operator ends the run ManualRecoveryRequired/ForeignWritable and holds automation. Then:
//!
//! - the CLI, `ack-planned-failover-hold orders --run-id WRONG --yes --confirm orders --wait`,
//!   is refused before anything is sent, saying the standing run and that the operator would
//!   ignore it (PlannedFailoverHoldAcknowledgmentIgnored), with a non-zero exit;
//! - the console binary in tmux, in write mode: the hold centre shows the run ID, the ambiguous
//!   sites with their writability and GTID sets side by side and the live checklist, which
//!   turns PASS once fra is fenced by hand; the acknowledgement is confirmed by typing the
//!   group name and followed until the operator clears the hold (PlannedFailoverHoldAcknowledged).
//!
//! The audit journal holds exactly the acknowledgement's record pair (the refused request sent
//! nothing) and no lab secret; every acknowledged write is on pdx (RPO 0).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_console::journal::Journal;
use bloodraven_crashpoint::{CrashAt, Step};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::{ACKNOWLEDGE_PLANNED_FAILOVER_HOLD, PLANNED_FAILOVER};
use bloodraven_drill::DEFAULT_OPERATOR;
use bloodraven_drill::live::{
    LEASE_DURATION, LEASE_NAME, LiveError, LiveLab, OperatorEnv, OperatorLauncher, RunningOperator,
};
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::lease::{self, LeaseConfig};
use bloodraven_operator::manager::Tuning;
use bloodraven_operator::planned::Timings;
use bloodraven_sites::accounts::{APPLICATION, OPERATOR, opts};
use bloodraven_sites::workload::{Workload, WorkloadConfig, verify_at};
use mysql_async::prelude::Queryable as _;
use serde_json::{Value, json};

use crate::guided_live::{LAB_SECRETS, keys, wait_live};
use crate::tmux::{BINARY, Server, tmux_path};

/// Generous bounds: CI shares 2 cores with three mysqlds, the operator and the console.
const BOUND: Duration = Duration::from_secs(240);
const SCREEN_BOUND: Duration = Duration::from_secs(90);

/// The operator's `main` in-process with the planned-failover timings divided by 10: take the
/// Lease, then run the controller while holding it (as `crates/drill`'s planned drills do).
struct ScaledOperator;

struct Task(tokio::task::JoinHandle<()>);

impl RunningOperator for Task {
    fn describe(&self) -> String {
        "in-process task (planned-failover timings scaled)".into()
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl OperatorLauncher for ScaledOperator {
    fn launch(&self, env: &OperatorEnv) -> Result<Box<dyn RunningOperator>, LiveError> {
        let env = env.clone();
        let task = tokio::spawn(async move {
            let config = LeaseConfig {
                namespace: env.namespace.clone(),
                name: LEASE_NAME.to_owned(),
                identity: env.name.clone(),
                duration: LEASE_DURATION,
            };
            if lease::acquire(&env.client, &config).await.is_err() {
                return;
            }
            let tuning = Tuning { planned: Timings::scaled(10), ..Tuning::default() };
            let context = Arc::new(Context::new(
                env.client.clone(),
                Arc::new(env.resolver.clone()),
                tuning,
                &env.name,
            ));
            tokio::select! {
                () = lease::hold(&env.client, &config) => {}
                () = controller::run(context, Some(&env.namespace)) => {}
            }
        });
        Ok(Box::new(Task(task)))
    }

    fn describe(&self) -> String {
        "the operator's controller in-process, planned-failover timings / 10".into()
    }
}

fn group(live: &LiveLab) -> Value {
    live.group_object().unwrap_or_default()
}

/// Polls the group until `done` holds, or fails saying what it waited for and what it saw.
async fn wait_for(live: &LiveLab, what: &str, done: impl Fn(&Value) -> bool) {
    let started = Instant::now();
    loop {
        let object = group(live);
        if done(&object) {
            return;
        }
        assert!(
            started.elapsed() < BOUND,
            "waited {BOUND:?} for {what}; status: {}",
            object["status"]
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn writable(object: &Value) -> Vec<String> {
    object["status"]["sites"]
        .as_array()
        .map(|sites| {
            sites
                .iter()
                .filter(|s| s["state"] == "writable")
                .filter_map(|s| s["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `site` the active site, the only writable one of three, and the group Ready.
fn converged_on(object: &Value, site: &str) -> bool {
    let status = &object["status"];
    status["activeSite"] == site
        && status["sites"].as_array().is_some_and(|sites| sites.len() == 3)
        && writable(object) == [site]
        && status["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// Runs `statements` on `site` as the operator account (what a human does by hand).
async fn execute(live: &LiveLab, site: &str, statements: &[&str]) {
    let addr = live.mysql_addr(site).unwrap();
    let mut conn = mysql_async::Conn::new(opts(&OPERATOR, addr, None))
        .await
        .unwrap_or_else(|e| panic!("connecting to {site} at {addr}: {e}"));
    for sql in statements {
        conn.query_drop(*sql).await.unwrap_or_else(|e| panic!("{sql} on {site}: {e}"));
    }
    let _ = conn.disconnect().await;
}

/// `bloodraven ack-planned-failover-hold` with `arguments`, off the runtime, bounded: its exit
/// status, stdout and stderr.
async fn ack_cli(kubeconfig: &Path, journal: &Path, arguments: &[&str]) -> (bool, String, String) {
    let (kubeconfig, journal) = (kubeconfig.to_owned(), journal.to_owned());
    let arguments: Vec<String> = arguments.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let folder = tempfile::tempdir().unwrap();
        let (out, err) = (folder.path().join("out"), folder.path().join("err"));
        let mut child = Command::new(BINARY)
            .env("BLOODRAVEN_JOURNAL_DIR", &journal)
            .env("XDG_CONFIG_HOME", folder.path().join("config"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["-n", "orders", "ack-planned-failover-hold", "orders"])
            .args(&arguments)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + SCREEN_BOUND;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("`ack-planned-failover-hold {arguments:?}` did not end in {SCREEN_BOUND:?}");
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        (
            status.success(),
            std::fs::read_to_string(&out).unwrap(),
            std::fs::read_to_string(&err).unwrap(),
        )
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::print_stdout, reason = "the screens seen are the test's record (--no-capture)")]
async fn an_automation_hold_the_operator_made_is_shown_and_acknowledged_from_the_hold_centre() {
    crate::install_crypto();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/examples/group.yaml"
    ))
    .unwrap();
    let example = bloodraven_console::live::example_group(&text).unwrap();
    let mut live = LiveLab::start(&example, Some(Arc::new(ScaledOperator)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    wait_for(&live, "the group to converge on iad", |o| converged_on(o, "iad")).await;
    let mut config = WorkloadConfig::new(live.primary_addr().unwrap());
    config.rate_per_sec = 20;
    config.first_key = 1_000;
    config.writer = "hold-live".into();
    let writes = Workload::start(config);
    writes.wait_acknowledged(30, SCREEN_BOUND).await.unwrap_or_else(|e| panic!("{e}"));

    // A real planned failover; the operator dies right after promoting pdx.
    let scope = format!("{}/{}", live.namespace(), live.group_name());
    bloodraven_crashpoint::arm(&scope, CrashAt { step: Step::OperatorPlannedAfterPromote, nth: 1 });
    let groups: kube::Api<MysqlFailoverGroup> =
        kube::Api::namespaced(live.client().clone(), live.namespace());
    let patch = json!({"metadata": {"annotations": {PLANNED_FAILOVER: "pdx"}}});
    groups
        .patch(
            live.group_name(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(patch),
        )
        .await
        .unwrap();
    let started = Instant::now();
    while bloodraven_crashpoint::fired(&scope).is_none() {
        assert!(
            started.elapsed() < SCREEN_BOUND,
            "the crash point after-promote did not fire within {SCREEN_BOUND:?}: {}",
            group(&live)["status"]["plannedFailover"]
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    live.kill_operator(DEFAULT_OPERATOR).unwrap();
    bloodraven_crashpoint::disarm(&scope);
    // A foreign writer while no operator runs, then a fresh operator with empty memory.
    execute(&live, "fra", &["SET GLOBAL super_read_only = OFF", "SET GLOBAL read_only = OFF"])
        .await;
    live.start_operator("after-crash").unwrap();
    wait_for(&live, "the run to end ManualRecoveryRequired with a hold", |o| {
        o["status"]["plannedFailover"]["result"]["outcome"] == "ManualRecoveryRequired"
            && o["status"]["plannedFailoverHold"]["runID"].is_string()
    })
    .await;
    let ledger = writes.stop().await.unwrap_or_else(|e| panic!("{e}"));
    let held = group(&live);
    let hold = held["status"]["plannedFailoverHold"].clone();
    let run_id = hold["runID"].as_str().unwrap().to_owned();
    let ambiguous: Vec<String> = hold["ambiguousSites"]
        .as_array()
        .map(|sites| sites.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    assert!(ambiguous.len() >= 2, "the hold names the ambiguous sites: {hold:#}");

    // The CLI with a wrong run ID: refused before sending, explained, non-zero exit.
    let folder = tempfile::tempdir().unwrap();
    let journal = folder.path().join("journal");
    let kubeconfig = live.kubeconfig();
    let (ok, stdout, stderr) = ack_cli(
        &kubeconfig,
        &journal,
        &["--run-id", "WRONG", "--yes", "--confirm", "orders", "--wait"],
    )
    .await;
    println!("ack-planned-failover-hold --run-id WRONG (exit non-zero):\n{stdout}{stderr}");
    assert!(!ok, "a wrong run ID exits non-zero:\n{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("the standing hold is run {run_id}; an acknowledgement naming WRONG is ignored (PlannedFailoverHoldAcknowledgmentIgnored)")),
        "it says why: {stderr}"
    );
    assert!(stderr.contains("nothing was sent"), "{stderr}");
    let after_cli = group(&live);
    assert!(
        after_cli["metadata"]["annotations"][ACKNOWLEDGE_PLANNED_FAILOVER_HOLD].is_null(),
        "nothing was written: {}",
        after_cli["metadata"]
    );
    assert_eq!(after_cli["status"]["plannedFailoverHold"]["runID"], run_id.as_str());

    // The console in write mode: the hold centre, the live checklist, the acknowledgement.
    let command = format!(
        "exec env TERM=xterm-256color XDG_CONFIG_HOME={} BLOODRAVEN_JOURNAL_DIR={} {BINARY} \
         --log-file {} --kubeconfig {} -n orders --write",
        folder.path().join("config").display(),
        journal.display(),
        folder.path().join("console.log").display(),
        kubeconfig.display()
    );
    let server = Server {
        tmux: tmux_path(),
        socket: format!("bloodraven-e2e-hold-live-{}", std::process::id()),
    };
    let server = Arc::new(server);
    let tui = server.clone();
    let (run, sites) = (run_id.clone(), ambiguous.clone());
    let centre = tokio::task::spawn_blocking(move || {
        let server = tui;
        let started =
            server.tmux(&["new-session", "-d", "-s", "console", "-x", "150", "-y", "50", &command]);
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
        wait_live(&server, &["orders", "+held", "connected", "WRITE"], SCREEN_BOUND);
        keys(&server, &["Enter"]);
        wait_live(&server, &["Overview", "orders/orders"], SCREEN_BOUND);
        keys(&server, &["3"]);
        let mut needles = vec![
            "AUTOMATIC FAILOVER IS HELD".to_owned(),
            run.clone(),
            "Ambiguous sites".to_owned(),
            "Before acknowledging (live)".to_owned(),
            "exactly one writable site".to_owned(),
        ];
        needles.extend(sites.iter().cloned());
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        wait_live(&server, &needles, SCREEN_BOUND)
    });
    let centre = tokio::time::timeout(BOUND, centre)
        .await
        .unwrap_or_else(|_| panic!("the hold centre did not show within {BOUND:?}"))
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()));
    println!("the hold centre:\n{centre}");
    // Side by side: each ambiguous site's writability and executed set, and what it alone has.
    let status = &group(&live)["status"];
    for site in &ambiguous {
        let observed = status["sites"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["name"] == site.as_str()))
            .cloned()
            .unwrap_or_default();
        let state = observed["state"].as_str().unwrap_or("unknown");
        let row = centre.lines().find(|line| {
            let line = line.trim_start_matches(['│', ' ']);
            line.starts_with(&format!("{site} ")) && line.contains(state)
        });
        assert!(row.is_some(), "the hold centre lists {site} as {state}:\n{centre}");
        let uuid = observed["gtidExecuted"].as_str().unwrap_or_default().split(':').next();
        if let Some(uuid) = uuid.filter(|u| !u.is_empty()) {
            assert!(centre.contains(uuid), "{site}'s executed set ({uuid}…) shows:\n{centre}");
        }
    }
    assert_eq!(centre.matches("executed:").count(), ambiguous.len(), "{centre}");
    assert_eq!(centre.matches("only here:").count(), ambiguous.len(), "{centre}");

    // The split brain resolved by hand as the guidance says: pdx holds the fenced set (every
    // acknowledged write), fra none of its own, so fra is fenced; the checklist turns PASS.
    execute(&live, "fra", &["SET GLOBAL super_read_only = ON"]).await;
    wait_for(&live, "pdx the only writable site", |o| writable(o) == ["pdx"]).await;

    let tui = server.clone();
    let run = run_id.clone();
    let driven = tokio::task::spawn_blocking(move || {
        let server = tui;
        let resolved = wait_live(
            &server,
            &["[PASS] exactly one writable site (pdx)", "[PASS] the others fenced"],
            SCREEN_BOUND,
        );
        keys(&server, &["a"]);
        wait_live(
            &server,
            &["guided operations: orders/orders · the hold centre", "acknowledge the automation"],
            SCREEN_BOUND,
        );
        keys(&server, &["Enter"]);
        let dialog = wait_live(
            &server,
            &[
                "confirm: acknowledge-hold",
                "data loss: Acknowledging releases the automation hold",
                "RBAC: allowed",
                "type \"orders\" to confirm",
            ],
            SCREEN_BOUND,
        );
        assert!(dialog.contains(&run), "{dialog}");
        assert!(!dialog.contains(" refuse "), "nothing refuses once resolved:\n{dialog}");
        keys(&server, &["-l", "orders"]);
        wait_live(&server, &["type \"orders\" to confirm: orders_"], SCREEN_BOUND);
        keys(&server, &["Tab"]);
        wait_live(&server, &["[ Confirm ]"], SCREEN_BOUND);
        keys(&server, &["Enter"]);
        wait_live(&server, &["sent: operation acknowledge-hold-"], SCREEN_BOUND);
        let cleared =
            wait_live(&server, &["the hold is cleared (PlannedFailoverHoldAcknowledged)"], BOUND);
        keys(&server, &["x"]);
        let after = wait_live(
            &server,
            &[
                "No automation hold recorded",
                "AutomaticFailoverHeld=False (PlannedFailoverHoldAcknowledged)",
            ],
            SCREEN_BOUND,
        );
        keys(&server, &["q"]);
        let deadline = Instant::now() + Duration::from_secs(20);
        while server.tmux(&["has-session", "-t", "console"]).status.success() {
            assert!(Instant::now() < deadline, "the console did not quit on q");
            std::thread::sleep(Duration::from_millis(100));
        }
        (resolved, dialog, cleared, after)
    });
    let (resolved, dialog, cleared, after) = tokio::time::timeout(BOUND * 2, driven)
        .await
        .unwrap_or_else(|_| panic!("the tmux run did not end within {:?}", BOUND * 2))
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()));
    println!("{resolved}\n{dialog}\n{cleared}\n{after}");
    drop(server);

    // The operator cleared it: no hold, the annotation consumed, the Normal Event.
    let object = group(&live);
    assert!(object["status"]["plannedFailoverHold"].is_null(), "{}", object["status"]);
    assert!(
        object["metadata"]["annotations"][ACKNOWLEDGE_PLANNED_FAILOVER_HOLD].is_null(),
        "{}",
        object["metadata"]
    );
    let events = live.group_events();
    assert!(events.iter().any(|e| e["reason"] == "PlannedFailoverHoldAcknowledged"), "{events:#?}");
    let pdx = live.mysql_addr("pdx").unwrap_or_else(|e| panic!("{e}"));
    let report = verify_at(&ledger, pdx, &APPLICATION).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(report.rpo_zero(), "acknowledged writes missing on pdx: {:?}", report.lost);
    let directory = live.dir().to_owned();
    live.stop().await;
    assert!(!directory.exists(), "{} left behind", directory.display());

    // One record pair (the acknowledgement); the refused request wrote none.
    let records = Journal::read_all(&journal).unwrap();
    assert_eq!(records.len(), 2, "{records:#?}");
    assert_eq!((&records[0]["phase"], &records[1]["phase"]), (&"before".into(), &"after".into()));
    assert_eq!(records[0]["id"], records[1]["id"]);
    assert_eq!(records[1]["result"], "sent", "{:#}", records[1]);
    for record in &records {
        let operation = &record["operation"];
        assert_eq!(
            operation["run_id"].as_str().or(operation["runId"].as_str()),
            Some(run_id.as_str()),
            "{record:#}"
        );
    }
    let text: String = std::fs::read_dir(&journal)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    for secret in LAB_SECRETS {
        assert!(!text.contains(secret), "the journal holds the lab secret {secret}");
    }
}
