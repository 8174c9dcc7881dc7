//! Pure crates built on the API types (`bloodraven-crd`) pull no IO stack either.
//!
//! `PURE` in `main.rs` reads the workspace-wide `cargo metadata` graph, where cargo unifies
//! features across members: the console enables kube's client, so every crate that depends on
//! `bloodraven-crd` appears to pull `kube-client` there. These crates are checked instead with
//! `cargo tree -p <crate> -e normal`, which resolves features for that crate alone, as building
//! it does.

use crate::lab_free::normal_graph;
use crate::{IO_STACK, metadata};

/// Pure crates that depend on `bloodraven-crd`: values in, values out, no IO, no clock.
const PURE_ON_CRD: &[&str] =
    &["bloodraven-facts", "bloodraven-workloads", "bloodraven-pitr", "bloodraven-runbook"];

#[test]
fn pure_crates_on_the_api_types_pull_no_io_stack() {
    let metadata = metadata();
    let members: Vec<&str> = metadata.members.iter().map(|id| metadata.name(id)).collect();
    let mut violations = Vec::new();
    for package in PURE_ON_CRD.iter().filter(|package| members.contains(package)) {
        for name in normal_graph(package, &[]).keys() {
            if IO_STACK.iter().any(|io| name.starts_with(io)) {
                violations.push(format!("{package} pulls {name}"));
            }
        }
    }
    assert!(violations.is_empty(), "pure crates must do no IO; found:\n{}", violations.join("\n"));
}
