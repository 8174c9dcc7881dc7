//! Tidy: the dependency and layout rules of ARCHITECTURE.md, checked over `cargo metadata`.
//!
//! These are the invariants that a review misses and a refactor breaks silently: a pure crate
//! that starts to pull an async runtime or an HTTP client, one binary depending on another, a
//! package that drifts from the `bloodraven-<folder>` rule or stops inheriting the workspace lints.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod console_client;
mod crashpoint;
mod lab_free;
mod pure_on_crd;

/// Crates that take values and return values: no IO stack may appear in their normal
/// (non-dev) dependency closure.
/// Pure crates that depend on `bloodraven-crd` are checked per crate in `pure_on_crd.rs`.
const PURE: &[&str] = &["bloodraven-gtid", "bloodraven-binlog", "bloodraven-archive"];

/// Crates whose presence in a closure means IO or a runtime. Prefix match on the package name.
const IO_STACK: &[&str] = &[
    "tokio",
    "hyper",
    "axum",
    "reqwest",
    "aws-",
    "mysql_async",
    "rustix",
    "kube-client",
    "kube-runtime",
    "rustls",
    "ring",
    "mio",
];

/// The three binaries never depend on each other (they share only crates/*).
const BINARIES: &[&str] = &["bloodraven-console", "bloodraven-operator", "bloodraven-sidecar"];

/// The API crate is types only: kube's derive and core, never its client or runtime.
const CRD: &str = "bloodraven-crd";

/// kube features the API crate may enable: derive pulls kube-core and kube-derive only.
const CRD_KUBE_FEATURES: &[&str] = &["derive"];

/// Only the store crate talks to S3.
const S3_OWNER: &str = "bloodraven-store";

struct Metadata {
    root: PathBuf,
    /// package id → (name, manifest path)
    packages: BTreeMap<String, (String, PathBuf)>,
    /// package id → ids of its normal (non-dev, non-build) dependencies
    normal_deps: BTreeMap<String, Vec<String>>,
    members: Vec<String>,
    /// package id → dependencies as its manifest declares them
    declared: BTreeMap<String, Vec<Declared>>,
}

struct Declared {
    name: String,
    normal: bool,
    default_features: bool,
    features: Vec<String>,
}

/// `cargo metadata` once per test binary: every rule reads the same graph.
fn metadata() -> &'static Metadata {
    static METADATA: std::sync::OnceLock<Metadata> = std::sync::OnceLock::new();
    METADATA.get_or_init(load_metadata)
}

fn load_metadata() -> Metadata {
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask sits in the root");
    let output = Command::new(cargo)
        // The Linux graph is the one we ship; other platforms' crates (winapi, ...) are noise.
        .args(["metadata", "--format-version", "1", "--locked"])
        .args(["--filter-platform", "x86_64-unknown-linux-gnu"])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = json["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|package| {
            (
                package["id"].as_str().expect("id").to_owned(),
                (
                    package["name"].as_str().expect("name").to_owned(),
                    PathBuf::from(package["manifest_path"].as_str().expect("manifest_path")),
                ),
            )
        })
        .collect();
    let normal_deps = json["resolve"]["nodes"]
        .as_array()
        .expect("resolve.nodes")
        .iter()
        .map(|node| {
            let deps = node["deps"]
                .as_array()
                .expect("deps")
                .iter()
                .filter(|dep| {
                    dep["dep_kinds"]
                        .as_array()
                        .expect("dep_kinds")
                        .iter()
                        .any(|kind| kind["kind"].is_null())
                })
                .map(|dep| dep["pkg"].as_str().expect("pkg").to_owned())
                .collect();
            (node["id"].as_str().expect("id").to_owned(), deps)
        })
        .collect();
    let members = json["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .map(|id| id.as_str().expect("member id").to_owned())
        .collect();
    let declared = json["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|package| {
            let deps = package["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .map(|dep| Declared {
                    name: dep["name"].as_str().expect("name").to_owned(),
                    normal: dep["kind"].is_null(),
                    default_features: dep["uses_default_features"].as_bool().unwrap_or(true),
                    features: dep["features"]
                        .as_array()
                        .expect("features")
                        .iter()
                        .map(|feature| feature.as_str().expect("feature").to_owned())
                        .collect(),
                })
                .collect();
            (package["id"].as_str().expect("id").to_owned(), deps)
        })
        .collect();
    Metadata { root: root.to_owned(), packages, normal_deps, members, declared }
}

