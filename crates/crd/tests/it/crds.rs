//! The committed CRDs under deploy/crds/ are what the types generate, and are valid
//! `apiextensions.k8s.io/v1` objects.

use crate::{crd_directory, schema};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The files under `directory` that `cargo xtask codegen` would write or remove: a CRD file
/// that differs from what the types generate or is absent, and a generated file (one that
/// starts with the header) that no CRD writes any more.
fn stale_files(directory: &std::path::Path) -> Vec<String> {
    let mut stale = Vec::new();
    for (file_name, crd) in bloodraven_crd::all_crds() {
        let expected = format!(
            "{}{}",
            bloodraven_crd::GENERATED_HEADER,
            serde_norway::to_string(&crd).unwrap()
        );
        let committed = std::fs::read_to_string(directory.join(file_name)).unwrap_or_default();
        if committed != expected {
            stale.push(file_name.to_owned());
        }
    }
    let mut retired = Vec::new();
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let known = bloodraven_crd::all_crds().iter().any(|(file_name, _)| *file_name == name);
        // The rule of `cargo xtask codegen`: it removes a `.yaml` file that starts with the
        // header and that no CRD writes; it leaves every other file alone.
        let generated = path.extension().is_some_and(|extension| extension == "yaml")
            && std::fs::read_to_string(&path)
                .is_ok_and(|text| text.starts_with(bloodraven_crd::GENERATED_HEADER));
        if !known && generated {
            retired.push(name);
        }
    }
    retired.sort();
    stale.extend(retired);
    stale
}

#[test]
fn committed_crds_are_fresh() {
    let stale = stale_files(&crd_directory());
    assert!(
        stale.is_empty(),
        "deploy/crds is stale ({}): run `cargo xtask codegen` and commit the result",
        stale.join(", ")
    );
}

