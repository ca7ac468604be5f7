//! Bringing the `timers` table to this version's shape, inside `migrate`'s
//! transaction and under its lock timeout.
//!
//! The catalog is read first and the table is touched only when something
//! is missing. Statements that would be no-ops still take their table lock
//! before they find out: `ALTER TABLE … ADD COLUMN IF NOT EXISTS` takes
//! ACCESS EXCLUSIVE, `CREATE INDEX IF NOT EXISTS` takes SHARE. Either would
//! make every boot queue behind any open transaction on `timers` (and every
//! timer call queue behind the boot). Reading `information_schema` and
//! `to_regclass` takes no lock on the table, so a boot against a current
//! schema never waits for its users.

use deadpool_postgres::GenericClient;
use loomfence_store::BackendError;
use tokio_postgres::error::SqlState;

use crate::config::{MigrateOptions, Schema};
use crate::error::{self, OpenError};
use crate::timer_sql::{
    ADDED_COLUMNS, DUE_INDEX, KEY_COLUMNS, TABLE, add_columns, create_index, create_table,
};

/// Creates the table and its index, or adds what an older table lacks.
/// Returns the columns it added (empty for a new or current table).
///
/// A table lock not granted within `options.lock_timeout` fails with the
/// retryable [`OpenError::TableLocked`]; the caller's transaction then
/// rolls back whatever else the migration did.
pub(crate) async fn migrate_timers(
    client: &impl GenericClient,
    schema: &Schema,
    options: &MigrateOptions,
) -> Result<Vec<String>, OpenError> {
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
    let mut added = Vec::new();
    if existing.is_empty() {
        run(client, &create_table(schema), schema, "create it", options).await?;
    } else {
        if let Some(key) = KEY_COLUMNS
            .iter()
            .find(|key| !existing.iter().any(|column| column == *key))
        {
            return Err(OpenError::Backend(BackendError::permanent(format!(
                "{schema}.{TABLE} exists without the column {key}: it is not a timers table \
                 this store can use (expected at least execution_id text, wake_at bigint)"
            ))));
        }
        let missing: Vec<&str> = ADDED_COLUMNS
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| !existing.iter().any(|column| column == name))
            .collect();
        if !missing.is_empty() {
            let action = format!("add the column(s) {}", missing.join(", "));
            run(
                client,
                &add_columns(schema, &missing),
                schema,
                &action,
                options,
            )
            .await?;
            added = missing.iter().map(|name| (*name).to_owned()).collect();
        }
    }
    let index: Option<String> = client
        .query_one(
            "SELECT to_regclass($1)::text",
            &[&format!("{schema}.{DUE_INDEX}")],
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
            "create its due index",
            options,
        )
        .await?;
    }
    Ok(added)
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
