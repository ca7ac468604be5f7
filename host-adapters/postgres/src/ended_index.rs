//! The listing's partial index of terminal events
//! ([`ENDED_INDEX`](crate::retention_sql::ENDED_INDEX)), as `migrate`
//! creates it without ever blocking appends on a table that has rows.
//!
//! A plain `CREATE INDEX` holds a SHARE lock on `events` for the whole
//! build: every append of the fleet would wait for a scan of the whole
//! table. So a table that has rows gets the index `CONCURRENTLY`, before
//! the migration's transaction (it cannot run inside one), under a session
//! advisory lock taken with `pg_try_advisory_lock` so that two booting
//! nodes never build it twice and the second one does not wait. A new or
//! empty table gets it inside the migration's transaction, plainly:
//! instant, and the schema appears with its index or not at all.
//!
//! The catalog is read first (`to_regclass`, `pg_index`), which takes no
//! lock on `events`: a boot against a schema whose index is in place never
//! waits for the table's users.

use deadpool_postgres::{GenericClient, Object, Pool};
use loomfence_store::BackendError;
use tokio_postgres::error::SqlState;

use crate::config::{MigrateOptions, Schema};
use crate::error::{self, OpenError};
use crate::retention_sql::{ENDED_INDEX, ended_index_ddl};
use crate::version::{SCHEMA_VERSION, stored_version};

/// What `migrate` found or did about the listing's index of terminal
/// events, which turns "the first end of this execution" into one index
/// descent. Worth logging when it is not [`EndedIndex::Present`]: building
/// it on a large table takes a while, and a listing without it reads each
/// listed log's events to find its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EndedIndex {
    /// It was already in place; nothing was touched.
    Present,
    /// Created inside the migration's transaction: the table was new or
    /// empty, so the build was instant.
    Created,
    /// Built `CONCURRENTLY` before the migration's transaction, because the
    /// table had rows: appends went on during the build.
    BuiltConcurrently,
    /// Another session is building it right now; this boot did not wait for
    /// it. Listings work meanwhile, more slowly.
    BuildingElsewhere,
}

/// Whether the index exists (`None` if not) and is valid. Reads only the
/// catalog.
async fn validity(client: &impl GenericClient, schema: &Schema) -> Result<Option<bool>, OpenError> {
    client
        .query_opt(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)",
            &[&format!("{schema}.{ENDED_INDEX}")],
        )
        .await
        .map_err(error::backend)?
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(|e| error::backend(e).into())
}

/// A failure of a statement that waits for a lock on `events`: a lock
/// timeout is [`OpenError::TableLocked`], naming what the boot was doing.
fn locked(
    e: tokio_postgres::Error,
    schema: &Schema,
    action: &str,
    options: &MigrateOptions,
) -> OpenError {
    if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) {
        OpenError::TableLocked {
            table: format!("{schema}.events"),
            action: action.to_owned(),
            waited_ms: options.lock_timeout.as_millis(),
        }
    } else {
        OpenError::Backend(error::backend(e))
    }
}

/// Before the migration's transaction: builds the index `CONCURRENTLY` if
/// `events` has rows and the index is missing or invalid (an interrupted
/// build leaves it invalid; the planner never reads such an index, so it is
/// dropped and built again). Answers `None` when the transaction should
/// decide instead ([`in_transaction`]): there is no `events` table yet, it
/// is empty, or the schema is a newer version's (which the transaction
/// refuses, untouched).
///
/// The checks that usually end it (the index is there) read only the
/// catalog, on a pooled connection. A build runs on that connection's
/// session, which is closed afterwards instead of going back to the pool:
/// its `lock_timeout`, `statement_timeout` and advisory lock go with it, on
/// every path. `lock_timeout` bounds each wait of the build (the table
/// lock, and the waits for transactions that started before it); on
/// timeout the build fails with the retryable
/// [`OpenError::TableLocked`] before the migration changed anything,
/// and leaves at most an invalid index, which the next boot replaces.
pub(crate) async fn concurrently(
    pool: &Pool,
    schema: &Schema,
    options: &MigrateOptions,
) -> Result<Option<EndedIndex>, OpenError> {
    let client = pool.get().await.map_err(error::pool)?;
    let events: Option<String> = client
        .query_one(
            "SELECT to_regclass($1)::text",
            &[&format!("{schema}.events")],
        )
        .await
        .map_err(error::backend)?
        .try_get(0)
        .map_err(error::backend)?;
    if events.is_none() {
        return Ok(None);
    }
    let valid = validity(&client, schema).await?;
    if valid == Some(true) {
        return Ok(Some(EndedIndex::Present));
    }
    if stored_version(&client, schema)
        .await?
        .is_some_and(|found| found > SCHEMA_VERSION)
    {
        return Ok(None);
    }
    let result = build(&client, schema, valid, options).await;
    drop(Object::take(client));
    result
}

