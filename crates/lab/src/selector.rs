//! Label and field selectors in the syntax of `labelSelector=` and `fieldSelector=`.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LabelSelector {
    requirements: Vec<Requirement>,
}

fn is_key_char(character: char) -> bool {
    character.is_ascii_alphanumeric() || matches!(character, '-' | '_' | '.' | '/')
}

struct Scanner<'a> {
    input: &'a str,
    position: usize,
}

impl<'a> Scanner<'a> {
    fn skip_spaces(&mut self) {
        while self.input[self.position..].starts_with(' ') {
            self.position += 1;
        }
    }

    fn rest(&self) -> &'a str {
        &self.input[self.position..]
    }

    fn word(&mut self) -> &'a str {
        self.skip_spaces();
        let rest = self.rest();
        let length = rest.find(|character: char| !is_key_char(character)).unwrap_or(rest.len());
        self.position += length;
        &rest[..length]
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_spaces();
        if self.rest().starts_with(token) {
            self.position += token.len();
            true
        } else {
            false
        }
    }

    fn error(&self, what: &str) -> String {
        format!("unable to parse requirement: {what} at byte {} of {:?}", self.position, self.input)
    }
}

/// A label name part or value: at most 63 of `[-A-Za-z0-9_.]`, alphanumeric at both ends.
fn is_label_name(text: &str) -> bool {
    text.len() <= 63
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
        && text.bytes().next().is_some_and(|byte| byte.is_ascii_alphanumeric())
        && text.bytes().last().is_some_and(|byte| byte.is_ascii_alphanumeric())
}

fn validate_key(key: &str, scanner: &Scanner<'_>) -> Result<(), String> {
    let valid = match key.split_once('/') {
        Some((prefix, name)) => crate::store::is_dns_subdomain(prefix) && is_label_name(name),
        None => is_label_name(key),
    };
    if valid {
        Ok(())
    } else {
        Err(scanner.error(&format!(
            "invalid label key {key:?}: a qualified name is an optional DNS subdomain prefix and '/', then at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character"
        )))
    }
}

fn validate_value(value: &str, scanner: &Scanner<'_>) -> Result<(), String> {
    if value.is_empty() || is_label_name(value) {
        return Ok(());
    }
    Err(scanner.error(&format!(
        "invalid label value {value:?}: a valid label must be an empty string or at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character"
    )))
}

impl LabelSelector {
    pub(crate) fn parse(input: &str) -> Result<Self, String> {
        let mut scanner = Scanner { input, position: 0 };
        let mut requirements = Vec::new();
        scanner.skip_spaces();
        if scanner.rest().is_empty() {
            return Ok(Self::default());
        }
        loop {
            let negated = scanner.eat("!");
            let key = scanner.word().to_string();
            if key.is_empty() {
                return Err(scanner.error("expected a label key"));
            }
            validate_key(&key, &scanner)?;
            if negated {
                requirements.push(Requirement::DoesNotExist(key));
            } else if scanner.eat("==") || scanner.eat("=") {
                let value = scanner.word().to_string();
                validate_value(&value, &scanner)?;
                requirements.push(Requirement::Equals(key, value));
            } else if scanner.eat("!=") {
                let value = scanner.word().to_string();
                validate_value(&value, &scanner)?;
                requirements.push(Requirement::NotEquals(key, value));
            } else if scanner.eat(">") {
                let value = scanner.word();
                let number = value.parse().map_err(|_| scanner.error("expected an integer"))?;
                requirements.push(Requirement::GreaterThan(key, number));
            } else if scanner.eat("<") {
                let value = scanner.word();
                let number = value.parse().map_err(|_| scanner.error("expected an integer"))?;
                requirements.push(Requirement::LessThan(key, number));
            } else {
                let save = scanner.position;
                let operator = scanner.word();
                match operator {
                    "in" | "notin" => {
                        if !scanner.eat("(") {
                            return Err(scanner.error("expected '('"));
                        }
                        let mut values = Vec::new();
                        loop {
                            let value = scanner.word().to_string();
                            validate_value(&value, &scanner)?;
                            values.push(value);
                            if scanner.eat(",") {
                                continue;
                            }
                            if scanner.eat(")") {
                                break;
                            }
                            return Err(scanner.error("expected ',' or ')'"));
                        }
                        if operator == "in" {
                            requirements.push(Requirement::In(key, values));
                        } else {
                            requirements.push(Requirement::NotIn(key, values));
                        }
                    }
                    _ => {
                        scanner.position = save;
                        requirements.push(Requirement::Exists(key));
                    }
                }
            }
            scanner.skip_spaces();
            if scanner.rest().is_empty() {
                break;
            }
            if !scanner.eat(",") {
                return Err(scanner.error("expected ','"));
            }
        }
        Ok(Self { requirements })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let label = |key: &str| labels.and_then(|labels| labels.get(key)).and_then(Value::as_str);
        self.requirements.iter().all(|requirement| match requirement {
            Requirement::Equals(key, value) => label(key) == Some(value.as_str()),
            Requirement::NotEquals(key, value) => label(key) != Some(value.as_str()),
            Requirement::In(key, values) => {
                label(key).is_some_and(|found| values.iter().any(|value| value == found))
            }
            Requirement::NotIn(key, values) => {
                !label(key).is_some_and(|found| values.iter().any(|value| value == found))
            }
            Requirement::Exists(key) => label(key).is_some(),
            Requirement::DoesNotExist(key) => label(key).is_none(),
            Requirement::GreaterThan(key, bound) => label(key)
                .and_then(|found| found.parse::<i64>().ok())
                .is_some_and(|found| found > *bound),
            Requirement::LessThan(key, bound) => label(key)
                .and_then(|found| found.parse::<i64>().ok())
                .is_some_and(|found| found < *bound),
        })
    }
}