/// The freshness check asks for exactly what `cargo xtask codegen` fixes: a file codegen
/// neither writes nor removes (a README, a hand-written manifest) is not called stale.
#[test]
fn freshness_flags_only_what_codegen_fixes() {
    let directory =
        std::env::temp_dir().join(format!("bloodraven-crd-freshness-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    for (file_name, _) in bloodraven_crd::all_crds() {
        std::fs::copy(crd_directory().join(file_name), directory.join(file_name)).unwrap();
    }
    std::fs::write(directory.join("README.md"), "hand-written\n").unwrap();
    std::fs::write(directory.join("kustomization.yaml"), "resources: []\n").unwrap();
    std::fs::write(
        directory.join("mysqlretired.shipstream.io.yaml"),
        format!("{}kind: CustomResourceDefinition\n", bloodraven_crd::GENERATED_HEADER),
    )
    .unwrap();
    let stale = stale_files(&directory);
    std::fs::remove_dir_all(&directory).unwrap();
    assert_eq!(stale, ["mysqlretired.shipstream.io.yaml"]);
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

/// Every field the issue and the spec documents name, by its JSON name: a renamed or dropped
/// field fails here, not in a console that cannot find it.
#[test]
fn every_field_the_spec_names_is_in_the_schema() {
    let group_paths = [
        // spec
        "spec.sites.[].name",
        "spec.sites.[].serverID",
        "spec.sites.[].role",
        "spec.sites.[].zone",
        "spec.sites.[].taintNodeSelector",
        "spec.sites.[].loadBalancerIP",
        "spec.sites.[].storage",
        "spec.sites.[].mysqlConf",
        "spec.sites.[].serviceTemplate",
        "spec.mysqlConf",
        "spec.splitBrainPolicy.sitePriorities",
        "spec.replication.maxLagSeconds",
        "spec.replication.readOnlyMaxLagSeconds",
        "spec.failoverCooldown",
        "spec.plannedFailover.maxLagWait",
        "spec.plannedFailover.drainTimeout",
        "spec.plannedFailover.onCooldown",
        "spec.dragonfly.enabled",
        "spec.dragonfly.plannedFailover.maxSyncWait",
        "spec.dragonfly.plannedFailover.onSyncTimeout",
        "spec.sidecar.leaseTimeout",
        "spec.credentials",
        "spec.dns",
        "spec.backup.image",
        "spec.backup.maxLagSecondsForSource",
        "spec.backup.retry",
        "spec.backup.profiles.[].retention.keepLast",
        "spec.backup.profiles.[].retention.keepWithinDays",
        "spec.backup.profiles.[].retention.keepFailed",
        "spec.backup.profiles.[].storage.type",
        "spec.backup.profiles.[].storage.s3",
        "spec.backup.profiles.[].storage.pvc.provisioned",
        "spec.backup.profiles.[].storage.pvc.claimName",
        "spec.backup.profiles.[].storage.pvc.subPath",
        "spec.backup.profiles.[].dump",
        "spec.backup.profiles.[].encryption",
        "spec.backup.profiles.[].verification",
        "spec.backup.schedules",
        "spec.backup.pitr.enabled",
        "spec.backup.pitr.profileName",
        "spec.backup.pitr.maxBinlogSize",
        "spec.initFromBackup.source.backupRef",
        "spec.initFromBackup.source.s3",
        "spec.initFromBackup.source.pvc",
        "spec.initFromBackup.loadOptions",
        "spec.initFromBackup.pointInTime.stopTime",
        "spec.initFromBackup.pointInTime.archiveProfileName",
        "spec.initFromBackup.pointInTime.allowPartial",
        "spec.initFromBackup.pointInTime.excludeGtids",
        "spec.initFromBackup.decryption",
        "spec.restoreInPlace.confirm",
        "spec.restoreInPlace.source",
        "spec.restoreInPlace.loadOptions",
        // status
        "status.activeSite",
        "status.sites.[].state",
        "status.sites.[].lastSeen",
        "status.sites.[].gtidExecuted",
        "status.sites.[].replicating",
        "status.sites.[].secondsBehindSource",
        "status.sites.[].sourceConvergenceState",
        "status.sites.[].sourceConvergenceReason",
        "status.conditions",
        "status.lastFailover.time",
        "status.lastFailover.target",
        "status.lastFailover.promotionGtidExecuted",
        "status.plannedFailover.runID",
        "status.plannedFailover.revision",
        "status.plannedFailover.phase",
        "status.plannedFailover.targetSite",
        "status.plannedFailover.sourceSite",
        "status.plannedFailover.settings.maxLagWait",
        "status.plannedFailover.settings.drainTimeout",
        "status.plannedFailover.settings.dragonfly.maxSyncWait",
        "status.plannedFailover.settings.dragonfly.onSyncTimeout",
        "status.plannedFailover.startTime",
        "status.plannedFailover.claimTime",
        "status.plannedFailover.claimBaseline.time",
        "status.plannedFailover.claimBaseline.target",
        "status.plannedFailover.admission.deadlineTime",
        "status.plannedFailover.admission.waitReason",
        "status.plannedFailover.admission.deferReason",
        "status.plannedFailover.admission.retryTime",
        "status.plannedFailover.fence.state",
        "status.plannedFailover.fence.intentTime",
        "status.plannedFailover.fence.sourceServerUUID",
        "status.plannedFailover.fence.applyTime",
        "status.plannedFailover.fence.gtidSet",
        "status.plannedFailover.drain.startTime",
        "status.plannedFailover.drain.completionTime",
        "status.plannedFailover.drain.remainingConnections",
        "status.plannedFailover.lagWait.startTime",
        "status.plannedFailover.lagWait.catchUpTime",
        "status.plannedFailover.dragonfly.syncWaitStartTime",
        "status.plannedFailover.dragonfly.sourceOffsetState",
        "status.plannedFailover.dragonfly.sourceOffset",
        "status.plannedFailover.dragonfly.syncWaitSeconds",
        "status.plannedFailover.dragonfly.takeover.state",
        "status.plannedFailover.dragonfly.takeover.intentTime",
        "status.plannedFailover.dragonfly.takeover.completionTime",
        "status.plannedFailover.dragonfly.takeover.method",
        "status.plannedFailover.dragonfly.takeover.targetOffset",
        "status.plannedFailover.dragonfly.sessions",
        "status.plannedFailover.dragonfly.reason",
        "status.plannedFailover.promotion.state",
        "status.plannedFailover.promotion.intentTime",
        "status.plannedFailover.promotion.targetServerUUID",
        "status.plannedFailover.promotion.confirmationTime",
        "status.plannedFailover.promotion.warnings",
        "status.plannedFailover.dns.state",
        "status.plannedFailover.dns.attemptTime",
        "status.plannedFailover.dns.lastError",
        "status.plannedFailover.rollback.reason",
        "status.plannedFailover.rollback.intentTime",
        "status.plannedFailover.result.outcome",
        "status.plannedFailover.result.reason",
        "status.plannedFailover.result.warnings",
        "status.plannedFailover.result.completionTime",
        "status.plannedFailover.message",
        "status.plannedFailoverHold.runID",
        "status.plannedFailoverHold.reason",
        "status.plannedFailoverHold.sourceSite",
        "status.plannedFailoverHold.targetSite",
        "status.plannedFailoverHold.ambiguousSites",
        "status.plannedFailoverHold.holdTime",
        "status.restoreReclones.phase",
        "status.restoreReclones.pending",
        "status.restoreReclones.fencedGtidExecuted",
        "status.restoreReclones.failures",
        "status.restoreOfflineFence.runID",
        "status.restoreOfflineFence.priorOfflineMode",
        "status.restoreInPlace.phase",
        "status.restoreInPlace.confirmTokenUsed",
        "status.restoreInPlace.runConfirm",
        "status.restoreInPlace.jobCreating",
        "status.restoreInPlace.jobName",
        "status.restoreInPlace.targetSite",
        "status.restoreInPlace.scope",
        "status.restoreInPlace.message",
        "status.restore.phase",
        "status.restore.reason",
        "status.restore.message",
        "status.restore.targetSite",
        "status.restore.provenance.pointInTime.outcome",
        "status.restore.provenance.pointInTime.newestReplayedCommitTime",
        "status.pitr.archive.destination",
        "status.pitr.archive.archiveID",
        "status.pitr.archive.encryptionMode",
        "status.pitr.archive.state",
        "status.pitr.archive.reason",
        "status.pitr.archive.keyRevision",
        "status.pitr.archive.observedTime",
        "status.pitr.oldestArchivedTime",
        "status.pitr.newestArchivedTime",
        // The sidecar's GET /archiver/status fields ("Observability").
        "status.pitr.sites.[].site",
        "status.pitr.sites.[].enabled",
        "status.pitr.sites.[].storeReady",
        "status.pitr.sites.[].primary",
        "status.pitr.sites.[].lastScanAt",
        "status.pitr.sites.[].filesArchived",
        "status.pitr.sites.[].lastError",
        "status.pitr.sites.[].storageType",
        "status.pitr.sites.[].manifestPrefix",
        "status.pitr.sites.[].uploadFailures",
        "status.pitr.sites.[].consecutiveFailedScans",
        "status.pitr.sites.[].archive.archiveID",
        "status.pitr.sites.[].promotionRecordedAt",
        "status.pitr.sites.[].historyIntegrity.violation",
        "status.pitr.sites.[].historyIntegrity.detail",
        "status.pitr.sites.[].historyIntegrity.at",
        "status.pitr.sites.[].divergentRows",
        "status.pitr.sites.[].quarantinedRows",
        "status.backupSchedules.[].retryConflict",
        "status.backupSchedules.[].lastSuccessfulBackupName",
        "status.backupSchedules.[].lastRetryAttempt",
        "status.backupSchedules.[].nextRetryTime",
    ];
    let backup_paths = [
        "spec.failoverGroupRef",
        "spec.profileName",
        "spec.sourceSite",
        "spec.deletionPolicy",
        "status.phase",
        "status.conditions",
        "status.startTime",
        "status.completionTime",
        "status.attempt",
        "status.artifactStorage.location",
        "status.artifactStorage.passphraseSecretKeyRef",
        "status.gtidExecuted",
        "status.binlogFile",
        "status.binlogPos",
        "status.sizeBytes",
        "status.failoverGroupUID",
        "status.pitrArchiveID",
        "status.cleanupStartTime",
    ];
    let verification_paths = [
        "spec.failoverGroupRef",
        "spec.profileName",
        "spec.pointInTime.mode",
        "spec.pointInTime.stopTime",
        "spec.pointInTime.excludeGtids",
        "status.conditions",
        "status.pointInTime.outcome",
    ];
    let mut missing = Vec::new();
    for (file_name, paths) in [
        ("mysqlfailovergroups.shipstream.io.yaml", &group_paths[..]),
        ("mysqlbackups.shipstream.io.yaml", &backup_paths[..]),
        ("mysqlbackupverifications.shipstream.io.yaml", &verification_paths[..]),
    ] {
        let schema = schema(file_name);
        missing.extend(
            paths
                .iter()
                .filter(|path| at(&schema, path).is_null())
                .map(|p| format!("{file_name}: {p}")),
        );
    }
    assert!(missing.is_empty(), "fields the spec names are missing:\n{}", missing.join("\n"));
}

/// Collects the paths of status objects whose unknown fields the API server would prune.
fn pruned_objects(path: &str, node: &serde_json::Value, found: &mut Vec<String>) {
    if node.get("properties").is_some()
        && node.get("x-kubernetes-preserve-unknown-fields") != Some(&serde_json::json!(true))
    {
        found.push(path.to_owned());
    }
    if let Some(properties) = node.get("properties").and_then(|p| p.as_object()) {
        for (name, child) in properties {
            pruned_objects(&format!("{path}.{name}"), child, found);
        }
    }
    for keyword in ["items", "additionalProperties"] {
        if let Some(child) = node.get(keyword) {
            pruned_objects(&format!("{path}[]"), child, found);
        }
    }
}

/// `x-kubernetes-preserve-unknown-fields` is not inherited by nested objects that list their
/// properties, so every object under `status` carries it: otherwise the API server prunes a
/// newer operator's field from it before any client reads it.
#[test]
fn every_status_object_keeps_unknown_fields() {
    for (file_name, _) in bloodraven_crd::all_crds() {
        let mut found = Vec::new();
        pruned_objects("status", &schema(file_name)["properties"]["status"], &mut found);
        assert_eq!(found, Vec::<String>::new(), "{file_name}: status objects that prune");
    }
}
