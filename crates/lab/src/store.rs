//! The object store: every object of every resource, the resource-version counter, the
//! retained change history that watches resume from, and the write semantics of the API server.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::error::{ApiError, Subject};
use crate::managed;
use crate::registry::{GroupResource, Registry, ResourceInfo, accepted_names};
use crate::selector::Selectors;

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub(crate) type ObjectKey = (String, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One committed change, as watches see it.
#[derive(Debug)]
pub(crate) struct Change {
    pub resource_version: u64,
    pub group_resource: GroupResource,
    pub event_type: EventType,
    pub object: Arc<Value>,
    /// The object before the change (for MODIFIED), to tell selector entries and exits.
    pub previous: Option<Arc<Value>>,
}

/// Who is writing and how, for one request.
#[derive(Debug, Clone)]
pub(crate) struct WriteContext {
    pub field_manager: String,
    pub dry_run: bool,
    pub force: bool,
    /// RFC 3339 seconds, the server's clock at the request.
    pub now: String,
}

/// Namespaces every cluster starts with.
const INITIAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Characters of `generateName` suffixes (apimachinery's `utilrand.String` alphabet).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

pub(crate) struct State {
    pub registry: Registry,
    objects: BTreeMap<GroupResource, BTreeMap<ObjectKey, Arc<Value>>>,
    resource_version: u64,
    history: VecDeque<Arc<Change>>,
    history_limit: usize,
    /// Every change with a resource version above this is still in `history`.
    history_floor: u64,
    sender: broadcast::Sender<Arc<Change>>,
    /// Set by `Lab::insert_unvalidated` around its write: no schema or CEL validation, no
    /// pruning (objects an older or newer operator could have written).
    pub unvalidated: bool,
    /// Set around a request with `fieldValidation=Strict`: unknown fields are refused (400)
    /// instead of pruned.
    pub strict_fields: bool,
}

/// The `metadata` object of a JSON object (created when missing); `None` for a non-object.
fn metadata_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    let root = object.as_object_mut()?;
    let metadata = root.entry("metadata").or_insert_with(|| json!({}));
    if !metadata.is_object() {
        *metadata = json!({});
    }
    metadata.as_object_mut()
}

pub(crate) fn set_meta(object: &mut Value, field: &str, value: Value) {
    if let Some(metadata) = metadata_mut(object) {
        metadata.insert(field.to_string(), value);
    }
}

pub(crate) fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

fn finalizers(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|item| item.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// A DNS-1123 subdomain: object names, label key prefixes.
pub(crate) fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// An RFC 1123 label (`dns_1035`: an RFC 1035 label, which starts with a letter).
fn is_dns_label(name: &str, dns_1035: bool) -> bool {
    name.len() <= 63
        && name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        && name
            .bytes()
            .next()
            .is_some_and(|byte| byte.is_ascii_lowercase() || (!dns_1035 && byte.is_ascii_digit()))
        && name
            .bytes()
            .last()
            .is_some_and(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit())
}

/// The rule of the API server's name validation `name` breaks, if any: namespaces are RFC 1123
/// labels, services RFC 1035 labels, RBAC objects path segments, everything else RFC 1123
/// subdomains.
fn name_violation(info: &ResourceInfo, name: &str) -> Option<&'static str> {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Namespace") => (!is_dns_label(name, false)).then_some(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        ),
        ("", "Service") => (!is_dns_label(name, true)).then_some(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
        ),
        // RBAC names are path segments (`system:discovery`), as `path.ValidatePathSegmentName`.
        ("rbac.authorization.k8s.io", _) => match name {
            "." => Some("may not be '.'"),
            ".." => Some("may not be '..'"),
            _ if name.contains('/') => Some("may not contain '/'"),
            _ if name.contains('%') => Some("may not contain '%'"),
            _ => None,
        },
        _ => (!is_dns_subdomain(name)).then_some(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        ),
    }
}

/// Everything but `metadata` (and `status` when it is a subresource): what bumps `generation`.
fn spec_view(info: &ResourceInfo, object: &Value) -> Value {
    let mut view = object.clone();
    if let Some(map) = view.as_object_mut() {
        map.remove("metadata");
        map.remove("apiVersion");
        map.remove("kind");
        if info.has_status {
            map.remove("status");
        }
    }
    view
}

