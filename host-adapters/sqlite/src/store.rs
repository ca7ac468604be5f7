//! The `EventStore` implementation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use loomfence_core::{
    AcquireOutcome, Capability, ConditionalAppend, Envelope, ExecutionId, NewEvent,
    ParkExpectation,
    feed::{FeedCursor, FeedEntry, check_feed_limit},
    retention::{
        DeleteGuard, DeleteIf, ExecutionSummary, GuardedDelete, check_delete_batch, check_guard,
        check_page_limit, check_read_batch,
    },
};
use loomfence_store::checks::{
    CheckedRead, CheckedWrite, check_acquire_if, check_read, check_write,
};
use loomfence_store::{BackendError, EventStore, StoreError};

use crate::db::Db;
use crate::error::OpenError;
use crate::feed_ops;
use crate::ops::{self, Encoded};
use crate::options::SqliteOptions;
use crate::retention_ops;
use crate::timers::SqliteTimerStore;

/// A fenced event store in one SQLite file (or `:memory:`), with the
/// conditional capability: a single-node deployment gets the same
/// guarantees as a fleet on PostgreSQL.
#[derive(Debug, Clone)]
pub struct SqliteEventStore {
    /// The connections.
    db: Arc<Db>,
    /// Where the database lives.
    path: PathBuf,
}

impl SqliteEventStore {
    /// Opens the database at `path` (`:memory:` for a private in-memory
    /// one), creating and migrating it if needed.
    ///
    /// Idempotent, and safe when several processes open the same file at
    /// once. A file that is not an SQLite database, is damaged, carries a
    /// newer schema or holds another application's `timers` or `inbox`
    /// table is refused with an [`OpenError`] and left untouched.
    pub async fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, OpenError> {
        let path = path.as_ref().to_path_buf();
        let db = Db::open_off_thread(path.clone(), options).await?;
        Ok(Self {
            db: Arc::new(db),
            path,
        })
    }

    /// Opens the existing database at `path` read-only, for a report that
    /// must change nothing (retention's dry run), on a file this process may
    /// not be allowed to write.
    ///
    /// Nothing is created or migrated: every connection is opened with
    /// `SQLITE_OPEN_READ_ONLY`, and a file that would need a migration to
    /// be read (an older schema, or one missing an object this build adds
    /// on open) is refused with [`OpenError::NeedsMigration`]; a foreign,
    /// damaged or newer file is refused as [`open`](Self::open) refuses it.
    /// Every write through the store (and its [`timers`](Self::timers))
    /// fails with a permanent backend error whose source is
    /// [`ReadOnlyStore`](crate::ReadOnlyStore), having reached nothing.
    /// `options.durability` does not apply; at least one reader is opened.
    /// A file with no `-wal` beside it (no writer has it open) is read as
    /// `immutable`: the database file alone, no locks, no `-wal` or `-shm`
    /// created, so a directory this process may not write works, and one
    /// it may is left as it was. With a `-wal`, SQLite's locks and WAL
    /// index are used and every commit is seen.
    pub async fn open_read_only(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<Self, OpenError> {
        let path = path.as_ref().to_path_buf();
        let db = Db::open_read_only_off_thread(path.clone(), options).await?;
        Ok(Self {
            db: Arc::new(db),
            path,
        })
    }

    /// A private in-memory database, for tests and single-process hosts.
    pub async fn open_in_memory() -> Result<Self, OpenError> {
        Self::open(":memory:", SqliteOptions::default()).await
    }

    /// The database's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The timer store and inbox in the same database, on the same
    /// connections: its writes queue on this store's writer thread and
    /// share its commits, so
    /// a host that keeps both in one file pays for one writer, and a
    /// `:memory:` database holds both. The handle keeps the database open
    /// after this store is dropped.
    #[must_use]
    pub fn timers(&self) -> SqliteTimerStore {
        SqliteTimerStore::new(Arc::clone(&self.db), self.path.clone())
    }

    /// The connections, for tests inside the crate.
    #[cfg(test)]
    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    /// The shared part of the three append operations: validate and encode
    /// off the lock, then write.
    async fn write(
        &self,
        execution_id: &ExecutionId,
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
        let id = execution_id.clone();
        let written = self
            .db
            .write(
                move || events.into_iter().map(Encoded::new).collect(),
                move |writer, encoded: Vec<Encoded>| {
                    ops::append(writer, &id, batch, encoded, park_seq)
                },
            )
            .await;
        // A wake is a hint: one after a write of unknown outcome costs a
        // follower one read, and one after a refusal (or an empty batch)
        // is not worth sending.
        let landed = match &written {
            Ok(ConditionalAppend::Appended(events)) => !events.is_empty(),
            Err(StoreError::OutcomeUnknown(_)) => true,
            _ => false,
        };
        if landed {
            self.db.appended().notify_waiters();
        }
        written
    }
}

#[async_trait]
impl EventStore for SqliteEventStore {
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
            ConditionalAppend::ParkAnswered => Err(StoreError::Backend(BackendError::permanent(
                "an unconditional append reported a park",
            ))),
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
        let id = execution_id.clone();
        self.db
            .read(move |reader| ops::read_range(reader, &id, from_seq, to_seq))
            .await
    }

