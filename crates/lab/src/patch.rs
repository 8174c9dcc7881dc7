//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::managed::builtin_list_keys;

/// The patch types of `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchType {
    pub(crate) fn from_content_type(content_type: &str) -> Option<Self> {
        let media_type = content_type.split(';').next().unwrap_or_default().trim();
        match media_type {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml"
            | "application/apply-patch+json"
            | "application/apply-patch+cbor" => Some(Self::Apply),
            _ => None,
        }
    }
}

pub(crate) fn unsupported_patch(custom: bool) -> ApiError {
    let accepted = if custom {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    };
    ApiError::unsupported_media_type(format!(
        "the body of the request was in an unknown format - accepted media types include: {accepted}"
    ))
}

fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|error| {
        ApiError::bad_request(format!(
            "error decoding patch at line {} column {}: {error}",
            error.line(),
            error.column()
        ))
    })
}

/// Applies a JSON, merge or strategic patch to `target`.
pub(crate) fn apply_patch(
    patch_type: PatchType,
    target: &Value,
    body: &[u8],
) -> Result<Value, ApiError> {
    let mut patched = target.clone();
    match patch_type {
        PatchType::Json => {
            let patch: json_patch::Patch = serde_json::from_slice(body).map_err(|error| {
                ApiError::bad_request(format!(
                    "error decoding json patch at line {} column {}: {error}",
                    error.line(),
                    error.column()
                ))
            })?;
            // One operation at a time (on a copy, so still all or nothing): a `test` for null
            // passes on a missing path, as in the API server's json-patch library (kube's
            // finalizer helper relies on it for objects without finalizers).
            for operation in &patch.0 {
                if let json_patch::PatchOperation::Test(test) = operation
                    && test.value.is_null()
                    && patched.pointer(test.path.as_str()).is_none()
                {
                    continue;
                }
                json_patch::patch(&mut patched, std::slice::from_ref(operation))
                    .map_err(|error| ApiError::new(422, "Invalid", error.to_string()))?;
            }
        }
        PatchType::Merge => {
            let patch = parse_json(body)?;
            if !patch.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding merge patch: the patch is not a JSON object",
                ));
            }
            json_patch::merge(&mut patched, &patch);
        }
        PatchType::Strategic => {
            let patch = parse_json(body)?;
            if !patch.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding strategic merge patch: the patch is not a JSON object",
                ));
            }
            strategic_merge(&mut patched, &patch)?;
        }
        PatchType::Apply => return Err(ApiError::bad_request("apply patches are not merged here")),
    }
    Ok(patched)
}

