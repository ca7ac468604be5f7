//! Bringing `events` to the feed's shape inside `migrate`'s transaction, and
//! the one-time backfill of the open parks after it.
//!
//! The catalog is read first and `events` is altered only when a column or
//! a default is missing: `ALTER TABLE` takes ACCESS EXCLUSIVE even when it
//! turns out to be a no-op, and every append would queue behind a boot
//! that waits for it. When it does run, it is instant: columns added
//! without a default rewrite nothing, and setting a default afterwards is
//! a catalog change (old rows keep their nulls, and stay out of the feed).

use deadpool_postgres::GenericClient;

use crate::config::{MigrateOptions, Schema};
use crate::error::{self, OpenError};
use crate::feed_sql::{OPEN_PARKS_MARKER, add_columns, backfill_open_parks, set_defaults};
use crate::migrate::{BackfillParams, ledger_has};
use crate::table_ddl;

/// The feed's columns of `events`.
const COLUMNS: [&str; 2] = ["txid", "feed_seq"];

/// Adds the feed's columns and their defaults where missing; answers
/// whether it altered `events`.
///
/// A table lock not granted within `options.lock_timeout` fails with the
/// retryable [`OpenError::TableLocked`]; the caller's transaction then
/// rolls back whatever else the migration did.
pub(crate) async fn migrate_feed_columns(
    client: &impl GenericClient,
    schema: &Schema,
    options: &MigrateOptions,
) -> Result<bool, OpenError> {
    // Straight from `pg_attribute` and `pg_attrdef`: `information_schema`
    // renders defaults with `pg_get_expr`, which opens the table and so
    // waits for whoever holds it.
    let found = client
        .query(
            "SELECT a.attname::text, d.adbin IS NOT NULL FROM pg_attribute a \
             LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE a.attrelid = to_regclass($1) AND a.attname = ANY($2::text[]) \
               AND NOT a.attisdropped",
            &[&format!("{schema}.events"), &COLUMNS.as_slice()],
        )
        .await
        .map_err(error::backend)?;
    let mut columns = 0;
    let mut defaults = 0;
    for row in &found {
        columns += 1;
        if row.try_get::<_, bool>(1).map_err(error::backend)? {
            defaults += 1;
        }
    }
    let mut altered = false;
    if columns < COLUMNS.len() {
        let action = "add the feed's columns (txid, feed_seq)";
        table_ddl::run(
            client,
            &add_columns(schema),
            (schema, "events"),
            action,
            options,
        )
        .await?;
        altered = true;
    }
    if defaults < COLUMNS.len() {
        let action = "set the defaults of the feed's columns";
        table_ddl::run(
            client,
            &set_defaults(schema),
            (schema, "events"),
            action,
            options,
        )
        .await?;
        altered = true;
    }
    Ok(altered)
}

/// Fills the open parks from the logs, once (a ledger row marks it done),
/// in a transaction of its own after the migration's: it reads every
/// log, and the migration's lock on `events` would make the appends wait
/// for it. Answers how many rows it wrote, `None` when it was done before.
///
/// Appends committed since the migration keep the index themselves, and
/// the backfill only inserts where no row is: at worst it adds the park of
/// an execution answered while it ran, which the index allows (it may list
/// a park that is not open, never omit one that is).
pub(crate) async fn backfill(
    client: &mut deadpool_postgres::Object,
    schema: &Schema,
) -> Result<Option<u64>, OpenError> {
    let transaction = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::ReadCommitted)
        .start()
        .await
        .map_err(error::backend)?;
    let ledger = format!("{schema}.migrations");
    let lock_key = format!("loomfence.{OPEN_PARKS_MARKER}.{schema}");
    transaction
        .query("SELECT pg_advisory_xact_lock(hashtext($1))", &[&lock_key])
        .await
        .map_err(error::backend)?;
    if ledger_has(&transaction, schema, OPEN_PARKS_MARKER).await? {
        return Ok(None);
    }
    let params = BackfillParams::new(None);
    let written = transaction
        .execute(&backfill_open_parks(schema), &params.refs())
        .await
        .map_err(error::backend)?;
    transaction
        .execute(
            &format!(
                "INSERT INTO {ledger} (name, detail) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING"
            ),
            &[&OPEN_PARKS_MARKER, &format!("{written} open parks")],
        )
        .await
        .map_err(error::backend)?;
    transaction.commit().await.map_err(error::backend)?;
    Ok(Some(written))
}
