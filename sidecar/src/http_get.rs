//! A minimal HTTP/1.0 GET client for the sidecar's probes (the operator's `/active-site`, the
//! peers' `/peer/ping` and `/peer/active-site`): one request per connection, bounded in time
//! and size. HTTP/1.0 keeps the answer unchunked; our servers (axum) answer it.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest answer read (the probes' answers are a few hundred bytes).
const MAX_ANSWER: u64 = 64 * 1024;

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The body, as text.
    pub body: String,
}

/// Why a GET got no answer.
#[derive(Debug, thiserror::Error)]
pub enum GetError {
    /// Connecting, writing or reading failed.
    #[error("GET http://{address}{path} failed: {source}; check that the address is reachable")]
    Io {
        /// `host:port`.
        address: String,
        /// The path asked for.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// No complete answer within the bound.
    #[error("GET http://{address}{path} got no answer within {timeout:?}")]
    Timeout {
        /// `host:port`.
        address: String,
        /// The path asked for.
        path: String,
        /// The bound.
        timeout: Duration,
    },
    /// The answer is not HTTP.
    #[error("GET http://{address}{path}: the answer is not an HTTP response ({detail})")]
    Malformed {
        /// `host:port`.
        address: String,
        /// The path asked for.
        path: String,
        /// What was wrong.
        detail: String,
    },
}

/// `GET http://<address><path>`, everything within `timeout`.
pub async fn get(address: &str, path: &str, timeout: Duration) -> Result<Reply, GetError> {
    let io = |source| GetError::Io { address: address.to_owned(), path: path.to_owned(), source };
    let exchange = async {
        let mut stream = TcpStream::connect(address).await.map_err(io)?;
        let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
        let request = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: */*\r\n\r\n");
        stream.write_all(request.as_bytes()).await.map_err(io)?;
        let mut answer = Vec::new();
        stream.take(MAX_ANSWER).read_to_end(&mut answer).await.map_err(io)?;
        Ok(answer)
    };
    let answer = tokio::time::timeout(timeout, exchange).await.map_err(|_| {
        GetError::Timeout { address: address.to_owned(), path: path.to_owned(), timeout }
    })??;
    parse(&answer).map_err(|detail| GetError::Malformed {
        address: address.to_owned(),
        path: path.to_owned(),
        detail,
    })
}

/// Parses a complete HTTP/1.x answer (status line, headers, body).
pub fn parse(answer: &[u8]) -> Result<Reply, String> {
    let split = answer
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or_else(|| format!("no end of headers in {} bytes", answer.len()))?;
    let head = std::str::from_utf8(&answer[..split]).map_err(|e| e.to_string())?;
    let status_line = head.lines().next().unwrap_or_default();
    let mut parts = status_line.split_whitespace();
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(format!("status line {status_line:?}"));
    }
    let status = parts
        .next()
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| format!("status line {status_line:?}"))?;
    let body = String::from_utf8_lossy(&answer[split + 4..]).into_owned();
    Ok(Reply { status, body })
}

/// Percent-encodes a query value (RFC 3986 unreserved characters pass).
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_and_garbage_is_named() {
        let reply = parse(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\npong").unwrap();
        assert_eq!(reply, Reply { status: 200, body: "pong".to_owned() });
        let reply = parse(b"HTTP/1.0 204 No Content\r\n\r\n").unwrap();
        assert_eq!(reply.status, 204);
        assert!(parse(b"SSH-2.0-OpenSSH\r\n\r\n").unwrap_err().contains("status line"));
        assert!(parse(b"HTTP/1.1 200 OK\r\n").unwrap_err().contains("no end of headers"));
    }

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(encode("orders-1"), "orders-1");
        assert_eq!(encode("a b&c"), "a%20b%26c");
    }

    #[tokio::test]
    async fn a_closed_port_is_an_io_error_naming_the_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        drop(listener);
        let error = get(&address, "/peer/ping", Duration::from_secs(2)).await.unwrap_err();
        assert!(matches!(error, GetError::Io { .. }), "{error}");
        assert!(error.to_string().contains(&address));
    }
}
