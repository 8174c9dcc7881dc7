//! Reading and validating a drill file: YAML errors with their path and line, then the checks
//! the schema cannot express (site and link names, step order, names used before they exist).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration as StdDuration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::SiteRole;

use crate::error::DrillError;
use crate::model::{Check, Drill, GtidSource, Requirement, Step};

/// A drill that passed validation, with its group's manifest.
#[derive(Clone, Debug)]
pub struct LoadedDrill {
    /// The drill file.
    pub path: PathBuf,
    /// The drill.
    pub drill: Drill,
    /// The manifest named by `startGroup`.
    pub manifest_path: PathBuf,
    /// The group it declares.
    pub group: MysqlFailoverGroup,
    /// Site names in declared order.
    pub sites: Vec<String>,
    /// The first PrimaryCandidate: the primary when the runner starts the sites itself.
    pub primary: String,
    /// The whole drill's bound.
    pub timeout: StdDuration,
}

impl LoadedDrill {
    /// Whether the drill needs the operator.
    pub fn requires_operator(&self) -> bool {
        self.drill.requires.contains(&Requirement::Operator)
    }
}

/// Reads and validates a drill file (and its manifest).
pub fn load(path: &Path) -> Result<LoadedDrill, DrillError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| DrillError::Read { file: path.to_owned(), source })?;
    let drill = parse(path, &text)?;
    validate(path, &text, drill)
}

/// Parses drill YAML; errors name the field path (`steps[2].kill.site`) and the line.
pub fn parse(path: &Path, text: &str) -> Result<Drill, DrillError> {
    // Steps and checks are one-key maps (`- kill: {site: iad}`), not YAML tags: the
    // singleton-map adapter reads every enum that way; the path tracker sits outside it.
    let mut track = serde_path_to_error::Track::new();
    let de = serde_norway::Deserializer::from_str(text);
    let tracked = serde_path_to_error::Deserializer::new(de, &mut track);
    serde_norway::with::singleton_map_recursive::deserialize(tracked).map_err(|inner| {
        let location = inner.location();
        DrillError::Syntax {
            file: path.to_owned(),
            field: track.path().to_string(),
            line: location.as_ref().map(|l| l.line()),
            column: location.as_ref().map(|l| l.column()),
            message: bare_message(&inner.to_string(), location.as_ref()),
        }
    })
}

/// The parser's message without the path prefix and position suffix it repeats.
fn bare_message(text: &str, location: Option<&serde_norway::Location>) -> String {
    let mut text = text;
    if let Some(l) = location {
        let suffix = format!(" at line {} column {}", l.line(), l.column());
        text = text.strip_suffix(suffix.as_str()).unwrap_or(text);
    }
    if let Some((prefix, rest)) = text.split_once(": ")
        && !prefix.contains(char::is_whitespace)
    {
        text = rest;
    }
    text.to_owned()
}

fn duration(
    file: &Path,
    text: &str,
    index: Option<usize>,
    field: &str,
    d: &bloodraven_crd::Duration,
) -> Result<StdDuration, DrillError> {
    d.to_std().map_err(|e| match index {
        Some(index) => step_error(file, text, index, field, format!("{:?}: {e}", d.as_str())),
        None => DrillError::Invalid {
            file: file.to_owned(),
            field: field.to_owned(),
            message: format!("{:?}: {e}", d.as_str()),
        },
    })
}

fn step_error(file: &Path, text: &str, index: usize, field: &str, message: String) -> DrillError {
    DrillError::Step {
        file: file.to_owned(),
        index,
        line: step_line(text, index),
        field: field.to_owned(),
        message,
    }
}

/// The 1-based line of the `index`-th item of the top-level `steps:` block sequence.
fn step_line(text: &str, index: usize) -> Option<usize> {
    let mut lines = text.lines().enumerate().skip_while(|(_, l)| !l.starts_with("steps:"));
    lines.next()?;
    let mut indent = None;
    let mut seen = 0;
    for (n, line) in lines {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let this = line.len() - trimmed.len();
        if this == 0 && !trimmed.starts_with('-') {
            return None;
        }
        if trimmed.starts_with("- ") || trimmed == "-" {
            let want = *indent.get_or_insert(this);
            if this == want {
                if seen == index {
                    return Some(n + 1);
                }
                seen += 1;
            }
        }
    }
    None
}

