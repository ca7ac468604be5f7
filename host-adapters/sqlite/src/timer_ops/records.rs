//! What the timer store keeps for an operator, as SQL: an exhaustion
//! recorded under its claim, the listing of live rows with their claims,
//! and the exhausted records.
//!
//! The rules are the core's
//! [`TimerTable::exhaust`](loomfence_core::timer::TimerTable::exhaust),
//! [`list`](loomfence_core::timer::TimerTable::list),
//! [`exhausted`](loomfence_core::timer::TimerTable::exhausted) and
//! [`clear_exhausted`](loomfence_core::timer::TimerTable::clear_exhausted).

use loomfence_core::{
    ExecutionId,
    timer::{
        Claim, Completed, ExhaustedQuery, ExhaustedRow, Exhaustion, Held, MAX_TIMER_MS, NodeId,
        TimerEntry, TimerQuery, UnreadableField, UnreadableRow,
    },
};
use loomfence_store::{StoreError, TimerListing};
use rusqlite::types::{ToSql, ValueRef};
use rusqlite::{Connection, Row, params};

use super::{COMPLETE, decode, describe, next_claim, to_i64};
use crate::error::{self, corrupt};

/// Copies the claimed row, its flag as stored, into the exhausted records
/// (replacing one of the same key), only for its current claim: the
/// `SELECT` finds the row only while `?3`/`?4` are its holder and claim
/// count. (`WHERE` is what lets SQLite read the upsert after a `SELECT`.)
const RECORD: &str = "INSERT INTO exhausted_timers (execution_id, wake_at, redrive, attempts, at) \
     SELECT execution_id, wake_at, redrive, ?5, ?6 FROM timers \
     WHERE execution_id = ?1 AND wake_at = ?2 AND holder = ?3 AND claims = ?4 \
     ON CONFLICT (execution_id, wake_at) DO UPDATE SET \
     redrive = excluded.redrive, attempts = excluded.attempts, at = excluded.at";

/// Removes one exhausted record.
const CLEAR: &str = "DELETE FROM exhausted_timers WHERE execution_id = ?1 AND wake_at = ?2";

/// Records the claimed row's exhaustion and retires the row, if `claim` is
/// its current claim; otherwise writes nothing. Both statements run in the
/// caller's one savepoint on the writer thread, so no claim, schedule or
/// complete comes between the check and the delete.
pub(crate) fn exhaust(
    conn: &Connection,
    claim: &Claim,
    exhaustion: Exhaustion,
) -> Result<Completed, StoreError> {
    // A number no row can carry: nothing to do.
    let Ok(number) = i64::try_from(claim.number) else {
        return Ok(Completed::NotHeld);
    };
    let (id, wake_at, holder) = (
        claim.row.execution_id.as_str(),
        claim.row.wake_at,
        claim.holder.as_str(),
    );
    let recorded = conn
        .prepare_cached(RECORD)
        .and_then(|mut statement| {
            statement.execute(params![
                id,
                wake_at,
                holder,
                number,
                i64::from(exhaustion.attempts),
                exhaustion.at
            ])
        })
        .map_err(error::store)?;
    if recorded == 0 {
        return Ok(Completed::NotHeld);
    }
    let retired = conn
        .prepare_cached(COMPLETE)
        .and_then(|mut statement| statement.execute(params![id, wake_at, holder, number]))
        .map_err(error::store)?;
    if retired == 1 {
        Ok(Completed::Done)
    } else {
        // The record's `SELECT` found the held row under the same lock: a
        // delete that misses it is a broken invariant, and the caller's
        // savepoint rolls the record back.
        Err(corrupt(format!(
            "timers: row ({:?}, {}) was held for its exhaustion but not retired",
            claim.row.execution_id.as_str(),
            claim.row.wake_at
        )))
    }
}

/// Removes the record of `(execution_id, wake_at)`; whether there was one.
pub(crate) fn clear_exhausted(
    conn: &Connection,
    execution_id: &ExecutionId,
    wake_at: i64,
) -> Result<bool, StoreError> {
    let removed = conn
        .prepare_cached(CLEAR)
        .and_then(|mut statement| statement.execute(params![execution_id.as_str(), wake_at]))
        .map_err(error::store)?;
    Ok(removed > 0)
}

