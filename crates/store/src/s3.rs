//! The S3 store: `aws-sdk-s3` with the ring-only TLS stack (feasibility.md §2).
//!
//! - Custom endpoint (MinIO, SeaweedFS, Ceph, ...) and path-style addressing.
//! - Static credentials, or the SDK's environment chain (environment variables, shared
//!   config files, web identity, ECS, IMDS).
//! - Atomic create: `PutObject` with `If-None-Match: *`; 412 `PreconditionFailed` is
//!   [`Error::AlreadyExists`].
//! - The SDK's own retries are disabled: callers retry transient errors with one bounded
//!   policy ([`crate::retry_transient`]), so the attempts and waits are stated in one place.
//! - Request checksums only when an operation requires them, for compatibility with
//!   S3-compatible stores that reject the SDK's default trailing checksums.
//!
//! Keys are relative to the store's `prefix` inside the bucket.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::{
    Credentials, Region, RequestChecksumCalculation, ResponseChecksumValidation,
};
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_smithy_http_client::tls;

use crate::error::{Denial, Error, Operation, Result};
use crate::key::{validate_key, validate_prefix};
use crate::{ListPage, Object, ObjectMeta, ObjectStore, check_range, clamp_page_size};

/// The region used when none is configured and the environment names none.
pub const DEFAULT_REGION: &str = "us-east-1";

/// Where the store's credentials come from.
#[derive(Clone, PartialEq, Eq)]
pub enum S3Credentials {
    /// Fixed keys (for example from the profile's mounted Secret).
    Static { access_key_id: String, secret_access_key: String, session_token: Option<String> },
    /// The SDK's default chain: `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, shared config
    /// files, web identity, ECS, IMDS.
    Environment,
}

impl fmt::Debug for S3Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            S3Credentials::Static { access_key_id, .. } => f
                .debug_struct("Static")
                .field("access_key_id", access_key_id)
                .field("secret_access_key", &"<redacted>")
                .finish_non_exhaustive(),
            S3Credentials::Environment => f.write_str("Environment"),
        }
    }
}

/// How to reach a bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Config {
    pub bucket: String,
    /// The store's root inside the bucket; leading, trailing and repeated `/` are dropped.
    pub prefix: String,
    /// A custom endpoint such as `http://127.0.0.1:8333`; `None` means AWS.
    pub endpoint: Option<String>,
    /// `None`: the environment's region, else [`DEFAULT_REGION`].
    pub region: Option<String>,
    /// Path-style addressing (`endpoint/bucket/key`), needed by most S3-compatible stores.
    pub force_path_style: bool,
    pub credentials: S3Credentials,
    pub connect_timeout: Duration,
    /// The longest wait for a response to start.
    pub read_timeout: Duration,
}

impl S3Config {
    /// A configuration with path style on and the default timeouts (connect 10 s, first
    /// response byte 60 s).
    pub fn new(
        bucket: impl Into<String>,
        prefix: impl Into<String>,
        credentials: S3Credentials,
    ) -> Self {
        S3Config {
            bucket: bucket.into(),
            prefix: prefix.into(),
            endpoint: None,
            region: None,
            force_path_style: true,
            credentials,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(60),
        }
    }

    pub fn with_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }
}

/// A bucket and prefix on an S3-compatible endpoint.
#[derive(Clone, Debug)]
pub struct S3Store {
    client: Client,
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    bucket: String,
    /// Normalized root prefix; empty, or without leading or trailing `/`.
    root: String,
    label: String,
}

/// Drops leading, trailing and repeated `/`.
pub fn normalize_prefix(prefix: &str) -> String {
    prefix.split('/').filter(|segment| !segment.is_empty()).collect::<Vec<_>>().join("/")
}

