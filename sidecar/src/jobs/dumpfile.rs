//! Reading mysqldump's header: the GTID set its consistent snapshot sets as `GTID_PURGED`
//! (`--set-gtid-purged=ON`) and the binlog coordinates it comments (`--source-data=2`).

/// How much of the dump's beginning is kept to find the header.
pub const HEADER_BYTES: usize = 16 * 1024 * 1024;

/// What the header says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    /// `SET @@GLOBAL.GTID_PURGED=/*!80000 '+'*/ '<set>';` — the set, newlines removed.
    pub gtid_purged: Option<String>,
    /// `CHANGE REPLICATION SOURCE TO SOURCE_LOG_FILE='<file>', SOURCE_LOG_POS=<pos>;`
    pub binlog_file: Option<String>,
    pub binlog_pos: Option<u64>,
}

fn quoted_after<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let start = rest.find('\'')? + 1;
    let end = start + rest[start..].find('\'')?;
    Some(&rest[start..end])
}

/// Parses the header from the dump's first bytes (lossy UTF-8 is fine: the header is ASCII).
pub fn parse_header(head: &[u8]) -> Header {
    let text = String::from_utf8_lossy(head);
    let mut header = Header::default();
    if let Some(at) = text.find("SET @@GLOBAL.GTID_PURGED=") {
        let statement = &text[at..];
        let statement = &statement[..statement.find("';").map_or(statement.len(), |end| end + 1)];
        // The value is the last quoted string of the statement (after the `'+'` comment).
        if let Some(open) = statement[..statement.len().saturating_sub(1)].rfind('\'')
            && statement.ends_with('\'')
        {
            let set: String = statement[open + 1..statement.len() - 1]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            header.gtid_purged = Some(set);
        }
    }
    if let Some(file) = quoted_after(&text, "SOURCE_LOG_FILE=") {
        header.binlog_file = Some(file.to_owned());
    }
    if let Some(at) = text.find("SOURCE_LOG_POS=") {
        let digits: String =
            text[at + "SOURCE_LOG_POS=".len()..].chars().take_while(char::is_ascii_digit).collect();
        header.binlog_pos = digits.parse().ok();
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gtid_set_and_coordinates_are_read() {
        let head = b"-- MySQL dump 10.13\n\
SET @@SESSION.SQL_LOG_BIN= 0;\n\
\n\
--\n-- GTID state at the beginning of the backup \n--\n\n\
SET @@GLOBAL.GTID_PURGED=/*!80000 '+'*/ '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,\n\
4e11fa47-71ca-11e1-9e33-c80aa9429562:1-2';\n\
\n-- CHANGE REPLICATION SOURCE TO SOURCE_LOG_FILE='binlog.000002', SOURCE_LOG_POS=1234;\n";
        let header = parse_header(head);
        assert_eq!(
            header.gtid_purged.as_deref(),
            Some(
                "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,4e11fa47-71ca-11e1-9e33-c80aa9429562:1-2"
            )
        );
        assert_eq!(header.binlog_file.as_deref(), Some("binlog.000002"));
        assert_eq!(header.binlog_pos, Some(1234));
    }

    #[test]
    fn an_empty_set_and_a_missing_header() {
        let header = parse_header(b"SET @@GLOBAL.GTID_PURGED=/*!80000 '+'*/ '';\n");
        assert_eq!(header.gtid_purged.as_deref(), Some(""));
        assert_eq!(parse_header(b"-- nothing"), Header::default());
    }
}
