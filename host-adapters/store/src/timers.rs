//! The async timer store trait and the in-memory adapter.

use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use loomfence_core::{
    ExecutionId,
    inbox::{InboxEntry, InboxTable, Message, MessageKey, Sent, StoredMessage, check_pending},
    timer::{
        Claim, Completed, DueFilter, ExhaustedQuery, ExhaustedRow, Exhaustion, Lease, TimerEntry,
        TimerQuery, TimerRow, TimerTable, UnreadableRow, check_row,
    },
};

use crate::{InboxStore, StoreError};

/// What one [`TimerStore::claim_due`] answers: the rows it claimed, and
/// the due rows it could not read.
///
/// An unreadable row (one the store did not write: see
/// [`UnreadableRow`]) is left unclaimed and takes no page slot, so it
/// never stops the rows behind it; it comes back here, named by its key,
/// for the caller to report. A store lists at most `limit` of them per
/// claim, earliest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaimPage {
    /// The claimed rows, earliest first.
    pub claims: Vec<Claim>,
    /// Due, free rows that did not read back, earliest first; not claimed.
    pub unreadable: Vec<UnreadableRow>,
}

impl From<Vec<Claim>> for ClaimPage {
    /// A page of claims with nothing unreadable: what a store that holds
    /// only checked rows (the memory stores) answers.
    fn from(claims: Vec<Claim>) -> Self {
        Self {
            claims,
            unreadable: Vec::new(),
        }
    }
}

/// What an operator's [`TimerStore::list`] answers: the live rows with
/// their claims, and the rows of the page's range the store could not read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimerListing {
    /// The rows, in due order, each with its claim.
    pub entries: Vec<TimerEntry>,
    /// Rows in the listing's range that did not read back, in due order:
    /// shown, not skipped in silence (see [`UnreadableRow`]).
    pub unreadable: Vec<UnreadableRow>,
}

/// Timer rows keyed `(execution_id, wake_at)`, shared by every node of a
/// fleet, under the rules of [`TimerTable`] (upsert that keeps the re-drive
/// flag, due filtered before the limit, lease claims, retire only by the
/// claimer, a re-drive chain moved on in one step).
///
/// Every method is one atomic step at the backend. Inputs are checked with
/// the core's `check_*` functions before anything is touched, so every
/// adapter refuses the same calls with the same [`StoreError::Input`].
#[async_trait]
pub trait TimerStore: Send + Sync {
    /// Writes `row`, or merges it into the row with its key: the re-drive
    /// flag is kept or added, never cleared, and a claim on the row ends.
    async fn schedule(&self, row: &TimerRow) -> Result<(), StoreError>;

    /// Up to `limit` rows with `wake_at <= now`, earliest first, claimed or
    /// not; re-drive rows are left out before the limit when `filter` says
    /// so. For inspection; a service claims with
    /// [`TimerStore::claim_due`]. Unlike a claim, a listing that meets a
    /// row it cannot read fails ([`StoreError::Backend`], permanent)
    /// naming the row: an operator's listing shows the damage.
    async fn due(
        &self,
        now: i64,
        limit: usize,
        filter: DueFilter,
    ) -> Result<Vec<TimerRow>, StoreError>;

    /// Claims up to `limit` due rows nobody holds (or whose lease ended),
    /// earliest first, under `lease`. Two concurrent calls never claim one
    /// row both.
    ///
    /// A due, free row the store cannot read (see [`ClaimPage`]) is not
    /// claimed and does not count toward `limit`: the page fills with
    /// readable rows behind it, and the row comes back in
    /// [`ClaimPage::unreadable`] instead of failing the call.
    async fn claim_due(
        &self,
        lease: &Lease,
        limit: usize,
        filter: DueFilter,
    ) -> Result<ClaimPage, StoreError>;

    /// Retires the claimed row if `claim` is still its current claim.
    async fn complete(&self, claim: &Claim) -> Result<Completed, StoreError>;

    /// Retires the claimed row and schedules `next` (with
    /// [`schedule`](TimerStore::schedule)'s upsert rules) in ONE atomic
    /// step, only if `claim` is still the row's current claim; otherwise
    /// answers [`Completed::NotHeld`] and writes nothing. `next` must not
    /// have the claimed row's key (`InputError::SameKey`); inputs
    /// are checked with [`check_reschedule`](loomfence_core::timer::check_reschedule).
    ///
    /// It is how a re-drive chain moves on. There is deliberately no
    /// default made of a `schedule` then a `complete`: between the two, a
    /// fire that outlived its lease writes its next row beside the one the
    /// row's new claimer writes, the chain forks, and each branch may
    /// report exhaustion. Every store states the rule in its own atomic
    /// step (a lock, a transaction, one statement).
    async fn reschedule(&self, claim: &Claim, next: &TimerRow) -> Result<Completed, StoreError>;

    /// Hands the claimed row back (due again at once) if `claim` is still
    /// its current claim.
    async fn release(&self, claim: &Claim) -> Result<Completed, StoreError>;

    /// Retires the claimed row and records its exhaustion (an
    /// [`ExhaustedRow`] of the row as stored) in ONE atomic step, only if
    /// `claim` is still the row's current claim; otherwise answers
    /// [`Completed::NotHeld`] and records nothing. A record of the same key
    /// is replaced. Inputs are checked with
    /// [`check_exhaust`](loomfence_core::timer::check_exhaust).
    ///
    /// It is how a fire that gives up leaves its execution for an
    /// operator: as with [`reschedule`](TimerStore::reschedule), two steps
    /// would let a fire that lost its row record an exhaustion beside the
    /// new claimer's live row.
    async fn exhaust(
        &self,
        claim: &Claim,
        exhaustion: &Exhaustion,
    ) -> Result<Completed, StoreError>;

