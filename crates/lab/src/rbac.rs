//! RBAC as the API server evaluates it: request attributes derived from a request exactly as
//! its `RequestInfoFactory` does, Roles / ClusterRoles (with `aggregationRule`) and their
//! bindings (rbac.authorization.k8s.io/v1, stored like any object), the Forbidden `Status`,
//! and the bootstrap policy every cluster has (discovery, basic-user, cluster-admin).
//!
//! Pure: `authorize` takes the policy objects and the attributes and returns a decision.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::identity::{AUTHENTICATED, MASTERS, UNAUTHENTICATED, UserInfo};
use crate::registry::GroupResource;
use crate::store::State;

pub(crate) const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// What a request asks to do, as an authorizer sees it (`authorizer.Attributes`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Attributes {
    pub verb: String,
    pub resource_request: bool,
    pub namespace: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The URL path (non-resource requests are authorized on it).
    pub path: String,
}

fn parse_bool(value: Option<&String>) -> bool {
    // Go's strconv.ParseBool, as the parameter codec decodes `watch`.
    matches!(value.map(String::as_str), Some("1" | "t" | "T" | "true" | "TRUE" | "True"))
}

/// `metadata.name=X` (or `==`) in a field selector: a list or watch of one named object,
/// which `resourceNames` rules can allow.
fn exact_name(field_selector: &str) -> Option<String> {
    field_selector.split(',').find_map(|term| {
        let term = term.trim();
        let value =
            term.strip_prefix("metadata.name==").or_else(|| term.strip_prefix("metadata.name="))?;
        let valid = !value.is_empty()
            && value != "."
            && value != ".."
            && !value.contains('/')
            && !value.contains('%');
        valid.then(|| value.to_string())
    })
}

impl Attributes {
    /// The attributes of an HTTP request (`k8s.io/apiserver/pkg/endpoints/request.RequestInfo`).
    pub(crate) fn from_request(method: &str, path: &str, query: &HashMap<String, String>) -> Self {
        let non_resource =
            || Self { verb: method.to_lowercase(), path: path.to_string(), ..Self::default() };
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        if parts.len() < 3 || !matches!(parts[0], "api" | "apis") {
            return non_resource();
        }
        let mut current: &[&str] = &parts[1..];
        let mut api_group = "";
        if parts[0] == "apis" {
            if current.len() < 3 {
                return non_resource();
            }
            api_group = current[0];
            current = &current[1..];
        }
        let api_version = current[0];
        current = &current[1..];
        let mut verb = match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        }
        .to_string();
        if matches!(current.first(), Some(&"watch") | Some(&"proxy")) && current.len() >= 2 {
            verb = current[0].to_string();
            current = &current[1..];
        }
        let mut namespace = String::new();
        if current.first() == Some(&"namespaces") && current.len() > 1 {
            namespace = current[1].to_string();
            if current.len() > 2 && !matches!(current[2], "status" | "finalize") {
                current = &current[2..];
            }
        }
        let subresource = match current.get(2) {
            Some(subresource) if verb != "proxy" => subresource.to_string(),
            _ => String::new(),
        };
        let mut name = current.get(1).map(|name| name.to_string()).unwrap_or_default();
        let resource = current.first().map(|resource| resource.to_string()).unwrap_or_default();
        if name.is_empty() && verb == "get" {
            verb = if parse_bool(query.get("watch")) { "watch" } else { "list" }.to_string();
            if let Some(exact) = query.get("fieldSelector").and_then(|fields| exact_name(fields)) {
                name = exact;
            }
        }
        if name.is_empty() && verb == "delete" {
            verb = "deletecollection".to_string();
        }
        Self {
            verb,
            resource_request: true,
            namespace,
            api_group: api_group.to_string(),
            api_version: api_version.to_string(),
            resource,
            subresource,
            name,
            path: path.to_string(),
        }
    }

    /// The attributes a `SelfSubjectAccessReview` spec asks about, or why it is invalid.
    pub(crate) fn from_review_spec(spec: &Value) -> Result<Self, String> {
        let text = |value: &Value, field: &str| {
            value.get(field).and_then(Value::as_str).unwrap_or_default().to_string()
        };
        match (spec.get("resourceAttributes"), spec.get("nonResourceAttributes")) {
            (Some(resource), None) if resource.is_object() => Ok(Self {
                verb: text(resource, "verb"),
                resource_request: true,
                namespace: text(resource, "namespace"),
                api_group: text(resource, "group"),
                api_version: text(resource, "version"),
                resource: text(resource, "resource"),
                subresource: text(resource, "subresource"),
                name: text(resource, "name"),
                path: String::new(),
            }),
            (None, Some(non_resource)) if non_resource.is_object() => Ok(Self {
                verb: text(non_resource, "verb"),
                path: text(non_resource, "path"),
                ..Self::default()
            }),
            (Some(_), Some(_)) => {
                Err("spec.nonResourceAttributes: Invalid value: \"\": cannot be specified in \
                    combination with resourceAttributes"
                    .to_string())
            }
            _ => Err("spec.resourceAttributes: Invalid value: \"null\": exactly one of \
                    nonResourceAttributes or resourceAttributes must be specified"
                .to_string()),
        }
    }
}

