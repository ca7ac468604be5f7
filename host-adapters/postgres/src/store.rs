//! The `EventStore` implementation.

use std::sync::Arc;
#[cfg(feature = "unsafe-test-hooks")]
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use deadpool_postgres::{Hook, HookError, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use loomfence_core::backend::check_is_park;
use loomfence_core::feed::{FeedCursor, FeedEntry, ParkChange, park_change};
use loomfence_core::{
    AcquireOutcome, Capability, ConditionalAppend, Envelope, ExecutionId, InputError, JsonObject,
    KernelKind, NewEvent, ParkExpectation, StaleFenceError,
    retention::{DeleteGuard, DeleteIf, ExecutionSummary, GuardedDelete},
};
use loomfence_store::checks::{
    CheckedRead, CheckedWrite, check_acquire_if, check_read, check_write,
};
use loomfence_store::{EventStore, StoreError};
use serde_json::Value;
use tokio_postgres::types::{Json, ToSql};

use crate::config::{AcquireStrategy, PostgresOptions, Schema};
use crate::conn::Conn;
use crate::connect_url::ConnectUrl;
use crate::error::{self, OpenError};
use crate::feed_wake::FeedWake;
use crate::migrate::{MigrationReport, migrate};
use crate::sql::Sql;
use crate::timers::PostgresTimerStore;
use crate::tls;
use crate::version::{SCHEMA_VERSION, stored_version};

mod feed;
mod retention;

/// How many times an append retries after losing a sequence to a concurrent
/// appender. Each loss means another append committed, so the log moves on;
/// the bound only stops a pathological storm.
const MAX_SEQUENCE_RETRIES: u32 = 200;

/// The wire names of the answering kernel kinds, bound into the answering
/// test of every conditional statement.
fn answering_kinds() -> Vec<&'static str> {
    KernelKind::answering().map(KernelKind::as_str).collect()
}

/// The wire names of every kernel kind.
fn kernel_kinds() -> Vec<&'static str> {
    KernelKind::ALL.iter().map(|kind| kind.as_str()).collect()
}

/// A fenced event store on PostgreSQL, with the conditional capability.
///
/// Every operation is one statement (or one pipelined round trip), atomic at
/// the server. Its connections are pinned to READ COMMITTED, which the
/// conditional acquire's fresh-snapshot scan relies on whatever the
/// database's default isolation is.
pub struct PostgresEventStore {
    /// The connections.
    pool: Pool,
    /// Where the tables live.
    schema: Schema,
    /// The statements, built for the schema.
    sql: Arc<Sql>,
    /// What the store was opened with.
    options: PostgresOptions,
    /// What ends a `wait_for_feed`.
    wake: FeedWake,
    /// Whether the sessions are read-only
    /// ([`connect_read_only`](Self::connect_read_only)).
    read_only: bool,
    /// Test-only: whether answering appends read the fence row `FOR SHARE`.
    #[cfg(feature = "unsafe-test-hooks")]
    answering_lock: AtomicBool,
}

