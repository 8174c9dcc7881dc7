//! What users install links no lab, test or fixture code (issue 10, item 10).
//!
//! `bloodraven-operator`, `bloodraven-sidecar` (default features) and the console built with
//! `--no-default-features` (its `lab` feature off, as `[profile.dist]` builds it for users) must
//! have none of the test-only crates in their normal dependency graph and no package in that
//! graph with a test-only feature enabled. Read with `cargo tree -p <package> -e normal`, which
//! resolves features for that one package exactly as `cargo build -p <package>` does (the
//! workspace-wide `cargo metadata` graph unifies features with the dev-dependencies of every
//! member and cannot answer this).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Crates that exist only for tests, labs and drills.
const TEST_ONLY_CRATES: &[&str] = &[
    "bloodraven-lab",
    "bloodraven-kubelet",
    "bloodraven-testkit",
    "bloodraven-sites",
    "bloodraven-drill",
];

/// Features that switch test or fixture code on in a library (`crash-points` makes
/// `bloodraven-crashpoint` abort the process; `crashpoint.rs` checks how members declare it,
/// this rule what the shipped graphs resolve).
const TEST_ONLY_FEATURES: &[&str] = &["fixtures", "test-support", "test-fixtures", "crash-points"];

/// Shipped binaries and the `cargo tree` flags they are built with.
const SHIPPED: &[(&str, &[&str])] = &[
    ("bloodraven-operator", &[]),
    ("bloodraven-sidecar", &[]),
    ("bloodraven-console", &["--no-default-features"]),
];

/// Package name → enabled features, over the normal dependency graph of `package`.
pub(crate) fn normal_graph(package: &str, flags: &[&str]) -> BTreeMap<String, Vec<String>> {
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask sits in the root");
    let output = Command::new(cargo)
        .args(["tree", "--locked", "-p", package, "-e", "normal", "--prefix", "none"])
        .args(["--target", "x86_64-unknown-linux-gnu", "--format", "{p}|{f}"])
        .args(flags)
        .current_dir(root)
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree -p {package} {flags:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut graph = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let line = line.trim_end().trim_end_matches("(*)").trim_end();
        let Some((node, features)) = line.split_once('|') else { continue };
        let name = node.split_whitespace().next().unwrap_or_default().to_owned();
        // One name may appear in several versions: keep the union of their features.
        let enabled: &mut Vec<String> = graph.entry(name).or_default();
        for feature in features.split(',').map(str::trim).filter(|feature| !feature.is_empty()) {
            if !enabled.iter().any(|known| known == feature) {
                enabled.push(feature.to_owned());
            }
        }
    }
    assert!(
        graph.contains_key(package),
        "cargo tree -p {package} printed no line for {package}: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    graph
}

/// Every test-only crate and test-only feature in `graph`, named.
fn test_only_code(graph: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for (name, features) in graph {
        if TEST_ONLY_CRATES.contains(&name.as_str()) {
            found.push(format!("crate {name}"));
        }
        for feature in
            features.iter().filter(|feature| TEST_ONLY_FEATURES.contains(&feature.as_str()))
        {
            found.push(format!("feature {name}/{feature}"));
        }
    }
    found
}

#[test]
fn shipped_binaries_link_no_lab_testkit_or_fixture_code() {
    let mut violations = Vec::new();
    for (package, flags) in SHIPPED {
        for found in test_only_code(&normal_graph(package, flags)) {
            violations.push(format!("{package} {}: {found}", flags.join(" ")));
        }
    }
    assert!(
        violations.is_empty(),
        "shipped binaries must not link test-only code (put it behind the console's `lab` \
         feature or in dev-dependencies):\n{}",
        violations.join("\n")
    );
}

/// The rule above can fail: the console with its default `lab` feature does link the lab and
/// the fixture archives, and the check names them.
#[test]
fn the_lab_console_is_seen_to_link_lab_and_fixture_code() {
    let found = test_only_code(&normal_graph("bloodraven-console", &[]));
    for expected in [
        "crate bloodraven-lab",
        "feature bloodraven-archive/fixtures",
        "feature bloodraven-store/fixtures",
    ] {
        assert!(found.iter().any(|item| item == expected), "{expected} not seen in {found:?}");
    }
}
