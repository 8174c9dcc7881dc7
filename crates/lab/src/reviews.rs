//! `SelfSubjectReview` (who am I) and `SelfSubjectAccessReview` (may I), answered for the
//! caller with the same identity and authorizer every request goes through. Both are creates
//! (POST) of objects that are never stored, as in a real API server.

use std::sync::Arc;

use axum::http::Method;
use axum::response::Response;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::identity::UserInfo;
use crate::rbac::{self, Attributes, Policy};
use crate::server::{Shared, error_response, json_response, lock};

enum Review {
    WhoAmI,
    MayI,
}

fn review_of(path: &str) -> Option<(Review, &str, &str)> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["apis", "authentication.k8s.io", version @ ("v1" | "v1beta1"), "selfsubjectreviews"] => {
            Some((Review::WhoAmI, "authentication.k8s.io", version))
        }
        ["apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews"] => {
            Some((Review::MayI, "authorization.k8s.io", "v1"))
        }
        _ => None,
    }
}

/// The review a request body carries: JSON, or the protobuf kubectl's typed clients send
/// (1.36 does; 1.20 sends JSON), of which only the spec is read.
fn parse(body: &[u8], review: &Review) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad_request("the body of the request is empty"));
    }
    if let Some(envelope) = body.strip_prefix(crate::protobuf::MAGIC) {
        return match review {
            Review::WhoAmI => Ok(json!({})),
            Review::MayI => crate::protobuf::access_review(envelope)
                .map(|spec| json!({ "spec": spec }))
                .map_err(|error| {
                    ApiError::bad_request(format!(
                        "the protobuf body of the request could not be decoded: {error}"
                    ))
                }),
        };
    }
    serde_json::from_slice(body).map_err(|error| {
        ApiError::bad_request(format!("the body of the request could not be decoded: {error}"))
    })
}

/// The decision of the lab's authorizer for `user` (RBAC when enabled, else everything).
pub(crate) fn decide(shared: &Shared, user: &UserInfo, attributes: &Attributes) -> rbac::Decision {
    if !lock(&shared.access).rbac {
        return rbac::Decision { allowed: true, reason: String::new() };
    }
    let policy = Policy::read(&lock(&shared.state), &attributes.namespace);
    rbac::authorize(&policy, user, attributes)
}

/// Serves a review request, or `None` when `path` is not one.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    method: &Method,
    path: &str,
    user: Option<&UserInfo>,
    body: &[u8],
) -> Option<Response> {
    let (review, group, version) = review_of(path)?;
    if *method != Method::POST {
        return Some(error_response(&ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )));
    }
    let anonymous = UserInfo::anonymous();
    let user = user.unwrap_or(&anonymous);
    let request = match parse(body, &review) {
        Ok(request) => request,
        Err(error) => return Some(error_response(&error)),
    };
    let metadata =
        request.get("metadata").cloned().unwrap_or_else(|| json!({ "creationTimestamp": null }));
    let api_version = format!("{group}/{version}");
    Some(match review {
        Review::WhoAmI => json_response(
            201,
            &json!({
                "kind": "SelfSubjectReview",
                "apiVersion": api_version,
                "metadata": metadata,
                "status": { "userInfo": user.to_json() },
            }),
        ),
        Review::MayI => {
            let spec = request.get("spec").cloned().unwrap_or(Value::Null);
            match Attributes::from_review_spec(&spec) {
                Err(message) => error_response(&ApiError::new(
                    422,
                    "Invalid",
                    format!(
                        "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: {message}"
                    ),
                )),
                Ok(attributes) => {
                    let decision = decide(shared, user, &attributes);
                    let mut status = json!({ "allowed": decision.allowed });
                    if !decision.reason.is_empty() {
                        status["reason"] = json!(decision.reason);
                    }
                    json_response(
                        201,
                        &json!({
                            "kind": "SelfSubjectAccessReview",
                            "apiVersion": api_version,
                            "metadata": metadata,
                            "spec": spec,
                            "status": status,
                        }),
                    )
                }
            }
        }
    })
}
