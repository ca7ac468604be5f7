//! The inbox's operations as synchronous steps on a connection: the rules
//! of the core's [`InboxTable`](loomfence_core::inbox::InboxTable) stated
//! as SQL.
//!
//! Writes run on the writer thread inside its `BEGIN IMMEDIATE` group, in
//! a savepoint of their own (see [`crate::writer`]): a send's message and
//! its intent row commit together or not at all, and an error rolls both
//! back. Inputs were checked with the core's checks before anything was
//! queued. A stored row is read back with the rules a checked send keeps;
//! one that breaks them fails the listing, naming the row, never guessed
//! at.

use loomfence_core::{
    ExecutionId,
    inbox::{InboxEntry, Message, MessageKey, Sent, StoredMessage},
    timer::{MAX_TIMER_MS, TimerRow},
};
use loomfence_store::StoreError;
use rusqlite::{Connection, Row, params};
use serde_json::Value;

use crate::error::{self, corrupt};
use crate::timer_ops;

/// Stores a message unless its key is there (then writes nothing).
const INSERT: &str = "INSERT INTO inbox (execution_id, channel, message_id, payload, sent_at) \
     VALUES (?1, ?2, ?3, ?4, ?5) \
     ON CONFLICT (execution_id, channel, message_id) DO NOTHING";

/// The arrival of the message with a key.
const ARRIVAL: &str =
    "SELECT arrival FROM inbox WHERE execution_id = ?1 AND channel = ?2 AND message_id = ?3";

/// An execution's unconsumed messages on the channels of `?2` (a JSON
/// array of names), in arrival order, at most `?3`. `consumed = 0` is the
/// pending index's own filter, so the index serves it.
pub(crate) const PENDING: &str = "SELECT arrival, execution_id, channel, message_id, payload, sent_at, consumed FROM inbox \
     WHERE execution_id = ?1 AND consumed = 0 \
     AND channel IN (SELECT value FROM json_each(?2)) \
     ORDER BY arrival LIMIT ?3";

/// Every message of an execution, in arrival order.
const MESSAGES: &str = "SELECT arrival, execution_id, channel, message_id, payload, sent_at, consumed FROM inbox \
     WHERE execution_id = ?1 ORDER BY arrival";

/// Marks a message consumed, only if it is not yet.
const MARK: &str = "UPDATE inbox SET consumed = 1 \
     WHERE execution_id = ?1 AND channel = ?2 AND message_id = ?3 AND consumed = 0";

/// Deletes an execution's messages.
const PURGE: &str = "DELETE FROM inbox WHERE execution_id = ?1";

/// A message's payload as the `payload` column holds it: its JSON text.
pub(crate) fn encode_payload(message: &Message) -> Result<String, StoreError> {
    serde_json::to_string(&message.payload)
        .map_err(|e| corrupt(format!("could not encode a message payload: {e}")))
}

/// The send: the message, and only if it was stored, its intent row with
/// the timer store's own upsert ([`timer_ops::schedule`]), both in the
/// caller's one savepoint. `payload` and `redrive` are already encoded.
pub(crate) fn send(
    conn: &Connection,
    message: &Message,
    payload: &str,
    intent: &TimerRow,
    redrive: Option<&str>,
) -> Result<Sent, StoreError> {
    let key = &message.key;
    let inserted = conn
        .prepare_cached(INSERT)
        .and_then(|mut statement| {
            statement.execute(params![
                key.execution_id.as_str(),
                key.channel,
                key.message_id,
                payload,
                message.sent_at
            ])
        })
        .map_err(error::store)?;
    if inserted == 0 {
        let arrival: i64 = conn
            .prepare_cached(ARRIVAL)
            .and_then(|mut statement| {
                statement.query_row(
                    params![key.execution_id.as_str(), key.channel, key.message_id],
                    |row| row.get(0),
                )
            })
            .map_err(error::store)?;
        return Ok(Sent::Duplicate {
            arrival: arrival_of(arrival, key)?,
        });
    }
    let arrival = arrival_of(conn.last_insert_rowid(), key)?;
    timer_ops::schedule(conn, &intent.execution_id, intent.wake_at, redrive)?;
    Ok(Sent::Stored { arrival })
}

