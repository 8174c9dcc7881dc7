//! The committed CRDs under deploy/crds/ are what the types generate, and are valid
//! `apiextensions.k8s.io/v1` objects.

use crate::{crd_directory, schema};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

#[test]
fn committed_crds_are_fresh() {
    let directory = crd_directory();
    let mut stale = Vec::new();
    for (file_name, crd) in bloodraven_crd::all_crds() {
        let expected = format!(
            "{}{}",
            bloodraven_crd::GENERATED_HEADER,
            serde_norway::to_string(&crd).unwrap()
        );
        let committed = std::fs::read_to_string(directory.join(file_name)).unwrap_or_default();
        if committed != expected {
            stale.push(file_name);
        }
    }
    for entry in std::fs::read_dir(&directory).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !bloodraven_crd::all_crds().iter().any(|(file_name, _)| *file_name == name) {
            stale.push(Box::leak(name.into_boxed_str()));
        }
    }
    assert!(
        stale.is_empty(),
        "deploy/crds is stale ({}): run `cargo xtask codegen` and commit the result",
        stale.join(", ")
    );
}

#[test]
fn committed_crds_parse_as_custom_resource_definitions() {
    let expected = [
        (
            "mysqlfailovergroups.shipstream.io.yaml",
            "MysqlFailoverGroup",
            "mfg",
            vec!["Active", "Ready", "Age"],
        ),
        (
            "mysqlbackups.shipstream.io.yaml",
            "MysqlBackup",
            "mb",
            vec!["Group", "Profile", "Phase", "Ready", "Started", "Completed", "Location", "Size"],
        ),
        (
            "mysqlbackupverifications.shipstream.io.yaml",
            "MysqlBackupVerification",
            "mbv",
            vec!["Group", "Profile", "Phase", "Started", "Completed", "Backup"],
        ),
    ];
    for (file_name, kind, short_name, columns) in expected {
        let text = std::fs::read_to_string(crd_directory().join(file_name)).unwrap();
        assert!(text.starts_with(bloodraven_crd::GENERATED_HEADER), "{file_name}: header");
        let crd: CustomResourceDefinition = serde_norway::from_str(&text).unwrap();
        assert_eq!(crd.spec.group, "shipstream.io");
        assert_eq!(crd.spec.names.kind, kind);
        assert_eq!(crd.spec.names.short_names, Some(vec![short_name.to_owned()]));
        assert_eq!(crd.spec.scope, "Namespaced");
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        assert!(version.served && version.storage);
        assert!(version.subresources.as_ref().unwrap().status.is_some(), "{kind}: status");
        let names: Vec<_> = version
            .additional_printer_columns
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(|column| column.name.as_str())
            .collect();
        assert_eq!(names, columns, "{kind}: printer columns");
        if kind != "MysqlFailoverGroup" {
            let selectable: Vec<_> = version
                .selectable_fields
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|field| field.json_path.as_str())
                .collect();
            assert_eq!(selectable, [".spec.failoverGroupRef.name", ".spec.profileName"], "{kind}");
        }
        let schema = version.schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap();
        let properties = schema.properties.as_ref().unwrap();
        assert!(properties.contains_key("spec") && properties.contains_key("status"));
    }
}

/// Checks the structural-schema rules the API server enforces that the derive could break.
fn check_structural(path: &str, node: &serde_json::Value, problems: &mut Vec<String>) {
    let Some(object) = node.as_object() else { return };
    for keyword in ["$ref", "anyOf", "oneOf", "allOf", "not"] {
        if object.contains_key(keyword) {
            problems.push(format!("{path}: uses {keyword}"));
        }
    }
    let untyped_ok = object.contains_key("x-kubernetes-int-or-string")
        || object.contains_key("x-kubernetes-preserve-unknown-fields");
    if !object.contains_key("type") && !untyped_ok {
        problems.push(format!("{path}: no type"));
    }
    if object.contains_key("properties") && object.contains_key("additionalProperties") {
        problems.push(format!("{path}: properties beside additionalProperties"));
    }
    if let (Some(default), Some(values)) = (object.get("default"), object.get("enum"))
        && !values.as_array().unwrap().contains(default)
    {
        problems.push(format!("{path}: default {default} is not in the enum"));
    }
    if object.get("x-kubernetes-list-type").and_then(|t| t.as_str()) == Some("map") {
        let required = node["items"]["required"].as_array().cloned().unwrap_or_default();
        for key in object["x-kubernetes-list-map-keys"].as_array().unwrap() {
            if !required.contains(key) {
                problems.push(format!("{path}: list-map key {key} is not required"));
            }
        }
    }
    if let Some(properties) = object.get("properties").and_then(|p| p.as_object()) {
        for (name, child) in properties {
            check_structural(&format!("{path}.{name}"), child, problems);
        }
    }
    for keyword in ["items", "additionalProperties"] {
        if let Some(child) = object.get(keyword) {
            check_structural(&format!("{path}[{keyword}]"), child, problems);
        }
    }
}