impl Metadata {
    fn id_of(&self, name: &str) -> &str {
        self.members
            .iter()
            .find(|id| self.packages[*id].0 == name)
            .unwrap_or_else(|| panic!("{name} is not a workspace member"))
    }

    fn name(&self, id: &str) -> &str {
        &self.packages[id].0
    }

    /// Names of every package in the normal dependency closure of `name`, with the path that
    /// reached it (for the failure message).
    fn closure(&self, name: &str) -> BTreeMap<String, Vec<String>> {
        let start = self.id_of(name).to_owned();
        let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut stack = vec![(start, vec![name.to_owned()])];
        while let Some((id, path)) = stack.pop() {
            for dep in self.normal_deps.get(&id).into_iter().flatten() {
                let dep_name = self.name(dep).to_owned();
                if seen.contains_key(&dep_name) {
                    continue;
                }
                let mut dep_path = path.clone();
                dep_path.push(dep_name.clone());
                seen.insert(dep_name, dep_path.clone());
                stack.push((dep.clone(), dep_path));
            }
        }
        seen
    }

    fn direct(&self, name: &str) -> BTreeSet<String> {
        let id = self.id_of(name);
        self.normal_deps[id].iter().map(|dep| self.name(dep).to_owned()).collect()
    }
}

#[test]
fn pure_crates_pull_no_io_stack() {
    let metadata = metadata();
    let mut violations = Vec::new();
    for pure in PURE {
        for (dep, path) in metadata.closure(pure) {
            if IO_STACK.iter().any(|io| dep.starts_with(io)) {
                violations.push(path.join(" -> "));
            }
        }
    }
    assert!(violations.is_empty(), "pure crates must do no IO; found:\n{}", violations.join("\n"));
}

#[test]
fn crd_is_types_only() {
    // The resolved graph unifies features across the workspace (the console enables kube's
    // client), so this rule reads what the crate itself declares.
    let metadata = metadata();
    let declared = &metadata.declared[metadata.id_of(CRD)];
    let mut offenders = Vec::new();
    for dep in declared.iter().filter(|dep| dep.normal) {
        if IO_STACK.iter().any(|io| dep.name.starts_with(io)) {
            offenders.push(format!("depends on {}", dep.name));
        }
        if dep.name == "kube" {
            if dep.default_features {
                offenders.push("kube with default features (client, TLS)".to_owned());
            }
            for feature in
                dep.features.iter().filter(|feature| !CRD_KUBE_FEATURES.contains(&feature.as_str()))
            {
                offenders.push(format!("kube feature {feature:?}"));
            }
        }
    }
    assert!(offenders.is_empty(), "{CRD} must be types only: {}", offenders.join("; "));
}

#[test]
fn binaries_do_not_depend_on_each_other() {
    let metadata = metadata();
    for binary in BINARIES {
        let closure = metadata.closure(binary);
        for other in BINARIES.iter().filter(|other| *other != binary) {
            assert!(!closure.contains_key(*other), "{binary} depends on {other}");
        }
    }
}

#[test]
fn only_the_store_talks_to_s3() {
    let metadata = metadata();
    for id in &metadata.members {
        let name = metadata.name(id);
        if name == S3_OWNER {
            continue;
        }
        let direct = metadata.direct(name);
        let s3: Vec<&String> = direct.iter().filter(|dep| dep.starts_with("aws-")).collect();
        assert!(
            s3.is_empty(),
            "{name} depends directly on {s3:?}; S3 access belongs in {S3_OWNER}"
        );
    }
}

#[test]
fn packages_follow_the_naming_and_lint_rules() {
    let metadata = metadata();
    for id in &metadata.members {
        let (name, manifest) = &metadata.packages[id];
        let folder = manifest
            .parent()
            .and_then(Path::file_name)
            .and_then(|folder| folder.to_str())
            .expect("manifest in a folder");
        assert_eq!(
            name,
            &format!("bloodraven-{folder}"),
            "{} breaks the naming rule",
            manifest.display()
        );
        let relative = manifest.strip_prefix(&metadata.root).expect("member inside the root");
        let depth = relative.components().count();
        assert!(
            depth == 2 || (depth == 3 && relative.starts_with("crates")),
            "{} is not a top-level folder or one level under crates/",
            relative.display()
        );
        let text = std::fs::read_to_string(manifest).expect("manifest readable");
        assert!(
            text.contains("[lints]\nworkspace = true"),
            "{} does not inherit the workspace lints ([lints] workspace = true)",
            relative.display()
        );
    }
}