/// Strategic merge patch over the built-in types' merge keys (`patchMergeKey`) and directives
/// (`$patch`, `$retainKeys`, `$deleteFromPrimitiveList/`, `$setElementOrder/`).
pub(crate) fn strategic_merge(target: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let Some(patch_map) = patch.as_object() else {
        *target = patch.clone();
        return Ok(());
    };
    match patch_map.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut replacement = patch_map.clone();
            replacement.remove("$patch");
            *target = Value::Object(replacement);
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            return Ok(());
        }
        Some(other) => return Err(ApiError::bad_request(format!("unknown patch type: {other}"))),
        None => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(target_map) = target.as_object_mut() else { return Ok(()) };
    if let Some(retain) = patch_map.get("$retainKeys").and_then(Value::as_array) {
        let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
        target_map.retain(|key, _| keep.contains(&key.as_str()));
    }
    for (key, value) in patch_map {
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(items)), Some(remove)) =
                (target_map.get_mut(field), value.as_array())
            {
                items.retain(|item| !remove.contains(item));
            }
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        if value.is_null() {
            target_map.remove(key);
            continue;
        }
        match (target_map.get_mut(key), value) {
            (Some(existing @ Value::Object(_)), Value::Object(_)) => {
                strategic_merge(existing, value)?
            }
            (Some(Value::Array(existing)), Value::Array(items)) => {
                merge_list(key, existing, items)?
            }
            (_, Value::Object(inner)) => {
                let mut fresh = Value::Object(Map::new());
                strategic_merge(&mut fresh, &Value::Object(inner.clone()))?;
                target_map.insert(key.clone(), fresh);
            }
            (_, Value::Array(items)) => {
                let cleaned: Vec<Value> = items
                    .iter()
                    .filter(|item| item.get("$patch").and_then(Value::as_str) != Some("delete"))
                    .cloned()
                    .collect();
                target_map.insert(key.clone(), Value::Array(cleaned));
            }
            _ => {
                target_map.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(())
}

fn merge_list(field: &str, existing: &mut Vec<Value>, items: &[Value]) -> Result<(), ApiError> {
    if items.iter().any(|item| item.get("$patch").and_then(Value::as_str) == Some("replace")) {
        *existing = items.iter().filter(|item| item.get("$patch").is_none()).cloned().collect();
        return Ok(());
    }
    if field == "finalizers" {
        for item in items {
            if !existing.contains(item) {
                existing.push(item.clone());
            }
        }
        return Ok(());
    }
    let key = builtin_list_keys(field).and_then(|keys| {
        keys.iter().copied().find(|key| items.iter().all(|item| item.get(*key).is_some()))
    });
    let Some(key) = key.filter(|_| items.iter().all(Value::is_object)) else {
        *existing = items.to_vec();
        return Ok(());
    };
    for item in items {
        let wanted = item.get(key);
        let position = existing.iter().position(|candidate| candidate.get(key) == wanted);
        if item.get("$patch").and_then(Value::as_str) == Some("delete") {
            if let Some(position) = position {
                existing.remove(position);
            }
            continue;
        }
        match position {
            Some(position) => {
                if let Some(target) = existing.get_mut(position) {
                    strategic_merge(target, item)?;
                }
            }
            None => {
                let mut fresh = Value::Object(Map::new());
                strategic_merge(&mut fresh, item)?;
                existing.push(fresh);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strategic_merge_merges_containers_by_name() {
        let mut pod = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]},
            "metadata": {"finalizers": ["x"], "labels": {"k": "v", "gone": "y"}}});
        let patch = json!({"spec": {"containers": [{"name": "b", "image": "2"}, {"name": "c", "image": "3"}, {"name": "a", "$patch": "delete"}]},
            "metadata": {"finalizers": ["z"], "labels": {"gone": null}, "$deleteFromPrimitiveList/finalizers": ["x"]}});
        strategic_merge(&mut pod, &patch).unwrap();
        assert_eq!(
            pod,
            json!({"spec": {"containers": [{"name": "b", "image": "2"}, {"name": "c", "image": "3"}]},
                "metadata": {"finalizers": ["z"], "labels": {"k": "v"}}})
        );
    }

    #[test]
    fn strategic_merge_replaces_unkeyed_lists_and_honours_replace() {
        let mut object = json!({"spec": {"args": ["a", "b"], "template": {"x": 1, "y": 2}}});
        strategic_merge(
            &mut object,
            &json!({"spec": {"args": ["c"], "template": {"$patch": "replace", "z": 3}}}),
        )
        .unwrap();
        assert_eq!(object, json!({"spec": {"args": ["c"], "template": {"z": 3}}}));
    }

    #[test]
    fn json_patch_test_failure_is_invalid() {
        let error = apply_patch(
            PatchType::Json,
            &json!({"a": 1}),
            br#"[{"op":"test","path":"/a","value":2}]"#,
        )
        .unwrap_err();
        assert_eq!(error.code, 422);
        let patched = apply_patch(
            PatchType::Json,
            &json!({"a": 1}),
            br#"[{"op":"test","path":"/a","value":1},{"op":"replace","path":"/a","value":3}]"#,
        )
        .unwrap();
        assert_eq!(patched, json!({"a": 3}));
    }
}
