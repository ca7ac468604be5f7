//! What retention asks of the store: the paged listing, its index, and the
//! guarded delete.
//!
//! The listing walks the distinct ids of `events` one index seek at a time
//! (a recursive query whose every step is "the smallest id after this
//! one"), and for each id reads its head and its first terminal event with
//! one more seek each: a page of `limit` executions costs `limit` times a
//! few B-tree descents, however long the logs are and however many
//! executions the file holds. The first-terminal seek uses
//! [`ENDED_INDEX`], a partial index holding only the terminal events.
//!
//! The guarded delete runs on the writer thread, in the same `BEGIN
//! IMMEDIATE` transaction as every other write: the child's head, each
//! parent's check (the answering test the conditional acquire uses) and the
//! delete cannot interleave with an append from this process or another.

use std::sync::LazyLock;

use loomfence_core::{
    Envelope, ExecutionId, KernelKind, Status,
    retention::{DeleteGuard, Ended, ExecutionSummary, GuardedDelete, parent_moved},
};
use loomfence_store::{StoreError, checks::check_read};
use rusqlite::{Connection, params};

use crate::error::{self, corrupt};
use crate::ops::{self, to_u64};

#[cfg(test)]
mod tests;

/// The name of the partial index of terminal events. A build that changes
/// the set of terminal kinds must give the index a new name: `CREATE INDEX
/// IF NOT EXISTS` would keep the old one, and the planner uses a partial
/// index only when the query's filter is the index's own.
pub(crate) const ENDED_INDEX: &str = "events_ended";

/// The kernel kinds that end an execution, as the core's status fold says
/// (the kinds after which `Status::Pending` is terminal), so the SQL filter
/// cannot drift from the fold that `ended_of` and the memory store use.
fn terminal_kinds() -> impl Iterator<Item = KernelKind> {
    KernelKind::ALL
        .iter()
        .copied()
        .filter(|kind| Status::Pending.after(Some(*kind)).is_terminal())
}

/// `kind IN ('EXECUTION_COMPLETED', …)`: the filter of [`ENDED_INDEX`] and,
/// character for character, of the listing's terminal lookup (SQLite uses a
/// partial index only for a query that repeats its `WHERE` term). The names
/// are the kernel's constants, upper-case letters and underscores, so
/// inlining them quoted is safe (a unit test checks it).
static TERMINAL_FILTER: LazyLock<String> = LazyLock::new(|| {
    let names: Vec<String> = terminal_kinds()
        .map(|kind| format!("'{}'", kind.as_str()))
        .collect();
    format!("kind IN ({})", names.join(", "))
});

/// The statement that creates [`ENDED_INDEX`]: every terminal event, keyed
/// like the table, so "the first terminal event of this execution" is one
/// seek that reads one entry.
fn ended_index_ddl() -> String {
    format!(
        "CREATE INDEX IF NOT EXISTS {ENDED_INDEX} ON events (execution_id, sequence) \
         WHERE {}",
        *TERMINAL_FILTER
    )
}

/// Creates [`ENDED_INDEX`] if it is missing. Idempotent; `conn` must be
/// inside the schema's write transaction (see [`crate::schema`]).
///
/// The index is additive, as the `timers` table is: a build that does not
/// know it still keeps it up to date (SQLite maintains every index on
/// insert and delete), so it does not change the schema version.
pub(crate) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&ended_index_ddl())
}

/// The listing. `?1` is the exclusive lower bound (the empty string for the
/// first page: every id is longer), `?2` the page size.
///
/// `page` walks the distinct ids in byte order: each step is the smallest
/// id above the previous one, a seek on the primary key. It ends on `NULL`
/// (no id above) or after `?2` rows; the `NULL` row is dropped. Every id
/// comparison is `BINARY`, the order of `ExecutionId`'s `Ord` (UTF-8 bytes),
/// which is also the primary key's, so the seeks need no other index.
///
/// The first end names its index (`INDEXED BY`): without statistics the
/// planner prefers the primary key, whose `execution_id = ?` range it
/// would then walk event by event up to the end, reading a long log whole
/// for one row. Naming it also makes a file that lost the index fail the
/// listing loudly instead of slowly (opening recreates it).
static LIST: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH RECURSIVE page(execution_id) AS ( \
             SELECT (SELECT MIN(execution_id COLLATE BINARY) FROM events \
                     WHERE execution_id > ?1 COLLATE BINARY) \
             UNION ALL \
             SELECT (SELECT MIN(execution_id COLLATE BINARY) FROM events \
                     WHERE execution_id > page.execution_id COLLATE BINARY) \
             FROM page WHERE page.execution_id IS NOT NULL \
             LIMIT ?2 \
         ) \
         SELECT page.execution_id, \
                (SELECT MAX(sequence) FROM events WHERE execution_id = page.execution_id), \
                ended.sequence, ended.at \
         FROM page \
         LEFT JOIN events AS ended ON ended.execution_id = page.execution_id \
             AND ended.sequence = (SELECT MIN(sequence) FROM events INDEXED BY {ENDED_INDEX} \
                 WHERE execution_id = page.execution_id AND {}) \
         WHERE page.execution_id IS NOT NULL",
        *TERMINAL_FILTER
    )
});

