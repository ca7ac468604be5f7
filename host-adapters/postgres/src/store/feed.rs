//! The change feed's reads (see [`feed_sql`](crate::feed_sql) for why a
//! cursor is a transaction id and a sequence number, and
//! [`feed_wake`](crate::feed_wake) for the wake).

use std::time::Duration;

use loomfence_core::ExecutionId;
use loomfence_core::feed::{FeedCursor, FeedEntry, check_feed_limit};
use loomfence_store::StoreError;
use tokio_postgres::Row;

use super::{PostgresEventStore, envelope, to_i64, to_u64};
use crate::conn::Conn;
use crate::error;
use crate::feed_sql::SETTLED;

/// How long a read waits, at most, for the transactions that hold the
/// horizon below events it can already see.
const SETTLE_FOR: Duration = Duration::from_secs(1);

/// The first pause between two looks at the horizon; it doubles up to
/// [`SETTLE_PAUSE_MAX`].
const SETTLE_PAUSE: Duration = Duration::from_micros(500);

/// The longest pause between two looks at the horizon.
const SETTLE_PAUSE_MAX: Duration = Duration::from_millis(20);

/// A cursor from its two stored parts; one past JavaScript's safe
/// integers (a cluster some 2^21 transaction-id epochs old, or a sequence
/// past 2^53) is reported, not wrapped.
fn cursor(row: &Row) -> Result<FeedCursor, StoreError> {
    let epoch: i64 = row.try_get(0).map_err(error::store)?;
    let position: i64 = row.try_get(1).map_err(error::store)?;
    FeedCursor::new(to_u64(epoch), to_u64(position))
        .map_err(|e| error::corrupt(format!("feed cursor {epoch}.{position}: {e}")))
}

/// Waits (at most [`SETTLE_FOR`]) until no event this connection can see
/// is above the horizon, so that a read lists what committed before it
/// began: the horizon is the oldest transaction running anywhere in the
/// cluster, and a busy one always has a few short ones in flight. Only
/// freshness rides on it, never the order: a read that gives up lists less,
/// and a later one lists the rest.
///
/// Answers whether there was anything to wait for.
async fn settle(client: &Conn, pending_sql: &str) -> Result<bool, StoreError> {
    let pending: Option<i64> = client
        .rows(pending_sql, &[])
        .await?
        .first()
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(error::store)?
        .flatten();
    let Some(pending) = pending else {
        return Ok(false);
    };
    let deadline = tokio::time::Instant::now() + SETTLE_FOR;
    let mut pause = SETTLE_PAUSE;
    loop {
        let settled: bool = client
            .rows(SETTLED, &[&pending])
            .await?
            .first()
            .map(|row| row.try_get(0))
            .transpose()
            .map_err(error::store)?
            .unwrap_or(true);
        if settled || tokio::time::Instant::now() + pause > deadline {
            return Ok(true);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(SETTLE_PAUSE_MAX);
    }
}

impl PostgresEventStore {
    /// Up to `limit` events after `after`, below the snapshot's horizon.
    pub(super) async fn read_feed(
        &self,
        after: FeedCursor,
        limit: u32,
    ) -> Result<Vec<FeedEntry>, StoreError> {
        self.read_feed_with(&self.sql.feed, after, limit).await
    }

    /// [`Self::read_feed`] with `sql` as the statement.
    async fn read_feed_with(
        &self,
        sql: &str,
        after: FeedCursor,
        limit: u32,
    ) -> Result<Vec<FeedEntry>, StoreError> {
        let limit = i64::try_from(check_feed_limit(limit)?).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
            [&to_i64(after.epoch()), &to_i64(after.position()), &limit];
        let mut rows = client.rows(sql, &params).await?;
        // A full page needs no wait: the follower reads on at once.
        if (rows.len() as i64) < limit && settle(&client, &self.sql.feed_pending).await? {
            rows = client.rows(sql, &params).await?;
        }
        rows.iter()
            .map(|row| {
                let id: String = row.try_get(2).map_err(error::store)?;
                let execution_id = ExecutionId::new(id)
                    .map_err(|e| error::corrupt(format!("stored execution id: {e}")))?;
                Ok(FeedEntry {
                    cursor: cursor(row)?,
                    event: envelope(row, 3, execution_id)?,
                })
            })
            .collect()
    }

    /// TEST ONLY: a feed page read without the horizon, as a bare sequence
    /// would order it, so a test can show the skip the horizon prevents.
    #[cfg(feature = "unsafe-test-hooks")]
    pub async fn feed_without_horizon(
        &self,
        after: FeedCursor,
        limit: u32,
    ) -> Result<Vec<FeedEntry>, StoreError> {
        let sql = crate::feed_sql::read_without_horizon(&self.schema);
        self.read_feed_with(&sql, after, limit).await
    }

    /// The greatest cursor below the horizon, of the events and of the
    /// deleted ones kept for the head.
    pub(super) async fn read_feed_head(&self) -> Result<FeedCursor, StoreError> {
        let client = self.client().await?;
        settle(&client, &self.sql.feed_pending).await?;
        let row = client.row_opt(&self.sql.feed_head, &[]).await?;
        row.map_or(Ok(FeedCursor::START), |row| cursor(&row))
    }

    /// A page of the open-parks index, by id.
    pub(super) async fn read_open_parks(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionId>, StoreError> {
        let limit = i64::try_from(check_feed_limit(limit)?).unwrap_or(i64::MAX);
        let after = after.map_or("", ExecutionId::as_str);
        let rows = self
            .client()
            .await?
            .rows(&self.sql.open_parks, &[&after, &limit])
            .await?;
        rows.iter()
            .map(|row| {
                let id: String = row.try_get(0).map_err(error::store)?;
                ExecutionId::new(id)
                    .map_err(|e| error::corrupt(format!("stored execution id: {e}")))
            })
            .collect()
    }

    /// Returns once the head is past `after`, or a wake came: registered
    /// (and listening) before the head is read, so a commit in between
    /// wakes it.
    pub(super) async fn wait_feed(&self, after: FeedCursor) -> Result<(), StoreError> {
        self.wake.listen().await.map_err(StoreError::Backend)?;
        let written = self.wake.written().notified();
        let mut written = std::pin::pin!(written);
        written.as_mut().enable();
        if self.read_feed_head().await? > after {
            return Ok(());
        }
        written.await;
        Ok(())
    }
}
