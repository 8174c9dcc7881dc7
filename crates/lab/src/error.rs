//! Errors of the library API and the Kubernetes `Status` errors the server answers with.

use serde_json::{Value, json};

/// What the library API of the lab can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot bind the lab API server to 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    #[error("the lab API server task failed: {0}")]
    ServerTask(String),
    #[error("invalid YAML in document {document}: {message}")]
    InvalidYaml { document: usize, message: String },
    #[error("document {document} is not a Kubernetes object: {message}")]
    InvalidObject { document: usize, message: String },
    #[error("the API server refused {what}: {status}")]
    Api { what: String, status: Box<ApiError> },
    #[error("cannot read snapshot {path}: {source}")]
    SnapshotRead { path: String, source: std::io::Error },
    #[error("cannot write snapshot {path}: {source}")]
    SnapshotWrite { path: String, source: std::io::Error },
    #[error("snapshot {path} is not valid at line {line} column {column}: {message}")]
    SnapshotInvalid { path: String, line: usize, column: usize, message: String },
    #[error("cannot write kubeconfig {path}: {source}")]
    KubeconfigWrite { path: String, source: std::io::Error },
    #[error("cannot set up TLS for the lab API server: {0}")]
    Tls(String),
    #[error("unknown resource {resource}")]
    UnknownResource { resource: String },
    #[error("no ServiceAccount {namespace}/{name} in the lab: create it before minting its token")]
    UnknownServiceAccount { namespace: String, name: String },
    #[error("{what}: start the lab with LabConfig::tls")]
    TlsRequired { what: &'static str },
    #[error("invalid identity: {message}")]
    InvalidIdentity { message: String },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A Kubernetes API error: becomes a `Status` body with `code` as the HTTP status.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: String,
    pub message: String,
    pub details: Option<Value>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// Identifies the object an error is about, as Kubernetes writes it in `details`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub name: &'a str,
}

impl Subject<'_> {
    /// `pods` or `widgets.example.com`, as in Kubernetes messages.
    pub(crate) fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    fn details(&self) -> Value {
        let mut details = json!({ "name": self.name, "kind": self.resource });
        if !self.group.is_empty() {
            details["group"] = json!(self.group);
        }
        details
    }
}

impl ApiError {
    pub(crate) fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self { code, reason: reason.to_string(), message: message.into(), details: None }
    }

    pub(crate) fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub(crate) fn not_found(subject: Subject<'_>) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", subject.qualified(), subject.name),
        )
        .with_details(subject.details())
    }

    /// The answer for a path naming no known resource.
    pub(crate) fn no_such_resource() -> Self {
        Self::new(404, "NotFound", "the server could not find the requested resource")
            .with_details(json!({}))
    }

    pub(crate) fn already_exists(subject: Subject<'_>) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", subject.qualified(), subject.name),
        )
        .with_details(subject.details())
    }

    pub(crate) fn conflict(subject: Subject<'_>, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {why}",
                subject.qualified(),
                subject.name
            ),
        )
        .with_details(subject.details())
    }

    pub(crate) fn stale(subject: Subject<'_>) -> Self {
        Self::conflict(
            subject,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid with one cause, as field validation reports it.
    pub(crate) fn invalid(
        kind: &str,
        subject: Subject<'_>,
        field: &str,
        cause_reason: &str,
        detail: &str,
    ) -> Self {
        let group_kind = if subject.group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{}", subject.group)
        };
        let cause = format!("{field}: {detail}");
        let mut details = json!({
            "name": subject.name,
            "kind": kind,
            "causes": [{ "reason": cause_reason, "message": detail, "field": field }],
        });
        if !subject.group.is_empty() {
            details["group"] = json!(subject.group);
        }
        Self::new(422, "Invalid", format!("{group_kind} \"{}\" is invalid: {cause}", subject.name))
            .with_details(details)
    }

    /// A resource version the server has not reached, as the watch cache answers once its
    /// wait for it runs out (clients relist on it).
    pub(crate) fn too_large_resource_version(requested: u64, current: u64) -> Self {
        Self::new(504, "Timeout", format!("Too large resource version: {requested}, current: {current}"))
            .with_details(json!({
                "causes": [{ "reason": "ResourceVersionTooLarge", "message": "Too large resource version" }],
                "retryAfterSeconds": 1,
            }))
    }

    pub(crate) fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub(crate) fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    pub(crate) fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    pub(crate) fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// A `reason` for a status code that has no more specific one, as apimachinery picks it.
    pub(crate) fn from_code(code: u16, message: impl Into<String>) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            406 => "NotAcceptable",
            409 => "Conflict",
            410 => "Expired",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "Unknown",
        };
        Self::new(code, reason, message)
    }

    /// The `Status` object Kubernetes sends for this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}