impl S3Store {
    /// Builds the client. Makes no request: a wrong endpoint or credentials show on first use.
    pub async fn connect(config: S3Config) -> Result<Self> {
        if config.bucket.is_empty() {
            return Err(Error::InvalidConfig { detail: "the S3 bucket name is empty".to_owned() });
        }
        let root = normalize_prefix(&config.prefix);
        if !root.is_empty() {
            validate_key(&root)
                .map_err(|error| Error::InvalidConfig { detail: format!("S3 prefix: {error}") })?;
        }
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
            .build_https();
        let timeouts = TimeoutConfig::builder()
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout)
            .build();
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .http_client(http)
            .retry_config(RetryConfig::disabled())
            .timeout_config(timeouts);
        // Without a configured region the loader's default chain (environment, profile,
        // IMDS) runs with the loader's HTTP client; a chain built on its own here would have
        // none (aws-config's default HTTPS client is disabled) and panics on first use.
        if let Some(region) = &config.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if let S3Credentials::Static { access_key_id, secret_access_key, session_token } =
            &config.credentials
        {
            loader = loader.credentials_provider(Credentials::new(
                access_key_id,
                secret_access_key,
                session_token.clone(),
                None,
                "bloodraven-static",
            ));
        }
        let shared = loader.load().await;
        let region_found = shared.region().is_some();
        let mut builder = aws_sdk_s3::config::Builder::from(&shared)
            .force_path_style(config.force_path_style)
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            .response_checksum_validation(ResponseChecksumValidation::WhenRequired);
        if !region_found {
            builder = builder.region(Region::new(DEFAULT_REGION));
        }
        if let Some(endpoint) = &config.endpoint {
            builder = builder.endpoint_url(endpoint);
        }
        let client = Client::from_conf(builder.build());
        let label = match &config.endpoint {
            Some(endpoint) => format!("s3://{}/{root}?endpoint={endpoint}", config.bucket),
            None => format!("s3://{}/{root}", config.bucket),
        };
        Ok(S3Store { client, inner: Arc::new(Inner { bucket: config.bucket, root, label }) })
    }

    /// The SDK client, for bucket-level calls this trait does not cover (test setup,
    /// versioning checks).
    pub fn sdk_client(&self) -> &Client {
        &self.client
    }

    pub fn bucket(&self) -> &str {
        &self.inner.bucket
    }

    /// The full object key of `key`.
    fn object_key(&self, key: &str) -> Result<String> {
        validate_key(key)?;
        Ok(self.full(key))
    }

    fn full(&self, relative: &str) -> String {
        if self.inner.root.is_empty() {
            relative.to_owned()
        } else {
            format!("{}/{relative}", self.inner.root)
        }
    }

    fn ctx<'a>(&'a self, operation: Operation, key: &'a str) -> Ctx<'a> {
        Ctx { store: &self.inner.label, operation, key }
    }

    async fn read(&self, key: &str, range: Option<Range<u64>>) -> Result<Object> {
        let ctx = self.ctx(Operation::Get, key);
        let full = self.object_key(key)?;
        let mut request = self.client.get_object().bucket(&self.inner.bucket).key(&full);
        if let Some(range) = &range {
            request = request.range(format!("bytes={}-{}", range.start, range.end - 1));
        }
        let output = match request.send().await {
            Ok(output) => output,
            Err(error) => {
                let classified = ctx.sdk(error);
                // A range starting at or after the end: empty bytes plus the size, as the
                // filesystem store answers.
                if range.is_some() && classified.kind() == crate::ErrorKind::InvalidRange {
                    let meta = self.head(key).await?;
                    return Ok(Object { bytes: Vec::new(), total_size: meta.size });
                }
                return Err(classified);
            }
        };
        let content_length = output.content_length().and_then(|length| u64::try_from(length).ok());
        let ranged_answer = output.content_range().is_some();
        let total_size = match (&range, output.content_range()) {
            (Some(_), Some(content_range)) => parse_content_range_total(content_range),
            (Some(_), None) => None,
            (None, _) => content_length,
        };
        let bytes = output
            .body
            .collect()
            .await
            .map_err(|error| {
                ctx.transient(format!("reading the body: {}", DisplayErrorContext(&error)))
            })?
            .into_bytes();
        let total_size = match total_size {
            Some(total) => total,
            // `Content-Range: bytes 0-9/*`: the size is unknown to the answer; ask for it.
            None if ranged_answer => self.head(key).await?.size,
            // A store that ignored the Range header and sent the whole object.
            None => bytes.len() as u64,
        };
        let bytes = Vec::from(bytes);
        match range {
            Some(range) if !ranged_answer => {
                // The whole object came back: cut the range out of it.
                let start = usize::try_from(range.start.min(total_size)).unwrap_or(usize::MAX);
                let end = usize::try_from(range.end.min(total_size)).unwrap_or(usize::MAX);
                Ok(Object { bytes: bytes.get(start..end).unwrap_or_default().to_vec(), total_size })
            }
            _ => Ok(Object { bytes, total_size }),
        }
    }

    async fn write(&self, key: &str, body: Vec<u8>, operation: Operation) -> Result<()> {
        let ctx = self.ctx(operation, key);
        let full = self.object_key(key)?;
        let mut request = self
            .client
            .put_object()
            .bucket(&self.inner.bucket)
            .key(&full)
            .body(ByteStream::from(body));
        if operation == Operation::Create {
            request = request.if_none_match("*");
        }
        request.send().await.map(drop).map_err(|error| ctx.sdk(error))
    }
}

