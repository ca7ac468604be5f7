//! The timer store's operations as synchronous steps on a connection: the
//! rules of the core's [`TimerTable`](loomfence_core::timer::TimerTable) stated as
//! SQL, one statement each.
//!
//! Writes run on the writer thread inside its `BEGIN IMMEDIATE` group, in a
//! savepoint of their own (see [`crate::writer`]); an error rolls the
//! savepoint back. A claim that meets a row it cannot read leaves that row
//! unclaimed and reports it (see [`claim_due`]). Inputs were checked with the core's `check_*` functions before
//! anything was queued.

use loomfence_core::{
    ExecutionId,
    timer::{
        Claim, Completed, DueFilter, Lease, MAX_TIMER_MS, Redrive, TimerRow, UnreadableField,
        UnreadableRow, read_redrive_flag,
    },
};
use loomfence_store::{BackendError, ClaimPage, StoreError};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row, params};

use crate::error::{self, corrupt};

/// The upsert: the re-drive flag is kept or added, never cleared
/// (`coalesce(new, old)`); any claim ends; the claim count stays, so a
/// later claim is still numbered above every earlier one.
const SCHEDULE: &str = "INSERT INTO timers (execution_id, wake_at, redrive) VALUES (?1, ?2, ?3) \
     ON CONFLICT (execution_id, wake_at) DO UPDATE SET \
     redrive = COALESCE(excluded.redrive, timers.redrive), holder = NULL, lease_until = NULL";

/// Due rows, claimed or not; `?2` false leaves re-drive rows out before
/// the limit.
pub(crate) const DUE: &str = "SELECT execution_id, wake_at, redrive FROM timers \
     WHERE wake_at <= ?1 AND (?2 OR redrive IS NULL) \
     ORDER BY wake_at, execution_id COLLATE BINARY LIMIT ?3";

/// The claim's candidates: the due rows that are free (never held,
/// released, or their lease ended at or before `?1`) and that the filter
/// (`?2`) admits, earliest first, with their claim count. It has no
/// `LIMIT`: the claim steps through it only until its page is full of rows
/// it can read, so unreadable rows take no slot, and the index means a
/// step never scans or sorts. It runs under the writer's write lock, so no
/// other claim sees the rows free in between.
pub(crate) const CANDIDATES: &str = "SELECT execution_id, wake_at, redrive, claims FROM timers \
     WHERE wake_at <= ?1 AND (holder IS NULL OR lease_until <= ?1) AND (?2 OR redrive IS NULL) \
     ORDER BY wake_at, execution_id COLLATE BINARY";

/// Leases one candidate the claim could read, by its key.
const TAKE: &str = "UPDATE timers SET holder = ?3, lease_until = ?4, claims = ?5 \
     WHERE execution_id = ?1 AND wake_at = ?2";

/// Retires a row, only for its current claim.
const COMPLETE: &str = "DELETE FROM timers \
     WHERE execution_id = ?1 AND wake_at = ?2 AND holder = ?3 AND claims = ?4";

/// Hands a row back, only for its current claim.
const RELEASE: &str = "UPDATE timers SET holder = NULL, lease_until = NULL \
     WHERE execution_id = ?1 AND wake_at = ?2 AND holder = ?3 AND claims = ?4";

/// A row's re-drive flag as the `redrive` column holds it: the flag's JSON
/// (`{"attempt":n}`), as the design stores it (design: the re-drive).
pub(crate) fn encode_redrive(redrive: Option<Redrive>) -> Result<Option<String>, StoreError> {
    redrive
        .map(|flag| {
            serde_json::to_string(&flag).map_err(|e| {
                StoreError::Backend(BackendError::permanent(format!(
                    "could not encode the redrive flag {flag:?}: {e}"
                )))
            })
        })
        .transpose()
}

/// Writes or merges a row whose flag is already encoded.
pub(crate) fn schedule(
    conn: &Connection,
    execution_id: &ExecutionId,
    wake_at: i64,
    redrive: Option<&str>,
) -> Result<(), StoreError> {
    conn.prepare_cached(SCHEDULE)
        .and_then(|mut statement| {
            statement.execute(params![execution_id.as_str(), wake_at, redrive])
        })
        .map_err(error::store)?;
    Ok(())
}