/// A parsed field selector (`=`, `==`, `!=` over the fields a resource supports).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

/// Field labels beyond `metadata.name` and `metadata.namespace` that a kind supports.
fn extra_fields(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        ("", "Pod") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "Event") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("", "Secret") => &["type"],
        ("", "Namespace") => &["status.phase"],
        ("batch", "Job") => &["status.successful"],
        _ => &[],
    }
}

impl FieldSelector {
    /// Parses a selector, refusing fields the kind does not index as the API server does.
    pub(crate) fn parse(input: &str, group: &str, kind: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        for term in input.split(',').map(str::trim).filter(|term| !term.is_empty()) {
            let (field, equal, value) = if let Some((field, value)) = term.split_once("!=") {
                (field, false, value)
            } else if let Some((field, value)) = term.split_once("==") {
                (field, true, value)
            } else if let Some((field, value)) = term.split_once('=') {
                (field, true, value)
            } else {
                return Err(format!("invalid selector: '{input}'; can't understand '{term}'"));
            };
            let field = field.trim();
            let supported = matches!(field, "metadata.name" | "metadata.namespace")
                || extra_fields(group, kind).contains(&field);
            if !supported {
                return Err(format!("field label not supported: {field}"));
            }
            terms.push((field.to_string(), equal, value.trim().to_string()));
        }
        Ok(Self { terms })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub(crate) fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|(field, equal, value)| {
            let pointer = format!("/{}", field.replace('.', "/"));
            let found = match object.pointer(&pointer) {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (found == *value) == *equal
        })
    }
}

/// The label and field selectors of one request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selectors {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selectors {
    pub(crate) fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object() -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "db", "tier": "3"}}})
    }

    #[test]
    fn label_selectors_match_as_kubernetes_does() {
        let cases = [
            ("", true),
            ("app=db", true),
            ("app==db", true),
            ("app!=db", false),
            ("app in (web, db)", true),
            ("app notin (db)", false),
            ("app", true),
            ("!app", false),
            ("missing", false),
            ("!missing", true),
            ("missing!=x", true),
            ("app=db,tier=3", true),
            ("app=db,tier=4", false),
            ("tier>2", true),
            ("tier<3", false),
        ];
        for (selector, expected) in cases {
            let parsed = LabelSelector::parse(selector).unwrap();
            assert_eq!(parsed.matches(&object()), expected, "{selector}");
        }
    }

    #[test]
    fn malformed_label_keys_and_values_are_refused() {
        for selector in
            ["app=a/b", "-app=x", "a/b/c=x", "app=-x", "x in (a,b/c)", "A_B/app", "/app"]
        {
            assert!(LabelSelector::parse(selector).is_err(), "{selector}");
        }
        let long = "a".repeat(64);
        assert!(LabelSelector::parse(&format!("app={long}")).is_err());
        assert!(LabelSelector::parse(&format!("{long}=x")).is_err());
        for selector in
            ["example.com/app=db", "app=", "app.kubernetes.io/name in (a, b_c)", "!x", "x in ()"]
        {
            assert!(LabelSelector::parse(selector).is_ok(), "{selector}");
        }
    }

    #[test]
    fn label_selector_errors_name_the_position() {
        let error = LabelSelector::parse("app in (db").unwrap_err();
        assert!(error.contains("byte 10"), "{error}");
        assert!(LabelSelector::parse("app=db,,").is_err());
    }

    #[test]
    fn field_selectors_check_support() {
        let selector =
            FieldSelector::parse("metadata.name=a,metadata.namespace!=other", "", "ConfigMap")
                .unwrap();
        assert!(selector.matches(&object()));
        let selector = FieldSelector::parse("metadata.name!=a", "", "ConfigMap").unwrap();
        assert!(!selector.matches(&object()));
        assert_eq!(
            FieldSelector::parse("spec.x=1", "", "ConfigMap").unwrap_err(),
            "field label not supported: spec.x"
        );
        assert!(FieldSelector::parse("status.phase=Running", "", "Pod").is_ok());
    }
}
