//! Custom resource validation as the API server does it on create, update, patch, apply and
//! `/status` writes: pruning of unknown fields, the structural schema's value checks
//! (`schema`), then the `x-kubernetes-validations` CEL rules with kube's evaluator
//! (`kube::core::cel`), transition rules seeing `oldSelf` on update. Unchanged values of an
//! update are not refused again (CRD validation ratcheting, GA in Kubernetes 1.33), so a
//! status write to an object planted invalid by `Lab::insert_unvalidated` still works.

mod field;
mod schema;

use kube::core::cel::{CompiledSchema, ErrorKind, ValidationError, Validator, compile_schema};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::registry::ResourceInfo;
use crate::store::State;
pub(crate) use crate::validate::field::{ErrorType, FieldError};
use crate::validate::schema::Node;

thread_local! {
    /// kube's evaluator registers every Kubernetes CEL function once per thread.
    static CEL: Validator = Validator::new();
}

/// The validators of one served version of a CRD, compiled when it is registered.
pub(crate) struct Compiled {
    root: Node,
    rules: CompiledSchema,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled").finish_non_exhaustive()
    }
}

impl Compiled {
    /// Compiles an `openAPIV3Schema`; the error says which pattern does not compile.
    pub(crate) fn new(schema: &Value) -> Result<Self, String> {
        Ok(Self { root: Node::compile(schema, "openAPIV3Schema")?, rules: compile_schema(schema) })
    }

    /// Validates a write. `object` is the object as it would be stored (pruned in place);
    /// `old` the stored object for updates; `status_only` for `/status` writes, whose
    /// schema checks and pruning cover `status` alone (CEL rules see the whole object).
    /// Returns the field errors, empty when the write is valid.
    #[cfg(test)]
    pub(crate) fn check(
        &self,
        object: &mut Value,
        old: Option<&Value>,
        status_only: bool,
    ) -> Vec<FieldError> {
        self.check_pruned(object, old, status_only).0
    }

    /// `check`, also returning the paths of the pruned fields.
    pub(crate) fn check_pruned(
        &self,
        object: &mut Value,
        old: Option<&Value>,
        status_only: bool,
    ) -> (Vec<FieldError>, Vec<String>) {
        let mut errors = Vec::new();
        let mut pruned = Vec::new();
        if status_only {
            if let (Some(node), Some(status)) =
                (self.root.property("status"), object.get_mut("status"))
            {
                node.prune(status, "status", false, &mut pruned);
                let old_status = old.and_then(|old| old.get("status"));
                node.validate(status, old_status, "", "status", false, &mut errors);
            }
        } else {
            self.root.prune(object, "", true, &mut pruned);
            self.root.validate(object, old, "", "", true, &mut errors);
        }
        if !pruned.is_empty() {
            tracing::debug!(?pruned, "pruned fields the schema does not declare");
        }
        if let Some(blocking) = errors.iter().find(|error| error.blocks_rules()) {
            tracing::debug!(%blocking, "CEL rules skipped: the object has type errors");
            errors.push(FieldError::new(
                ErrorType::Invalid,
                "<nil>",
                Some(Value::Null),
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".to_string(),
            ));
            return (errors, pruned);
        }
        let outcome = CEL.with(|validator| validator.validate_compiled(&self.rules, object, old));
        if let Err(failures) = outcome {
            for failure in failures.into_vec() {
                if let Some(error) = self.rule_error(&failure, object, old) {
                    errors.push(error);
                }
            }
        }
        (errors, pruned)
    }

    /// A failed rule as the API server reports it; `None` when it is ratcheted (an unchanged
    /// value that fails a rule without `oldSelf`, or any rule with an evaluation error, such
    /// as a stored value of the wrong type) or cannot be evaluated here (logged).
    fn rule_error(
        &self,
        failure: &ValidationError,
        object: &Value,
        old: Option<&Value>,
    ) -> Option<FieldError> {
        match failure.kind {
            ErrorKind::ValidationFailure
            | ErrorKind::InvalidResult
            | ErrorKind::EvaluationError => {}
            _ => {
                tracing::warn!(rule = %failure.rule, error = %failure.message, "a CEL rule the lab cannot evaluate is skipped");
                return None;
            }
        }
        let segments = parse_path(&failure.field_path);
        if let Some(old) = old
            && (!failure.rule.contains("oldSelf") || failure.kind == ErrorKind::EvaluationError)
            && let (Some(new_value), Some(old_value)) =
                (lookup(object, &segments), lookup(old, &segments))
            && new_value == old_value
        {
            return None;
        }
        let field = if failure.field_path.is_empty() {
            "<nil>".to_string()
        } else {
            failure.field_path.clone()
        };
        let type_name = self.type_at(&segments);
        let detail = failure.message.clone();
        Some(match failure.reason.as_deref() {
            Some("FieldValueForbidden") => {
                FieldError::new(ErrorType::Forbidden, &field, None, detail)
            }
            Some("FieldValueRequired") => {
                FieldError::new(ErrorType::Required, &field, None, detail)
            }
            Some("FieldValueDuplicate") => {
                FieldError::new(ErrorType::Duplicate, &field, Some(json!(type_name)), String::new())
            }
            _ => FieldError::new(ErrorType::Invalid, &field, Some(json!(type_name)), detail),
        })
    }

