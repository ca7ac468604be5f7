//! The inbox's rules over one in-memory table: what every inbox store
//! (memory, SQLite, PostgreSQL) does, stated once for the memory store and
//! the simulation, and held against the SQL stores by the inbox kit.

use super::message::{Message, MessageKey, Sent, StoredMessage, check_channel};
use crate::input::{ExecutionId, InputError};

/// The most messages one [`InboxTable::pending`] lists.
pub const MAX_PENDING_LIMIT: usize = 1_000;

/// One stored message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Row {
    /// The message as sent, with its arrival number.
    stored: StoredMessage,
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
///
/// One vector sorted by execution, then arrival: an execution's rows are
/// one run, already in arrival order, so a listing needs no sort, and a
/// new row goes at the end of its run. (No B-tree or sort: the npm package
/// carries this table, and each instance of those costs it kilobytes.)
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct InboxTable {
    /// The rows, by execution, then arrival.
    rows: Vec<Row>,
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
        let run = self.run_of(&message.key.execution_id);
        if let Some(row) = self.rows[run.clone()]
            .iter()
            .find(|row| row.stored.message.key == message.key)
        {
            return Ok(Sent::Duplicate {
                arrival: row.stored.arrival,
            });
        }
        self.last_arrival += 1;
        self.rows.insert(
            run.end,
            Row {
                stored: StoredMessage {
                    message: message.clone(),
                    arrival: self.last_arrival,
                },
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
        Ok(self.rows[self.run_of(execution_id)]
            .iter()
            .filter(|row| !row.consumed && channels.contains(&row.stored.message.key.channel))
            .take(limit)
            .map(|row| row.stored.clone())
            .collect())
    }

    /// Marks the message consumed; whether it was there unmarked.
    pub fn mark_consumed(&mut self, key: &MessageKey) -> Result<bool, InputError> {
        key.check()?;
        let run = self.run_of(&key.execution_id);
        Ok(self.rows[run]
            .iter_mut()
            .find(|row| row.stored.message.key == *key)
            .is_some_and(|row| !std::mem::replace(&mut row.consumed, true)))
    }

    /// Deletes every message of `execution_id`; how many there were.
    pub fn purge(&mut self, execution_id: &ExecutionId) -> usize {
        self.rows.drain(self.run_of(execution_id)).count()
    }

    /// Every message of `execution_id`, consumed or not, in arrival order:
    /// for inspection and tests.
    #[must_use]
    pub fn messages(&self, execution_id: &ExecutionId) -> Vec<InboxEntry> {
        self.rows[self.run_of(execution_id)]
            .iter()
            .map(|row| InboxEntry {
                message: row.stored.clone(),
                consumed: row.consumed,
            })
            .collect()
    }

    /// Where the rows of one execution are.
    fn run_of(&self, execution_id: &ExecutionId) -> std::ops::Range<usize> {
        fn id(row: &Row) -> &ExecutionId {
            &row.stored.message.key.execution_id
        }
        let start = self.rows.partition_point(|row| id(row) < execution_id);
        let len = self.rows[start..].partition_point(|row| id(row) == execution_id);
        start..start + len
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
