//! What a sweep says about a child it cannot judge.

use crate::input::{ExecutionId, InputError};

/// An eligible execution the sweep kept because it cannot judge it. Every
/// sweep keeps it, and names it, until someone repairs or removes the data
/// that stands in the way.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Undecided {
    /// The execution, still there.
    pub execution_id: ExecutionId,
    /// Why it cannot be judged.
    pub reason: UndecidedReason,
}

/// Why a sweep cannot judge a child. Each is kept rather than guessed
/// about: guessing "free" may delete the one child a parent waits on. Each
/// has a stable [code](UndecidedReason::code) for hosts and reports. A
/// value of the sweep's report, not an error: the sweep goes on; its
/// `Display` words it for a report line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UndecidedReason {
    /// The store cannot read the child's own log, and retrying cannot help.
    UnreadableLog {
        /// The store's reason.
        detail: String,
    },
    /// The child's recorded parent (`payload.parent` of its
    /// `EXECUTION_STARTED`) is corrupt, so who may wait on it is unknown.
    InvalidLineage(InputError),
    /// The store cannot read a parent's log, and retrying cannot help.
    UnreadableParent {
        /// The parent.
        parent: ExecutionId,
        /// The store's reason.
        detail: String,
    },
    /// A parent's open park cannot be read (a hand-made or foreign event,
    /// a payload of the wrong shape), so whether it waits on the child is
    /// unknown.
    InvalidPark {
        /// The parent.
        parent: ExecutionId,
        /// What is wrong with the park.
        source: InputError,
    },
    /// A kernel kind this node does not know (stamped by a newer node)
    /// follows a parent's open park: whether it answers the park is
    /// unknown.
    UnknownKind {
        /// The parent.
        parent: ExecutionId,
        /// The event's sequence.
        sequence: u64,
        /// Its kind.
        kind: String,
    },
}

impl UndecidedReason {
    /// The stable code of this reason, for hosts and reports:
    /// `UNREADABLE_LOG`, `INVALID_LINEAGE`, `UNREADABLE_PARENT`,
    /// `INVALID_PARK` or `UNKNOWN_KIND`.
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            UndecidedReason::UnreadableLog { .. } => "UNREADABLE_LOG",
            UndecidedReason::InvalidLineage(_) => "INVALID_LINEAGE",
            UndecidedReason::UnreadableParent { .. } => "UNREADABLE_PARENT",
            UndecidedReason::InvalidPark { .. } => "INVALID_PARK",
            UndecidedReason::UnknownKind { .. } => "UNKNOWN_KIND",
        }
    }

    /// The parent the reason is about, `None` when it is about the child's
    /// own log.
    #[must_use]
    pub fn parent(&self) -> Option<&ExecutionId> {
        match self {
            UndecidedReason::UnreadableLog { .. } | UndecidedReason::InvalidLineage(_) => None,
            UndecidedReason::UnreadableParent { parent, .. }
            | UndecidedReason::InvalidPark { parent, .. }
            | UndecidedReason::UnknownKind { parent, .. } => Some(parent),
        }
    }
}

impl std::fmt::Display for UndecidedReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UndecidedReason::UnreadableLog { detail } => {
                write!(f, "its log cannot be read: {detail}")
            }
            UndecidedReason::InvalidLineage(source) => {
                write!(f, "its recorded parent is corrupt: {source}")
            }
            UndecidedReason::UnreadableParent { parent, detail } => {
                write!(f, "its parent {parent:?} cannot be read: {detail}")
            }
            UndecidedReason::InvalidPark { parent, source } => {
                write!(
                    f,
                    "the park of its parent {parent:?} is unreadable: {source}"
                )
            }
            UndecidedReason::UnknownKind {
                parent,
                sequence,
                kind,
            } => write!(
                f,
                "event {sequence} of its parent {parent:?}, after the open park, is {kind:?}, a kernel kind this node does not know"
            ),
        }
    }
}
