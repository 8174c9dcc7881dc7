//! Field errors as apimachinery's `field.Error` words them, and the 422 `Status` they make.

use serde_json::{Value, json};

use crate::error::ApiError;

/// apimachinery's `field.ErrorType`: the cause `reason` and the words of the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorType {
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    /// A wrong JSON type; it blocks the CEL rules, as the API server's `hasBlockingErr`.
    TypeInvalid,
}

impl ErrorType {
    fn reason(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Duplicate => "Duplicate value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
        }
    }
}

/// One validation failure at a field path (`spec.sites[0].name`; `<nil>` for the object).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldError {
    pub kind: ErrorType,
    pub field: String,
    /// The bad value as the message shows it; `None` omits it.
    pub value: Option<Value>,
    pub detail: String,
}

impl FieldError {
    pub(crate) fn new(kind: ErrorType, field: &str, value: Option<Value>, detail: String) -> Self {
        Self { kind, field: field.to_string(), value, detail }
    }

    /// `field.Error.ErrorBody()`: the cause message.
    pub(crate) fn body(&self) -> String {
        let mut text = self.kind.words().to_string();
        let shows_value =
            !matches!(self.kind, ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong);
        if shows_value && let Some(value) = &self.value {
            text.push_str(": ");
            text.push_str(&go_value(value));
        }
        if !self.detail.is_empty() {
            text.push_str(": ");
            text.push_str(&self.detail);
        }
        text
    }

    pub(crate) fn blocks_rules(&self) -> bool {
        matches!(self.kind, ErrorType::TypeInvalid | ErrorType::NotSupported)
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// A value as `ErrorBody` prints it: strings quoted, numbers and booleans bare, null as
/// `"null"`, the rest as JSON.
pub(crate) fn go_value(value: &Value) -> String {
    match value {
        Value::Null => "\"null\"".to_string(),
        Value::String(text) => go_quote(text),
        Value::Number(number) => number_text(number),
        Value::Bool(flag) => flag.to_string(),
        other => other.to_string(),
    }
}

/// Go's `%q` for the strings we meet (JSON escaping is the same for printable text).
pub(crate) fn go_quote(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

/// Go's `%v` of a float64 or int64: integral values without a fraction.
pub(crate) fn number_text(number: &serde_json::Number) -> String {
    if let Some(integer) = number.as_i64() {
        return integer.to_string();
    }
    if let Some(integer) = number.as_u64() {
        return integer.to_string();
    }
    match number.as_f64() {
        Some(float) if float.fract() == 0.0 && float.abs() < 1e21 => format!("{float:.0}"),
        Some(float) => float.to_string(),
        None => number.to_string(),
    }
}

pub(crate) fn float_text(float: f64) -> String {
    serde_json::Number::from_f64(float)
        .map(|number| number_text(&number))
        .unwrap_or_else(|| float.to_string())
}

/// The API server's `NewInvalid`: 422, `reason: Invalid`, one cause per error, and the
/// message `Kind.group "name" is invalid: <error>` (`[<error>, <error>]` for several).
pub(crate) fn invalid(kind: &str, group: &str, name: &str, errors: &[FieldError]) -> ApiError {
    let mut seen = Vec::<String>::new();
    for error in errors {
        let text = error.to_string();
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    let aggregate = if seen.len() == 1 { seen.concat() } else { format!("[{}]", seen.join(", ")) };
    let group_kind = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
    let causes: Vec<Value> = errors
        .iter()
        .map(|error| json!({ "reason": error.kind.reason(), "message": error.body(), "field": error.field }))
        .collect();
    let mut details = json!({ "name": name, "kind": kind, "causes": causes });
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    ApiError::new(422, "Invalid", format!("{group_kind} \"{name}\" is invalid: {aggregate}"))
        .with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_read_like_apimachinery() {
        let type_error = FieldError::new(
            ErrorType::TypeInvalid,
            "spec.sites",
            Some(json!("string")),
            "spec.sites in body must be of type array: \"string\"".to_string(),
        );
        assert_eq!(
            type_error.to_string(),
            "spec.sites: Invalid value: \"string\": spec.sites in body must be of type array: \"string\""
        );
        let required = FieldError::new(ErrorType::Required, "spec.sites", None, String::new());
        assert_eq!(required.to_string(), "spec.sites: Required value");
        let too_many = FieldError::new(
            ErrorType::TooMany,
            "spec.x",
            Some(json!(3)),
            "must have at most 2 items".into(),
        );
        assert_eq!(too_many.body(), "Too many: 3: must have at most 2 items");
        let too_long = FieldError::new(
            ErrorType::TooLong,
            "spec.x",
            Some(json!("abc")),
            "may not be more than 2 bytes".into(),
        );
        assert_eq!(too_long.body(), "Too long: may not be more than 2 bytes");
        let error = invalid("Widget", "lab.test", "w", &[required.clone(), required]);
        assert_eq!(error.message, "Widget.lab.test \"w\" is invalid: spec.sites: Required value");
        assert_eq!(float_text(5.0), "5");
        assert_eq!(float_text(1.5), "1.5");
    }
}
