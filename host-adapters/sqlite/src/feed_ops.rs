//! The change feed's operations as synchronous steps on a connection.
//!
//! SQLite has one writer at a time, and every append runs inside a `BEGIN
//! IMMEDIATE` transaction (see [`crate::writer`]), so positions handed out
//! inside one are taken in commit order: a reader's snapshot that shows a
//! position shows every smaller one that was committed, which is the
//! feed's "no skip" with nothing more to it. Every cursor's epoch is 0.
//!
//! The next position is read from the file inside each append (the
//! largest `feed` through its index, and the mark deletes keep), not cached
//! in the process: other processes may write the same file, and two index
//! seeks are cheap beside the insert.

use loomfence_core::feed::{FeedCursor, FeedEntry, ParkChange};
use loomfence_core::{Envelope, ExecutionId, log::MAX_SAFE_INTEGER};
use loomfence_store::StoreError;
use rusqlite::types::Value;
use rusqlite::{Connection, Row, params};

use crate::error::{self, corrupt};
use crate::ops::{object, to_i64, to_u64};

/// The last position handed out: the largest still in `events`, or the
/// mark a delete kept, whichever is larger; 0 on a feed with none.
pub(crate) const HEAD: &str = "SELECT max( \
         COALESCE((SELECT MAX(feed) FROM events WHERE feed IS NOT NULL), 0), \
         COALESCE((SELECT last FROM feed_mark WHERE one = 1), 0))";

/// Raises the mark to `?1` (never lowers it).
const MARK: &str = "INSERT INTO feed_mark (one, last) VALUES (1, ?1) \
     ON CONFLICT (one) DO UPDATE SET last = max(last, excluded.last)";

/// Events after position `?1`, in feed order, at most `?2`. `feed > ?1`
/// implies the partial index's `feed IS NOT NULL`, so the index serves it.
pub(crate) const PAGE: &str = "SELECT feed, execution_id, sequence, kind, payload, metadata, at \
     FROM events WHERE feed > ?1 ORDER BY feed LIMIT ?2";

/// Open parks after `?1` (the empty string for the first page: every id is
/// longer), in byte order, at most `?2`.
pub(crate) const OPEN_PARKS: &str = "SELECT execution_id FROM open_parks \
     WHERE execution_id > ?1 COLLATE BINARY ORDER BY execution_id COLLATE BINARY LIMIT ?2";

/// Marks an execution parked at `?2`.
const OPEN: &str = "INSERT INTO open_parks (execution_id, park_seq) VALUES (?1, ?2) \
     ON CONFLICT (execution_id) DO UPDATE SET park_seq = excluded.park_seq";

/// Takes an execution out of the open parks.
const CLOSE: &str = "DELETE FROM open_parks WHERE execution_id = ?1";

/// The last position handed out, as [`HEAD`] reads it.
pub(crate) fn last_position(conn: &Connection) -> Result<u64, StoreError> {
    let value: Value = conn
        .prepare_cached(HEAD)
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(error::store)?;
    match value {
        Value::Integer(position) if (0..=to_i64(MAX_SAFE_INTEGER)).contains(&position) => {
            Ok(to_u64(position))
        }
        other => Err(corrupt(format!(
            "events: the largest feed position is {other:?}, not an integer in 0..=2^53-1"
        ))),
    }
}

/// The head: the cursor of the last position handed out.
pub(crate) fn head(conn: &Connection) -> Result<FeedCursor, StoreError> {
    Ok(FeedCursor::new(0, last_position(conn)?)?)
}

/// Keeps `last`, the last position handed out as read before a delete, in
/// the mark, so a delete of the newest log never lets the head go back or
/// a position be handed out again. Runs in the delete's savepoint.
pub(crate) fn hold_mark(conn: &Connection, last: u64) -> Result<(), StoreError> {
    conn.prepare_cached(MARK)
        .and_then(|mut statement| statement.execute([to_i64(last)]))
        .map_err(error::store)?;
    Ok(())
}

