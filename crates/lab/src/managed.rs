//! Field ownership: `metadata.managedFields` (FieldsV1) for updates and server-side apply,
//! with the merge, removal and conflict rules of structured-merge-diff.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::registry::ResourceInfo;
use crate::store::WriteContext;

/// The outcome of an apply: the managed fields to store with the merged object.
#[derive(Debug, Clone)]
pub(crate) struct Applied {
    pub managed_fields: Value,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PathElement {
    Field(String),
    /// An associative-list item: the key fields as canonical JSON (`{"name":"x"}`).
    Key(String),
    /// A set-list item: the value as JSON.
    Value(String),
}

pub(crate) type Path = Vec<PathElement>;
pub(crate) type FieldSet = BTreeSet<Path>;

fn path_string(path: &Path) -> String {
    let mut text = String::new();
    for element in path {
        match element {
            PathElement::Field(name) => {
                text.push('.');
                text.push_str(name);
            }
            PathElement::Key(keys) => {
                let parsed: Map<String, Value> = serde_json::from_str(keys).unwrap_or_default();
                let parts: Vec<String> =
                    parsed.iter().map(|(key, value)| format!("{key}={value}")).collect();
                text.push('[');
                text.push_str(&parts.join(","));
                text.push(']');
            }
            PathElement::Value(value) => {
                text.push_str("[=");
                text.push_str(value);
                text.push(']');
            }
        }
    }
    text
}

/// The metadata fields server-side apply tracks, with their list and map semantics.
static METADATA_SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "labels": { "type": "object", "additionalProperties": { "type": "string" } },
            "annotations": { "type": "object", "additionalProperties": { "type": "string" } },
            "finalizers": { "type": "array", "items": { "type": "string" }, "x-kubernetes-list-type": "set" },
            "ownerReferences": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["uid"],
                "items": { "type": "object", "properties": {
                    "apiVersion": {}, "kind": {}, "name": {}, "uid": {}, "controller": {}, "blockOwnerDeletion": {}
                } },
            },
            "generateName": {},
        },
    })
});

/// Merge keys of built-in list fields (the `patchMergeKey`s of the core API types).
pub(crate) fn builtin_list_keys(field: &str) -> Option<&'static [&'static str]> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "hostAliases" => match field {
            "hostAliases" => &["ip"],
            _ => &["name"],
        },
        "volumeMounts" => &["mountPath"],
        "volumeDevices" => &["devicePath"],
        "conditions" => &["type"],
        "ownerReferences" => &["uid"],
        "ports" => &["containerPort", "port"],
        _ => return None,
    })
}

#[derive(Debug, Clone, PartialEq)]
enum ListKind {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// A position in a schema; `None` schema means "deduced" (no declared fields).
#[derive(Debug, Clone, Copy)]
struct Node<'a> {
    schema: Option<&'a Value>,
    builtin: bool,
    /// A built-in map field (labels, data...): its keys are entries, not declared fields.
    map_like: bool,
}

/// Built-in fields that are `map[string]...` rather than structs.
const BUILTIN_MAP_FIELDS: &[&str] = &[
    "labels",
    "annotations",
    "data",
    "stringData",
    "binaryData",
    "nodeSelector",
    "matchLabels",
    "limits",
    "requests",
    "capacity",
    "allocatable",
];

impl<'a> Node<'a> {
    fn field(self, key: &str, at_root: bool) -> (bool, Node<'a>) {
        let builtin = self.builtin;
        if at_root && key == "metadata" {
            return (true, Node { schema: Some(&METADATA_SCHEMA), builtin, map_like: false });
        }
        let Some(schema) = self.schema else {
            let map_like = builtin && BUILTIN_MAP_FIELDS.contains(&key);
            return (builtin && !self.map_like, Node { schema: None, builtin, map_like });
        };
        if let Some(property) = schema.get("properties").and_then(|properties| properties.get(key))
        {
            let map_like = property.get("additionalProperties").is_some_and(Value::is_object);
            return (true, Node { schema: Some(property), builtin, map_like });
        }
        match schema.get("additionalProperties") {
            Some(element) if element.is_object() => {
                (false, Node { schema: Some(element), builtin, map_like: false })
            }
            _ => (false, Node { schema: None, builtin, map_like: false }),
        }
    }

