//! The shape of [`crate::GroupView`] as the checker sees it: CEL in this workspace has no type
//! checker, so [`crate::check`] walks each parsed expression against these descriptions and
//! refuses a field the view does not have.

/// A value's type in the view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A boolean.
    Bool,
    /// A 64-bit integer.
    Int,
    /// A string.
    Str,
    /// A list of the element type.
    List(&'static Ty),
    /// An object with these fields.
    Object(&'static [Field]),
    /// Not tracked (a comprehension's accumulator, a function's result): fields are not checked.
    Any,
}

/// One field of an object type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// The field name as CEL reads it.
    pub name: &'static str,
    /// Its type.
    pub ty: Ty,
}

const fn f(name: &'static str, ty: Ty) -> Field {
    Field { name, ty }
}

const STRS: Ty = Ty::List(&Ty::Str);

/// `group.sites[]`.
pub const SITE: Ty = Ty::Object(&[
    f("name", Ty::Str),
    f("role", Ty::Str),
    f("state", Ty::Str),
    f("replicating", Ty::Bool),
    f("secondsBehindSource", Ty::Int),
    f("convergence", Ty::Str),
    f("convergenceReason", Ty::Str),
    f("recoveryState", Ty::Str),
    f("divergentGtid", Ty::Str),
    f("divergentTransactionCount", Ty::Int),
]);

/// `group.conditions[]`.
pub const CONDITION: Ty = Ty::Object(&[
    f("type", Ty::Str),
    f("status", Ty::Str),
    f("reason", Ty::Str),
    f("message", Ty::Str),
]);

const HOLD: Ty = Ty::Object(&[
    f("present", Ty::Bool),
    f("runId", Ty::Str),
    f("reason", Ty::Str),
    f("sourceSite", Ty::Str),
    f("targetSite", Ty::Str),
    f("ambiguousSites", STRS),
]);

const PLANNED_FAILOVER: Ty = Ty::Object(&[
    f("present", Ty::Bool),
    f("runId", Ty::Str),
    f("phase", Ty::Str),
    f("outcome", Ty::Str),
    f("reason", Ty::Str),
    f("sourceSite", Ty::Str),
    f("targetSite", Ty::Str),
]);

const RECLONE_QUEUE: Ty = Ty::Object(&[
    f("present", Ty::Bool),
    f("phase", Ty::Str),
    f("runId", Ty::Str),
    f("pending", STRS),
    f("failures", Ty::Int),
]);

const OFFLINE_FENCE: Ty =
    Ty::Object(&[f("present", Ty::Bool), f("site", Ty::Str), f("runId", Ty::Str)]);

const RESTORE: Ty = Ty::Object(&[
    f("present", Ty::Bool),
    f("phase", Ty::Str),
    f("reason", Ty::Str),
    f("message", Ty::Str),
    f("targetSite", Ty::Str),
]);

const RESTORE_IN_PLACE: Ty = Ty::Object(&[
    f("present", Ty::Bool),
    f("phase", Ty::Str),
    f("reason", Ty::Str),
    f("runId", Ty::Str),
    f("targetSite", Ty::Str),
]);

const ARCHIVE: Ty = Ty::Object(&[
    f("present", Ty::Bool),
    f("state", Ty::Str),
    f("reason", Ty::Str),
    f("oldestArchivedTime", Ty::Str),
    f("newestArchivedTime", Ty::Str),
    f("violationSites", STRS),
]);

const SCHEDULE: Ty =
    Ty::Object(&[f("name", Ty::Str), f("lastBackupPhase", Ty::Str), f("lastSuccessTime", Ty::Str)]);

const BACKUPS: Ty =
    Ty::Object(&[f("lastBackupTime", Ty::Str), f("schedules", Ty::List(&SCHEDULE))]);

/// `group`: the root variable of every runbook expression.
pub const GROUP_TYPE: Ty = Ty::Object(&[
    f("name", Ty::Str),
    f("namespace", Ty::Str),
    f("activeSite", Ty::Str),
    f("sites", Ty::List(&SITE)),
    f("conditions", Ty::List(&CONDITION)),
    f("hold", HOLD),
    f("plannedFailover", PLANNED_FAILOVER),
    f("recloneQueue", RECLONE_QUEUE),
    f("offlineFence", OFFLINE_FENCE),
    f("restore", RESTORE),
    f("restoreInPlace", RESTORE_IN_PLACE),
    f("lastFailoverTarget", Ty::Str),
    f("archive", ARCHIVE),
    f("backups", BACKUPS),
]);

/// The name of the root variable.
pub const ROOT: &str = "group";

/// The group as it was when the current step's action was confirmed (the same type as
/// [`ROOT`]); before that, and in checks and `appliesWhen`, the group itself. An `expect` tells
/// its own result from an earlier one with it (`group.plannedFailover.runId !=
/// before.plannedFailover.runId`).
pub const BEFORE: &str = "before";

impl Ty {
    /// The field `name` of an object type; `Some(Any)` for [`Ty::Any`]; `None` when the type
    /// has no such field.
    pub fn field(&self, name: &str) -> Option<Ty> {
        match self {
            Ty::Object(fields) => fields.iter().find(|f| f.name == name).map(|f| f.ty),
            Ty::Any => Some(Ty::Any),
            _ => None,
        }
    }

    /// The field names, for "expected one of" messages.
    pub fn field_names(&self) -> Vec<&'static str> {
        match self {
            Ty::Object(fields) => fields.iter().map(|f| f.name).collect(),
            _ => Vec::new(),
        }
    }

    /// A short name for messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Ty::Bool => "bool",
            Ty::Int => "int",
            Ty::Str => "string",
            Ty::List(_) => "list",
            Ty::Object(_) => "object",
            Ty::Any => "any",
        }
    }
}
