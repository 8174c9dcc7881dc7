//! A minimal MySQL client session for the workload: plain TCP, `caching_sha2_password` (fast
//! path, or full authentication with the server's RSA key), `COM_QUERY`, and the OK packet's
//! session-state block.
//!
//! Why not `mysql_async`: version 0.37 never sets `CLIENT_SESSION_TRACK` in its handshake, so
//! the server never sends the `session_track_gtids` block and the GTID a COMMIT was given
//! cannot be read from its OK packet. Asking `@@gtid_executed` afterwards is not the same
//! thing (other sessions commit meanwhile). The packet codecs come from `mysql_common`, the
//! crate `mysql_async` is built on.

use std::borrow::Cow;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use mysql_common::constants::{CapabilityFlags, SessionStateType, StatusFlags};
use mysql_common::io::ParseBuf;
use mysql_common::packets::session_state_change::SessionStateChange;
use mysql_common::packets::{
    AuthPlugin, AuthSwitchRequest, CommonOkPacket, ErrPacket, HandshakePacket, HandshakeResponse,
    OkPacketDeserializer,
};
use mysql_common::proto::MySerialize as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// What a session call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The TCP connection failed or broke (refused, reset, closed).
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    /// No answer in time (a hung server or a blackholed link).
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The server answered with an error packet.
    #[error("server error {code} ({state}): {message}")]
    Server {
        /// The MySQL error number (1290 read-only, 1836 super_read_only replica, 3032 offline…).
        code: u16,
        /// SQLSTATE.
        state: String,
        /// The message.
        message: String,
    },
    /// The server said something this client does not understand.
    #[error("protocol: {0}")]
    Protocol(String),
}

/// What an OK packet told us.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OkInfo {
    /// Affected rows.
    pub affected_rows: u64,
    /// The GTIDs of the session-state `SESSION_TRACK_GTIDS` entry (with
    /// `session_track_gtids = OWN_GTID`: the GTID of the transaction this statement committed).
    pub gtids: Option<String>,
    /// `SERVER_MORE_RESULTS_EXISTS`: another statement of the same query answers next.
    more_results: bool,
}

/// How a query of several statements ([`Session::query_statements`]) failed.
#[derive(Debug)]
pub struct StatementsError {
    /// How many statements answered OK before the failure (the server runs no statement after
    /// one that failed; after a connection error the ones sent may still have run).
    pub answered: usize,
    /// The failure.
    pub error: WireError,
}

/// One authenticated session.
#[derive(Debug)]
pub struct Session {
    stream: TcpStream,
    seq: u8,
    capabilities: CapabilityFlags,
    timeout: Duration,
}

const MAX_PACKET: u32 = 16 * 1024 * 1024;

