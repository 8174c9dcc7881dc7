//! The console's state: a domain snapshot plus UI state. Plain data.

use std::collections::BTreeMap;

use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use bloodraven_facts::verdict::{Severity, Verdict};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;

use super::action::DataEvent;

/// Namespace and name.
pub type Key = (String, String);

/// Which namespaces the console watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    Namespace(String),
    All,
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scope::Namespace(namespace) => f.write_str(namespace),
            Scope::All => f.write_str("all namespaces"),
        }
    }
}

/// The watched kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceKind {
    Groups,
    Backups,
    Verifications,
    Events,
}

impl SourceKind {
    pub const ALL: [SourceKind; 4] =
        [SourceKind::Groups, SourceKind::Backups, SourceKind::Verifications, SourceKind::Events];
}

/// A source's link to the API server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnectionStatus {
    Connecting,
    Connected,
    /// The watch failed at `since`; the next attempt is at `retry_at`. Data is stale since
    /// `since`.
    Reconnecting {
        since: Timestamp,
        retry_at: Timestamp,
        error: String,
    },
}

/// What is known about one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceState {
    pub status: ConnectionStatus,
    /// When the source last delivered data (a list or a change).
    pub updated: Option<Timestamp>,
}

impl Default for SourceState {
    fn default() -> Self {
        Self { status: ConnectionStatus::Connecting, updated: None }
    }
}

/// The screens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Screen {
    Fleet,
    Group { key: Key, tab: DetailTab },
}

/// The tabs of the group detail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DetailTab {
    Overview,
    PlannedFailover,
    Hold,
    Reclones,
    Restore,
    Archive,
    Backups,
    /// The runbook player: the runbooks that apply, ranked, and the walk of one.
    Runbooks,
}

impl DetailTab {
    pub const ALL: [DetailTab; 8] = [
        DetailTab::Overview,
        DetailTab::PlannedFailover,
        DetailTab::Hold,
        DetailTab::Reclones,
        DetailTab::Restore,
        DetailTab::Archive,
        DetailTab::Backups,
        DetailTab::Runbooks,
    ];

    pub fn title(self) -> &'static str {
        match self {
            DetailTab::Overview => "Overview",
            DetailTab::PlannedFailover => "Planned failover",
            DetailTab::Hold => "Hold",
            DetailTab::Reclones => "Reclone queue",
            DetailTab::Restore => "Restore",
            DetailTab::Archive => "Archive",
            DetailTab::Backups => "Backups",
            DetailTab::Runbooks => "Runbooks",
        }
    }

    pub fn index(self) -> usize {
        DetailTab::ALL.iter().position(|tab| *tab == self).unwrap_or(0)
    }
}

/// Input modes; each has its own keymap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Fleet,
    Detail,
    Filter,
    Command,
    Help,
    /// An overlay of guided operations is open ([`Guided::overlay`]): every key goes to it.
    Dialog,
}

/// Columns the fleet list sorts by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortColumn {
    Name,
    Active,
    Ready,
    Planned,
    LastFailover,
}

impl SortColumn {
    pub const ALL: [SortColumn; 5] = [
        SortColumn::Name,
        SortColumn::Active,
        SortColumn::Ready,
        SortColumn::Planned,
        SortColumn::LastFailover,
    ];

    pub fn title(self) -> &'static str {
        match self {
            SortColumn::Name => "name",
            SortColumn::Active => "active",
            SortColumn::Ready => "ready",
            SortColumn::Planned => "planned",
            SortColumn::LastFailover => "last failover",
        }
    }
}

/// UI state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ui {
    pub screens: Vec<Screen>,
    pub mode: Mode,
    /// The mode to return to from Filter, Command or Help.
    pub previous_mode: Mode,
    pub selected: usize,
    /// How far the detail panel is scrolled, in lines.
    pub scroll: u16,
    pub filter: String,
    pub filter_error: Option<String>,
    pub sort: SortColumn,
    pub descending: bool,
    pub command: String,
    /// A one-line message (command results, errors).
    pub message: Option<String>,
    pub no_color: bool,
    /// Show only the groups with a finding at Warning or above (`p`).
    pub problems_only: bool,
    /// How far long lines (commands, GTID sets) are scrolled to the right (`<` / `>`).
    pub hscroll: u16,
    /// The runbook player, per group: kept when the view is left, so a walk resumes.
    pub runbooks: BTreeMap<Key, RunbookUi>,
    /// The PITR workbench (`:pitr`), drawn on its group's archive panel until esc closes it.
    pub workbench: Option<crate::archive::workbench::Workbench>,
}

