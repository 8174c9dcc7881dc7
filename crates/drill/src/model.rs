//! The drill file: what a drill says, as serde types. The JSON Schema in `schema/drill.schema.json`
//! is generated from these (`schema::drill_schema`), so the documentation cannot drift.

use std::path::PathBuf;

use bloodraven_crd::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One drill: a named timeline of steps run against a live-lab group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Drill {
    /// A short name (shown in the report).
    pub name: String,
    /// What the drill proves, for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What the drill needs beyond MySQL sites and the fault proxy. `operator`: the runner
    /// refuses the drill until an operator binary is given (`--operator-bin`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<Requirement>,
    /// An upper bound on the whole drill (default 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// The timeline, run in order. The first step is `startGroup`.
    pub steps: Vec<Step>,
}

/// Something a drill needs that the lab may not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Requirement {
    /// The operator process (it creates the sites from the MysqlFailoverGroup).
    Operator,
}

/// One step of the timeline. Written as a one-key map: `- kill: {site: iad}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Step {
    /// Start the group of a MysqlFailoverGroup manifest. Without the operator the runner starts
    /// the sites itself (a star, the first PrimaryCandidate primary); with `requires:
    /// [operator]` it applies the manifest and waits for the operator.
    StartGroup(StartGroup),
    /// Start the application workload through `app:primary` (the `-primary` Service).
    StartWorkload(StartWorkload),
    /// Stop the workload and keep its commit ledger under its name for `ledger` checks.
    StopWorkload(Empty),
    /// SIGKILL a site's mysqld.
    Kill(SiteRef),
    /// SIGSTOP a site's mysqld (the hung server).
    Freeze(SiteRef),
    /// SIGCONT a frozen site.
    Thaw(SiteRef),
    /// Stop a site's mysqld cleanly.
    Stop(SiteRef),
    /// Start a site's mysqld again (after stop or kill) on the same data directory.
    Restart(SiteRef),
    /// Blackhole a link: connections are accepted and never forwarded (the partition that hangs).
    Cut(LinkRef),
    /// Refuse a link: connects fail at once, live connections are reset.
    Refuse(LinkRef),
    /// Delay a link's bytes, each direction.
    Delay(DelayLink),
    /// Let a link pass again (held bytes flow on).
    Heal(LinkRef),
    /// Reset every live connection of a link.
    Reset(LinkRef),
    /// Write one row on a follower with `super_read_only` lifted for that moment: an errant
    /// transaction. Its GTID is kept under `as`.
    ErrantWrite(ErrantWrite),
    /// Delay a follower's applier (`CHANGE REPLICATION SOURCE TO SOURCE_DELAY = seconds`, the
    /// applier stopped and started around it; `0` removes the delay): the follower lags while
    /// both replication threads run and report healthy.
    DelayApplier(DelayApplier),
    /// Fence a site by hand: `SET GLOBAL super_read_only = ON` (writes there now fail).
    Fence(SiteRef),
    /// Point a site's replication at another site by hand (`CHANGE REPLICATION SOURCE TO`
    /// with auto-positioning, `START REPLICA`): a chained follower when `source` is a replica.
    ReplicateFrom(ReplicateFrom),
    /// Make a site writable by hand (`super_read_only = OFF`, `read_only = OFF`): a second
    /// writer (split brain) or a writable reader, as a human mistake makes one.
    Unfence(SiteRef),
    /// Promote a site by hand (fence the old primary if it answers, make the site writable,
    /// repoint `app:primary` and the other followers). Drills without the operator only.
    Promote(SiteRef),
    /// Keep a site's `@@gtid_executed` under a name, for `ledger.lostEquals` and `gtid` checks.
    RecordGtids(RecordGtids),
    /// Do nothing for a while (scaled timings: `2s`).
    Sleep(Sleep),
    /// Annotate an object as a human would (kubectl annotate). Needs the operator's world.
    Annotate(Annotate),
    /// Merge-patch an object as a human would (kubectl patch --type merge). Needs the
    /// operator's world.
    Patch(PatchObject),
    /// Start an operator replica (operator drills; `startGroup` starts the first, named
    /// `operator`). Every replica runs leader election on one Lease: only its holder acts.
    StartOperator(OperatorRef),
    /// Kill an operator replica (SIGKILL of the process, or the end of its task): it leaves
    /// its Lease unrenewed, as a crashed pod does.
    KillOperator(OperatorRef),
    /// Poll a check until it holds; fail with "waited for X, last seen Y" after `timeout`.
    Wait(Wait),
    /// Check now; fail with what was seen.
    Assert(Check),
}

