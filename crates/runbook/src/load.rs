//! Reading a runbook: YAML with a position for every node, the schema, then the checks the
//! schema cannot express (CEL that compiles and names only fields of the view, known actions
//! and parameters, branches that land on a step, durations). The first problem is returned,
//! naming file, line and column.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use marked_yaml::{LoadError, LoaderOptions, Marker, Spanned};

use crate::action::Action;
use crate::check::{Problem, check_predicate, check_value};
use crate::error::{Pos, RunbookError};
use crate::model::{BranchesFile, RunbookFile, StepFile};
use crate::pos;
use crate::runbook::{ActionCall, Check, Expect, Expression, Runbook, Step, Target};

/// The branch target that ends the runbook.
pub const DONE: &str = "done";

/// Reads and checks one runbook file.
pub fn load(path: &Path) -> Result<Runbook, RunbookError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| RunbookError::Read { file: path.to_owned(), source })?;
    parse(path, &text)
}

/// Reads and checks every `*.yaml` in a folder, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Runbook>, RunbookError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|source| RunbookError::Read { file: dir.to_owned(), source })?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| RunbookError::Read { file: dir.to_owned(), source })?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "yaml") {
            paths.push(path);
        }
    }
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

fn at(marker: &Marker) -> Pos {
    Pos { line: marker.line(), column: marker.column() }
}

/// Parses and checks runbook text; `path` names the file in messages.
pub fn parse(path: &Path, text: &str) -> Result<Runbook, RunbookError> {
    let syntax =
        |pos: Pos, message: String| RunbookError::Syntax { file: path.to_owned(), pos, message };
    let options = LoaderOptions::default().error_on_duplicate_keys(true);
    let node = marked_yaml::parse_yaml_with_options(0, text, options).map_err(|e| {
        let pos = match &e {
            LoadError::TopLevelMustBeMapping(m)
            | LoadError::TopLevelMustBeSequence(m)
            | LoadError::UnexpectedAnchor(m)
            | LoadError::MappingKeyMustBeScalar(m)
            | LoadError::UnexpectedTag(m)
            | LoadError::ScanError(m, _) => at(m),
            LoadError::DuplicateKey(inner) => pos::start(inner.key.span()),
        };
        let text = e.to_string();
        let prefix = format!("{pos}: ");
        syntax(pos, text.strip_prefix(prefix.as_str()).unwrap_or(&text).to_owned())
    })?;
    let file: RunbookFile = marked_yaml::from_node(&node).map_err(|e| {
        let pos = e.start_mark().map_or(Pos { line: 1, column: 1 }, |m| at(&m));
        let message = match e.path() {
            Some(path) => format!("{path}: {}", *e),
            None => e.to_string(),
        };
        syntax(pos, message)
    })?;
    Checker { file: path.to_owned(), text }.runbook(file)
}

struct Checker<'a> {
    file: PathBuf,
    text: &'a str,
}