/// Up to `limit` unconsumed messages of `execution_id` on `channels`, in
/// arrival order. The arguments are already checked.
pub(crate) fn pending(
    conn: &Connection,
    execution_id: &ExecutionId,
    channels: &[String],
    limit: usize,
) -> Result<Vec<StoredMessage>, StoreError> {
    let names = serde_json::to_string(channels)
        .map_err(|e| corrupt(format!("could not encode the channel list: {e}")))?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut statement = conn.prepare_cached(PENDING).map_err(error::store)?;
    let mut rows = statement
        .query(params![execution_id.as_str(), names, limit])
        .map_err(error::store)?;
    let mut found = Vec::new();
    while let Some(row) = rows.next().map_err(error::store)? {
        found.push(read_entry(row)?.message);
    }
    Ok(found)
}

/// Every message of `execution_id`, in arrival order.
pub(crate) fn messages(
    conn: &Connection,
    execution_id: &ExecutionId,
) -> Result<Vec<InboxEntry>, StoreError> {
    let mut statement = conn.prepare_cached(MESSAGES).map_err(error::store)?;
    let mut rows = statement
        .query(params![execution_id.as_str()])
        .map_err(error::store)?;
    let mut found = Vec::new();
    while let Some(row) = rows.next().map_err(error::store)? {
        found.push(read_entry(row)?);
    }
    Ok(found)
}

/// Marks the message consumed; whether it was there unmarked.
pub(crate) fn mark_consumed(conn: &Connection, key: &MessageKey) -> Result<bool, StoreError> {
    let marked = conn
        .prepare_cached(MARK)
        .and_then(|mut statement| {
            statement.execute(params![
                key.execution_id.as_str(),
                key.channel,
                key.message_id
            ])
        })
        .map_err(error::store)?;
    Ok(marked > 0)
}

/// Deletes every message of `execution_id`; how many there were. The
/// event store's deletes call it in their own transaction, so an
/// execution's messages go with its log.
pub(crate) fn purge(conn: &Connection, execution_id: &str) -> Result<u64, StoreError> {
    let deleted = conn
        .prepare_cached(PURGE)
        .and_then(|mut statement| statement.execute([execution_id]))
        .map_err(error::store)?;
    Ok(deleted as u64)
}

/// A stored arrival: the rowid, from 1.
fn arrival_of(rowid: i64, key: &MessageKey) -> Result<u64, StoreError> {
    u64::try_from(rowid)
        .ok()
        .filter(|arrival| *arrival > 0)
        .ok_or_else(|| {
            corrupt(format!(
                "inbox: message {key:?} has the arrival {rowid}, not a positive number"
            ))
        })
}

/// Reads columns 0 to 6 (`arrival`, `execution_id`, `channel`,
/// `message_id`, `payload`, `sent_at`, `consumed`) as a message, checked
/// as a send checks one; anything else is a permanent backend error
/// naming the row by its arrival and key.
fn read_entry(row: &Row<'_>) -> Result<InboxEntry, StoreError> {
    let arrival: i64 = row.get(0).map_err(error::store)?;
    let text = |index| -> Result<String, StoreError> {
        row.get::<_, String>(index).map_err(|e| {
            corrupt(format!(
                "inbox: row {arrival}: column {index} is not text: {e}"
            ))
        })
    };
    let (execution, channel, message_id) = (text(1)?, text(2)?, text(3)?);
    let named = format!("inbox: row {arrival} ({execution:?}, {channel:?}, {message_id:?})");
    let execution_id = ExecutionId::new(execution.clone())
        .map_err(|e| corrupt(format!("{named}: execution_id is not a valid id: {e}")))?;
    let key = MessageKey {
        execution_id,
        channel,
        message_id,
    };
    key.check()
        .map_err(|e| corrupt(format!("{named}: the key is not one a send takes: {e}")))?;
    let payload: Value = serde_json::from_str(&text(4)?)
        .map_err(|e| corrupt(format!("{named}: payload is not JSON: {e}")))?;
    let sent_at = row
        .get::<_, i64>(5)
        .ok()
        .filter(|at| (0..=MAX_TIMER_MS).contains(at))
        .ok_or_else(|| corrupt(format!("{named}: sent_at is not a time in 0..=2^53-1")))?;
    let consumed = match row.get::<_, i64>(6) {
        Ok(0) => false,
        Ok(1) => true,
        _ => return Err(corrupt(format!("{named}: consumed is not 0 or 1"))),
    };
    Ok(InboxEntry {
        message: StoredMessage {
            message: Message {
                key: key.clone(),
                payload,
                sent_at,
            },
            arrival: arrival_of(arrival, &key)?,
        },
        consumed,
    })
}

#[cfg(test)]
mod tests;