/// No fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// An operator replica by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperatorRef {
    /// The replica's name (its identity in the Lease and in Events; default `operator`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl OperatorRef {
    /// The name, or the default `operator`.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(crate::DEFAULT_OPERATOR)
    }
}

/// `startGroup`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartGroup {
    /// A MysqlFailoverGroup YAML file, relative to the drill file.
    pub manifest: PathBuf,
}

/// `startWorkload`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartWorkload {
    /// Writes per second (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10_000))]
    pub rate: Option<u32>,
    /// The first key written (default 1); use distinct ranges for successive workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_key: Option<u64>,
    /// The name its ledger is kept under when it stops (default `workload`).
    #[serde(rename = "as", default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it dials (default `service`: the `-primary` Service, link `app:primary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<WorkloadVia>,
}

/// What a workload dials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WorkloadVia {
    /// The `-primary` Service (link `app:primary`).
    Service,
    /// The group's `spec.dns.hostname`, as the lab's resolver applies the operator's
    /// DNSEndpoint (link `app:dns`; operator drills only).
    Dns,
}

/// A site of the group, by its name in the manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SiteRef {
    /// The site name.
    pub site: String,
}

/// A fault-proxy link of the group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LinkRef {
    /// `repl:<follower>-><source>` (replication), `app:<site>`, `operator:<site>`,
    /// `sidecar:<site>` (clients of a site), or `app:primary` (the `-primary` Service).
    pub link: String,
}

/// `delay`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DelayLink {
    /// The link (see `cut`).
    pub link: String,
    /// Milliseconds added in each direction.
    pub ms: u64,
}

/// `delayApplier`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DelayApplier {
    /// The follower.
    pub site: String,
    /// Seconds each transaction waits after the source committed it before it is applied.
    pub seconds: u32,
}

/// `replicateFrom`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicateFrom {
    /// The follower.
    pub site: String,
    /// The site it replicates from (through the fault proxy).
    pub source: String,
}

/// `errantWrite`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrantWrite {
    /// The follower written on.
    pub site: String,
    /// The key of the row written into `app.ledger`.
    pub key: u64,
    /// The name its GTID is kept under.
    #[serde(rename = "as", default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `recordGtids`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordGtids {
    /// The site read.
    pub site: String,
    /// The name the set is kept under.
    #[serde(rename = "as")]
    pub name: String,
}

/// `sleep`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sleep {
    /// How long (`500ms`, `2s`).
    #[serde(rename = "for")]
    pub duration: Duration,
}

/// An object in the lab API server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectRef {
    /// The kind (default `MysqlFailoverGroup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The name (default: the group's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `annotate`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Annotate {
    /// The object (default: the group).
    #[serde(default)]
    pub object: ObjectRef,
    /// The annotation key.
    pub key: String,
    /// The value; absent removes the annotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// `patch`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchObject {
    /// The object (default: the group).
    #[serde(default)]
    pub object: ObjectRef,
    /// A JSON merge patch.
    pub merge: serde_json::Value,
}

/// `wait`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Wait {
    /// The check polled until it holds.
    pub until: Check,
    /// How long to poll before failing (`30s`).
    pub timeout: Duration,
}

