//! Archive destinations and their normalized form, from which the archive ID is derived.
//!
//! The spec: the destination is `s3://<bucket>/<prefix>/binlogs?endpoint=<endpoint>` or
//! `pvc://<namespace>/<claim>/<subPath>/binlogs`. Leading, trailing and repeated `/` in an S3
//! prefix are dropped (so `/prod` and `prod` name the same archive); the endpoint's scheme and host
//! are lower-cased, the default port is dropped, and an empty endpoint means AWS.

use std::fmt;

use crate::{ARCHIVE_DIR, Error, Result};

/// What an empty endpoint means: AWS S3's global endpoint.
pub const AWS_ENDPOINT: &str = "https://s3.amazonaws.com";

/// A backup profile's storage, as the profile spells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// An S3 bucket.
    S3 {
        /// The bucket name.
        bucket: String,
        /// The profile's prefix (may be empty, may carry stray `/`).
        prefix: String,
        /// The endpoint URL; empty means AWS.
        endpoint: String,
    },
    /// A PersistentVolumeClaim.
    Pvc {
        /// The claim's namespace.
        namespace: String,
        /// The claim's name.
        claim: String,
        /// The profile's sub-path inside the volume (may be empty).
        sub_path: String,
    },
}

/// A normalized destination: the text the archive ID is derived from and that the operator
/// publishes as `status.pitr.archive.destination`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NormalizedDestination(String);

impl NormalizedDestination {
    /// Wraps text already in normalized form (fixtures).
    #[cfg(feature = "fixtures")]
    pub(crate) fn new_unchecked(text: &str) -> Self {
        NormalizedDestination(text.to_owned())
    }

    /// The normalized text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NormalizedDestination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Destination {
    /// Normalizes the destination (see the module docs).
    pub fn normalize(&self) -> Result<NormalizedDestination> {
        match self {
            Destination::S3 { bucket, prefix, endpoint } => {
                if bucket.is_empty() {
                    return Err(invalid("s3 bucket is empty"));
                }
                if let Some(offset) = bucket.find(|c: char| {
                    matches!(c, '/' | '?' | '#') || c.is_whitespace() || c.is_control()
                }) {
                    return Err(invalid(&format!(
                        "s3 bucket {bucket:?} has a forbidden character at byte {offset}"
                    )));
                }
                let prefix = normalize_path(prefix, "s3 prefix")?;
                let endpoint = normalize_endpoint(endpoint)?;
                let mut text = format!("s3://{bucket}/");
                if !prefix.is_empty() {
                    text.push_str(&prefix);
                    text.push('/');
                }
                text.push_str(ARCHIVE_DIR);
                text.push_str("?endpoint=");
                text.push_str(&endpoint);
                Ok(NormalizedDestination(text))
            }
            Destination::Pvc { namespace, claim, sub_path } => {
                if !is_dns_label(namespace) {
                    return Err(invalid(&format!(
                        "pvc namespace {namespace:?} is not a DNS label"
                    )));
                }
                if !is_dns_subdomain(claim) {
                    return Err(invalid(&format!("pvc claim {claim:?} is not a DNS subdomain")));
                }
                let sub_path = normalize_path(sub_path, "pvc subPath")?;
                let mut text = format!("pvc://{namespace}/{claim}/");
                if !sub_path.is_empty() {
                    text.push_str(&sub_path);
                    text.push('/');
                }
                text.push_str(ARCHIVE_DIR);
                Ok(NormalizedDestination(text))
            }
        }
    }
}

fn invalid(detail: &str) -> Error {
    Error::InvalidDestination(detail.to_owned())
}

