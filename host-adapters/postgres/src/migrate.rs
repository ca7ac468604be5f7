//! Creating and upgrading the schema, under an advisory lock, in one
//! transaction; and the one-time park-fence backfill.

use deadpool_postgres::{GenericClient, Pool};
use loomfence_core::KernelKind;
use loomfence_store::BackendError;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use crate::concurrent_index::{self, ENDED, FEED, IndexBuild};
use crate::config::{MigrateOptions, Schema};
use crate::error::{self, OpenError};
use crate::feed_migrate::{self, migrate_feed_columns};
use crate::inbox_migrate::migrate_inbox;
use crate::sql::schema_ddl;
use crate::timer_migrate::migrate_timers;
use crate::version::{SCHEMA_VERSION, stored_version};

/// The ledger row that marks the park-fence backfill as done, whichever
/// path (in `migrate`, or offline) did it.
pub(crate) const BACKFILL_MARKER: &str = "park-fence-backfill";

/// Whether the migrations ledger of `schema` holds the row `marker`: a
/// one-time step (a backfill) marks itself done there.
pub(crate) async fn ledger_has(
    client: &impl GenericClient,
    schema: &Schema,
    marker: &str,
) -> Result<bool, BackendError> {
    Ok(client
        .query_opt(
            &format!("SELECT 1 FROM {schema}.migrations WHERE name = $1"),
            &[&marker],
        )
        .await
        .map_err(error::backend)?
        .is_some())
}

/// What a migration did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrationReport {
    /// The schema version now in place.
    pub version: i64,
    /// Token-0 fence rows the backfill wrote in this run; `None` when the
    /// backfill did not run (already done, or switched off).
    pub backfilled: Option<u64>,
    /// The columns this run added to an older `timers` table (the
    /// older shape has only the key; design: the re-drive): empty when the table was
    /// created or already current. Worth logging: it is the one migration
    /// step that waits for the table's users.
    pub timer_columns_added: Vec<String>,
    /// What became of the listing's index of terminal events (see
    /// [`IndexBuild`]): one of the two steps that build over the whole of
    /// an existing `events` table, without blocking appends.
    pub ended_index: IndexBuild,
    /// What became of the change feed's index of cursors: the other one.
    pub feed_index: IndexBuild,
    /// Whether this run added the feed's columns (or their defaults) to
    /// `events`: an instant change, but one that waits for the table's
    /// users, so worth logging.
    pub feed_columns_added: bool,
    /// Rows the one-time open-parks backfill wrote in this run; `None` when
    /// it was done before.
    pub open_parks_backfilled: Option<u64>,
}

/// Creates or upgrades loomfence's schema (the event log, the fences, the
/// timers table and the inbox, see
/// [`PostgresTimerStore`](crate::PostgresTimerStore)).
/// Idempotent, and safe when several
/// processes boot at once: they queue on a per-schema advisory lock, and the
/// one that waits longer than `options.lock_timeout` fails with the
/// retryable [`OpenError::LockTimeout`], having changed nothing.
///
/// Unless switched off, it also runs the one-time park-fence backfill: a
/// token-0 fence row for every execution that is parked and unanswered right
/// now, so a park written before fence rows existed can be acquired safely.
/// A ledger row marks it done so it never runs twice.
///
/// The retention listing's index of terminal events and the change feed's
/// index are created here too: inside the transaction when `events` is new
/// or empty, otherwise `CONCURRENTLY` outside it (before it for the first,
/// after it for the second, whose columns the transaction adds), so
/// appends go on while a large table is indexed (see [`IndexBuild`]).
/// Each build happens at most once; a boot that finds the indexes in place
/// reads only the catalog.
///
/// The feed's columns are added to `events` in the transaction (instant,
/// no rewrite), and after it the one-time backfill fills the open-parks
/// index from the logs; the feed itself starts at this migration.
pub async fn migrate(
    pool: &Pool,
    schema: &Schema,
    options: &MigrateOptions,
) -> Result<MigrationReport, OpenError> {
    // Outside the transaction, which a concurrent build cannot run in; it
    // changes nothing unless the index is missing and `events` has rows.
    let built = concurrent_index::concurrently(pool, schema, ENDED, false, options).await?;
    let mut client = pool.get().await.map_err(error::pool)?;
    let transaction = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::ReadCommitted)
        .start()
        .await
        .map_err(error::backend)?;
    let timeout = format!("{}ms", options.lock_timeout.as_millis());
    transaction
        .query("SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', '0', true)", &[&timeout])
        .await
        .map_err(error::backend)?;
    let lock_key = format!("loomfence.migrate.{schema}");
    if let Err(e) = transaction
        .query("SELECT pg_advisory_xact_lock(hashtext($1))", &[&lock_key])
        .await
    {
        return Err(lock_error(e, options));
    }
    let ledger = format!("{schema}.migrations");
    if let Some(found) = stored_version(&transaction, schema).await?
        && found > SCHEMA_VERSION
    {
        return Err(OpenError::NewerSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for statement in schema_ddl(schema) {
        if let Err(e) = transaction.batch_execute(&statement).await {
            return Err(lock_error(e, options));
        }
    }
    // Before the backfill, which can be long: a timers table that stays
    // locked fails the boot before that work, not after it.
    let timer_columns_added = migrate_timers(&transaction, schema, options).await?;
    // With the timers, whose store sends into it: a send writes its
    // message and its intent row in one transaction.
    migrate_inbox(&transaction, schema, options).await?;
    let ended_index = match built {
        Some(built) => Some(built),
        None => concurrent_index::in_transaction(&transaction, schema, ENDED, options).await?,
    };
    transaction
        .execute(
            &format!(
                "INSERT INTO {ledger} (name, detail) VALUES ('schema-version', $1) \
                 ON CONFLICT (name) DO UPDATE SET detail = EXCLUDED.detail"
            ),
            &[&SCHEMA_VERSION.to_string()],
        )
        .await
        .map_err(error::backend)?;
    let mut backfilled = None;
    if options.backfill_park_fences && !ledger_has(&transaction, schema, BACKFILL_MARKER).await? {
        let written = transaction
            .execute(
                &backfill_sql(schema, false),
                &BackfillParams::new(None).refs(),
            )
            .await
            .map_err(error::backend)?;
        mark_backfilled(&transaction, schema, written).await?;
        backfilled = Some(written);
    }
    // Last: altering `events` holds its ACCESS EXCLUSIVE lock until the
    // commit, so nothing that takes time (the backfill above) comes after
    // it, and the fleet's appends wait for an instant only.
    let feed_columns_added = migrate_feed_columns(&transaction, schema, options).await?;
    let feed_index = concurrent_index::in_transaction(&transaction, schema, FEED, options).await?;
    transaction.commit().await.map_err(error::backend)?;
    let open_parks_backfilled = feed_migrate::backfill(&mut client, schema).await?;
    drop(client);
    let ended_index = after(pool, schema, ENDED, ended_index, options).await?;
    let feed_index = after(pool, schema, FEED, feed_index, options).await?;
    Ok(MigrationReport {
        version: SCHEMA_VERSION,
        backfilled,
        timer_columns_added,
        ended_index,
        feed_index,
        feed_columns_added,
        open_parks_backfilled,
    })
}

/// After the transaction: the concurrent build of an index it left to one
/// (`None`, a table with rows), or what it did.
async fn after(
    pool: &Pool,
    schema: &Schema,
    index: concurrent_index::IndexSpec,
    done: Option<IndexBuild>,
    options: &MigrateOptions,
) -> Result<IndexBuild, OpenError> {
    if let Some(done) = done {
        return Ok(done);
    }
    let built = concurrent_index::concurrently(pool, schema, index, true, options).await?;
    built.ok_or_else(|| {
        OpenError::Backend(BackendError::retryable(format!(
            "{schema}.events: an index was left to a concurrent build that did not run; retry the boot"
        )))
    })
}

/// A failure while holding or waiting for locks: a lock timeout is its own
/// retryable error.
fn lock_error(e: tokio_postgres::Error, options: &MigrateOptions) -> OpenError {
    if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) {
        OpenError::LockTimeout {
            waited_ms: options.lock_timeout.as_millis(),
        }
    } else {
        OpenError::Backend(error::backend(e))
    }
}