/// A condition on the world, polled by `wait` or checked once by `assert`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Check {
    /// A follower's replication threads as `SHOW REPLICA STATUS` reports them.
    Replica(ReplicaCheck),
    /// A site has executed everything another site (default: the primary) has.
    CaughtUp(CaughtUp),
    /// A site's `read_only` / `super_read_only` / `offline_mode`.
    Flags(FlagsCheck),
    /// A relation between two GTID sets (sites or recorded names).
    Gtid(GtidCheck),
    /// `GTID_SUBTRACT(a, b)` computed by MySQL on a site.
    GtidSubtract(GtidSubtract),
    /// The running workload's acknowledged or failed writes since this step began.
    Workload(WorkloadCheck),
    /// A stopped workload's ledger verified against a site.
    Ledger(LedgerCheck),
    /// A status path of an object in the lab API server equals a value. Needs the operator.
    Status(StatusCheck),
    /// An Event with this reason exists for the group. Needs the operator.
    Event(EventCheck),
    /// The last planned failover's outcome and reason. Needs the operator.
    Outcome(OutcomeCheck),
    /// The operator's status says the group converged: `activeSite` set (and equal to
    /// `activeSite` when given, different from `not`), Ready, the active site writable, every
    /// other answering site `Converged` and replicating. Needs the operator.
    Converged(ConvergedCheck),
}

/// `converged`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConvergedCheck {
    /// The active site expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_site: Option<String>,
    /// A site that must not be the active site (the one taken away).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not: Option<String>,
    /// Sites left out of the follower check (down on purpose).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub except: Vec<String>,
}

/// `replica`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaCheck {
    /// The follower.
    pub site: String,
    /// `Replica_IO_Running`: `Yes`, `No` or `Connecting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<ThreadState>,
    /// `Replica_SQL_Running`: `Yes` or `No`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<ThreadState>,
    /// The site it replicates from (its link's port is `Source_Port`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A replication thread's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ThreadState {
    /// Running.
    Yes,
    /// Stopped.
    No,
    /// Trying to (re)connect to its source.
    Connecting,
}

impl ThreadState {
    /// The text MySQL reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Yes => "Yes",
            Self::No => "No",
            Self::Connecting => "Connecting",
        }
    }
}

/// `caughtUp`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaughtUp {
    /// The follower.
    pub site: String,
    /// The site it must have caught up with (default: the current primary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with: Option<String>,
}

/// `flags`: each given flag must have the given value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlagsCheck {
    /// The site.
    pub site: String,
    /// `@@read_only`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// `@@super_read_only`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub super_read_only: Option<bool>,
    /// `@@offline_mode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offline_mode: Option<bool>,
}

/// A GTID set: a site's `@@gtid_executed` now, or a set kept by `recordGtids`/`errantWrite`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum GtidSource {
    /// A site's `@@gtid_executed`, read when the check runs.
    Site(String),
    /// A set kept earlier under this name.
    Recorded(String),
}

/// `gtid`: `a <relation> b`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GtidCheck {
    /// The left-hand set.
    pub a: GtidSource,
    /// The relation.
    pub relation: GtidRelation,
    /// The right-hand set.
    pub b: GtidSource,
}

/// How two GTID sets relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum GtidRelation {
    /// Every GTID of `a` is in `b`.
    Subset,
    /// `a` is not a subset of `b` (it has a GTID `b` lacks).
    NotSubset,
    /// Every GTID of `b` is in `a`.
    Superset,
    /// The same set.
    Equal,
}

/// `gtidSubtract`: MySQL's `GTID_SUBTRACT(a, b)`, run on `on`, equals an expected set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GtidSubtract {
    /// The site whose server computes it.
    pub on: String,
    /// The minuend.
    pub a: GtidSource,
    /// The subtrahend.
    pub b: GtidSource,
    /// The expected result (`empty` if absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<GtidSource>,
}

/// `workload`: counts since the step began (`wait`) or in all (`assert`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadCheck {
    /// At least this many more acknowledged writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<u64>,
    /// At least this many more failed writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<u64>,
}

