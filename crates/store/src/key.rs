//! Object key and listing-prefix validation (pure).
//!
//! One key syntax for both stores, so that an archive written to a PVC can be copied to S3
//! and back: `/`-separated segments, each non-empty, never `.` or `..`, no NUL, at most
//! [`MAX_SEGMENT_LEN`] bytes per segment and [`MAX_KEY_LEN`] bytes in all, no leading `/`.
//! Segments starting with [`TEMP_PREFIX`] are reserved for the filesystem store's temporary
//! files.

use crate::error::{Error, Result};

/// S3's limit on the length of an object key, in bytes.
pub const MAX_KEY_LEN: usize = 1024;
/// The usual `NAME_MAX`: the longest file name a Linux filesystem accepts, in bytes.
pub const MAX_SEGMENT_LEN: usize = 255;
/// Names the filesystem store gives its temporary files; never a valid key segment, and
/// never listed.
pub const TEMP_PREFIX: &str = ".bloodraven-tmp-";

fn invalid(key: &str, position: usize, reason: &'static str) -> Error {
    Error::InvalidKey { key: key.to_owned(), position, reason }
}

/// Checks one complete segment starting at byte `start` of `key`.
fn check_segment(key: &str, start: usize, segment: &str) -> Result<()> {
    if segment.is_empty() {
        return Err(invalid(key, start, "empty path segment"));
    }
    if segment == "." || segment == ".." {
        return Err(invalid(key, start, "`.` and `..` segments are not allowed"));
    }
    if segment.len() > MAX_SEGMENT_LEN {
        return Err(invalid(key, start, "path segment longer than 255 bytes"));
    }
    if segment.starts_with(TEMP_PREFIX) {
        return Err(invalid(key, start, "segment uses the reserved temporary-file prefix"));
    }
    Ok(())
}

fn check_common(key: &str) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(invalid(key, MAX_KEY_LEN, "longer than 1024 bytes"));
    }
    if let Some(position) = key.bytes().position(|byte| byte == 0) {
        return Err(invalid(key, position, "NUL byte"));
    }
    if key.starts_with('/') {
        return Err(invalid(key, 0, "absolute key (leading `/`)"));
    }
    Ok(())
}

/// Iterates `(start byte, segment)` over the `/`-separated segments of `text`.
fn segments(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = 0;
    text.split('/').map(move |segment| {
        let here = start;
        start += segment.len() + 1;
        (here, segment)
    })
}

/// Validates an object key and returns its segments.
pub fn validate_key(key: &str) -> Result<Vec<&str>> {
    if key.is_empty() {
        return Err(invalid(key, 0, "empty key"));
    }
    check_common(key)?;
    let mut out = Vec::new();
    for (start, segment) in segments(key) {
        check_segment(key, start, segment)?;
        out.push(segment);
    }
    Ok(out)
}

/// A validated listing prefix, split into the directory it names and the partial name after
/// the last `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prefix<'a> {
    /// Complete segments before the last `/` (empty for a prefix without `/`).
    pub directories: Vec<&'a str>,
    /// The text after the last `/` (may be empty); matches names that start with it.
    pub partial: &'a str,
}

