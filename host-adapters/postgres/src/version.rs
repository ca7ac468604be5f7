//! Which schema version this build writes, and which one a database holds:
//! what both the migration and the index build check before they change
//! anything.

use deadpool_postgres::GenericClient;

use crate::config::Schema;
use crate::error::{self, OpenError};

/// The schema version this build writes and understands.
///
/// 2: the `append` and `acquire_fence_if` functions check that the event at
/// `parkSeq` is a park (and return its kind). A version-1 build booting
/// against a version-2 database is refused with
/// [`OpenError::NewerSchema`] instead of putting back the functions
/// without the check (its `CREATE OR REPLACE` would fail with a raw SQL
/// error anyway: the result columns changed).
///
/// The `timers` table (and the columns `migrate` adds to an older one) did
/// not bump it: a build without the timer store never reads or writes that
/// table, so it can still boot against the schema and undo nothing. The
/// version guards builds that would break what a newer one relies on; an
/// added table no older build touches is not that. The table's own shape
/// is read from the catalog at every boot, not inferred from the version.
///
/// Retention's additions did not bump it either, for the same reason: the
/// `delete_execution_if` function is new (an older build neither calls nor
/// replaces it), and the index of terminal events is maintained by the
/// server for every writer, old or new.
///
/// The `inbox` table did not bump it, for the first reason: an older build
/// never reads or writes it. What an older build does change is the delete
/// functions, which it replaces (same version, so its `migrate` runs) with
/// its own, which leave an execution's messages behind; while it is the
/// last to have migrated, a deleted execution's messages stay until the
/// next purge, and `migrate` from this build puts the deleting functions
/// back. A fleet that mixes the two builds should migrate with the newer
/// one last.
///
/// The batched retention functions (`delete_executions_if`, `read_logs`)
/// and `append_plain`, the append without a park condition, did not bump
/// it either: they are new, an older build neither calls nor replaces
/// them, and the `append` this build installs takes the same arguments and
/// answers as the one it replaces.
///
/// 3: the change feed. `events` gains `txid` and `feed_seq`, and the
/// `append` function takes the open parks' upkeep (`p_opens`, `p_closes`)
/// and keeps the `open_parks` index in the insert's statement; the delete
/// functions keep it and the feed's head. A version-2 build would put its
/// own `append` back beside the new one, and its appends would leave the
/// index behind the logs, so it is refused; its running writers fail once
/// the old function is dropped. Stop them before migrating.
pub const SCHEMA_VERSION: i64 = 3;

/// The schema version the ledger records, `None` when there is no ledger
/// (a new schema) or no version row. Reads the catalog first, so a schema
/// without a ledger is not an error, and takes no lock on the tables.
pub(crate) async fn stored_version(
    client: &impl GenericClient,
    schema: &Schema,
) -> Result<Option<i64>, OpenError> {
    let ledger = format!("{schema}.migrations");
    let exists: Option<String> = client
        .query_one("SELECT to_regclass($1)::text", &[&ledger])
        .await
        .map_err(error::backend)?
        .try_get(0)
        .map_err(error::backend)?;
    if exists.is_none() {
        return Ok(None);
    }
    let found: Option<String> = client
        .query_opt(
            &format!("SELECT detail FROM {ledger} WHERE name = 'schema-version'"),
            &[],
        )
        .await
        .map_err(error::backend)?
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(error::backend)?;
    // An unreadable version row is taken as this build's, as before.
    Ok(Some(
        found
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(SCHEMA_VERSION),
    ))
}