impl Session {
    /// Connects and authenticates; every network wait is bounded by `timeout`.
    pub async fn connect(
        addr: SocketAddr,
        user: &str,
        password: &str,
        db: Option<&str>,
        timeout: Duration,
    ) -> Result<Self, WireError> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| WireError::Timeout(timeout))??;
        stream.set_nodelay(true)?;
        let mut session = Self { stream, seq: 0, capabilities: CapabilityFlags::empty(), timeout };
        tokio::time::timeout(timeout, session.handshake(user, password, db))
            .await
            .map_err(|_| WireError::Timeout(timeout))??;
        Ok(session)
    }

    async fn read_packet(&mut self) -> Result<Vec<u8>, WireError> {
        let mut header = [0u8; 4];
        self.stream.read_exact(&mut header).await?;
        let len =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        self.seq = header[3].wrapping_add(1);
        let mut payload = vec![0u8; len];
        self.stream.read_exact(&mut payload).await?;
        Ok(payload)
    }

    async fn write_packet(&mut self, payload: &[u8]) -> Result<(), WireError> {
        let len = u32::try_from(payload.len())
            .ok()
            .filter(|l| *l < 0x00ff_ffff)
            .ok_or_else(|| WireError::Protocol(format!("packet of {} bytes", payload.len())))?;
        let mut frame = Vec::with_capacity(payload.len() + 4);
        frame.extend_from_slice(&len.to_le_bytes()[..3]);
        frame.push(self.seq);
        frame.extend_from_slice(payload);
        self.seq = self.seq.wrapping_add(1);
        self.stream.write_all(&frame).await?;
        Ok(())
    }

    fn server_error(&self, payload: &[u8]) -> WireError {
        match ParseBuf(payload).parse::<ErrPacket<'_>>(self.capabilities) {
            Ok(ErrPacket::Error(e)) => WireError::Server {
                code: e.error_code(),
                state: e.sql_state_ref().map(|s| s.as_str().into_owned()).unwrap_or_default(),
                message: e.message_str().into_owned(),
            },
            Ok(ErrPacket::Progress(_)) => WireError::Protocol("unexpected progress report".into()),
            Err(e) => WireError::Protocol(format!("unreadable error packet: {e}")),
        }
    }

    fn ok(&self, payload: &[u8]) -> Result<OkInfo, WireError> {
        let ok = ParseBuf(payload)
            .parse::<OkPacketDeserializer<'_, CommonOkPacket>>(self.capabilities)
            .map_err(|e| WireError::Protocol(format!("unreadable OK packet: {e}")))?
            .into_inner();
        let mut gtids = None;
        for info in ok
            .session_state_info()
            .map_err(|e| WireError::Protocol(format!("session state: {e}")))?
        {
            if info.data_type() == SessionStateType::SESSION_TRACK_GTIDS
                && let Ok(SessionStateChange::Gtids(g)) = info.decode()
            {
                gtids = Some(parse_tracker_gtids(g.as_bytes())?);
            }
        }
        Ok(OkInfo {
            affected_rows: ok.affected_rows(),
            gtids,
            more_results: ok.status_flags().contains(StatusFlags::SERVER_MORE_RESULTS_EXISTS),
        })
    }

    async fn handshake(
        &mut self,
        user: &str,
        password: &str,
        db: Option<&str>,
    ) -> Result<(), WireError> {
        let packet = self.read_packet().await?;
        if packet.first() == Some(&0xff) {
            return Err(self.server_error(&packet));
        }
        let hs = ParseBuf(&packet)
            .parse::<HandshakePacket<'_>>(())
            .map_err(|e| WireError::Protocol(format!("unreadable handshake: {e}")))?;
        let mut nonce = hs.scramble_1_ref().to_vec();
        nonce.extend_from_slice(hs.scramble_2_ref().unwrap_or_default());
        nonce.resize(20, 0);
        let wanted = CapabilityFlags::CLIENT_PROTOCOL_41
            | CapabilityFlags::CLIENT_SECURE_CONNECTION
            | CapabilityFlags::CLIENT_LONG_PASSWORD
            | CapabilityFlags::CLIENT_TRANSACTIONS
            | CapabilityFlags::CLIENT_MULTI_RESULTS
            | CapabilityFlags::CLIENT_MULTI_STATEMENTS
            | CapabilityFlags::CLIENT_DEPRECATE_EOF
            | CapabilityFlags::CLIENT_PLUGIN_AUTH
            | CapabilityFlags::CLIENT_SESSION_TRACK
            | if db.is_some() {
                CapabilityFlags::CLIENT_CONNECT_WITH_DB
            } else {
                CapabilityFlags::empty()
            };
        self.capabilities = hs.capabilities() & wanted;
        if !self.capabilities.contains(CapabilityFlags::CLIENT_SESSION_TRACK) {
            return Err(WireError::Protocol(
                "the server does not offer CLIENT_SESSION_TRACK".into(),
            ));
        }
        let server_version = hs.server_version_parsed().unwrap_or((9, 0, 0));
        let auth_data = scramble(password, &nonce);
        let response = HandshakeResponse::new(
            Some(Cow::Owned(auth_data)),
            server_version,
            Some(user.as_bytes()),
            db.map(str::as_bytes),
            Some(AuthPlugin::CachingSha2Password),
            self.capabilities,
            None,
            MAX_PACKET,
        );
        let mut buf = Vec::new();
        response.serialize(&mut buf);
        self.write_packet(&buf).await?;
        let mut switched = false;
        loop {
            let packet = self.read_packet().await?;
            match packet.first() {
                Some(0x00) => return Ok(()),
                Some(0xff) => return Err(self.server_error(&packet)),
                Some(0x01) => match packet.get(1) {
                    Some(0x03) => {} // fast authentication: the OK follows
                    Some(0x04) => {
                        // Full authentication over plain TCP: fetch the RSA key, send the
                        // password XORed with the nonce, encrypted with it.
                        self.write_packet(&[0x02]).await?;
                        let key = self.read_packet().await?;
                        let key = key
                            .get(1..)
                            .ok_or_else(|| WireError::Protocol("empty RSA key".into()))?;
                        let mut pass = password.as_bytes().to_vec();
                        pass.push(0);
                        for (i, b) in pass.iter_mut().enumerate() {
                            *b ^= nonce[i % nonce.len()];
                        }
                        let encrypted = mysql_common::crypto::encrypt(&pass, key);
                        self.write_packet(&encrypted).await?;
                    }
                    other => return Err(WireError::Protocol(format!("auth-more-data {other:?}"))),
                },
                Some(0xfe) if !switched => {
                    switched = true;
                    let req = ParseBuf(&packet)
                        .parse::<AuthSwitchRequest<'_>>(())
                        .map_err(|e| WireError::Protocol(format!("auth switch: {e}")))?;
                    if req.auth_plugin() != AuthPlugin::CachingSha2Password {
                        return Err(WireError::Protocol(format!(
                            "server asks for auth plugin {:?}; only caching_sha2_password is supported",
                            req.auth_plugin()
                        )));
                    }
                    nonce = req.plugin_data().to_vec();
                    nonce.truncate(20);
                    let data = scramble(password, &nonce);
                    self.write_packet(&data).await?;
                }
                other => {
                    return Err(WireError::Protocol(format!("unexpected auth packet {other:?}")));
                }
            }
        }
    }

    /// Runs one statement; returns the OK packet's information, or skips a result set.
    pub async fn query(&mut self, sql: &str) -> Result<OkInfo, WireError> {
        let timeout = self.timeout;
        tokio::time::timeout(timeout, self.query_inner(sql))
            .await
            .map_err(|_| WireError::Timeout(timeout))?
    }

    /// Sends `statements` (none returning rows) in one `COM_QUERY`, `;`-separated, and reads
    /// their OK packets in order: one round trip for all. The server stops at the first
    /// statement that fails; [`StatementsError::answered`] says how many answered OK before.
    /// Every network wait together is bounded by the session's timeout.
    pub async fn query_statements(
        &mut self,
        statements: &[&str],
    ) -> Result<Vec<OkInfo>, StatementsError> {
        let timeout = self.timeout;
        let mut answers = Vec::with_capacity(statements.len());
        let sql = statements.join("; ");
        let read = async {
            self.send_query(&sql).await?;
            loop {
                let answer = self.read_answer().await?;
                let more = answer.more_results;
                answers.push(answer);
                if !more {
                    return Ok(());
                }
            }
        };
        let result =
            tokio::time::timeout(timeout, read).await.unwrap_or(Err(WireError::Timeout(timeout)));
        match result {
            Ok(()) if answers.len() == statements.len() => Ok(answers),
            Ok(()) => Err(StatementsError {
                answered: answers.len(),
                error: WireError::Protocol(format!(
                    "{} answers to {} statements",
                    answers.len(),
                    statements.len()
                )),
            }),
            Err(error) => Err(StatementsError { answered: answers.len(), error }),
        }
    }

    async fn send_query(&mut self, sql: &str) -> Result<(), WireError> {
        self.seq = 0;
        let mut payload = Vec::with_capacity(sql.len() + 1);
        payload.push(0x03);
        payload.extend_from_slice(sql.as_bytes());
        self.write_packet(&payload).await
    }

    /// One statement's answer: its OK packet, or an error.
    async fn read_answer(&mut self) -> Result<OkInfo, WireError> {
        let first = self.read_packet().await?;
        match first.first() {
            Some(0x00) => self.ok(&first),
            Some(0xff) => Err(self.server_error(&first)),
            Some(other) => Err(WireError::Protocol(format!(
                "a result set (header {other:#04x}) where an OK packet was expected"
            ))),
            None => Err(WireError::Protocol("empty response".into())),
        }
    }

    async fn query_inner(&mut self, sql: &str) -> Result<OkInfo, WireError> {
        self.seq = 0;
        let mut payload = Vec::with_capacity(sql.len() + 1);
        payload.push(0x03);
        payload.extend_from_slice(sql.as_bytes());
        self.write_packet(&payload).await?;
        let first = self.read_packet().await?;
        match first.first() {
            Some(0x00) => self.ok(&first),
            Some(0xff) => Err(self.server_error(&first)),
            Some(_) => {
                // A result set: column definitions, then rows, ended by an OK (0xfe header).
                loop {
                    let p = self.read_packet().await?;
                    if p.first() == Some(&0xff) {
                        return Err(self.server_error(&p));
                    }
                    if p.first() == Some(&0xfe) && p.len() < 0x00ff_ffff && p.len() > 6
                        || p == [0xfe]
                    {
                        return Ok(OkInfo::default());
                    }
                }
            }
            None => Err(WireError::Protocol("empty response".into())),
        }
    }
}

