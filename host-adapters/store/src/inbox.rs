//! The async inbox trait.

use async_trait::async_trait;
use loomfence_core::{
    ExecutionId,
    inbox::{InboxEntry, Message, MessageKey, Sent, StoredMessage},
    timer::TimerRow,
};

use crate::{StoreError, TimerStore};

/// Messages keyed `(execution_id, channel, message_id)`, under the rules of
/// the core's [`InboxTable`](loomfence_core::inbox::InboxTable).
///
/// It is a timer store too, and every adapter implements it on its timer
/// store: a send writes its message and its intent row (a re-drive row of
/// the execution) in ONE atomic step, so a sender that dies right after the
/// send still leaves the row whose re-driver finishes the delivery. Every
/// method is one atomic step at the backend; inputs are checked with the
/// core's checks before anything is touched, so every adapter refuses the
/// same calls with the same [`StoreError::Input`].
#[async_trait]
pub trait InboxStore: TimerStore {
    /// Stores `message` and schedules `intent` (with
    /// [`TimerStore::schedule`]'s upsert rules) in one atomic step, unless
    /// a message with its key is there: then nothing is written and the
    /// answer is [`Sent::Duplicate`] (the first payload stands; the first
    /// send's intent row was written with it).
    async fn send(&self, message: &Message, intent: &TimerRow) -> Result<Sent, StoreError>;

    /// Up to `limit` (1 to [`MAX_PENDING_LIMIT`](loomfence_core::inbox::MAX_PENDING_LIMIT))
    /// messages of `execution_id` on any of `channels` not marked
    /// consumed, in arrival order. Arrival order is the order the sends
    /// committed in on each channel: a message listed never has an earlier
    /// one of its channel still to commit.
    async fn pending(
        &self,
        execution_id: &ExecutionId,
        channels: &[String],
        limit: usize,
    ) -> Result<Vec<StoredMessage>, StoreError>;

    /// Marks the message consumed; whether it was there unmarked. The log's
    /// `MESSAGE_CONSUMED` is the truth, this flag only keeps it out of
    /// later listings.
    async fn mark_consumed(&self, key: &MessageKey) -> Result<bool, StoreError>;

    /// Deletes every message of `execution_id` (retention, with its log);
    /// how many there were.
    async fn purge(&self, execution_id: &ExecutionId) -> Result<u64, StoreError>;

    /// Every message of `execution_id`, consumed or not, in arrival order:
    /// for operators and tests.
    async fn messages(&self, execution_id: &ExecutionId) -> Result<Vec<InboxEntry>, StoreError>;
}