/// The live rows `query` names (limit already checked), each with its
/// claim, in due order; every filter is in the statement's `WHERE`.
///
/// Like a claim, the listing steps through the rows in order until its
/// page holds `limit` rows it can read: one that does not read back takes
/// no slot, and up to `limit` of them come back in
/// [`TimerListing::unreadable`].
pub(crate) fn list(
    conn: &Connection,
    query: &TimerQuery,
    limit: usize,
) -> Result<TimerListing, StoreError> {
    let (sql, values) = list_statement(query);
    let mut statement = conn.prepare_cached(&sql).map_err(error::store)?;
    let arguments: Vec<&dyn ToSql> = values.iter().map(|value| value as &dyn ToSql).collect();
    let mut rows = statement
        .query(arguments.as_slice())
        .map_err(error::store)?;
    let mut listing = TimerListing::default();
    while listing.entries.len() < limit {
        let Some(row) = rows.next().map_err(error::store)? else {
            break;
        };
        match read_entry(row)? {
            Ok(entry) => listing.entries.push(entry),
            Err(bad) if listing.unreadable.len() < limit => listing.unreadable.push(bad),
            Err(_) => {}
        }
    }
    Ok(listing)
}

/// One argument of the listing's statement.
#[derive(Debug)]
enum Arg {
    /// An id.
    Text(String),
    /// A time.
    Int(i64),
}

impl ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Self::Text(text) => text.to_sql(),
            Self::Int(n) => n.to_sql(),
        }
    }
}

/// The listing's statement for the filters `query` sets, and its
/// arguments. Each filter present is a plain condition (not an
/// `?n IS NULL OR ...` the planner cannot use an index for), so one
/// execution's rows read from the primary key, and the rest from the due
/// index, in its order.
fn list_statement(query: &TimerQuery) -> (String, Vec<Arg>) {
    let mut conditions = Vec::new();
    let mut values = Vec::new();
    if let Some(id) = &query.execution {
        values.push(Arg::Text(id.as_str().to_owned()));
        // As bytes, whatever collation an old table declared for the id.
        conditions.push(format!("execution_id = ?{} COLLATE BINARY", values.len()));
    }
    if let Some(due_by) = query.due_by {
        values.push(Arg::Int(due_by));
        conditions.push(format!("wake_at <= ?{}", values.len()));
    }
    if query.redrive_only {
        conditions.push("redrive IS NOT NULL".to_owned());
    }
    if let Some((wake_at, id)) = &query.after {
        values.push(Arg::Int(*wake_at));
        let at = values.len();
        values.push(Arg::Text(id.as_str().to_owned()));
        let after = values.len();
        conditions.push(format!(
            "(wake_at > ?{at} OR (wake_at = ?{at} AND execution_id > ?{after} COLLATE BINARY))"
        ));
    }
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {} ", conditions.join(" AND "))
    };
    (
        format!(
            "SELECT execution_id, wake_at, redrive, holder, lease_until, claims FROM timers \
             {filter}ORDER BY wake_at, execution_id COLLATE BINARY"
        ),
        values,
    )
}

/// Reads a listed row (columns as [`list_statement`] selects them) with its
/// claim, or says which column does not read back.
fn read_entry(row: &Row<'_>) -> Result<Result<TimerEntry, UnreadableRow>, StoreError> {
    let column = |index| row.get_ref(index).map_err(error::store);
    let timer = match decode(column(0)?, column(1)?, column(2)?) {
        Ok(timer) => timer,
        Err(bad) => return Ok(Err(bad)),
    };
    // The claim count reads as a claim would read it: `count + 1` fits.
    let number = match next_claim(&timer, Some(column(5)?)) {
        Ok(next) => next - 1,
        Err(bad) => return Ok(Err(bad)),
    };
    let bad = |detail: String| UnreadableRow {
        execution_id: timer.execution_id.as_str().to_owned(),
        wake_at: Some(timer.wake_at),
        field: UnreadableField::Claim,
        detail,
    };
    let held = match (column(3)?, column(4)?) {
        (ValueRef::Null, _) => None,
        (ValueRef::Text(bytes), ValueRef::Integer(expires_at)) => {
            let holder = std::str::from_utf8(bytes)
                .ok()
                .and_then(|text| NodeId::new(text).ok());
            let Some(holder) = holder else {
                return Ok(Err(bad(format!(
                    "holder {} is not a valid node id",
                    describe(ValueRef::Text(bytes))
                ))));
            };
            Some(Held {
                holder,
                number,
                expires_at,
            })
        }
        (holder @ ValueRef::Text(_), lease_until) => {
            return Ok(Err(bad(format!(
                "holder {} has lease_until {}, not an integer",
                describe(holder),
                describe(lease_until)
            ))));
        }
        (holder, _) => {
            return Ok(Err(bad(format!(
                "holder is {}, not text or NULL",
                describe(holder)
            ))));
        }
    };
    Ok(Ok(TimerEntry { row: timer, held }))
}

