//! Why a re-drive simulation stopped before its run ended.
//!
//! As in the resume simulation ([`crate::error::SimError`]), these are
//! harness failures or core contracts broken towards their caller (a
//! malformed request, a fire machine refusing an answer it asked for), never
//! invariant violations: those are findings, returned as
//! [`super::check::Breach`] values so a sweep can count them.

use std::fmt;

use loomfence_core::drive::StepError;
use loomfence_core::{
    AppendError, ContractError, InputError,
    log::IdError,
    redrive::DrawError,
    supervise::SuperviseError,
    tick::TickError,
    timer::{FireError, TimerInputError},
};

/// A step of the re-drive world that could not be performed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RedriveSimError {
    /// A resume machine's request was refused by the store as malformed.
    Step(StepError),
    /// A store call made by a non-machine actor was refused as malformed.
    Input(InputError),
    /// An append by the harness (setup, a child, a body) failed other than
    /// as stale.
    Append(AppendError),
    /// A timer table call was refused as malformed.
    Timer(TimerInputError),
    /// The fire machine refused an answer or a row: a harness bug.
    Fire(FireError),
    /// The tick machine refused an answer: a harness bug.
    Tick(TickError),
    /// The supervise machine refused an answer: a harness bug.
    Supervise(SuperviseError),
    /// A random draw outside `[0, 1)`: a harness bug.
    Draw(DrawError),
    /// An execution or node id was refused.
    Id(IdError),
    /// A machine refused the log the harness read for it.
    Machine(ContractError),
    /// The harness lost track of its own bookkeeping (a row it claimed is not
    /// in its ledger, say).
    Ledger(&'static str),
    /// A run went past the step bound without quiescing: something stopped
    /// making progress, or keeps re-arming itself.
    Runaway {
        /// Steps taken when the run was stopped.
        steps: u64,
    },
}

impl fmt::Display for RedriveSimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedriveSimError::Step(error) => write!(f, "a machine step failed: {error}"),
            RedriveSimError::Input(error) => write!(f, "a store call was refused: {error}"),
            RedriveSimError::Append(error) => write!(f, "an append failed: {error}"),
            RedriveSimError::Timer(error) => write!(f, "a timer table call was refused: {error}"),
            RedriveSimError::Fire(error) => write!(f, "the fire machine refused: {error}"),
            RedriveSimError::Tick(error) => write!(f, "the tick machine refused: {error}"),
            RedriveSimError::Supervise(error) => {
                write!(f, "the supervise machine refused: {error}")
            }
            RedriveSimError::Draw(error) => write!(f, "a draw was refused: {error}"),
            RedriveSimError::Id(error) => write!(f, "an id was refused: {error}"),
            RedriveSimError::Machine(error) => write!(f, "a machine refused a log: {error}"),
            RedriveSimError::Ledger(what) => write!(f, "the harness lost track: {what}"),
            RedriveSimError::Runaway { steps } => {
                write!(f, "no quiescence after {steps} steps")
            }
        }
    }
}

impl std::error::Error for RedriveSimError {}

macro_rules! from {
    ($($source:ty => $variant:ident),* $(,)?) => {
        $(impl From<$source> for RedriveSimError {
            fn from(error: $source) -> Self {
                RedriveSimError::$variant(error)
            }
        })*
    };
}

from! {
    StepError => Step,
    InputError => Input,
    AppendError => Append,
    TimerInputError => Timer,
    FireError => Fire,
    TickError => Tick,
    SuperviseError => Supervise,
    DrawError => Draw,
    IdError => Id,
    ContractError => Machine,
}
