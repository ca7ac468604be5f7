//! The indexes `migrate` builds over the whole of `events` (the listing's
//! index of terminal events, the feed's index of cursors), created without
//! ever blocking appends on a table that has rows.
//!
//! A plain `CREATE INDEX` holds a SHARE lock on `events` for the whole
//! build: every append of the fleet would wait for a scan of the whole
//! table. So a table that has rows gets the index `CONCURRENTLY`, outside
//! the migration's transaction (it cannot run inside one), under a session
//! advisory lock taken with `pg_try_advisory_lock` so that two booting
//! nodes never build it twice and the second one does not wait. A new or
//! empty table gets it inside the migration's transaction, plainly:
//! instant, and the schema appears with its index or not at all.
//!
//! The catalog is read first (`to_regclass`, `pg_index`), which takes no
//! lock on `events`: a boot against a schema whose indexes are in place
//! never waits for the table's users.

use deadpool_postgres::{GenericClient, Object, Pool};
use loomfence_store::BackendError;
use tokio_postgres::error::SqlState;

use crate::config::{MigrateOptions, Schema};
use crate::error::{self, OpenError};
use crate::feed_sql::{FEED_INDEX, feed_index_ddl};
use crate::retention_sql::{ENDED_INDEX, ended_index_ddl};
use crate::version::{SCHEMA_VERSION, stored_version};

/// What `migrate` found or did about one of its indexes over `events`.
/// Worth logging when it is not [`IndexBuild::Present`]: building one on a
/// large table takes a while, and the reads it serves scan without it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexBuild {
    /// It was already in place; nothing was touched.
    Present,
    /// Created inside the migration's transaction: the table was new or
    /// empty, so the build was instant.
    Created,
    /// Built `CONCURRENTLY` outside the migration's transaction, because
    /// the table had rows: appends went on during the build.
    BuiltConcurrently,
    /// Another session is building it right now; this boot did not wait for
    /// it. Its reads work meanwhile, more slowly.
    BuildingElsewhere,
}

/// One index `migrate` builds this way.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IndexSpec {
    /// Its name inside the schema.
    name: &'static str,
    /// What it is, for errors ("index of terminal events").
    what: &'static str,
    /// The builders' advisory lock key, `loomfence.{lock}.{schema}`.
    lock: &'static str,
    /// Its `CREATE INDEX` statement, plain or `CONCURRENTLY`.
    ddl: fn(&Schema, bool) -> String,
}

/// The retention listing's partial index of terminal events.
pub(crate) const ENDED: IndexSpec = IndexSpec {
    name: ENDED_INDEX,
    what: "index of terminal events",
    lock: "ended-index",
    ddl: ended_index_ddl,
};

/// The change feed's index of cursors.
pub(crate) const FEED: IndexSpec = IndexSpec {
    name: FEED_INDEX,
    what: "feed index",
    lock: "feed-index",
    ddl: feed_index_ddl,
};