/// The exhausted records `query` names (limit already checked), in
/// `(execution_id, wake_at)` order: the table's primary key, ids as bytes.
/// A record that does not read back fails the listing, naming it, as a due
/// listing does: an operator's listing shows the damage.
pub(crate) fn exhausted(
    conn: &Connection,
    query: &ExhaustedQuery,
    limit: usize,
) -> Result<Vec<ExhaustedRow>, StoreError> {
    let mut conditions = Vec::new();
    let mut values = Vec::new();
    if let Some(id) = &query.execution {
        values.push(Arg::Text(id.as_str().to_owned()));
        conditions.push(format!("execution_id = ?{}", values.len()));
    }
    if let Some((id, wake_at)) = &query.after {
        values.push(Arg::Text(id.as_str().to_owned()));
        let after = values.len();
        values.push(Arg::Int(*wake_at));
        let at = values.len();
        conditions.push(format!(
            "(execution_id > ?{after} OR (execution_id = ?{after} AND wake_at > ?{at}))"
        ));
    }
    values.push(Arg::Int(to_i64(limit)));
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {} ", conditions.join(" AND "))
    };
    let sql = format!(
        "SELECT execution_id, wake_at, redrive, attempts, at FROM exhausted_timers \
         {filter}ORDER BY execution_id, wake_at LIMIT ?{}",
        values.len()
    );
    let mut statement = conn.prepare_cached(&sql).map_err(error::store)?;
    let arguments: Vec<&dyn ToSql> = values.iter().map(|value| value as &dyn ToSql).collect();
    let mut rows = statement
        .query(arguments.as_slice())
        .map_err(error::store)?;
    let mut records = Vec::new();
    while let Some(row) = rows.next().map_err(error::store)? {
        records.push(read_record(row)?);
    }
    Ok(records)
}

/// Reads an exhausted record, checked as the core checks what it records.
fn read_record(row: &Row<'_>) -> Result<ExhaustedRow, StoreError> {
    let column = |index| row.get_ref(index).map_err(error::store);
    let timer = decode(column(0)?, column(1)?, column(2)?).map_err(|row| {
        corrupt(format!(
            "exhausted_timers: record ({:?}, {}): {}",
            row.execution_id,
            row.wake_at
                .map_or_else(|| "?".to_owned(), |at| at.to_string()),
            row.detail
        ))
    })?;
    let refused = |what: &str, value: ValueRef<'_>| {
        corrupt(format!(
            "exhausted_timers: record ({:?}, {}): {what} is {}, not {}",
            timer.execution_id.as_str(),
            timer.wake_at,
            describe(value),
            if what == "attempts" {
                "an integer in 0..=2^32-1"
            } else {
                "an integer in 0..=2^53-1"
            }
        ))
    };
    let attempts = match column(3)? {
        ValueRef::Integer(n) => u32::try_from(n).ok(),
        _ => None,
    }
    .ok_or_else(|| refused("attempts", row.get_ref(3).unwrap_or(ValueRef::Null)))?;
    let at = match column(4)? {
        ValueRef::Integer(n) if (0..=MAX_TIMER_MS).contains(&n) => Some(n),
        _ => None,
    }
    .ok_or_else(|| refused("at", row.get_ref(4).unwrap_or(ValueRef::Null)))?;
    Ok(ExhaustedRow {
        row: timer,
        attempts,
        at,
    })
}

#[cfg(test)]
mod tests {
    use loomfence_core::timer::{DueFilter, Lease, UnreadableField};
    use rusqlite::StatementStatus;

    use super::super::{claim_due, schedule};
    use super::*;
    use crate::timer_schema;