    async fn current_fence(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        let id = execution_id.clone();
        self.db
            .read(move |reader| ops::current_fence(reader, id.as_str()))
            .await
    }

    async fn acquire_fence(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        let id = execution_id.clone();
        self.db
            .write(
                || Ok(()),
                move |writer, ()| ops::acquire_fence(writer, id.as_str()),
            )
            .await
    }

    async fn acquire_fence_if(
        &self,
        execution_id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        check_acquire_if(expect)?;
        let id = execution_id.clone();
        self.db
            .write(
                || Ok(()),
                move |writer, ()| ops::acquire_fence_if(writer, id.as_str(), expect),
            )
            .await
    }

    async fn delete_execution(&self, execution_id: &ExecutionId) -> Result<bool, StoreError> {
        let id = execution_id.clone();
        self.db
            .write(
                || Ok(()),
                move |writer, ()| ops::delete_execution(writer, id.as_str()),
            )
            .await
    }

    async fn delete_execution_if(
        &self,
        execution_id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, StoreError> {
        check_guard(guard)?;
        let id = execution_id.clone();
        let guard = guard.clone();
        self.db
            .write(
                || Ok(()),
                move |writer, ()| retention_ops::delete_execution_if(writer, &id, &guard),
            )
            .await
    }

    /// The logs in one call on one reader connection, inside one read
    /// transaction (one snapshot, one lock of the file for the lot).
    async fn read_logs(
        &self,
        execution_ids: &[ExecutionId],
    ) -> Result<Vec<Vec<Envelope>>, StoreError> {
        check_read_batch(execution_ids)?;
        let ids = execution_ids.to_vec();
        self.db
            .read(move |reader| retention_ops::read_logs(reader, &ids))
            .await
    }

    /// The batch in one write transaction: one commit (one sync) for the
    /// lot, every entry judged by its own guard in order.
    async fn delete_executions_if(
        &self,
        batch: &[DeleteIf],
    ) -> Result<Vec<GuardedDelete>, StoreError> {
        check_delete_batch(batch)?;
        let batch = batch.to_vec();
        self.db
            .write(
                || Ok(()),
                move |writer, ()| {
                    batch
                        .iter()
                        .map(|entry| {
                            retention_ops::delete_execution_if(
                                writer,
                                &entry.execution_id,
                                &entry.guard,
                            )
                        })
                        .collect()
                },
            )
            .await
    }

    async fn list_executions(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        let limit = check_page_limit(limit)?;
        let after = after.cloned();
        self.db
            .read(move |reader| retention_ops::list_executions(reader, after.as_ref(), limit))
            .await
    }

    async fn feed(&self, after: FeedCursor, limit: u32) -> Result<Vec<FeedEntry>, StoreError> {
        let limit = check_feed_limit(limit)?;
        self.db
            .read(move |reader| feed_ops::feed(reader, after, limit))
            .await
    }

    async fn feed_head(&self) -> Result<FeedCursor, StoreError> {
        self.db.read(feed_ops::head).await
    }

    async fn open_parks(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionId>, StoreError> {
        let limit = check_feed_limit(limit)?;
        let after = after.cloned();
        self.db
            .read(move |reader| feed_ops::open_parks(reader, after.as_ref(), limit))
            .await
    }

    /// Woken by this process's appends only: another process appending to
    /// the same file is seen by the follower's next read on its interval.
    async fn wait_for_feed(&self, after: FeedCursor) -> Result<(), StoreError> {
        // Registered before the head is read, so an append committed in
        // between wakes it.
        let appended = self.db.appended().notified();
        let mut appended = std::pin::pin!(appended);
        appended.as_mut().enable();
        if self.feed_head().await? > after {
            return Ok(());
        }
        appended.await;
        Ok(())
    }
}
