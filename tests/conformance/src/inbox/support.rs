//! Helpers the inbox cases share: messages, their intent rows, the calls
//! every case makes, and the "nothing changed" witness.

use loomfence_core::ExecutionId;
use loomfence_core::inbox::{
    DEFAULT_INTENT_DELAY_MS, InboxEntry, MAX_PENDING_LIMIT, Message, MessageKey, Sent,
    StoredMessage,
};
use loomfence_core::timer::{DueFilter, MAX_DUE_LIMIT, MAX_TIMER_MS, TimerRow};
use serde_json::Value;

use super::Inbox;
use crate::support::id;

/// The base time of the cases, in ms; any value in range would do.
pub const T0: i64 = 1_700_000_000_000;

/// The key `(execution, channel, message_id)`; panics if invalid, which is
/// a bug in the case.
#[must_use]
pub fn key(execution: &str, channel: &str, message_id: &str) -> MessageKey {
    MessageKey::new(id(execution), channel, message_id)
        .unwrap_or_else(|e| panic!("({execution:?}, {channel:?}, {message_id:?}): {e}"))
}

/// A message of `execution` on `channel`, sent at [`T0`].
#[must_use]
pub fn message(execution: &str, channel: &str, message_id: &str, payload: Value) -> Message {
    Message {
        key: key(execution, channel, message_id),
        payload,
        sent_at: T0,
    }
}

/// The intent row a sender writes with `message`: a re-drive row of its
/// execution, [`DEFAULT_INTENT_DELAY_MS`] after the send.
#[must_use]
pub fn intent(message: &Message) -> TimerRow {
    message
        .intent(DEFAULT_INTENT_DELAY_MS)
        .unwrap_or_else(|e| panic!("an intent for {message:?}: {e}"))
}

/// Sends `message` with its [`intent`]; panics on an error.
pub async fn send(store: &Inbox, message: &Message) -> Sent {
    store
        .send(message, &intent(message))
        .await
        .unwrap_or_else(|e| panic!("sending {:?}: {e}", message.key))
}

/// Sends `message` and expects it stored; its arrival number.
pub async fn stored(store: &Inbox, message: &Message) -> u64 {
    match send(store, message).await {
        Sent::Stored { arrival } => arrival,
        other => panic!("{:?} should be stored, got {other:?}", message.key),
    }
}

/// Channel names as a listing takes them.
#[must_use]
pub fn channels(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// The pending messages of `execution` on `names`, up to `limit`; panics
/// on an error.
pub async fn pending(
    store: &Inbox,
    execution: &str,
    names: &[&str],
    limit: usize,
) -> Vec<StoredMessage> {
    store
        .pending(&id(execution), &channels(names), limit)
        .await
        .unwrap_or_else(|e| panic!("pending({execution:?}, {names:?}, {limit}): {e}"))
}

/// Every pending message of `execution` on `names`.
pub async fn all_pending(store: &Inbox, execution: &str, names: &[&str]) -> Vec<StoredMessage> {
    pending(store, execution, names, MAX_PENDING_LIMIT).await
}

/// Every message of `execution`; panics on an error.
pub async fn messages(store: &Inbox, execution: &str) -> Vec<InboxEntry> {
    messages_of(store, &id(execution)).await
}

/// Every message of `execution`; panics on an error.
pub async fn messages_of(store: &Inbox, execution: &ExecutionId) -> Vec<InboxEntry> {
    store
        .messages(execution)
        .await
        .unwrap_or_else(|e| panic!("messages({execution:?}): {e}"))
}

/// Every timer row of the store, earliest first.
pub async fn timer_rows(store: &Inbox) -> Vec<TimerRow> {
    store
        .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
        .await
        .expect("listing every timer row")
}

/// The messages as `pending` lists them, taken from entries.
#[must_use]
pub fn listed(entries: &[InboxEntry]) -> Vec<StoredMessage> {
    entries.iter().map(|entry| entry.message.clone()).collect()
}

/// Everything observable about some executions' messages and every timer
/// row: taken before a refused call and compared after, it proves the call
/// changed nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    /// Each execution's messages, in the order asked.
    pub messages: Vec<Vec<InboxEntry>>,
    /// Every timer row.
    pub timers: Vec<TimerRow>,
}

impl Witness {
    /// Observes `executions` and the timer rows now.
    pub async fn capture(store: &Inbox, executions: &[&str]) -> Self {
        let mut all = Vec::with_capacity(executions.len());
        for execution in executions {
            all.push(messages(store, execution).await);
        }
        Self {
            messages: all,
            timers: timer_rows(store).await,
        }
    }

    /// Fails the case if anything observed changed since `self`.
    pub async fn assert_unchanged(&self, store: &Inbox, executions: &[&str], after: &str) {
        let now = Self::capture(store, executions).await;
        assert_eq!(&now, self, "the inbox changed after {after}");
    }
}
