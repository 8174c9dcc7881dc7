//! OpenAPI v3 as the API server publishes it for `kubectl explain` (kubectl 1.27+): the index
//! `/openapi/v3` naming one document per group-version, and `/openapi/v3/<api|apis/group>/
//! <version>` with a component schema per kind, tagged `x-kubernetes-group-version-kind`.
//! Custom resources get their CRD's `openAPIV3Schema`; built-in kinds a minimal schema
//! (apiVersion, kind, metadata and their top-level fields as free-form objects).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use serde_json::{Value, json};

use crate::registry::{Registry, ResourceInfo};

/// `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`, the name kube-openapi gives it.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// `api/v1`, `apis/apps/v1`: the key of a group-version in the index.
fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

/// The component name kube-openapi derives: the group reversed (`io.shipstream`), the
/// version and the kind; built-in kinds keep their Go package names.
fn component_name(info: &ResourceInfo, version: &str) -> String {
    if !info.custom {
        let package = match info.group.as_str() {
            "" => "core".to_string(),
            "apiextensions.k8s.io" => {
                return format!(
                    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}.{}",
                    info.kind
                );
            }
            group => group.split('.').next().unwrap_or(group).to_string(),
        };
        return format!("io.k8s.api.{package}.{version}.{}", info.kind);
    }
    let reversed: Vec<&str> = info.group.split('.').rev().collect();
    format!("{}.{version}.{}", reversed.join("."), info.kind)
}

fn object_meta() -> Value {
    let string = |description: &str| json!({ "type": "string", "description": description });
    json!({
        "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
        "type": "object",
        "properties": {
            "name": string("Name must be unique within a namespace."),
            "namespace": string("Namespace defines the space within which each name must be unique."),
            "generateName": string("An optional prefix used by the server to generate a unique name."),
            "uid": string("UID is the unique in time and space value for this object."),
            "resourceVersion": string("An opaque value that represents the internal version of this object."),
            "generation": { "type": "integer", "format": "int64", "description": "A sequence number representing a specific generation of the desired state." },
            "creationTimestamp": { "type": "string", "format": "date-time", "description": "The time this object was created." },
            "deletionTimestamp": { "type": "string", "format": "date-time", "description": "The time after which this resource will be deleted." },
            "labels": { "type": "object", "additionalProperties": { "type": "string", "default": "" }, "description": "Map of string keys and values that can be used to organize and categorize objects." },
            "annotations": { "type": "object", "additionalProperties": { "type": "string", "default": "" }, "description": "Unstructured key value map stored with a resource." },
            "finalizers": { "type": "array", "items": { "type": "string", "default": "" }, "description": "Must be empty before the object is deleted from the registry." },
            "ownerReferences": { "type": "array", "items": { "type": "object" }, "description": "List of objects depended by this object." },
            "managedFields": { "type": "array", "items": { "type": "object" }, "description": "Which fields a workflow owns." },
        },
    })
}

fn type_meta_properties() -> serde_json::Map<String, Value> {
    let mut properties = serde_json::Map::new();
    properties.insert(
        "apiVersion".to_string(),
        json!({ "type": "string", "description": "APIVersion defines the versioned schema of this representation of an object." }),
    );
    properties.insert(
        "kind".to_string(),
        json!({ "type": "string", "description": "Kind is a string value representing the REST resource this object represents." }),
    );
    properties.insert(
        "metadata".to_string(),
        json!({ "allOf": [{ "$ref": format!("#/components/schemas/{OBJECT_META}") }], "default": {}, "description": "Standard object's metadata." }),
    );
    properties
}

/// Top-level fields of the built-in kinds the lab serves, for a minimal schema.
fn builtin_fields(info: &ResourceInfo) -> &'static [&'static str] {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "ConfigMap") => &["data", "binaryData", "immutable"],
        ("", "Secret") => &["data", "stringData", "type", "immutable"],
        ("", "ServiceAccount") => &["secrets", "imagePullSecrets", "automountServiceAccountToken"],
        ("", "Event") | ("events.k8s.io", "Event") => {
            &["involvedObject", "regarding", "reason", "message", "note", "type", "count"]
        }
        ("coordination.k8s.io", "Lease") => &["spec"],
        _ if info.has_status => &["spec", "status"],
        _ => &["spec"],
    }
}

fn builtin_schema(info: &ResourceInfo) -> Value {
    let mut properties = type_meta_properties();
    for field in builtin_fields(info) {
        let schema = match *field {
            "type" | "reason" | "message" | "note" => json!({ "type": "string" }),
            "count" => json!({ "type": "integer", "format": "int32" }),
            "immutable" | "automountServiceAccountToken" => json!({ "type": "boolean" }),
            "data" if info.kind == "ConfigMap" => {
                json!({ "type": "object", "additionalProperties": { "type": "string" } })
            }
            "data" | "binaryData" => {
                json!({ "type": "object", "additionalProperties": { "type": "string", "format": "byte" } })
            }
            "stringData" => {
                json!({ "type": "object", "additionalProperties": { "type": "string" } })
            }
            "secrets" | "imagePullSecrets" => {
                json!({ "type": "array", "items": { "type": "object" } })
            }
            _ => json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true }),
        };
        properties.insert(field.to_string(), schema);
    }
    json!({
        "description": format!("{} (the lab API server publishes a minimal schema for built-in kinds).", info.kind),
        "type": "object",
        "properties": properties,
    })
}