impl std::fmt::Debug for PostgresEventStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresEventStore")
            .field("schema", &self.schema)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl PostgresEventStore {
    /// Opens a pool to `url` (a `postgres://` URL or a key=value string) and,
    /// unless `options.migrate_on_connect` is off, migrates the schema.
    pub async fn connect(url: &str, options: PostgresOptions) -> Result<Self, OpenError> {
        Self::open(url, options, false).await
    }

    /// Opens a pool to `url` whose sessions are read-only, for a report
    /// that must change nothing (retention's dry run), under a role that
    /// may only read.
    ///
    /// Every session is set `READ ONLY` (`default_transaction_read_only`)
    /// as it is created, so the server refuses any write through the store
    /// (SQLSTATE 25006, a permanent backend error); nothing is migrated
    /// (`options.migrate_on_connect` is ignored, and
    /// [`migrate`](Self::migrate) is refused with [`OpenError::ReadOnly`]).
    /// The schema must hold a store of this build's version: no store, or
    /// an older version, is [`OpenError::NeedsMigration`]; a newer one is
    /// [`OpenError::NewerSchema`]. Reading needs only `USAGE` on the schema
    /// and `SELECT` on its tables (and `EXECUTE` on its functions, which
    /// PostgreSQL grants to everyone by default).
    pub async fn connect_read_only(url: &str, options: PostgresOptions) -> Result<Self, OpenError> {
        let store = Self::open(url, options, true).await?;
        let client = store.pool.get().await.map_err(error::pool)?;
        let found = stored_version(&client, &store.schema).await?;
        let needs = |needs: String| OpenError::NeedsMigration {
            schema: store.schema.to_string(),
            found,
            needs,
        };
        match found {
            None => Err(needs("no loomfence store: no migrations ledger".to_owned())),
            Some(found) if found > SCHEMA_VERSION => Err(OpenError::NewerSchema {
                found,
                supported: SCHEMA_VERSION,
            }),
            Some(found) if found < SCHEMA_VERSION => Err(needs(format!(
                "schema version {found}; this build reads {SCHEMA_VERSION}"
            ))),
            Some(_) => {
                drop(client);
                Ok(store)
            }
        }
    }

    /// Opens the pool, read-only sessions or not, and migrates unless
    /// read-only or told not to.
    async fn open(url: &str, options: PostgresOptions, read_only: bool) -> Result<Self, OpenError> {
        let url = ConnectUrl::parse(url)?;
        let tls = tls::connector(&url)?;
        if options.pool_size == 0 {
            return Err(OpenError::PoolSize);
        }
        let manager = Manager::from_config(
            url.config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(std::time::Duration::from_secs(30)))
            .create_timeout(Some(std::time::Duration::from_secs(10)))
            .post_create(Hook::async_fn(move |client, _| {
                Box::pin(async move {
                    client
                        .batch_execute(if read_only {
                            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY"
                        } else {
                            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED"
                        })
                        .await
                        .map_err(HookError::Backend)
                })
            }))
            .build()
            .map_err(|e| OpenError::Pool(e.to_string()))?;
        let store = Self {
            sql: Arc::new(Sql::new(&options.schema)),
            schema: options.schema.clone(),
            wake: FeedWake::new(
                options.schema.clone(),
                pool.clone(),
                url.config.clone(),
                tls,
            ),
            pool,
            options,
            read_only,
            #[cfg(feature = "unsafe-test-hooks")]
            answering_lock: AtomicBool::new(true),
        };
        // The first connection, its failure named with the server and why.
        drop(
            store
                .pool
                .get()
                .await
                .map_err(|e| error::connect(&url, e))?,
        );
        if store.options.migrate_on_connect && !read_only {
            store.migrate().await?;
        }
        Ok(store)
    }

    /// Creates or upgrades the schema (see [`migrate`](crate::migration::migrate())).
    pub async fn migrate(&self) -> Result<MigrationReport, OpenError> {
        if self.read_only {
            return Err(OpenError::ReadOnly {
                schema: self.schema.to_string(),
            });
        }
        migrate(&self.pool, &self.schema, &self.options.migrate).await
    }

    /// The connection pool, for the offline backfill and for hosts that share
    /// it.
    #[must_use]
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The schema holding the tables.
    #[must_use]
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The timer store on the same pool and schema: one pool and one
    /// migration serve both, and the timer rows live beside the logs they
    /// wake. The table is the one `migrate` created; with
    /// `migrate_on_connect` off, call [`migrate`](Self::migrate) first.
    #[must_use]
    pub fn timers(&self) -> PostgresTimerStore {
        PostgresTimerStore::new(self.pool.clone(), self.schema.clone())
    }

    /// TEST ONLY: switches the `FOR SHARE` read of answering appends off, so
    /// the race tests can show that without it an append and a conditional
    /// acquire can both win.
    #[cfg(feature = "unsafe-test-hooks")]
    pub fn set_answering_lock(&self, enabled: bool) {
        self.answering_lock.store(enabled, Ordering::SeqCst);
    }

    /// Whether answering appends take the fence row `FOR SHARE`.
    fn lock_answering(&self) -> bool {
        #[cfg(feature = "unsafe-test-hooks")]
        {
            self.answering_lock.load(Ordering::SeqCst)
        }
        #[cfg(not(feature = "unsafe-test-hooks"))]
        {
            true
        }
    }

    /// A pooled connection.
    async fn client(&self) -> Result<Conn, StoreError> {
        let client = self
            .pool
            .get()
            .await
            .map_err(|e| StoreError::Backend(error::pool(e)))?;
        Ok(Conn::new(client))
    }

    /// The append statement for all three append operations: validate, run,
    /// retry on a lost sequence, and read the verdict.
    ///
    /// A connection lost after the statement was sent makes the append
    /// [`StoreError::OutcomeUnknown`] (see [`Conn::write_failed`]).
    async fn write(
        &self,
        id: &ExecutionId,
        events: Vec<NewEvent>,
        park_seq: Option<u64>,
    ) -> Result<ConditionalAppend, StoreError> {
        let Some(CheckedWrite {
            batch,
            events,
            park_seq,
        }) = check_write(events, park_seq)?
        else {
            return Ok(ConditionalAppend::Appended(Vec::new()));
        };
        let lock = batch.answering && self.lock_answering();
        let ensure = events
            .iter()
            .any(|e| e.kind == KernelKind::ExecutionSuspended.as_str());
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        let payloads: Vec<Json<&JsonObject>> = events.iter().map(|e| Json(&e.payload)).collect();
        let metadata: Vec<Json<&JsonObject>> = events.iter().map(|e| Json(&e.metadata)).collect();
        let ats: Vec<i64> = events.iter().map(|e| e.at).collect();
        let fence = batch.fence.map(to_i64);
        let park = park_seq.map(to_i64);
        // The open parks follow the core's rule, applied in the same
        // statement as the insert; sequences are offsets from the head there.
        let (opens, closes) =
            match park_change(1, events.iter().map(|e| (e.kind.as_str(), &e.metadata))) {
                ParkChange::Unchanged => (None, false),
                ParkChange::Opens(offset) => (Some(to_i64(offset)), false),
                ParkChange::Closes => (None, true),
            };
        let id_text = id.as_str();
        let client = self.client().await?;
        let (token, in_range, open, head, inserted, kind) = match park {
            // The answer is one `bigint`: the head before the insert, or
            // `-1 - token` when the guard refused.
            None => {
                let params: [&(dyn ToSql + Sync); 11] = [
                    &id_text,
                    &kinds,
                    &payloads,
                    &metadata,
                    &ats,
                    &fence,
                    &batch.answering,
                    &lock,
                    &ensure,
                    &opens,
                    &closes,
                ];
                let row = append_row(&client, &self.sql.append_plain_call, &params).await?;
                let answer: i64 = row.try_get(0).map_err(error::store)?;
                match answer {
                    head if head >= 0 => (0, true, true, head, to_i64(events.len() as u64), None),
                    refused => (-1 - refused, true, true, 0, 0, None),
                }
            }
            Some(_) => {
                let (answering, kernel) = (answering_kinds(), kernel_kinds());
                let params: [&(dyn ToSql + Sync); 14] = [
                    &id_text,
                    &kinds,
                    &payloads,
                    &metadata,
                    &ats,
                    &fence,
                    &batch.answering,
                    &lock,
                    &ensure,
                    &park,
                    &answering,
                    &kernel,
                    &opens,
                    &closes,
                ];
                let row = append_row(&client, &self.sql.append_call, &params).await?;
                let token: i64 = row.try_get(0).map_err(error::store)?;
                let in_range: bool = row.try_get(1).map_err(error::store)?;
                let open: bool = row.try_get(2).map_err(error::store)?;
                let head: i64 = row.try_get(3).map_err(error::store)?;
                let inserted: i64 = row.try_get(4).map_err(error::store)?;
                let kind: Option<String> = row.try_get(5).map_err(error::store)?;
                (token, in_range, open, head, inserted, kind)
            }
        };
        if let Some(park_seq) = park_seq {
            if !in_range {
                return Err(InputError::ParkSeqOutOfRange {
                    park_seq,
                    head: to_u64(head),
                }
                .into());
            }
            check_is_park(park_seq, &park_kind(kind, park_seq)?)?;
        }
        if !open {
            return Ok(ConditionalAppend::ParkAnswered);
        }
        if to_u64(inserted) != events.len() as u64 {
            return Err(StaleFenceError {
                execution_id: id.clone(),
                presented: batch.fence,
                current: to_u64(token),
            }
            .into());
        }
        self.wake.appended();
        Ok(ConditionalAppend::Appended(
            events
                .into_iter()
                .zip(to_u64(head) + 1..)
                .map(|(event, sequence)| event.into_envelope(id.clone(), sequence))
                .collect(),
        ))
    }

    /// The conditional acquire through the installed function.
    async fn acquire_if_function(
        &self,
        id: &str,
        fence: i64,
        park: i64,
    ) -> Result<Verdict, StoreError> {
        let row = self
            .client()
            .await?
            .write_row(
                &self.sql.acquire_fence_if_call,
                &[&id, &fence, &park, &answering_kinds(), &kernel_kinds()],
            )
            .await?;
        let acquired: bool = row.try_get(0).map_err(error::store)?;
        let token: Option<i64> = row.try_get(1).map_err(error::store)?;
        let head: Option<i64> = row.try_get(2).map_err(error::store)?;
        let kind: Option<String> = row.try_get(3).map_err(error::store)?;
        Verdict::new(acquired, token, head, kind)
    }

    /// The conditional acquire as an explicit READ COMMITTED transaction,
    /// every statement sent before the first answer is awaited.
    async fn acquire_if_pipelined(
        &self,
        id: &str,
        fence: i64,
        park: i64,
    ) -> Result<Verdict, StoreError> {
        let client = self.client().await?;
        let [ensure, lock, bump] = &self.sql.acquire_fence_if_pipelined;
        let begin = client
            .prepare_cached("BEGIN ISOLATION LEVEL READ COMMITTED")
            .await
            .map_err(|e| client.store(e))?;
        let ensure = client
            .prepare_cached(ensure)
            .await
            .map_err(|e| client.store(e))?;
        let lock = client
            .prepare_cached(lock)
            .await
            .map_err(|e| client.store(e))?;
        let bump = client
            .prepare_cached(bump)
            .await
            .map_err(|e| client.store(e))?;
        let commit = client
            .prepare_cached("COMMIT")
            .await
            .map_err(|e| client.store(e))?;
        let (answering, kernel) = (answering_kinds(), kernel_kinds());
        client.ready_to_write()?;
        let ensure_params: [&(dyn ToSql + Sync); 2] = [&id, &park];
        let lock_params: [&(dyn ToSql + Sync); 1] = [&id];
        let bump_params: [&(dyn ToSql + Sync); 5] = [&id, &fence, &park, &answering, &kernel];
        let (began, ensured, locked, bumped, committed) = tokio::join!(
            client.execute(&begin, &[]),
            client.execute(&ensure, &ensure_params),
            client.query_opt(&lock, &lock_params),
            client.query_one(&bump, &bump_params),
            client.execute(&commit, &[]),
        );
        // Every reply is read before any error is returned: an error in the
        // middle aborts the transaction, and the COMMIT then rolls it back.
        // Replies come in order, so the first failure decides: a server
        // error means nothing committed; a lost connection with no server
        // error before it may have lost the COMMIT's answer.
        began.map_err(|e| client.write_failed(e))?;
        ensured.map_err(|e| client.write_failed(e))?;
        let current: Option<i64> = match locked.map_err(|e| client.write_failed(e))? {
            Some(row) => Some(row.try_get(0).map_err(error::store)?),
            None => None,
        };
        let bumped = bumped.map_err(|e| client.write_failed(e))?;
        committed.map_err(|e| client.write_failed(e))?;
        let new_token: Option<i64> = bumped.try_get(0).map_err(error::store)?;
        let head: i64 = bumped.try_get(1).map_err(error::store)?;
        let kind: Option<String> = bumped.try_get(2).map_err(error::store)?;
        match new_token {
            Some(_) => Verdict::new(true, new_token, Some(head), kind),
            None => Verdict::new(false, current, Some(head), kind),
        }
    }
}