/// `ledger`: verify a stopped workload's ledger against a site's `app.ledger` rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LedgerCheck {
    /// The ledger's name (default `workload`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<String>,
    /// The site whose rows are checked (default: the current primary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// Every acknowledged write is on the site (true) or some are lost (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpo_zero: Option<bool>,
    /// The lost writes' GTIDs are exactly `of` minus `minus` (both recorded names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_equals: Option<GtidDifference>,
    /// Every lost write's GTID is in `of` minus `minus`: what an async failover may lose (the
    /// old primary had it, the promoted site did not), and nothing else. The lost writes are
    /// listed in the report either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_within: Option<GtidDifference>,
    /// Failed writes by kind, at least this many each (`connection`, `timeout`,
    /// `superReadOnly`, `readOnly`, `offlineMode`, `server`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub failures_at_least: std::collections::BTreeMap<FailureKindName, usize>,
    /// Failed writes by kind, at most this many each.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub failures_at_most: std::collections::BTreeMap<FailureKindName, usize>,
}

/// `of - minus`, both recorded names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GtidDifference {
    /// A recorded set.
    pub of: String,
    /// A recorded set.
    pub minus: String,
}

/// Why a write failed, as the ledger classifies it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum FailureKindName {
    /// Rejected because of `super_read_only`.
    SuperReadOnly,
    /// Rejected because of `read_only`.
    ReadOnly,
    /// Rejected because of `offline_mode`.
    OfflineMode,
    /// The connection failed (refused, reset).
    Connection,
    /// No answer in time (a hung server, a blackholed link).
    Timeout,
    /// Any other server error.
    Server,
}

/// `status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusCheck {
    /// The object (default: the group).
    #[serde(default)]
    pub object: ObjectRef,
    /// A dotted path such as `status.activeSite`.
    pub path: String,
    /// The expected value (compared as JSON).
    pub equals: serde_json::Value,
}

/// `event`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventCheck {
    /// The Event reason.
    pub reason: String,
    /// Holds when no such Event exists (default false: holds when one exists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<bool>,
    /// Only Events reported by this operator replica (`reportingInstance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
}

/// `outcome`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutcomeCheck {
    /// `Succeeded` or `Failed`, as `status.plannedFailover` reports.
    pub outcome: String,
    /// The reason, when the outcome has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Step {
    /// The step's key in the file (`kill`, `wait`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::StartGroup(_) => "startGroup",
            Self::StartWorkload(_) => "startWorkload",
            Self::StopWorkload(_) => "stopWorkload",
            Self::Kill(_) => "kill",
            Self::Freeze(_) => "freeze",
            Self::Thaw(_) => "thaw",
            Self::Stop(_) => "stop",
            Self::Restart(_) => "restart",
            Self::Cut(_) => "cut",
            Self::Refuse(_) => "refuse",
            Self::Delay(_) => "delay",
            Self::Heal(_) => "heal",
            Self::Reset(_) => "reset",
            Self::ErrantWrite(_) => "errantWrite",
            Self::DelayApplier(_) => "delayApplier",
            Self::Fence(_) => "fence",
            Self::Unfence(_) => "unfence",
            Self::ReplicateFrom(_) => "replicateFrom",
            Self::StartOperator(_) => "startOperator",
            Self::KillOperator(_) => "killOperator",
            Self::Promote(_) => "promote",
            Self::RecordGtids(_) => "recordGtids",
            Self::Sleep(_) => "sleep",
            Self::Annotate(_) => "annotate",
            Self::Patch(_) => "patch",
            Self::Wait(_) => "wait",
            Self::Assert(_) => "assert",
        }
    }
}

impl Check {
    /// The check's key in the file.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Replica(_) => "replica",
            Self::CaughtUp(_) => "caughtUp",
            Self::Flags(_) => "flags",
            Self::Gtid(_) => "gtid",
            Self::GtidSubtract(_) => "gtidSubtract",
            Self::Workload(_) => "workload",
            Self::Ledger(_) => "ledger",
            Self::Status(_) => "status",
            Self::Event(_) => "event",
            Self::Outcome(_) => "outcome",
            Self::Converged(_) => "converged",
        }
    }

    /// Whether the check reads the lab API server (the operator's world).
    pub fn needs_operator(&self) -> bool {
        matches!(self, Self::Status(_) | Self::Event(_) | Self::Outcome(_) | Self::Converged(_))
    }
}
