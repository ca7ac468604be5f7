//! The `TimerStore` implementation: the core's `TimerTable` rules, each
//! stated as one SQL statement.

use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::Pool;
use loomfence_core::{
    ExecutionId,
    timer::{
        Claim, Completed, DueFilter, ExhaustedQuery, ExhaustedRow, Exhaustion, Held, Lease,
        MAX_TIMER_MS, NodeId, Redrive, TimerEntry, TimerQuery, TimerRow, UnreadableField,
        UnreadableRow, check_claim, check_clear, check_due, check_exhaust, check_lease,
        check_reschedule, check_row, read_redrive_flag,
    },
};
use loomfence_store::{ClaimPage, StoreError, TimerListing, TimerStore};
use serde_json::Value;
use tokio_postgres::Row;
use tokio_postgres::types::{Json, ToSql};

use crate::config::Schema;
use crate::conn::Conn;
use crate::error::{self, corrupt_timer};
use crate::inbox_sql::InboxSql;
use crate::timer_sql::{ListArg, TimerSql};

/// The timer rows of a fleet on PostgreSQL, beside its event logs.
///
/// It is a handle on the event store's pool and schema
/// ([`PostgresEventStore::timers`](crate::PostgresEventStore::timers)), so a
/// host configures one connection pool and one migration, and `migrate`
/// keeps both tables at the same version. Cloning it is cheap.
///
/// Every call is one statement, atomic at the server, with the semantics of
/// the core's [`TimerTable`](loomfence_core::timer::TimerTable), the reference the
/// conformance kit holds every timer store to. A claim leaves rows that do
/// not read back (the table holds data this store did not write) unclaimed
/// and answers them in [`ClaimPage::unreadable`]; it is wrapped in a
/// transaction, so that an answer of a shape this store did not ask for is
/// refused with the claim rolled back, as the error's "nothing happened"
/// promises.
///
/// An exhaustion is one statement too: the `DELETE` under the claim feeds
/// the upsert of the record into `exhausted_timers`, so nothing is recorded
/// for a claim that is not current. The operator's listing is one
/// statement per set of filters, answering the page and the rows of its
/// range that do not read back ([`TimerListing::unreadable`]).
///
/// It is the fleet's inbox too ([`InboxStore`](loomfence_store::InboxStore),
/// the `inbox` table `migrate` creates beside `timers`): a send writes its
/// message and its intent row in one transaction, which only a store that
/// owns both tables can do.
#[derive(Clone)]
pub struct PostgresTimerStore {
    /// The connections, shared with the event store.
    pool: Pool,
    /// Where the table lives.
    schema: Schema,
    /// The statements, built for the schema.
    pub(crate) sql: Arc<TimerSql>,
    /// The inbox's statements, built for the schema (see `inbox.rs`).
    pub(crate) inbox: Arc<InboxSql>,
}

