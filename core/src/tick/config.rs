//! How a node's ticks run, and the inputs a tick refuses.

use crate::fire::FireError;
use crate::redrive_policy::RedrivePolicy;
use crate::timer_table::NodeId;

/// How a node's ticks run: who it is and how much it takes at once.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TickConfig {
    /// The node its claims are held under.
    pub holder: NodeId,
    /// How long a claim lasts, ms (the timer store checks the range).
    pub lease_ms: u64,
    /// Rows per claim, and the most claims one tick handles.
    pub batch: usize,
    /// The retry schedule the fires use.
    pub policy: RedrivePolicy,
}

impl TickConfig {
    /// A node `holder` claiming `batch` rows for `lease_ms` at a time,
    /// firing them under `policy`.
    #[must_use]
    pub fn new(holder: NodeId, lease_ms: u64, batch: usize, policy: RedrivePolicy) -> Self {
        Self {
            holder,
            lease_ms,
            batch,
            policy,
        }
    }
}

/// An input the tick machine refuses; the machine is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum TickError {
    /// The fire machine refused the answer (a store that broke its
    /// contract, a row not in range). The host reports it and calls
    /// [`TickMachine::handle_failed`](crate::tick::TickMachine::handle_failed).
    #[error(transparent)]
    Fire(#[from] FireError),
    /// The answer does not fit the pending action.
    #[error("the tick expected {expected}, got {got}")]
    Unexpected {
        /// What the pending action is answered with.
        expected: &'static str,
        /// What was called.
        got: &'static str,
    },
    /// A fire needs a draw and none was given.
    #[error("a fire needs a random draw")]
    NoDraw,
    /// [`TickMachine::begin`](crate::tick::TickMachine::begin) while a tick is running.
    #[error("a tick is already running")]
    Busy,
}