/// Applies one append's [`ParkChange`] (the core's
/// [`park_change`](loomfence_core::feed::park_change)) to the open parks,
/// in the append's savepoint.
pub(crate) fn apply_park_change(
    conn: &Connection,
    id: &str,
    change: ParkChange,
) -> Result<(), StoreError> {
    let done = match change {
        ParkChange::Unchanged => return Ok(()),
        ParkChange::Opens(sequence) => conn
            .prepare_cached(OPEN)
            .and_then(|mut statement| statement.execute(params![id, to_i64(sequence)])),
        ParkChange::Closes => close_park(conn, id),
    };
    done.map(drop).map_err(error::store)
}

/// Takes `id` out of the open parks (its log is being deleted).
pub(crate) fn close_park(conn: &Connection, id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached(CLOSE)
        .and_then(|mut statement| statement.execute([id]))
}

/// Up to `limit` events after `after`, in feed order. One statement, so
/// one snapshot. `limit` is already checked.
pub(crate) fn feed(
    conn: &Connection,
    after: FeedCursor,
    limit: usize,
) -> Result<Vec<FeedEntry>, StoreError> {
    if after.epoch() > 0 {
        // Past every position this store hands out.
        return Ok(Vec::new());
    }
    let mut statement = conn.prepare_cached(PAGE).map_err(error::store)?;
    let mut rows = statement
        .query(params![
            to_i64(after.position()),
            i64::try_from(limit).unwrap_or(i64::MAX)
        ])
        .map_err(error::store)?;
    let mut entries = Vec::with_capacity(limit.min(64));
    while let Some(row) = rows.next().map_err(error::store)? {
        entries.push(entry(row)?);
    }
    Ok(entries)
}

/// Reads one feed row, checked: the position must be an integer in
/// 1..=2^53-1 and the id valid, or the row is corrupt (named by its key).
fn entry(row: &Row<'_>) -> Result<FeedEntry, StoreError> {
    let id: String = row
        .get(1)
        .map_err(|e| corrupt(format!("events: execution_id is not text: {e}")))?;
    let sequence: i64 = row
        .get(2)
        .map_err(|e| corrupt(format!("events: {id:?}: sequence is not an integer: {e}")))?;
    let named = format!("events: ({id:?}, {sequence})");
    let position = match row.get::<_, Value>(0).map_err(error::store)? {
        Value::Integer(position) if position > 0 => to_u64(position),
        other => {
            return Err(corrupt(format!(
                "{named}: feed is {other:?}, not a position (an integer from 1)"
            )));
        }
    };
    let cursor = FeedCursor::new(0, position)
        .map_err(|e| corrupt(format!("{named}: feed is out of range: {e}")))?;
    let execution_id = ExecutionId::new(id.clone())
        .map_err(|e| corrupt(format!("{named}: execution_id is not a valid id: {e}")))?;
    let payload: String = row.get(4).map_err(error::store)?;
    let metadata: String = row.get(5).map_err(error::store)?;
    Ok(FeedEntry {
        cursor,
        event: Envelope {
            execution_id,
            sequence: to_u64(sequence),
            kind: row.get(3).map_err(error::store)?,
            payload: object(&payload, "payload")?,
            metadata: object(&metadata, "metadata")?,
            at: row.get(6).map_err(error::store)?,
        },
    })
}

/// Up to `limit` open parks after `after`, in byte order. `limit` is
/// already checked.
pub(crate) fn open_parks(
    conn: &Connection,
    after: Option<&ExecutionId>,
    limit: usize,
) -> Result<Vec<ExecutionId>, StoreError> {
    let mut statement = conn.prepare_cached(OPEN_PARKS).map_err(error::store)?;
    let mut rows = statement
        .query(params![
            after.map_or("", ExecutionId::as_str),
            i64::try_from(limit).unwrap_or(i64::MAX)
        ])
        .map_err(error::store)?;
    let mut ids = Vec::new();
    while let Some(row) = rows.next().map_err(error::store)? {
        let id: String = row
            .get(0)
            .map_err(|e| corrupt(format!("open_parks: execution_id is not text: {e}")))?;
        ids.push(
            ExecutionId::new(id.clone())
                .map_err(|e| corrupt(format!("open_parks: {id:?} is not a valid id: {e}")))?,
        );
    }
    Ok(ids)
}