/// Validates a listing prefix. A prefix is a plain string prefix of keys: `a/b` matches
/// `a/b/c` and `a/bc`. It may be empty or end with `/`; every complete segment before the
/// last `/` follows the key rules.
pub fn validate_prefix(prefix: &str) -> Result<Prefix<'_>> {
    check_common(prefix)?;
    let (directory_text, partial) = match prefix.rfind('/') {
        Some(last) => (Some(&prefix[..last]), &prefix[last + 1..]),
        None => (None, prefix),
    };
    let mut directories = Vec::new();
    if let Some(directory_text) = directory_text {
        for (start, segment) in segments(directory_text) {
            check_segment(prefix, start, segment)?;
            directories.push(segment);
        }
    }
    if partial.len() > MAX_SEGMENT_LEN {
        return Err(invalid(
            prefix,
            prefix.len() - partial.len(),
            "path segment longer than 255 bytes",
        ));
    }
    Ok(Prefix { directories, partial })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_error(key: &str) -> String {
        validate_key(key).unwrap_err().to_string()
    }

    #[test]
    fn valid_keys_split_into_segments() {
        assert_eq!(validate_key("a").unwrap(), ["a"]);
        assert_eq!(
            validate_key("binlogs/iad/mysql-bin.000042.ab12").unwrap(),
            ["binlogs", "iad", "mysql-bin.000042.ab12"]
        );
        assert_eq!(validate_key(".bloodraven-cas-probe-0123456789abcdef").unwrap().len(), 1);
        assert_eq!(validate_key("a/..b/c.").unwrap(), ["a", "..b", "c."]);
    }

    #[test]
    fn invalid_keys_name_the_byte() {
        assert_eq!(key_error(""), r#"invalid object key "" at byte 0: empty key"#);
        assert_eq!(
            key_error("/a"),
            r#"invalid object key "/a" at byte 0: absolute key (leading `/`)"#
        );
        assert_eq!(key_error("a//b"), r#"invalid object key "a//b" at byte 2: empty path segment"#);
        assert_eq!(key_error("a/"), r#"invalid object key "a/" at byte 2: empty path segment"#);
        assert_eq!(
            key_error("a/../b"),
            r#"invalid object key "a/../b" at byte 2: `.` and `..` segments are not allowed"#
        );
        assert_eq!(
            key_error("./a"),
            r#"invalid object key "./a" at byte 0: `.` and `..` segments are not allowed"#
        );
        assert_eq!(key_error("ab\0c"), r#"invalid object key "ab\0c" at byte 2: NUL byte"#);
        assert_eq!(
            key_error("x/.bloodraven-tmp-1"),
            r#"invalid object key "x/.bloodraven-tmp-1" at byte 2: segment uses the reserved temporary-file prefix"#
        );
        let long_segment = "s".repeat(256);
        assert!(key_error(&format!("a/{long_segment}")).contains("at byte 2: path segment longer"));
        let long_key = ["a"; 600].join("/");
        assert!(key_error(&long_key).contains("at byte 1024: longer than 1024 bytes"));
    }

    #[test]
    fn prefixes_split_into_directories_and_partial() {
        assert_eq!(validate_prefix("").unwrap(), Prefix { directories: vec![], partial: "" });
        assert_eq!(validate_prefix("man").unwrap(), Prefix { directories: vec![], partial: "man" });
        assert_eq!(
            validate_prefix("a/b/").unwrap(),
            Prefix { directories: vec!["a", "b"], partial: "" }
        );
        assert_eq!(
            validate_prefix("a/..").unwrap(),
            Prefix { directories: vec!["a"], partial: ".." }
        );
    }

    #[test]
    fn invalid_prefixes_name_the_byte() {
        let error = |prefix: &str| validate_prefix(prefix).unwrap_err().to_string();
        assert!(error("/a").contains("at byte 0: absolute key"));
        assert!(error("a//b").contains("at byte 2: empty path segment"));
        assert!(error("../a").contains("at byte 0: `.` and `..`"));
        assert!(error("a\0").contains("at byte 1: NUL byte"));
        assert!(error("/").contains("at byte 0"));
    }

    proptest::proptest! {
        /// Validation is total: any input is accepted or refused with a position inside it,
        /// and an accepted key joins back to itself.
        #[test]
        fn validation_is_total(text in "[a-z./\\x00-]{0,40}|\\PC{0,40}") {
            match validate_key(&text) {
                Ok(segments) => {
                    proptest::prop_assert_eq!(segments.join("/"), text.clone());
                    proptest::prop_assert!(validate_prefix(&text).is_ok());
                }
                Err(Error::InvalidKey { position, .. }) => {
                    proptest::prop_assert!(position <= text.len());
                }
                Err(other) => proptest::prop_assert!(false, "unexpected {other}"),
            }
            if let Err(Error::InvalidKey { position, .. }) = validate_prefix(&text) {
                proptest::prop_assert!(position <= text.len());
            }
        }
    }
}
