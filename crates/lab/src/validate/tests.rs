//! Table tests of the validator against a small schema that has every kind of check.

use serde_json::{Value, json};

use super::Compiled;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["sites"],
                "x-kubernetes-validations": [
                    { "rule": "self.sites.size() >= self.minSites", "message": "too few sites" },
                    { "rule": "!has(oldSelf.mode) || self.mode == oldSelf.mode", "message": "mode is immutable" },
                ],
                "properties": {
                    "minSites": { "type": "integer", "default": 1 },
                    "sites": {
                        "type": "array",
                        "maxItems": 3,
                        "minItems": 1,
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": { "type": "string", "maxLength": 8, "minLength": 1, "pattern": "^[a-z]+$" },
                                "weight": { "type": "integer", "minimum": 0, "maximum": 10 },
                                "ratio": { "type": "number", "exclusiveMinimum": true, "minimum": 0 },
                            },
                        },
                    },
                    "mode": { "type": "string", "enum": ["Fast", "Safe"] },
                    "port": { "x-kubernetes-int-or-string": true },
                    "note": { "type": "string", "nullable": true },
                    "labels": { "type": "object", "additionalProperties": { "type": "string" } },
                    "free": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                    "tags": { "type": "array", "items": { "type": "string" }, "x-kubernetes-list-type": "set" },
                    "since": { "type": "string", "format": "date-time" },
                },
            },
            "status": {
                "type": "object",
                "properties": { "phase": { "type": "string", "enum": ["Ready", "Failed"] } },
            },
        },
    })
}

fn object(spec: Value) -> Value {
    json!({ "apiVersion": "x.io/v1", "kind": "Thing", "metadata": { "name": "t", "anything": 1 }, "spec": spec })
}

fn good_spec() -> Value {
    json!({ "sites": [{ "name": "a" }, { "name": "b" }] })
}

/// The `field: body` texts of the errors of a create (or an update when `old` is given).
fn errors(object_value: Value, old: Option<Value>) -> Vec<String> {
    let compiled = Compiled::new(&schema()).unwrap();
    let mut object_value = object_value;
    compiled.check(&mut object_value, old.as_ref(), false).iter().map(ToString::to_string).collect()
}

const BLOCKED: &str = "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

