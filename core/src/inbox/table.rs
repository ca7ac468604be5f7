//! The inbox's rules over one in-memory table: what every inbox store
//! (memory, SQLite, PostgreSQL) does, stated once for the memory store and
//! the simulation, and held against the SQL stores by the inbox kit.

use std::collections::BTreeMap;

use serde_json::Value;

use super::message::{Message, MessageKey, Sent, StoredMessage, check_channel};
use crate::input::{ExecutionId, InputError};

/// The most messages one [`InboxTable::pending`] lists.
pub const MAX_PENDING_LIMIT: usize = 1_000;

/// One stored message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Row {
    /// What the body receives.
    payload: Value,
    /// When it was sent.
    sent_at: i64,
    /// Its arrival number.
    arrival: u64,
    /// Whether a delivery marked it consumed.
    consumed: bool,
}

/// A message as an inspection lists it: stored, and whether a delivery
/// marked it consumed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InboxEntry {
    /// The message.
    pub message: StoredMessage,
    /// Whether it is marked consumed (the log's `MESSAGE_CONSUMED` is the
    /// truth; the flag can lag it after a crash).
    pub consumed: bool,
}

/// Every execution's messages, keyed `(execution_id, channel, message_id)`.
///
/// - A send stores a key once; sending it again answers
///   [`Sent::Duplicate`] and changes nothing.
/// - Arrival numbers increase with every stored message, so each channel
///   lists in the order its messages arrived.
/// - A message stays until its execution's messages are purged (retention
///   deletes them with the log); consuming one only marks it, so a late
///   duplicate send is still recognised as one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct InboxTable {
    /// The rows.
    rows: BTreeMap<MessageKey, Row>,
    /// The last arrival number handed out.
    last_arrival: u64,
}

impl InboxTable {
    /// An empty inbox.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `message` unless its key is there. Checked first
    /// ([`Message::check`]); a refused message changes nothing.
    pub fn send(&mut self, message: &Message) -> Result<Sent, InputError> {
        message.check()?;
        if let Some(row) = self.rows.get(&message.key) {
            return Ok(Sent::Duplicate {
                arrival: row.arrival,
            });
        }
        self.last_arrival += 1;
        self.rows.insert(
            message.key.clone(),
            Row {
                payload: message.payload.clone(),
                sent_at: message.sent_at,
                arrival: self.last_arrival,
                consumed: false,
            },
        );
        Ok(Sent::Stored {
            arrival: self.last_arrival,
        })
    }

    /// Up to `limit` (1 to [`MAX_PENDING_LIMIT`]) messages of
    /// `execution_id` on any of `channels` that are not marked consumed,
    /// in arrival order.
    pub fn pending(
        &self,
        execution_id: &ExecutionId,
        channels: &[String],
        limit: usize,
    ) -> Result<Vec<StoredMessage>, InputError> {
        check_pending(channels, limit)?;
        let mut found: Vec<StoredMessage> = self
            .of(execution_id)
            .filter(|(key, row)| !row.consumed && channels.contains(&key.channel))
            .map(|(key, row)| stored(key, row))
            .collect();
        found.sort_by_key(|message| message.arrival);
        found.truncate(limit);
        Ok(found)
    }

    /// Marks the message consumed; whether it was there unmarked.
    pub fn mark_consumed(&mut self, key: &MessageKey) -> Result<bool, InputError> {
        key.check()?;
        Ok(self
            .rows
            .get_mut(key)
            .is_some_and(|row| !std::mem::replace(&mut row.consumed, true)))
    }

    /// Deletes every message of `execution_id`; how many there were.
    pub fn purge(&mut self, execution_id: &ExecutionId) -> usize {
        let keys: Vec<MessageKey> = self.of(execution_id).map(|(key, _)| key.clone()).collect();
        for key in &keys {
            self.rows.remove(key);
        }
        keys.len()
    }

    /// Every message of `execution_id`, consumed or not, in arrival order:
    /// for inspection and tests.
    #[must_use]
    pub fn messages(&self, execution_id: &ExecutionId) -> Vec<InboxEntry> {
        let mut all: Vec<InboxEntry> = self
            .of(execution_id)
            .map(|(key, row)| InboxEntry {
                message: stored(key, row),
                consumed: row.consumed,
            })
            .collect();
        all.sort_by_key(|entry| entry.message.arrival);
        all
    }

    /// The rows of one execution.
    fn of<'a>(
        &'a self,
        execution_id: &'a ExecutionId,
    ) -> impl Iterator<Item = (&'a MessageKey, &'a Row)> + 'a {
        self.rows
            .iter()
            .skip_while(move |(key, _)| &key.execution_id < execution_id)
            .take_while(move |(key, _)| &key.execution_id == execution_id)
    }
}

/// Checks a pending listing's arguments as every inbox does: each channel
/// a valid name, and a limit of 1 to [`MAX_PENDING_LIMIT`].
pub fn check_pending(channels: &[String], limit: usize) -> Result<(), InputError> {
    if limit == 0 || limit > MAX_PENDING_LIMIT {
        return Err(InputError::Limit {
            what: "limit",
            value: limit as u64,
            max: MAX_PENDING_LIMIT as u64,
        });
    }
    if channels.len() > MAX_PENDING_LIMIT {
        return Err(InputError::Limit {
            what: "channels",
            value: channels.len() as u64,
            max: MAX_PENDING_LIMIT as u64,
        });
    }
    channels
        .iter()
        .try_for_each(|channel| check_channel(channel))?;
    Ok(())
}

/// A row as listed.
fn stored(key: &MessageKey, row: &Row) -> StoredMessage {
    StoredMessage {
        message: Message {
            key: key.clone(),
            payload: row.payload.clone(),
            sent_at: row.sent_at,
        },
        arrival: row.arrival,
    }
}
