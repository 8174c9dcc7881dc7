//! Non-resource endpoints: `/version`, discovery (`/api`, `/apis`, per group and version),
//! OpenAPI for kubectl, and health checks.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

use crate::registry::{Registry, ResourceInfo};
use crate::server::{Shared, json_response, lock, not_found_page};

/// The Kubernetes version the lab reports.
pub const KUBERNETES_MAJOR: &str = "1";
pub const KUBERNETES_MINOR: &str = "33";

const VERBS: &[&str] =
    &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// The media type kube-openapi answers a protobuf OpenAPI v2 request with (kubectl asks for
/// `...spec.v2@v1.0+protobuf`; Go's mime parser refuses the `@` in a response).
const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

fn resource_entries(info: &ResourceInfo) -> Vec<Value> {
    let mut main = json!({
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": VERBS,
    });
    if !info.short_names.is_empty() {
        main["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        main["categories"] = json!(info.categories);
    }
    let mut entries = vec![main];
    if info.has_status {
        entries.push(json!({
            "name": format!("{}/status", info.plural),
            "singularName": "",
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    entries
}

fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = registry
        .all()
        .filter(|info| info.group == group && info.serves(version))
        .flat_map(resource_entries)
        .collect();
    if resources.is_empty() {
        return None;
    }
    let group_version =
        if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(
        json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources }),
    )
}

fn api_group(name: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|version| json!({ "groupVersion": format!("{name}/{version}"), "version": version }))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({ "name": name, "versions": versions, "preferredVersion": preferred })
}

fn version_info() -> Value {
    json!({
        "major": KUBERNETES_MAJOR,
        "minor": KUBERNETES_MINOR,
        "gitVersion": format!("v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

fn text(body: &'static str) -> Response {
    let mut response = Response::new(Body::from(body));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// An empty OpenAPI v2 document: kubectl finds no schema for any kind, so it skips
/// client-side validation and uses JSON merge patches for `apply`, as for any CRD without a
/// published schema.
fn openapi_v2(headers: &HeaderMap) -> Response {
    let accept =
        headers.get(header::ACCEPT).and_then(|value| value.to_str().ok()).unwrap_or_default();
    if accept.contains("protobuf") {
        let mut response = Response::new(Body::empty());
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(OPENAPI_V2_PROTOBUF));
        return response;
    }
    json_response(
        200,
        &json!({
            "swagger": "2.0",
            "info": { "title": "Kubernetes", "version": format!("v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0") },
            "paths": {},
            "definitions": {},
        }),
    )
}

pub(crate) fn non_resource(
    shared: &Arc<Shared>,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Response {
    if *method != Method::GET && *method != Method::HEAD {
        let mut response = not_found_page();
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    }
    let path = path.trim_end_matches('/');
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let registry = lock(&shared.state).registry.clone();
    match segments.as_slice() {
        ["version"] => json_response(200, &version_info()),
        ["healthz"] | ["readyz"] | ["livez"] => text("ok"),
        ["api"] => {
            let address = lock(&shared.address).clone();
            json_response(
                200,
                &json!({
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": address }],
                }),
            )
        }
        ["api", version] => match resource_list(&registry, "", version) {
            Some(list) => json_response(200, &list),
            None => not_found_page(),
        },
        ["apis"] => {
            let groups: Vec<Value> = registry
                .groups()
                .iter()
                .filter(|(name, _)| !name.is_empty())
                .map(|(name, versions)| api_group(name, versions))
                .collect();
            json_response(
                200,
                &json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups }),
            )
        }
        ["apis", group] => match registry.groups().get(*group) {
            Some(versions) if !group.is_empty() => {
                let mut body = api_group(group, versions);
                body["kind"] = json!("APIGroup");
                body["apiVersion"] = json!("v1");
                json_response(200, &body)
            }
            _ => not_found_page(),
        },
        ["apis", group, version] => match resource_list(&registry, group, version) {
            Some(list) => json_response(200, &list),
            None => not_found_page(),
        },
        ["openapi", "v2"] | ["swagger-2.0.0.pb-v1"] => openapi_v2(headers),
        ["openapi", "v3"] => json_response(200, &crate::openapi::index(&registry)),
        ["openapi", "v3", rest @ ..] => match crate::openapi::document(&registry, rest) {
            Some(document) => json_response(200, &document),
            None => not_found_page(),
        },
        _ => not_found_page(),
    }
}
