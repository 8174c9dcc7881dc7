//! What a link does to its traffic: the fault, as a value (parsed from and printed as text for
//! drill files and reports).

use std::fmt;
use std::str::FromStr;

/// The fault a [`Link`](super::Link) applies. Changes take effect on live connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Forward everything as it comes.
    Pass,
    /// Hold every chunk `ms` milliseconds before forwarding it, in each direction (a round trip
    /// gains `2 × ms`). Latency, not bandwidth: chunks behind it are read meanwhile.
    Delay {
        /// Added one-way latency in milliseconds.
        ms: u64,
    },
    /// The partition that hangs: new connections are accepted but never connected upstream,
    /// bytes of live connections are read and held, nothing is forwarded. Healing forwards the
    /// held bytes in order, without loss.
    Blackhole,
    /// The partition that fails fast: the port stops listening (a client's connect gets
    /// "connection refused") and live connections are reset (RST).
    Refuse,
}

impl Fault {
    /// Whether bytes flow (possibly late).
    pub(crate) fn forwards(self) -> bool {
        matches!(self, Fault::Pass | Fault::Delay { .. })
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Pass => f.write_str("pass"),
            Fault::Delay { ms } => write!(f, "delay:{ms}"),
            Fault::Blackhole => f.write_str("blackhole"),
            Fault::Refuse => f.write_str("refuse"),
        }
    }
}

/// A fault text that is none of `pass`, `delay:<ms>`, `blackhole`, `refuse`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{text:?} is not a link fault: {why}; write one of pass, delay:<ms> (e.g. delay:50), blackhole, refuse"
)]
pub struct ParseFaultError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl FromStr for Fault {
    type Err = ParseFaultError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = |why| ParseFaultError { text: text.to_owned(), why };
        match text.trim() {
            "pass" => Ok(Fault::Pass),
            "blackhole" => Ok(Fault::Blackhole),
            "refuse" => Ok(Fault::Refuse),
            other => match other.strip_prefix("delay:") {
                Some(ms) => ms
                    .trim()
                    .trim_end_matches("ms")
                    .parse()
                    .map(|ms| Fault::Delay { ms })
                    .map_err(|_| error("the delay is not a whole number of milliseconds")),
                None => Err(error("unknown fault")),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_round_trip_through_text() {
        for fault in [Fault::Pass, Fault::Delay { ms: 50 }, Fault::Blackhole, Fault::Refuse] {
            assert_eq!(fault.to_string().parse::<Fault>(), Ok(fault));
        }
        assert_eq!("delay:25ms".parse::<Fault>(), Ok(Fault::Delay { ms: 25 }));
    }

    #[test]
    fn bad_fault_text_names_the_input() {
        let error = "delay:soon".parse::<Fault>().unwrap_err();
        assert_eq!(error.text, "delay:soon");
        assert!(error.to_string().contains("whole number of milliseconds"), "{error}");
        assert_eq!("drop".parse::<Fault>().unwrap_err().why, "unknown fault");
    }
}
