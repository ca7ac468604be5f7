//! The offline park-fence backfill, for installations too large to run it
//! inside `migrate` at boot.

use deadpool_postgres::Pool;
use loomfence_core::KernelKind;

use crate::config::Schema;
use crate::error::{self, MigrateError};
use crate::migrate::{BACKFILL_MARKER, BackfillParams, backfill_sql, mark_backfilled};

/// The ledger row holding the offline walk's position, so an interrupted run
/// resumes where it stopped.
const CURSOR: &str = "park-fence-backfill-cursor";

/// The temporary partial index the walk reads parks through.
const INDEX: &str = "events_parks_backfill";

/// What the offline backfill did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackfillReport {
    /// Whether the marker was already there, so nothing ran.
    pub already_done: bool,
    /// Batches walked in this run.
    pub batches: u64,
    /// Token-0 fence rows written in this run.
    pub written: u64,
}

/// Writes the token-0 fence row of every parked, unanswered execution, in
/// batches of `batch_size` executions, without holding any lock that blocks
/// appends for long.
///
/// It builds a partial index of parks `CONCURRENTLY` (so appends go on),
/// walks executions in id order one short statement per batch, records its
/// position after each batch (an interrupted run resumes), writes the same
/// marker `migrate` writes (so neither runs it again), and drops the index:
/// once the backfill is done nothing scans parks by kind, and a permanent
/// index would tax every park append. Idempotent: every insert is
/// `ON CONFLICT DO NOTHING`.
pub async fn backfill_park_fences(
    pool: &Pool,
    schema: &Schema,
    batch_size: u32,
) -> Result<BackfillReport, MigrateError> {
    let client = pool.get().await.map_err(error::pool)?;
    let done = client
        .query_opt(
            &format!("SELECT 1 FROM {schema}.migrations WHERE name = $1"),
            &[&BACKFILL_MARKER],
        )
        .await
        .map_err(error::backend)?
        .is_some();
    if done {
        return Ok(BackfillReport {
            already_done: true,
            ..BackfillReport::default()
        });
    }
    let park = KernelKind::ExecutionSuspended.as_str();
    // DDL cannot bind parameters; the predicate is the kernel's own constant.
    client
        .batch_execute(&format!(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS {INDEX} ON {schema}.events (execution_id, sequence) \
             WHERE kind = '{park}'"
        ))
        .await
        .map_err(error::backend)?;
    let mut after: String = client
        .query_opt(
            &format!("SELECT detail FROM {schema}.migrations WHERE name = $1"),
            &[&CURSOR],
        )
        .await
        .map_err(error::backend)?
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(error::backend)?
        .unwrap_or_default();
    let next_batch = format!(
        "SELECT DISTINCT execution_id FROM {schema}.events WHERE kind = $1 AND execution_id > $2 \
         ORDER BY execution_id LIMIT $3"
    );
    let insert = backfill_sql(schema, true);
    let save_cursor = format!(
        "INSERT INTO {schema}.migrations (name, detail) VALUES ($1, $2) \
         ON CONFLICT (name) DO UPDATE SET detail = EXCLUDED.detail"
    );
    let mut report = BackfillReport::default();
    loop {
        let ids: Vec<String> = client
            .query(&next_batch, &[&park, &after, &i64::from(batch_size.max(1))])
            .await
            .map_err(error::backend)?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<Result<_, _>>()
            .map_err(error::backend)?;
        let Some(last) = ids.last().cloned() else {
            break;
        };
        let params = BackfillParams::new(Some(ids));
        report.written += client
            .execute(&insert, &params.refs())
            .await
            .map_err(error::backend)?;
        client
            .execute(&save_cursor, &[&CURSOR, &last])
            .await
            .map_err(error::backend)?;
        report.batches += 1;
        after = last;
    }
    mark_backfilled(&client, schema, report.written).await?;
    client
        .execute(
            &format!("DELETE FROM {schema}.migrations WHERE name = $1"),
            &[&CURSOR],
        )
        .await
        .map_err(error::backend)?;
    client
        .batch_execute(&format!(
            "DROP INDEX CONCURRENTLY IF EXISTS {schema}.{INDEX}"
        ))
        .await
        .map_err(error::backend)?;
    Ok(report)
}
