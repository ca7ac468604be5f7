//! Bringing the `timers` table to this version's shape, and the
//! `exhausted_timers` table beside it into place, inside `migrate`'s
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

use crate::config::{MigrateOptions, Schema};
use crate::error::OpenError;
use crate::table_ddl;
use crate::timer_sql::{
    ADDED_COLUMNS, DUE_INDEX, EXHAUSTED_COLUMNS, EXHAUSTED_TABLE, KEY_COLUMNS, TABLE, add_columns,
    create_exhausted_table, create_index, create_table,
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
    let existing = table_ddl::columns(client, schema, TABLE).await?;
    let mut added = Vec::new();
    if existing.is_empty() {
        table_ddl::run(
            client,
            &create_table(schema),
            (schema, TABLE),
            "create it",
            options,
        )
        .await?;
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
            table_ddl::run(
                client,
                &add_columns(schema, &missing),
                (schema, TABLE),
                &action,
                options,
            )
            .await?;
            added = missing.iter().map(|name| (*name).to_owned()).collect();
        }
    }
    if !table_ddl::has_index(client, schema, DUE_INDEX).await? {
        table_ddl::run(
            client,
            &create_index(schema),
            (schema, TABLE),
            "create its due index",
            options,
        )
        .await?;
    }
    migrate_exhausted(client, schema, options).await?;
    Ok(added)
}

/// Creates the exhausted records' table where it is missing (a new schema,
/// or one migrated by a build before exhaustion records). An existing
/// table is kept with its records; one that lacks a column is someone
/// else's and is refused, permanently, unchanged. Additive: an older build
/// never reads or writes it, so it does not change the schema version.
async fn migrate_exhausted(
    client: &impl GenericClient,
    schema: &Schema,
    options: &MigrateOptions,
) -> Result<(), OpenError> {
    let existing = table_ddl::columns(client, schema, EXHAUSTED_TABLE).await?;
    if existing.is_empty() {
        return table_ddl::run(
            client,
            &create_exhausted_table(schema),
            (schema, EXHAUSTED_TABLE),
            "create it",
            options,
        )
        .await;
    }
    if let Some(column) = EXHAUSTED_COLUMNS
        .iter()
        .find(|column| !existing.iter().any(|found| found == *column))
    {
        return Err(OpenError::Backend(BackendError::permanent(format!(
            "{schema}.{EXHAUSTED_TABLE} exists without the column {column}: it is not a table of \
             exhausted timers this store can use (expected {})",
            EXHAUSTED_COLUMNS.join(", ")
        ))));
    }
    Ok(())
}
