//! The PITR workbench end to end: the real binary in tmux, in write mode, on a lab API server
//! holding `pitr-divergent` with its archive laid under `--archive-root`. A target after the
//! lossy failover is refused `PITRArchiveDivergentHistory`; the workbench shows D and the
//! remedies; "exclude D" is picked, its confirm dialog shows the request, and the confirm
//! writes exactly one new group whose `initFromBackup.pointInTime` excludes D.

use std::time::{Duration, Instant};

use bloodraven_archive::fixtures::UUID_B;
use bloodraven_console::lab::{RunningLab, group_archive};
use bloodraven_crd::MysqlFailoverGroup;

use crate::ops::group;
use crate::tmux::{BINARY, Server, tmux_path};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn divergent_target_to_exclude_d_confirmed_and_written() {
    crate::install_crypto();
    // A whole-second "now", as `lab` lays the archive for it.
    let now = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second()).unwrap();
    let running = RunningLab::start("pitr-divergent", now).await.unwrap();
    let before = group(&running);
    let source: MysqlFailoverGroup = serde_json::from_value(before.clone()).unwrap();
    let fixture = group_archive("pitr-divergent", &source, now).unwrap().fixture;
    // The promoted site's last write: after the lost tail, so the pre-failover backup refuses.
    let committed = fixture.commit_time(UUID_B, 50).unwrap();
    let target = bloodraven_console::archive::workbench::stop_time(committed);
    running.lab.clear_requests();
    let folder = tempfile::tempdir().unwrap();
    let command = format!(
        "exec env TERM=xterm-256color XDG_CONFIG_HOME={} BLOODRAVEN_JOURNAL_DIR={} {BINARY} \
         --log-file {} --kubeconfig {} --archive-root {} -A --write",
        folder.path().join("config").display(),
        folder.path().join("journal").display(),
        folder.path().join("console.log").display(),
        running.kubeconfig().display(),
        running.directory().display(),
    );
    let server = Server {
        tmux: tmux_path(),
        socket: format!("bloodraven-e2e-workbench-{}", std::process::id()),
    };
    let typed = format!("pitr {target}");
    let driven = tokio::task::spawn_blocking(move || {
        let started =
            server.tmux(&["new-session", "-d", "-s", "console", "-x", "120", "-y", "36", &command]);
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
        server.wait_for(&["orders", "connected", "WRITE"]);
        server.tmux(&["send-keys", "-t", "console", "Enter"]);
        server.wait_for(&["Overview", "orders/orders"]);
        server.tmux(&["send-keys", "-t", "console", "6"]);
        server.wait_for(&["Archive coverage", "archive read"]);
        server.tmux(&["send-keys", "-t", "console", ":"]);
        server.tmux(&["send-keys", "-t", "console", "-l", &typed]);
        server.tmux(&["send-keys", "-t", "console", "Enter"]);
        server.wait_for(&[
            "PITR workbench",
            "REFUSED PITRArchiveDivergentHistory",
            "D, by site",
            "Remedies, each planned",
        ]);
        // The plannable remedies: exclude D first.
        server.tmux(&["send-keys", "-t", "console", "a"]);
        server.wait_for(&["guided operations: orders/orders", "excluding"]);
        server.tmux(&["send-keys", "-t", "console", "Enter"]);
        let dialog = server.wait_for(&[
            "confirm: restore-pitr-to-new-group",
            "the PITR workbench: exclude D",
            "RBAC: allowed",
        ]);
        assert!(dialog.contains("mysqlfailovergroups"), "{dialog}");
        server.tmux(&["send-keys", "-t", "console", "Tab"]);
        server.wait_for(&["[ Confirm ]"]);
        server.tmux(&["send-keys", "-t", "console", "Enter"]);
        server.wait_for(&["sent: operation restore-pitr-to-new-group-"]);
        // Any key closes the done dialog.
        server.tmux(&["send-keys", "-t", "console", "x"]);
        server.wait_for(&["sent: restore backup orders-nightly-20260419"]);
        server.tmux(&["send-keys", "-t", "console", "q"]);
        let deadline = Instant::now() + Duration::from_secs(20);
        while server.tmux(&["has-session", "-t", "console"]).status.success() {
            assert!(Instant::now() < deadline, "the console did not quit on q");
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    driven.await.unwrap();

    // Exactly one write of state: the new group (plus the reviews and the Event).
    let writes: Vec<(String, String)> = running
        .lab
        .requests()
        .iter()
        .filter(|request| request.is_write() && !request.path.contains("selfsubject"))
        .filter(|request| !request.path.ends_with("/events"))
        .map(|request| (request.method.clone(), request.path.clone()))
        .collect();
    assert_eq!(
        writes,
        [(
            "POST".to_owned(),
            "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups".to_owned()
        )],
    );
    let name = format!("orders-pitr-{}", committed.strftime("%Y%m%dt%H%M%Sz"));
    let created = running
        .lab
        .get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some("orders"), &name)
        .unwrap();
    let point_in_time = &created["spec"]["initFromBackup"]["pointInTime"];
    assert_eq!(point_in_time["stopTime"], target.as_str());
    assert_eq!(point_in_time["archiveProfileName"], "nightly");
    let lost = bloodraven_archive::fixtures::range(bloodraven_archive::fixtures::UUID_A, 96, 100);
    assert_eq!(point_in_time["excludeGtids"], lost.to_compact_string().as_str());
    assert_eq!(
        created["spec"]["initFromBackup"]["source"]["backupRef"]["name"],
        "orders-nightly-20260419"
    );
    // The source group is untouched.
    assert_eq!(group(&running)["spec"], before["spec"]);
    running.stop().await.unwrap();
}
