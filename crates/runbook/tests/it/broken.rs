//! Broken runbooks are refused with file, line and column in the message.

use std::path::Path;

const GOOD: &str = r#"id: demo
title: Demo
spec: 002 "The automation hold"
appliesWhen: group.hold.present
severity: critical
dataLossRisk:
  level: none
  sentence: Nothing is discarded.
steps:
  - id: first
    explain: First.
    check:
      expr: group.activeSite != ""
      meaning: No primary.
    branches:
      onFail: second
  - id: second
    explain: Second.
    action:
      name: acknowledgeHold
      params:
        runId: group.hold.runId
    expect:
      expr: '!group.hold.present'
      timeout: 2m
"#;

fn parse(text: &str) -> Result<bloodraven_runbook::Runbook, bloodraven_runbook::RunbookError> {
    bloodraven_runbook::parse(Path::new("runbooks/demo.yaml"), text)
}

#[test]
fn the_base_runbook_is_valid() {
    let runbook = parse(GOOD).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(runbook.steps.len(), 2);
}

/// (what is broken, replace this, with this, position, message fragment)
const CASES: &[(&str, &str, &str, &str, &str)] = &[
    (
        "unknown field",
        "appliesWhen: group.hold.present",
        "appliesWhen: group.hold.presnt",
        "4:25",
        "group.hold has no field `presnt`",
    ),
    (
        "unknown variable",
        "appliesWhen: group.hold.present",
        "appliesWhen: grop.hold.present",
        "4:14",
        "unknown variable `grop`",
    ),
    (
        "does not compile",
        "expr: group.activeSite != \"\"",
        "expr: group.activeSite !=",
        "13:",
        "does not compile",
    ),
    (
        "unknown field of a macro variable",
        "expr: group.activeSite != \"\"",
        "expr: group.sites.exists(s, s.stat == \"writable\")",
        "13:37",
        "has no field `stat`",
    ),
    (
        "field of a string",
        "expr: group.activeSite != \"\"",
        "expr: group.activeSite.name != \"\"",
        "13:30",
        "a string, which has no fields",
    ),
    (
        "unknown action",
        "name: acknowledgeHold",
        "name: acknowledgeHolds",
        "20:13",
        "unknown action \"acknowledgeHolds\"",
    ),
    ("dangling branch", "onFail: second", "onFail: secnd", "16:15", "no step of this runbook"),
    (
        "unknown parameter",
        "runId: group.hold.runId",
        "runID: group.hold.runId",
        "22:16",
        "takes no parameter \"runID\"",
    ),
    (
        "unknown field in a parameter",
        "runId: group.hold.runId",
        "runId: group.hold.run",
        "22:27",
        "group.hold has no field `run`",
    ),
    ("unknown key", "    explain: First.", "    explian: First.", "11:", "explian"),
    ("bad duration", "timeout: 2m", "timeout: 2 minutes", "25:16", "expect.timeout"),
    (
        "not a bool",
        "appliesWhen: group.hold.present",
        "appliesWhen: group.hold.runId",
        "4:14",
        "not a bool",
    ),
    (
        "quoted scalar",
        "expr: '!group.hold.present'",
        "expr: '!group.hold.presnt'",
        "24:26",
        "no field `presnt`",
    ),
    (
        "block scalar",
        "appliesWhen: group.hold.present",
        "appliesWhen: |\n  group.hold.present\n  && group.plannedFailover.phse == \"x\"",
        "6:28",
        "group.plannedFailover has no field `phse`",
    ),
    (
        "folded scalar",
        "appliesWhen: group.hold.present",
        "appliesWhen: >-\n  group.hold.present\n  || group.hold.reasn == \"x\"",
        "6:17",
        "group.hold has no field `reasn`",
    ),
    (
        "unknown function",
        "expr: group.activeSite != \"\"",
        "expr: group.sites.exists(s, s.name.startWith(\"i\"))",
        "13:42",
        "unknown function `startWith`",
    ),
    ("duplicate step id", "  - id: second", "  - id: first", "17:9", "used twice"),
    ("unknown severity", "severity: critical", "severity: urgent", "5:", "urgent"),
    ("not YAML", "  level: none", "  level: [none", "demo.yaml:", "demo.yaml"),
    (
        "onFail without a check",
        "    check:\n      expr: group.activeSite != \"\"\n      meaning: No primary.\n",
        "",
        "13:15",
        "needs a `check`",
    ),
];

#[test]
fn broken_runbooks_name_file_line_and_column() {
    let mut failures = Vec::new();
    for (what, from, to, pos, fragment) in CASES {
        assert!(GOOD.contains(from), "case {what}: the base text has no {from:?}");
        let text = GOOD.replacen(from, to, 1);
        match parse(&text) {
            Ok(_) => failures.push(format!("{what}: accepted")),
            Err(e) => {
                let message = e.to_string();
                let at = if pos.starts_with("demo") {
                    (*pos).to_owned()
                } else {
                    format!("runbooks/demo.yaml:{pos}")
                };
                let has_position = message
                    .strip_prefix("runbooks/demo.yaml:")
                    .and_then(|rest| rest.split(':').next())
                    .is_some_and(|line| line.parse::<usize>().is_ok());
                if !message.contains(&at) || !message.contains(fragment) || !has_position {
                    failures.push(format!("{what}: want {at} and {fragment:?}, got: {message}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_check_can_expect_false() {
    let text = GOOD
        .replace("      meaning: No primary.", "      expect: false\n      meaning: No primary.");
    let runbook = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(!runbook.steps[0].check.as_ref().unwrap().expect);
}