/// Drops leading, trailing and repeated `/`; refuses `.`/`..` segments and control characters.
fn normalize_path(path: &str, what: &str) -> Result<String> {
    if let Some(offset) = path.find(|c: char| c.is_control() || c == '?' || c == '#') {
        return Err(invalid(&format!(
            "{what} {path:?} has a forbidden character at byte {offset}"
        )));
    }
    let mut segments = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" => {}
            "." | ".." => {
                return Err(invalid(&format!("{what} {path:?} has a {segment:?} segment")));
            }
            segment => segments.push(segment),
        }
    }
    Ok(segments.join("/"))
}

/// Lower-cases scheme and host, drops the default port and trailing `/`; empty means AWS.
fn normalize_endpoint(endpoint: &str) -> Result<String> {
    let endpoint = endpoint.trim();
    if endpoint.is_empty() {
        return Ok(AWS_ENDPOINT.to_owned());
    }
    let Some((scheme, rest)) = endpoint.split_once("://") else {
        return Err(invalid(&format!(
            "s3 endpoint {endpoint:?} has no scheme (http:// or https://)"
        )));
    };
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => {
            return Err(invalid(&format!(
                "s3 endpoint {endpoint:?}: scheme {scheme:?} is not http or https"
            )));
        }
    };
    if let Some(offset) =
        rest.find(|c: char| matches!(c, '?' | '#' | '@') || c.is_whitespace() || c.is_control())
    {
        return Err(invalid(&format!(
            "s3 endpoint {endpoint:?} has a forbidden character at byte {}",
            offset + scheme.len() + 3
        )));
    }
    let (authority, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, ""),
    };
    let (host, port) = split_host_port(authority)
        .ok_or_else(|| invalid(&format!("s3 endpoint {endpoint:?} has an invalid host or port")))?;
    if host.is_empty() {
        return Err(invalid(&format!("s3 endpoint {endpoint:?} has no host")));
    }
    let host = host.to_ascii_lowercase();
    let path = path.trim_end_matches('/');
    let mut text = format!("{scheme}://{host}");
    if let Some(port) = port
        && port != default_port
    {
        text.push_str(&format!(":{port}"));
    }
    text.push_str(path);
    Ok(text)
}

