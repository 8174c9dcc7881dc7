//! End to end: the real binary in tmux (`bloodraven lab --scenario hold-standing`).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_bloodraven");
const RUN_ID: &str = "6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10";

/// `tmux` from `BLOODRAVEN_TMUX` or PATH; a missing tmux fails the test.
fn tmux_path() -> PathBuf {
    if let Some(path) = std::env::var_os("BLOODRAVEN_TMUX") {
        return PathBuf::from(path);
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("tmux"))
            .find(|candidate| candidate.is_file())
    });
    found.unwrap_or_else(|| {
        panic!("tmux is missing: run scripts/test.sh (it installs tmux) or set BLOODRAVEN_TMUX")
    })
}

/// A private tmux server; killed on drop, so no session outlives the test.
struct Server {
    tmux: PathBuf,
    socket: String,
}

impl Server {
    fn tmux(&self, arguments: &[&str]) -> Output {
        Command::new(&self.tmux).arg("-L").arg(&self.socket).args(arguments).output().unwrap()
    }

    fn capture(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "console"]).stdout)
            .into_owned()
    }

    fn wait_for(&self, needles: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.capture();
            if needles.iter().all(|needle| screen.contains(needle)) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the pane never showed {needles:?}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

#[test]
fn lab_hold_standing_shows_the_run_and_the_ambiguous_sites() {
    let server =
        Server { tmux: tmux_path(), socket: format!("bloodraven-e2e-{}", std::process::id()) };
    let log = tempfile::NamedTempFile::new().unwrap();
    let command = format!(
        "TERM=xterm-256color {BINARY} --log-file {} lab --scenario hold-standing",
        log.path().display()
    );
    let started =
        server.tmux(&["new-session", "-d", "-s", "console", "-x", "120", "-y", "36", &command]);
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    server.wait_for(&["orders", "+held", "connected"]);

    server.tmux(&["send-keys", "-t", "console", "Enter"]);
    server.wait_for(&["Overview", "orders/orders"]);
    server.tmux(&["send-keys", "-t", "console", "3"]);
    let screen = server.wait_for(&["AUTOMATIC FAILOVER IS HELD", RUN_ID]);
    assert!(screen.contains("Ambiguous sites:   iad, pdx"), "{screen}");

    server.tmux(&["send-keys", "-t", "console", "q"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.tmux(&["has-session", "-t", "console"]).status.success() {
        assert!(Instant::now() < deadline, "the console did not quit on q");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// On-call triage end to end: `fleet-1000` → problems only → a critical group → its
/// next-action line with the command to run.
#[test]
fn fleet_1000_problems_only_to_the_next_action() {
    let server = Server {
        tmux: tmux_path(),
        socket: format!("bloodraven-e2e-triage-{}", std::process::id()),
    };
    let log = tempfile::NamedTempFile::new().unwrap();
    let command = format!(
        "TERM=xterm-256color {BINARY} --log-file {} lab --scenario fleet-1000",
        log.path().display()
    );
    let started =
        server.tmux(&["new-session", "-d", "-s", "console", "-x", "120", "-y", "36", &command]);
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    server.wait_for(&["(1000 of 1000)", "8 critical", "connected"]);

    server.tmux(&["send-keys", "-t", "console", "p"]);
    server.wait_for(&["(35 of 1000)", "problems only"]);
    server.tmux(&["send-keys", "-t", "console", "/", "critical", "Enter"]);
    server.wait_for(&["(8 of 1000)", "[!!] critical"]);
    server.tmux(&["send-keys", "-t", "console", "Enter"]);
    let screen = server.wait_for(&["[!!] NEXT", "automation held", "$ kubectl annotate mfg"]);
    assert!(screen.contains("Overview"), "{screen}");

    server.tmux(&["send-keys", "-t", "console", "q"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.tmux(&["has-session", "-t", "console"]).status.success() {
        assert!(Instant::now() < deadline, "the console did not quit on q");
        std::thread::sleep(Duration::from_millis(100));
    }
}