fn custom_schema(info: &ResourceInfo, version: &str) -> Value {
    let mut schema = info.schema(version).cloned().unwrap_or_else(
        || json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true }),
    );
    if let Some(map) = schema.as_object_mut() {
        let properties = map.entry("properties").or_insert_with(|| json!({}));
        if let Some(properties) = properties.as_object_mut() {
            for (name, property) in type_meta_properties() {
                properties.insert(name, property);
            }
        }
    }
    schema
}

/// The document of one group-version, or `None` when nothing is served there.
pub(crate) fn group_version_document(
    registry: &Registry,
    group: &str,
    version: &str,
) -> Option<Value> {
    let infos: Vec<&ResourceInfo> =
        registry.all().filter(|info| info.group == group && info.serves(version)).collect();
    if infos.is_empty() {
        return None;
    }
    let mut schemas = BTreeMap::new();
    let mut paths = BTreeMap::new();
    schemas.insert(OBJECT_META.to_string(), object_meta());
    let prefix = format!("/{}", group_version_path(group, version));
    for info in infos {
        // kubectl explain finds the kind of a resource through the `get` operation of its
        // collection path, then the component schema carrying that kind.
        let operation = json!({ "get": {
            "description": format!("list or watch objects of kind {}", info.kind),
            "operationId": format!("list{}", info.kind),
            "x-kubernetes-action": "list",
            "x-kubernetes-group-version-kind": { "group": info.group, "version": version, "kind": info.kind },
            "responses": { "200": { "description": "OK", "content": { "application/json": { "schema": {
                "$ref": format!("#/components/schemas/{}List", component_name(info, version)),
            } } } } },
        } });
        paths.insert(format!("{prefix}/{}", info.plural), operation.clone());
        if info.namespaced {
            paths.insert(format!("{prefix}/namespaces/{{namespace}}/{}", info.plural), operation);
        }
        let gvk = json!([{ "group": info.group, "version": version, "kind": info.kind }]);
        let mut schema =
            if info.custom { custom_schema(info, version) } else { builtin_schema(info) };
        schema["x-kubernetes-group-version-kind"] = gvk.clone();
        let name = component_name(info, version);
        let list_gvk = json!([{ "group": info.group, "version": version, "kind": format!("{}List", info.kind) }]);
        schemas.insert(
            format!("{name}List"),
            json!({
                "description": format!("{}List is a list of {}", info.kind, info.kind),
                "type": "object",
                "required": ["items"],
                "properties": {
                    "apiVersion": { "type": "string" },
                    "kind": { "type": "string" },
                    "items": { "type": "array", "items": { "$ref": format!("#/components/schemas/{name}") } },
                    "metadata": { "type": "object" },
                },
                "x-kubernetes-group-version-kind": list_gvk,
            }),
        );
        schemas.insert(name, schema);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes", "version": format!("v{}.{}.0", crate::KUBERNETES_MAJOR, crate::KUBERNETES_MINOR) },
        "paths": paths,
        "components": { "schemas": schemas },
    }))
}

/// A content hash of a document, as the `hash` query of its index entry (clients cache by it).
fn document_hash(document: &Value) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    document.to_string().hash(&mut hasher);
    format!("{:016X}", hasher.finish())
}

/// `/openapi/v3`: every served group-version with the URL of its document.
pub(crate) fn index(registry: &Registry) -> Value {
    let mut paths = serde_json::Map::new();
    for (group, versions) in registry.groups() {
        for version in versions {
            let Some(document) = group_version_document(registry, &group, &version) else {
                continue;
            };
            let path = group_version_path(&group, &version);
            let url = format!("/openapi/v3/{path}?hash={}", document_hash(&document));
            paths.insert(path, json!({ "serverRelativeURL": url }));
        }
    }
    json!({ "paths": paths })
}

/// `/openapi/v3/<segments>`: the document of the group-version the segments name.
pub(crate) fn document(registry: &Registry, segments: &[&str]) -> Option<Value> {
    match segments {
        ["api", version] => group_version_document(registry, "", version),
        ["apis", group, version] => group_version_document(registry, group, version),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_kinds_are_indexed_with_their_documents() {
        let registry = Registry::default();
        let index = index(&registry);
        let url = index["paths"]["api/v1"]["serverRelativeURL"].as_str().unwrap();
        assert!(url.starts_with("/openapi/v3/api/v1?hash="), "{url}");
        assert!(index["paths"]["apis/apps/v1"].is_object());
        let core = document(&registry, &["api", "v1"]).unwrap();
        let pod = &core["components"]["schemas"]["io.k8s.api.core.v1.Pod"];
        assert_eq!(pod["x-kubernetes-group-version-kind"][0]["kind"], "Pod");
        assert!(pod["properties"]["spec"].is_object());
        let list = &core["paths"]["/api/v1/namespaces/{namespace}/pods"]["get"];
        assert_eq!(list["x-kubernetes-group-version-kind"]["kind"], "Pod");
        assert!(document(&registry, &["apis", "nothing.io", "v1"]).is_none());
    }
}