    fn type_at(&self, segments: &[Segment]) -> String {
        let mut node = &self.root;
        for segment in segments {
            let next = match segment {
                Segment::Key(key) => node.property(key),
                Segment::Index(_) => node.items(),
            };
            match next {
                Some(next) => node = next,
                None => return String::new(),
            }
        }
        node.type_name().to_string()
    }
}

/// The compiled validators for a version of a resource (custom resources with a schema).
pub(crate) fn for_version<'a>(info: &'a ResourceInfo, version: &str) -> Option<&'a Compiled> {
    info.validation
        .get(version)
        .or_else(|| info.validation.get(info.preferred_version()))
        .map(|compiled| &**compiled)
}

/// Validates a create or an update of a custom resource; 422 `Invalid` with every cause, or
/// with `strict_fields` (`fieldValidation=Strict`) 400 for fields the schema does not declare.
pub(crate) fn admit(
    info: &ResourceInfo,
    version: &str,
    name: &str,
    object: &mut Value,
    old: Option<&Value>,
    subresource: Option<&str>,
    strict_fields: bool,
) -> Result<(), ApiError> {
    let Some(compiled) = for_version(info, version) else { return Ok(()) };
    let (errors, pruned) = compiled.check_pruned(object, old, subresource == Some("status"));
    if strict_fields && !pruned.is_empty() {
        // As the API server's strict decoding, before any validation.
        let fields: Vec<String> =
            pruned.iter().map(|path| format!("unknown field {}", field::go_quote(path))).collect();
        return Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
            fields.join(", "),
            kind = info.kind,
        )));
    }
    if errors.is_empty() {
        return Ok(());
    }
    Err(field::invalid(&info.kind, &info.group, name, &errors))
}

/// The store, locked, with validation off for as long as it is held when `validate` is false
/// (`Lab::insert_unvalidated`), or strict about unknown fields for one request; dropping it
/// restores the defaults.
pub(crate) struct Locked<'a> {
    state: std::sync::MutexGuard<'a, State>,
}

impl<'a> Locked<'a> {
    pub(crate) fn new(mut state: std::sync::MutexGuard<'a, State>, validate: bool) -> Self {
        state.unvalidated = !validate;
        Self { state }
    }

    /// The store for one write request: `fieldValidation=Strict` refuses unknown fields.
    pub(crate) fn for_request(
        mut state: std::sync::MutexGuard<'a, State>,
        query: &std::collections::HashMap<String, String>,
    ) -> Self {
        state.strict_fields = query.get("fieldValidation").is_some_and(|mode| mode == "Strict");
        Self { state }
    }
}

impl std::ops::Deref for Locked<'_> {
    type Target = State;

    fn deref(&self) -> &State {
        &self.state
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.state
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.state.unvalidated = false;
        self.state.strict_fields = false;
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// `spec.sites[0].name` → keys and indexes (kube-cel's error paths).
fn parse_path(path: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    for part in path.split('.').filter(|part| !part.is_empty()) {
        let mut rest = part;
        if let Some(open) = rest.find('[') {
            if open > 0 {
                segments.push(Segment::Key(rest[..open].to_string()));
            }
            rest = &rest[open..];
            while let Some(stripped) = rest.strip_prefix('[') {
                let Some(close) = stripped.find(']') else { break };
                match stripped[..close].parse::<usize>() {
                    Ok(index) => segments.push(Segment::Index(index)),
                    Err(_) => segments.push(Segment::Key(stripped[..close].to_string())),
                }
                rest = &stripped[close + 1..];
            }
        } else {
            segments.push(Segment::Key(rest.to_string()));
        }
    }
    segments
}

fn lookup<'a>(value: &'a Value, segments: &[Segment]) -> Option<&'a Value> {
    segments.iter().try_fold(value, |current, segment| match segment {
        Segment::Key(key) => current.get(key),
        Segment::Index(index) => current.get(index),
    })
}

#[cfg(test)]
mod tests;
