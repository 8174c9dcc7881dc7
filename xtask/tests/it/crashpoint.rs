//! Tidy: crash points are compiled out of every normal build.
//!
//! `bloodraven-crashpoint`'s `crash-points` feature makes `hit` abort the process; it is for
//! tests and drills only. So no workspace member may turn it on through a normal or build
//! dependency, nor through its own default features (an explicit, non-default feature such as
//! `crash-points = ["bloodraven-crashpoint/crash-points"]` that a drill build opts into is
//! fine, and so is a dev-dependency).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

const CRATE: &str = "bloodraven-crashpoint";
const FEATURE: &str = "crash-points";

/// The workspace members as `cargo metadata --no-deps` describes them (declared dependencies
/// with their kinds and features, and each member's feature table).
fn members() -> Vec<Value> {
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask sits in the root");
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    json["packages"].as_array().expect("packages").clone()
}

/// Every way `package` turns the crash points on outside tests, as readable lines.
fn violations(package: &Value) -> Vec<String> {
    let name = package["name"].as_str().expect("name");
    let mut found = Vec::new();
    // The keys under which the crate is a non-dev dependency (its name or its rename).
    let mut keys = BTreeSet::new();
    for dep in package["dependencies"].as_array().expect("dependencies") {
        if dep["name"] != CRATE || dep["kind"] == "dev" {
            continue;
        }
        let key = dep["rename"].as_str().unwrap_or(CRATE).to_owned();
        let kind = dep["kind"].as_str().unwrap_or("normal");
        if dep["features"].as_array().expect("features").iter().any(|feature| feature == FEATURE) {
            found.push(format!("{name}: its {kind} dependency on {CRATE} enables `{FEATURE}`"));
        }
        keys.insert(key);
    }
    // The default features, followed through the member's own feature table.
    let features = package["features"].as_object().expect("features");
    let mut stack = vec!["default".to_owned()];
    let mut seen = BTreeSet::new();
    while let Some(feature) = stack.pop() {
        if !seen.insert(feature.clone()) {
            continue;
        }
        for entry in features.get(&feature).and_then(Value::as_array).into_iter().flatten() {
            let entry = entry.as_str().expect("feature entry");
            let enables = match entry.split_once('/') {
                Some((dep, dep_feature)) => {
                    keys.contains(dep.trim_end_matches('?')) && dep_feature == FEATURE
                }
                None => {
                    stack.push(entry.to_owned());
                    name == CRATE && entry == FEATURE
                }
            };
            if enables {
                found.push(format!(
                    "{name}: default feature `{feature}` enables `{entry}`; make it an explicit feature that only test or drill builds turn on"
                ));
            }
        }
    }
    found
}

#[test]
fn no_member_compiles_crash_points_into_a_normal_build() {
    let members = members();
    assert!(
        members.iter().any(|package| package["name"] == CRATE),
        "{CRATE} is not a workspace member; this rule checks nothing"
    );
    let found: Vec<String> = members.iter().flat_map(violations).collect();
    assert!(
        found.is_empty(),
        "crash points must be compiled out of normal builds:\n{}",
        found.join("\n")
    );
}

/// The rule itself, on made-up manifests: it must flag what it exists to flag.
#[test]
fn the_rule_flags_normal_dependencies_and_default_features_only() {
    let dep = |kind: Value, features: Value, rename: Value| json!({"name": CRATE, "kind": kind, "features": features, "rename": rename});
    let package = |dependencies: Vec<Value>, features: Value| json!({"name": "bloodraven-operator", "dependencies": dependencies, "features": features});
    let allowed = [
        package(vec![dep(Value::Null, json!([]), Value::Null)], json!({"default": []})),
        package(vec![dep(json!("dev"), json!([FEATURE]), Value::Null)], json!({"default": []})),
        package(
            vec![dep(Value::Null, json!([]), Value::Null)],
            json!({"default": [], "crash-points": ["bloodraven-crashpoint/crash-points"]}),
        ),
    ];
    for package in &allowed {
        assert_eq!(violations(package), Vec::<String>::new(), "{package}");
    }
    let flagged = [
        package(vec![dep(Value::Null, json!([FEATURE]), Value::Null)], json!({"default": []})),
        package(vec![dep(json!("build"), json!([FEATURE]), Value::Null)], json!({"default": []})),
        package(
            vec![dep(Value::Null, json!([]), Value::Null)],
            json!({"default": ["drills"], "drills": ["bloodraven-crashpoint?/crash-points"]}),
        ),
        package(
            vec![dep(Value::Null, json!([]), json!("crash"))],
            json!({"default": ["crash/crash-points"]}),
        ),
        json!({"name": CRATE, "dependencies": [], "features": {"default": [FEATURE], FEATURE: []}}),
    ];
    for package in &flagged {
        assert_eq!(violations(package).len(), 1, "not flagged exactly once: {package}");
    }
}
