//! Response formats: plain JSON, `meta.k8s.io` Tables (what `kubectl get` asks for) and
//! `PartialObjectMetadata` (what metadata watchers ask for).

use serde_json::{Value, json};

use crate::registry::{PrinterColumn, ResourceInfo};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Format {
    Json,
    /// `as=Table`, with the meta.k8s.io version asked for and `includeObject` unknown yet.
    Table {
        version: String,
    },
    /// `as=PartialObjectMetadata` or `as=PartialObjectMetadataList`.
    Metadata {
        version: String,
    },
}

impl Format {
    /// The first acceptable media type of an `Accept` header that this server can produce.
    pub(crate) fn from_accept(accept: &str) -> Self {
        for media_type in accept.split(',') {
            let mut parameters = media_type.split(';').map(str::trim);
            let base = parameters.next().unwrap_or_default();
            if base != "application/json" && base != "*/*" {
                continue;
            }
            let mut as_kind = None;
            let mut version = "v1".to_string();
            let mut group = None;
            for parameter in parameters {
                match parameter.split_once('=') {
                    Some(("as", value)) => as_kind = Some(value.to_string()),
                    Some(("v", value)) => version = value.to_string(),
                    Some(("g", value)) => group = Some(value.to_string()),
                    _ => {}
                }
            }
            match (as_kind.as_deref(), group.as_deref()) {
                (None, _) => return Self::Json,
                (Some("Table"), Some("meta.k8s.io")) if version == "v1" || version == "v1beta1" => {
                    return Self::Table { version };
                }
                (
                    Some("PartialObjectMetadata" | "PartialObjectMetadataList"),
                    Some("meta.k8s.io"),
                ) if version == "v1" || version == "v1beta1" => {
                    return Self::Metadata { version };
                }
                _ => continue,
            }
        }
        Self::Json
    }
}

fn column_definitions(info: &ResourceInfo) -> Vec<Value> {
    let mut columns = vec![json!({
        "name": "Name", "type": "string", "format": "name", "priority": 0,
        "description": "Name must be unique within a namespace. More info: http://kubernetes.io/docs/user-guide/identifiers#names",
    })];
    for column in printer_columns(info) {
        columns.push(json!({
            "name": column.name, "type": column.type_, "format": column.format,
            "description": column.description, "priority": column.priority,
        }));
    }
    columns
}

fn printer_columns(info: &ResourceInfo) -> Vec<PrinterColumn> {
    if !info.printer_columns.is_empty() {
        return info.printer_columns.clone();
    }
    vec![PrinterColumn {
        name: "Age".to_string(),
        type_: "date".to_string(),
        format: String::new(),
        description: "CreationTimestamp is a timestamp representing the server time when this object was created.".to_string(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".to_string(),
    }]
}

/// Evaluates the JSONPath subset CRD printer columns use: `.a.b`, `.a[0]`, `.a[?(@.k=="v")].b`.
pub(crate) fn json_path<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    let mut current = object;
    let mut rest =
        path.trim().trim_start_matches('{').trim_end_matches('}').trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(after_dot) = rest.strip_prefix('.') {
            let end = after_dot.find(['.', '[']).unwrap_or(after_dot.len());
            current = current.get(&after_dot[..end])?;
            rest = &after_dot[end..];
        } else if let Some(after_bracket) = rest.strip_prefix('[') {
            let end = after_bracket.find(']')?;
            let inside = &after_bracket[..end];
            rest = &after_bracket[end + 1..];
            if let Some(filter) =
                inside.strip_prefix("?(@.").and_then(|filter| filter.strip_suffix(')'))
            {
                let (field, wanted) = filter.split_once("==")?;
                let wanted =
                    wanted.trim().trim_matches(|character| character == '"' || character == '\'');
                current = current.as_array()?.iter().find(|item| {
                    item.get(field.trim()).is_some_and(|value| match value {
                        Value::String(text) => text == wanted,
                        other => serde_json::from_str::<Value>(wanted)
                            .is_ok_and(|parsed| parsed == *other),
                    })
                })?;
            } else {
                current = current.get(inside.parse::<usize>().ok()?)?;
            }
        } else {
            return None;
        }
    }
    Some(current)
}

fn cell(object: &Value, column: &PrinterColumn) -> Value {
    match json_path(object, &column.json_path) {
        None | Some(Value::Null) => Value::Null,
        Some(value) if column.type_ == "date" => {
            match value.as_str().and_then(|text| text.parse::<jiff::Timestamp>().ok()) {
                Some(timestamp) => json!(human_duration(
                    jiff::Timestamp::now().as_second() - timestamp.as_second()
                )),
                None => value.clone(),
            }
        }
        Some(value) => value.clone(),
    }
}

