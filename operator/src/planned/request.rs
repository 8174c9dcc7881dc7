//! The request annotation (`bloodraven.shipstream.io/planned-failover`) and the hold
//! acknowledgement, parsed by the one-shot action grammar of `bloodraven-crd`.

use bloodraven_crd::annotations::{HoldAcknowledgement, PlannedFailoverRequest, ValueError};
use jiff::SignedDuration;

/// A parsed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The site to promote.
    pub target: String,
    /// The per-request `maxLagWait` override (1s to 1h).
    pub max_lag_wait: Option<SignedDuration>,
    /// The annotation value as written (removed only while it still holds this value).
    pub raw: String,
}

/// Why a request annotation was refused (`InvalidAnnotation`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "planned-failover request {input:?} refused at byte {position}: {detail}; write <site> or <site>:maxLagWait=<1s..1h>"
)]
pub struct RequestError {
    /// The annotation value.
    pub input: String,
    /// Byte offset of the problem in `input`.
    pub position: usize,
    /// What was wrong.
    pub detail: String,
}

impl From<ValueError> for RequestError {
    fn from(error: ValueError) -> RequestError {
        RequestError {
            input: error.input,
            position: error.position,
            detail: error.kind.to_string(),
        }
    }
}

impl RequestError {
    /// The target the value names, as far as it can be read (the text before the first `:`),
    /// for the `target_site` label of a refused request.
    pub fn requested_target(&self) -> &str {
        self.input.split(':').next().unwrap_or_default()
    }
}

/// Parses the request annotation value: `<site>(:maxLagWait=<duration>)?`.
pub fn parse_request(input: &str) -> Result<Request, RequestError> {
    let request = PlannedFailoverRequest::parse(input)?;
    let max_lag_wait =
        request.max_lag_wait().map(|wait| SignedDuration::from_nanos(wait.as_nanos()));
    Ok(Request { target: request.target_site().to_owned(), max_lag_wait, raw: input.to_owned() })
}

/// Parses the acknowledgement annotation value (a run ID).
pub fn parse_acknowledgement(input: &str) -> Result<String, RequestError> {
    Ok(HoldAcknowledgement::parse(input)?.run_id().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_with_an_override() {
        let request = parse_request("pdx:maxLagWait=30s").unwrap();
        assert_eq!(request.target, "pdx");
        assert_eq!(request.max_lag_wait, Some(SignedDuration::from_secs(30)));
        assert_eq!(parse_request("pdx").unwrap().max_lag_wait, None);
    }

    #[test]
    fn errors_name_the_input_and_the_position() {
        for (input, position) in [
            (":maxLagWait=5s", 0),
            ("pdx:maxLagWait=2h", 15),
            ("pdx:other=1", 4),
            ("pdx:maxLagWait=5s:maxLagWait=6s", 18),
            ("pdx:maxLagWait=5 s", 16),
        ] {
            let error = parse_request(input).unwrap_err();
            assert_eq!(error.input, input);
            assert_eq!(error.position, position, "{input}: {error}");
            assert!(error.to_string().contains(&format!("at byte {position}")), "{error}");
        }
        assert_eq!(parse_request("pdx:other=1").unwrap_err().requested_target(), "pdx");
    }
}