impl std::fmt::Debug for PostgresTimerStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTimerStore")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl PostgresTimerStore {
    /// A handle on the `timers` table of `schema`, which `migrate` created.
    pub(crate) fn new(pool: Pool, schema: Schema) -> Self {
        Self {
            sql: Arc::new(TimerSql::new(&schema)),
            inbox: Arc::new(InboxSql::new(&schema)),
            pool,
            schema,
        }
    }

    /// The schema holding the table: for hosts and tests that inspect it
    /// beside the store.
    #[must_use]
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// A pooled connection.
    pub(crate) async fn client(&self) -> Result<Conn, StoreError> {
        let client = self
            .pool
            .get()
            .await
            .map_err(|e| StoreError::Backend(error::pool(e)))?;
        Ok(Conn::new(client))
    }

    /// The claim statement in a READ COMMITTED transaction: `BEGIN` and the
    /// claim pipelined in one round trip, the rows read back, then `COMMIT`,
    /// or `ROLLBACK` if the answer's columns are not of the asked types.
    ///
    /// Until `COMMIT` is sent nothing can commit, so a connection lost
    /// before it is a plain retryable failure; a lost answer to `COMMIT` is
    /// [`StoreError::OutcomeUnknown`] (the rows, if claimed, come back
    /// when the lease ends).
    async fn claim(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        lease: &Lease,
        expires_at: i64,
    ) -> Result<ClaimPage, StoreError> {
        let client = self.client().await?;
        let prepare = |sql: &'static str| client.prepare_cached(sql);
        let begin = prepare("BEGIN ISOLATION LEVEL READ COMMITTED")
            .await
            .map_err(|e| client.store(e))?;
        let commit = prepare("COMMIT").await.map_err(|e| client.store(e))?;
        let claim = client
            .prepare_cached(sql)
            .await
            .map_err(|e| client.store(e))?;
        client.ready_to_write()?;
        let (began, claimed) =
            tokio::join!(client.execute(&begin, &[]), client.query(&claim, params));
        if let Err(e) = began {
            // No transaction is open. Had `BEGIN` been refused by the server
            // while the connection lived, the claim would have run (and
            // committed) on its own: its outcome is then not what we think.
            return Err(match claimed {
                Ok(_) => StoreError::OutcomeUnknown(client.backend(e)),
                Err(_) => StoreError::Backend(client.backend(e)),
            });
        }
        let rows = match claimed {
            Ok(rows) => rows,
            Err(e) => {
                let failed = StoreError::Backend(client.backend(e));
                roll_back(&client).await;
                return Err(failed);
            }
        };
        let mut page = ClaimPage::default();
        for row in &rows {
            match read_answer(row, lease, expires_at) {
                Ok(Answer::Claimed(claim)) => page.claims.push(claim),
                Ok(Answer::Unreadable(row)) => page.unreadable.push(row),
                Err(failed) => {
                    roll_back(&client).await;
                    return Err(failed);
                }
            }
        }
        client
            .execute(&commit, &[])
            .await
            .map_err(|e| client.write_failed(e))?;
        page.claims
            .sort_by(|a, b| a.row.due_key().cmp(&b.row.due_key()));
        // Earliest first, ids in byte order, as the claims.
        page.unreadable
            .sort_by(|a, b| (a.wake_at, &a.execution_id).cmp(&(b.wake_at, &b.execution_id)));
        Ok(page)
    }

    /// A complete or release: the statement changes the row only for its
    /// current claim.
    async fn retire(&self, sql: &str, claim: &Claim) -> Result<Completed, StoreError> {
        check_claim(claim)?;
        // Claim numbers come from a `bigint`; a larger one was never issued.
        let Ok(number) = i64::try_from(claim.number) else {
            return Ok(Completed::NotHeld);
        };
        let changed = self
            .client()
            .await?
            .write(
                sql,
                &[
                    &claim.row.execution_id.as_str(),
                    &claim.row.wake_at,
                    &claim.holder.as_str(),
                    &number,
                ],
            )
            .await?;
        Ok(if changed == 0 {
            Completed::NotHeld
        } else {
            Completed::Done
        })
    }
}

/// Ends the claim's transaction without committing it. A connection that
/// cannot is not handed back to the pool, so no caller inherits the open
/// transaction.
pub(crate) async fn roll_back(client: &Conn) {
    if client.batch_execute("ROLLBACK").await.is_err() {
        client.discard();
    }
}

