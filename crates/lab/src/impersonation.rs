//! Impersonation (`kubectl --as`, `--as-group`, `--as-uid`): a request carrying
//! `Impersonate-User` / `Impersonate-Group` / `Impersonate-Uid` headers is served as that user
//! when the requester may `impersonate` the users, groups, ServiceAccounts and uids named, as
//! the API server's impersonation filter does it.

use axum::http::HeaderMap;

use crate::error::ApiError;
use crate::identity::{ANONYMOUS, AUTHENTICATED, SERVICE_ACCOUNTS, UNAUTHENTICATED, UserInfo};
use crate::rbac::{self, Attributes};
use crate::server::Shared;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";

fn impersonate_attributes(group: &str, resource: &str, namespace: &str, name: &str) -> Attributes {
    Attributes {
        verb: "impersonate".to_string(),
        resource_request: true,
        namespace: namespace.to_string(),
        api_group: group.to_string(),
        resource: resource.to_string(),
        name: name.to_string(),
        ..Attributes::default()
    }
}

/// The user to serve a request as: the requester, or the one it impersonates (403 when it
/// may not, 400 for groups or a uid without a user).
pub(crate) fn effective_user(
    shared: &Shared,
    requester: UserInfo,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    let text = |value: &axum::http::HeaderValue| value.to_str().ok().map(str::to_string);
    let user = headers.get(USER).and_then(text);
    let groups: Vec<String> = headers.get_all(GROUP).iter().filter_map(text).collect();
    let uid = headers.get(UID).and_then(text);
    let Some(username) = user else {
        if !groups.is_empty() || uid.is_some() {
            return Err(ApiError::bad_request(
                "requested impersonation of groups or a uid without impersonating a user",
            ));
        }
        return Ok(requester);
    };
    let check = |attributes: Attributes| {
        let decision = crate::reviews::decide(shared, &requester, &attributes);
        if decision.allowed {
            Ok(())
        } else {
            Err(rbac::forbidden(&requester, &attributes, &decision.reason))
        }
    };
    let service_account = username
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
        .filter(|(namespace, name)| !namespace.is_empty() && !name.is_empty());
    match service_account {
        Some((namespace, name)) => {
            check(impersonate_attributes("", "serviceaccounts", namespace, name))?;
        }
        None => check(impersonate_attributes("", "users", "", &username))?,
    }
    for group in &groups {
        check(impersonate_attributes("", "groups", "", group))?;
    }
    if let Some(uid) = &uid {
        check(impersonate_attributes("authentication.k8s.io", "uids", "", uid))?;
    }
    let mut all = groups.clone();
    if let (Some((namespace, _)), true) = (service_account, groups.is_empty()) {
        all = vec![SERVICE_ACCOUNTS.to_string(), format!("{SERVICE_ACCOUNTS}:{namespace}")];
    }
    let implied = if username == ANONYMOUS { UNAUTHENTICATED } else { AUTHENTICATED };
    if !all.iter().any(|group| group == implied) {
        all.push(implied.to_string());
    }
    Ok(UserInfo { username, uid: uid.unwrap_or_default(), groups: all })
}
