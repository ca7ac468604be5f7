//! The store an operator keeps: opened as it is, never created, dropped or
//! removed (see [`StoreArg::open_existing`]).

use std::fmt;
use std::sync::Arc;

use loomfence_postgres::{PostgresEventStore, PostgresOptions, Schema};
use loomfence_store::{EventStore, InboxStore, MemoryEventStore, MemoryTimerStore, TimerStore};

use super::StoreArg;
use crate::error::CliError;

/// `--store` and `--schema` of a command on a kept store, checked together
/// before anything runs: the store must exist (see [`StoreArg::existing`]),
/// and a schema is only for PostgreSQL.
#[derive(Clone, Debug)]
pub(crate) struct KeptStore {
    /// The store.
    pub(crate) store: StoreArg,
    /// `--schema`; `None` is the adapter's default.
    pub(crate) schema: Option<Schema>,
}

impl KeptStore {
    /// Reads both options.
    pub(crate) fn parse(store: &str, schema: Option<String>) -> Result<Self, CliError> {
        let store = StoreArg::existing(store)?;
        let schema = store.schema_option(schema)?;
        Ok(Self { store, schema })
    }

    /// The store as output names it: with its schema on PostgreSQL (the
    /// default one when none was given), never with a password.
    pub(crate) fn shown(&self) -> String {
        match (&self.store, &self.schema) {
            (StoreArg::Postgres { .. }, Some(schema)) => {
                format!("{} (schema {schema})", self.store)
            }
            (StoreArg::Postgres { .. }, None) => {
                format!("{} (schema {})", self.store, Schema::default())
            }
            _ => self.store.to_string(),
        }
    }

    /// Opens it as it is, over `pool_size` PostgreSQL connections, for a
    /// command that writes (migrated as the adapter's open does).
    pub(crate) async fn open(&self, pool_size: usize) -> Result<ExistingStore, CliError> {
        self.store
            .open_existing(self.schema.as_ref(), pool_size)
            .await
    }

    /// Opens it read-only, never migrated, for a command that only reads
    /// (see [`StoreArg::open_existing_read_only`]).
    pub(crate) async fn open_read_only(&self, pool_size: usize) -> Result<ExistingStore, CliError> {
        self.store
            .open_existing_read_only(self.schema.as_ref(), pool_size)
            .await
    }
}

/// How an existing store is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Migrated as its adapter's open does; written.
    ReadWrite,
    /// Read only, never migrated (see [`StoreArg::open_existing_read_only`]).
    ReadOnly,
}

/// An existing store, opened as it is (see [`StoreArg::open_existing`]).
pub(crate) struct ExistingStore {
    /// Its logs.
    pub(crate) events: Arc<dyn EventStore>,
    /// Its timer rows (the same file's or schema's `timers` table; a fresh
    /// `MemoryTimerStore` beside a memory store).
    pub(crate) timers: Arc<dyn TimerStore>,
    /// The same timer store as an inbox (a message and its intent row are
    /// written in one step, so the inbox is the timer store).
    pub(crate) inbox: Arc<dyn InboxStore>,
}

impl StoreArg {
    /// Reads `--store` for a command that works on an existing store
    /// (`loomfence retention`): `sqlite:PATH` must name an existing file
    /// (checked here, so a missing one exits 2 before anything runs);
    /// `postgres:URL` and the memory stores are checked when opened.
    pub(crate) fn existing(store: &str) -> Result<Self, CliError> {
        let parsed: StoreArg = store.parse()?;
        if let StoreArg::Sqlite { target, .. } = &parsed {
            target.check_existing()?;
        }
        Ok(parsed)
    }

    /// Opens the existing store this names, as it is, for a command that
    /// must leave it in place: nothing is created (a missing SQLite file or
    /// PostgreSQL schema is an error) and nothing is dropped or removed
    /// when the handle goes. The store is migrated as its adapter's own
    /// open does (`connect` on PostgreSQL, `open` on SQLite), so an older
    /// loomfence schema gets the indexes the listing needs.
    ///
    /// On PostgreSQL the tables are looked for in `schema` (the adapter's
    /// default schema when `None`), over `pool_size` connections. `memory`
    /// and `sqlite::memory:` open a new, empty store: all a store in memory
    /// can be from outside the process.
    pub(crate) async fn open_existing(
        &self,
        schema: Option<&Schema>,
        pool_size: usize,
    ) -> Result<ExistingStore, CliError> {
        self.open_as(schema, pool_size, Access::ReadWrite).await
    }

