//! A structural `openAPIV3Schema`, compiled once per CRD version: pruning of unknown fields
//! and the value checks of kube-openapi's validator (types, nullable, int-or-string, required,
//! enum, bounds, pattern, cheap formats, list-type invariants), worded as the API server.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::validate::field::{ErrorType, FieldError, float_text, go_quote};

/// One schema node.
#[derive(Debug, Default)]
pub(crate) struct Node {
    /// `type`; `None` for int-or-string and schema-less (preserved) nodes.
    type_: Option<String>,
    int_or_string: bool,
    nullable: bool,
    preserve_unknown: bool,
    /// `x-kubernetes-embedded-resource`: apiVersion, kind and metadata are kept.
    embedded: bool,
    properties: BTreeMap<String, Node>,
    additional: Additional,
    items: Option<Box<Node>>,
    required: Vec<String>,
    /// Properties with a `default` (the API server defaults them before checking `required`;
    /// the lab does not default, so it does not refuse their absence either).
    defaulted: BTreeSet<String>,
    enumeration: Option<Vec<Value>>,
    minimum: Option<(f64, bool)>,
    maximum: Option<(f64, bool)>,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    unique_items: bool,
    pattern: Option<(String, regex::Regex)>,
    format: Option<String>,
    list_type: Option<String>,
    map_keys: Vec<String>,
}

#[derive(Debug, Default)]
enum Additional {
    /// Unknown fields are pruned (unless `x-kubernetes-preserve-unknown-fields`).
    #[default]
    None,
    /// `additionalProperties: true`.
    Any,
    Schema(Box<Node>),
}

