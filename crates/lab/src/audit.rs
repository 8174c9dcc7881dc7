//! The request log, identities, and fault injection.

use std::time::Duration;

use serde_json::Value;

/// One served request, as tests query it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    pub time: jiff::Timestamp,
    /// The user of the client certificate or bearer token, or `system:anonymous`.
    pub user: String,
    /// Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection
    /// (and the HTTP method in lower case for non-resource paths).
    pub verb: String,
    pub method: String,
    pub path: String,
    pub query: String,
    /// The HTTP status answered; 0 for a connection dropped unanswered (a fault).
    pub status: u16,
    /// `pods`, `widgets.example.com`; `None` for non-resource paths.
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    pub user_agent: String,
}

impl RequestRecord {
    /// Whether the request could have changed state (create, update, patch, delete...).
    pub fn is_write(&self) -> bool {
        matches!(self.verb.as_str(), "create" | "update" | "patch" | "delete" | "deletecollection")
    }
}

/// What a fault does to a matching request.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultAction {
    /// Answer with this HTTP status and a `Status` body carrying the message.
    Fail { code: u16, message: String },
    /// Hold the request this long, then serve it normally.
    Delay(Duration),
    /// Serve the request (a write is applied: the object's resourceVersion moves), then answer
    /// this status instead of the real response: an ambiguous write, as a client sees a 5xx
    /// from an API server whose storage committed.
    FailAfterServing { code: u16, message: String },
    /// Serve the request (a write is applied), hold the response this long, then drop the
    /// connection without answering: a client with a shorter timeout sees its timeout, any
    /// other a reset connection. An ambiguous write either way.
    DropAfterServing(Duration),
}

/// Fails or delays the next `times` requests that match every given criterion.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub verb: Option<String>,
    /// Plural resource name, optionally qualified by group (`widgets.example.com`).
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// The subresource (`status`); `None` matches requests with and without one.
    pub subresource: Option<String>,
    pub user: Option<String>,
    /// Only requests whose body contains this text match (for a write announcing a given
    /// record, e.g. `"phase":"Fencing"`); the body is read and handed on unchanged.
    pub body_contains: Option<String>,
    pub times: usize,
    pub action: FaultAction,
}

impl Fault {
    /// The next request (any) fails with `code`.
    pub fn fail(code: u16) -> Self {
        Self {
            verb: None,
            resource: None,
            namespace: None,
            name: None,
            subresource: None,
            user: None,
            body_contains: None,
            times: 1,
            action: FaultAction::Fail { code, message: format!("injected fault: status {code}") },
        }
    }

    /// The next request (any) is held for `delay` before it is served.
    pub fn delay(delay: Duration) -> Self {
        Self { action: FaultAction::Delay(delay), ..Self::fail(500) }
    }

    /// The next request (any) is served, then answered with `code` instead of its response:
    /// a write is applied although the client sees it fail.
    pub fn fail_after_serving(code: u16) -> Self {
        let message = format!("injected fault: status {code} after the request was served");
        Self { action: FaultAction::FailAfterServing { code, message }, ..Self::fail(500) }
    }

    /// The next request (any) is served, its response held for `hold`, then its connection
    /// dropped unanswered: a write is applied although the client times out or sees a reset.
    pub fn drop_after_serving(hold: Duration) -> Self {
        Self { action: FaultAction::DropAfterServing(hold), ..Self::fail(500) }
    }

    /// Only requests whose body contains `text` match.
    pub fn body_contains(mut self, text: &str) -> Self {
        self.body_contains = Some(text.to_string());
        self
    }

    pub fn verb(mut self, verb: &str) -> Self {
        self.verb = Some(verb.to_string());
        self
    }

    pub fn resource(mut self, resource: &str) -> Self {
        self.resource = Some(resource.to_string());
        self
    }

    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_string());
        self
    }

    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// Only requests to this subresource (`status`) match.
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.subresource = Some(subresource.to_string());
        self
    }

    pub fn user(mut self, user: &str) -> Self {
        self.user = Some(user.to_string());
        self
    }

    pub fn times(mut self, times: usize) -> Self {
        self.times = times;
        self
    }

    pub fn message(mut self, text: &str) -> Self {
        if let FaultAction::Fail { message, .. } | FaultAction::FailAfterServing { message, .. } =
            &mut self.action
        {
            *message = text.to_string();
        }
        self
    }

    /// Whether the fault looks at the body (which must then be read before matching).
    pub(crate) fn needs_body(&self) -> bool {
        self.times > 0 && self.body_contains.is_some()
    }

    /// Whether `request` (with its body, when read) matches every criterion.
    pub(crate) fn matches(&self, request: &RequestRecord, body: Option<&[u8]>) -> bool {
        let body_matches = |wanted: &String| {
            body.is_some_and(|body| {
                body.windows(wanted.len().max(1)).any(|window| window == wanted.as_bytes())
            })
        };
        let resource_matches = |wanted: &String| {
            request.resource.as_deref().is_some_and(|resource| {
                resource == wanted || resource.split('.').next() == Some(wanted.as_str())
            })
        };
        self.times > 0
            && self.verb.as_ref().is_none_or(|verb| *verb == request.verb)
            && self.resource.as_ref().is_none_or(resource_matches)
            && self
                .namespace
                .as_ref()
                .is_none_or(|namespace| request.namespace.as_ref() == Some(namespace))
            && self.name.as_ref().is_none_or(|name| request.name.as_ref() == Some(name))
            && self
                .subresource
                .as_ref()
                .is_none_or(|subresource| request.subresource.as_ref() == Some(subresource))
            && self.user.as_ref().is_none_or(|user| *user == request.user)
            && self.body_contains.as_ref().is_none_or(body_matches)
    }
}

/// Injected failure as a response body.
pub(crate) fn fault_status(code: u16, message: &str) -> Value {
    crate::error::ApiError::from_code(code, message).to_status()
}