/// The total size in a `Content-Range: bytes 10-19/100` header; `None` for `*` or garbage.
pub(crate) fn parse_content_range_total(content_range: &str) -> Option<u64> {
    content_range.rsplit_once('/').and_then(|(_, total)| total.trim().parse().ok())
}

/// How an S3 answer is classified, from its HTTP status and error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum S3Class {
    NotFound,
    BucketMissing,
    PreconditionFailed,
    Denied,
    RangeNotSatisfiable,
    Transient,
    Unsupported,
    Permanent,
}

/// Classifies an S3 error response. Codes win over statuses: stores disagree on statuses
/// more than on codes.
pub(crate) fn classify(status: u16, code: Option<&str>) -> S3Class {
    match code {
        Some("NoSuchBucket") => return S3Class::BucketMissing,
        Some("NoSuchKey" | "NotFound") => return S3Class::NotFound,
        Some("PreconditionFailed") => return S3Class::PreconditionFailed,
        Some(
            "AccessDenied"
            | "InvalidAccessKeyId"
            | "SignatureDoesNotMatch"
            | "AllAccessDisabled"
            | "AccountProblem"
            | "InvalidToken"
            | "ExpiredToken"
            | "TokenRefreshRequired"
            | "InvalidSecurity"
            | "MissingSecurityHeader",
        ) => return S3Class::Denied,
        Some(
            "SlowDown"
            | "RequestTimeout"
            | "InternalError"
            | "ServiceUnavailable"
            | "Throttling"
            | "ThrottlingException"
            | "RequestThrottled"
            | "RequestTimeTooSkewed"
            | "ConditionalRequestConflict"
            | "OperationAborted"
            | "RequestLimitExceeded",
        ) => return S3Class::Transient,
        Some("NotImplemented") => return S3Class::Unsupported,
        Some("InvalidRange") => return S3Class::RangeNotSatisfiable,
        _ => {}
    }
    match status {
        404 => S3Class::NotFound,
        412 => S3Class::PreconditionFailed,
        401 | 403 => S3Class::Denied,
        416 => S3Class::RangeNotSatisfiable,
        501 => S3Class::Unsupported,
        // 409: a conflicting conditional write in flight (AWS asks to retry).
        408 | 409 | 429 | 500..=599 => S3Class::Transient,
        _ => S3Class::Permanent,
    }
}

struct Ctx<'a> {
    store: &'a str,
    operation: Operation,
    key: &'a str,
}