/// Up to `limit` due rows, earliest first.
pub(crate) fn due(
    conn: &Connection,
    now: i64,
    limit: usize,
    filter: DueFilter,
) -> Result<Vec<TimerRow>, StoreError> {
    let mut statement = conn.prepare_cached(DUE).map_err(error::store)?;
    let mut rows = statement
        .query(params![now, filter.redrive, to_i64(limit)])
        .map_err(error::store)?;
    let mut due = Vec::new();
    while let Some(row) = rows.next().map_err(error::store)? {
        due.push(read_row(row)?);
    }
    Ok(due)
}

/// Claims up to `limit` free due rows for `lease`, until `expires_at`.
///
/// Each candidate is read with the rules a checked write keeps
/// ([`decode`]); one that does not read back is not claimed and does not
/// count toward `limit`, and up to `limit` of them come back beside the
/// claims. The candidates are read first and leased after, by key, all
/// inside the writer's savepoint.
pub(crate) fn claim_due(
    conn: &Connection,
    lease: &Lease,
    expires_at: i64,
    limit: usize,
    filter: DueFilter,
) -> Result<ClaimPage, StoreError> {
    let mut taken: Vec<(TimerRow, u64)> = Vec::new();
    let mut unreadable = Vec::new();
    {
        let mut statement = conn.prepare_cached(CANDIDATES).map_err(error::store)?;
        let mut rows = statement
            .query(params![lease.now, filter.redrive])
            .map_err(error::store)?;
        while taken.len() < limit {
            let Some(row) = rows.next().map_err(error::store)? else {
                break;
            };
            let column = |index| row.get_ref(index).map_err(error::store);
            match decode(column(0)?, column(1)?, column(2)?)
                .and_then(|timer| next_claim(&timer, column(3).ok()).map(|n| (timer, n)))
            {
                Ok(candidate) => taken.push(candidate),
                Err(row) if unreadable.len() < limit => unreadable.push(row),
                Err(_) => {}
            }
        }
    }
    let mut claims = Vec::with_capacity(taken.len());
    let mut take = conn.prepare_cached(TAKE).map_err(error::store)?;
    for (row, number) in taken {
        // The count was read under the same lock: it is `number - 1` still.
        take.execute(params![
            row.execution_id.as_str(),
            row.wake_at,
            lease.holder.as_str(),
            expires_at,
            i64::try_from(number).unwrap_or(i64::MAX)
        ])
        .map_err(error::store)?;
        claims.push(Claim {
            row,
            holder: lease.holder.clone(),
            number,
            expires_at,
        });
    }
    Ok(ClaimPage { claims, unreadable })
}

/// Deletes the claimed row if `claim` is its current claim.
pub(crate) fn complete(conn: &Connection, claim: &Claim) -> Result<Completed, StoreError> {
    if_held(conn, COMPLETE, claim)
}

/// Deletes the claimed row and writes the next one (its flag already
/// encoded), if `claim` is the row's current claim: both in the caller's
/// one savepoint on the writer thread, so no claimer, schedule or complete
/// comes between them, and nothing is written when the claim is lost.
pub(crate) fn reschedule(
    conn: &Connection,
    claim: &Claim,
    next: &TimerRow,
    redrive: Option<&str>,
) -> Result<Completed, StoreError> {
    let retired = complete(conn, claim)?;
    if retired == Completed::Done {
        schedule(conn, &next.execution_id, next.wake_at, redrive)?;
    }
    Ok(retired)
}

/// Frees the claimed row if `claim` is its current claim.
pub(crate) fn release(conn: &Connection, claim: &Claim) -> Result<Completed, StoreError> {
    if_held(conn, RELEASE, claim)
}

/// Runs `sql` (keyed by the claim's row, holder and number) and answers
/// whether it touched the row.
fn if_held(conn: &Connection, sql: &str, claim: &Claim) -> Result<Completed, StoreError> {
    // A number no row can carry: nothing to do.
    let Ok(number) = i64::try_from(claim.number) else {
        return Ok(Completed::NotHeld);
    };
    let touched = conn
        .prepare_cached(sql)
        .and_then(|mut statement| {
            statement.execute(params![
                claim.row.execution_id.as_str(),
                claim.row.wake_at,
                claim.holder.as_str(),
                number
            ])
        })
        .map_err(error::store)?;
    Ok(if touched == 0 {
        Completed::NotHeld
    } else {
        Completed::Done
    })
}

