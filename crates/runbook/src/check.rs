//! Walks a parsed CEL expression against the group view's shape ([`crate::types`]): the
//! evaluator has no type checker, so a misspelt field would otherwise fail only when a group
//! reaches that branch, at 3 a.m.

use cel::IdedExpr;
use cel::common::ast::{EntryExpr, Expr, LiteralValue, operators};

use crate::pos::Use;
use crate::types::{BEFORE, GROUP_TYPE, ROOT, Ty};

/// Why an expression was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Problem {
    /// `.name` on an object without that field.
    UnknownField {
        /// The field.
        name: String,
        /// The path of the object it was read on, such as `group.hold`.
        on: String,
        /// The fields that exist.
        expected: Vec<&'static str>,
    },
    /// `.name` on a value that has no fields.
    NotAnObject {
        /// The field.
        name: String,
        /// The path of the value.
        on: String,
        /// Its type.
        ty: &'static str,
    },
    /// An identifier that is neither `group` nor a comprehension variable.
    UnknownVariable(String),
    /// A function the evaluator does not provide.
    UnknownFunction(String),
    /// The whole expression is not a boolean.
    NotBool(&'static str),
}

/// The functions the `cel` evaluator's default context provides (operators are `_x_`-named).
const FUNCTIONS: &[&str] = &[
    "contains",
    "size",
    "max",
    "min",
    "startsWith",
    "endsWith",
    "matches",
    "string",
    "bytes",
    "double",
    "int",
    "uint",
    "duration",
    "timestamp",
];

impl Problem {
    /// The name to search for in the source, and how it is used.
    pub(crate) fn needle(&self) -> Option<(&str, Use)> {
        match self {
            Problem::UnknownField { name, .. } | Problem::NotAnObject { name, .. } => {
                Some((name, Use::Field))
            }
            Problem::UnknownVariable(name) => Some((name, Use::Ident)),
            Problem::UnknownFunction(name) => Some((name, Use::Call)),
            Problem::NotBool(_) => None,
        }
    }

    /// The message.
    pub(crate) fn message(&self) -> String {
        match self {
            Problem::UnknownField { name, on, expected } => format!(
                "{on} has no field `{name}`; it has: {} (crates/runbook/README.md lists the view)",
                expected.join(", ")
            ),
            Problem::NotAnObject { name, on, ty } => {
                format!("`{name}` is read on {on}, a {ty}, which has no fields")
            }
            Problem::UnknownVariable(name) => format!(
                "unknown variable `{name}`: expressions read the group as `{ROOT}`, the group \
                 when the step's action was sent as `{BEFORE}` (and the variables their own \
                 macros bind)"
            ),
            Problem::UnknownFunction(name) => {
                format!(
                    "unknown function `{name}`; the evaluator provides: {}",
                    FUNCTIONS.join(", ")
                )
            }
            Problem::NotBool(ty) => {
                format!("the expression is a {ty}, not a bool: compare it with a value")
            }
        }
    }
}

/// Checks a predicate: every field exists, and the result is not known to be a non-bool.
pub(crate) fn check_predicate(expr: &IdedExpr) -> Result<(), Problem> {
    let (ty, _) = walk(expr, &mut Vec::new())?;
    match ty {
        Ty::Bool | Ty::Any => Ok(()),
        other => Err(Problem::NotBool(other.describe())),
    }
}

/// Checks a parameter: every field exists (any result type).
pub(crate) fn check_value(expr: &IdedExpr) -> Result<(), Problem> {
    walk(expr, &mut Vec::new()).map(|_| ())
}

