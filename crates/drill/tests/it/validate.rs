//! Broken drill files: every error names the file, the step (`steps[i]`), the field and, where
//! the parser knows it, the line.

use std::path::Path;

const HEAD: &str = "name: t\nsteps:\n  - startGroup: {manifest: manifests/three-sites.yaml}\n";

/// (case, drill text, fragments the error must contain)
const CASES: &[(&str, &str, &[&str])] = &[
    (
        "unknown field",
        "  - cut: {lnk: \"repl:pdx->iad\"}\n",
        &[":4:", "steps[1].cut.lnk", "unknown field `lnk`"],
    ),
    (
        "unknown step",
        "  - explode: {site: iad}\n",
        &[":4:", "steps[1]", "unknown variant `explode`"],
    ),
    ("missing field", "  - kill: {}\n", &["steps[1].kill", "missing field `site`"]),
    (
        "wrong type",
        "  - startWorkload: {rate: fast}\n",
        &[":4:", "steps[1].startWorkload.rate", "invalid type"],
    ),
    (
        "bad thread state",
        "  - wait: {until: {replica: {site: pdx, io: Maybe}}, timeout: 2s}\n",
        &["steps[1].wait.until.replica.io", "unknown variant `Maybe`"],
    ),
    (
        "unknown site",
        "  - kill: {site: sfo}\n",
        &["t.yaml:4:", "steps[1].kill.site", "unknown site \"sfo\"", "\"iad\", \"pdx\", \"fra\""],
    ),
    (
        "unknown link",
        "  - cut: {link: \"repl:pdx->pdx\"}\n",
        &["steps[1].cut.link", "unknown link \"repl:pdx->pdx\""],
    ),
    ("bad duration", "  - sleep: {for: 2 seconds}\n", &["steps[1].sleep.for", "2 seconds"]),
    (
        "bad wait timeout",
        "  - wait: {until: {caughtUp: {site: pdx}}, timeout: soon}\n",
        &["steps[1].wait.timeout", "soon"],
    ),
    (
        "status without operator",
        "  - assert: {status: {path: status.activeSite, equals: pdx}}\n",
        &["steps[1].assert.status", "requires: [operator]"],
    ),
    (
        "startOperator without operator",
        "  - startOperator: {name: b}\n",
        &["steps[1].startOperator", "requires: [operator]"],
    ),
    (
        "converged without operator",
        "  - wait: {until: {converged: {activeSite: pdx}}, timeout: 5s}\n",
        &["steps[1].wait.until.converged", "requires: [operator]"],
    ),
    (
        "replicateFrom itself",
        "  - replicateFrom: {site: fra, source: fra}\n",
        &["t.yaml:4:", "steps[1].replicateFrom.source", "cannot replicate from itself"],
    ),
    (
        "replica check with nothing to check",
        "  - assert: {replica: {site: fra}}\n",
        &["steps[1].assert.replica.io", "give `io`, `sql`, `source`"],
    ),
    (
        "lostWithin before recording",
        "  - startWorkload: {}\n  - stopWorkload: {}\n  \
         - assert: {ledger: {lostWithin: {of: a, minus: b}}}\n",
        &["steps[3].assert.ledger.lostWithin.of", "no GTID set is recorded as \"a\""],
    ),
    (
        "annotate without operator",
        "  - annotate: {key: a, value: b}\n",
        &["steps[1].annotate", "requires: [operator]"],
    ),
    (
        "ledger before stop",
        "  - startWorkload: {}\n  - assert: {ledger: {rpoZero: true}}\n",
        &["t.yaml:5:", "steps[2].assert.ledger.ledger", "no ledger \"workload\""],
    ),
    (
        "unrecorded name",
        "  - assert: {gtid: {a: {recorded: before}, relation: subset, b: {site: iad}}}\n",
        &["steps[1].assert.gtid.a.recorded", "no GTID set is recorded as \"before\""],
    ),
    (
        "workload check without workload",
        "  - wait: {until: {workload: {acknowledged: 3}}, timeout: 5s}\n",
        &["steps[1].wait.until.workload", "startWorkload"],
    ),
    (
        "empty flags",
        "  - assert: {flags: {site: iad}}\n",
        &["steps[1].assert.flags.readOnly", "at least one"],
    ),
    (
        "stop without start",
        "  - stopWorkload: {}\n",
        &["steps[1].stopWorkload", "no workload runs"],
    ),
    (
        "two workloads",
        "  - startWorkload: {}\n  - startWorkload: {}\n",
        &["steps[2].startWorkload", "still runs"],
    ),
    (
        "ledger in wait",
        "  - startWorkload: {}\n  - stopWorkload: {}\n  - wait: {until: {ledger: {rpoZero: true}}, timeout: 1s}\n",
        &["steps[3].wait.until.ledger", "use `assert`"],
    ),
    (
        "second startGroup",
        "  - startGroup: {manifest: manifests/three-sites.yaml}\n",
        &["steps[1].startGroup", "only the first step"],
    ),
];

fn dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("manifests")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("drills/manifests/three-sites.yaml"),
        dir.path().join("manifests/three-sites.yaml"),
    )
    .unwrap();
    dir
}