/// The runbook player's state for one group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunbookUi {
    /// The selected row of the ranked list.
    pub selected: usize,
    /// The runbook being walked (its id), `None` on the list.
    pub walking: Option<String>,
    /// Where each walk of this group stands, by runbook id.
    pub progress: BTreeMap<String, bloodraven_runbook::Progress>,
}

impl Default for Ui {
    fn default() -> Self {
        Self {
            screens: vec![Screen::Fleet],
            mode: Mode::Fleet,
            previous_mode: Mode::Fleet,
            selected: 0,
            scroll: 0,
            filter: String::new(),
            filter_error: None,
            sort: SortColumn::Name,
            descending: false,
            command: String::new(),
            message: None,
            no_color: false,
            problems_only: false,
            hscroll: 0,
            runbooks: BTreeMap::new(),
            workbench: None,
        }
    }
}

/// The data the console shows.
#[derive(Clone, Debug, Default)]
pub struct Data {
    /// Boxed: a decoded group is ~6.4 KB inline, and B-tree nodes keep room for 11 values, so
    /// inline values cost about half as much again at 10,000 groups (`scripts/bench/tui-rss`).
    pub groups: BTreeMap<Key, Box<MysqlFailoverGroup>>,
    /// Groups that did not decode, with the path and error.
    pub unreadable_groups: BTreeMap<Key, crate::decode::Unreadable>,
    pub backups: BTreeMap<Key, MysqlBackup>,
    pub verifications: BTreeMap<Key, MysqlBackupVerification>,
    pub events: BTreeMap<Key, Event>,
    /// Archive coverage per group, read when the archive panel is shown.
    pub archives: BTreeMap<Key, ArchiveState>,
    pub sources: BTreeMap<SourceKind, SourceState>,
    /// Each group's worst severity (`None`: healthy), kept by `update` so a frame counts the
    /// fleet's problems without judging every group (one group on its watch event, all on a
    /// tick or a backups change). A frame judges afresh when it does not cover the groups.
    pub worst: BTreeMap<Key, Option<Severity>>,
    /// The operator's leader Lease as last seen (`sources::operator_lease`).
    pub operator: OperatorLease,
}

/// What the console knows of the operator's leader Lease (read-only; `sources::OPERATOR_LEASE`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OperatorLease {
    /// Not read yet.
    #[default]
    Unknown,
    /// The Lease does not exist (no operator, or one run without leader election).
    Absent { namespace: String, name: String },
    /// It could not be read (forbidden, or the watch failed); `error` says why.
    Unreadable { namespace: String, name: String, error: String },
    /// The Lease as read.
    Seen {
        namespace: String,
        name: String,
        holder: Option<String>,
        /// `spec.renewTime`, else `spec.acquireTime`.
        renewed: Option<Timestamp>,
    },
}

impl OperatorLease {
    /// When the leader last renewed, when the Lease was read and says so (the verdict's input).
    pub fn renewed(&self) -> Option<Timestamp> {
        match self {
            OperatorLease::Seen { renewed, .. } => *renewed,
            _ => None,
        }
    }
}

/// What is known about one group's archive.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArchiveState {
    /// When the console last asked for it.
    pub requested: Option<Timestamp>,
    /// When the last answer arrived.
    pub updated: Option<Timestamp>,
    pub outcome: Option<crate::archive::ArchiveOutcome>,
}

impl ArchiveState {
    /// Whether a request is in flight.
    pub fn loading(&self) -> bool {
        self.requested
            .is_some_and(|requested| self.updated.is_none_or(|updated| updated < requested))
    }
}

/// Everything.
#[derive(Clone, Debug)]
pub struct State {
    pub now: Timestamp,
    pub context: String,
    pub scope: Scope,
    /// The generation of the context and scope whose data is shown: it moves on with every
    /// `:ctx` and `:ns`, and events of sources started for an older one are dropped.
    pub epoch: u64,
    pub data: Data,
    /// While frozen the display keeps its data and clock; changes queue here.
    pub frozen: Option<Vec<DataEvent>>,
    pub ui: Ui,
    /// The shipped runbooks (compiled in), checked once at start.
    pub runbooks: std::sync::Arc<Vec<bloodraven_runbook::Runbook>>,
    /// Guided operations: the write switch and the open overlay.
    pub guided: Guided,
}

