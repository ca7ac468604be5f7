//! A pooled connection that is not handed back to the pool once its session
//! is known to be dead.
//!
//! The pool's fast recycling only checks whether the driver has noticed the
//! socket closed, which can happen after the next caller already has the
//! connection: a session killed on the server (`pg_terminate_backend`, a
//! failover) would then fail one more, innocent, call. Every error that
//! means the session is gone marks the connection, and a marked connection
//! is detached from the pool when it is dropped.

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

    /// Runs a cached statement that returns exactly one row.
    pub(crate) async fn row(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, StoreError> {
        let statement = self.prepare_cached(sql).await.map_err(|e| self.store(e))?;
        self.deref()
            .query_one(&statement, params)
            .await
            .map_err(|e| self.store(e))
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