fn split_host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if authority.starts_with('[') {
        let close = authority.find(']')?;
        let host = &authority[..=close];
        match &authority[close + 1..] {
            "" => (host, None),
            rest => (host, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => None,
        Some(port) => {
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let value: u16 = port.parse().ok()?;
            if value == 0 {
                return None;
            }
            Some(value)
        }
    };
    Some((host, port))
}

/// A Kubernetes DNS-1123 label: 1 to 63 of `[a-z0-9-]`, starting and ending alphanumeric.
pub(crate) fn is_dns_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 63
        && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// A Kubernetes DNS-1123 subdomain: at most 253 characters, `.`-separated labels.
pub(crate) fn is_dns_subdomain(text: &str) -> bool {
    !text.is_empty() && text.len() <= 253 && text.split('.').all(is_dns_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(bucket: &str, prefix: &str, endpoint: &str) -> String {
        let destination = Destination::S3 {
            bucket: bucket.into(),
            prefix: prefix.into(),
            endpoint: endpoint.into(),
        };
        match destination.normalize() {
            Ok(normalized) => normalized.to_string(),
            Err(e) => format!("error: {e}"),
        }
    }

    fn pvc(namespace: &str, claim: &str, sub_path: &str) -> String {
        let destination = Destination::Pvc {
            namespace: namespace.into(),
            claim: claim.into(),
            sub_path: sub_path.into(),
        };
        match destination.normalize() {
            Ok(normalized) => normalized.to_string(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn normalization_check_table() {
        let cases = [
            (s3("lion", "prod", ""), "s3://lion/prod/binlogs?endpoint=https://s3.amazonaws.com"),
            (s3("lion", "/prod", ""), "s3://lion/prod/binlogs?endpoint=https://s3.amazonaws.com"),
            (
                s3("lion", "//prod//eu///", "  "),
                "s3://lion/prod/eu/binlogs?endpoint=https://s3.amazonaws.com",
            ),
            (s3("lion", "", ""), "s3://lion/binlogs?endpoint=https://s3.amazonaws.com"),
            (s3("lion", "///", ""), "s3://lion/binlogs?endpoint=https://s3.amazonaws.com"),
            (s3("lion", "Prod", ""), "s3://lion/Prod/binlogs?endpoint=https://s3.amazonaws.com"),
            (
                s3("lion", "prod", "HTTP://MinIO.Local:80/"),
                "s3://lion/prod/binlogs?endpoint=http://minio.local",
            ),
            (
                s3("lion", "prod", "https://MINIO.local:443"),
                "s3://lion/prod/binlogs?endpoint=https://minio.local",
            ),
            (
                s3("lion", "prod", "https://minio.local:0443"),
                "s3://lion/prod/binlogs?endpoint=https://minio.local",
            ),
            (
                s3("lion", "prod", "http://minio.local:443"),
                "s3://lion/prod/binlogs?endpoint=http://minio.local:443",
            ),
            (
                s3("lion", "prod", "http://127.0.0.1:8333"),
                "s3://lion/prod/binlogs?endpoint=http://127.0.0.1:8333",
            ),
            (
                s3("lion", "prod", "http://[::1]:8333"),
                "s3://lion/prod/binlogs?endpoint=http://[::1]:8333",
            ),
            (
                s3("lion", "prod", "http://[FE80::1]:80"),
                "s3://lion/prod/binlogs?endpoint=http://[fe80::1]",
            ),
            (
                s3("lion", "prod", "https://Gw.Example/S3/Path//"),
                "s3://lion/prod/binlogs?endpoint=https://gw.example/S3/Path",
            ),
            (
                s3("lion", "prod", "https://s3.amazonaws.com"),
                "s3://lion/prod/binlogs?endpoint=https://s3.amazonaws.com",
            ),
            (s3("", "prod", ""), "error: invalid archive destination: s3 bucket is empty"),
            (
                s3("li/on", "prod", ""),
                "error: invalid archive destination: s3 bucket \"li/on\" has a forbidden character at byte 2",
            ),
            (
                s3("lion", "a/../b", ""),
                "error: invalid archive destination: s3 prefix \"a/../b\" has a \"..\" segment",
            ),
            (
                s3("lion", "prod", "minio:9000"),
                "error: invalid archive destination: s3 endpoint \"minio:9000\" has no scheme (http:// or https://)",
            ),
            (
                s3("lion", "prod", "ftp://minio"),
                "error: invalid archive destination: s3 endpoint \"ftp://minio\": scheme \"ftp\" is not http or https",
            ),
            (
                s3("lion", "prod", "http://user@minio"),
                "error: invalid archive destination: s3 endpoint \"http://user@minio\" has a forbidden character at byte 11",
            ),
            (
                s3("lion", "prod", "http://minio:99999"),
                "error: invalid archive destination: s3 endpoint \"http://minio:99999\" has an invalid host or port",
            ),
            (
                s3("lion", "prod", "http://:9000"),
                "error: invalid archive destination: s3 endpoint \"http://:9000\" has no host",
            ),
            (pvc("prod", "lion-archive", "pitr"), "pvc://prod/lion-archive/pitr/binlogs"),
            (pvc("prod", "lion-archive", "/pitr//x/"), "pvc://prod/lion-archive/pitr/x/binlogs"),
            (pvc("prod", "lion-archive", ""), "pvc://prod/lion-archive/binlogs"),
            (
                pvc("Prod", "lion-archive", ""),
                "error: invalid archive destination: pvc namespace \"Prod\" is not a DNS label",
            ),
            (
                pvc("prod", "", ""),
                "error: invalid archive destination: pvc claim \"\" is not a DNS subdomain",
            ),
            (
                pvc("prod", "c", "../x"),
                "error: invalid archive destination: pvc subPath \"../x\" has a \"..\" segment",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }
}
