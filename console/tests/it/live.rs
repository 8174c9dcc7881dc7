//! `bloodraven lab --live` through its library entry: real MySQL 9.7 sites run by the lab
//! kubelet (needs `source scripts/provision.sh`).

use std::time::{Duration, Instant};

use bloodraven_console::live::LiveLab;

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_lab_reaches_a_ready_three_site_group_and_stops_leaving_no_mysqld() {
    crate::install_crypto();
    let live = LiveLab::start().await.unwrap_or_else(|e| panic!("{e:#}"));
    live.wait_ready(Duration::from_secs(180)).await.unwrap_or_else(|e| panic!("{e:#}"));
    let pids: Vec<u32> = live
        .pids()
        .into_iter()
        .map(|(deployment, pid)| pid.unwrap_or_else(|| panic!("{deployment} has no mysqld")))
        .collect();
    assert_eq!(pids.len(), 3, "iad, pdx and fra");
    assert!(pids.iter().all(|pid| alive(*pid)), "{pids:?}");
    let directory = live.directory().to_owned();
    live.stop().await.unwrap();
    let started = Instant::now();
    while pids.iter().any(|pid| alive(*pid)) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "waited 60 s for the mysqld processes {pids:?} to end after stop"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!directory.exists(), "{} left behind", directory.display());
}