#[test]
fn schema_checks_word_their_refusals_like_the_api_server() {
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (good_spec(), vec![]),
        (
            json!({ "sites": "not a list" }),
            vec![
                "spec.sites: Invalid value: \"string\": spec.sites in body must be of type array: \"string\"",
                BLOCKED,
            ],
        ),
        (
            json!({}),
            vec![
                "spec.sites: Required value",
                "spec: Invalid value: \"object\": rule evaluation error: No such key: sites",
            ],
        ),
        (json!({ "sites": [{ "weight": 1 }] }), vec!["spec.sites[0].name: Required value"]),
        (
            json!({ "sites": [{ "name": "a" }], "mode": "Slow" }),
            vec![
                "spec.mode: Unsupported value: \"Slow\": supported values: \"Fast\", \"Safe\"",
                BLOCKED,
            ],
        ),
        (
            json!({ "sites": [{ "name": "abcdefghij" }] }),
            vec!["spec.sites[0].name: Too long: may not be more than 8 bytes"],
        ),
        (
            json!({ "sites": [{ "name": "A1" }] }),
            vec![
                "spec.sites[0].name: Invalid value: \"A1\": spec.sites[0].name in body should match '^[a-z]+$'",
            ],
        ),
        (
            json!({ "sites": [{ "name": "a", "weight": 11 }] }),
            vec![
                "spec.sites[0].weight: Invalid value: 11: spec.sites[0].weight in body should be less than or equal to 10",
            ],
        ),
        (
            json!({ "sites": [{ "name": "a", "weight": -1 }] }),
            vec![
                "spec.sites[0].weight: Invalid value: -1: spec.sites[0].weight in body should be greater than or equal to 0",
            ],
        ),
        (
            json!({ "sites": [{ "name": "a", "ratio": 0 }] }),
            vec![
                "spec.sites[0].ratio: Invalid value: 0: spec.sites[0].ratio in body should be greater than 0",
            ],
        ),
        (
            json!({ "sites": [{ "name": "a", "weight": 1.5 }] }),
            vec![
                "spec.sites[0].weight: Invalid value: \"number\": spec.sites[0].weight in body must be of type integer: \"number\"",
                BLOCKED,
            ],
        ),
        (
            json!({ "sites": [{ "name": "a" }, { "name": "b" }, { "name": "c" }, { "name": "d" }] }),
            vec!["spec.sites: Too many: 4: must have at most 3 items"],
        ),
        (
            json!({ "sites": [], "minSites": 0 }),
            vec!["spec.sites: Invalid value: 0: spec.sites in body should have at least 1 items"],
        ),
        (
            json!({ "sites": [{ "name": "a" }, { "name": "a" }] }),
            vec!["spec.sites[1]: Duplicate value: {\"name\":\"a\"}"],
        ),
        (
            json!({ "sites": [{ "name": "a" }], "tags": ["x", "x"] }),
            vec!["spec.tags[1]: Duplicate value: \"x\""],
        ),
        (json!({ "sites": [{ "name": "a" }], "port": 8080 }), vec![]),
        (json!({ "sites": [{ "name": "a" }], "port": "http" }), vec![]),
        (
            json!({ "sites": [{ "name": "a" }], "port": true }),
            vec![
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                BLOCKED,
            ],
        ),
        (json!({ "sites": [{ "name": "a" }], "note": null }), vec![]),
        (
            json!({ "sites": null }),
            vec![
                "spec.sites: Invalid value: \"null\": spec.sites in body must be of type array: \"null\"",
                BLOCKED,
            ],
        ),
        (
            json!({ "sites": [{ "name": "a" }], "labels": { "k": 1 } }),
            vec![
                "spec.labels.k: Invalid value: \"integer\": spec.labels.k in body must be of type string: \"integer\"",
                BLOCKED,
            ],
        ),
        (
            json!({ "sites": [{ "name": "a" }], "since": "yesterday" }),
            vec![
                "spec.since: Invalid value: \"yesterday\": spec.since in body must be of type date-time: \"yesterday\"",
                BLOCKED,
            ],
        ),
        (json!({ "sites": [{ "name": "a" }], "since": "2026-04-15T09:30:00Z" }), vec![]),
        // CEL, without oldSelf: a rule on the object, reported at its path with its type.
        (
            json!({ "sites": [{ "name": "a" }], "minSites": 2 }),
            vec!["spec: Invalid value: \"object\": too few sites"],
        ),
    ];
    let mismatches: Vec<String> = cases
        .into_iter()
        .filter_map(|(spec, expected)| {
            let found = errors(object(spec.clone()), None);
            (found != expected)
                .then(|| format!("spec {spec}:\n  found    {found:?}\n  expected {expected:?}"))
        })
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn unknown_fields_are_pruned_where_the_schema_does_not_preserve_them() {
    let compiled = Compiled::new(&schema()).unwrap();
    let mut value = object(json!({
        "sites": [{ "name": "a", "colour": "red" }],
        "unknown": 1,
        "labels": { "free": "form" },
        "free": { "anything": { "goes": true } },
    }));
    value["extra"] = json!("top");
    assert_eq!(compiled.check(&mut value, None, false), vec![]);
    assert_eq!(
        value,
        json!({
            "apiVersion": "x.io/v1", "kind": "Thing", "metadata": { "name": "t", "anything": 1 },
            "spec": {
                "sites": [{ "name": "a" }],
                "labels": { "free": "form" },
                "free": { "anything": { "goes": true } },
            },
        })
    );
}

#[test]
fn transition_rules_see_the_old_object_on_update_only() {
    let with_mode = |mode: &str| {
        let mut spec = good_spec();
        spec["mode"] = json!(mode);
        object(spec)
    };
    assert_eq!(errors(with_mode("Safe"), None), Vec::<String>::new());
    assert_eq!(errors(with_mode("Safe"), Some(with_mode("Safe"))), Vec::<String>::new());
    assert_eq!(
        errors(with_mode("Fast"), Some(with_mode("Safe"))),
        vec!["spec: Invalid value: \"object\": mode is immutable"]
    );
}

#[test]
fn unchanged_invalid_values_are_ratcheted_on_update() {
    let invalid = object(json!({ "sites": [{ "name": "a", "weight": 99 }] }));
    assert_eq!(errors(invalid.clone(), None).len(), 1);
    // Another field changes; the stored invalid weight is not refused again.
    let mut changed = invalid.clone();
    changed["spec"]["note"] = json!("hello");
    assert_eq!(errors(changed, Some(invalid.clone())), Vec::<String>::new());
    // Changing the invalid value itself is refused.
    let mut worse = invalid.clone();
    worse["spec"]["sites"][0]["weight"] = json!(98);
    assert_eq!(errors(worse, Some(invalid)).len(), 1);
}

#[test]
fn status_writes_check_the_status_schema() {
    let compiled = Compiled::new(&schema()).unwrap();
    let old = object(good_spec());
    let mut value = old.clone();
    value["status"] = json!({ "phase": "Lost", "junk": 1 });
    let found: Vec<String> =
        compiled.check(&mut value, Some(&old), true).iter().map(ToString::to_string).collect();
    assert_eq!(
        found,
        vec![
            "status.phase: Unsupported value: \"Lost\": supported values: \"Ready\", \"Failed\"",
            BLOCKED
        ]
    );
    assert_eq!(value["status"], json!({ "phase": "Lost" }), "status is pruned");
}

#[test]
fn a_pattern_rust_cannot_compile_is_named() {
    let error = Compiled::new(&json!({ "type": "string", "pattern": "(" })).unwrap_err();
    assert!(error.contains("openAPIV3Schema.pattern"), "{error}");
}