/// What the validator tracks along the timeline.
struct Scope<'a> {
    file: &'a Path,
    text: &'a str,
    sites: &'a [String],
    recorded: BTreeSet<String>,
    ledgers: BTreeSet<String>,
    running: Option<String>,
    operator: bool,
    /// Operator replicas running at this point of the timeline.
    operators: BTreeSet<String>,
}

impl Scope<'_> {
    fn err(&self, index: usize, field: &str, message: String) -> DrillError {
        step_error(self.file, self.text, index, field, message)
    }

    fn site(&self, index: usize, field: &str, site: &str) -> Result<(), DrillError> {
        if self.sites.iter().any(|s| s == site) {
            Ok(())
        } else {
            Err(self.err(
                index,
                field,
                format!("unknown site {site:?}; the manifest's sites are {:?}", self.sites),
            ))
        }
    }

    fn link(&self, index: usize, field: &str, link: &str) -> Result<(), DrillError> {
        let ok = if link == "app:primary" || link == "app:dns" {
            true
        } else if let Some(pair) = link.strip_prefix("repl:") {
            pair.split_once("->").is_some_and(|(f, s)| {
                f != s && self.sites.iter().any(|x| x == f) && self.sites.iter().any(|x| x == s)
            })
        } else {
            ["app:", "operator:", "sidecar:"].iter().any(|p| {
                link.strip_prefix(p).is_some_and(|site| self.sites.iter().any(|x| x == site))
            })
        };
        if ok {
            Ok(())
        } else {
            Err(self.err(
                index,
                field,
                format!(
                    "unknown link {link:?}; links are repl:<follower>-><source>, app:<site>, \
                     operator:<site>, sidecar:<site>, app:primary and app:dns, with sites {:?}",
                    self.sites
                ),
            ))
        }
    }

    fn gtid_source(&self, index: usize, field: &str, src: &GtidSource) -> Result<(), DrillError> {
        match src {
            GtidSource::Site(site) => self.site(index, &format!("{field}.site"), site),
            GtidSource::Recorded(name) => self.recorded(index, &format!("{field}.recorded"), name),
        }
    }

    fn recorded(&self, index: usize, field: &str, name: &str) -> Result<(), DrillError> {
        if self.recorded.contains(name) {
            Ok(())
        } else {
            Err(self.err(
                index,
                field,
                format!(
                    "no GTID set is recorded as {name:?} before this step (recordGtids or \
                     errantWrite with `as: {name}`); recorded so far: {:?}",
                    self.recorded
                ),
            ))
        }
    }

    fn check(&self, index: usize, field: &str, check: &Check) -> Result<(), DrillError> {
        let f = |sub: &str| format!("{field}.{}.{sub}", check.kind());
        if check.needs_operator() && !self.operator {
            return Err(self.err(
                index,
                &format!("{field}.{}", check.kind()),
                "reads the lab API server, which only the operator's world has: add \
                 `requires: [operator]`"
                    .into(),
            ));
        }
        match check {
            Check::Replica(c) => {
                self.site(index, &f("site"), &c.site)?;
                if let Some(source) = &c.source {
                    self.site(index, &f("source"), source)?;
                }
                if c.io.is_none() && c.sql.is_none() && c.source.is_none() {
                    return Err(self.err(
                        index,
                        &f("io"),
                        "give `io`, `sql`, `source` or several".into(),
                    ));
                }
            }
            Check::CaughtUp(c) => {
                self.site(index, &f("site"), &c.site)?;
                if let Some(w) = &c.with {
                    self.site(index, &f("with"), w)?;
                }
            }
            Check::Flags(c) => {
                self.site(index, &f("site"), &c.site)?;
                if c.read_only.is_none() && c.super_read_only.is_none() && c.offline_mode.is_none()
                {
                    return Err(self.err(
                        index,
                        &f("readOnly"),
                        "give at least one of readOnly, superReadOnly, offlineMode".into(),
                    ));
                }
            }
            Check::Gtid(c) => {
                self.gtid_source(index, &f("a"), &c.a)?;
                self.gtid_source(index, &f("b"), &c.b)?;
            }
            Check::GtidSubtract(c) => {
                self.site(index, &f("on"), &c.on)?;
                self.gtid_source(index, &f("a"), &c.a)?;
                self.gtid_source(index, &f("b"), &c.b)?;
                if let Some(e) = &c.equals {
                    self.gtid_source(index, &f("equals"), e)?;
                }
            }
            Check::Workload(c) => {
                if self.running.is_none() {
                    return Err(self.err(
                        index,
                        &format!("{field}.workload"),
                        "no workload runs here: add a startWorkload step before it".into(),
                    ));
                }
                if c.acknowledged.is_none() && c.failed.is_none() {
                    return Err(self.err(
                        index,
                        &f("acknowledged"),
                        "give `acknowledged`, `failed` or both".into(),
                    ));
                }
            }
            Check::Ledger(c) => {
                let name = c.ledger.as_deref().unwrap_or(crate::DEFAULT_WORKLOAD);
                if !self.ledgers.contains(name) {
                    return Err(self.err(
                        index,
                        &f("ledger"),
                        format!(
                            "no ledger {name:?} yet: a workload started with `as: {name}` must \
                             be stopped (stopWorkload) before its ledger is checked; ledgers so \
                             far: {:?}",
                            self.ledgers
                        ),
                    ));
                }
                if let Some(s) = &c.site {
                    self.site(index, &f("site"), s)?;
                }
                if let Some(d) = &c.lost_equals {
                    self.recorded(index, &f("lostEquals.of"), &d.of)?;
                    self.recorded(index, &f("lostEquals.minus"), &d.minus)?;
                }
                if let Some(d) = &c.lost_within {
                    self.recorded(index, &f("lostWithin.of"), &d.of)?;
                    self.recorded(index, &f("lostWithin.minus"), &d.minus)?;
                }
                if c.rpo_zero.is_none()
                    && c.lost_equals.is_none()
                    && c.lost_within.is_none()
                    && c.failures_at_least.is_empty()
                    && c.failures_at_most.is_empty()
                {
                    return Err(self.err(
                        index,
                        &f("rpoZero"),
                        "checks nothing: give rpoZero, lostEquals, lostWithin, failuresAtLeast or \
                         failuresAtMost"
                            .into(),
                    ));
                }
            }
            Check::Converged(c) => {
                for site in c.active_site.iter().chain(&c.not) {
                    self.site(index, &f("activeSite"), site)?;
                }
                for site in &c.except {
                    self.site(index, &f("except"), site)?;
                }
            }
            Check::Status(_) | Check::Event(_) | Check::Outcome(_) => {}
        }
        Ok(())
    }
}