    fn items(self) -> Node<'a> {
        Node {
            schema: self.schema.and_then(|schema| schema.get("items")),
            builtin: self.builtin,
            map_like: false,
        }
    }

    fn atomic_map(self) -> bool {
        self.schema.and_then(|schema| schema.get("x-kubernetes-map-type")).and_then(Value::as_str)
            == Some("atomic")
    }

    fn list_kind(self, field: Option<&str>, items: &[Value]) -> ListKind {
        if let Some(schema) = self.schema {
            match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => return ListKind::Set,
                Some("map") => {
                    let keys = schema
                        .get("x-kubernetes-list-map-keys")
                        .and_then(Value::as_array)
                        .map(|keys| {
                            keys.iter().filter_map(|key| key.as_str().map(str::to_string)).collect()
                        })
                        .unwrap_or_default();
                    return ListKind::Map(keys);
                }
                Some(_) => return ListKind::Atomic,
                None => {}
            }
            if !self.builtin {
                return ListKind::Atomic;
            }
        }
        if self.builtin
            && let Some(keys) = field.and_then(builtin_list_keys)
        {
            // `ports` is keyed by containerPort in containers and by port in services.
            let present: Vec<String> = keys
                .iter()
                .filter(|key| items.iter().all(|item| item.get(**key).is_some()))
                .map(|key| key.to_string())
                .collect();
            if !present.is_empty() && items.iter().all(Value::is_object) {
                return ListKind::Map(present.into_iter().take(1).collect());
            }
        }
        ListKind::Atomic
    }
}

fn item_key(item: &Value, keys: &[String]) -> String {
    let mut map = Map::new();
    for key in keys {
        if let Some(value) = item.get(key) {
            map.insert(key.clone(), value.clone());
        }
    }
    Value::Object(map).to_string()
}

fn last_field(path: &Path) -> Option<&str> {
    match path.last() {
        Some(PathElement::Field(name)) => Some(name),
        _ => None,
    }
}

fn walk(value: &Value, node: Node<'_>, path: &mut Path, set: &mut FieldSet) {
    match value {
        Value::Object(map) => {
            if node.atomic_map() {
                set.insert(path.clone());
                return;
            }
            let at_root = path.is_empty();
            for (key, child) in map {
                let (declared, child_node) = node.field(key, at_root);
                path.push(PathElement::Field(key.clone()));
                walk(child, child_node, path, set);
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !declared {
                    set.insert(path.clone());
                }
                path.pop();
            }
        }
        Value::Array(items) => match node.list_kind(last_field(path), items) {
            ListKind::Atomic => {
                set.insert(path.clone());
            }
            ListKind::Set => {
                for item in items {
                    path.push(PathElement::Value(item.to_string()));
                    set.insert(path.clone());
                    path.pop();
                }
            }
            ListKind::Map(keys) => {
                let item_node = node.items();
                for item in items {
                    path.push(PathElement::Key(item_key(item, &keys)));
                    walk(item, item_node, path, set);
                    set.insert(path.clone());
                    path.pop();
                }
            }
        },
        _ => {
            set.insert(path.clone());
        }
    }
}

/// The part of an object whose fields are tracked: no apiVersion/kind, no server-owned
/// metadata, and `status` only for the status subresource (only it, then).
fn tracked(info: &ResourceInfo, object: &Value, subresource: Option<&str>) -> Value {
    let mut view = object.clone();
    if let Some(map) = view.as_object_mut() {
        map.remove("apiVersion");
        map.remove("kind");
        if subresource == Some("status") {
            map.retain(|key, _| key == "status");
        } else if info.has_status {
            map.remove("status");
        }
        if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in [
                "name",
                "namespace",
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "managedFields",
                "selfLink",
            ] {
                metadata.remove(field);
            }
            if metadata.is_empty() {
                map.remove("metadata");
            }
        }
    }
    view
}