    /// A table of `rows` rows at times `1_000..`, a tenth of them re-drive
    /// rows, the first ten held by `held`.
    fn table(rows: i64) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        timer_schema::migrate(&conn).unwrap();
        for n in 0..rows {
            let id = ExecutionId::new(format!("exec-{:05}", (n * 7919) % rows)).unwrap();
            let redrive = (n % 10 == 0).then_some("{\"attempt\":0}");
            schedule(&conn, &id, 1_000 + n, redrive).unwrap();
        }
        let lease = Lease {
            holder: NodeId::new("held").unwrap(),
            now: 1_009,
            duration_ms: 60_000,
        };
        claim_due(&conn, &lease, 61_009, 100, DueFilter::default()).unwrap();
        conn
    }

    /// The listing's statement for `query`, prepared and stepped: its plan
    /// lines, and whether it scanned the whole table or sorted.
    fn run(conn: &Connection, query: &TimerQuery, limit: usize) -> (TimerListing, Vec<String>) {
        let listing = list(conn, query, limit).unwrap();
        let (sql, values) = list_statement(query);
        let statement = conn.prepare_cached(&sql).unwrap();
        assert_eq!(
            statement.get_status(StatementStatus::Sort),
            0,
            "{query:?}: no sort"
        );
        drop(statement);
        let arguments: Vec<&dyn ToSql> = values.iter().map(|value| value as &dyn ToSql).collect();
        let mut explain = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let plan = explain
            .query_map(arguments.as_slice(), |row| row.get(3))
            .unwrap()
            .collect::<Result<Vec<String>, _>>()
            .unwrap();
        (listing, plan)
    }

    #[test]
    fn a_listing_reads_an_index_in_its_order_and_never_sorts() {
        let conn = table(10_000);
        let id = ExecutionId::new("exec-00042").unwrap();
        let queries = [
            TimerQuery::default(),
            TimerQuery {
                due_by: Some(5_000),
                redrive_only: true,
                ..TimerQuery::default()
            },
            TimerQuery {
                after: Some((9_000, id.clone())),
                ..TimerQuery::default()
            },
            TimerQuery {
                execution: Some(id.clone()),
                ..TimerQuery::default()
            },
        ];
        for query in &queries {
            let (listing, plan) = run(&conn, query, 10);
            assert!(!listing.entries.is_empty(), "{query:?}");
            assert!(
                !plan.iter().any(|line| line.contains("TEMP B-TREE")),
                "{query:?}: {plan:#?}"
            );
            let index = if query.execution.is_some() {
                "PRIMARY KEY"
            } else {
                "timers_due"
            };
            assert!(
                plan.iter().any(|line| line.contains(index)),
                "{query:?} reads {index}: {plan:#?}"
            );
        }
        // The first ten rows are held, the claim numbered 1.
        let (first, _) = run(&conn, &TimerQuery::default(), 11);
        let held: Vec<_> = first
            .entries
            .iter()
            .map(|entry| entry.held.is_some())
            .collect();
        assert_eq!(held, [[true; 10].as_slice(), &[false]].concat());
        assert_eq!(
            first.entries[0].held,
            Some(Held {
                holder: NodeId::new("held").unwrap(),
                number: 1,
                expires_at: 61_009,
            })
        );
    }

    #[test]
    fn a_claim_that_does_not_read_back_is_reported_by_the_listing() {
        let conn = Connection::open_in_memory().unwrap();
        timer_schema::migrate(&conn).unwrap();
        conn.execute_batch(
            "INSERT INTO timers (execution_id, wake_at, holder, lease_until, claims) VALUES
               ('ok', 1, 'n1', 50, 2),
               ('holder-empty', 2, '', 50, 1),
               ('holder-blob', 3, X'07', 50, 1),
               ('holder-no-lease', 4, 'n1', NULL, 1),
               ('lease-text', 5, 'n1', 'soon', 1),
               ('free', 6, NULL, NULL, 0);",
        )
        .unwrap();
        let listing = list(&conn, &TimerQuery::default(), 10).unwrap();
        let listed: Vec<_> = listing
            .entries
            .iter()
            .map(|entry| (entry.row.execution_id.as_str(), entry.held.clone()))
            .collect();
        assert_eq!(
            listed,
            [
                (
                    "ok",
                    Some(Held {
                        holder: NodeId::new("n1").unwrap(),
                        number: 2,
                        expires_at: 50
                    })
                ),
                ("free", None)
            ]
        );
        let reported: Vec<_> = listing
            .unreadable
            .iter()
            .map(|row| (row.execution_id.as_str(), row.field))
            .collect();
        assert_eq!(
            reported,
            [
                ("holder-empty", UnreadableField::Claim),
                ("holder-blob", UnreadableField::Claim),
                ("holder-no-lease", UnreadableField::Claim),
                ("lease-text", UnreadableField::Claim),
            ]
        );
        assert!(listing.unreadable.iter().all(|row| !row.detail.is_empty()));
    }
}
