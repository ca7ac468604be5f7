//! A pooled connection that is not handed back to the pool once its session
//! is known to be dead.
//!
//! The pool's fast recycling only checks whether the driver has noticed the
//! socket closed, which can happen after the next caller already has the
//! connection: a session killed on the server (`pg_terminate_backend`, a
//! failover) would then fail one more, innocent, call. Every error that
//! means the session is gone marks the connection, and a marked connection
//! is detached from the pool when it is dropped.
//!
//! Writes go through [`Conn::write_row`] (or [`Conn::write_failed`]): a
//! write whose connection is lost once its statement was handed over may
//! have committed, and is reported as
//! [`StoreError::OutcomeUnknown`](loomfence_store::StoreError::OutcomeUnknown).

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};

use deadpool_postgres::{ClientWrapper, Object};
use loomfence_store::{BackendError, StoreError};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error;

/// A pooled connection, detached on drop if an error showed its session
/// dead.
pub(crate) struct Conn {
    /// The connection; `None` only during drop.
    client: Option<Object>,
    /// Whether an error showed the session dead.
    dead: AtomicBool,
}

impl Conn {
    /// Wraps a connection fresh from the pool.
    pub(crate) fn new(client: Object) -> Self {
        Self {
            client: Some(client),
            dead: AtomicBool::new(false),
        }
    }

    /// Classifies `e`, remembering whether it killed the session.
    pub(crate) fn backend(&self, e: tokio_postgres::Error) -> BackendError {
        if session_lost(&e) {
            self.dead.store(true, Ordering::Relaxed);
        }
        error::backend(e)
    }

    /// [`Conn::backend`] as a store error.
    pub(crate) fn store(&self, e: tokio_postgres::Error) -> StoreError {
        StoreError::Backend(self.backend(e))
    }

    /// Classifies the failure of a write statement already handed to the
    /// connection. With no answer from the server (the connection closed or
    /// failed), the statement may have run and committed before the answer
    /// was lost: [`StoreError::OutcomeUnknown`]. A server error (one with a
    /// SQLSTATE: a serialisation failure, a deadlock, a lock timeout, a
    /// FATAL) comes back before the statement's implicit commit, which is
    /// then not made: [`StoreError::Backend`], as for any other call.
    pub(crate) fn write_failed(&self, e: tokio_postgres::Error) -> StoreError {
        let lost = error::answer_lost(&e);
        let backend = self.backend(e);
        if lost {
            StoreError::OutcomeUnknown(backend)
        } else {
            StoreError::Backend(backend)
        }
    }

    /// Refuses to send a write on a connection already known closed: that
    /// write certainly did not happen, so it is a plain retryable failure
    /// (and the connection is not handed back to the pool). A connection
    /// that closes after this check makes the write
    /// [`StoreError::OutcomeUnknown`]: whether its bytes left cannot be
    /// told, so the answer errs on the side that is never wrong.
    pub(crate) fn ready_to_write(&self) -> Result<(), StoreError> {
        if self.deref().is_closed() {
            self.dead.store(true, Ordering::Relaxed);
            return Err(StoreError::Backend(BackendError::retryable(
                "the connection closed before the write was sent",
            )));
        }
        Ok(())
    }

    /// Marks the connection as not to be handed back to the pool: for a
    /// session whose state is unknown (a transaction that could not be
    /// rolled back), which the next caller must not inherit.
    pub(crate) fn discard(&self) {
        self.dead.store(true, Ordering::Relaxed);
    }
}

impl Conn {
    /// Runs a cached statement and returns its rows.
    pub(crate) async fn rows(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        let statement = self.prepare_cached(sql).await.map_err(|e| self.store(e))?;
        self.deref()
            .query(&statement, params)
            .await
            .map_err(|e| self.store(e))
    }

    /// Runs a cached write statement that returns exactly one row. Preparing
    /// it sends nothing of the write, so a failure there is a plain backend
    /// error; a failure once the statement was handed to the connection is
    /// classified by [`Conn::write_failed`].
    pub(crate) async fn write_row(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, StoreError> {
        let statement = self.prepare_cached(sql).await.map_err(|e| self.store(e))?;
        self.ready_to_write()?;
        self.deref()
            .query_one(&statement, params)
            .await
            .map_err(|e| self.write_failed(e))
    }

    /// Runs a cached write statement and returns how many rows it changed,
    /// classified as [`Conn::write_row`] is.
    pub(crate) async fn write(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, StoreError> {
        let statement = self.prepare_cached(sql).await.map_err(|e| self.store(e))?;
        self.ready_to_write()?;
        self.deref()
            .execute(&statement, params)
            .await
            .map_err(|e| self.write_failed(e))
    }

    /// Runs a cached statement that returns at most one row.
    pub(crate) async fn row_opt(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, StoreError> {
        let statement = self.prepare_cached(sql).await.map_err(|e| self.store(e))?;
        self.deref()
            .query_opt(&statement, params)
            .await
            .map_err(|e| self.store(e))
    }
}

impl Deref for Conn {
    type Target = ClientWrapper;
    fn deref(&self) -> &ClientWrapper {
        self.client
            .as_deref()
            .unwrap_or_else(|| unreachable!("only taken in drop"))
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if self.dead.load(Ordering::Relaxed)
            && let Some(client) = self.client.take()
        {
            drop(Object::take(client));
        }
    }
}

/// Whether the session behind `e` is gone: the socket closed, an I/O
/// failure, or a FATAL/PANIC from the server (which ends the session).
fn session_lost(e: &tokio_postgres::Error) -> bool {
    let io = std::error::Error::source(e).is_some_and(|source| source.is::<std::io::Error>());
    let fatal = e
        .as_db_error()
        .is_some_and(|db| matches!(db.severity(), "FATAL" | "PANIC"));
    e.is_closed() || io || fatal
}