/// Whether the session writes, as the header shows it and the runtime's client obeys it (the
/// runtime mirrors `on` into its `client::WriteSwitch` on every [`super::action::Effect::SetWrite`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteMode {
    /// Write mode is on: confirmed dialogs may send.
    pub on: bool,
    /// The runtime holds a client that can write once the switch is on (`false`: the session
    /// was started without one, and `W` says so).
    pub capable: bool,
    /// The XDG config's contexts pinned read-only (`W` and `--write` refuse them).
    pub config: crate::ops::config::Config,
    /// The audit journal's folder, resolved (`None`: none could be resolved); a restore into
    /// a new group saves its manifest for review under it, and the dialog names that file.
    pub journal_dir: Option<std::path::PathBuf>,
}

impl WriteMode {
    /// The pattern that pins `context` read-only, if any.
    pub fn pinned_by<'a>(&'a self, context: &str) -> Option<&'a str> {
        self.config.pinned_by(context)
    }
}

/// A guided operation proposed from a screen or a runbook step: it opens the confirm dialog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proposal {
    pub op: crate::ops::WriteOp,
    pub origin: crate::ops::confirm::Origin,
}

/// The guided operations that fit the screen, to choose one from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picker {
    /// Where the choices came from (the picker's title).
    pub title: String,
    pub choices: Vec<Proposal>,
    pub selected: usize,
}

/// An open confirm dialog, numbered so that late answers of an older one are dropped.
#[derive(Clone, Debug)]
pub struct GuidedDialog {
    pub serial: u64,
    pub dialog: crate::ops::confirm::ConfirmDialog,
    /// When it was sent (the follow-through is shown from then on).
    pub sent_at: Option<Timestamp>,
}

/// What is drawn over the screen; keys go to it.
#[derive(Clone, Debug)]
pub enum Overlay {
    /// "Switch this session to write mode?" (`y` confirms).
    WriteSwitch,
    Picker(Picker),
    Dialog(Box<GuidedDialog>),
}

/// The guided operations' state.
#[derive(Clone, Debug, Default)]
pub struct Guided {
    pub write: WriteMode,
    pub overlay: Option<Overlay>,
    /// The serial of the last dialog opened.
    pub serial: u64,
}

impl Guided {
    /// The open confirm dialog, if any.
    pub fn dialog(&self) -> Option<&GuidedDialog> {
        match &self.overlay {
            Some(Overlay::Dialog(dialog)) => Some(dialog),
            _ => None,
        }
    }
}

impl State {
    pub fn new(now: Timestamp, context: impl Into<String>, scope: Scope) -> Self {
        let mut data = Data::default();
        for source in SourceKind::ALL {
            data.sources.insert(source, SourceState::default());
        }
        let mut ui = Ui::default();
        let runbooks = match bloodraven_runbook::shipped() {
            Ok(runbooks) => runbooks,
            Err(error) => {
                ui.message = Some(format!("runbooks not loaded: {error}"));
                Vec::new()
            }
        };
        Self {
            now,
            context: context.into(),
            scope,
            epoch: 0,
            data,
            frozen: None,
            ui,
            runbooks: std::sync::Arc::new(runbooks),
            guided: Guided::default(),
        }
    }

    /// The current screen.
    pub fn screen(&self) -> &Screen {
        self.ui.screens.last().unwrap_or(&Screen::Fleet)
    }

    /// The source's state.
    pub fn source(&self, kind: SourceKind) -> SourceState {
        self.data.sources.get(&kind).cloned().unwrap_or_default()
    }

