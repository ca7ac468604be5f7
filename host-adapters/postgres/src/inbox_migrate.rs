//! Bringing the `inbox` table into place, inside `migrate`'s transaction,
//! under its advisory lock and lock timeout, by the timer table's rules:
//! the catalog is read first and the table is touched only when something
//! is missing, so a boot against a current schema takes no lock on the
//! table and never waits for its users.

use deadpool_postgres::GenericClient;
use loomfence_store::BackendError;

use crate::config::{MigrateOptions, Schema};
use crate::error::OpenError;
use crate::inbox_sql::{COLUMNS, PENDING_INDEX, TABLE, create_index, create_table};
use crate::table_ddl;

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
    let existing = table_ddl::columns(client, schema, TABLE).await?;
    if existing.is_empty() {
        table_ddl::run(
            client,
            &create_table(schema),
            (schema, TABLE),
            "create it",
            options,
        )
        .await?;
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
    if !table_ddl::has_index(client, schema, PENDING_INDEX).await? {
        table_ddl::run(
            client,
            &create_index(schema),
            (schema, TABLE),
            "create its pending index",
            options,
        )
        .await?;
    }
    Ok(())
}