impl Ctx<'_> {
    fn transient(&self, detail: String) -> Error {
        Error::Transient {
            store: self.store.to_owned(),
            operation: self.operation,
            key: self.key.to_owned(),
            detail,
        }
    }

    fn sdk<E>(&self, error: SdkError<E, aws_sdk_s3::config::http::HttpResponse>) -> Error
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let (store, operation, key) = (self.store.to_owned(), self.operation, self.key.to_owned());
        let detail = DisplayErrorContext(&error).to_string();
        match &error {
            SdkError::ServiceError(service) => {
                let status = service.raw().status().as_u16();
                let code = service.err().code().map(str::to_owned);
                let message = service.err().message().map(str::to_owned);
                let summary = match (&code, &message) {
                    (Some(code), Some(message)) => format!("S3 {status} {code}: {message}"),
                    (Some(code), None) => format!("S3 {status} {code}"),
                    _ => format!("S3 {status}"),
                };
                match classify(status, code.as_deref()) {
                    S3Class::NotFound => Error::NotFound { store, operation, key },
                    S3Class::BucketMissing => {
                        Error::BucketNotFound { store, operation, detail: summary }
                    }
                    S3Class::PreconditionFailed if operation == Operation::Create => {
                        Error::AlreadyExists { store, operation, key }
                    }
                    S3Class::Denied => {
                        let denial = Denial::S3 { status, code, message };
                        Error::PermissionDenied { store, operation, key, denial }
                    }
                    S3Class::Transient => {
                        Error::Transient { store, operation, key, detail: summary }
                    }
                    S3Class::Unsupported => {
                        Error::Unsupported { store, operation, key, detail: summary }
                    }
                    S3Class::RangeNotSatisfiable => Error::InvalidRange { key, start: 0, end: 0 },
                    S3Class::PreconditionFailed | S3Class::Permanent => {
                        Error::Permanent { store, operation, key, detail: summary }
                    }
                }
            }
            SdkError::TimeoutError(_) | SdkError::ResponseError(_) => {
                Error::Transient { store, operation, key, detail }
            }
            SdkError::DispatchFailure(failure) if failure.is_user() => {
                Error::Permanent { store, operation, key, detail }
            }
            SdkError::DispatchFailure(_) => Error::Transient { store, operation, key, detail },
            SdkError::ConstructionFailure(_) => {
                Error::InvalidConfig { detail: format!("{store}: {detail}") }
            }
            _ => Error::Permanent { store, operation, key, detail },
        }
    }
}

impl ObjectStore for S3Store {
    fn describe(&self) -> &str {
        &self.inner.label
    }

    async fn list(
        &self,
        prefix: &str,
        continuation: Option<&str>,
        page_size: u32,
    ) -> Result<ListPage> {
        let ctx = self.ctx(Operation::List, prefix);
        validate_prefix(prefix)?;
        let root_slash = if self.inner.root.is_empty() {
            String::new()
        } else {
            format!("{}/", self.inner.root)
        };
        let full_prefix = format!("{root_slash}{prefix}");
        let max_keys = i32::try_from(clamp_page_size(page_size)).unwrap_or(1000);
        let mut request =
            self.client.list_objects_v2().bucket(&self.inner.bucket).max_keys(max_keys);
        if !full_prefix.is_empty() {
            request = request.prefix(&full_prefix);
        }
        if let Some(token) = continuation {
            request = request.continuation_token(token);
        }
        let output = request.send().await.map_err(|error| ctx.sdk(error))?;
        let mut objects = Vec::new();
        for object in output.contents() {
            let Some(full_key) = object.key() else { continue };
            let Some(key) = full_key.strip_prefix(&root_slash) else { continue };
            let size = object.size().and_then(|size| u64::try_from(size).ok()).unwrap_or(0);
            objects.push(ObjectMeta { key: key.to_owned(), size });
        }
        let next = match (output.is_truncated(), output.next_continuation_token()) {
            (Some(true), Some(token)) => Some(token.to_owned()),
            (Some(true), None) => {
                return Err(Error::Permanent {
                    store: self.inner.label.clone(),
                    operation: Operation::List,
                    key: prefix.to_owned(),
                    detail: "a truncated listing carried no continuation token".to_owned(),
                });
            }
            _ => None,
        };
        Ok(ListPage { objects, next })
    }

