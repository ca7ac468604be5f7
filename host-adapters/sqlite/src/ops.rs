//! The store's operations as synchronous steps on a connection. Every write
//! runs inside a `BEGIN IMMEDIATE` transaction that the writer thread opened
//! (see [`crate::writer`]), in a savepoint of its own: SQLite's write lock is
//! taken up front, so the read, the decision and the write cannot
//! interleave with any other writer, in this process or another, and a
//! failed write leaves nothing behind. The decisions themselves are the
//! core's (`guard_append`, `decide_acquire_if`, `is_answering`,
//! `check_park_seq`, `check_is_park`), not a SQL copy of them.

use loomfence_core::backend::{
    BatchFacts, check_is_park, check_park_seq, decide_acquire_if, guard_append,
};
use loomfence_core::{
    AcquireOutcome, ConditionalAppend, Envelope, ExecutionId, JsonObject, KernelKind, NewEvent,
    ParkExpectation,
    feed::{FeedCursor, park_change},
    log::{KindClass, is_answering},
};
use loomfence_store::StoreError;
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{self, corrupt};
use crate::{feed_ops, inbox_ops};

/// A sequence, token or feed position as SQLite stores it (all are at most
/// 2^53-1).
pub(crate) fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A stored sequence or token (never negative).
pub(crate) fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or_default()
}

/// The statement of [`head`].
pub(crate) const HEAD: &str =
    "SELECT COALESCE(MAX(sequence), 0) FROM events WHERE execution_id = ?1";

/// The log's last sequence, 0 when empty.
pub(crate) fn head(conn: &Connection, id: &str) -> Result<u64, StoreError> {
    let head: i64 = conn
        .prepare_cached(HEAD)
        .and_then(|mut statement| statement.query_row([id], |row| row.get(0)))
        .map_err(error::store)?;
    Ok(to_u64(head))
}

/// The execution's token, 0 when it has none.
fn token(conn: &Connection, id: &str) -> Result<u64, StoreError> {
    let token: Option<i64> = conn
        .prepare_cached("SELECT token FROM fences WHERE execution_id = ?1")
        .and_then(|mut statement| statement.query_row([id], |row| row.get(0)).optional())
        .map_err(error::store)?;
    Ok(token.map_or(0, to_u64))
}

/// Checks, with the core's checks, that `park_seq` names an event of the log
/// whose last sequence is `head`, and that the event is a park: after a
/// delete, a log can grow back past the sequence a resumer read as its
/// park. Out of range is reported first, then not a park, as every store
/// does.
fn check_park(conn: &Connection, id: &str, park_seq: u64, head: u64) -> Result<(), StoreError> {
    check_park_seq(park_seq, head)?;
    let kind: String = conn
        .prepare_cached("SELECT kind FROM events WHERE execution_id = ?1 AND sequence = ?2")
        .and_then(|mut statement| {
            statement.query_row(params![id, to_i64(park_seq)], |row| row.get(0))
        })
        .map_err(error::store)?;
    check_is_park(park_seq, &kind)?;
    Ok(())
}

/// Whether an answering event follows `park_seq`, judged by the core's own
/// classification. Only the tail after the park is read, and metadata is
/// parsed only for kinds the kernel table does not know. The conditional
/// acquire, the park-conditional append and the guarded delete's parent
/// check all ask it, so the three agree on what answers a park.
pub(crate) fn answered_after(
    conn: &Connection,
    id: &str,
    park_seq: u64,
) -> Result<bool, StoreError> {
    let mut statement = conn
        .prepare_cached(
            "SELECT kind, metadata FROM events WHERE execution_id = ?1 AND sequence > ?2",
        )
        .map_err(error::store)?;
    let mut rows = statement
        .query(params![id, to_i64(park_seq)])
        .map_err(error::store)?;
    while let Some(row) = rows.next().map_err(error::store)? {
        let kind: String = row.get(0).map_err(error::store)?;
        let answering = match KernelKind::from_name(&kind) {
            Some(kernel) => kernel.class() == KindClass::Answering,
            None => {
                let metadata: String = row.get(1).map_err(error::store)?;
                is_answering(&kind, &object(&metadata, "metadata")?)
            }
        };
        if answering {
            return Ok(true);
        }
    }
    Ok(false)
}

/// An event with its JSON already serialised, so the write lock is not held
/// while encoding.
pub(crate) struct Encoded {
    /// The event as written, for the envelope returned.
    event: NewEvent,
    /// `payload` as JSON text.
    payload: String,
    /// `metadata` as JSON text.
    metadata: String,
}

impl Encoded {
    /// Serialises an event's payload and metadata.
    pub(crate) fn new(event: NewEvent) -> Result<Self, StoreError> {
        let text = |map: &JsonObject| {
            serde_json::to_string(map).map_err(|e| corrupt(format!("unserialisable JSON: {e}")))
        };
        Ok(Self {
            payload: text(&event.payload)?,
            metadata: text(&event.metadata)?,
            event,
        })
    }
}