/// The RBAC objects one decision reads: every ClusterRole and ClusterRoleBinding, and the
/// Roles and RoleBindings of the request's namespace.
#[derive(Debug, Default)]
pub(crate) struct Policy {
    pub cluster_roles: Vec<Arc<Value>>,
    pub cluster_role_bindings: Vec<Arc<Value>>,
    pub roles: Vec<Arc<Value>>,
    pub role_bindings: Vec<Arc<Value>>,
}

impl Policy {
    pub(crate) fn read(state: &State, namespace: &str) -> Self {
        let all = |resource: &str| -> Vec<Arc<Value>> {
            state
                .objects_of(&GroupResource::new(RBAC_GROUP, resource))
                .map(|(_, object)| object.clone())
                .collect()
        };
        let in_namespace = |resource: &str| -> Vec<Arc<Value>> {
            if namespace.is_empty() {
                return Vec::new();
            }
            state
                .objects_of(&GroupResource::new(RBAC_GROUP, resource))
                .filter(|(key, _)| key.0 == namespace)
                .map(|(_, object)| object.clone())
                .collect()
        };
        Self {
            cluster_roles: all("clusterroles"),
            cluster_role_bindings: all("clusterrolebindings"),
            roles: in_namespace("roles"),
            role_bindings: in_namespace("rolebindings"),
        }
    }
}

/// An authorizer's answer, as a `SubjectAccessReview` status reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub allowed: bool,
    /// Why: the binding that allowed, or the RBAC errors met while looking (a binding to a
    /// missing role); empty when nothing allowed and nothing was wrong.
    pub reason: String,
}

fn strings(value: &Value, field: &str) -> Vec<String> {
    value
        .get(field)
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|item| item.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn has(items: &[String], wanted: &str) -> bool {
    items.iter().any(|item| item == "*" || item == wanted)
}

fn resource_matches(rule_resources: &[String], combined: &str, subresource: &str) -> bool {
    rule_resources.iter().any(|rule| {
        rule == "*"
            || rule == combined
            || (!subresource.is_empty()
                && rule.len() == subresource.len() + 2
                && rule.starts_with("*/")
                && rule.ends_with(subresource))
    })
}

fn url_matches(rule_urls: &[String], path: &str) -> bool {
    rule_urls.iter().any(|rule| {
        rule == "*"
            || rule == path
            || rule.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix))
    })
}

/// Whether one PolicyRule allows the request (`rbac.RuleAllows`).
pub(crate) fn rule_allows(rule: &Value, attributes: &Attributes) -> bool {
    let verbs = strings(rule, "verbs");
    if !has(&verbs, &attributes.verb) {
        return false;
    }
    if !attributes.resource_request {
        return url_matches(&strings(rule, "nonResourceURLs"), &attributes.path);
    }
    let combined = if attributes.subresource.is_empty() {
        attributes.resource.clone()
    } else {
        format!("{}/{}", attributes.resource, attributes.subresource)
    };
    let names = strings(rule, "resourceNames");
    has(&strings(rule, "apiGroups"), &attributes.api_group)
        && resource_matches(&strings(rule, "resources"), &combined, &attributes.subresource)
        && (names.is_empty() || names.contains(&attributes.name))
}

