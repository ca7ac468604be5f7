//! Why a simulation stopped before its schedule ended.
//!
//! These are failures of the harness or of the core's contracts with its
//! callers (a malformed request, a machine rejecting a store's answer), not
//! invariant violations: a violation is a finding and is returned as data
//! ([`crate::check::Violation`]) so a search can go on and count them.

use std::fmt;

use loomfence_core::{AppendError, Error as CoreError, InputError};

/// A simulation step that could not be performed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// `drive::step` failed: the store refused the machine's request as
    /// malformed. That is a core bug in this setting, so it stops the run
    /// loudly. (The machine rejecting the store's answer is a finding,
    /// [`crate::check::Breach::Rejected`], reported with its schedule.)
    Step(CoreError),
    /// A store call made by a non-machine actor was refused as malformed.
    Input(InputError),
    /// An append was refused other than as stale: while the harness
    /// prepared a world, or in a way this harness does not know yet.
    Setup(AppendError),
    /// The simulated execution id was refused.
    Id(InputError),
    /// A schedule named an actor the world does not have: a harness bug
    /// (a replayed schedule against a different world).
    NoSuchActor {
        /// The index named.
        actor: usize,
        /// How many actors the world has.
        actors: usize,
    },
    /// A scenario named a label no actor has: a typo in a letter schedule.
    NoSuchLabel(char),
    /// A schedule ran past the step bound without every actor finishing.
    /// Every actor finishes in a bounded number of steps, so this means a
    /// machine stopped making progress.
    Runaway {
        /// Steps taken when the run was stopped.
        steps: usize,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Step(error) => write!(f, "a machine step failed: {error}"),
            SimError::Input(error) => write!(f, "a store call was refused: {error}"),
            SimError::Setup(error) => write!(f, "preparing the world failed: {error}"),
            SimError::Id(error) => write!(f, "the execution id was refused: {error}"),
            SimError::NoSuchActor { actor, actors } => {
                write!(f, "no actor {actor}: the world has {actors}")
            }
            SimError::NoSuchLabel(label) => write!(f, "no actor is labelled {label:?}"),
            SimError::Runaway { steps } => {
                write!(
                    f,
                    "no end after {steps} steps: an actor stopped progressing"
                )
            }
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimError::Step(error) => Some(error),
            SimError::Input(error) => Some(error),
            SimError::Setup(error) => Some(error),
            SimError::Id(error) => Some(error),
            SimError::NoSuchActor { .. } | SimError::NoSuchLabel(_) | SimError::Runaway { .. } => {
                None
            }
        }
    }
}

impl From<CoreError> for SimError {
    fn from(error: CoreError) -> Self {
        SimError::Step(error)
    }
}

impl From<InputError> for SimError {
    fn from(error: InputError) -> Self {
        SimError::Input(error)
    }
}

impl From<AppendError> for SimError {
    fn from(error: AppendError) -> Self {
        SimError::Setup(error)
    }
}