/// Writes the ledger row that marks the backfill done.
pub(crate) async fn mark_backfilled(
    client: &impl deadpool_postgres::GenericClient,
    schema: &Schema,
    written: u64,
) -> Result<(), BackendError> {
    client
        .execute(
            &format!("INSERT INTO {schema}.migrations (name, detail) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING"),
            &[&BACKFILL_MARKER, &format!("{written} fence rows")],
        )
        .await
        .map(|_| ())
        .map_err(error::backend)
}

/// The backfill insert: a token-0 fence row for every execution whose newest
/// park has no answering event after it. With `for_ids`, only for the
/// executions in `$4` (the offline, batched walk).
///
/// Parameters: `$1` the park kind, `$2` the answering kernel kinds, `$3`
/// every kernel kind, and with `for_ids` `$4` the ids (`text[]`).
pub(crate) fn backfill_sql(schema: &Schema, for_ids: bool) -> String {
    let only = if for_ids {
        "AND execution_id = ANY($4::text[])"
    } else {
        ""
    };
    format!(
        "INSERT INTO {schema}.fences (execution_id, token) \
         SELECT p.execution_id, 0 FROM ( \
           SELECT DISTINCT ON (execution_id) execution_id, sequence FROM {schema}.events \
           WHERE kind = $1 {only} ORDER BY execution_id, sequence DESC) p \
         WHERE NOT EXISTS (SELECT 1 FROM {schema}.events e \
           WHERE e.execution_id = p.execution_id AND e.sequence > p.sequence \
             AND (e.kind = ANY($2::text[]) OR (e.kind <> ALL($3::text[]) AND e.metadata -> 'kernel' = 'true'::jsonb))) \
         ON CONFLICT DO NOTHING"
    )
}

/// The bound values of [`backfill_sql`].
pub(crate) struct BackfillParams {
    /// `$1`: the park kind.
    park: &'static str,
    /// `$2`: the answering kernel kinds.
    answering: Vec<&'static str>,
    /// `$3`: every kernel kind.
    kernel: Vec<&'static str>,
    /// `$4`: the ids of one batch, for the offline walk.
    ids: Option<Vec<String>>,
}

impl BackfillParams {
    /// The values, for every execution (`None`) or for `ids`.
    pub(crate) fn new(ids: Option<Vec<String>>) -> Self {
        Self {
            park: KernelKind::ExecutionSuspended.as_str(),
            answering: KernelKind::answering().map(KernelKind::as_str).collect(),
            kernel: KernelKind::ALL.iter().map(|k| k.as_str()).collect(),
            ids,
        }
    }

    /// As the driver takes them.
    pub(crate) fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        let mut refs: Vec<&(dyn ToSql + Sync)> = vec![&self.park, &self.answering, &self.kernel];
        if let Some(ids) = &self.ids {
            refs.push(ids);
        }
        refs
    }
}