fn schema_for<'a>(info: &'a ResourceInfo, version: &str) -> Node<'a> {
    match info.schema(version).or_else(|| info.schema(info.preferred_version())) {
        Some(schema) => Node { schema: Some(schema), builtin: false, map_like: false },
        None => Node { schema: None, builtin: !info.custom, map_like: false },
    }
}

pub(crate) fn field_set(
    info: &ResourceInfo,
    version: &str,
    object: &Value,
    subresource: Option<&str>,
) -> FieldSet {
    let mut set = FieldSet::new();
    let view = tracked(info, object, subresource);
    walk(&view, schema_for(info, version), &mut Vec::new(), &mut set);
    set
}

/// The value at a path, if present.
fn value_at<'v>(value: &'v Value, path: &[PathElement]) -> Option<&'v Value> {
    let mut current = value;
    for element in path {
        current = match element {
            PathElement::Field(name) => current.get(name)?,
            PathElement::Key(keys) => {
                let keys: Map<String, Value> = serde_json::from_str(keys).ok()?;
                current
                    .as_array()?
                    .iter()
                    .find(|item| keys.iter().all(|(key, value)| item.get(key) == Some(value)))?
            }
            PathElement::Value(text) => {
                let wanted: Value = serde_json::from_str(text).ok()?;
                current.as_array()?.iter().find(|item| **item == wanted)?
            }
        };
    }
    Some(current)
}

fn remove_at(value: &mut Value, path: &[PathElement]) {
    let Some((last, parent_path)) = path.split_last() else { return };
    let mut current = value;
    for element in parent_path {
        let next = match element {
            PathElement::Field(name) => current.get_mut(name),
            PathElement::Key(keys) => {
                let Ok(keys) = serde_json::from_str::<Map<String, Value>>(keys) else { return };
                current.as_array_mut().and_then(|items| {
                    items
                        .iter_mut()
                        .find(|item| keys.iter().all(|(key, value)| item.get(key) == Some(value)))
                })
            }
            PathElement::Value(text) => {
                let Ok(wanted) = serde_json::from_str::<Value>(text) else { return };
                current
                    .as_array_mut()
                    .and_then(|items| items.iter_mut().find(|item| **item == wanted))
            }
        };
        let Some(next) = next else { return };
        current = next;
    }
    match last {
        PathElement::Field(name) => {
            if let Some(map) = current.as_object_mut() {
                map.remove(name);
            }
        }
        PathElement::Key(keys) => {
            let Ok(keys) = serde_json::from_str::<Map<String, Value>>(keys) else { return };
            if let Some(items) = current.as_array_mut() {
                items.retain(|item| !keys.iter().all(|(key, value)| item.get(key) == Some(value)));
            }
        }
        PathElement::Value(text) => {
            let Ok(wanted) = serde_json::from_str::<Value>(text) else { return };
            if let Some(items) = current.as_array_mut() {
                items.retain(|item| *item != wanted);
            }
        }
    }
}

/// After `path` was removed, removes each enclosing object the removal left empty, innermost
/// first, unless some manager owns that object itself (an applied `{}`). The API server does
/// the same: structured-merge-diff turns an emptied map into null, and a CRD's structural
/// pruning drops the null, so a block whose last owned field a manager stopped applying is gone
/// rather than left as `{}` (which a reader would take for a block that is present).
fn prune_emptied(value: &mut Value, path: &[PathElement], applied: &FieldSet, others: &FieldSet) {
    for end in (1..path.len()).rev() {
        let parent = &path[..end];
        if !matches!(parent.last(), Some(PathElement::Field(_))) {
            return;
        }
        let owned = applied.contains(parent) || others.contains(parent);
        let emptied =
            value_at(value, parent).is_some_and(|v| v.as_object().is_some_and(Map::is_empty));
        if owned || !emptied {
            return;
        }
        remove_at(value, parent);
    }
}