/// Whether an object's labels satisfy a `metav1.LabelSelector` (matchLabels and
/// matchExpressions).
fn selector_matches(selector: &Value, object: &Value) -> bool {
    let labels = object.pointer("/metadata/labels").and_then(Value::as_object);
    let label = |key: &str| labels.and_then(|labels| labels.get(key)).and_then(Value::as_str);
    let match_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(key, value)| label(key) == value.as_str());
    let match_expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|expression| {
            let key = text(expression, "/key");
            let values = strings(expression, "values");
            let current = label(key);
            match text(expression, "/operator") {
                "In" => current.is_some_and(|value| values.iter().any(|wanted| wanted == value)),
                "NotIn" => {
                    current.is_none_or(|value| values.iter().all(|unwanted| unwanted != value))
                }
                "Exists" => current.is_some(),
                "DoesNotExist" => current.is_none(),
                _ => false,
            }
        });
    match_labels && match_expressions
}

/// The rules of a ClusterRole; one with an `aggregationRule` has the rules of every
/// ClusterRole its selectors match (as the aggregation controller would have written them).
fn cluster_role_rules(policy: &Policy, role: &Value, seen: &mut BTreeSet<String>) -> Vec<Value> {
    let name = text(role, "/metadata/name").to_string();
    if !seen.insert(name) {
        return Vec::new();
    }
    let Some(selectors) =
        role.pointer("/aggregationRule/clusterRoleSelectors").and_then(Value::as_array)
    else {
        return role.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
    };
    let mut rules = Vec::new();
    for candidate in &policy.cluster_roles {
        if selectors.iter().any(|selector| selector_matches(selector, candidate)) {
            rules.extend(cluster_role_rules(policy, candidate, seen));
        }
    }
    rules
}

fn subject_applies(subject: &Value, user: &UserInfo, binding_namespace: &str) -> bool {
    let name = text(subject, "/name");
    match text(subject, "/kind") {
        "User" => user.username == name,
        "Group" => user.in_group(name),
        "ServiceAccount" => {
            let namespace = match text(subject, "/namespace") {
                "" => binding_namespace,
                namespace => namespace,
            };
            !namespace.is_empty()
                && user.username == crate::identity::service_account_username(namespace, name)
        }
        _ => false,
    }
}

fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let kind = text(subject, "/kind");
    let name = text(subject, "/name");
    if kind == "ServiceAccount" {
        let namespace = match text(subject, "/namespace") {
            "" => binding_namespace,
            namespace => namespace,
        };
        format!("{kind} \"{name}/{namespace}\"")
    } else {
        format!("{kind} \"{name}\"")
    }
}

/// The rules a binding's roleRef grants, or the error a missing role is.
fn role_ref_rules(policy: &Policy, binding: &Value, namespace: &str) -> Result<Vec<Value>, String> {
    let kind = text(binding, "/roleRef/kind");
    let name = text(binding, "/roleRef/name");
    let named = |roles: &[Arc<Value>]| {
        roles.iter().find(|role| text(role, "/metadata/name") == name).cloned()
    };
    match kind {
        "ClusterRole" => named(&policy.cluster_roles)
            .map(|role| cluster_role_rules(policy, &role, &mut BTreeSet::new()))
            .ok_or_else(|| format!("clusterrole.{RBAC_GROUP} \"{name}\" not found")),
        "Role" if !namespace.is_empty() => named(&policy.roles)
            .map(|role| role.get("rules").and_then(Value::as_array).cloned().unwrap_or_default())
            .ok_or_else(|| format!("role.{RBAC_GROUP} \"{name}\" not found")),
        _ => Err(format!("unsupported role reference kind: \"{kind}\"")),
    }
}