/// A `LIMIT` for the server; `check_due` bounds it by `MAX_DUE_LIMIT`.
fn limit_of(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Reads a timer row from columns 0..=2 (`execution_id`, `wake_at`,
/// `redrive`), holding it to the rules a row is checked against before it
/// is written.
fn read_row(row: &Row) -> Result<TimerRow, StoreError> {
    let id: String = column(row, 0, "execution_id")?;
    let wake_at: i64 = column(row, 1, "wake_at")?;
    let redrive: Option<Value> = column(row, 2, "redrive")?;
    let key = format!("({id:?}, {wake_at})");
    let execution_id =
        ExecutionId::new(id).map_err(|e| corrupt_timer(format!("{key}: execution_id: {e}")))?;
    let redrive = redrive
        .map(|value| {
            serde_json::from_value::<Redrive>(value.clone()).map_err(|e| {
                corrupt_timer(format!(
                    "{key}: redrive {value} is not {{\"attempt\": <0..=2^31-1>}}: {e}"
                ))
            })
        })
        .transpose()?;
    let row = TimerRow {
        execution_id,
        wake_at,
        redrive,
    };
    check_row(&row).map_err(|e| corrupt_timer(format!("{key}: {e}")))?;
    Ok(row)
}

/// One row of the claim's answer.
enum Answer {
    /// A row it claimed.
    Claimed(Claim),
    /// A row that does not read back: left unclaimed by the statement's
    /// check, or (should that check ever let one through) claimed and left
    /// to its lease.
    Unreadable(UnreadableRow),
}

/// A row's key and flag, checked with the core's rules as a claim and a
/// listing read them; what does not read back is named by `bad`.
fn read_key(
    id: &str,
    wake_at: i64,
    redrive: Option<&str>,
    bad: impl Fn(UnreadableField, String) -> UnreadableRow,
) -> Result<TimerRow, UnreadableRow> {
    let execution_id = ExecutionId::new(id).map_err(|e| {
        bad(
            UnreadableField::ExecutionId,
            format!("execution_id {id:?} is not a valid id: {e}"),
        )
    })?;
    if !(0..=MAX_TIMER_MS).contains(&wake_at) {
        return Err(bad(
            UnreadableField::WakeAt,
            format!("wake_at {wake_at} is outside 0..=2^53-1"),
        ));
    }
    let redrive = redrive
        .map(|json| {
            read_redrive_flag(json.as_bytes())
                .map_err(|reason| bad(UnreadableField::Redrive, format!("redrive {json} {reason}")))
        })
        .transpose()?;
    Ok(TimerRow {
        execution_id,
        wake_at,
        redrive,
    })
}

/// Reads one row of the claim's answer: `claimed`, `execution_id`,
/// `wake_at`, `redrive` as text, `claims`. The row is checked with the
/// core's rules; the SQL check ([`readable`](crate::timer_sql)) states the
/// same rules so that the statement never claims a row this refuses.
fn read_answer(row: &Row, lease: &Lease, expires_at: i64) -> Result<Answer, StoreError> {
    let claimed: bool = column(row, 0, "claimed")?;
    let id: String = column(row, 1, "execution_id")?;
    let wake_at: i64 = column(row, 2, "wake_at")?;
    let redrive: Option<String> = column(row, 3, "redrive")?;
    let claims: i64 = column(row, 4, "claims")?;
    let bad = |field, detail: String| UnreadableRow {
        execution_id: id.clone(),
        wake_at: Some(wake_at),
        field,
        detail,
    };
    let checked = (|| {
        let timer_row = read_key(&id, wake_at, redrive.as_deref(), bad)?;
        // Answered after the increment when claimed; as stored otherwise.
        let number = u64::try_from(if claimed {
            claims
        } else {
            claims.saturating_add(1)
        })
        .ok()
        .filter(|&n| n >= 1 && claims < i64::MAX)
        .ok_or_else(|| {
            bad(
                UnreadableField::Claims,
                format!("claims {claims} is not a non-negative integer"),
            )
        })?;
        Ok((timer_row, number))
    })();
    Ok(match checked {
        Ok((timer_row, number)) if claimed => Answer::Claimed(Claim {
            row: timer_row,
            holder: lease.holder.clone(),
            number,
            expires_at,
        }),
        Ok(_) => Answer::Unreadable(bad(
            UnreadableField::Claim,
            "refused by the claim's check, though each column reads back".to_owned(),
        )),
        Err(unreadable) => Answer::Unreadable(unreadable),
    })
}

/// Reads one row of the operator's listing (columns as
/// [`TimerSql::list`](crate::timer_sql::TimerSql::list) answers them) with
/// its claim, checked with the core's rules as a claim reads a row; a row
/// that does not read back is named by its key and column.
fn read_entry(row: &Row) -> Result<Result<TimerEntry, UnreadableRow>, StoreError> {
    let id: String = column(row, 1, "execution_id")?;
    let wake_at: i64 = column(row, 2, "wake_at")?;
    let redrive: Option<String> = column(row, 3, "redrive")?;
    let holder: Option<String> = column(row, 4, "holder")?;
    let lease_until: Option<i64> = column(row, 5, "lease_until")?;
    let claims: i64 = column(row, 6, "claims")?;
    let bad = |field, detail: String| UnreadableRow {
        execution_id: id.clone(),
        wake_at: Some(wake_at),
        field,
        detail,
    };
    Ok((|| {
        let timer_row = read_key(&id, wake_at, redrive.as_deref(), bad)?;
        // As a claim reads the count: one more must fit.
        let number = u64::try_from(claims)
            .ok()
            .filter(|_| claims < i64::MAX)
            .ok_or_else(|| {
                bad(
                    UnreadableField::Claims,
                    format!("claims {claims} is not a non-negative integer"),
                )
            })?;
        let held = match (holder, lease_until) {
            (None, _) => None,
            (Some(holder), Some(expires_at)) => Some(Held {
                holder: NodeId::new(holder.as_str()).map_err(|e| {
                    bad(
                        UnreadableField::Claim,
                        format!("holder {holder:?} is not a valid node id: {e}"),
                    )
                })?,
                number,
                expires_at,
            }),
            (Some(holder), None) => {
                return Err(bad(
                    UnreadableField::Claim,
                    format!("holder {holder:?} has no lease_until"),
                ));
            }
        };
        Ok(TimerEntry {
            row: timer_row,
            held,
        })
    })())
}

/// Reads an exhausted record (columns as
/// [`TimerSql::exhausted`](crate::timer_sql::TimerSql::exhausted) answers
/// them), checked as the core checks what it records; one that does not
/// read back fails the listing, naming it, as a due listing does.
fn read_record(row: &Row) -> Result<ExhaustedRow, StoreError> {
    let id: String = column(row, 0, "execution_id")?;
    let wake_at: i64 = column(row, 1, "wake_at")?;
    let redrive: Option<String> = column(row, 2, "redrive")?;
    let attempts: i64 = column(row, 3, "attempts")?;
    let at: i64 = column(row, 4, "at")?;
    let refused =
        |detail: String| corrupt_timer(format!("exhausted record ({id:?}, {wake_at}): {detail}"));
    let execution_id =
        ExecutionId::new(id.as_str()).map_err(|e| refused(format!("execution_id: {e}")))?;
    let redrive = redrive
        .as_deref()
        .map(|json| {
            read_redrive_flag(json.as_bytes())
                .map_err(|reason| refused(format!("redrive {json} {reason}")))
        })
        .transpose()?;
    let timer = TimerRow {
        execution_id,
        wake_at,
        redrive,
    };
    check_row(&timer).map_err(|e| refused(e.to_string()))?;
    let attempts = u32::try_from(attempts)
        .map_err(|_| refused(format!("attempts {attempts} is outside 0..=2^32-1")))?;
    if !(0..=MAX_TIMER_MS).contains(&at) {
        return Err(refused(format!("at {at} is outside 0..=2^53-1")));
    }
    Ok(ExhaustedRow {
        row: timer,
        attempts,
        at,
    })
}

/// One column, a type mismatch being a table this store did not make.
fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: usize,
    name: &str,
) -> Result<T, StoreError> {
    row.try_get(index)
        .map_err(|e| corrupt_timer(format!("column {name}: {e}")))
}

#[async_trait]
impl TimerStore for PostgresTimerStore {
    async fn schedule(&self, row: &TimerRow) -> Result<(), StoreError> {
        check_row(row)?;
        let redrive = row.redrive.map(Json);
        self.client()
            .await?
            .write(
                &self.sql.schedule,
                &[&row.execution_id.as_str(), &row.wake_at, &redrive],
            )
            .await?;
        Ok(())
    }

    async fn due(
        &self,
        now: i64,
        limit: usize,
        filter: DueFilter,
    ) -> Result<Vec<TimerRow>, StoreError> {
        check_due(now, limit)?;
        let sql = if filter.redrive {
            &self.sql.due_all
        } else {
            &self.sql.due_plain
        };
        let rows = self
            .client()
            .await?
            .rows(sql, &[&now, &limit_of(limit)])
            .await?;
        rows.iter().map(read_row).collect()
    }

    async fn claim_due(
        &self,
        lease: &Lease,
        limit: usize,
        filter: DueFilter,
    ) -> Result<ClaimPage, StoreError> {
        let expires_at = check_lease(lease, limit)?;
        let sql = if filter.redrive {
            &self.sql.claim_all
        } else {
            &self.sql.claim_plain
        };
        let params: [&(dyn ToSql + Sync); 4] = [
            &lease.now,
            &lease.holder.as_str(),
            &expires_at,
            &limit_of(limit),
        ];
        self.claim(sql, &params, lease, expires_at).await
    }

    async fn complete(&self, claim: &Claim) -> Result<Completed, StoreError> {
        self.retire(&self.sql.complete, claim).await
    }

    async fn release(&self, claim: &Claim) -> Result<Completed, StoreError> {
        self.retire(&self.sql.release, claim).await
    }

    async fn reschedule(&self, claim: &Claim, next: &TimerRow) -> Result<Completed, StoreError> {
        check_reschedule(claim, next)?;
        // Claim numbers come from a `bigint`; a larger one was never issued.
        let Ok(number) = i64::try_from(claim.number) else {
            return Ok(Completed::NotHeld);
        };
        let redrive = next.redrive.map(Json);
        let row = self
            .client()
            .await?
            .write_row(
                &self.sql.reschedule,
                &[
                    &claim.row.execution_id.as_str(),
                    &claim.row.wake_at,
                    &claim.holder.as_str(),
                    &number,
                    &next.execution_id.as_str(),
                    &next.wake_at,
                    &redrive,
                ],
            )
            .await?;
        let retired: i64 = column(&row, 0, "count")?;
        Ok(if retired == 0 {
            Completed::NotHeld
        } else {
            Completed::Done
        })
    }

    async fn exhaust(
        &self,
        claim: &Claim,
        exhaustion: &Exhaustion,
    ) -> Result<Completed, StoreError> {
        check_exhaust(claim, exhaustion)?;
        // Claim numbers come from a `bigint`; a larger one was never issued.
        let Ok(number) = i64::try_from(claim.number) else {
            return Ok(Completed::NotHeld);
        };
        let row = self
            .client()
            .await?
            .write_row(
                &self.sql.exhaust,
                &[
                    &claim.row.execution_id.as_str(),
                    &claim.row.wake_at,
                    &claim.holder.as_str(),
                    &number,
                    &i64::from(exhaustion.attempts),
                    &exhaustion.at,
                ],
            )
            .await?;
        let retired: i64 = column(&row, 0, "count")?;
        Ok(if retired == 0 {
            Completed::NotHeld
        } else {
            Completed::Done
        })
    }

    async fn list(&self, query: &TimerQuery) -> Result<TimerListing, StoreError> {
        let limit = query.checked_limit()?;
        let (sql, args) = self.sql.list(query, limit_of(limit));
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(ListArg::as_param).collect();
        let rows = self.client().await?.rows(&sql, &params).await?;
        let mut listing = TimerListing::default();
        for row in &rows {
            match read_entry(row)? {
                Ok(entry) => listing.entries.push(entry),
                Err(unreadable) => listing.unreadable.push(unreadable),
            }
        }
        // Due order, ids in byte order; the statement's answer is not.
        listing
            .entries
            .sort_by(|a, b| a.row.due_key().cmp(&b.row.due_key()));
        listing
            .unreadable
            .sort_by(|a, b| (a.wake_at, &a.execution_id).cmp(&(b.wake_at, &b.execution_id)));
        listing.unreadable.truncate(limit);
        Ok(listing)
    }

    async fn exhausted(&self, query: &ExhaustedQuery) -> Result<Vec<ExhaustedRow>, StoreError> {
        let limit = query.checked_limit()?;
        let (sql, args) = self.sql.exhausted(query, limit_of(limit));
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(ListArg::as_param).collect();
        let rows = self.client().await?.rows(&sql, &params).await?;
        rows.iter().map(read_record).collect()
    }

    async fn clear_exhausted(
        &self,
        execution_id: &ExecutionId,
        wake_at: i64,
    ) -> Result<bool, StoreError> {
        check_clear(wake_at)?;
        let removed = self
            .client()
            .await?
            .write(
                &self.sql.clear_exhausted,
                &[&execution_id.as_str(), &wake_at],
            )
            .await?;
        Ok(removed > 0)
    }
}