#[test]
fn committed_crds_are_structural() {
    for (file_name, _) in bloodraven_crd::all_crds() {
        let mut problems = Vec::new();
        check_structural("", &schema(file_name), &mut problems);
        assert_eq!(problems, Vec::<String>::new(), "{file_name}");
    }
}

/// Follows a dotted path of property names through a schema.
fn at<'a>(schema: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    path.split('.').fold(schema, |node, step| match step {
        "[]" => &node["items"],
        name => &node["properties"][name],
    })
}

/// The non-null values of a node's `enum` (kube adds `null` to the enum of optional fields).
fn enum_values(node: &serde_json::Value) -> Vec<&str> {
    node["enum"].as_array().unwrap().iter().filter_map(|value| value.as_str()).collect()
}

#[test]
fn spec_defaults_and_bounds_are_in_the_schema() {
    use serde_json::json;
    let group = schema("mysqlfailovergroups.shipstream.io.yaml");
    let defaults = [
        ("spec.failoverCooldown", json!("5m")),
        ("spec.sites.[].role", json!("PrimaryCandidate")),
        ("spec.plannedFailover.maxLagWait", json!("5m")),
        ("spec.plannedFailover.drainTimeout", json!("30s")),
        ("spec.plannedFailover.onCooldown", json!("Reject")),
        ("spec.dragonfly.enabled", json!(false)),
        ("spec.dragonfly.plannedFailover.maxSyncWait", json!("30s")),
        ("spec.dragonfly.plannedFailover.onSyncTimeout", json!("Proceed")),
        ("spec.sidecar.leaseTimeout", json!("20s")),
        ("spec.replication.maxLagSeconds", json!(300)),
        ("spec.backup.maxLagSecondsForSource", json!(300)),
        ("spec.backup.retry.initialBackoff", json!("1m")),
        ("spec.backup.retry.maxBackoff", json!("30m")),
        ("spec.backup.profiles.[].retention.keepLast", json!(7)),
        ("spec.backup.profiles.[].retention.keepFailed", json!(10)),
        ("spec.backup.profiles.[].verification.retention.keepLast", json!(30)),
        ("spec.backup.profiles.[].verification.retention.keepFailed", json!(10)),
        ("spec.backup.profiles.[].dump.compression", json!("zstd")),
        ("spec.backup.schedules.[].timeZone", json!("Etc/UTC")),
        ("spec.backup.pitr.maxBinlogSize", json!("100M")),
        ("spec.backup.image", json!(bloodraven_crd::group::defaults::BACKUP_IMAGE)),
    ];
    for (path, default) in defaults {
        assert_eq!(at(&group, path)["default"], default, "{path}");
    }
    assert_eq!(at(&group, "spec.sites")["minItems"], json!(2));
    assert_eq!(at(&group, "spec.sites")["maxItems"], json!(16));
    assert_eq!(
        enum_values(at(&group, "spec.sites.[].role")),
        ["PrimaryCandidate", "DisasterRecovery", "ReadOnly"]
    );
    assert_eq!(at(&group, "spec.backup.profiles.[].retention.keepLast")["minimum"], json!(1.0));
    assert_eq!(enum_values(at(&group, "spec.backup.profiles.[].storage.type")), ["S3", "PVC"]);
    assert_eq!(enum_values(at(&group, "spec.plannedFailover.onCooldown")), ["Reject", "Defer"]);
    // Status tokens are open: a newer operator's values must pass an older CRD.
    assert!(at(&group, "status.plannedFailover.phase").get("enum").is_none());
    assert_eq!(
        at(&group, "status")["x-kubernetes-preserve-unknown-fields"],
        json!(true),
        "unknown status fields are kept by the API server"
    );
    let backup = schema("mysqlbackups.shipstream.io.yaml");
    assert_eq!(at(&backup, "spec.deletionPolicy")["default"], json!("Delete"));
    assert_eq!(enum_values(at(&backup, "spec.deletionPolicy")), ["Delete", "Retain"]);
}

/// Collects the paths of every `enum` under a schema node.
fn enums(path: &str, node: &serde_json::Value, found: &mut Vec<String>) {
    if node.get("enum").is_some() {
        found.push(path.to_owned());
    }
    if let Some(properties) = node.get("properties").and_then(|p| p.as_object()) {
        for (name, child) in properties {
            enums(&format!("{path}.{name}"), child, found);
        }
    }
    for keyword in ["items", "additionalProperties"] {
        if let Some(child) = node.get(keyword) {
            enums(&format!("{path}[]"), child, found);
        }
    }
}

#[test]
fn status_tokens_are_open_in_the_schema() {
    for (file_name, _) in bloodraven_crd::all_crds() {
        let mut found = Vec::new();
        enums("status", &schema(file_name)["properties"]["status"], &mut found);
        // metav1.Condition's status is the one closed set in status.
        found.retain(|path| path != "status.conditions[].status");
        assert_eq!(found, Vec::<String>::new(), "{file_name}: closed enums in status");
    }
}