/// The RBAC decision (`system:masters` is allowed first, as the API server's privileged
/// group authorizer does).
pub(crate) fn authorize(policy: &Policy, user: &UserInfo, attributes: &Attributes) -> Decision {
    if user.in_group(MASTERS) {
        return Decision { allowed: true, reason: String::new() };
    }
    let mut errors: Vec<String> = Vec::new();
    for binding in &policy.cluster_role_bindings {
        let subjects = binding.get("subjects").and_then(Value::as_array);
        let Some(subject) =
            subjects.into_iter().flatten().find(|subject| subject_applies(subject, user, ""))
        else {
            continue;
        };
        match role_ref_rules(policy, binding, "") {
            Ok(rules) if rules.iter().any(|rule| rule_allows(rule, attributes)) => {
                return Decision {
                    allowed: true,
                    reason: format!(
                        "RBAC: allowed by ClusterRoleBinding \"{}\" of {} \"{}\" to {}",
                        text(binding, "/metadata/name"),
                        text(binding, "/roleRef/kind"),
                        text(binding, "/roleRef/name"),
                        describe_subject(subject, "")
                    ),
                };
            }
            Ok(_) => {}
            Err(error) => errors.push(error),
        }
    }
    if !attributes.namespace.is_empty() {
        for binding in &policy.role_bindings {
            let namespace = text(binding, "/metadata/namespace");
            if namespace != attributes.namespace {
                continue;
            }
            let subjects = binding.get("subjects").and_then(Value::as_array);
            let Some(subject) = subjects
                .into_iter()
                .flatten()
                .find(|subject| subject_applies(subject, user, namespace))
            else {
                continue;
            };
            match role_ref_rules(policy, binding, namespace) {
                Ok(rules) if rules.iter().any(|rule| rule_allows(rule, attributes)) => {
                    return Decision {
                        allowed: true,
                        reason: format!(
                            "RBAC: allowed by RoleBinding \"{}/{namespace}\" of {} \"{}\" to {}",
                            text(binding, "/metadata/name"),
                            text(binding, "/roleRef/kind"),
                            text(binding, "/roleRef/name"),
                            describe_subject(subject, namespace)
                        ),
                    };
                }
                Ok(_) => {}
                Err(error) => errors.push(error),
            }
        }
    }
    let reason = if errors.is_empty() {
        String::new()
    } else if errors.len() == 1 {
        format!("RBAC: {}", errors[0])
    } else {
        format!("RBAC: [{}]", errors.join(", "))
    };
    Decision { allowed: false, reason }
}

/// The 403 a real API server answers a denied request with (`responsewriters.Forbidden`).
pub(crate) fn forbidden(user: &UserInfo, attributes: &Attributes, reason: &str) -> ApiError {
    let what = if !attributes.resource_request {
        format!(
            "User \"{}\" cannot {} path \"{}\"",
            user.username, attributes.verb, attributes.path
        )
    } else {
        let mut resource = attributes.resource.clone();
        if !attributes.subresource.is_empty() {
            resource = format!("{resource}/{}", attributes.subresource);
        }
        let scope = if attributes.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace \"{}\"", attributes.namespace)
        };
        format!(
            "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
            user.username, attributes.verb, attributes.api_group
        )
    };
    let what = if reason.is_empty() { what } else { format!("{what}: {reason}") };
    let qualified = match (attributes.resource_request, attributes.api_group.is_empty()) {
        (false, _) => String::new(),
        (true, true) => attributes.resource.clone(),
        (true, false) => format!("{}.{}", attributes.resource, attributes.api_group),
    };
    let message = if qualified.is_empty() {
        format!("forbidden: {what}")
    } else if attributes.name.is_empty() {
        format!("{qualified} is forbidden: {what}")
    } else {
        format!("{qualified} \"{}\" is forbidden: {what}", attributes.name)
    };
    let mut details = serde_json::Map::new();
    if !attributes.name.is_empty() {
        details.insert("name".to_string(), json!(attributes.name));
    }
    if attributes.resource_request {
        if !attributes.api_group.is_empty() {
            details.insert("group".to_string(), json!(attributes.api_group));
        }
        if !attributes.resource.is_empty() {
            details.insert("kind".to_string(), json!(attributes.resource));
        }
    }
    ApiError::forbidden(message).with_details(Value::Object(details))
}

fn bootstrap_meta(name: &str) -> Value {
    json!({
        "name": name,
        "labels": { "kubernetes.io/bootstrapping": "rbac-defaults" },
        "annotations": { "rbac.authorization.kubernetes.io/autoupdate": "true" },
    })
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({
        "apiVersion": format!("{RBAC_GROUP}/v1"),
        "kind": "ClusterRole",
        "metadata": bootstrap_meta(name),
        "rules": rules,
    })
}