/// A limit as SQLite takes it (at most `MAX_DUE_LIMIT`, checked before).
fn to_i64(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Reads columns 0 to 2 (`execution_id`, `wake_at`, `redrive`) as a row,
/// or says which column is not what this store writes.
fn read_row(row: &Row<'_>) -> Result<TimerRow, StoreError> {
    let column = |index| row.get_ref(index).map_err(error::store);
    decode(column(0)?, column(1)?, column(2)?).map_err(|row| {
        corrupt(format!(
            "timers: row ({:?}, {}): {}",
            row.execution_id,
            row.wake_at
                .map_or_else(|| "?".to_owned(), |at| at.to_string()),
            row.detail
        ))
    })
}

/// A stored row, checked as the core checks one before it is written: a
/// valid id, a time in `0..=MAX_TIMER_MS`, no flag or a flag the core's
/// [`read_redrive_flag`] reads. Anything else is an [`UnreadableRow`]
/// naming the column, never guessed at.
pub(crate) fn decode(
    execution_id: ValueRef<'_>,
    wake_at: ValueRef<'_>,
    redrive: ValueRef<'_>,
) -> Result<TimerRow, UnreadableRow> {
    let key_text = match execution_id {
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            String::from_utf8_lossy(bytes).into_owned()
        }
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(x) => x.to_string(),
        ValueRef::Null => String::new(),
    };
    let key_time = match wake_at {
        ValueRef::Integer(n) => Some(n),
        _ => None,
    };
    let bad = |field, detail: String| UnreadableRow {
        execution_id: key_text.clone(),
        wake_at: key_time,
        field,
        detail,
    };
    let ValueRef::Text(bytes) = execution_id else {
        return Err(bad(
            UnreadableField::ExecutionId,
            format!("execution_id is {}, not text", describe(execution_id)),
        ));
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        bad(
            UnreadableField::ExecutionId,
            format!("execution_id {} is not UTF-8: {e}", describe(execution_id)),
        )
    })?;
    let execution_id = ExecutionId::new(text).map_err(|e| {
        bad(
            UnreadableField::ExecutionId,
            format!("execution_id {text:?} is not a valid id: {e}"),
        )
    })?;
    let Some(wake_at_ms) = key_time else {
        return Err(bad(
            UnreadableField::WakeAt,
            format!("wake_at is {}, not an integer", describe(wake_at)),
        ));
    };
    if !(0..=MAX_TIMER_MS).contains(&wake_at_ms) {
        return Err(bad(
            UnreadableField::WakeAt,
            format!("wake_at {wake_at_ms} is outside 0..=2^53-1"),
        ));
    }
    let redrive = match redrive {
        ValueRef::Null => None,
        ValueRef::Text(json) => Some(read_redrive_flag(json).map_err(|reason| {
            bad(
                UnreadableField::Redrive,
                format!("redrive {} {reason}", describe(redrive)),
            )
        })?),
        other => {
            return Err(bad(
                UnreadableField::Redrive,
                format!("redrive is {}, not JSON text or NULL", describe(other)),
            ));
        }
    };
    Ok(TimerRow {
        execution_id,
        wake_at: wake_at_ms,
        redrive,
    })
}

/// The number a claim of `row` gets: its stored claim count (a
/// non-negative integer below `i64::MAX`) plus one.
fn next_claim(row: &TimerRow, claims: Option<ValueRef<'_>>) -> Result<u64, UnreadableRow> {
    match claims {
        Some(ValueRef::Integer(n)) if (0..i64::MAX).contains(&n) => Ok(n.unsigned_abs() + 1),
        other => Err(UnreadableRow {
            execution_id: row.execution_id.as_str().to_owned(),
            wake_at: Some(row.wake_at),
            field: UnreadableField::Claims,
            detail: format!(
                "claims is {}, not a non-negative integer",
                other.map_or_else(|| "unreadable".to_owned(), describe)
            ),
        }),
    }
}

/// A stored value, for messages: its type and (shortened) content.
fn describe(value: ValueRef<'_>) -> String {
    /// The most of a stored text a message quotes.
    const SHOWN: usize = 80;
    match value {
        ValueRef::Null => "NULL".to_owned(),
        ValueRef::Integer(n) => format!("the integer {n}"),
        ValueRef::Real(x) => format!("the real {x}"),
        ValueRef::Text(bytes) => {
            let text = String::from_utf8_lossy(bytes);
            let shown: String = text.chars().take(SHOWN).collect();
            if shown.len() < text.len() {
                format!("the text {shown:?}… ({} bytes)", bytes.len())
            } else {
                format!("the text {shown:?}")
            }
        }
        ValueRef::Blob(bytes) => format!("a blob of {} bytes", bytes.len()),
    }
}

mod records;

pub(crate) use records::{clear_exhausted, exhaust, exhausted, list};

#[cfg(test)]
mod tests;