/// [`concurrently`]'s build, on a session of its own; `valid` is what the
/// catalog said of the index.
async fn build(
    client: &Object,
    schema: &Schema,
    valid: Option<bool>,
    options: &MigrateOptions,
) -> Result<Option<EndedIndex>, OpenError> {
    client
        .query(
            "SELECT set_config('lock_timeout', $1, false), set_config('statement_timeout', '0', false)",
            &[&format!("{}ms", options.lock_timeout.as_millis())],
        )
        .await
        .map_err(error::backend)?;
    let empty: bool = client
        .query_one(
            &format!("SELECT NOT EXISTS (SELECT 1 FROM {schema}.events)"),
            &[],
        )
        .await
        .map_err(|e| locked(e, schema, "check whether it has rows", options))?
        .try_get(0)
        .map_err(error::backend)?;
    if empty && valid.is_none() {
        return Ok(None);
    }
    let builder: bool = client
        .query_one(
            "SELECT pg_try_advisory_lock(hashtext($1))",
            &[&format!("loomfence.ended-index.{schema}")],
        )
        .await
        .map_err(error::backend)?
        .try_get(0)
        .map_err(error::backend)?;
    if !builder {
        return Ok(Some(EndedIndex::BuildingElsewhere));
    }
    // Under the builders' lock: an index still invalid is no one's build
    // in progress, but what an interrupted one left.
    match validity(client, schema).await? {
        Some(true) => return Ok(Some(EndedIndex::Present)),
        Some(false) => client
            .batch_execute(&format!(
                "DROP INDEX CONCURRENTLY IF EXISTS {schema}.{ENDED_INDEX}"
            ))
            .await
            .map_err(|e| {
                locked(
                    e,
                    schema,
                    "drop an index of terminal events left invalid",
                    options,
                )
            })?,
        None => {}
    }
    let action = format!("build its index of terminal events ({ENDED_INDEX}) concurrently");
    client
        .batch_execute(&ended_index_ddl(schema, true))
        .await
        .map_err(|e| locked(e, schema, &action, options))?;
    match validity(client, schema).await? {
        Some(true) => Ok(Some(EndedIndex::BuiltConcurrently)),
        _ => Err(OpenError::Backend(BackendError::retryable(format!(
            "{schema}.{ENDED_INDEX} is not valid after building it; retry the boot"
        )))),
    }
}

/// Inside the migration's transaction, when [`concurrently`] left it the
/// decision: creates the index plainly if it is missing (the table is new
/// or empty, so the build is instant; a lock not granted within the
/// transaction's `lock_timeout` is [`OpenError::TableLocked`]). An
/// invalid index is another session's build in progress.
pub(crate) async fn in_transaction(
    client: &impl GenericClient,
    schema: &Schema,
    options: &MigrateOptions,
) -> Result<EndedIndex, OpenError> {
    match validity(client, schema).await? {
        Some(true) => Ok(EndedIndex::Present),
        Some(false) => Ok(EndedIndex::BuildingElsewhere),
        None => {
            client
                .batch_execute(&ended_index_ddl(schema, false))
                .await
                .map_err(|e| locked(e, schema, "create its index of terminal events", options))?;
            Ok(EndedIndex::Created)
        }
    }
}
