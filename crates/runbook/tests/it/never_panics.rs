//! Bad input gets an error, never a panic: the base runbook with random edits.

use std::path::Path;

use proptest::prelude::*;

const BASE: &str = r#"id: demo
title: Demo
spec: x
appliesWhen: >-
  group.hold.present
  && group.sites.exists(s, s.name == "iad")
severity: critical
dataLossRisk: {level: none, sentence: "Nothing."}
steps:
  - id: first
    explain: First.
    check: {expr: 'group.activeSite != ""', meaning: No primary.}
    branches: {onFail: second}
  - id: second
    explain: Second.
    action: {name: acknowledgeHold, params: {runId: group.hold.runId}}
    expect: {expr: "!group.hold.present", timeout: 2m}
"#;

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn edited_runbooks_never_panic(
        at in 0usize..BASE.len(),
        cut in 0usize..12,
        insert in "[ a-z.:\"'|>\\-\\[\\]{}()!=&\n]{0,6}",
    ) {
        let mut text: Vec<char> = BASE.chars().collect();
        let at = at.min(text.len());
        let end = (at + cut).min(text.len());
        text.splice(at..end, insert.chars());
        let text: String = text.into_iter().collect();
        if let Err(e) = bloodraven_runbook::parse(Path::new("demo.yaml"), &text) {
            let message = e.to_string();
            let mut parts = message.splitn(4, ':');
            let file = parts.next();
            let line = parts.next().and_then(|l| l.parse::<usize>().ok());
            let column = parts.next().and_then(|c| c.parse::<usize>().ok());
            prop_assert!(
                file == Some("demo.yaml") && line.is_some() && column.is_some(),
                "no file:line:col in {message}"
            );
        }
    }
}
