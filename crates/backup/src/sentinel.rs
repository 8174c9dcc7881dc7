//! The completion sentinel the backup Job prints last:
//! `BLOODRAVEN_DUMP_COMPLETE v=2 location=<v> sizeBytes=<n> gtidExecuted=<v> binlogFile=<v> binlogPos=<n>`.
//! Values are percent-encoded (`%20` for a space, `%25` for a percent sign; every byte outside
//! `A-Za-z0-9` and `_.-:/,@+` is encoded); underscores stay literal.

use std::fmt::Write as _;

/// The sentinel's first token.
pub const SENTINEL: &str = "BLOODRAVEN_DUMP_COMPLETE";

/// The fields of a sentinel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sentinel {
    pub location: String,
    pub size_bytes: Option<u64>,
    pub gtid_executed: Option<String>,
    pub binlog_file: Option<String>,
    pub binlog_pos: Option<u64>,
}

fn keep(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"_.-:/,@+".contains(&byte)
}

/// Percent-encodes one token value.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if keep(byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// Decodes a percent-encoded value; `None` when it is malformed or not UTF-8.
pub fn decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = value.get(at + 1..at + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl Sentinel {
    /// The line to print.
    pub fn to_line(&self) -> String {
        let mut line = format!("{SENTINEL} v=2 location={}", encode(&self.location));
        if let Some(size) = self.size_bytes {
            let _ = write!(line, " sizeBytes={size}");
        }
        if let Some(gtid) = &self.gtid_executed {
            let _ = write!(line, " gtidExecuted={}", encode(gtid));
        }
        if let Some(file) = &self.binlog_file {
            let _ = write!(line, " binlogFile={}", encode(file));
        }
        if let Some(pos) = self.binlog_pos {
            let _ = write!(line, " binlogPos={pos}");
        }
        line
    }

    /// The last v=2 sentinel in `log`; `None` when there is none (or it is unusable).
    pub fn find_in(log: &str) -> Option<Sentinel> {
        log.lines().rev().find_map(Sentinel::parse_line)
    }

    /// Parses one line.
    pub fn parse_line(line: &str) -> Option<Sentinel> {
        let mut tokens = line.split_ascii_whitespace();
        if tokens.next()? != SENTINEL || tokens.next()? != "v=2" {
            return None;
        }
        let mut out = Sentinel::default();
        let mut location = None;
        for token in tokens {
            let (key, value) = token.split_once('=')?;
            match key {
                "location" => location = Some(decode(value)?),
                "sizeBytes" => out.size_bytes = Some(value.parse().ok()?),
                "gtidExecuted" => out.gtid_executed = Some(decode(value)?),
                "binlogFile" => out.binlog_file = Some(decode(value)?),
                "binlogPos" => out.binlog_pos = Some(value.parse().ok()?),
                _ => {}
            }
        }
        out.location = location?;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_sentinel_round_trips_and_encodes_spaces() {
        let sentinel = Sentinel {
            location: "/backups/a b%/x_y".into(),
            size_bytes: Some(42),
            gtid_executed: Some(
                "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,\n4e11fa47-71ca-11e1-9e33-c80aa9429562:1"
                    .into(),
            ),
            binlog_file: Some("binlog.000002".into()),
            binlog_pos: Some(157),
        };
        let line = sentinel.to_line();
        assert!(line.contains("location=/backups/a%20b%25/x_y"), "{line}");
        assert_eq!(Sentinel::find_in(&format!("noise\n{line}\nmore")).unwrap(), sentinel);
    }

    #[test]
    fn other_lines_are_not_sentinels() {
        assert_eq!(Sentinel::parse_line("BLOODRAVEN_DUMP_COMPLETE location=x"), None);
        assert_eq!(Sentinel::parse_line("BLOODRAVEN_DUMP_COMPLETE v=2 sizeBytes=1"), None);
        assert_eq!(Sentinel::parse_line("BLOODRAVEN_DUMP_COMPLETE v=2 location=%zz"), None);
    }

    proptest! {
        #[test]
        fn encode_decode_round_trips(value in ".*") {
            prop_assert_eq!(decode(&encode(&value)), Some(value));
        }
    }
}
