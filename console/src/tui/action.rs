//! Actions in, effects out.

use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;

use super::state::{ConnectionStatus, Key, Proposal, Scope, SourceKind};
use crate::archive::{ArchiveOutcome, ArchiveRequest};
use crate::decode::Unreadable;
use crate::ops::send::{Access, Prepared, Sent};

/// Something the user asked for (after the keymap).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Intent {
    Quit,
    Up,
    Down,
    Top,
    Bottom,
    /// A page up / down (PgUp, PgDn) or half a page (ctrl-u, ctrl-d).
    PageUp,
    PageDown,
    HalfPageUp,
    HalfPageDown,
    /// Show only the groups with a problem (a finding at Warning or above), or all.
    ToggleProblems,
    /// Clear an applied filter (esc on the fleet).
    ClearFilter,
    /// Scroll long lines (commands, GTID sets) left or right.
    ScrollLeft,
    ScrollRight,
    Open,
    Back,
    NextTab,
    PreviousTab,
    Tab(usize),
    StartFilter,
    StartCommand,
    CycleSort,
    ReverseSort,
    ToggleFreeze,
    ToggleHelp,
    /// A character typed into the filter or command line.
    Type(char),
    Erase,
    Submit,
    Cancel,
    /// `W`: switch write mode on (after its own confirmation) or back off.
    ToggleWrite,
    /// `a`: the guided operations that fit the screen.
    Guided,
    /// A key for the open overlay (the confirm dialog, the picker, the write switch).
    Dialog(crate::ops::confirm::DialogKey),
}

/// One change a source saw.
#[derive(Clone, Debug)]
pub enum Change<K> {
    /// A full (re)list: the objects replace what was known.
    Restarted(Vec<K>),
    Applied(Box<K>),
    Deleted(Box<K>),
}

/// What a source reports: owned snapshots, no UI state.
#[derive(Clone, Debug)]
pub enum DataEvent {
    Groups(Change<MysqlFailoverGroup>),
    /// A full (re)list of groups as the sources send it: like `Groups(Restarted)`, boxed as
    /// [`super::state::Data::groups`] keeps them, so 10,000 groups are never all moved.
    GroupsListed(Vec<Box<MysqlFailoverGroup>>),
    /// Groups that did not decode ([`crate::decode`]): listed, never hiding the rest. An
    /// object moves between `Groups` and `UnreadableGroups` as it is rewritten.
    UnreadableGroups(Change<Unreadable>),
    Backups(Change<MysqlBackup>),
    Verifications(Change<MysqlBackupVerification>),
    Events(Change<Event>),
    Connection {
        source: SourceKind,
        status: ConnectionStatus,
        at: Timestamp,
    },
    /// The operator's leader Lease as read (or why it was not).
    OperatorLease(super::state::OperatorLease),
    /// The archive source read a group's archive.
    Archive {
        key: Key,
        outcome: ArchiveOutcome,
        at: Timestamp,
    },
}

/// Everything `update` handles.
#[derive(Clone, Debug)]
pub enum Action {
    Input(Intent),
    /// A data event of the current context and scope (tests and benchmarks feed the state
    /// with these).
    Data(DataEvent),
    /// A data event as the runtime's sources send it, tagged with the epoch (context and
    /// scope generation, [`super::state::State::epoch`]) the source was started for; `update`
    /// drops it when the epoch is not the current one.
    Sourced {
        epoch: u64,
        event: DataEvent,
    },
    /// The read-only client refused a request (method and path); shown in the status line.
    Refused(String),
    /// The clock moved on.
    Tick(Timestamp),
    /// The terminal changed size.
    Resize,
    /// The runtime rebuilt the client for a kubeconfig context (`:ctx <name>`), or could not.
    ContextSwitched(Result<String, String>),
    /// A guided operation proposed by a screen or a runbook step: opens its confirm dialog
    /// (nothing is sent from here).
    Propose(Proposal),
    /// The fresh read, preflight and (in write mode) identity and RBAC of dialog `serial`.
    Reviewed {
        serial: u64,
        result: Result<Box<(Prepared, Option<Access>)>, String>,
    },
    /// What sending dialog `serial`'s operation gave.
    Sent {
        serial: u64,
        outcome: SendOutcome,
    },
}

/// The answer to [`Effect::Send`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendOutcome {
    Sent(Sent),
    /// The object changed since it was read (409, or a failed JSON-patch test): nothing was
    /// written; re-read and ask again.
    Conflict(String),
    /// Not sent, or refused by the API server.
    Failed(String),
}

/// What `update` asks the runtime to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Draw a new frame.
    Render,
    /// Restart the sources for another namespace scope.
    Watch(Scope),
    /// Read a group's archive (list and get only) and report its coverage.
    LoadArchive {
        key: Key,
        request: ArchiveRequest,
    },
    /// Rebuild the client from this kubeconfig context and restart the sources.
    SwitchContext(String),
    /// Read what `op` is decided on afresh (uncached GET), re-run its preflight and, when
    /// `access`, ask who the console is and whether RBAC lets it (the two self-reviews);
    /// answer with [`Action::Reviewed`].
    Review {
        serial: u64,
        op: crate::ops::WriteOp,
        access: bool,
    },
    /// Send a confirmed operation (journal before and after); answer with [`Action::Sent`].
    /// Emitted only from the confirm dialog's Confirm outcome, in write mode.
    Send {
        serial: u64,
        prepared: Box<Prepared>,
        user: Option<String>,
        origin: crate::ops::confirm::Origin,
    },
    /// Set the runtime's write switch (the client refuses every write while it is off).
    SetWrite(bool),
    Quit,
}
