//! The store a harness run makes for itself and removes when it ends: a
//! fresh PostgreSQL schema (dropped), a new SQLite file (removed with its
//! `-wal` and `-shm`), or memory.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use loomfence_postgres::{AcquireStrategy, PostgresEventStore, PostgresOptions, Schema};
use loomfence_store::{EventStore, InboxStore, MemoryEventStore, MemoryTimerStore, TimerStore};

use super::StoreArg;
use super::sqlite_file;
use crate::error::CliError;

/// How to open a store for one run. Only PostgreSQL uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpenOptions {
    /// First part of the run's schema name (`<prefix>_<pid>_<n>`), naming
    /// the command that made it, in case an interrupted run leaves one.
    pub(crate) prefix: &'static str,
    /// Connections in the pool.
    pub(crate) pool_size: usize,
    /// How `acquire_fence_if` reaches the server.
    pub(crate) acquire: AcquireStrategy,
}

/// A store opened for one run, with what it takes to clean up after it.
pub(crate) struct OpenedStore {
    /// The store, as every command uses it.
    pub(crate) store: Arc<dyn EventStore>,
    /// The same backend's timer store (a `MemoryTimerStore` beside the
    /// memory store; the `timers` table of the SQLite file or of the
    /// PostgreSQL schema, which `connect` migrates), for the race's
    /// re-drive rows.
    pub(crate) timers: Arc<dyn TimerStore>,
    /// The same timer store as an inbox (its messages are written with
    /// their intent rows in one step, so the inbox is always the timer
    /// store), for the race of messages.
    pub(crate) inbox: Arc<dyn InboxStore>,
    /// What closing it does.
    cleanup: Cleanup,
}

/// What is left to do when a run's store is closed.
enum Cleanup {
    /// Nothing: it lives in memory.
    Nothing,
    /// Drop this PostgreSQL store's schema.
    DropSchema(Arc<PostgresEventStore>),
    /// Remove this SQLite file and its companions.
    RemoveFile(PathBuf),
}

/// Schemas opened by this process so far: the `<n>` of `<prefix>_<pid>_<n>`.
static SCHEMAS_OPENED: AtomicU32 = AtomicU32::new(0);

impl StoreArg {
    /// Opens a fresh, empty store. A trait object, so that the code using it
    /// is the same for every backend.
    pub(crate) async fn open(&self, options: OpenOptions) -> Result<OpenedStore, CliError> {
        match self {
            StoreArg::Memory => {
                let timers = Arc::new(MemoryTimerStore::new());
                Ok(OpenedStore {
                    store: Arc::new(MemoryEventStore::new()),
                    timers: Arc::clone(&timers) as Arc<dyn TimerStore>,
                    inbox: timers,
                    cleanup: Cleanup::Nothing,
                })
            }
            StoreArg::Sqlite { target, durability } => {
                let (store, file) = target.open(*durability).await?;
                let timers = Arc::new(store.timers());
                Ok(OpenedStore {
                    timers: Arc::clone(&timers) as Arc<dyn TimerStore>,
                    inbox: timers,
                    store: Arc::new(store),
                    cleanup: file.map_or(Cleanup::Nothing, Cleanup::RemoveFile),
                })
            }
            StoreArg::Postgres { url, .. } => {
                let n = SCHEMAS_OPENED.fetch_add(1, Ordering::Relaxed);
                let schema = Schema::new(format!("{}_{}_{n}", options.prefix, std::process::id()))
                    .map_err(CliError::postgres("schema name"))?;
                let store = PostgresEventStore::connect(
                    url,
                    PostgresOptions {
                        schema,
                        pool_size: options.pool_size.max(1),
                        acquire: options.acquire,
                        ..PostgresOptions::default()
                    },
                )
                .await
                .map_err(CliError::postgres("PostgreSQL"))?;
                let store = Arc::new(store);
                let timers = Arc::new(store.timers());
                Ok(OpenedStore {
                    store: Arc::clone(&store) as Arc<dyn EventStore>,
                    timers: Arc::clone(&timers) as Arc<dyn TimerStore>,
                    inbox: timers,
                    cleanup: Cleanup::DropSchema(store),
                })
            }
        }
    }
}

impl OpenedStore {
    /// The PostgreSQL store underneath, for what only a server can do
    /// (the fleet's `pg_terminate_backend`); `None` on the other backends.
    pub(crate) fn postgres(&self) -> Option<Arc<PostgresEventStore>> {
        match &self.cleanup {
            Cleanup::DropSchema(store) => Some(Arc::clone(store)),
            _ => None,
        }
    }

    /// The run's PostgreSQL schema, for the processes that share the store
    /// (`loomfence worker --schema`); `None` on the other backends.
    pub(crate) fn schema(&self) -> Option<String> {
        self.postgres().map(|store| store.schema().to_string())
    }

    /// Ends the run: drops the PostgreSQL schema with everything in it, or
    /// removes the SQLite file; nothing to do in memory.
    pub(crate) async fn close(self) -> Result<(), CliError> {
        let OpenedStore {
            store,
            timers,
            inbox,
            cleanup,
        } = self;
        // The last handles, once every run on the store has ended: dropping
        // them closes the SQLite connections (checkpointing the WAL) before
        // the files go.
        drop(inbox);
        drop(timers);
        drop(store);
        let postgres = match cleanup {
            Cleanup::Nothing => return Ok(()),
            Cleanup::RemoveFile(path) => return sqlite_file::remove(&path),
            Cleanup::DropSchema(postgres) => postgres,
        };
        let schema = postgres.schema().to_string();
        let dropped = async {
            let client = postgres.pool().get().await.map_err(|e| e.to_string())?;
            // The name is a validated plain identifier (`Schema`).
            client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .await
                .map_err(|e| e.to_string())
        };
        dropped
            .await
            .map_err(|reason| CliError::DropSchema { schema, reason })
    }
}

/// Closes every store, even when one fails, and reports the first failure.
pub(crate) async fn close_all(stores: Vec<OpenedStore>) -> Result<(), CliError> {
    let mut first = Ok(());
    for store in stores {
        let closed = store.close().await;
        if first.is_ok() {
            first = closed;
        }
    }
    first
}
