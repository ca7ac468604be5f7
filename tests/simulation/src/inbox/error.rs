//! Why an inbox simulation could not go on: harness failures and calls the
//! stores refused as malformed, never invariant violations (those are
//! [`super::check::Breach`] values, so a search can count them).

use std::fmt;

use loomfence_core::{AppendError, ContractError, Error as CoreError, InputError};

/// A step of the inbox world that could not be performed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum InboxSimError {
    /// A store, inbox or timer-table call was refused as malformed.
    Input(InputError),
    /// An append by the harness (the setup, a park) failed other than as
    /// stale.
    Append(AppendError),
    /// A machine step failed in a way the harness does not model.
    Step(CoreError),
    /// A machine refused an answer the harness built for it: a harness bug
    /// (a rejection of a store's answer is a finding instead).
    Machine(ContractError),
    /// A machine asked for something this harness does not perform.
    UnknownAction(&'static str),
    /// A search met a world again on its own path: something loops.
    Cycle {
        /// The path's length then.
        depth: usize,
    },
    /// A random schedule ran past the step bound without quiescing.
    Runaway {
        /// Steps taken when it was stopped.
        steps: usize,
    },
}

impl fmt::Display for InboxSimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InboxSimError::Input(error) => write!(f, "a store call was refused: {error}"),
            InboxSimError::Append(error) => write!(f, "an append failed: {error}"),
            InboxSimError::Step(error) => write!(f, "a machine step failed: {error}"),
            InboxSimError::Machine(error) => write!(f, "a machine refused an answer: {error}"),
            InboxSimError::UnknownAction(what) => {
                write!(f, "an action the harness does not know: {what}")
            }
            InboxSimError::Cycle { depth } => {
                write!(f, "a world repeats on its own path at depth {depth}")
            }
            InboxSimError::Runaway { steps } => write!(f, "no quiescence after {steps} steps"),
        }
    }
}

impl std::error::Error for InboxSimError {}

macro_rules! from {
    ($($source:ty => $variant:ident),* $(,)?) => {
        $(impl From<$source> for InboxSimError {
            fn from(error: $source) -> Self {
                InboxSimError::$variant(error)
            }
        })*
    };
}

from! {
    InputError => Input,
    AppendError => Append,
    CoreError => Step,
    ContractError => Machine,
}