/// Whether the index exists (`None` if not) and is valid. Reads only the
/// catalog.
async fn validity(
    client: &impl GenericClient,
    schema: &Schema,
    index: IndexSpec,
) -> Result<Option<bool>, OpenError> {
    client
        .query_opt(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)",
            &[&format!("{schema}.{}", index.name)],
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

/// Outside the migration's transaction: builds `index` `CONCURRENTLY` if
/// it is missing or invalid (an interrupted build leaves it invalid; the
/// planner never reads such an index, so it is dropped and built again)
/// and `events` has rows, or has none but `even_if_empty`. Answers `None`
/// when the transaction should decide instead ([`in_transaction`]): there
/// is no `events` table yet, it is empty, or the schema is a newer
/// version's (which the transaction refuses, untouched).
///
/// Run before the transaction for an index whose columns exist already,
/// after it for one whose columns the transaction adds (with
/// `even_if_empty`, as the transaction has passed it on).
///
/// The checks that usually end it (the index is there) read only the
/// catalog, on a pooled connection. A build runs on that connection's
/// session, which is closed afterwards instead of going back to the pool:
/// its `lock_timeout`, `statement_timeout` and advisory lock go with it, on
/// every path. `lock_timeout` bounds each wait of the build (the table
/// lock, and the waits for transactions that started before it); on
/// timeout the build fails with the retryable [`OpenError::TableLocked`]
/// and leaves at most an invalid index, which the next boot replaces.
pub(crate) async fn concurrently(
    pool: &Pool,
    schema: &Schema,
    index: IndexSpec,
    even_if_empty: bool,
    options: &MigrateOptions,
) -> Result<Option<IndexBuild>, OpenError> {
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
    let valid = validity(&client, schema, index).await?;
    if valid == Some(true) {
        return Ok(Some(IndexBuild::Present));
    }
    if stored_version(&client, schema)
        .await?
        .is_some_and(|found| found > SCHEMA_VERSION)
    {
        return Ok(None);
    }
    let result = build(&client, schema, index, (valid, even_if_empty), options).await;
    drop(Object::take(client));
    result
}

/// Whether `events` has no rows: an index on it is then built at once,
/// plainly, in the migration's transaction.
async fn events_empty(
    client: &impl GenericClient,
    schema: &Schema,
    options: &MigrateOptions,
) -> Result<bool, OpenError> {
    client
        .query_one(
            &format!("SELECT NOT EXISTS (SELECT 1 FROM {schema}.events)"),
            &[],
        )
        .await
        .map_err(|e| locked(e, schema, "check whether it has rows", options))?
        .try_get(0)
        .map_err(|e| OpenError::from(error::backend(e)))
}

/// [`concurrently`]'s build, on a session of its own; `valid` is what the
/// catalog said of the index.
async fn build(
    client: &Object,
    schema: &Schema,
    index: IndexSpec,
    (valid, even_if_empty): (Option<bool>, bool),
    options: &MigrateOptions,
) -> Result<Option<IndexBuild>, OpenError> {
    client
        .query(
            "SELECT set_config('lock_timeout', $1, false), set_config('statement_timeout', '0', false)",
            &[&format!("{}ms", options.lock_timeout.as_millis())],
        )
        .await
        .map_err(error::backend)?;
    if valid.is_none() && !even_if_empty && events_empty(client, schema, options).await? {
        return Ok(None);
    }
    let builder: bool = client
        .query_one(
            "SELECT pg_try_advisory_lock(hashtext($1))",
            &[&format!("loomfence.{}.{schema}", index.lock)],
        )
        .await
        .map_err(error::backend)?
        .try_get(0)
        .map_err(error::backend)?;
    if !builder {
        return Ok(Some(IndexBuild::BuildingElsewhere));
    }
    let (name, what) = (index.name, index.what);
    // Under the builders' lock: an index still invalid is no one's build
    // in progress, but what an interrupted one left.
    match validity(client, schema, index).await? {
        Some(true) => return Ok(Some(IndexBuild::Present)),
        Some(false) => client
            .batch_execute(&format!(
                "DROP INDEX CONCURRENTLY IF EXISTS {schema}.{name}"
            ))
            .await
            .map_err(|e| locked(e, schema, &format!("drop a {what} left invalid"), options))?,
        None => {}
    }
    let action = format!("build its {what} ({name}) concurrently");
    client
        .batch_execute(&(index.ddl)(schema, true))
        .await
        .map_err(|e| locked(e, schema, &action, options))?;
    match validity(client, schema, index).await? {
        Some(true) => Ok(Some(IndexBuild::BuiltConcurrently)),
        _ => Err(OpenError::Backend(BackendError::retryable(format!(
            "{schema}.{name} is not valid after building it; retry the boot"
        )))),
    }
}

/// Inside the migration's transaction: creates `index` plainly if it is
/// missing and `events` is empty (new, or without rows: the build is
/// instant; a lock not granted within the transaction's `lock_timeout` is
/// [`OpenError::TableLocked`]). An invalid index is another session's
/// build in progress. `None`: missing on a table with rows, left to
/// [`concurrently`] after the transaction.
pub(crate) async fn in_transaction(
    client: &impl GenericClient,
    schema: &Schema,
    index: IndexSpec,
    options: &MigrateOptions,
) -> Result<Option<IndexBuild>, OpenError> {
    match validity(client, schema, index).await? {
        Some(true) => Ok(Some(IndexBuild::Present)),
        Some(false) => Ok(Some(IndexBuild::BuildingElsewhere)),
        None => {
            if !events_empty(client, schema, options).await? {
                return Ok(None);
            }
            let action = format!("create its {}", index.what);
            client
                .batch_execute(&(index.ddl)(schema, false))
                .await
                .map_err(|e| locked(e, schema, &action, options))?;
            Ok(Some(IndexBuild::Created))
        }
    }
}