    /// [`open_existing`](Self::open_existing) for a command that must
    /// change nothing (retention's dry run), on a store it may not be
    /// allowed to write: nothing is migrated. SQLite opens the file with
    /// `SQLITE_OPEN_READ_ONLY` ([`super::sqlite_file::SqliteTarget::open_existing`]); PostgreSQL
    /// connects with read-only sessions and checks the schema version
    /// (`PostgresEventStore::connect_read_only`). A store that would need a
    /// migration to be read is refused ([`CliError::NeedsMigration`], exit
    /// 2), naming `loomfence init` as the way to migrate it. Every write
    /// through the store fails. `memory` and `sqlite::memory:` open a new,
    /// empty store, as above: it is this process's own.
    pub(crate) async fn open_existing_read_only(
        &self,
        schema: Option<&Schema>,
        pool_size: usize,
    ) -> Result<ExistingStore, CliError> {
        self.open_as(schema, pool_size, Access::ReadOnly).await
    }

    /// Both of the above.
    async fn open_as(
        &self,
        schema: Option<&Schema>,
        pool_size: usize,
        access: Access,
    ) -> Result<ExistingStore, CliError> {
        match self {
            StoreArg::Memory => {
                let timers = Arc::new(MemoryTimerStore::new());
                Ok(ExistingStore {
                    events: Arc::new(MemoryEventStore::new()),
                    timers: Arc::clone(&timers) as Arc<dyn TimerStore>,
                    inbox: timers,
                })
            }
            StoreArg::Sqlite { target, durability } => {
                let store = target.open_existing(*durability, access).await?;
                let timers = Arc::new(store.timers());
                Ok(ExistingStore {
                    timers: Arc::clone(&timers) as Arc<dyn TimerStore>,
                    inbox: timers,
                    events: Arc::new(store),
                })
            }
            StoreArg::Postgres { url, .. } => {
                let schema = schema.cloned().unwrap_or_default();
                let options = PostgresOptions {
                    schema: schema.clone(),
                    pool_size: pool_size.max(1),
                    // Looked for first: migrating would create it.
                    migrate_on_connect: false,
                    ..PostgresOptions::default()
                };
                let store = match access {
                    Access::ReadWrite => PostgresEventStore::connect(url, options).await,
                    Access::ReadOnly => PostgresEventStore::connect_read_only(url, options).await,
                }
                .map_err(|e| match e {
                    loomfence_postgres::OpenError::NeedsMigration { found: None, .. } => {
                        CliError::NoStore {
                            schema: schema.to_string(),
                        }
                    }
                    loomfence_postgres::OpenError::NeedsMigration { .. } => {
                        CliError::NeedsMigration {
                            store: format!("{self} --schema {schema}"),
                            reason: e.to_string(),
                        }
                    }
                    other => CliError::postgres("PostgreSQL")(other),
                })?;
                if !holds_a_store(&store).await? {
                    return Err(CliError::NoStore {
                        schema: schema.to_string(),
                    });
                }
                if access == Access::ReadWrite {
                    store
                        .migrate()
                        .await
                        .map_err(CliError::postgres("PostgreSQL"))?;
                }
                let store = Arc::new(store);
                let timers = Arc::new(store.timers());
                Ok(ExistingStore {
                    timers: Arc::clone(&timers) as Arc<dyn TimerStore>,
                    inbox: timers,
                    events: store,
                })
            }
        }
    }
}

/// Whether the store's schema has an `events` table: a loomfence store
/// (of any version; `migrate` upgrades it) lives there.
async fn holds_a_store(store: &PostgresEventStore) -> Result<bool, CliError> {
    let failed = |e: &dyn fmt::Display| {
        CliError::postgres("PostgreSQL")(loomfence_store::BackendError::permanent(format!(
            "looking for the store's tables: {e}"
        )))
    };
    let client = store.pool().get().await.map_err(|e| failed(&e))?;
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = $1 AND tablename = 'events')",
            &[&store.schema().as_str()],
        )
        .await
        .map_err(|e| failed(&e))?;
    Ok(row.get(0))
}