/// The append: guard, optional park condition and insert, in one write
/// transaction. Each event takes the next feed position, and the open
/// parks change as the core's [`park_change`] says, in the same
/// savepoint, so neither can disagree with the log.
pub(crate) fn append(
    conn: &Connection,
    id: &ExecutionId,
    batch: BatchFacts,
    events: Vec<Encoded>,
    park_seq: Option<u64>,
) -> Result<ConditionalAppend, StoreError> {
    let head = head(conn, id.as_str())?;
    if let Some(park_seq) = park_seq {
        check_park(conn, id.as_str(), park_seq, head)?;
        if answered_after(conn, id.as_str(), park_seq)? {
            return Ok(ConditionalAppend::ParkAnswered);
        }
    }
    if events.is_empty() {
        return Ok(ConditionalAppend::Appended(Vec::new()));
    }
    guard_append(id, token(conn, id.as_str())?, batch)?;
    let first_position = feed_ops::last_position(conn)? + 1;
    // Refuses (as bad input) a batch that would take a position past 2^53-1.
    FeedCursor::new(0, first_position + events.len() as u64 - 1)?;
    {
        let mut insert = conn
            .prepare_cached(
                "INSERT INTO events (execution_id, sequence, kind, payload, metadata, at, feed) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(error::store)?;
        for ((sequence, position), encoded) in (head + 1..).zip(first_position..).zip(&events) {
            insert
                .execute(params![
                    id.as_str(),
                    to_i64(sequence),
                    encoded.event.kind,
                    encoded.payload,
                    encoded.metadata,
                    encoded.event.at,
                    to_i64(position)
                ])
                .map_err(error::store)?;
        }
    }
    let change = park_change(
        head + 1,
        events
            .iter()
            .map(|encoded| (&*encoded.event.kind, &encoded.event.metadata)),
    );
    feed_ops::apply_park_change(conn, id.as_str(), change)?;
    Ok(ConditionalAppend::Appended(
        events
            .into_iter()
            .zip(head + 1..)
            .map(|(encoded, sequence)| encoded.event.into_envelope(id.clone(), sequence))
            .collect(),
    ))
}

/// The unconditional acquire.
pub(crate) fn acquire_fence(conn: &Connection, id: &str) -> Result<u64, StoreError> {
    let token: i64 = conn
        .prepare_cached(
            "INSERT INTO fences (execution_id, token) VALUES (?1, 1) \
             ON CONFLICT (execution_id) DO UPDATE SET token = token + 1 RETURNING token",
        )
        .and_then(|mut statement| statement.query_row([id], |row| row.get(0)))
        .map_err(error::store)?;
    Ok(to_u64(token))
}

/// The conditional acquire: check the park (inside the log, and a park),
/// decide with the core, bump.
pub(crate) fn acquire_fence_if(
    conn: &Connection,
    id: &str,
    expect: ParkExpectation,
) -> Result<AcquireOutcome, StoreError> {
    check_park(conn, id, expect.park_seq, head(conn, id)?)?;
    let answered = answered_after(conn, id, expect.park_seq)?;
    let outcome = decide_acquire_if(token(conn, id)?, expect, answered);
    if let AcquireOutcome::Acquired { fence } = outcome {
        conn.prepare_cached(
            "INSERT INTO fences (execution_id, token) VALUES (?1, ?2) \
             ON CONFLICT (execution_id) DO UPDATE SET token = excluded.token",
        )
        .and_then(|mut statement| statement.execute(params![id, to_i64(fence)]))
        .map_err(error::store)?;
    }
    Ok(outcome)
}

/// Deletes the log, its open park and the execution's messages, and the
/// fence row only if its token is 0: in the caller's one savepoint, so the
/// messages go with the log or not at all. The feed's mark keeps the last
/// position as it was before, so the log's positions are never handed out
/// again.
pub(crate) fn delete_execution(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    let last = feed_ops::last_position(conn)?;
    feed_ops::close_park(conn, id).map_err(error::store)?;
    let deleted = conn
        .execute("DELETE FROM events WHERE execution_id = ?1", [id])
        .map_err(error::store)?;
    if deleted > 0 {
        feed_ops::hold_mark(conn, last)?;
    }
    inbox_ops::purge(conn, id)?;
    conn.execute(
        "DELETE FROM fences WHERE execution_id = ?1 AND token = 0",
        [id],
    )
    .map_err(error::store)?;
    Ok(deleted > 0)
}

/// Events in `from..=to`.
pub(crate) fn read_range(
    conn: &Connection,
    id: &ExecutionId,
    from: u64,
    to: u64,
) -> Result<Vec<Envelope>, StoreError> {
    let mut statement = conn
        .prepare_cached(
            "SELECT sequence, kind, payload, metadata, at FROM events \
             WHERE execution_id = ?1 AND sequence >= ?2 AND sequence <= ?3 ORDER BY sequence",
        )
        .map_err(error::store)?;
    let mut rows = statement
        .query(params![id.as_str(), to_i64(from), to_i64(to)])
        .map_err(error::store)?;
    let mut events = Vec::new();
    while let Some(row) = rows.next().map_err(error::store)? {
        let payload: String = row.get(2).map_err(error::store)?;
        let metadata: String = row.get(3).map_err(error::store)?;
        events.push(Envelope {
            execution_id: id.clone(),
            sequence: to_u64(row.get(0).map_err(error::store)?),
            kind: row.get(1).map_err(error::store)?,
            payload: object(&payload, "payload")?,
            metadata: object(&metadata, "metadata")?,
            at: row.get(4).map_err(error::store)?,
        });
    }
    Ok(events)
}

/// The current token, read outside any write.
pub(crate) fn current_fence(conn: &Connection, id: &str) -> Result<u64, StoreError> {
    token(conn, id)
}

/// Parses a stored JSON column that must hold an object.
pub(crate) fn object(text: &str, column: &str) -> Result<JsonObject, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(format!("{column} is not a JSON object: {e}")))
}
