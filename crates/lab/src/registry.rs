//! The resource types the server knows: built-in kinds and those registered by CRDs.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

/// Storage key of a resource: objects of every version of one group/resource live together.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: &str, resource: &str) -> Self {
        Self { group: group.to_string(), resource: resource.to_string() }
    }
}

impl std::fmt::Display for GroupResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// One column of `kubectl get` output (CRD `additionalPrinterColumns`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

/// Everything the server needs to know to serve one resource.
#[derive(Debug, Clone)]
pub(crate) struct ResourceInfo {
    pub group: String,
    /// Served versions, preferred (storage) version first.
    pub versions: Vec<String>,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub has_status: bool,
    /// Registered by a CustomResourceDefinition (no strategic merge patch, unstructured lists).
    pub custom: bool,
    pub printer_columns: Vec<PrinterColumn>,
    /// `openAPIV3Schema` per version, for server-side apply's list and map semantics.
    pub schemas: BTreeMap<String, Value>,
    /// The same schemas compiled for validating writes (`crate::validate`).
    pub validation: BTreeMap<String, Arc<crate::validate::Compiled>>,
}

impl ResourceInfo {
    pub(crate) fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    pub(crate) fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    pub(crate) fn preferred_version(&self) -> &str {
        self.versions.first().map(String::as_str).unwrap_or("v1")
    }

    pub(crate) fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|served| served == version)
    }

    /// Whether `metadata.generation` is set and bumped on spec changes: custom resources and
    /// the built-in kinds with a spec/status split that controllers observe (not ConfigMaps,
    /// Secrets, Events, Leases, Namespaces...).
    pub(crate) fn tracks_generation(&self) -> bool {
        self.custom
            || matches!(
                (self.group.as_str(), self.kind.as_str()),
                ("apps", _) | ("batch", _) | ("apiextensions.k8s.io", _)
            )
    }

    pub(crate) fn schema(&self, version: &str) -> Option<&Value> {
        self.schemas.get(version)
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    has_status: bool,
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        group: "",
        version: "v1",
        plural: "namespaces",
        singular: "namespace",
        kind: "Namespace",
        namespaced: false,
        short_names: &["ns"],
        has_status: true,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "pods",
        singular: "pod",
        kind: "Pod",
        namespaced: true,
        short_names: &["po"],
        has_status: true,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "services",
        singular: "service",
        kind: "Service",
        namespaced: true,
        short_names: &["svc"],
        has_status: true,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "secrets",
        singular: "secret",
        kind: "Secret",
        namespaced: true,
        short_names: &[],
        has_status: false,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "configmaps",
        singular: "configmap",
        kind: "ConfigMap",
        namespaced: true,
        short_names: &["cm"],
        has_status: false,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        has_status: false,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "persistentvolumeclaims",
        singular: "persistentvolumeclaim",
        kind: "PersistentVolumeClaim",
        namespaced: true,
        short_names: &["pvc"],
        has_status: true,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "serviceaccounts",
        singular: "serviceaccount",
        kind: "ServiceAccount",
        namespaced: true,
        short_names: &["sa"],
        has_status: false,
    },
    Builtin {
        group: "apps",
        version: "v1",
        plural: "deployments",
        singular: "deployment",
        kind: "Deployment",
        namespaced: true,
        short_names: &["deploy"],
        has_status: true,
    },
    Builtin {
        group: "apps",
        version: "v1",
        plural: "statefulsets",
        singular: "statefulset",
        kind: "StatefulSet",
        namespaced: true,
        short_names: &["sts"],
        has_status: true,
    },
    Builtin {
        group: "batch",
        version: "v1",
        plural: "jobs",
        singular: "job",
        kind: "Job",
        namespaced: true,
        short_names: &[],
        has_status: true,
    },
    Builtin {
        group: "batch",
        version: "v1",
        plural: "cronjobs",
        singular: "cronjob",
        kind: "CronJob",
        namespaced: true,
        short_names: &["cj"],
        has_status: true,
    },
    Builtin {
        group: "coordination.k8s.io",
        version: "v1",
        plural: "leases",
        singular: "lease",
        kind: "Lease",
        namespaced: true,
        short_names: &[],
        has_status: false,
    },
    Builtin {
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        has_status: false,
    },
    Builtin {
        group: "apiextensions.k8s.io",
        version: "v1",
        plural: "customresourcedefinitions",
        singular: "customresourcedefinition",
        kind: "CustomResourceDefinition",
        namespaced: false,
        short_names: &["crd", "crds"],
        has_status: true,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "roles",
        singular: "role",
        kind: "Role",
        namespaced: true,
        short_names: &[],
        has_status: false,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "rolebindings",
        singular: "rolebinding",
        kind: "RoleBinding",
        namespaced: true,
        short_names: &[],
        has_status: false,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterroles",
        singular: "clusterrole",
        kind: "ClusterRole",
        namespaced: false,
        short_names: &[],
        has_status: false,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterrolebindings",
        singular: "clusterrolebinding",
        kind: "ClusterRoleBinding",
        namespaced: false,
        short_names: &[],
        has_status: false,
    },
];