/// Runs an append function's call on `client`: its one answer row.
///
/// Appends to one execution queue on its advisory lock, so a sequence
/// collision needs a writer that bypasses it (an older version of this
/// store); retrying with a fresh snapshot still keeps the log whole. A
/// connection lost after the statement was sent makes the append
/// [`StoreError::OutcomeUnknown`] (see [`Conn::write_failed`]).
async fn append_row(
    client: &Conn,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<tokio_postgres::Row, StoreError> {
    let statement = client
        .prepare_cached(sql)
        .await
        .map_err(|e| client.store(e))?;
    let mut retries = 0;
    loop {
        client.ready_to_write()?;
        match client.query_one(&statement, params).await {
            Ok(row) => return Ok(row),
            Err(e) if error::is_sequence_collision(&e) && retries < MAX_SEQUENCE_RETRIES => {
                retries += 1;
                tokio::task::yield_now().await;
            }
            Err(e) => return Err(client.write_failed(e)),
        }
    }
}

/// What a conditional acquire answered, before it is checked against the
/// caller's expectation.
enum Verdict {
    /// The token moved to this value.
    Acquired(u64),
    /// Nothing changed: the current token (none if the execution has no
    /// fence row), the log's head and the kind of the event at the park
    /// sequence (none when it is outside the log).
    Refused {
        /// The token as it stands.
        current: Option<i64>,
        /// The last sequence of the log.
        head: i64,
        /// The kind of the event at the park sequence.
        kind: Option<String>,
    },
}

impl Verdict {
    /// Reads a verdict row; an acquire without a token, or a refusal
    /// without a head, is a row this store did not write.
    fn new(
        acquired: bool,
        token: Option<i64>,
        head: Option<i64>,
        kind: Option<String>,
    ) -> Result<Self, StoreError> {
        match (acquired, token, head) {
            (true, Some(token), _) => Ok(Verdict::Acquired(to_u64(token))),
            (false, current, Some(head)) => Ok(Verdict::Refused {
                current,
                head,
                kind,
            }),
            (acquired, token, head) => Err(error::corrupt(format!(
                "acquire_fence_if answered acquired={acquired}, token={token:?}, head={head:?}"
            ))),
        }
    }
}

/// The kind of the event at `park_seq`, which the server read inside the
/// log: a sequence inside the log without an event is a row this store did
/// not write (a log's sequences are contiguous from 1).
fn park_kind(kind: Option<String>, park_seq: u64) -> Result<String, StoreError> {
    kind.ok_or_else(|| {
        error::corrupt(format!(
            "no event at parkSeq {park_seq}, inside the log's range"
        ))
    })
}

/// Tokens and sequences are at most 2^53-1 (checked before any statement),
/// so they fit a `bigint`.
fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A `bigint` the store wrote (never negative) as a token or sequence.
fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or_default()
}

