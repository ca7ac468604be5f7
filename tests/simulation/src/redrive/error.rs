//! Why a re-drive simulation stopped before its run ended.
//!
//! As in the resume simulation ([`crate::error::SimError`]), these are
//! harness failures or core contracts broken towards their caller (a
//! malformed request, a fire machine refusing an answer it asked for), never
//! invariant violations: those are findings, returned as
//! [`super::check::Breach`] values so a sweep can count them.

use std::fmt;

use loomfence_core::{AppendError, ContractError, Error, InputError};

/// A step of the re-drive world that could not be performed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RedriveSimError {
    /// A machine step failed: a request refused by the store as malformed,
    /// or a machine (resume, supervise) refusing an answer.
    Step(Error),
    /// A call was refused as malformed: a store or timer table call, a row,
    /// a draw or an id.
    Input(InputError),
    /// An append by the harness (setup, a child, a body) failed other than
    /// as stale.
    Append(AppendError),
    /// A machine (fire, tick, supervise) refused an answer or the log the
    /// harness read for it: a harness bug.
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
    Error => Step,
    InputError => Input,
    AppendError => Append,
    ContractError => Machine,
}
