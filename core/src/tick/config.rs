//! How a node's ticks run.

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