impl Checker<'_> {
    fn invalid(&self, pos: Pos, field: &str, message: String) -> RunbookError {
        RunbookError::Invalid { file: self.file.clone(), pos, field: field.to_owned(), message }
    }

    fn runbook(&self, file: RunbookFile) -> Result<Runbook, RunbookError> {
        let id_ok = !file.id.is_empty()
            && file.id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !id_ok {
            return Err(self.invalid(
                pos::start(file.id.span()),
                "id",
                format!("{:?} is not a kebab-case id (a-z, 0-9, -)", file.id.as_str()),
            ));
        }
        if file.steps.is_empty() {
            return Err(self.invalid(
                pos::start(file.id.span()),
                "steps",
                "a runbook needs at least one step".to_owned(),
            ));
        }
        let applies_when = self.predicate(&file.applies_when, "appliesWhen")?;
        let mut ids = BTreeSet::new();
        for (i, step) in file.steps.iter().enumerate() {
            if step.id.as_str() == DONE || !ids.insert(step.id.as_str()) {
                return Err(self.invalid(
                    pos::start(step.id.span()),
                    &format!("steps[{i}].id"),
                    format!(
                        "step id {:?} is reserved or used twice: step ids are unique and not \
                         `{DONE}`",
                        step.id.as_str()
                    ),
                ));
            }
        }
        let ids: Vec<&str> = file.steps.iter().map(|s| s.id.as_str()).collect();
        let mut steps = Vec::with_capacity(file.steps.len());
        for (i, step) in file.steps.iter().enumerate() {
            steps.push(self.step(i, step, &ids)?);
        }
        Ok(Runbook {
            id: file.id.as_str().to_owned(),
            title: file.title,
            spec: file.spec,
            applies_when,
            severity: file.severity,
            data_loss: file.data_loss_risk.level,
            data_loss_sentence: file.data_loss_risk.sentence,
            steps,
        })
    }

    fn step(&self, i: usize, step: &StepFile, ids: &[&str]) -> Result<Step, RunbookError> {
        let field = |rest: &str| format!("steps[{i}].{rest}");
        let check = match &step.check {
            Some(c) => {
                let expr = self.predicate(&c.expr, &field("check.expr"))?;
                let mut reads = Vec::new();
                for path in crate::check::reads(expr.program.expression()) {
                    // A path of known fields always compiles; skip one that would not.
                    if let Ok(program) = cel::Program::compile(&path) {
                        reads.push(Expression {
                            source: path,
                            pos: expr.pos,
                            field: field("check.expr"),
                            program: Arc::new(program),
                        });
                    }
                }
                Some(Check { expr, expect: c.expect, meaning: c.meaning.clone(), reads })
            }
            None => None,
        };
        let action = match &step.action {
            Some(a) => Some(self.action(a, &field("action"))?),
            None => None,
        };
        let expect = match &step.expect {
            Some(e) => {
                let timeout =
                    bloodraven_crd::Duration::new(e.timeout.as_str()).to_std().map_err(|err| {
                        self.invalid(
                            pos::start(e.timeout.span()),
                            &field("expect.timeout"),
                            format!("{:?}: {err}", e.timeout.as_str()),
                        )
                    })?;
                Some(Expect { expr: self.predicate(&e.expr, &field("expect.expr"))?, timeout })
            }
            None => None,
        };
        if expect.is_some() && action.is_none() {
            let span = step.expect.as_ref().map(|e| pos::start(e.expr.span()));
            return Err(self.invalid(
                span.unwrap_or(pos::start(step.id.span())),
                &field("expect"),
                "`expect` waits for an action's result: add the step's `action`, or make the \
                 predicate a `check`"
                    .to_owned(),
            ));
        }
        let next = if i + 1 < ids.len() { Target::Step(i + 1) } else { Target::Done };
        let (on_pass, on_fail) = match &step.branches {
            Some(BranchesFile { on_pass, on_fail }) => {
                if step.check.is_none() && on_fail.is_some() {
                    let span = on_fail.as_ref().map(|t| pos::start(t.span()));
                    return Err(self.invalid(
                        span.unwrap_or(pos::start(step.id.span())),
                        &field("branches.onFail"),
                        "`onFail` needs a `check` to fail".to_owned(),
                    ));
                }
                (
                    self.target(on_pass.as_ref(), &field("branches.onPass"), ids, &next)?,
                    self.target(on_fail.as_ref(), &field("branches.onFail"), ids, &next)?,
                )
            }
            None => (next.clone(), next),
        };
        Ok(Step {
            id: step.id.as_str().to_owned(),
            explain: step.explain.clone(),
            check,
            action,
            expect,
            on_pass,
            on_fail,
        })
    }

    fn target(
        &self,
        target: Option<&Spanned<String>>,
        field: &str,
        ids: &[&str],
        next: &Target,
    ) -> Result<Target, RunbookError> {
        let Some(target) = target else {
            return Ok(next.clone());
        };
        if target.as_str() == DONE {
            return Ok(Target::Done);
        }
        match ids.iter().position(|id| *id == target.as_str()) {
            Some(index) => Ok(Target::Step(index)),
            None => Err(self.invalid(
                pos::start(target.span()),
                field,
                format!(
                    "branch to {:?}, which is no step of this runbook (steps: {}; or `{DONE}`)",
                    target.as_str(),
                    ids.join(", ")
                ),
            )),
        }
    }

    fn action(
        &self,
        action: &crate::model::ActionFile,
        field: &str,
    ) -> Result<ActionCall, RunbookError> {
        let Some(kind) = Action::parse(&action.name) else {
            let known: Vec<&str> = Action::ALL.iter().map(|a| a.name()).collect();
            return Err(self.invalid(
                pos::start(action.name.span()),
                &format!("{field}.name"),
                format!(
                    "unknown action {:?}: runbooks offer only the console's guided operations: {}",
                    action.name.as_str(),
                    known.join(", ")
                ),
            ));
        };
        for (name, value) in &action.params {
            if !kind.params().contains(&name.as_str()) {
                return Err(self.invalid(
                    pos::start(value.span()),
                    &format!("{field}.params.{name}"),
                    format!(
                        "{} takes no parameter {name:?}; it takes: {}",
                        kind.name(),
                        kind.params().join(", ")
                    ),
                ));
            }
        }
        let mut params = Vec::new();
        for name in kind.params() {
            let Some(value) = action.params.get(*name) else {
                return Err(self.invalid(
                    pos::start(action.name.span()),
                    &format!("{field}.params"),
                    format!("{} needs the parameter {name:?} (a CEL expression)", kind.name()),
                ));
            };
            let expr = self.compile(value, &format!("{field}.params.{name}"), check_value)?;
            params.push(((*name).to_owned(), expr));
        }
        Ok(ActionCall { action: kind, params })
    }

    fn predicate(&self, source: &Spanned<String>, field: &str) -> Result<Expression, RunbookError> {
        self.compile(source, field, check_predicate)
    }

    fn compile(
        &self,
        source: &Spanned<String>,
        field: &str,
        check: fn(&cel::IdedExpr) -> Result<(), Problem>,
    ) -> Result<Expression, RunbookError> {
        let start = pos::start(source.span());
        let program = cel::Program::compile(source).map_err(|errors| {
            let first = errors.errors.first();
            let offset = first.map_or(0, |e| pos::offset_of(source, e.pos.0, e.pos.1));
            let message = first.map_or_else(|| errors.to_string(), |e| e.msg.clone());
            self.invalid(
                pos::inside(self.text, start, source, offset),
                field,
                format!("the CEL expression does not compile: {message}"),
            )
        })?;
        check(program.expression()).map_err(|problem| {
            let offset =
                problem.needle().map_or(0, |(name, how)| pos::find_name(source, name, how));
            self.invalid(pos::inside(self.text, start, source, offset), field, problem.message())
        })?;
        Ok(Expression {
            source: source.as_str().to_owned(),
            pos: start,
            field: field.to_owned(),
            program: Arc::new(program),
        })
    }
}
