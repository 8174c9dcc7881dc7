//! The crash-point probe: walks every step `ROUNDS` times, printing `<step> <n>` to stdout
//! before each hit, so a test can see exactly where `BLOODRAVEN_CRASH_AT` stopped it. Exits 2
//! with the error when `BLOODRAVEN_CRASH_AT` is bad (what real binaries do at startup).

use std::io::Write;
use std::process::ExitCode;

use bloodraven_crashpoint::{Step, check_env, hit};

const ROUNDS: u64 = 3;

fn main() -> ExitCode {
    let mut stderr = std::io::stderr();
    if let Err(error) = check_env() {
        let _ = writeln!(stderr, "bloodraven-crashpoint-probe: {error}");
        return ExitCode::from(2);
    }
    let mut stdout = std::io::stdout();
    for round in 1..=ROUNDS {
        for step in Step::ALL {
            // Flushed before the hit: the abort loses nothing the test reads.
            let _ = writeln!(stdout, "{step} {round}");
            let _ = stdout.flush();
            hit(*step);
        }
    }
    let _ = writeln!(stdout, "done");
    ExitCode::SUCCESS
}
