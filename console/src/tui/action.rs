//! Actions in, effects out.

use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;

use super::state::{ConnectionStatus, Key, Scope, SourceKind};
use crate::archive::{ArchiveOutcome, ArchiveRequest};
use crate::decode::Unreadable;

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
}

/// What `update` asks the runtime to do.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    Quit,
}
