//! This node's bounded memory of contended plain timer wakes. It sits apart
//! from the schedule in `redrive_policy.rs` because it reads what a fire ended in,
//! and the fire machine in `fire.rs` uses the schedule.

use std::num::NonZeroUsize;

use crate::fire::{FireOutcome, TimerRow};
use crate::input::ExecutionId;
use crate::redrive_policy::BackoffEntry;

/// How many executions a [`WakeBackoff`] remembers unless told otherwise.
pub const DEFAULT_BACKOFF_BOUND: usize = 1_024;

/// The in-process backoff of contended plain timer wakes: per execution,
/// the next try and the earliest time it may be made, bounded.
///
/// A contended plain wake is not persisted as a re-drive row (a re-drive row
/// goes to the re-drivers, which re-derive their own resumes and would
/// answer noop for a timer wake, so the wake would be lost). Its row stays
/// due, and without this map every poll would acquire again, which can keep
/// invalidating a live holder's token. With it, no fire of the execution
/// on this node acquires before [`BackoffEntry::next_try_at`]. The map is
/// this node's only: another node that claims the row does not know it.
///
/// # The bound, and what is evicted
///
/// At most [`bound`](WakeBackoff::bound) executions are remembered (1,024 by
/// default). Recording a new execution into a full map evicts, among the
/// others, **the entry with the earliest `next_try_at`** (the smallest
/// execution id among equal times, so eviction is deterministic). Why that
/// one: an entry's whole effect is to hold its execution back until its
/// time, and the earliest entry has the least holding left; an entry whose
/// time has passed holds nothing back at all (only its count). Evicting it
/// costs the fewest early acquires, and the executions backed off furthest
/// (the most contended) keep their protection. An evicted execution's next
/// contention starts its count again from try 0. The oldest-inserted entry
/// was the alternative; it can be the one holding an execution back
/// longest, and evicting it lets the hottest execution storm again.
///
/// The entries are a vector sorted by execution id: a lookup is a binary
/// search, a new entry shifts the ones after it, and an eviction scans for
/// the earliest time. At the default bound that is a few microseconds, and
/// it keeps the npm package small (a sorted-map type costs about 10 KB of
/// WebAssembly per key and value type). A bound in the millions would want
/// an index by time instead.
///
/// `Clone + Eq + Hash` like the machines, so a simulation can snapshot it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WakeBackoff {
    /// How many executions it holds at most.
    bound: NonZeroUsize,
    /// The entries, sorted by execution id.
    entries: Vec<(ExecutionId, BackoffEntry)>,
}

impl Default for WakeBackoff {
    fn default() -> Self {
        Self::new()
    }
}

impl WakeBackoff {
    /// An empty map holding at most [`DEFAULT_BACKOFF_BOUND`] executions.
    #[must_use]
    pub fn new() -> Self {
        const DEFAULT: NonZeroUsize = NonZeroUsize::MIN.saturating_add(DEFAULT_BACKOFF_BOUND - 1);
        Self::with_bound(DEFAULT)
    }

    /// An empty map holding at most `bound` executions.
    #[must_use]
    pub fn with_bound(bound: NonZeroUsize) -> Self {
        Self {
            bound,
            entries: Vec::new(),
        }
    }

    /// The most executions it holds.
    #[must_use]
    pub fn bound(&self) -> usize {
        self.bound.get()
    }

    /// How many executions it holds now.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry of `execution_id`: what a fire of any of its timers is
    /// given ([`FireContext::with_backoff`](crate::timer::FireContext::with_backoff)).
    #[must_use]
    pub fn get(&self, execution_id: &ExecutionId) -> Option<BackoffEntry> {
        let at = self.find(execution_id).ok()?;
        Some(self.entries[at].1)
    }

    /// The entries, by execution id.
    pub fn iter(&self) -> impl Iterator<Item = (&ExecutionId, &BackoffEntry)> {
        self.entries.iter().map(|(id, entry)| (id, entry))
    }

    /// Where `execution_id`'s entry is, or where it would go.
    fn find(&self, execution_id: &ExecutionId) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|(id, _)| id.cmp(execution_id))
    }

    /// Records `entry` for `execution_id`, replacing any entry it had. A new
    /// execution in a full map evicts another (see the type's docs), which
    /// is returned.
    pub fn record(
        &mut self,
        execution_id: ExecutionId,
        entry: BackoffEntry,
    ) -> Option<(ExecutionId, BackoffEntry)> {
        let at = match self.find(&execution_id) {
            Ok(at) => {
                self.entries[at].1 = entry;
                return None;
            }
            Err(at) => at,
        };
        let mut evicted = None;
        let mut at = at;
        if self.entries.len() >= self.bound.get() {
            // The earliest next try, the smallest id among equal times.
            let victim = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, (id, old))| (old.next_try_at, id))
                .map(|(index, _)| index);
            if let Some(victim) = victim {
                evicted = Some(self.entries.remove(victim));
                if victim < at {
                    at -= 1;
                }
            }
        }
        self.entries.insert(at, (execution_id, entry));
        evicted
    }

    /// Forgets `execution_id`, returning its entry.
    pub fn remove(&mut self, execution_id: &ExecutionId) -> Option<BackoffEntry> {
        let at = self.find(execution_id).ok()?;
        Some(self.entries.remove(at).1)
    }

    /// Applies what a fire of `row` ended in: a
    /// [`BackedOff`](FireOutcome::BackedOff) is recorded (returning what it
    /// evicted, if anything); a final outcome of the row the entry belongs
    /// to ([`Fired`](FireOutcome::Fired), [`Obsolete`](FireOutcome::Obsolete),
    /// [`Exhausted`](FireOutcome::Exhausted)) clears it; anything else,
    /// re-drive rows included, leaves the map as it is.
    pub fn apply(
        &mut self,
        row: &TimerRow,
        outcome: &FireOutcome,
    ) -> Option<(ExecutionId, BackoffEntry)> {
        match outcome {
            FireOutcome::BackedOff(entry) if row.redrive.is_none() => {
                self.record(row.execution_id.clone(), *entry)
            }
            FireOutcome::Fired | FireOutcome::Obsolete | FireOutcome::Exhausted(_)
                if row.redrive.is_none()
                    && self
                        .get(&row.execution_id)
                        .is_some_and(|entry| entry.wake_at == row.wake_at) =>
            {
                self.remove(&row.execution_id);
                None
            }
            _ => None,
        }
    }
}
