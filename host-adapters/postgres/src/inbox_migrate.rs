//! Bringing the `inbox` table into place, inside `migrate`'s transaction,
//! under its advisory lock and lock timeout, by the timer table's rules:
//! the catalog is read first and the table is touched only when something
//! is missing, so a boot against a current schema takes no lock on the
//! table and never waits for its users.

use deadpool_postgres::GenericClient;
use loomfence_store::BackendError;
use tokio_postgres::error::SqlState;

use crate::config::{MigrateOptions, Schema};
use crate::error::{self, OpenError};
use crate::inbox_sql::{COLUMNS, PENDING_INDEX, TABLE, create_index, create_table};

/// Creates the table and its pending index where they are missing. An
/// existing table is kept with its rows; one that lacks a column of
/// [`COLUMNS`] is someone else's and is refused, permanently, unchanged.
///
/// A table lock not granted within `options.lock_timeout` fails with the
/// retryable [`OpenError::TableLocked`]; the caller's transaction then
/// rolls back whatever else the migration did.
pub(crate) async fn migrate_inbox(
    client: &impl GenericClient,
    schema: &Schema,
    options: &MigrateOptions,
) -> Result<(), OpenError> {
    let existing: Vec<String> = client
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = $2",
            &[&schema.as_str(), &TABLE],
        )
        .await
        .map_err(error::backend)?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()
        .map_err(error::backend)?;
    if existing.is_empty() {
        run(client, &create_table(schema), schema, "create it", options).await?;
    } else if let Some(column) = COLUMNS
        .iter()
        .find(|column| !existing.iter().any(|found| found == *column))
    {
        return Err(OpenError::Backend(BackendError::permanent(format!(
            "{schema}.{TABLE} exists without the column {column}: it is not an inbox table \
             this store can use (expected {})",
            COLUMNS.join(", ")
        ))));
    }
    let index: Option<String> = client
        .query_one(
            "SELECT to_regclass($1)::text",
            &[&format!("{schema}.{PENDING_INDEX}")],
        )
        .await
        .map_err(error::backend)?
        .try_get(0)
        .map_err(error::backend)?;
    if index.is_none() {
        run(
            client,
            &create_index(schema),
            schema,
            "create its pending index",
            options,
        )
        .await?;
    }
    Ok(())
}

/// Runs one DDL statement on the table; a lock timeout names the table and
/// what the boot was doing.
async fn run(
    client: &impl GenericClient,
    statement: &str,
    schema: &Schema,
    action: &str,
    options: &MigrateOptions,
) -> Result<(), OpenError> {
    match client.batch_execute(statement).await {
        Ok(()) => Ok(()),
        Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => Err(OpenError::TableLocked {
            table: format!("{schema}.{TABLE}"),
            action: action.to_owned(),
            waited_ms: options.lock_timeout.as_millis(),
        }),
        Err(e) => Err(OpenError::Backend(error::backend(e))),
    }
}