    /// The fleet list as shown: filtered by the regex (on `namespace/name`, active site and
    /// the planned phase) and sorted.
    pub fn visible_groups(&self) -> Vec<&MysqlFailoverGroup> {
        let filter = if self.ui.filter.is_empty() {
            None
        } else {
            regex::RegexBuilder::new(&self.ui.filter).case_insensitive(true).build().ok()
        };
        let judge = self.ui.problems_only || filter.is_some();
        let (backups, verifications) = if judge { self.related() } else { (vec![], vec![]) };
        let mut groups: Vec<&MysqlFailoverGroup> = self
            .data
            .groups
            .iter()
            .filter(|(key, group)| {
                if !judge {
                    return true;
                }
                let verdict = crate::verdict::of_with_lease(
                    group,
                    &backups,
                    &verifications,
                    self.data.operator.renewed(),
                    self.now,
                );
                if self.ui.problems_only && !verdict.at_least(Severity::Warning) {
                    return false;
                }
                filter.as_ref().is_none_or(|filter| {
                    // Every column the fleet shows, and the verdict's word and causes.
                    filter.is_match(&format!("{}/{}", key.0, key.1))
                        || fleet_cells(group, &verdict, self.now)
                            .iter()
                            .any(|cell| filter.is_match(cell))
                        || (crate::summary::held(group) && filter.is_match("held"))
                        || verdict.findings.iter().any(|finding| {
                            filter.is_match(finding.kind.as_str())
                                || filter.is_match(&finding.cause)
                        })
                })
            })
            .map(|(_, group)| &**group)
            .collect();
        let name = |group: &&MysqlFailoverGroup| {
            (group.metadata.namespace.clone(), group.metadata.name.clone())
        };
        match self.ui.sort {
            // The map is already in namespace/name order.
            SortColumn::Name => {}
            SortColumn::Active => {
                groups.sort_by_cached_key(|group| (crate::summary::active_site(group), name(group)))
            }
            SortColumn::Ready => groups
                .sort_by_cached_key(|group| (crate::summary::ready_with_hold(group), name(group))),
            SortColumn::Planned => groups
                .sort_by_cached_key(|group| (crate::summary::planned_phase(group), name(group))),
            SortColumn::LastFailover => groups.sort_by_cached_key(|group| {
                let time = group
                    .status
                    .as_ref()
                    .and_then(|status| status.last_failover.as_ref())
                    .and_then(|last| last.time.as_ref())
                    .map(|time| std::cmp::Reverse(time.0.as_second()));
                (time, name(group))
            }),
        }
        if self.ui.descending {
            groups.reverse();
        }
        groups
    }

    /// The group a detail screen shows.
    pub fn group(&self, key: &Key) -> Option<&MysqlFailoverGroup> {
        self.data.groups.get(key).map(|group| &**group)
    }

    /// The backups and verifications the verdicts read (copied once per call).
    pub fn related(&self) -> (Vec<MysqlBackup>, Vec<MysqlBackupVerification>) {
        (
            self.data.backups.values().cloned().collect(),
            self.data.verifications.values().cloned().collect(),
        )
    }

    /// The runbooks that apply to a group, most severe first (the runbook player's list).
    pub fn applicable_runbooks(
        &self,
        group: &MysqlFailoverGroup,
    ) -> bloodraven_runbook::Ranked<'_> {
        bloodraven_runbook::applicable(&self.runbooks, &bloodraven_runbook::GroupView::of(group))
    }

    /// The verdict on one group, from everything the console holds.
    pub fn verdict(&self, group: &MysqlFailoverGroup) -> Verdict {
        let (backups, verifications) = self.related();
        let lease = self.data.operator.renewed();
        crate::verdict::of_with_lease(group, &backups, &verifications, lease, self.now)
    }
}

/// The fleet row's cells, in [`FLEET_COLUMNS`] order: what the table shows and the filter
/// matches.
pub fn fleet_cells(group: &MysqlFailoverGroup, verdict: &Verdict, now: Timestamp) -> [String; 12] {
    use crate::summary;
    use bloodraven_crd::ConditionType;
    [
        group.metadata.namespace.clone().unwrap_or_default(),
        group.metadata.name.clone().unwrap_or_default(),
        verdict.worst().map_or_else(
            || "ok".to_owned(),
            |worst| format!("{} {}", worst.marker(), worst.as_str()),
        ),
        summary::active_site(group),
        summary::site_counts(group).to_string(),
        summary::condition_status(group, &ConditionType::Ready),
        if summary::held(group) { "+held".to_owned() } else { String::new() },
        summary::planned_phase(group),
        summary::last_failover_age(group, now),
        summary::reclone_queue(group),
        summary::restore_phase(group),
        verdict.archive.state.clone(),
    ]
}

/// Fleet-list columns and their least widths, in the order they are dropped when the
/// terminal is narrow (last first).
pub const FLEET_COLUMNS: [(&str, u16); 12] = [
    ("NAMESPACE", 9),
    ("NAME", 10),
    ("VERDICT", 13),
    ("ACTIVE", 6),
    ("SITES", 9),
    ("READY", 5),
    ("HELD", 5),
    ("PLANNED", 23),
    ("LAST-FO", 7),
    ("RECLONES", 11),
    ("RESTORE", 14),
    ("ARCHIVE", 8),
];

/// The key of an object.
pub fn key_of(metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Key {
    (metadata.namespace.clone().unwrap_or_default(), metadata.name.clone().unwrap_or_default())
}