    async fn head(&self, key: &str) -> Result<ObjectMeta> {
        let ctx = self.ctx(Operation::Head, key);
        let full = self.object_key(key)?;
        let output = self
            .client
            .head_object()
            .bucket(&self.inner.bucket)
            .key(&full)
            .send()
            .await
            .map_err(|error| ctx.sdk(error))?;
        let size =
            output.content_length().and_then(|length| u64::try_from(length).ok()).unwrap_or(0);
        Ok(ObjectMeta { key: key.to_owned(), size })
    }

    async fn get(&self, key: &str) -> Result<Object> {
        self.read(key, None).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Object> {
        check_range(key, &range)?;
        self.read(key, Some(range)).await
    }

    async fn put(&self, key: &str, body: Vec<u8>) -> Result<()> {
        self.write(key, body, Operation::Put).await
    }

    async fn create(&self, key: &str, body: Vec<u8>) -> Result<()> {
        self.write(key, body, Operation::Create).await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        let ctx = self.ctx(Operation::Delete, key);
        let full = self.object_key(key)?;
        match self.client.delete_object().bucket(&self.inner.bucket).key(&full).send().await {
            Ok(_) => Ok(()),
            Err(error) => match ctx.sdk(error) {
                Error::NotFound { .. } => Ok(()),
                other => Err(other),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_prefers_codes_then_statuses() {
        use S3Class::*;
        let cases: &[(u16, Option<&str>, S3Class)] = &[
            (404, Some("NoSuchKey"), NotFound),
            (404, Some("NoSuchBucket"), BucketMissing),
            (404, None, NotFound),
            (412, Some("PreconditionFailed"), PreconditionFailed),
            (412, None, PreconditionFailed),
            (403, Some("AccessDenied"), Denied),
            (403, Some("SignatureDoesNotMatch"), Denied),
            (403, Some("InvalidAccessKeyId"), Denied),
            (403, None, Denied),
            (400, Some("ExpiredToken"), Denied),
            (503, Some("SlowDown"), Transient),
            (500, Some("InternalError"), Transient),
            (400, Some("RequestTimeout"), Transient),
            (403, Some("RequestTimeTooSkewed"), Transient),
            (409, Some("ConditionalRequestConflict"), Transient),
            (429, None, Transient),
            (502, None, Transient),
            (504, None, Transient),
            (501, Some("NotImplemented"), Unsupported),
            (501, None, Unsupported),
            (416, Some("InvalidRange"), RangeNotSatisfiable),
            (400, Some("InvalidArgument"), Permanent),
            (400, None, Permanent),
        ];
        for &(status, code, expected) in cases {
            assert_eq!(classify(status, code), expected, "status {status} code {code:?}");
        }
    }

    #[test]
    fn content_range_total() {
        assert_eq!(parse_content_range_total("bytes 10-19/100"), Some(100));
        assert_eq!(parse_content_range_total("bytes 0-0/1"), Some(1));
        assert_eq!(parse_content_range_total("bytes 0-9/*"), None);
        assert_eq!(parse_content_range_total("nonsense"), None);
    }

    #[test]
    fn prefixes_are_normalized() {
        assert_eq!(normalize_prefix("/prod//binlogs/"), "prod/binlogs");
        assert_eq!(normalize_prefix("prod"), "prod");
        assert_eq!(normalize_prefix("///"), "");
    }

    #[test]
    fn static_secrets_are_not_debug_printed() {
        let credentials = S3Credentials::Static {
            access_key_id: "AKIA".into(),
            secret_access_key: "very-secret".into(),
            session_token: None,
        };
        let printed = format!("{credentials:?}");
        assert!(printed.contains("AKIA"));
        assert!(!printed.contains("very-secret"));
    }
}