fn validate(path: &Path, text: &str, drill: Drill) -> Result<LoadedDrill, DrillError> {
    let invalid = |field: &str, message: String| DrillError::Invalid {
        file: path.to_owned(),
        field: field.to_owned(),
        message,
    };
    let timeout = match &drill.timeout {
        Some(d) => duration(path, text, None, "timeout", d)?,
        None => StdDuration::from_secs(300),
    };
    let Some(Step::StartGroup(start)) = drill.steps.first() else {
        return Err(invalid(
            "steps[0]",
            "the first step must be `startGroup: {manifest: FILE}`".into(),
        ));
    };
    let manifest_path = path.parent().unwrap_or(Path::new(".")).join(&start.manifest);
    let (group, sites, primary) = load_manifest(path, &manifest_path)?;
    let operator = drill.requires.contains(&Requirement::Operator);
    let mut scope = Scope {
        file: path,
        text,
        sites: &sites,
        recorded: BTreeSet::new(),
        ledgers: BTreeSet::new(),
        running: None,
        operator,
        operators: if operator {
            BTreeSet::from([crate::DEFAULT_OPERATOR.to_owned()])
        } else {
            BTreeSet::new()
        },
    };
    for (index, step) in drill.steps.iter().enumerate() {
        let kind = step.kind();
        let field = |sub: &str| format!("{kind}.{sub}");
        match step {
            Step::StartGroup(_) if index > 0 => {
                return Err(scope.err(index, kind, "only the first step starts the group".into()));
            }
            Step::StartGroup(_) => {}
            Step::StartWorkload(w) => {
                if let Some(running) = &scope.running {
                    return Err(scope.err(
                        index,
                        kind,
                        format!("workload {running:?} still runs: stop it first (stopWorkload)"),
                    ));
                }
                if w.rate == Some(0) {
                    return Err(scope.err(index, &field("rate"), "must be at least 1".into()));
                }
                scope.running =
                    Some(w.name.clone().unwrap_or_else(|| crate::DEFAULT_WORKLOAD.to_owned()));
            }
            Step::StopWorkload(_) => match scope.running.take() {
                Some(name) => {
                    scope.ledgers.insert(name);
                }
                None => {
                    return Err(scope.err(index, kind, "no workload runs here".into()));
                }
            },
            Step::Kill(s)
            | Step::Fence(s)
            | Step::Unfence(s)
            | Step::Freeze(s)
            | Step::Thaw(s)
            | Step::Stop(s)
            | Step::Restart(s) => {
                scope.site(index, &field("site"), &s.site)?;
            }
            Step::Promote(s) => {
                if operator {
                    return Err(scope.err(
                        index,
                        kind,
                        "a hand promotion races the operator: drills with `requires: \
                         [operator]` fail over through the operator (annotate or a fault)"
                            .into(),
                    ));
                }
                scope.site(index, &field("site"), &s.site)?;
            }
            Step::Cut(l) | Step::Refuse(l) | Step::Heal(l) | Step::Reset(l) => {
                scope.link(index, &field("link"), &l.link)?;
            }
            Step::Delay(d) => scope.link(index, &field("link"), &d.link)?,
            Step::DelayApplier(d) => scope.site(index, &field("site"), &d.site)?,
            Step::ReplicateFrom(r) => {
                scope.site(index, &field("site"), &r.site)?;
                scope.site(index, &field("source"), &r.source)?;
                if r.site == r.source {
                    return Err(scope.err(
                        index,
                        &field("source"),
                        "a site cannot replicate from itself".into(),
                    ));
                }
            }
            Step::ErrantWrite(e) => {
                scope.site(index, &field("site"), &e.site)?;
                if let Some(name) = &e.name {
                    scope.recorded.insert(name.clone());
                }
            }
            Step::RecordGtids(r) => {
                scope.site(index, &field("site"), &r.site)?;
                scope.recorded.insert(r.name.clone());
            }
            Step::Sleep(s) => {
                duration(path, text, Some(index), &field("for"), &s.duration)?;
            }
            Step::StartOperator(o) | Step::KillOperator(o) => {
                if !operator {
                    return Err(scope.err(
                        index,
                        kind,
                        "operator replicas exist only in the operator's world: add \
                         `requires: [operator]`"
                            .into(),
                    ));
                }
                let name = o.name().to_owned();
                let starting = matches!(step, Step::StartOperator(_));
                if starting && !scope.operators.insert(name.clone()) {
                    return Err(scope.err(
                        index,
                        &field("name"),
                        format!("operator {name:?} already runs: kill it first (killOperator)"),
                    ));
                }
                if !starting && !scope.operators.remove(&name) {
                    return Err(scope.err(
                        index,
                        &field("name"),
                        format!(
                            "operator {name:?} does not run here; running: {:?}",
                            scope.operators
                        ),
                    ));
                }
            }
            Step::Annotate(_) | Step::Patch(_) => {
                if !operator {
                    return Err(scope.err(
                        index,
                        kind,
                        "changes an object in the lab API server, which only the operator's \
                         world has: add `requires: [operator]`"
                            .into(),
                    ));
                }
            }
            Step::Wait(w) => {
                duration(path, text, Some(index), &field("timeout"), &w.timeout)?;
                if matches!(w.until, Check::Ledger(_)) {
                    return Err(scope.err(
                        index,
                        &field("until.ledger"),
                        "a stopped ledger does not change: use `assert`".into(),
                    ));
                }
                scope.check(index, &field("until"), &w.until)?;
            }
            Step::Assert(c) => scope.check(index, kind, c)?,
        }
    }
    Ok(LoadedDrill { path: path.to_owned(), drill, manifest_path, group, sites, primary, timeout })
}

/// Reads a MysqlFailoverGroup manifest: its sites and the first PrimaryCandidate.
pub fn load_manifest(
    drill: &Path,
    manifest: &Path,
) -> Result<(MysqlFailoverGroup, Vec<String>, String), DrillError> {
    let bad = |message: String| DrillError::Manifest {
        file: drill.to_owned(),
        manifest: manifest.to_owned(),
        message,
    };
    let text = std::fs::read_to_string(manifest).map_err(|e| bad(format!("cannot read: {e}")))?;
    let de = serde_norway::Deserializer::from_str(&text);
    let group: MysqlFailoverGroup = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        bad(format!("{path}: {}", e.into_inner()))
    })?;
    let sites: Vec<String> = group.spec.sites.iter().map(|s| s.name.clone()).collect();
    let primary = group
        .spec
        .sites
        .iter()
        .find(|s| s.effective_role() == SiteRole::PrimaryCandidate)
        .map(|s| s.name.clone())
        .ok_or_else(|| bad("spec.sites has no PrimaryCandidate".into()))?;
    if sites.len() < 2 {
        return Err(bad("spec.sites needs at least two sites".into()));
    }
    Ok((group, sites, primary))
}
