//! The timer store's operations as synchronous steps on a connection: the
//! rules of the core's [`TimerTable`](loomfence_core::TimerTable) stated as
//! SQL, one statement each.
//!
//! Writes run on the writer thread inside its `BEGIN IMMEDIATE` group, in a
//! savepoint of their own (see [`crate::writer`]); an error rolls the
//! savepoint back, so a claim that meets a row it cannot read claims
//! nothing. Inputs were checked with the core's `check_*` functions before
//! anything was queued.

use loomfence_core::{
    Claim, Completed, DueFilter, ExecutionId, Lease, MAX_TIMER_MS, Redrive, TimerRow, check_row,
};
use loomfence_store::{BackendError, StoreError};
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

/// The claim, one statement: the inner select picks the earliest due rows
/// that are free (never held, released, or their lease ended at or before
/// `now`) and that the filter admits; the update leases them. It runs under
/// the writer's write lock, so no other claim sees the rows free in
/// between. `RETURNING` gives the rows in no particular order; they are
/// sorted after.
pub(crate) const CLAIM: &str = "UPDATE timers SET holder = ?1, lease_until = ?2, claims = claims + 1 \
     WHERE (execution_id, wake_at) IN (\
         SELECT execution_id, wake_at FROM timers \
         WHERE wake_at <= ?3 AND (holder IS NULL OR lease_until <= ?3) AND (?4 OR redrive IS NULL) \
         ORDER BY wake_at, execution_id COLLATE BINARY LIMIT ?5) \
     RETURNING execution_id, wake_at, redrive, claims";

/// Retires a row, only for its current claim.
const COMPLETE: &str = "DELETE FROM timers \
     WHERE execution_id = ?1 AND wake_at = ?2 AND holder = ?3 AND claims = ?4";

/// Hands a row back, only for its current claim.
const RELEASE: &str = "UPDATE timers SET holder = NULL, lease_until = NULL \
     WHERE execution_id = ?1 AND wake_at = ?2 AND holder = ?3 AND claims = ?4";

/// A row's re-drive flag as the `redrive` column holds it: the flag's JSON
/// (`{"attempt":n}`), as the reference design stores it.
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
pub(crate) fn claim_due(
    conn: &Connection,
    lease: &Lease,
    expires_at: i64,
    limit: usize,
    filter: DueFilter,
) -> Result<Vec<Claim>, StoreError> {
    let mut statement = conn.prepare_cached(CLAIM).map_err(error::store)?;
    let mut rows = statement
        .query(params![
            lease.holder.as_str(),
            expires_at,
            lease.now,
            filter.redrive,
            to_i64(limit)
        ])
        .map_err(error::store)?;
    let mut claims = Vec::new();
    while let Some(row) = rows.next().map_err(error::store)? {
        let timer = read_row(row)?;
        let number = read_claims(row.get_ref(3).map_err(error::store)?)
            .map_err(|e| corrupt(format!("timers: {}: {e}", describe_key(&timer))))?;
        claims.push(Claim {
            row: timer,
            holder: lease.holder.clone(),
            number,
            expires_at,
        });
    }
    claims.sort_by(|a, b| a.row.due_key().cmp(&b.row.due_key()));
    Ok(claims)
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
    decode(column(0)?, column(1)?, column(2)?).map_err(|e| corrupt(format!("timers: {e}")))
}

/// A stored row, checked as the core checks one before it is written: a
/// valid id, a time in `0..=MAX_TIMER_MS`, no flag or a `{"attempt": n}`
/// within range. Anything else is reported, never guessed at.
pub(crate) fn decode(
    execution_id: ValueRef<'_>,
    wake_at: ValueRef<'_>,
    redrive: ValueRef<'_>,
) -> Result<TimerRow, String> {
    let ValueRef::Text(bytes) = execution_id else {
        return Err(format!(
            "execution_id is {}, not text",
            describe(execution_id)
        ));
    };
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("execution_id {} is not UTF-8: {e}", describe(execution_id)))?;
    let execution_id = ExecutionId::new(text)
        .map_err(|e| format!("execution_id {text:?} is not a valid id: {e}"))?;
    let key = |wake_at: &dyn std::fmt::Display| format!("row ({execution_id:?}, {wake_at})");
    let ValueRef::Integer(wake_at) = wake_at else {
        return Err(format!(
            "{}: wake_at is {}, not an integer",
            key(&"?"),
            describe(wake_at)
        ));
    };
    if !(0..=MAX_TIMER_MS).contains(&wake_at) {
        return Err(format!(
            "{}: wake_at {wake_at} is outside 0..=2^53-1",
            key(&wake_at)
        ));
    }
    let redrive = match redrive {
        ValueRef::Null => None,
        ValueRef::Text(json) => Some(serde_json::from_slice::<Redrive>(json).map_err(|e| {
            format!(
                "{}: redrive {} is not a re-drive flag {{\"attempt\": n}}: {e}",
                key(&wake_at),
                describe(redrive)
            )
        })?),
        other => {
            return Err(format!(
                "{}: redrive is {}, not JSON text or NULL",
                key(&wake_at),
                describe(other)
            ));
        }
    };
    let row = TimerRow {
        execution_id,
        wake_at,
        redrive,
    };
    match check_row(&row) {
        Ok(()) => Ok(row),
        Err(e) => Err(format!("{}: {e}", describe_key(&row))),
    }
}

/// A claim count just incremented: a positive integer.
fn read_claims(claims: ValueRef<'_>) -> Result<u64, String> {
    match claims {
        ValueRef::Integer(n) if n >= 1 => Ok(n.unsigned_abs()),
        other => Err(format!(
            "claims is {}, not a positive integer",
            describe(other)
        )),
    }
}

/// A row's key, for messages.
fn describe_key(row: &TimerRow) -> String {
    format!("row ({:?}, {})", row.execution_id, row.wake_at)
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

#[cfg(test)]
mod tests;