fn error(dir: &Path, text: &str) -> String {
    let path = dir.join("t.yaml");
    std::fs::write(&path, text).unwrap();
    match bloodraven_drill::load(&path) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn broken_steps_are_named_with_their_field_and_line() {
    let dir = dir();
    let mut failures = Vec::new();
    for (case, steps, want) in CASES {
        let err = error(dir.path(), &format!("{HEAD}{steps}"));
        if !err.contains("t.yaml") || want.iter().any(|w| !err.contains(w)) {
            failures.push(format!("{case}: want {want:?} in\n    {err}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn drill_level_errors_name_the_field() {
    let dir = dir();
    let cases: &[(&str, &str, &[&str])] = &[
        ("no startGroup", "name: t\nsteps:\n  - kill: {site: iad}\n", &["steps[0]", "startGroup"]),
        ("no steps", "name: t\nsteps: []\n", &["steps[0]", "startGroup"]),
        ("missing name", "steps: []\n", &["missing field `name`"]),
        (
            "unknown requirement",
            "name: t\nrequires: [dragonfly]\nsteps: []\n",
            &["requires[0]", "unknown variant `dragonfly`"],
        ),
        (
            "bad drill timeout",
            "name: t\ntimeout: forever\nsteps:\n  - startGroup: {manifest: manifests/three-sites.yaml}\n",
            &["timeout", "forever"],
        ),
        (
            "missing manifest",
            "name: t\nsteps:\n  - startGroup: {manifest: manifests/nope.yaml}\n",
            &["manifest", "nope.yaml", "cannot read"],
        ),
        (
            "promotion with the operator",
            "name: t\nrequires: [operator]\nsteps:\n  - startGroup: {manifest: manifests/three-sites.yaml}\n  - promote: {site: pdx}\n",
            &["steps[1].promote", "races the operator"],
        ),
        ("not YAML", "name: [t\n", &["t.yaml:"]),
    ];
    let mut failures = Vec::new();
    for (case, text, want) in cases {
        let err = error(dir.path(), text);
        if !err.contains("t.yaml") || want.iter().any(|w| !err.contains(w)) {
            failures.push(format!("{case}: want {want:?} in\n    {err}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_manifest_without_a_primary_candidate_is_refused() {
    let dir = dir();
    std::fs::write(
        dir.path().join("manifests/dr-only.yaml"),
        "apiVersion: shipstream.io/v1alpha1\nkind: MysqlFailoverGroup\nmetadata: {name: g}\n\
         spec:\n  sites:\n    - {name: a, serverID: 1, role: DisasterRecovery}\n    - {name: b, serverID: 2, role: ReadOnly}\n",
    )
    .unwrap();
    let err =
        error(dir.path(), "name: t\nsteps:\n  - startGroup: {manifest: manifests/dr-only.yaml}\n");
    assert!(err.contains("dr-only.yaml") && err.contains("no PrimaryCandidate"), "{err}");
}

#[test]
fn operator_drills_validate_operator_checks() {
    let dir = dir();
    let path = dir.path().join("t.yaml");
    std::fs::write(
        &path,
        "name: t\nrequires: [operator]\nsteps:\n  - startGroup: {manifest: manifests/three-sites.yaml}\n  \
         - annotate: {key: bloodraven.shipstream.io/planned-failover, value: pdx}\n  \
         - wait: {until: {event: {reason: PlannedFailoverSucceeded}}, timeout: 30s}\n  \
         - assert: {outcome: {outcome: Succeeded}}\n  \
         - patch: {object: {kind: MysqlFailoverGroup}, merge: {spec: {failoverCooldown: 1s}}}\n",
    )
    .unwrap();
    let drill = bloodraven_drill::load(&path).unwrap();
    assert!(drill.requires_operator());
    assert_eq!(drill.primary, "iad");
    assert_eq!(drill.sites, ["iad", "pdx", "fra"]);
}

#[test]
fn operator_replicas_are_started_before_they_are_killed_and_never_twice() {
    let dir = dir();
    let path = dir.path().join("t.yaml");
    let head = "name: t\nrequires: [operator]\nsteps:\n  - startGroup: {manifest: manifests/three-sites.yaml}\n";
    let cases: &[(&str, &[&str])] = &[
        (
            "  - killOperator: {name: b}\n",
            &["t.yaml:5:", "steps[1].killOperator.name", "\"b\" does not run"],
        ),
        ("  - startOperator: {}\n", &["steps[1].startOperator.name", "\"operator\" already runs"]),
        (
            "  - killOperator: {}\n  - killOperator: {}\n",
            &["steps[2].killOperator.name", "\"operator\" does not run"],
        ),
    ];
    for (steps, fragments) in cases {
        std::fs::write(&path, format!("{head}{steps}")).unwrap();
        let err = bloodraven_drill::load(&path).unwrap_err().to_string();
        for fragment in *fragments {
            assert!(err.contains(fragment), "{steps:?}: {err:?} lacks {fragment:?}");
        }
    }
    std::fs::write(
        &path,
        format!("{head}  - startOperator: {{name: b}}\n  - killOperator: {{}}\n  - startOperator: {{}}\n"),
    )
    .unwrap();
    bloodraven_drill::load(&path).unwrap();
}