/// `duration.HumanDuration` of apimachinery, which `kubectl get` prints as AGE.
pub(crate) fn human_duration(seconds: i64) -> String {
    let seconds = seconds.max(0);
    let minutes = seconds / 60;
    let hours = seconds / 3600;
    let days = hours / 24;
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        let rest = seconds % 60;
        if rest == 0 { format!("{minutes}m") } else { format!("{minutes}m{rest}s") }
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        let rest = minutes % 60;
        if rest == 0 { format!("{hours}h") } else { format!("{hours}h{rest}m") }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let rest = hours % 24;
        if rest == 0 { format!("{days}d") } else { format!("{days}d{rest}h") }
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        let years = days / 365;
        let rest = days % 365;
        if rest == 0 { format!("{years}y") } else { format!("{years}y{rest}d") }
    } else {
        format!("{}y", days / 365)
    }
}

fn partial_metadata(version: &str, object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

pub(crate) fn row(info: &ResourceInfo, version: &str, object: &Value) -> Value {
    let mut cells = vec![object.pointer("/metadata/name").cloned().unwrap_or(Value::Null)];
    cells.extend(printer_columns(info).iter().map(|column| cell(object, column)));
    json!({ "cells": cells, "object": partial_metadata(version, object) })
}

/// A table of the given rows, as the API server answers `as=Table`.
pub(crate) fn table(
    info: &ResourceInfo,
    version: &str,
    rows: Vec<Value>,
    metadata: Value,
) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": metadata,
        "columnDefinitions": column_definitions(info),
        "rows": rows,
    })
}

pub(crate) fn render_object(
    format: &Format,
    info: &ResourceInfo,
    object: Value,
    resource_version: u64,
) -> Value {
    match format {
        Format::Json => object,
        Format::Table { version } => {
            let row = row(info, version, &object);
            table(
                info,
                version,
                vec![row],
                json!({ "resourceVersion": resource_version.to_string() }),
            )
        }
        Format::Metadata { version } => partial_metadata(version, &object),
    }
}

pub(crate) fn render_list(format: &Format, info: &ResourceInfo, list: Value) -> Value {
    if *format == Format::Json {
        return list;
    }
    let items = list.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
    let metadata = list.get("metadata").cloned().unwrap_or_else(|| json!({}));
    match format {
        Format::Json => list,
        Format::Table { version } => {
            let rows = items.iter().map(|item| row(info, version, item)).collect();
            table(info, version, rows, metadata)
        }
        Format::Metadata { version } => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": format!("meta.k8s.io/{version}"),
            "metadata": metadata,
            "items": items.iter().map(|item| partial_metadata(version, item)).collect::<Vec<_>>(),
        }),
    }
}

/// A watch event's object in the requested format.
pub(crate) fn render_event_object(format: &Format, info: &ResourceInfo, object: Value) -> Value {
    match format {
        Format::Json => object,
        Format::Table { version } => {
            let row = row(info, version, &object);
            table(
                info,
                version,
                vec![row],
                json!({ "resourceVersion": object.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null) }),
            )
        }
        Format::Metadata { version } => partial_metadata(version, &object),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_pick_the_format() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(Format::from_accept(kubectl), Format::Table { version: "v1".to_string() });
        assert_eq!(Format::from_accept("application/json"), Format::Json);
        assert_eq!(Format::from_accept(""), Format::Json);
        assert_eq!(
            Format::from_accept("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
            Format::Metadata { version: "v1".to_string() }
        );
        assert_eq!(
            Format::from_accept("application/json;as=Unknown;g=x;v=v1,application/json"),
            Format::Json
        );
    }

    #[test]
    fn json_paths_of_printer_columns() {
        let object = json!({"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}, "spec": {"n": [1, 2]}});
        assert_eq!(
            json_path(&object, ".status.conditions[?(@.type==\"Ready\")].status"),
            Some(&json!("True"))
        );
        assert_eq!(json_path(&object, ".spec.n[1]"), Some(&json!(2)));
        assert_eq!(json_path(&object, ".spec.missing"), None);
    }

    #[test]
    fn ages_print_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(3600 * 5 + 60), "5h1m");
        assert_eq!(human_duration(86400 * 3), "3d");
    }
}