/// The expression's type as far as the view knows it, and its path for messages.
fn walk(e: &IdedExpr, scope: &mut Vec<(String, Ty)>) -> Result<(Ty, String), Problem> {
    let any = |path: &str| Ok((Ty::Any, path.to_owned()));
    match &e.expr {
        Expr::Ident(name) => {
            if let Some((_, ty)) = scope.iter().rev().find(|(n, _)| n == name) {
                return Ok((*ty, name.clone()));
            }
            if name == ROOT || name == BEFORE {
                return Ok((GROUP_TYPE, name.clone()));
            }
            Err(Problem::UnknownVariable(name.clone()))
        }
        Expr::Select(select) => {
            let (ty, path) = walk(&select.operand, scope)?;
            match ty.field(&select.field) {
                Some(field) => Ok((field, format!("{path}.{}", select.field))),
                None if matches!(ty, Ty::Object(_)) => Err(Problem::UnknownField {
                    name: select.field.clone(),
                    on: path,
                    expected: ty.field_names(),
                }),
                None => Err(Problem::NotAnObject {
                    name: select.field.clone(),
                    on: path,
                    ty: ty.describe(),
                }),
            }
        }
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                walk(target, scope)?;
            }
            let mut args = Vec::with_capacity(call.args.len());
            for a in &call.args {
                args.push(walk(a, scope)?);
            }
            let name = call.func_name.as_str();
            let operator = name.starts_with(['_', '!', '-', '@']);
            if !operator && !FUNCTIONS.contains(&name) {
                return Err(Problem::UnknownFunction(name.to_owned()));
            }
            if name == operators::INDEX || name == operators::OPT_INDEX {
                if let Some((Ty::List(elem), path)) = args.first() {
                    return Ok((**elem, format!("{path}[]")));
                }
                return any("an indexed value");
            }
            let bool_ops = [
                operators::LOGICAL_AND,
                operators::LOGICAL_OR,
                operators::LOGICAL_NOT,
                operators::EQUALS,
                operators::NOT_EQUALS,
                operators::LESS,
                operators::LESS_EQUALS,
                operators::GREATER,
                operators::GREATER_EQUALS,
                operators::IN,
            ];
            if bool_ops.contains(&name) || name == "startsWith" || name == "endsWith" {
                return Ok((Ty::Bool, format!("{name}(..)")));
            }
            if name == "size" {
                return Ok((Ty::Int, "size(..)".to_owned()));
            }
            any(&format!("{name}(..)"))
        }
        Expr::Comprehension(c) => {
            let (range, _) = walk(&c.iter_range, scope)?;
            walk(&c.accu_init, scope)?;
            let (first, second) = match range {
                Ty::List(elem) => {
                    if c.iter_var2.is_some() {
                        (Ty::Int, *elem)
                    } else {
                        (*elem, Ty::Any)
                    }
                }
                _ => (Ty::Any, Ty::Any),
            };
            let depth = scope.len();
            scope.push((c.accu_var.clone(), Ty::Any));
            scope.push((c.iter_var.clone(), first));
            if let Some(v2) = &c.iter_var2 {
                scope.push((v2.clone(), second));
            }
            let result = (|| {
                walk(&c.loop_cond, scope)?;
                walk(&c.loop_step, scope)?;
                walk(&c.result, scope)
            })();
            scope.truncate(depth);
            result.map(|(ty, _)| (ty, "a comprehension".to_owned()))
        }
        Expr::List(list) => {
            for el in &list.elements {
                walk(el, scope)?;
            }
            any("a list literal")
        }
        Expr::Map(map) => {
            entries(&map.entries, scope)?;
            any("a map literal")
        }
        Expr::Struct(s) => {
            entries(&s.entries, scope)?;
            any("a struct literal")
        }
        Expr::Literal(lit) => Ok((
            match lit {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::String(_) => Ty::Str,
                _ => Ty::Any,
            },
            "a literal".to_owned(),
        )),
        Expr::Unspecified => any("an expression"),
    }
}

fn entries(
    entries: &[cel::common::ast::IdedEntryExpr],
    scope: &mut Vec<(String, Ty)>,
) -> Result<(), Problem> {
    for entry in entries {
        match &entry.expr {
            EntryExpr::StructField(f) => {
                walk(&f.value, scope)?;
            }
            EntryExpr::MapEntry(m) => {
                walk(&m.key, scope)?;
                walk(&m.value, scope)?;
            }
        }
    }
    Ok(())
}

/// The scalar fields of `group` a predicate reads (`group.hold.present`, `s.name` not included),
/// in first-use order without repeats: the console shows their values beside a check.
pub(crate) fn reads(expr: &IdedExpr) -> Vec<String> {
    let mut found = Vec::new();
    collect(expr, &mut found);
    found
}

fn collect(e: &IdedExpr, found: &mut Vec<String>) {
    match &e.expr {
        Expr::Select(select) => {
            if let Some((path, ty)) = group_path(e) {
                if matches!(ty, Ty::Bool | Ty::Int | Ty::Str) && !found.contains(&path) {
                    found.push(path);
                }
                if !matches!(ty, Ty::Any) {
                    return;
                }
            }
            collect(&select.operand, found);
        }
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                collect(target, found);
            }
            for a in &call.args {
                collect(a, found);
            }
        }
        Expr::Comprehension(c) => {
            for part in [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                collect(part, found);
            }
        }
        Expr::List(list) => list.elements.iter().for_each(|el| collect(el, found)),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Map(_) | Expr::Struct(_) | Expr::Unspecified => {}
    }
}

/// `group.a.b` as text with its type, for a chain of selects rooted at `group`.
fn group_path(e: &IdedExpr) -> Option<(String, Ty)> {
    match &e.expr {
        Expr::Ident(name) if name == ROOT => Some((ROOT.to_owned(), GROUP_TYPE)),
        Expr::Select(select) if !select.test => {
            let (path, ty) = group_path(&select.operand)?;
            let field = ty.field(&select.field)?;
            Some((format!("{path}.{}", select.field), field))
        }
        _ => None,
    }
}