/// FieldsV1 JSON of a set.
pub(crate) fn to_fields_v1(set: &FieldSet) -> Value {
    #[derive(Default)]
    struct Tree {
        member: bool,
        children: BTreeMap<String, Tree>,
    }
    let mut root = Tree::default();
    for path in set {
        let mut node = &mut root;
        for element in path {
            let key = match element {
                PathElement::Field(name) => format!("f:{name}"),
                PathElement::Key(keys) => format!("k:{keys}"),
                PathElement::Value(value) => format!("v:{value}"),
            };
            node = node.children.entry(key).or_default();
        }
        node.member = true;
    }
    fn render(tree: &Tree) -> Value {
        let mut map = Map::new();
        if tree.member && !tree.children.is_empty() {
            map.insert(".".to_string(), json!({}));
        }
        for (key, child) in &tree.children {
            map.insert(key.clone(), render(child));
        }
        Value::Object(map)
    }
    render(&root)
}

/// The set a FieldsV1 JSON describes.
pub(crate) fn from_fields_v1(fields: &Value) -> FieldSet {
    fn visit(value: &Value, path: &mut Path, set: &mut FieldSet) {
        let Some(map) = value.as_object() else { return };
        if map.is_empty() && !path.is_empty() {
            set.insert(path.clone());
            return;
        }
        for (key, child) in map {
            if key == "." {
                // The root itself is never a member.
                if !path.is_empty() {
                    set.insert(path.clone());
                }
                continue;
            }
            let element = if let Some(name) = key.strip_prefix("f:") {
                PathElement::Field(name.to_string())
            } else if let Some(keys) = key.strip_prefix("k:") {
                PathElement::Key(keys.to_string())
            } else if let Some(value) = key.strip_prefix("v:") {
                PathElement::Value(value.to_string())
            } else {
                continue;
            };
            path.push(element);
            visit(child, path, set);
            path.pop();
        }
    }
    let mut set = FieldSet::new();
    visit(fields, &mut Vec::new(), &mut set);
    set
}

#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    subresource: Option<String>,
    set: FieldSet,
}

impl Entry {
    fn same_owner(&self, manager: &str, operation: &str, subresource: Option<&str>) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
    }

    fn to_json(&self) -> Value {
        let mut entry = json!({
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(&self.set),
        });
        if let Some(subresource) = &self.subresource {
            entry["subresource"] = json!(subresource);
        }
        entry
    }

    /// How the API server names a manager in conflict messages.
    fn printed(&self) -> String {
        let mut text = format!("{:?}", self.manager);
        if let Some(subresource) = &self.subresource {
            text.push_str(&format!(" with subresource {subresource:?}"));
        }
        if self.operation == "Update" {
            text.push_str(&format!(" using {} at {}", self.api_version, self.time));
        }
        text
    }
}

