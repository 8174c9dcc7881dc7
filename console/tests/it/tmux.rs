//! End to end: the real binary in tmux (`bloodraven lab --scenario hold-standing`).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub(crate) const BINARY: &str = env!("CARGO_BIN_EXE_bloodraven");
const RUN_ID: &str = "6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10";

/// `tmux` from `BLOODRAVEN_TMUX` or PATH; a missing tmux fails the test.
pub(crate) fn tmux_path() -> PathBuf {
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
pub(crate) struct Server {
    pub(crate) tmux: PathBuf,
    pub(crate) socket: String,
}

impl Server {
    pub(crate) fn tmux(&self, arguments: &[&str]) -> Output {
        Command::new(&self.tmux).arg("-L").arg(&self.socket).args(arguments).output().unwrap()
    }

    pub(crate) fn capture(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "console"]).stdout)
            .into_owned()
    }

    /// The screen once it shows every needle and has settled: two captures 200 ms apart are
    /// identical, so a capture taken halfway through a redraw (the new panel's first lines over
    /// the old panel's last ones) is never returned.
    pub(crate) fn wait_for(&self, needles: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut previous: Option<String> = None;
        loop {
            let screen = self.capture();
            let shows = needles.iter().all(|needle| screen.contains(needle));
            if shows && previous.as_deref() == Some(screen.as_str()) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the pane never showed {needles:?} on a settled screen; it shows:\n{screen}"
            );
            previous = shows.then_some(screen);
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
        // tmux leaves its socket file behind (also when the last session ended by itself):
        // remove it, so no test leaves a file in /tmp.
        let _ = std::fs::remove_file(self.socket_path());
    }
}

impl Server {
    /// Where `tmux -L <socket>` puts its socket: `$TMUX_TMPDIR` (else `/tmp`)`/tmux-<uid>/`.
    fn socket_path(&self) -> PathBuf {
        use std::os::unix::fs::MetadataExt as _;
        let uid = std::fs::metadata("/proc/self").map_or(0, |meta| meta.uid());
        let dir =
            std::env::var_os("TMUX_TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
        dir.join(format!("tmux-{uid}")).join(&self.socket)
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

/// Filter edge cases in the real binary, then lab hygiene: SIGHUP (a closed terminal) ends the
/// console and its lab, and the lab's temporary folder goes with them.
#[test]
fn filter_edge_cases_and_sighup_removes_the_lab_folder() {
    let server = Server {
        tmux: tmux_path(),
        socket: format!("bloodraven-e2e-filter-{}", std::process::id()),
    };
    // A private TMPDIR: the lab's folder is the only thing the console puts there.
    let tmp = tempfile::tempdir().unwrap();
    let log = tempfile::NamedTempFile::new().unwrap();
    let command = format!(
        "exec env TERM=xterm-256color TMPDIR={} {BINARY} --log-file {} lab --scenario healthy",
        tmp.path().display(),
        log.path().display()
    );
    let started =
        server.tmux(&["new-session", "-d", "-s", "console", "-x", "120", "-y", "36", &command]);
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    server.wait_for(&["(3 of 3)", "connected"]);
    let lab_folders = || std::fs::read_dir(tmp.path()).unwrap().count();
    assert_eq!(lab_folders(), 1, "the lab made its folder in TMPDIR");

    // esc while typing drops the typed filter; nothing is hidden.
    server.tmux(&["send-keys", "-t", "console", "/", "zzz", "Escape"]);
    server.wait_for(&["(3 of 3)"]);
    // A filter that matches nothing says why; esc clears it.
    server.tmux(&["send-keys", "-t", "console", "/", "zzz", "Enter"]);
    server.wait_for(&["(0 of 3)", "the filter /zzz/ (esc clears it)"]);
    server.tmux(&["send-keys", "-t", "console", "Escape"]);
    server.wait_for(&["(3 of 3)"]);
    // An invalid regex hides nothing and says so.
    server.tmux(&["send-keys", "-t", "console", "/", "(", "Enter"]);
    server.wait_for(&["(3 of 3)", "is not a valid regex"]);
    server.tmux(&["send-keys", "-t", "console", "Escape"]);
    // A filter on a verdict word and the problems toggle together.
    server.tmux(&["send-keys", "-t", "console", "/", "critical", "Enter"]);
    server.wait_for(&["(1 of 3)", "carts"]);
    server.tmux(&["send-keys", "-t", "console", "p"]);
    server.wait_for(&["(1 of 3)", "problems only"]);

    let pid = String::from_utf8_lossy(
        &server.tmux(&["display-message", "-p", "-t", "console", "#{pane_pid}"]).stdout,
    )
    .trim()
    .to_owned();
    let hung_up = Command::new("kill").args(["-HUP", &pid]).status().unwrap();
    assert!(hung_up.success(), "kill -HUP {pid}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while lab_folders() > 0 || server.tmux(&["has-session", "-t", "console"]).status.success() {
        assert!(
            Instant::now() < deadline,
            "after SIGHUP the console still runs or its lab folder is left in {}",
            tmp.path().display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