/// 400 when the body names another apiVersion or kind than the request path (missing is fine).
fn check_type(info: &ResourceInfo, version: &str, object: &Value) -> Result<(), ApiError> {
    let expected_api_version = info.api_version(version);
    match object.get("apiVersion").and_then(Value::as_str) {
        Some(found) if found != expected_api_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({found}) does not match the expected API version ({expected_api_version})"
            )));
        }
        _ => {}
    }
    match object.get("kind").and_then(Value::as_str) {
        Some(found) if found != info.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({found}) does not match the expected kind ({})",
                info.kind
            )));
        }
        _ => {}
    }
    Ok(())
}

impl State {
    pub(crate) fn new(history_limit: usize) -> Self {
        let (sender, _) = broadcast::channel(8192);
        let mut state = Self {
            registry: Registry::default(),
            objects: BTreeMap::new(),
            resource_version: 1,
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            history_floor: 1,
            sender,
            unvalidated: false,
            strict_fields: false,
        };
        for name in INITIAL_NAMESPACES {
            state.resource_version += 1;
            let namespace = json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": name,
                    "uid": uuid::Uuid::new_v4().to_string(),
                    "resourceVersion": state.resource_version.to_string(),
                    "creationTimestamp": now_rfc3339(),
                    "labels": { "kubernetes.io/metadata.name": name },
                },
                "spec": { "finalizers": ["kubernetes"] },
                "status": { "phase": "Active" },
            });
            state
                .objects
                .entry(GroupResource::new("", "namespaces"))
                .or_default()
                .insert((String::new(), name.to_string()), Arc::new(namespace));
        }
        state.history_floor = state.resource_version;
        state
    }

    pub(crate) fn resource_version(&self) -> u64 {
        self.resource_version
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.sender.subscribe()
    }

    pub(crate) fn set_history_limit(&mut self, limit: usize) {
        self.history_limit = limit.max(1);
        self.trim_history();
    }

    /// Forgets all retained history: every watch resuming from an older version gets 410.
    pub(crate) fn compact(&mut self) {
        self.history.clear();
        self.history_floor = self.resource_version;
    }

    /// Changes after `resource_version`, or `None` when some of them are no longer retained.
    pub(crate) fn changes_since(&self, resource_version: u64) -> Option<Vec<Arc<Change>>> {
        if resource_version < self.history_floor {
            return None;
        }
        Some(
            self.history
                .iter()
                .filter(|change| change.resource_version > resource_version)
                .cloned()
                .collect(),
        )
    }

    pub(crate) fn history_floor(&self) -> u64 {
        self.history_floor
    }

    fn trim_history(&mut self) {
        while self.history.len() > self.history_limit {
            if let Some(dropped) = self.history.pop_front() {
                self.history_floor = dropped.resource_version;
            }
        }
    }

    fn next_resource_version(&mut self) -> u64 {
        self.resource_version += 1;
        self.resource_version
    }

    fn record(
        &mut self,
        group_resource: &GroupResource,
        event_type: EventType,
        object: Arc<Value>,
        previous: Option<Arc<Value>>,
    ) {
        let resource_version = self.resource_version;
        let change = Arc::new(Change {
            resource_version,
            group_resource: group_resource.clone(),
            event_type,
            object,
            previous,
        });
        self.history.push_back(change.clone());
        self.trim_history();
        // No receiver is fine: nobody watches.
        let _ = self.sender.send(change);
    }

    pub(crate) fn objects_of(
        &self,
        group_resource: &GroupResource,
    ) -> impl Iterator<Item = (&ObjectKey, &Arc<Value>)> {
        self.objects.get(group_resource).into_iter().flatten()
    }

    pub(crate) fn all_objects(&self) -> impl Iterator<Item = (&GroupResource, &Arc<Value>)> {
        self.objects.iter().flat_map(|(group_resource, objects)| {
            objects.values().map(move |object| (group_resource, object))
        })
    }

    fn stored(&self, group_resource: &GroupResource, key: &ObjectKey) -> Option<Arc<Value>> {
        self.objects.get(group_resource)?.get(key).cloned()
    }

    /// Restores objects from a snapshot, re-registering CRDs first.
    pub(crate) fn restore(&mut self, resource_version: u64, objects: Vec<(GroupResource, Value)>) {
        self.objects.clear();
        for (group_resource, object) in &objects {
            if group_resource.group == "apiextensions.k8s.io"
                && let Err(message) = self.registry.register_crd(object)
            {
                tracing::warn!(%message, "snapshot holds an unusable custom resource definition");
            }
        }
        for (group_resource, object) in objects {
            let key = (
                meta_str(&object, "namespace").unwrap_or_default().to_string(),
                meta_str(&object, "name").unwrap_or_default().to_string(),
            );
            self.objects.entry(group_resource).or_default().insert(key, Arc::new(object));
        }
        self.resource_version = resource_version.max(self.resource_version);
        self.history.clear();
        self.history_floor = self.resource_version;
    }

    fn subject<'a>(info: &'a ResourceInfo, name: &'a str) -> Subject<'a> {
        Subject { group: &info.group, resource: &info.plural, name }
    }

    fn key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> ObjectKey {
        let namespace = if info.namespaced { namespace.unwrap_or_default() } else { "" };
        (namespace.to_string(), name.to_string())
    }

    /// The object as a client of `version` sees it.
    pub(crate) fn present(info: &ResourceInfo, version: &str, object: &Value) -> Value {
        let mut object = object.clone();
        object["apiVersion"] = json!(info.api_version(version));
        object["kind"] = json!(info.kind);
        object
    }

    pub(crate) fn get(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<Value>, ApiError> {
        self.stored(&info.group_resource(), &Self::key(info, namespace, name))
            .ok_or_else(|| ApiError::not_found(Self::subject(info, name)))
    }

    /// Objects of a resource in key order, optionally within a namespace, starting after `after`.
    pub(crate) fn select<'a>(
        &'a self,
        info: &ResourceInfo,
        namespace: Option<&'a str>,
        selectors: &'a Selectors,
        after: Option<&'a ObjectKey>,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<Value>)> + 'a {
        use std::ops::Bound;
        let lower = match after {
            Some(key) => Bound::Excluded(key.clone()),
            None => Bound::Unbounded,
        };
        self.objects
            .get(&info.group_resource())
            .into_iter()
            .flat_map(move |objects| objects.range((lower.clone(), Bound::Unbounded)))
            .filter(move |(key, _)| namespace.is_none_or(|namespace| key.0 == namespace))
            .filter(move |(_, object)| selectors.matches(object))
    }

    fn check_namespace(&self, info: &ResourceInfo, namespace: &str) -> Result<(), ApiError> {
        if !info.namespaced {
            return Ok(());
        }
        let namespaces = GroupResource::new("", "namespaces");
        match self.stored(&namespaces, &(String::new(), namespace.to_string())) {
            None => Err(ApiError::not_found(Subject { group: "", resource: "namespaces", name: namespace })),
            Some(object) if meta_str(&object, "deletionTimestamp").is_some() => Err(ApiError::forbidden(format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                Self::subject(info, "").qualified(),
                meta_str(&object, "name").unwrap_or_default()
            ))
            .with_details(json!({ "kind": info.plural, "group": info.group }))),
            Some(_) => Ok(()),
        }
    }

    /// POST: creates an object (or, with `managed_fields` given, one made by server-side apply).
    pub(crate) fn create(
        &mut self,
        info: &ResourceInfo,
        version: &str,
        namespace: Option<&str>,
        mut object: Value,
        ctx: &WriteContext,
        applied: Option<Value>,
    ) -> Result<Value, ApiError> {
        if !object.is_object() {
            return Err(ApiError::bad_request("the body of the request is not a JSON object"));
        }
        check_type(info, version, &object)?;
        if applied.is_none()
            && meta_str(&object, "resourceVersion").is_some_and(|version| !version.is_empty())
        {
            // The storage layer's refusal, which the API server passes on as a 500.
            const MESSAGE: &str = "resourceVersion should not be set on objects to be created";
            return Err(ApiError::from_code(500, format!("Internal error occurred: {MESSAGE}"))
                .with_details(json!({ "causes": [{ "message": MESSAGE }] })));
        }
        let namespace = if info.namespaced {
            let in_body = meta_str(&object, "namespace").filter(|namespace| !namespace.is_empty());
            match (namespace, in_body) {
                (Some(path), Some(body)) if path != body => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                (Some(path), _) => path.to_string(),
                (None, Some(body)) => body.to_string(),
                (None, None) => "default".to_string(),
            }
        } else {
            String::new()
        };
        let mut name = meta_str(&object, "name").unwrap_or_default().to_string();
        if name.is_empty() {
            let prefix = meta_str(&object, "generateName").unwrap_or_default().to_string();
            if prefix.is_empty() {
                return Err(ApiError::invalid(
                    &info.kind,
                    Self::subject(info, ""),
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                ));
            }
            name = loop {
                let candidate = format!("{prefix}{}", random_suffix());
                if self
                    .stored(&info.group_resource(), &(namespace.clone(), candidate.clone()))
                    .is_none()
                {
                    break candidate;
                }
            };
        }
        if let Some(rule) = name_violation(info, &name) {
            return Err(ApiError::invalid(
                &info.kind,
                Self::subject(info, &name),
                "metadata.name",
                "FieldValueInvalid",
                &format!("Invalid value: \"{name}\": {rule}"),
            ));
        }
        if info.namespaced {
            self.check_namespace(info, &namespace)?;
        }
        let key = (namespace.clone(), name.clone());
        if self.stored(&info.group_resource(), &key).is_some() {
            return Err(ApiError::already_exists(Self::subject(info, &name)));
        }
        object["apiVersion"] = json!(info.api_version(info.preferred_version()));
        object["kind"] = json!(info.kind);
        {
            let Some(metadata) = metadata_mut(&mut object) else {
                return Err(ApiError::bad_request("the body of the request is not a JSON object"));
            };
            metadata.insert("name".to_string(), json!(name));
            if info.namespaced {
                metadata.insert("namespace".to_string(), json!(namespace));
            } else {
                metadata.remove("namespace");
            }
            metadata.insert("uid".to_string(), json!(uuid::Uuid::new_v4().to_string()));
            metadata.insert("creationTimestamp".to_string(), json!(ctx.now));
            if info.tracks_generation() {
                metadata.insert("generation".to_string(), json!(1));
            } else {
                metadata.remove("generation");
            }
            metadata.remove("deletionTimestamp");
            metadata.remove("deletionGracePeriodSeconds");
            metadata.remove("selfLink");
            metadata.remove("managedFields");
        }
        if info.has_status
            && let Some(map) = object.as_object_mut()
        {
            map.remove("status");
        }
        self.admit_create(info, &mut object)?;
        if !self.unvalidated {
            crate::validate::admit(
                info,
                version,
                &name,
                &mut object,
                None,
                None,
                self.strict_fields,
            )?;
        }
        let managed_fields = match &applied {
            Some(applied) => managed::apply_entries_for_create(info, version, applied, ctx),
            None => managed::update_entries(info, version, None, &object, &Value::Null, ctx, None),
        };
        if !managed_fields.as_array().is_none_or(Vec::is_empty) {
            set_meta(&mut object, "managedFields", managed_fields);
        }
        if ctx.dry_run {
            set_meta(&mut object, "resourceVersion", json!(""));
            return Ok(Self::present(info, version, &object));
        }
        let resource_version = self.next_resource_version();
        set_meta(&mut object, "resourceVersion", json!(resource_version.to_string()));
        if info.group == "apiextensions.k8s.io" {
            self.registry.register_crd(&object).map_err(|message| {
                ApiError::invalid(
                    &info.kind,
                    Self::subject(info, &name),
                    "spec",
                    "FieldValueInvalid",
                    &message,
                )
            })?;
        }
        let object = Arc::new(object);
        self.objects.entry(info.group_resource()).or_default().insert(key, object.clone());
        self.record(&info.group_resource(), EventType::Added, object.clone(), None);
        Ok(Self::present(info, version, &object))
    }

    /// What the server's admission and defaulting add on create.
    fn admit_create(&self, info: &ResourceInfo, object: &mut Value) -> Result<(), ApiError> {
        match (info.group.as_str(), info.kind.as_str()) {
            ("", "Namespace") => {
                let name = meta_str(object, "name").unwrap_or_default().to_string();
                let Some(metadata) = metadata_mut(object) else { return Ok(()) };
                let labels = metadata.entry("labels").or_insert_with(|| json!({}));
                if let Some(labels) = labels.as_object_mut() {
                    labels.insert("kubernetes.io/metadata.name".to_string(), json!(name));
                }
                object["spec"] = json!({ "finalizers": ["kubernetes"] });
                object["status"] = json!({ "phase": "Active" });
            }
            ("", "Pod") => {
                object["status"] = json!({ "phase": "Pending", "qosClass": "BestEffort" });
            }
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                let accepted = accepted_names(object);
                let now = now_rfc3339();
                object["status"] = json!({
                    "acceptedNames": accepted,
                    "conditions": [
                        { "type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now },
                        { "type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now },
                    ],
                    "storedVersions": [ object.pointer("/spec/versions").and_then(Value::as_array).and_then(|versions| versions.iter().find(|version| version.get("storage").and_then(Value::as_bool).unwrap_or(false))).and_then(|version| version.get("name")).cloned().unwrap_or(Value::Null) ],
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// PUT (and the final step of PATCH): replaces an object.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn update(
        &mut self,
        info: &ResourceInfo,
        version: &str,
        namespace: Option<&str>,
        name: &str,
        mut object: Value,
        subresource: Option<&str>,
        ctx: &WriteContext,
        applied: Option<managed::Applied>,
    ) -> Result<Value, ApiError> {
        let key = Self::key(info, namespace, name);
        let old = self
            .stored(&info.group_resource(), &key)
            .ok_or_else(|| ApiError::not_found(Self::subject(info, name)))?;
        if !object.is_object() {
            return Err(ApiError::bad_request("the body of the request is not a JSON object"));
        }
        check_type(info, version, &object)?;
        if let Some(body_name) = meta_str(&object, "name")
            && body_name != name
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if info.namespaced
            && let Some(body_namespace) =
                meta_str(&object, "namespace").filter(|namespace| !namespace.is_empty())
            && body_namespace != key.0
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        match meta_str(&object, "resourceVersion").filter(|version| !version.is_empty()) {
            Some(requested) if Some(requested) != meta_str(&old, "resourceVersion") => {
                return Err(ApiError::stale(Self::subject(info, name)));
            }
            Some(_) => {}
            None if info.custom && applied.is_none() => {
                return Err(ApiError::invalid(
                    &info.kind,
                    Self::subject(info, name),
                    "metadata.resourceVersion",
                    "FieldValueInvalid",
                    "Invalid value: 0x0: must be specified for an update",
                ));
            }
            None => {}
        }
        if let Some(uid) = meta_str(&object, "uid").filter(|uid| !uid.is_empty())
            && Some(uid) != meta_str(&old, "uid")
        {
            return Err(ApiError::conflict(
                Self::subject(info, name),
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta_str(&old, "uid").unwrap_or_default()
                ),
            ));
        }
        if subresource == Some("status") {
            let status = object.get("status").cloned();
            let mut replaced = (*old).clone();
            match status {
                Some(status) => replaced["status"] = status,
                None => {
                    if let Some(map) = replaced.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
            object = replaced;
        } else {
            if info.has_status {
                match old.get("status") {
                    Some(status) => object["status"] = status.clone(),
                    None => {
                        if let Some(map) = object.as_object_mut() {
                            map.remove("status");
                        }
                    }
                }
            }
            if info.group.is_empty() && info.kind == "Namespace" {
                object["spec"] = old.get("spec").cloned().unwrap_or_else(|| json!({}));
            }
        }
        object["apiVersion"] = json!(info.api_version(info.preferred_version()));
        object["kind"] = json!(info.kind);
        {
            let old_metadata =
                old.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
            let Some(metadata) = metadata_mut(&mut object) else {
                return Err(ApiError::bad_request("the body of the request is not a JSON object"));
            };
            for field in [
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "generation",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "resourceVersion",
            ] {
                match old_metadata.get(field) {
                    Some(value) => metadata.insert(field.to_string(), value.clone()),
                    None => metadata.remove(field),
                };
            }
            metadata.remove("selfLink");
        }
        if !self.unvalidated {
            crate::validate::admit(
                info,
                version,
                name,
                &mut object,
                Some(&old),
                subresource,
                self.strict_fields,
            )?;
        }
        if meta_str(&old, "deletionTimestamp").is_some() {
            let before: BTreeSet<String> = finalizers(&old).into_iter().collect();
            let added: Vec<String> = finalizers(&object)
                .into_iter()
                .filter(|finalizer| !before.contains(finalizer))
                .collect();
            if !added.is_empty() {
                return Err(ApiError::invalid(
                    &info.kind,
                    Self::subject(info, name),
                    "metadata.finalizers",
                    "FieldValueForbidden",
                    &format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
                    ),
                ));
            }
        }
        let managed_fields = match &applied {
            Some(applied) => applied.managed_fields.clone(),
            None => {
                let old_managed =
                    old.pointer("/metadata/managedFields").cloned().unwrap_or(Value::Null);
                managed::update_entries(
                    info,
                    version,
                    Some(&old),
                    &object,
                    &old_managed,
                    ctx,
                    subresource,
                )
            }
        };
        {
            let Some(metadata) = metadata_mut(&mut object) else {
                return Err(ApiError::bad_request("the body of the request is not a JSON object"));
            };
            if managed_fields.as_array().is_none_or(Vec::is_empty) {
                metadata.remove("managedFields");
            } else {
                metadata.insert("managedFields".to_string(), managed_fields);
            }
        }
        if info.tracks_generation() && spec_view(info, &old) != spec_view(info, &object) {
            let generation =
                old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
            set_meta(&mut object, "generation", json!(generation + 1));
        }
        if object == *old {
            return Ok(Self::present(info, version, &old));
        }
        if ctx.dry_run {
            return Ok(Self::present(info, version, &object));
        }
        let resource_version = self.next_resource_version();
        set_meta(&mut object, "resourceVersion", json!(resource_version.to_string()));
        if info.group == "apiextensions.k8s.io" && subresource.is_none() {
            self.registry.register_crd(&object).map_err(|message| {
                ApiError::invalid(
                    &info.kind,
                    Self::subject(info, name),
                    "spec",
                    "FieldValueInvalid",
                    &message,
                )
            })?;
        }
        let object = Arc::new(object);
        if meta_str(&object, "deletionTimestamp").is_some() && finalizers(&object).is_empty() {
            self.remove(info, &key, object.clone());
            return Ok(Self::present(info, version, &object));
        }
        self.objects.entry(info.group_resource()).or_default().insert(key, object.clone());
        self.record(&info.group_resource(), EventType::Modified, object.clone(), Some(old));
        Ok(Self::present(info, version, &object))
    }

    /// Removes a stored object for good, then what its removal implies.
    fn remove(&mut self, info: &ResourceInfo, key: &ObjectKey, last: Arc<Value>) {
        let group_resource = info.group_resource();
        if let Some(objects) = self.objects.get_mut(&group_resource) {
            objects.remove(key);
        }
        self.record(&group_resource, EventType::Deleted, last.clone(), None);
        if info.group == "apiextensions.k8s.io" {
            self.remove_custom_resources(&last);
        }
        if info.group.is_empty() && info.kind == "Namespace" {
            self.empty_namespace(&key.1);
        }
        if let Some(uid) = meta_str(&last, "uid") {
            let uid = uid.to_string();
            self.collect_dependents(&uid);
        }
        if info.namespaced {
            self.finish_namespace_if_empty(&key.0);
        }
    }

    fn remove_custom_resources(&mut self, crd: &Value) {
        let (Some(group), Some(plural)) = (
            crd.pointer("/spec/group").and_then(Value::as_str),
            crd.pointer("/spec/names/plural").and_then(Value::as_str),
        ) else {
            return;
        };
        let group_resource = GroupResource::new(group, plural);
        if let Some(objects) = self.objects.remove(&group_resource) {
            for object in objects.into_values() {
                let mut last = (*object).clone();
                let resource_version = self.next_resource_version();
                set_meta(&mut last, "resourceVersion", json!(resource_version.to_string()));
                self.record(&group_resource, EventType::Deleted, Arc::new(last), None);
            }
        }
        self.registry.unregister(&group_resource);
    }

    /// Deletes every object in a namespace being deleted (what the namespace controller does).
    fn empty_namespace(&mut self, namespace: &str) {
        let infos: Vec<ResourceInfo> =
            self.registry.all().filter(|info| info.namespaced).cloned().collect();
        let now = now_rfc3339();
        for info in infos {
            let names: Vec<String> = self
                .objects_of(&info.group_resource())
                .filter(|(key, _)| key.0 == namespace)
                .map(|(key, _)| key.1.clone())
                .collect();
            for name in names {
                let ctx = WriteContext {
                    field_manager: String::new(),
                    dry_run: false,
                    force: false,
                    now: now.clone(),
                };
                if let Err(error) = self.delete(
                    &info,
                    info.preferred_version(),
                    Some(namespace),
                    &name,
                    &Value::Null,
                    &ctx,
                ) {
                    tracing::debug!(%error, %name, "deleting namespace content");
                }
            }
        }
    }

    fn finish_namespace_if_empty(&mut self, namespace: &str) {
        let namespaces = GroupResource::new("", "namespaces");
        let key = (String::new(), namespace.to_string());
        let Some(object) = self.stored(&namespaces, &key) else { return };
        if meta_str(&object, "deletionTimestamp").is_none() {
            return;
        }
        let occupied = self.objects.iter().any(|(group_resource, objects)| {
            self.registry.get(group_resource).is_some_and(|info| info.namespaced)
                && objects.keys().any(|object_key| object_key.0 == namespace)
        });
        if occupied || !finalizers(&object).is_empty() {
            return;
        }
        if let Some(info) = self.registry.get(&namespaces).cloned() {
            let mut last = (*object).clone();
            let resource_version = self.next_resource_version();
            set_meta(&mut last, "resourceVersion", json!(resource_version.to_string()));
            if let Some(spec) = last.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("finalizers".to_string(), json!([]));
            }
            if let Some(objects) = self.objects.get_mut(&namespaces) {
                objects.remove(&key);
            }
            self.record(&info.group_resource(), EventType::Deleted, Arc::new(last), None);
        }
    }

    /// Background garbage collection: objects whose every owner is gone are deleted.
    fn collect_dependents(&mut self, removed_uid: &str) {
        let mut orphans = Vec::new();
        for (group_resource, objects) in &self.objects {
            for (key, object) in objects {
                let Some(owners) =
                    object.pointer("/metadata/ownerReferences").and_then(Value::as_array)
                else {
                    continue;
                };
                if owners
                    .iter()
                    .any(|owner| owner.get("uid").and_then(Value::as_str) == Some(removed_uid))
                {
                    orphans.push((group_resource.clone(), key.clone(), owners.clone()));
                }
            }
        }
        if orphans.is_empty() {
            return;
        }
        let live: BTreeSet<String> = self
            .all_objects()
            .filter_map(|(_, object)| meta_str(object, "uid").map(str::to_string))
            .collect();
        let now = now_rfc3339();
        for (group_resource, key, owners) in orphans {
            let any_owner_left = owners.iter().any(|owner| {
                owner.get("uid").and_then(Value::as_str).is_some_and(|uid| live.contains(uid))
            });
            if any_owner_left {
                continue;
            }
            let Some(info) = self.registry.get(&group_resource).cloned() else { continue };
            let namespace = if key.0.is_empty() { None } else { Some(key.0.as_str()) };
            let ctx = WriteContext {
                field_manager: String::new(),
                dry_run: false,
                force: false,
                now: now.clone(),
            };
            if let Err(error) =
                self.delete(&info, info.preferred_version(), namespace, &key.1, &Value::Null, &ctx)
            {
                tracing::debug!(%error, name = %key.1, "garbage collecting a dependent");
            }
        }
    }

    /// DELETE: returns the object and 200 when it is gone, 202 when finalizers keep it.
    pub(crate) fn delete(
        &mut self,
        info: &ResourceInfo,
        version: &str,
        namespace: Option<&str>,
        name: &str,
        options: &Value,
        ctx: &WriteContext,
    ) -> Result<(Value, u16), ApiError> {
        let key = Self::key(info, namespace, name);
        let old = self
            .stored(&info.group_resource(), &key)
            .ok_or_else(|| ApiError::not_found(Self::subject(info, name)))?;
        if let Some(uid) = options.pointer("/preconditions/uid").and_then(Value::as_str) {
            let actual = meta_str(&old, "uid").unwrap_or_default();
            if uid != actual {
                return Err(ApiError::conflict(
                    Self::subject(info, name),
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                    ),
                ));
            }
        }
        if let Some(resource_version) =
            options.pointer("/preconditions/resourceVersion").and_then(Value::as_str)
        {
            let actual = meta_str(&old, "resourceVersion").unwrap_or_default();
            if resource_version != actual {
                return Err(ApiError::conflict(
                    Self::subject(info, name),
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {resource_version}, ResourceVersion in object meta: {actual}"
                    ),
                ));
            }
        }
        let is_namespace = info.group.is_empty() && info.kind == "Namespace";
        if is_namespace && INITIAL_NAMESPACES[..3].contains(&name) {
            return Err(ApiError::forbidden(format!(
                "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
            )));
        }
        let keeps = !finalizers(&old).is_empty() || (is_namespace && self.namespace_occupied(name));
        if keeps {
            if meta_str(&old, "deletionTimestamp").is_some() {
                return Ok((Self::present(info, version, &old), 202));
            }
            let mut object = (*old).clone();
            {
                let Some(metadata) = metadata_mut(&mut object) else {
                    return Err(ApiError::bad_request(
                        "the body of the request is not a JSON object",
                    ));
                };
                metadata.insert("deletionTimestamp".to_string(), json!(ctx.now));
                metadata.insert("deletionGracePeriodSeconds".to_string(), json!(0));
                // As the API server's markAsDeleting: deletion is a change of intent.
                if let Some(generation) =
                    metadata.get("generation").and_then(Value::as_i64).filter(|value| *value > 0)
                {
                    metadata.insert("generation".to_string(), json!(generation + 1));
                }
            }
            if is_namespace {
                object["status"] = json!({ "phase": "Terminating" });
            }
            if ctx.dry_run {
                return Ok((Self::present(info, version, &object), 202));
            }
            let resource_version = self.next_resource_version();
            set_meta(&mut object, "resourceVersion", json!(resource_version.to_string()));
            let object = Arc::new(object);
            self.objects.entry(info.group_resource()).or_default().insert(key, object.clone());
            self.record(&info.group_resource(), EventType::Modified, object.clone(), Some(old));
            if is_namespace {
                self.empty_namespace(name);
                self.finish_namespace_if_empty(name);
                let current =
                    self.stored(&info.group_resource(), &(String::new(), name.to_string()));
                return Ok(match current {
                    Some(current) => (Self::present(info, version, &current), 202),
                    None => (Self::present(info, version, &object), 200),
                });
            }
            return Ok((Self::present(info, version, &object), 202));
        }
        if ctx.dry_run {
            return Ok((Self::present(info, version, &old), 200));
        }
        let mut last = (*old).clone();
        let resource_version = self.next_resource_version();
        set_meta(&mut last, "resourceVersion", json!(resource_version.to_string()));
        let last = Arc::new(last);
        self.remove(info, &key, last.clone());
        Ok((Self::present(info, version, &last), 200))
    }

    fn namespace_occupied(&self, namespace: &str) -> bool {
        self.objects.iter().any(|(group_resource, objects)| {
            self.registry.get(group_resource).is_some_and(|info| info.namespaced)
                && objects.keys().any(|key| key.0 == namespace)
        })
    }
}

pub(crate) fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    match jiff::Timestamp::from_second(now.as_second()) {
        Ok(seconds) => seconds.to_string(),
        Err(_) => now.to_string(),
    }
}

fn random_suffix() -> String {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes[..5]
        .iter()
        .map(|byte| char::from(NAME_ALPHABET[usize::from(*byte) % NAME_ALPHABET.len()]))
        .collect()
}