fn cluster_role_binding(name: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|group| json!({ "apiGroup": RBAC_GROUP, "kind": "Group", "name": group }))
        .collect();
    json!({
        "apiVersion": format!("{RBAC_GROUP}/v1"),
        "kind": "ClusterRoleBinding",
        "metadata": bootstrap_meta(name),
        "roleRef": { "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name },
        "subjects": subjects,
    })
}

/// The part of the API server's bootstrap policy the lab needs: `cluster-admin` for
/// `system:masters`, discovery and health for authenticated users (health and version also
/// for unauthenticated ones), and the self reviews for every authenticated user.
pub(crate) fn bootstrap_policy() -> Vec<Value> {
    vec![
        cluster_role(
            "cluster-admin",
            json!([
                { "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] },
                { "nonResourceURLs": ["*"], "verbs": ["*"] },
            ]),
        ),
        cluster_role_binding("cluster-admin", &[MASTERS]),
        cluster_role(
            "system:discovery",
            json!([{
                "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"],
                "verbs": ["get"],
            }]),
        ),
        cluster_role_binding("system:discovery", &[AUTHENTICATED]),
        cluster_role(
            "system:public-info-viewer",
            json!([{
                "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                "verbs": ["get"],
            }]),
        ),
        cluster_role_binding("system:public-info-viewer", &[AUTHENTICATED, UNAUTHENTICATED]),
        cluster_role(
            "system:basic-user",
            json!([
                { "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"] },
                { "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"] },
            ]),
        ),
        cluster_role_binding("system:basic-user", &[AUTHENTICATED]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attributes(method: &str, path: &str, query: &[(&str, &str)]) -> Attributes {
        let query = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Attributes::from_request(method, path, &query)
    }

    #[test]
    fn verbs_and_resources_come_from_the_request_as_the_api_server_derives_them() {
        let get =
            attributes("GET", "/apis/shipstream.io/v1/namespaces/ns1/mysqlfailovergroups/g1", &[]);
        assert_eq!(
            (get.verb.as_str(), get.api_group.as_str(), get.namespace.as_str(), get.name.as_str()),
            ("get", "shipstream.io", "ns1", "g1")
        );
        assert_eq!(attributes("GET", "/api/v1/namespaces/ns1/pods", &[]).verb, "list");
        assert_eq!(attributes("GET", "/api/v1/pods", &[("watch", "true")]).verb, "watch");
        assert_eq!(attributes("GET", "/api/v1/pods", &[("watch", "1")]).verb, "watch");
        // A named GET stays a get, whatever `watch` says.
        assert_eq!(
            attributes("GET", "/api/v1/namespaces/a/pods/p", &[("watch", "true")]).verb,
            "get"
        );
        assert_eq!(attributes("GET", "/api/v1/watch/namespaces/a/pods", &[]).verb, "watch");
        assert_eq!(attributes("DELETE", "/api/v1/namespaces/a/pods", &[]).verb, "deletecollection");
        assert_eq!(attributes("DELETE", "/api/v1/namespaces/a/pods/p", &[]).verb, "delete");
        let status = attributes("PATCH", "/apis/x.io/v1/namespaces/a/ws/w/status", &[]);
        assert_eq!((status.verb.as_str(), status.subresource.as_str()), ("patch", "status"));
        let one = attributes(
            "GET",
            "/api/v1/namespaces/a/configmaps",
            &[("fieldSelector", "metadata.name=c1")],
        );
        assert_eq!((one.verb.as_str(), one.name.as_str()), ("list", "c1"));
        // A namespace is in its own namespace; its status is a subresource.
        let namespace = attributes("GET", "/api/v1/namespaces/a", &[]);
        assert_eq!(
            (namespace.namespace.as_str(), namespace.resource.as_str()),
            ("a", "namespaces")
        );
        let finalize = attributes("PUT", "/api/v1/namespaces/a/finalize", &[]);
        assert_eq!(
            (finalize.resource.as_str(), finalize.subresource.as_str()),
            ("namespaces", "finalize")
        );
        let discovery = attributes("GET", "/apis/x.io/v1", &[]);
        assert!(!discovery.resource_request);
        assert_eq!((discovery.verb.as_str(), discovery.path.as_str()), ("get", "/apis/x.io/v1"));
        assert!(!attributes("GET", "/version", &[]).resource_request);
    }

    fn policy(objects: &str) -> Policy {
        let mut policy = Policy::default();
        for document in serde_norway::Deserializer::from_str(objects) {
            let value: Value = serde::Deserialize::deserialize(document).unwrap();
            let list = match value["kind"].as_str().unwrap() {
                "ClusterRole" => &mut policy.cluster_roles,
                "ClusterRoleBinding" => &mut policy.cluster_role_bindings,
                "Role" => &mut policy.roles,
                _ => &mut policy.role_bindings,
            };
            list.push(Arc::new(value));
        }
        policy
    }

    fn resource(
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Attributes {
        let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        Attributes {
            verb: verb.to_string(),
            resource_request: true,
            namespace: namespace.to_string(),
            api_group: group.to_string(),
            resource: resource.to_string(),
            subresource: subresource.to_string(),
            name: name.to_string(),
            ..Attributes::default()
        }
    }

    const POLICY: &str = r#"
kind: ClusterRole
metadata: { name: reader }
rules:
- { apiGroups: ["shipstream.io"], resources: ["mysqlfailovergroups"], verbs: ["get", "list", "watch"] }
---
kind: ClusterRoleBinding
metadata: { name: readers }
roleRef: { kind: ClusterRole, name: reader }
subjects: [{ kind: ServiceAccount, name: console, namespace: ops }]
---
kind: Role
metadata: { name: annotate, namespace: ns1 }
rules:
- { apiGroups: ["shipstream.io"], resources: ["mysqlfailovergroups"], resourceNames: ["g1"], verbs: ["patch"] }
- { apiGroups: ["shipstream.io"], resources: ["*/status"], verbs: ["update"] }
---
kind: RoleBinding
metadata: { name: annotate, namespace: ns1 }
roleRef: { kind: Role, name: annotate }
subjects: [{ kind: User, name: alice }, { kind: Group, name: team }, { kind: ServiceAccount, name: console }]
---
kind: RoleBinding
metadata: { name: dangling, namespace: ns1 }
roleRef: { kind: ClusterRole, name: missing }
subjects: [{ kind: User, name: bob }]
---
kind: ClusterRole
metadata: { name: aggregate }
aggregationRule:
  clusterRoleSelectors: [{ matchLabels: { aggregate-to: mine } }]
---
kind: ClusterRole
metadata: { name: piece, labels: { aggregate-to: mine } }
rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["*"] }]
---
kind: ClusterRoleBinding
metadata: { name: aggregated }
roleRef: { kind: ClusterRole, name: aggregate }
subjects: [{ kind: User, name: carol }]
"#;

    #[test]
    fn bindings_grant_the_rules_of_their_roles_in_their_scope() {
        let policy = policy(POLICY);
        let console = UserInfo::service_account("ops", "console", "u");
        let alice = UserInfo::authenticated("alice", &[]);
        let decide =
            |user: &UserInfo, attributes: Attributes| authorize(&policy, user, &attributes);

        let list =
            decide(&console, resource("list", "shipstream.io", "mysqlfailovergroups", "ns1", ""));
        assert!(list.allowed);
        assert_eq!(
            list.reason,
            "RBAC: allowed by ClusterRoleBinding \"readers\" of ClusterRole \"reader\" to \
                ServiceAccount \"console/ops\""
        );
        assert!(
            !decide(
                &console,
                resource("patch", "shipstream.io", "mysqlfailovergroups", "ns1", "g1")
            )
            .allowed
        );
        assert!(!decide(&console, resource("get", "", "mysqlfailovergroups", "ns1", "g1")).allowed);
        // The RoleBinding's ServiceAccount subject without a namespace is in the binding's.
        assert!(
            !decide(
                &console,
                resource("update", "shipstream.io", "mysqlfailovergroups/status", "ns1", "g1")
            )
            .allowed
        );

        // resourceNames: g1 only; and only in ns1.
        assert!(
            decide(&alice, resource("patch", "shipstream.io", "mysqlfailovergroups", "ns1", "g1"))
                .allowed
        );
        assert!(
            !decide(&alice, resource("patch", "shipstream.io", "mysqlfailovergroups", "ns1", "g2"))
                .allowed
        );
        assert!(
            !decide(&alice, resource("patch", "shipstream.io", "mysqlfailovergroups", "ns2", "g1"))
                .allowed
        );
        assert!(
            !decide(&alice, resource("patch", "shipstream.io", "mysqlfailovergroups", "", "g1"))
                .allowed
        );
        // `*/status` allows the status subresource of anything, not the main resource.
        assert!(
            decide(
                &alice,
                resource("update", "shipstream.io", "mysqlfailovergroups/status", "ns1", "g9")
            )
            .allowed
        );
        assert!(
            !decide(
                &alice,
                resource("update", "shipstream.io", "mysqlfailovergroups", "ns1", "g9")
            )
            .allowed
        );
        // Groups.
        let member = UserInfo::authenticated("dave", &["team".to_string()]);
        assert!(
            decide(&member, resource("patch", "shipstream.io", "mysqlfailovergroups", "ns1", "g1"))
                .allowed
        );
        // A binding to a missing role says so.
        let bob = UserInfo::authenticated("bob", &[]);
        let denied = decide(&bob, resource("get", "", "pods", "ns1", "p"));
        assert_eq!(
            denied,
            Decision {
                allowed: false,
                reason: "RBAC: clusterrole.rbac.authorization.k8s.io \"missing\" not found"
                    .to_string()
            }
        );
        // Aggregation.
        let carol = UserInfo::authenticated("carol", &[]);
        assert!(decide(&carol, resource("delete", "", "configmaps", "ns3", "c")).allowed);
        assert!(!decide(&carol, resource("delete", "", "secrets", "ns3", "c")).allowed);
        // system:masters.
        let admin = UserInfo::authenticated("root", &[MASTERS.to_string()]);
        assert!(decide(&admin, resource("delete", "", "secrets", "", "")).allowed);
    }

    #[test]
    fn discovery_is_open_to_authenticated_users_and_health_to_everyone() {
        let mut policy = Policy::default();
        for object in bootstrap_policy() {
            match object["kind"].as_str() {
                Some("ClusterRole") => policy.cluster_roles.push(Arc::new(object)),
                _ => policy.cluster_role_bindings.push(Arc::new(object)),
            }
        }
        let user = UserInfo::authenticated("alice", &[]);
        let anonymous = UserInfo::anonymous();
        let path = |path: &str| Attributes::from_request("GET", path, &HashMap::new());
        for allowed in ["/api", "/apis", "/apis/x.io/v1", "/openapi/v2", "/version", "/healthz"] {
            assert!(authorize(&policy, &user, &path(allowed)).allowed, "{allowed}");
        }
        assert!(!authorize(&policy, &user, &path("/metrics")).allowed);
        assert!(authorize(&policy, &anonymous, &path("/healthz")).allowed);
        assert!(!authorize(&policy, &anonymous, &path("/apis")).allowed);
        let review = resource("create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "");
        assert!(authorize(&policy, &user, &review).allowed);
        assert!(!authorize(&policy, &anonymous, &review).allowed);
    }

    #[test]
    fn forbidden_reads_like_the_api_server() {
        let user = UserInfo::authenticated("alice", &[]);
        let error = forbidden(
            &user,
            &resource("patch", "shipstream.io", "mysqlfailovergroups", "ns1", "g1"),
            "",
        );
        assert_eq!(error.code, 403);
        assert_eq!(
            error.message,
            "mysqlfailovergroups.shipstream.io \"g1\" is forbidden: User \"alice\" cannot \
                patch resource \"mysqlfailovergroups\" in API group \"shipstream.io\" in the \
                namespace \"ns1\""
        );
        let list = forbidden(&user, &resource("list", "", "nodes", "", ""), "");
        assert_eq!(
            list.message,
            "nodes is forbidden: User \"alice\" cannot list resource \"nodes\" in API group \
                \"\" at the cluster scope"
        );
        let path =
            forbidden(&user, &Attributes::from_request("GET", "/metrics", &HashMap::new()), "");
        assert_eq!(path.message, "forbidden: User \"alice\" cannot get path \"/metrics\"");
    }
}