/// The event of `row` whose columns `sequence, kind, payload, metadata,
/// at` start at `first`.
fn envelope(
    row: &tokio_postgres::Row,
    first: usize,
    execution_id: ExecutionId,
) -> Result<Envelope, StoreError> {
    let column = |n: usize| first + n;
    let sequence: i64 = row.try_get(column(0)).map_err(error::store)?;
    Ok(Envelope {
        execution_id,
        sequence: to_u64(sequence),
        kind: row.try_get(column(1)).map_err(error::store)?,
        payload: object(row.try_get(column(2)).map_err(error::store)?, "payload")?,
        metadata: object(row.try_get(column(3)).map_err(error::store)?, "metadata")?,
        at: row.try_get(column(4)).map_err(error::store)?,
    })
}

/// Decodes a JSON column that must hold an object.
fn object(value: Value, column: &str) -> Result<JsonObject, StoreError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(error::corrupt(format!(
            "{column} is {other}, not a JSON object"
        ))),
    }
}

#[async_trait]
impl EventStore for PostgresEventStore {
    fn capability(&self) -> Capability {
        Capability::Conditional
    }

    async fn append_many(
        &self,
        execution_id: &ExecutionId,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, StoreError> {
        match self.write(execution_id, events, None).await? {
            ConditionalAppend::Appended(written) => Ok(written),
            ConditionalAppend::ParkAnswered => {
                Err(error::corrupt("an unconditional append reported a park"))
            }
        }
    }

    async fn append_if_parked(
        &self,
        execution_id: &ExecutionId,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
        self.write(execution_id, events, Some(park_seq)).await
    }

    async fn read_range(
        &self,
        execution_id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        let CheckedRead { from_seq, to_seq } = check_read(from_seq, to_seq)?;
        let id = execution_id;
        let rows = self
            .client()
            .await?
            .rows(
                &self.sql.read_range,
                &[&id.as_str(), &to_i64(from_seq), &to_i64(to_seq)],
            )
            .await?;
        rows.iter()
            .map(|row| envelope(row, 0, id.clone()))
            .collect()
    }

    async fn current_fence(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        let row = self
            .client()
            .await?
            .row_opt(&self.sql.current_fence, &[&execution_id.as_str()])
            .await?;
        match row {
            Some(row) => Ok(to_u64(row.try_get(0).map_err(error::store)?)),
            None => Ok(0),
        }
    }

    async fn acquire_fence(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        let row = self
            .client()
            .await?
            .write_row(&self.sql.acquire_fence, &[&execution_id.as_str()])
            .await?;
        Ok(to_u64(row.try_get(0).map_err(error::store)?))
    }

    async fn acquire_fence_if(
        &self,
        execution_id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        check_acquire_if(expect)?;
        let execution_id = execution_id.as_str();
        let fence = to_i64(expect.fence);
        let park = to_i64(expect.park_seq);
        let verdict = match self.options.acquire {
            AcquireStrategy::Function => {
                self.acquire_if_function(execution_id, fence, park).await?
            }
            AcquireStrategy::Pipelined => {
                self.acquire_if_pipelined(execution_id, fence, park).await?
            }
        };
        match verdict {
            Verdict::Acquired(fence) => Ok(AcquireOutcome::Acquired { fence }),
            Verdict::Refused { head, .. } if park < 1 || park > head => {
                Err(InputError::ParkSeqOutOfRange {
                    park_seq: expect.park_seq,
                    head: to_u64(head),
                }
                .into())
            }
            Verdict::Refused { current, kind, .. } => {
                check_is_park(expect.park_seq, &park_kind(kind, expect.park_seq)?)?;
                Ok(AcquireOutcome::Stale {
                    fence: to_u64(current.unwrap_or_default()),
                })
            }
        }
    }

    async fn delete_execution(&self, execution_id: &ExecutionId) -> Result<bool, StoreError> {
        let row = self
            .client()
            .await?
            .write_row(&self.sql.delete_call, &[&execution_id.as_str()])
            .await?;
        let deleted: i64 = row.try_get(0).map_err(error::store)?;
        Ok(deleted > 0)
    }

    async fn delete_execution_if(
        &self,
        execution_id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, StoreError> {
        self.delete_if(execution_id, guard).await
    }

    async fn read_logs(
        &self,
        execution_ids: &[ExecutionId],
    ) -> Result<Vec<Vec<Envelope>>, StoreError> {
        self.read_logs_at_once(execution_ids).await
    }

    async fn delete_executions_if(
        &self,
        batch: &[DeleteIf],
    ) -> Result<Vec<GuardedDelete>, StoreError> {
        self.delete_if_batch(batch).await
    }

    async fn list_executions(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        self.list(after, limit).await
    }

    async fn feed(&self, after: FeedCursor, limit: u32) -> Result<Vec<FeedEntry>, StoreError> {
        self.read_feed(after, limit).await
    }

    async fn feed_head(&self) -> Result<FeedCursor, StoreError> {
        self.read_feed_head().await
    }

    async fn open_parks(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionId>, StoreError> {
        self.read_open_parks(after, limit).await
    }

    async fn wait_for_feed(&self, after: FeedCursor) -> Result<(), StoreError> {
        self.wait_feed(after).await
    }
}