fn parse_entries(managed_fields: &Value) -> Vec<Entry> {
    managed_fields
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|entry| Entry {
                    manager: entry
                        .get("manager")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    operation: entry
                        .get("operation")
                        .and_then(Value::as_str)
                        .unwrap_or("Update")
                        .to_string(),
                    api_version: entry
                        .get("apiVersion")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    time: entry.get("time").and_then(Value::as_str).unwrap_or_default().to_string(),
                    subresource: entry
                        .get("subresource")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    set: from_fields_v1(entry.get("fieldsV1").unwrap_or(&Value::Null)),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn render_entries(entries: &[Entry]) -> Value {
    Value::Array(entries.iter().filter(|entry| !entry.set.is_empty()).map(Entry::to_json).collect())
}

/// Managed fields after a create, update or non-apply patch by `ctx.field_manager`.
pub(crate) fn update_entries(
    info: &ResourceInfo,
    version: &str,
    old: Option<&Value>,
    new: &Value,
    old_managed: &Value,
    ctx: &WriteContext,
    subresource: Option<&str>,
) -> Value {
    let mut entries = parse_entries(old_managed);
    let new_set = field_set(info, version, new, subresource);
    let (changed, removed): (FieldSet, FieldSet) = match old {
        None => (new_set, FieldSet::new()),
        Some(old) => {
            let old_set = field_set(info, version, old, subresource);
            let old_view = tracked(info, old, subresource);
            let new_view = tracked(info, new, subresource);
            let changed = new_set
                .iter()
                .filter(|path| value_at(&old_view, path) != value_at(&new_view, path))
                .cloned()
                .collect();
            let removed = old_set.difference(&new_set).cloned().collect();
            (changed, removed)
        }
    };
    if changed.is_empty() && removed.is_empty() {
        return render_entries(&entries);
    }
    if ctx.field_manager.is_empty() {
        return render_entries(&entries);
    }
    for entry in &mut entries {
        let before = entry.set.len();
        entry.set.retain(|path| !changed.contains(path) && !removed.contains(path));
        if entry.set.len() != before && entry.same_owner(&ctx.field_manager, "Update", subresource)
        {
            entry.time = ctx.now.clone();
        }
    }
    if !changed.is_empty() {
        match entries
            .iter_mut()
            .find(|entry| entry.same_owner(&ctx.field_manager, "Update", subresource))
        {
            Some(entry) => {
                entry.set.extend(changed);
                entry.time = ctx.now.clone();
                entry.api_version = info.api_version(version);
            }
            None => entries.push(Entry {
                manager: ctx.field_manager.clone(),
                operation: "Update".to_string(),
                api_version: info.api_version(version),
                time: ctx.now.clone(),
                subresource: subresource.map(str::to_string),
                set: changed,
            }),
        }
    }
    render_entries(&entries)
}

/// Managed fields of an object created by server-side apply.
pub(crate) fn apply_entries_for_create(
    info: &ResourceInfo,
    version: &str,
    applied: &Value,
    ctx: &WriteContext,
) -> Value {
    let entry = Entry {
        manager: ctx.field_manager.clone(),
        operation: "Apply".to_string(),
        api_version: info.api_version(version),
        time: ctx.now.clone(),
        subresource: None,
        set: field_set(info, version, applied, None),
    };
    render_entries(&[entry])
}

fn merge_into(live: &mut Value, applied: &Value, node: Node<'_>, path: &mut Path) {
    match (live, applied) {
        (Value::Object(live_map), Value::Object(applied_map)) if !node.atomic_map() => {
            let at_root = path.is_empty();
            for (key, applied_child) in applied_map {
                let (_, child_node) = node.field(key, at_root);
                match live_map.get_mut(key) {
                    Some(live_child) => {
                        path.push(PathElement::Field(key.clone()));
                        merge_into(live_child, applied_child, child_node, path);
                        path.pop();
                    }
                    None => {
                        live_map.insert(key.clone(), applied_child.clone());
                    }
                }
            }
        }
        (Value::Array(live_items), Value::Array(applied_items)) => {
            let combined: Vec<Value> =
                live_items.iter().chain(applied_items.iter()).cloned().collect();
            match node.list_kind(last_field(path), &combined) {
                ListKind::Atomic => *live_items = applied_items.clone(),
                ListKind::Set => {
                    for item in applied_items {
                        if !live_items.contains(item) {
                            live_items.push(item.clone());
                        }
                    }
                }
                ListKind::Map(keys) => {
                    let item_node = node.items();
                    for item in applied_items {
                        let key = item_key(item, &keys);
                        match live_items
                            .iter_mut()
                            .find(|live_item| item_key(live_item, &keys) == key)
                        {
                            Some(live_item) => {
                                path.push(PathElement::Key(key));
                                merge_into(live_item, item, item_node, path);
                                path.pop();
                            }
                            None => live_items.push(item.clone()),
                        }
                    }
                }
            }
        }
        (live, applied) => *live = applied.clone(),
    }
}

/// Server-side apply of `applied` onto `live` by `ctx.field_manager`: the merged object and
/// its managed fields, or 409 when another manager owns a field whose value would change.
pub(crate) fn apply(
    info: &ResourceInfo,
    version: &str,
    live: &Value,
    applied: &Value,
    ctx: &WriteContext,
    subresource: Option<&str>,
) -> Result<(Value, Applied), ApiError> {
    let manager = ctx.field_manager.as_str();
    let node = schema_for(info, version);
    let applied_view = tracked(info, applied, subresource);
    let applied_set = field_set(info, version, applied, subresource);
    let mut merged = live.clone();
    merge_into(&mut merged, &applied_view, node, &mut Vec::new());
    let mut entries =
        parse_entries(live.pointer("/metadata/managedFields").unwrap_or(&Value::Null));

    let live_view = tracked(info, live, subresource);
    let merged_view = tracked(info, &merged, subresource);
    let mut conflicts: Vec<(usize, Path)> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        if entry.same_owner(manager, "Apply", subresource)
            || entry.subresource.as_deref() != subresource
        {
            continue;
        }
        for path in entry.set.intersection(&applied_set) {
            let before = value_at(&live_view, path);
            let after = value_at(&merged_view, path);
            let compound = matches!(path.last(), Some(PathElement::Key(_)))
                || before.is_some_and(Value::is_object);
            if before.is_some() && before != after && !compound {
                conflicts.push((index, path.clone()));
            }
        }
    }
    if !conflicts.is_empty() && !ctx.force {
        return Err(conflict_error(&entries, &conflicts));
    }
    for (index, path) in &conflicts {
        if let Some(entry) = entries.get_mut(*index) {
            entry.set.remove(path);
        }
    }

    let previous: FieldSet = entries
        .iter()
        .find(|entry| entry.same_owner(manager, "Apply", subresource))
        .map(|entry| entry.set.clone())
        .unwrap_or_default();
    let others: FieldSet = entries
        .iter()
        .filter(|entry| !entry.same_owner(manager, "Apply", subresource))
        .flat_map(|entry| entry.set.iter().cloned())
        .collect();
    let mut to_remove: Vec<&Path> = previous
        .iter()
        .filter(|path| !applied_set.contains(*path) && !others.contains(*path))
        .collect();
    // A path under another path being removed goes with it: removing a map-list item's key
    // field first would leave the item unfindable by its key, gutted instead of removed.
    let removing: BTreeSet<&Path> = to_remove.iter().copied().collect();
    to_remove.retain(|path| !(1..path.len()).any(|end| removing.contains(&path[..end].to_vec())));
    to_remove.sort_by_key(|path| std::cmp::Reverse(path.len()));
    for path in to_remove {
        let mut full = Vec::new();
        if subresource == Some("status")
            && !matches!(path.first(), Some(PathElement::Field(name)) if name == "status")
        {
            continue;
        }
        full.extend(path.iter().cloned());
        remove_at(&mut merged, &full);
        prune_emptied(&mut merged, &full, &applied_set, &others);
    }

    match entries.iter_mut().find(|entry| entry.same_owner(manager, "Apply", subresource)) {
        Some(entry) => {
            if entry.set != applied_set {
                entry.time = ctx.now.clone();
            }
            entry.set = applied_set;
            entry.api_version = info.api_version(version);
        }
        None => entries.push(Entry {
            manager: manager.to_string(),
            operation: "Apply".to_string(),
            api_version: info.api_version(version),
            time: ctx.now.clone(),
            subresource: subresource.map(str::to_string),
            set: applied_set,
        }),
    }
    Ok((merged, Applied { managed_fields: render_entries(&entries) }))
}

fn conflict_error(entries: &[Entry], conflicts: &[(usize, Path)]) -> ApiError {
    let printed = |index: usize| entries.get(index).map(Entry::printed).unwrap_or_default();
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(index, path)| {
            json!({
                "reason": "FieldManagerConflict",
                "message": format!("conflict with {}", printed(*index)),
                "field": path_string(path),
            })
        })
        .collect();
    let message = if let [(index, path)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            printed(*index),
            path_string(path)
        )
    } else {
        let mut by_manager: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (index, path) in conflicts {
            by_manager.entry(printed(*index)).or_default().push(path_string(path));
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {manager}:"));
            lines.extend(paths.into_iter().map(|path| format!("- {path}")));
        }
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    };
    ApiError::new(409, "Conflict", message).with_details(json!({ "causes": causes }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::GroupResource;
    use crate::registry::Registry;

    fn configmaps() -> ResourceInfo {
        Registry::default().get(&GroupResource::new("", "configmaps")).unwrap().clone()
    }

    fn ctx(manager: &str, force: bool) -> WriteContext {
        WriteContext {
            field_manager: manager.to_string(),
            dry_run: false,
            force,
            now: "2026-01-01T00:00:00Z".to_string(),
        }
    }

    #[test]
    fn fields_v1_round_trips() {
        let object = json!({"metadata": {"labels": {"a": "1"}, "finalizers": ["x"]}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let info = Registry::default().get(&GroupResource::new("", "pods")).unwrap().clone();
        let set = field_set(&info, "v1", &object, None);
        let fields = to_fields_v1(&set);
        assert_eq!(
            fields,
            json!({
                "f:metadata": {"f:finalizers": {"v:\"x\"": {}}, "f:labels": {"f:a": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}},
            })
        );
        assert_eq!(from_fields_v1(&fields), set);
    }

    #[test]
    fn apply_conflicts_then_force_takes_ownership() {
        let info = configmaps();
        let live = json!({"metadata": {"name": "c"}, "data": {}});
        let (first, applied) =
            apply(&info, "v1", &live, &json!({"data": {"k": "a"}}), &ctx("one", false), None)
                .unwrap();
        let mut first = first;
        first["metadata"]["managedFields"] = applied.managed_fields;
        let error =
            apply(&info, "v1", &first, &json!({"data": {"k": "b"}}), &ctx("two", false), None)
                .unwrap_err();
        assert_eq!(error.code, 409);
        assert_eq!(error.message, "Apply failed with 1 conflict: conflict with \"one\": .data.k");
        let same =
            apply(&info, "v1", &first, &json!({"data": {"k": "a"}}), &ctx("two", false), None);
        assert!(same.is_ok(), "applying the same value is no conflict");
        let (forced, applied) =
            apply(&info, "v1", &first, &json!({"data": {"k": "b"}}), &ctx("two", true), None)
                .unwrap();
        assert_eq!(forced["data"]["k"], "b");
        let managers: Vec<&str> = applied
            .managed_fields
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["two"]);
    }

    #[test]
    fn apply_removes_a_map_list_item_the_manager_stopped_applying_whole() {
        let info = Registry::default().get(&GroupResource::new("", "pods")).unwrap().clone();
        let live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        let both = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "j"}]}});
        let (merged, applied) = apply(&info, "v1", &live, &both, &ctx("one", false), None).unwrap();
        let mut live = merged;
        live["metadata"]["managedFields"] = applied.managed_fields;
        let one = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "image": "i"}]}});
        let (merged, _) = apply(&info, "v1", &live, &one, &ctx("one", false), None).unwrap();
        assert_eq!(merged["spec"]["containers"], json!([{"name": "a", "image": "i"}]), "{merged}");
    }

    #[test]
    fn apply_removes_the_objects_a_removal_emptied() {
        let info = configmaps();
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let first = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "labels": {"a": "1"}, "annotations": {"x": "1"}}});
        let (merged, applied) =
            apply(&info, "v1", &live, &first, &ctx("one", false), None).unwrap();
        let mut live = merged;
        live["metadata"]["managedFields"] = applied.managed_fields;
        let second = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "annotations": {"x": "1"}}});
        let (merged, _) = apply(&info, "v1", &live, &second, &ctx("one", false), None).unwrap();
        assert!(merged["metadata"].get("labels").is_none(), "no empty labels left: {merged}");
        assert_eq!(merged["metadata"]["annotations"], json!({"x": "1"}));
        // An object the manager applied empty is its own, and stays.
        let third = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "annotations": {}}});
        let mut live = merged;
        live["metadata"]["managedFields"] =
            apply(&info, "v1", &live, &second, &ctx("one", false), None).unwrap().1.managed_fields;
        let (merged, _) = apply(&info, "v1", &live, &third, &ctx("one", false), None).unwrap();
        assert_eq!(merged["metadata"]["annotations"], json!({}), "{merged}");
    }

    #[test]
    fn apply_removes_fields_the_manager_stopped_applying() {
        let info = configmaps();
        let live = json!({"metadata": {"name": "c"}});
        let (mut object, applied) = apply(
            &info,
            "v1",
            &live,
            &json!({"data": {"a": "1", "b": "2"}}),
            &ctx("me", false),
            None,
        )
        .unwrap();
        object["metadata"]["managedFields"] = applied.managed_fields;
        let (object, _) =
            apply(&info, "v1", &object, &json!({"data": {"a": "1"}}), &ctx("me", false), None)
                .unwrap();
        assert_eq!(object["data"], json!({"a": "1"}));
    }
}