/// `kubectl get` columns of the built-in kinds (what the API server's table convertors print,
/// where a JSONPath can say it; computed columns such as a Pod's READY are left out).
fn builtin_columns(group: &str, kind: &str) -> Vec<PrinterColumn> {
    let columns: &[(&str, &str, &str)] = match (group, kind) {
        ("", "Namespace") => &[("Status", "string", ".status.phase")],
        ("", "Pod") => &[("Status", "string", ".status.phase"), ("IP", "string", ".status.podIP")],
        ("", "Service") => {
            &[("Type", "string", ".spec.type"), ("Cluster-IP", "string", ".spec.clusterIP")]
        }
        ("", "Secret") => &[("Type", "string", ".type")],
        ("", "PersistentVolumeClaim") => &[
            ("Status", "string", ".status.phase"),
            ("Volume", "string", ".spec.volumeName"),
            ("StorageClass", "string", ".spec.storageClassName"),
        ],
        ("", "Event") | ("events.k8s.io", "Event") => {
            &[("Type", "string", ".type"), ("Reason", "string", ".reason")]
        }
        ("apps", "Deployment") | ("apps", "StatefulSet") => &[
            ("Replicas", "integer", ".spec.replicas"),
            ("Ready", "integer", ".status.readyReplicas"),
        ],
        ("batch", "Job") => &[("Succeeded", "integer", ".status.succeeded")],
        ("batch", "CronJob") => &[
            ("Schedule", "string", ".spec.schedule"),
            ("Suspend", "boolean", ".spec.suspend"),
            ("Last Schedule", "date", ".status.lastScheduleTime"),
        ],
        ("coordination.k8s.io", "Lease") => &[("Holder", "string", ".spec.holderIdentity")],
        _ => &[],
    };
    let mut printer_columns: Vec<PrinterColumn> = columns
        .iter()
        .map(|(name, type_, json_path)| PrinterColumn {
            name: name.to_string(),
            type_: type_.to_string(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: json_path.to_string(),
        })
        .collect();
    if !printer_columns.is_empty() {
        printer_columns.push(PrinterColumn {
            name: "Age".to_string(),
            type_: "date".to_string(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".to_string(),
        });
    }
    printer_columns
}

/// The known resources, keyed by group and plural.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    resources: BTreeMap<GroupResource, ResourceInfo>,
}

impl Default for Registry {
    fn default() -> Self {
        let mut resources = BTreeMap::new();
        for builtin in BUILTINS {
            let info = ResourceInfo {
                group: builtin.group.to_string(),
                versions: vec![builtin.version.to_string()],
                plural: builtin.plural.to_string(),
                singular: builtin.singular.to_string(),
                kind: builtin.kind.to_string(),
                namespaced: builtin.namespaced,
                short_names: builtin.short_names.iter().map(|name| name.to_string()).collect(),
                categories: if matches!(
                    builtin.kind,
                    "Pod" | "Service" | "Deployment" | "StatefulSet" | "Job" | "CronJob"
                ) {
                    vec!["all".to_string()]
                } else {
                    Vec::new()
                },
                has_status: builtin.has_status,
                custom: false,
                printer_columns: builtin_columns(builtin.group, builtin.kind),
                schemas: BTreeMap::new(),
                validation: BTreeMap::new(),
            };
            resources.insert(info.group_resource(), info);
        }
        Self { resources }
    }
}

impl Registry {
    pub(crate) fn get(&self, group_resource: &GroupResource) -> Option<&ResourceInfo> {
        self.resources.get(group_resource)
    }

    /// The resource served at `group`/`version` under the plural `resource`.
    pub(crate) fn lookup(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<&ResourceInfo> {
        self.resources.get(&GroupResource::new(group, resource)).filter(|info| info.serves(version))
    }

    /// The resource of a kind in an apiVersion (`v1`, `apps/v1`).
    pub(crate) fn by_kind(&self, api_version: &str, kind: &str) -> Option<&ResourceInfo> {
        let (group, version) = split_api_version(api_version);
        self.resources
            .values()
            .find(|info| info.group == group && info.kind == kind && info.serves(version))
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &ResourceInfo> {
        self.resources.values()
    }

    /// Groups with their versions, in registration-independent order (core first).
    pub(crate) fn groups(&self) -> BTreeMap<String, Vec<String>> {
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for info in self.resources.values() {
            let versions = groups.entry(info.group.clone()).or_default();
            for version in &info.versions {
                if !versions.contains(version) {
                    versions.push(version.clone());
                }
            }
        }
        groups
    }

    /// Registers (or re-registers) the resource a CustomResourceDefinition describes.
    /// Returns the storage key, or a message saying why the definition is unusable.
    pub(crate) fn register_crd(&mut self, crd: &Value) -> Result<GroupResource, String> {
        let info = crd_resource_info(crd)?;
        let key = info.group_resource();
        if let Some(existing) = self.resources.get(&key)
            && !existing.custom
        {
            return Err(format!("{key} is a built-in resource"));
        }
        self.resources.insert(key.clone(), info);
        Ok(key)
    }

    pub(crate) fn unregister(&mut self, group_resource: &GroupResource) {
        if self.resources.get(group_resource).is_some_and(|info| info.custom) {
            self.resources.remove(group_resource);
        }
    }
}

pub(crate) fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

fn string_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| items.iter().filter_map(|item| item.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn crd_resource_info(crd: &Value) -> Result<ResourceInfo, String> {
    let spec = crd.get("spec").ok_or("spec: Required value")?;
    let group = spec.get("group").and_then(Value::as_str).ok_or("spec.group: Required value")?;
    let names = spec.get("names").ok_or("spec.names: Required value")?;
    let plural =
        names.get("plural").and_then(Value::as_str).ok_or("spec.names.plural: Required value")?;
    let kind =
        names.get("kind").and_then(Value::as_str).ok_or("spec.names.kind: Required value")?;
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let namespaced = match spec.get("scope").and_then(Value::as_str) {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        _ => return Err("spec.scope: Unsupported value: must be Namespaced or Cluster".to_string()),
    };
    let expected_name = format!("{plural}.{group}");
    let name = crd.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    if name != expected_name {
        return Err(format!(
            "metadata.name: Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"
        ));
    }
    let versions =
        spec.get("versions").and_then(Value::as_array).ok_or("spec.versions: Required value")?;
    let mut served = Vec::new();
    let mut storage_version = None;
    let mut has_status = false;
    let mut printer_columns = Vec::new();
    let mut schemas = BTreeMap::new();
    let mut validation = BTreeMap::new();
    for version in versions {
        let Some(version_name) = version.get("name").and_then(Value::as_str) else {
            return Err("spec.versions[].name: Required value".to_string());
        };
        if !version.get("served").and_then(Value::as_bool).unwrap_or(false) {
            continue;
        }
        if version.get("storage").and_then(Value::as_bool).unwrap_or(false) {
            storage_version = Some(version_name.to_string());
        }
        served.push(version_name.to_string());
        if version.pointer("/subresources/status").is_some() {
            has_status = true;
        }
        if let Some(schema) = version.pointer("/schema/openAPIV3Schema") {
            schemas.insert(version_name.to_string(), schema.clone());
            let compiled = crate::validate::Compiled::new(schema)
                .map_err(|error| format!("spec.versions[{version_name}].schema.{error}"))?;
            validation.insert(version_name.to_string(), Arc::new(compiled));
        }
        if printer_columns.is_empty()
            && let Some(columns) = version.get("additionalPrinterColumns").and_then(Value::as_array)
        {
            for column in columns {
                printer_columns.push(PrinterColumn {
                    name: column
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    type_: column
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("string")
                        .to_string(),
                    format: column
                        .get("format")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    description: column
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    priority: column.get("priority").and_then(Value::as_i64).unwrap_or(0),
                    json_path: column
                        .get("jsonPath")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                });
            }
        }
    }
    if served.is_empty() {
        return Err(
            "spec.versions: Invalid value: must have at least one served version".to_string()
        );
    }
    if let Some(storage) = storage_version {
        served.retain(|version| version != &storage);
        served.insert(0, storage);
    }
    Ok(ResourceInfo {
        group: group.to_string(),
        versions: served,
        plural: plural.to_string(),
        singular,
        kind: kind.to_string(),
        namespaced,
        short_names: string_list(names.get("shortNames").unwrap_or(&Value::Null)),
        categories: string_list(names.get("categories").unwrap_or(&Value::Null)),
        has_status,
        custom: true,
        printer_columns,
        schemas,
        validation,
    })
}

/// The `acceptedNames` a CRD's status reports once it is established.
pub(crate) fn accepted_names(crd: &Value) -> Value {
    let names = crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({}));
    let mut accepted = names;
    if accepted.get("singular").is_none()
        && let Some(kind) = accepted.get("kind").and_then(Value::as_str)
    {
        accepted["singular"] = json!(kind.to_lowercase());
    }
    if accepted.get("listKind").is_none()
        && let Some(kind) = accepted.get("kind").and_then(Value::as_str)
    {
        accepted["listKind"] = json!(format!("{kind}List"));
    }
    accepted
}
