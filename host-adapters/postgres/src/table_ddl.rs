//! What the table migrations (timers, inbox) share: reading a table's
//! columns and an index's presence from the catalog before touching
//! anything, and running one DDL statement under `migrate`'s lock timeout.

use deadpool_postgres::GenericClient;
use tokio_postgres::error::SqlState;

use crate::config::{MigrateOptions, Schema};
use crate::error::{self, OpenError};

/// The columns `schema.table` has, none when it does not exist.
pub(crate) async fn columns(
    client: &impl GenericClient,
    schema: &Schema,
    table: &str,
) -> Result<Vec<String>, OpenError> {
    let found = client
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = $2",
            &[&schema.as_str(), &table],
        )
        .await
        .map_err(error::backend)?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()
        .map_err(error::backend)?;
    Ok(found)
}

/// Whether the index `schema.index` exists.
pub(crate) async fn has_index(
    client: &impl GenericClient,
    schema: &Schema,
    index: &str,
) -> Result<bool, OpenError> {
    let found: Option<String> = client
        .query_one(
            "SELECT to_regclass($1)::text",
            &[&format!("{schema}.{index}")],
        )
        .await
        .map_err(error::backend)?
        .try_get(0)
        .map_err(error::backend)?;
    Ok(found.is_some())
}

/// Runs one DDL statement on `schema.table`; a lock timeout names the table
/// and what the boot was doing (`action`).
pub(crate) async fn run(
    client: &impl GenericClient,
    statement: &str,
    (schema, table): (&Schema, &str),
    action: &str,
    options: &MigrateOptions,
) -> Result<(), OpenError> {
    match client.batch_execute(statement).await {
        Ok(()) => Ok(()),
        Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => Err(OpenError::TableLocked {
            table: format!("{schema}.{table}"),
            action: action.to_owned(),
            waited_ms: options.lock_timeout.as_millis(),
        }),
        Err(e) => Err(OpenError::Backend(error::backend(e))),
    }
}