/// Up to `limit` executions with a log after `after`, in byte order. One
/// statement, so one snapshot: a page never mixes states of the file.
/// `limit` is already checked.
pub(crate) fn list_executions(
    conn: &Connection,
    after: Option<&ExecutionId>,
    limit: u32,
) -> Result<Vec<ExecutionSummary>, StoreError> {
    let mut statement = conn.prepare_cached(&LIST).map_err(error::store)?;
    let mut rows = statement
        .query(params![after.map_or("", ExecutionId::as_str), limit])
        .map_err(error::store)?;
    let mut page = Vec::new();
    while let Some(row) = rows.next().map_err(error::store)? {
        let id: String = row.get(0).map_err(error::store)?;
        let execution_id =
            ExecutionId::new(id).map_err(|e| corrupt(format!("stored execution id: {e}")))?;
        let head: i64 = row.get(1).map_err(error::store)?;
        let sequence: Option<i64> = row.get(2).map_err(error::store)?;
        let at: Option<i64> = row.get(3).map_err(error::store)?;
        page.push(ExecutionSummary {
            execution_id,
            head: to_u64(head),
            ended: sequence.zip(at).map(|(sequence, at)| Ended {
                sequence: to_u64(sequence),
                at,
            }),
        });
    }
    // The recursion yields its rows in the order it found them, which is
    // ascending; SQLite does not promise that order for a query without
    // `ORDER BY`, so it is checked here (one pass), and restored if a
    // future SQLite ever differs, rather than paid for with a sort in SQL.
    if !page.is_sorted_by(|a, b| a.execution_id <= b.execution_id) {
        page.sort_unstable_by(|a, b| a.execution_id.cmp(&b.execution_id));
    }
    Ok(page)
}

/// The whole logs of `ids`, in order, in one read transaction: one
/// snapshot and one read lock for the lot instead of one per log.
pub(crate) fn read_logs(
    conn: &Connection,
    ids: &[ExecutionId],
) -> Result<Vec<Vec<Envelope>>, StoreError> {
    let whole = check_read(1, None)?;
    let read = |conn: &Connection| -> Result<Vec<Vec<Envelope>>, StoreError> {
        ids.iter()
            .map(|id| ops::read_range(conn, id, whole.from_seq, whole.to_seq))
            .collect()
    };
    // A `:memory:` store reads on its writer, which may be inside its own
    // transaction already: that one is the snapshot then.
    if !conn.is_autocommit() {
        return read(conn);
    }
    conn.execute_batch("BEGIN DEFERRED").map_err(error::store)?;
    let logs = read(conn);
    conn.execute_batch("COMMIT").map_err(error::store)?;
    logs
}

/// The guarded delete, inside the writer's transaction: the log's head must
/// still be `guard.head`, and no parent may have moved past the head its pin
/// check saw (the core's [`parent_moved`], fed by the conditional acquire's
/// answering test); then the same delete as
/// [`delete_execution`](ops::delete_execution). `guard` is already checked.
pub(crate) fn delete_execution_if(
    conn: &Connection,
    id: &ExecutionId,
    guard: &DeleteGuard,
) -> Result<GuardedDelete, StoreError> {
    let head = ops::head(conn, id.as_str())?;
    if head != guard.head {
        return Ok(GuardedDelete::LogChanged { head });
    }
    for mark in &guard.parents {
        let parent = mark.parent.as_str();
        let answered = ops::answered_after(conn, parent, mark.seen)?;
        if parent_moved(ops::head(conn, parent)?, mark.seen, answered) {
            return Ok(GuardedDelete::ParentMoved {
                parent: mark.parent.clone(),
            });
        }
    }
    ops::delete_execution(conn, id.as_str())?;
    Ok(GuardedDelete::Deleted)
}