fn scramble(password: &str, nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    mysql_common::scramble::scramble_sha256(nonce, password.as_bytes())
        .map(|s| s.to_vec())
        .unwrap_or_default()
}

/// The `SESSION_TRACK_GTIDS` entry's data: an encoding byte (0: text), then the GTID set as a
/// length-encoded string.
pub(crate) fn parse_tracker_gtids(data: &[u8]) -> Result<String, WireError> {
    let bad = || WireError::Protocol(format!("SESSION_TRACK_GTIDS entry {data:?}"));
    let (&encoding, rest) = data.split_first().ok_or_else(bad)?;
    if encoding != 0 {
        return Err(bad());
    }
    let (len, rest) = lenenc(rest).ok_or_else(bad)?;
    let text = rest.get(..len).ok_or_else(bad)?;
    Ok(String::from_utf8_lossy(text).into_owned())
}

fn lenenc(data: &[u8]) -> Option<(usize, &[u8])> {
    let (&first, rest) = data.split_first()?;
    let (n, width) = match first {
        0..=0xfa => return Some((usize::from(first), rest)),
        0xfc => (2, 2),
        0xfd => (3, 3),
        0xfe => (8, 8),
        _ => return None,
    };
    let bytes = rest.get(..n)?;
    let mut value = 0usize;
    for (i, b) in bytes.iter().enumerate() {
        value |= usize::from(*b) << (8 * i);
    }
    Some((value, rest.get(width..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracker_gtids_are_an_encoding_byte_and_a_lenenc_string() {
        let text = "3e11fa47-71ca-11e1-9e33-c80aa9429562:5";
        let mut data = vec![0u8, u8::try_from(text.len()).unwrap()];
        data.extend_from_slice(text.as_bytes());
        assert_eq!(parse_tracker_gtids(&data).unwrap(), text);
        assert!(parse_tracker_gtids(&[1, 0]).is_err());
        assert!(parse_tracker_gtids(&[0, 5, b'a']).is_err());
        assert!(parse_tracker_gtids(&[]).is_err());
    }
}