    /// The live rows `query` names, each with its claim, in due order,
    /// every filter applied before the limit; and the rows in the same
    /// range that do not read back. For operators (`loomfence timers`,
    /// `inspect`), not for services.
    async fn list(&self, query: &TimerQuery) -> Result<TimerListing, StoreError>;

    /// The exhausted records `query` names, in `(execution_id, wake_at)`
    /// order. For operators (`loomfence recover --exhausted`, `inspect`).
    async fn exhausted(&self, query: &ExhaustedQuery) -> Result<Vec<ExhaustedRow>, StoreError>;

    /// Removes the exhausted record of `(execution_id, wake_at)`; whether
    /// there was one. What a recovery does once it has acted on it.
    async fn clear_exhausted(
        &self,
        execution_id: &ExecutionId,
        wake_at: i64,
    ) -> Result<bool, StoreError>;
}

/// The core's [`TimerTable`] and [`InboxTable`] behind one mutex: a timer
/// store and inbox for one process (tests, the simulation, a single-node
/// host). One lock, so a send and its intent row are one step.
#[derive(Debug, Default)]
pub struct MemoryTimerStore {
    /// The tables.
    inner: Mutex<Tables>,
}

/// What the mutex guards.
#[derive(Debug, Default)]
struct Tables {
    /// The timer rows.
    timers: TimerTable,
    /// The messages.
    inbox: InboxTable,
}

impl MemoryTimerStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of the timer table, for comparisons and snapshots.
    #[must_use]
    pub fn snapshot(&self) -> TimerTable {
        self.tables().timers.clone()
    }

    /// A copy of the inbox, for comparisons and snapshots.
    #[must_use]
    pub fn inbox_snapshot(&self) -> InboxTable {
        self.tables().inbox.clone()
    }

    /// Locks both tables; every table operation checks before it mutates,
    /// so a poisoned lock is recovered.
    fn tables(&self) -> MutexGuard<'_, Tables> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl InboxStore for MemoryTimerStore {
    async fn send(&self, message: &Message, intent: &TimerRow) -> Result<Sent, StoreError> {
        message.check()?;
        check_row(intent)?;
        let mut tables = self.tables();
        let sent = tables.inbox.send(message)?;
        if matches!(sent, Sent::Stored { .. }) {
            tables.timers.schedule(intent)?;
        }
        Ok(sent)
    }

    async fn pending(
        &self,
        execution_id: &ExecutionId,
        channels: &[String],
        limit: usize,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        check_pending(channels, limit)?;
        Ok(self.tables().inbox.pending(execution_id, channels, limit)?)
    }

    async fn mark_consumed(&self, key: &MessageKey) -> Result<bool, StoreError> {
        Ok(self.tables().inbox.mark_consumed(key)?)
    }

    async fn purge(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        Ok(self.tables().inbox.purge(execution_id) as u64)
    }

    async fn messages(&self, execution_id: &ExecutionId) -> Result<Vec<InboxEntry>, StoreError> {
        Ok(self.tables().inbox.messages(execution_id))
    }
}

#[async_trait]
impl TimerStore for MemoryTimerStore {
    async fn schedule(&self, row: &TimerRow) -> Result<(), StoreError> {
        Ok(self.tables().timers.schedule(row)?)
    }

    async fn due(
        &self,
        now: i64,
        limit: usize,
        filter: DueFilter,
    ) -> Result<Vec<TimerRow>, StoreError> {
        Ok(self.tables().timers.due(now, limit, filter)?)
    }

    async fn claim_due(
        &self,
        lease: &Lease,
        limit: usize,
        filter: DueFilter,
    ) -> Result<ClaimPage, StoreError> {
        Ok(self.tables().timers.claim_due(lease, limit, filter)?.into())
    }

    async fn complete(&self, claim: &Claim) -> Result<Completed, StoreError> {
        Ok(self.tables().timers.complete(claim)?)
    }

    async fn release(&self, claim: &Claim) -> Result<Completed, StoreError> {
        Ok(self.tables().timers.release(claim)?)
    }

    async fn reschedule(&self, claim: &Claim, next: &TimerRow) -> Result<Completed, StoreError> {
        Ok(self.tables().timers.reschedule(claim, next)?)
    }

    async fn exhaust(
        &self,
        claim: &Claim,
        exhaustion: &Exhaustion,
    ) -> Result<Completed, StoreError> {
        Ok(self.tables().timers.exhaust(claim, exhaustion)?)
    }

    async fn list(&self, query: &TimerQuery) -> Result<TimerListing, StoreError> {
        Ok(TimerListing {
            entries: self.tables().timers.list(query)?,
            unreadable: Vec::new(),
        })
    }

    async fn exhausted(&self, query: &ExhaustedQuery) -> Result<Vec<ExhaustedRow>, StoreError> {
        Ok(self.tables().timers.exhausted(query)?)
    }

    async fn clear_exhausted(
        &self,
        execution_id: &ExecutionId,
        wake_at: i64,
    ) -> Result<bool, StoreError> {
        Ok(self
            .tables()
            .timers
            .clear_exhausted(execution_id, wake_at)?)
    }
}
