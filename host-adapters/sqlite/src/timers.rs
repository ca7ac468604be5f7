//! The `TimerStore` implementation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use loomfence_core::ExecutionId;
use loomfence_core::timer::{
    Claim, Completed, DueFilter, ExhaustedQuery, ExhaustedRow, Exhaustion, Lease, TimerQuery,
    TimerRow, check_claim, check_clear, check_due, check_exhaust, check_lease, check_reschedule,
    check_row,
};
use loomfence_store::{ClaimPage, StoreError, TimerListing, TimerStore};

use crate::db::Db;
use crate::error::OpenError;
use crate::options::SqliteOptions;
use crate::timer_ops;

/// The timer rows and the inbox of one SQLite database, beside its event
/// log, under the rules of the core's
/// [`TimerTable`](loomfence_core::timer::TimerTable) and
/// [`InboxTable`](loomfence_core::inbox::InboxTable).
///
/// It is the [`InboxStore`](loomfence_store::InboxStore) as well as the
/// timer store, because a send writes its message and its intent row (a
/// timer row) in one transaction.
///
/// It shares the event store's connections: every timer write is one job on
/// the same writer thread, so it commits in the same groups as the event
/// writes (one fsync for both) and a `:memory:` database holds both. A
/// claim is one statement under SQLite's write lock, so claimers in other
/// processes on the same file never hold one row at once either.
///
/// Get one from [`SqliteEventStore::timers`](crate::SqliteEventStore::timers), or open the file with
/// [`SqliteTimerStore::open`] when the process needs no event store (a
/// second open of a file this process already has open costs a second
/// writer thread, and the two then queue on SQLite's lock instead of
/// sharing commits).
///
/// ```
/// use loomfence_core::{ExecutionId, timer::{Completed, DueFilter, Lease, NodeId, TimerRow}};
/// use loomfence_sqlite::SqliteEventStore;
/// use loomfence_store::TimerStore;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let events = SqliteEventStore::open_in_memory().await?;
/// let timers = events.timers();
/// timers.schedule(&TimerRow::wake(ExecutionId::new("job-1")?, 1_000)).await?;
///
/// let lease = Lease { holder: NodeId::new("node-a")?, now: 1_000, duration_ms: 30_000 };
/// let claims = timers.claim_due(&lease, 10, DueFilter::default()).await?.claims;
/// assert_eq!(claims.len(), 1);
/// // Fire the row, then retire it; only the current claim can.
/// assert_eq!(timers.complete(&claims[0]).await?, Completed::Done);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteTimerStore {
    /// The connections, shared with the event store it came from.
    db: Arc<Db>,
    /// Where the database lives.
    path: PathBuf,
}

impl SqliteTimerStore {
    /// A handle on `db`'s timers.
    pub(crate) fn new(db: Arc<Db>, path: PathBuf) -> Self {
        Self { db, path }
    }

    /// Opens the database at `path` (`:memory:` for a private in-memory
    /// one) exactly as [`SqliteEventStore::open`](crate::SqliteEventStore::open) does: created and
    /// migrated if needed, safe to race, a foreign, damaged or newer file
    /// refused and left untouched. A `timers` table of the reference
    /// engine's older shape gets its missing columns (its rows stay, as
    /// plain wakes); one without `execution_id` or `wake_at` is someone
    /// else's and is refused ([`OpenError::ForeignTimers`]).
    pub async fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, OpenError> {
        let path = path.as_ref().to_path_buf();
        let db = Db::open_off_thread(path.clone(), options).await?;
        Ok(Self::new(Arc::new(db), path))
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

    /// The connections, for the inbox on the same store.
    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    /// Queues a timer write on the writer thread.
    async fn write<T: Send + 'static>(
        &self,
        apply: impl FnOnce(&rusqlite::Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.db.write(|| Ok(()), move |conn, ()| apply(conn)).await
    }
}

#[async_trait]
impl TimerStore for SqliteTimerStore {
    async fn schedule(&self, row: &TimerRow) -> Result<(), StoreError> {
        check_row(row)?;
        let redrive = timer_ops::encode_redrive(row.redrive)?;
        let (id, wake_at) = (row.execution_id.clone(), row.wake_at);
        self.write(move |conn| timer_ops::schedule(conn, &id, wake_at, redrive.as_deref()))
            .await
    }

    async fn due(
        &self,
        now: i64,
        limit: usize,
        filter: DueFilter,
    ) -> Result<Vec<TimerRow>, StoreError> {
        check_due(now, limit)?;
        self.db
            .read(move |conn| timer_ops::due(conn, now, limit, filter))
            .await
    }

    async fn claim_due(
        &self,
        lease: &Lease,
        limit: usize,
        filter: DueFilter,
    ) -> Result<ClaimPage, StoreError> {
        let expires_at = check_lease(lease, limit)?;
        let lease = lease.clone();
        self.write(move |conn| timer_ops::claim_due(conn, &lease, expires_at, limit, filter))
            .await
    }

    async fn complete(&self, claim: &Claim) -> Result<Completed, StoreError> {
        check_claim(claim)?;
        let claim = claim.clone();
        self.write(move |conn| timer_ops::complete(conn, &claim))
            .await
    }

    async fn reschedule(&self, claim: &Claim, next: &TimerRow) -> Result<Completed, StoreError> {
        check_reschedule(claim, next)?;
        let redrive = timer_ops::encode_redrive(next.redrive)?;
        let (claim, next) = (claim.clone(), next.clone());
        self.write(move |conn| timer_ops::reschedule(conn, &claim, &next, redrive.as_deref()))
            .await
    }

    async fn release(&self, claim: &Claim) -> Result<Completed, StoreError> {
        check_claim(claim)?;
        let claim = claim.clone();
        self.write(move |conn| timer_ops::release(conn, &claim))
            .await
    }

    async fn exhaust(
        &self,
        claim: &Claim,
        exhaustion: &Exhaustion,
    ) -> Result<Completed, StoreError> {
        check_exhaust(claim, exhaustion)?;
        let (claim, exhaustion) = (claim.clone(), *exhaustion);
        self.write(move |conn| timer_ops::exhaust(conn, &claim, exhaustion))
            .await
    }

    async fn list(&self, query: &TimerQuery) -> Result<TimerListing, StoreError> {
        let limit = query.checked_limit()?;
        let query = query.clone();
        self.db
            .read(move |conn| timer_ops::list(conn, &query, limit))
            .await
    }

    async fn exhausted(&self, query: &ExhaustedQuery) -> Result<Vec<ExhaustedRow>, StoreError> {
        let limit = query.checked_limit()?;
        let query = query.clone();
        self.db
            .read(move |conn| timer_ops::exhausted(conn, &query, limit))
            .await
    }

    async fn clear_exhausted(
        &self,
        execution_id: &ExecutionId,
        wake_at: i64,
    ) -> Result<bool, StoreError> {
        check_clear(wake_at)?;
        let id = execution_id.clone();
        self.write(move |conn| timer_ops::clear_exhausted(conn, &id, wake_at))
            .await
    }
}
