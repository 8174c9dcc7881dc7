//! Runs the probe binary (`probe/main.rs`) under `BLOODRAVEN_CRASH_AT` and reads where it
//! stopped: by SIGABRT, stderr naming the step, stdout ending at exactly the n-th hit.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use bloodraven_crashpoint::{ENV, Step};

const SIGABRT: i32 = 6;
/// Generous: the probe does nothing but print (CI shares 2 cores with real servers).
const DEADLINE: Duration = Duration::from_secs(60);

/// Runs the probe with `BLOODRAVEN_CRASH_AT` set to `crash_at` (or unset), bounded in time.
fn probe(crash_at: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bloodraven-crashpoint-probe"));
    command.env_remove(ENV).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(crash_at) = crash_at {
        command.env(ENV, crash_at);
    }
    let mut child = command.spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > DEADLINE {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("the probe did not exit within {DEADLINE:?} (BLOODRAVEN_CRASH_AT={crash_at:?})");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn stdout_lines(output: &Output) -> Vec<String> {
    String::from_utf8(output.stdout.clone()).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn aborts_at_exactly_the_nth_hit_of_the_step() {
    let step = Step::SidecarRetireBetweenWrites;
    let output = probe(Some(&format!("{step}:2")));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.signal(),
        Some(SIGABRT),
        "not killed by SIGABRT: {:?}; stderr: {stderr}",
        output.status
    );
    assert!(
        stderr.contains(&format!("aborting at {step} (hit 2)")),
        "stderr does not name the step: {stderr}"
    );
    // Every step of round 1, then round 2 up to and including the armed step, nothing after.
    let position = Step::ALL.iter().position(|s| *s == step).unwrap();
    let mut expected: Vec<String> = Step::ALL.iter().map(|s| format!("{s} 1")).collect();
    expected.extend(Step::ALL[..=position].iter().map(|s| format!("{s} 2")));
    assert_eq!(stdout_lines(&output), expected);
}

#[test]
fn the_count_defaults_to_the_first_hit() {
    let step = Step::OperatorFailoverAfterFenceRecord;
    let position = Step::ALL.iter().position(|s| *s == step).unwrap();
    let output = probe(Some(step.name()));
    assert_eq!(output.status.signal(), Some(SIGABRT), "{:?}", output.status);
    let expected: Vec<String> = Step::ALL[..=position].iter().map(|s| format!("{s} 1")).collect();
    assert_eq!(stdout_lines(&output), expected);
}

#[test]
fn unarmed_runs_to_the_end() {
    let output = probe(None);
    assert!(output.status.success(), "{:?}", output.status);
    assert_eq!(stdout_lines(&output).last().map(String::as_str), Some("done"));
}

#[test]
fn a_count_beyond_the_hits_never_fires() {
    let output = probe(Some("sidecar.retire.between-writes:4"));
    assert!(output.status.success(), "{:?}", output.status);
}

#[test]
fn an_unknown_step_stops_the_binary_at_startup() {
    let output = probe(Some("operator.failover.after-lunch"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{:?}; stderr: {stderr}", output.status);
    assert!(stderr.contains("\"operator.failover.after-lunch\" is not a crash point"), "{stderr}");
    assert!(output.stdout.is_empty(), "the probe ran steps despite the bad variable");
}

#[test]
fn a_bad_count_stops_the_binary_at_startup() {
    let output = probe(Some("sidecar.retire.between-writes:0"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{:?}; stderr: {stderr}", output.status);
    assert!(stderr.contains("is not a whole number >= 1"), "{stderr}");
}
