//! The offline park-fence backfill, for installations too large to run it
//! inside `migrate` at boot.

use deadpool_postgres::{Client, GenericClient, Pool};
use loomfence_core::KernelKind;
use loomfence_store::BackendError;

use crate::config::Schema;
use crate::error::{self, OpenError};
use crate::migrate::{BACKFILL_MARKER, BackfillParams, backfill_sql, ledger_has, mark_backfilled};

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
/// marker `migrate` writes (so neither runs it again) and deletes its
/// position in the same transaction, and drops the index: once the backfill
/// is done nothing scans parks by kind, and a permanent index would tax every
/// park append. Idempotent: every insert is `ON CONFLICT DO NOTHING`.
///
/// An interrupted run leaves nothing that lasts. An index left INVALID by an
/// interrupted build is dropped and built again, not reused (the planner
/// never reads an invalid index, so every batch would be a full scan), and a
/// run that finds the marker still drops the index and deletes the position
/// a run that died after its marker left behind.
pub async fn backfill_park_fences(
    pool: &Pool,
    schema: &Schema,
    batch_size: u32,
) -> Result<BackfillReport, OpenError> {
    let mut client = pool.get().await.map_err(error::pool)?;
    if ledger_has(&client, schema, BACKFILL_MARKER).await? {
        delete_cursor(&client, schema).await?;
        drop_index(&client, schema).await?;
        return Ok(BackfillReport {
            already_done: true,
            ..BackfillReport::default()
        });
    }
    build_index(&client, schema).await?;
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
    let park = KernelKind::ExecutionSuspended.as_str();
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
    // The marker and the cursor's delete commit together: a cursor never
    // outlives the marker.
    let transaction = client.transaction().await.map_err(error::backend)?;
    mark_backfilled(&transaction, schema, report.written).await?;
    delete_cursor(&transaction, schema).await?;
    transaction.commit().await.map_err(error::backend)?;
    drop_index(&client, schema).await?;
    Ok(report)
}

/// Builds the walk's index, or keeps a valid one an earlier run built. An
/// interrupted `CREATE INDEX CONCURRENTLY` (cancelled, connection lost)
/// leaves the index INVALID, which `IF NOT EXISTS` would keep and the
/// planner never reads: such an index is dropped and built again.
async fn build_index(client: &Client, schema: &Schema) -> Result<(), OpenError> {
    if index_valid(client, schema).await? == Some(false) {
        drop_index(client, schema).await?;
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
    // Only another run's build, still going, can leave it invalid here.
    match index_valid(client, schema).await? {
        Some(true) => Ok(()),
        _ => Err(OpenError::Backend(BackendError::retryable(format!(
            "the backfill index {schema}.{INDEX} is not valid after building it \
             (is another backfill building it?); retry"
        )))),
    }
}

/// Whether the walk's index exists (`None` if not) and is valid
/// (`pg_index.indisvalid`).
async fn index_valid(client: &Client, schema: &Schema) -> Result<Option<bool>, OpenError> {
    client
        .query_opt(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)",
            &[&format!("{schema}.{INDEX}")],
        )
        .await
        .map_err(error::backend)?
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(|e| error::backend(e).into())
}

/// Drops the walk's index, if there is one, without blocking appends.
async fn drop_index(client: &Client, schema: &Schema) -> Result<(), OpenError> {
    client
        .batch_execute(&format!(
            "DROP INDEX CONCURRENTLY IF EXISTS {schema}.{INDEX}"
        ))
        .await
        .map_err(|e| error::backend(e).into())
}

/// Deletes the walk's position.
async fn delete_cursor(client: &impl GenericClient, schema: &Schema) -> Result<(), OpenError> {
    client
        .execute(
            &format!("DELETE FROM {schema}.migrations WHERE name = $1"),
            &[&CURSOR],
        )
        .await
        .map(|_| ())
        .map_err(|e| error::backend(e).into())
}