fn unsigned(schema: &Value, key: &str) -> Option<u64> {
    schema.get(key).and_then(|value| value.as_u64().or_else(|| value.as_f64().map(|f| f as u64)))
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

impl Node {
    /// Compiles a schema; the error names the path of a pattern Rust's regex cannot compile.
    pub(crate) fn compile(schema: &Value, path: &str) -> Result<Self, String> {
        let mut node = Node {
            type_: schema.get("type").and_then(Value::as_str).map(str::to_string),
            int_or_string: flag(schema, "x-kubernetes-int-or-string"),
            nullable: flag(schema, "nullable"),
            preserve_unknown: flag(schema, "x-kubernetes-preserve-unknown-fields"),
            embedded: flag(schema, "x-kubernetes-embedded-resource"),
            required: schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
            enumeration: schema.get("enum").and_then(Value::as_array).cloned(),
            minimum: schema
                .get("minimum")
                .and_then(Value::as_f64)
                .map(|bound| (bound, flag(schema, "exclusiveMinimum"))),
            maximum: schema
                .get("maximum")
                .and_then(Value::as_f64)
                .map(|bound| (bound, flag(schema, "exclusiveMaximum"))),
            multiple_of: schema.get("multipleOf").and_then(Value::as_f64),
            min_length: unsigned(schema, "minLength"),
            max_length: unsigned(schema, "maxLength"),
            min_items: unsigned(schema, "minItems"),
            max_items: unsigned(schema, "maxItems"),
            min_properties: unsigned(schema, "minProperties"),
            max_properties: unsigned(schema, "maxProperties"),
            unique_items: flag(schema, "uniqueItems"),
            format: schema.get("format").and_then(Value::as_str).map(str::to_string),
            list_type: schema
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .map(str::to_string),
            map_keys: schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| keys.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
            ..Node::default()
        };
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
            let regex = regex::Regex::new(pattern)
                .map_err(|error| format!("{path}.pattern: Invalid value: {pattern:?}: {error}"))?;
            node.pattern = Some((pattern.to_string(), regex));
        }
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                if property.get("default").is_some() {
                    node.defaulted.insert(name.clone());
                }
                node.properties
                    .insert(name.clone(), Node::compile(property, &format!("{path}.{name}"))?);
            }
        }
        node.additional = match schema.get("additionalProperties") {
            Some(Value::Bool(true)) => Additional::Any,
            Some(additional @ Value::Object(_)) => Additional::Schema(Box::new(Node::compile(
                additional,
                &format!("{path}.additionalProperties"),
            )?)),
            _ => Additional::None,
        };
        if let Some(items) = schema.get("items").filter(|items| items.is_object()) {
            node.items = Some(Box::new(Node::compile(items, &format!("{path}.items"))?));
        }
        Ok(node)
    }

    pub(crate) fn property(&self, name: &str) -> Option<&Node> {
        self.properties.get(name).or(match &self.additional {
            Additional::Schema(node) => Some(node),
            _ => None,
        })
    }

    pub(crate) fn items(&self) -> Option<&Node> {
        self.items.as_deref()
    }

    /// The schema type CEL errors show as the value (`Invalid value: "object"`).
    pub(crate) fn type_name(&self) -> &str {
        self.type_.as_deref().unwrap_or_default()
    }

    /// Removes fields the schema does not declare (and does not preserve); returns their
    /// paths. `root` keeps apiVersion, kind and metadata, as every object does.
    pub(crate) fn prune(
        &self,
        value: &mut Value,
        path: &str,
        root: bool,
        pruned: &mut Vec<String>,
    ) {
        match value {
            Value::Object(map) => {
                let keep_type_meta = root || self.embedded;
                let mut unknown = Vec::new();
                for (key, child) in map.iter_mut() {
                    if keep_type_meta && matches!(key.as_str(), "apiVersion" | "kind" | "metadata")
                    {
                        continue;
                    }
                    let child_path = join(path, key);
                    match (self.properties.get(key), &self.additional) {
                        (Some(node), _) => node.prune(child, &child_path, false, pruned),
                        (None, Additional::Schema(node)) => {
                            node.prune(child, &child_path, false, pruned)
                        }
                        (None, Additional::Any) => {}
                        (None, Additional::None) if self.preserve_unknown => {}
                        (None, Additional::None) => unknown.push(key.clone()),
                    }
                }
                for key in unknown {
                    map.remove(&key);
                    pruned.push(join(path, &key));
                }
            }
            Value::Array(items) => {
                if let Some(node) = &self.items {
                    for (index, item) in items.iter_mut().enumerate() {
                        node.prune(item, &format!("{path}[{index}]"), false, pruned);
                    }
                }
            }
            _ => {}
        }
    }

    /// Checks `value` (named `name` in messages, reported at `field`); unchanged values of an
    /// update (`old` equal) are not checked again (CRD validation ratcheting).
    pub(crate) fn validate(
        &self,
        value: &Value,
        old: Option<&Value>,
        name: &str,
        field: &str,
        root: bool,
        errors: &mut Vec<FieldError>,
    ) {
        if old.is_some_and(|old| old == value) {
            return;
        }
        let in_body = |text: &str| format!("{name} in body {text}");
        if value.is_null() {
            if self.nullable {
                return;
            }
            let expected = self.expected_types();
            if !expected.is_empty() {
                errors.push(FieldError::new(
                    ErrorType::TypeInvalid,
                    field,
                    Some(json!("null")),
                    in_body(&format!("must be of type {expected}: \"null\"")),
                ));
            }
            return;
        }
        let actual = json_type(value);
        let expected = self.expected_types();
        let type_ok = match (self.type_.as_deref(), self.int_or_string) {
            (_, true) => matches!(actual, "integer" | "string"),
            (Some("number"), _) => matches!(actual, "integer" | "number"),
            (Some(expected), _) => actual == expected,
            (None, false) => true,
        };
        if !type_ok {
            errors.push(FieldError::new(
                ErrorType::TypeInvalid,
                field,
                Some(json!(actual)),
                in_body(&format!("must be of type {expected}: {}", go_quote(actual))),
            ));
            return;
        }
        if let Some(allowed) = &self.enumeration
            && !allowed.iter().any(|candidate| same_value(candidate, value))
        {
            let supported: Vec<String> = allowed
                .iter()
                .map(|candidate| match candidate {
                    Value::String(text) => go_quote(text),
                    other => go_quote(&other.to_string()),
                })
                .collect();
            errors.push(FieldError::new(
                ErrorType::NotSupported,
                field,
                Some(value.clone()),
                format!("supported values: {}", supported.join(", ")),
            ));
        }
        match value {
            Value::String(text) => self.check_string(text, value, &in_body, field, errors),
            Value::Number(number) => {
                if let Some(float) = number.as_f64() {
                    self.check_number(float, value, &in_body, field, errors);
                }
            }
            Value::Array(items) => self.check_array(items, value, old, name, field, errors),
            Value::Object(map) => self.check_object(map, old, name, field, root, errors),
            Value::Bool(_) | Value::Null => {}
        }
    }

    fn expected_types(&self) -> String {
        if self.int_or_string {
            return "integer,string".to_string();
        }
        self.type_.clone().unwrap_or_default()
    }

    fn check_string(
        &self,
        text: &str,
        value: &Value,
        in_body: &dyn Fn(&str) -> String,
        field: &str,
        errors: &mut Vec<FieldError>,
    ) {
        let length = text.chars().count() as u64;
        if let Some(max) = self.max_length
            && length > max
        {
            let unit = if max == 1 { "byte" } else { "bytes" };
            errors.push(FieldError::new(
                ErrorType::TooLong,
                field,
                None,
                format!("may not be more than {max} {unit}"),
            ));
        }
        if let Some(min) = self.min_length
            && length < min
        {
            errors.push(FieldError::new(
                ErrorType::Invalid,
                field,
                Some(value.clone()),
                in_body(&format!("should be at least {min} chars long")),
            ));
        }
        if let Some((source, regex)) = &self.pattern
            && !regex.is_match(text)
        {
            errors.push(FieldError::new(
                ErrorType::Invalid,
                field,
                Some(value.clone()),
                in_body(&format!("should match '{source}'")),
            ));
        }
        if let Some(format) = &self.format
            && !format_ok(format, text)
        {
            errors.push(FieldError::new(
                ErrorType::TypeInvalid,
                field,
                Some(value.clone()),
                in_body(&format!("must be of type {format}: {}", go_quote(text))),
            ));
        }
    }

    fn check_number(
        &self,
        float: f64,
        value: &Value,
        in_body: &dyn Fn(&str) -> String,
        field: &str,
        errors: &mut Vec<FieldError>,
    ) {
        let mut invalid = |text: String| {
            errors.push(FieldError::new(
                ErrorType::Invalid,
                field,
                Some(value.clone()),
                in_body(&text),
            ))
        };
        if let Some((max, exclusive)) = self.maximum {
            if exclusive && float >= max {
                invalid(format!("should be less than {}", float_text(max)));
            } else if float > max {
                invalid(format!("should be less than or equal to {}", float_text(max)));
            }
        }
        if let Some((min, exclusive)) = self.minimum {
            if exclusive && float <= min {
                invalid(format!("should be greater than {}", float_text(min)));
            } else if float < min {
                invalid(format!("should be greater than or equal to {}", float_text(min)));
            }
        }
        if let Some(factor) = self.multiple_of
            && factor != 0.0
            && (float / factor).fract() != 0.0
        {
            invalid(format!("should be a multiple of {}", float_text(factor)));
        }
    }

    fn check_array(
        &self,
        items: &[Value],
        value: &Value,
        old: Option<&Value>,
        name: &str,
        field: &str,
        errors: &mut Vec<FieldError>,
    ) {
        let count = items.len() as u64;
        if let Some(max) = self.max_items
            && count > max
        {
            let unit = if max == 1 { "item" } else { "items" };
            errors.push(FieldError::new(
                ErrorType::TooMany,
                field,
                Some(json!(count)),
                format!("must have at most {max} {unit}"),
            ));
        }
        if let Some(min) = self.min_items
            && count < min
        {
            errors.push(FieldError::new(
                ErrorType::Invalid,
                field,
                Some(json!(count)),
                format!("{name} in body should have at least {min} items"),
            ));
        }
        if self.unique_items
            && items.iter().enumerate().any(|(index, item)| items[..index].contains(item))
        {
            errors.push(FieldError::new(
                ErrorType::Invalid,
                field,
                Some(value.clone()),
                format!("{name} in body shouldn't contain duplicates"),
            ));
        }
        let old_items = old.and_then(Value::as_array);
        let keys_of = |item: &Value| -> Value {
            let mut keys = serde_json::Map::new();
            for key in &self.map_keys {
                keys.insert(key.clone(), item.get(key).cloned().unwrap_or(Value::Null));
            }
            Value::Object(keys)
        };
        for (index, item) in items.iter().enumerate() {
            let item_name = format!("{name}[{index}]");
            let item_field = format!("{field}[{index}]");
            match self.list_type.as_deref() {
                Some("set") if items[..index].contains(item) => errors.push(FieldError::new(
                    ErrorType::Duplicate,
                    &item_field,
                    Some(item.clone()),
                    String::new(),
                )),
                Some("map")
                    if !self.map_keys.is_empty()
                        && items[..index]
                            .iter()
                            .any(|earlier| keys_of(earlier) == keys_of(item)) =>
                {
                    errors.push(FieldError::new(
                        ErrorType::Duplicate,
                        &item_field,
                        Some(keys_of(item)),
                        String::new(),
                    ))
                }
                _ => {}
            }
            let Some(node) = &self.items else { continue };
            // Ratcheting correlates items of map lists by key and of sets by value.
            let old_item = match self.list_type.as_deref() {
                Some("map") => old_items.and_then(|old| {
                    old.iter().find(|candidate| keys_of(candidate) == keys_of(item))
                }),
                Some("set") => {
                    old_items.and_then(|old| old.iter().find(|candidate| *candidate == item))
                }
                _ => None,
            };
            node.validate(item, old_item, &item_name, &item_field, false, errors);
        }
    }

    fn check_object(
        &self,
        map: &serde_json::Map<String, Value>,
        old: Option<&Value>,
        name: &str,
        field: &str,
        root: bool,
        errors: &mut Vec<FieldError>,
    ) {
        let count = map.len() as u64;
        if let Some(max) = self.max_properties
            && count > max
        {
            errors.push(FieldError::new(
                ErrorType::TooMany,
                field,
                Some(json!(count)),
                format!("must have at most {max} items"),
            ));
        }
        if let Some(min) = self.min_properties
            && count < min
        {
            errors.push(FieldError::new(
                ErrorType::Invalid,
                field,
                Some(json!(count)),
                format!("{name} in body should have at least {min} properties"),
            ));
        }
        for required in &self.required {
            if !map.contains_key(required) && !self.defaulted.contains(required) {
                errors.push(FieldError::new(
                    ErrorType::Required,
                    &join(field, required),
                    None,
                    String::new(),
                ));
            }
        }
        let keep_type_meta = root || self.embedded;
        for (key, child) in map {
            if keep_type_meta && key == "metadata" {
                continue;
            }
            let node = match (self.properties.get(key), &self.additional) {
                (Some(node), _) => node,
                (None, Additional::Schema(node)) => node,
                _ => continue,
            };
            let old_child = old.and_then(|old| old.get(key));
            node.validate(child, old_child, &join(name, key), &join(field, key), false, errors);
        }
    }
}

pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// The type name kube-openapi reports for a JSON value.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Number(number) => {
            let integral = number.is_i64()
                || number.is_u64()
                || number.as_f64().is_some_and(|float| float.fract() == 0.0);
            if integral { "integer" } else { "number" }
        }
    }
}

fn same_value(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(left), Value::Number(right)) => left.as_f64() == right.as_f64(),
        _ => left == right,
    }
}

/// The string formats that are cheap to check; others are accepted.
fn format_ok(format: &str, text: &str) -> bool {
    match format {
        "date-time" | "datetime" => text.parse::<jiff::Timestamp>().is_ok(),
        "date" => text.parse::<jiff::civil::Date>().is_ok() && text.len() == 10,
        "uuid" => uuid::Uuid::try_parse(text).is_ok(),
        "byte" => data_encoding::BASE64.decode(text.as_bytes()).is_ok(),
        "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        _ => true,
    }
}
