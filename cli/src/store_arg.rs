//! `--store`: which backend a command runs against.
//!
//! The race and the bench are meant to be run against every adapter, so the
//! flag names a backend rather than the CLI hard-wiring the memory store:
//!
//! - `memory`: the in-memory store, fresh for every run;
//! - `postgres:URL` (a `postgres://` URL or a `key=value` string): the
//!   PostgreSQL store, on a schema of its own that is created for the run
//!   and dropped (`DROP SCHEMA … CASCADE`) when the run ends, so runs never
//!   see each other's logs and leave nothing behind;
//! - `sqlite:PATH`: the SQLite store in a new file at PATH, created for the
//!   run and removed (with its `-wal` and `-shm`) when the run ends; an
//!   existing file is refused, never opened (see [`crate::sqlite_file`]);
//! - `sqlite::memory:`: the SQLite store in a private in-memory database.
//!
//! `--sqlite-durability full|normal` picks the SQLite store's
//! [`Durability`]; it is refused with any other store, where it would mean
//! nothing.
//!
//! `loomfence retention` reads the same `--store` syntax with the opposite
//! meaning: it works on a store somebody else made and keeps, so
//! [`StoreArg::existing`] and [`StoreArg::open_existing`] open it as it is
//! and never create, drop or remove anything (see their docs).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use loomfence_postgres::{AcquireStrategy, PostgresEventStore, PostgresOptions, Schema};
use loomfence_sqlite::Durability;
use loomfence_store::{EventStore, InboxStore, MemoryEventStore, MemoryTimerStore, TimerStore};

use crate::error::CliError;
use crate::sqlite_file::{self, SqliteTarget, durability_name};

/// A backend named on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StoreArg {
    /// The core's in-memory store behind a mutex: every operation is atomic,
    /// nothing persists past the process.
    Memory,
    /// A PostgreSQL server.
    Postgres {
        /// The connection string as given (it may hold a password, so it is
        /// never printed).
        url: String,
        /// What is printed instead: `user@host:port/db`, no password.
        shown: String,
    },
    /// The SQLite store, in a new file or in memory.
    Sqlite {
        /// Where.
        target: SqliteTarget,
        /// How commits reach the disk (`--sqlite-durability`).
        durability: Durability,
    },
}

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
                let store = target.open_existing(*durability).await?;
                let timers = Arc::new(store.timers());
                Ok(ExistingStore {
                    timers: Arc::clone(&timers) as Arc<dyn TimerStore>,
                    inbox: timers,
                    events: Arc::new(store),
                })
            }
            StoreArg::Postgres { url, .. } => {
                let schema = schema.cloned().unwrap_or_default();
                let store = PostgresEventStore::connect(
                    url,
                    PostgresOptions {
                        schema: schema.clone(),
                        pool_size: pool_size.max(1),
                        // Looked for first: migrating would create it.
                        migrate_on_connect: false,
                        ..PostgresOptions::default()
                    },
                )
                .await
                .map_err(CliError::postgres("PostgreSQL"))?;
                if !holds_a_store(&store).await? {
                    return Err(CliError::NoStore {
                        schema: schema.to_string(),
                    });
                }
                store
                    .migrate()
                    .await
                    .map_err(CliError::postgres("PostgreSQL"))?;
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

    /// Whether this is a PostgreSQL server (where the acquire strategy is a
    /// choice worth measuring).
    pub(crate) fn is_postgres(&self) -> bool {
        matches!(self, StoreArg::Postgres { .. })
    }

    /// Whether the store lives in this process's memory (`memory`,
    /// `sqlite::memory:`), where no other process can reach it.
    pub(crate) fn is_in_memory(&self) -> bool {
        matches!(
            self,
            StoreArg::Memory
                | StoreArg::Sqlite {
                    target: SqliteTarget::Memory,
                    ..
                }
        )
    }

    /// The SQLite store's durability; `None` for the other stores.
    pub(crate) fn durability(&self) -> Option<Durability> {
        match self {
            StoreArg::Sqlite { durability, .. } => Some(*durability),
            _ => None,
        }
    }

    /// Reads `--store` and `--sqlite-durability` together and checks them
    /// against the file system: everything about the store that can be
    /// refused before a run starts (and so exits 2) is refused here.
    pub(crate) fn from_options(
        store: &str,
        durability: Option<Durability>,
    ) -> Result<Self, CliError> {
        let mut parsed: StoreArg = store.parse()?;
        match (&mut parsed, durability) {
            (StoreArg::Sqlite { durability, .. }, Some(given)) => *durability = given,
            (_, Some(_)) => {
                return Err(CliError::OnlyForStore {
                    option: "sqlite-durability",
                    store: "sqlite:PATH",
                });
            }
            (_, None) => {}
        }
        if let StoreArg::Sqlite { target, .. } = &parsed {
            target.check()?;
        }
        Ok(parsed)
    }

    /// How the store is named in a human summary: [`Display`](fmt::Display)
    /// plus the durability of an SQLite file.
    pub(crate) fn summary(&self) -> String {
        match self {
            StoreArg::Sqlite {
                target: SqliteTarget::File(_),
                durability,
            } => format!("{self} (durability {})", durability_name(*durability)),
            _ => self.to_string(),
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

impl fmt::Display for StoreArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreArg::Memory => f.write_str("memory"),
            StoreArg::Postgres { shown, .. } => write!(f, "postgres:{shown}"),
            StoreArg::Sqlite { target, .. } => target.fmt(f),
        }
    }
}

impl FromStr for StoreArg {
    type Err = CliError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "memory" {
            return Ok(StoreArg::Memory);
        }
        if let Some(path) = s.strip_prefix("sqlite:") {
            return Ok(StoreArg::Sqlite {
                target: SqliteTarget::parse(path)?,
                durability: Durability::default(),
            });
        }
        let Some(url) = s.strip_prefix("postgres:") else {
            return Err(CliError::UnknownStore(s.to_owned()));
        };
        if url.trim().is_empty() {
            return Err(CliError::PostgresUrl("it is empty".to_owned()));
        }
        // The adapter's parser: libpq's `sslmode` (verify-ca, verify-full
        // included) and `sslrootcert`, which tokio-postgres alone refuses.
        let parsed = loomfence_postgres::ConnectUrl::parse(url).map_err(|e| match e {
            loomfence_postgres::OpenError::Url { reason } => CliError::PostgresUrl(reason),
            other => CliError::PostgresUrl(other.to_string()),
        })?;
        Ok(StoreArg::Postgres {
            url: url.to_owned(),
            shown: parsed.describe(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_memory_and_refuses_the_rest() {
        assert!(matches!("memory".parse(), Ok(StoreArg::Memory)));
        assert_eq!(StoreArg::Memory.to_string(), "memory");
        assert!(matches!(
            "sqlite:".parse::<StoreArg>(),
            Err(CliError::SqliteNoPath)
        ));
        assert!(matches!(
            "Memory".parse::<StoreArg>(),
            Err(CliError::UnknownStore(_))
        ));
        assert!(matches!(
            "".parse::<StoreArg>(),
            Err(CliError::UnknownStore(_))
        ));
    }

    #[test]
    fn parses_postgres_urls_and_never_shows_the_password() {
        let arg: StoreArg = "postgres:postgres://app:s3cret@127.0.0.1:55432/db"
            .parse()
            .unwrap();
        assert!(arg.is_postgres());
        let shown = arg.to_string();
        assert_eq!(shown, "postgres:app@127.0.0.1:55432/db");
        assert!(!format!("{arg:?}").is_empty());
        let kv: StoreArg = "postgres:host=/tmp user=me password=pw dbname=x"
            .parse()
            .unwrap();
        assert_eq!(kv.to_string(), "postgres:me@/tmp/x");
        for bad in [
            "postgres:",
            "postgres:  ",
            "postgres:postgres://h:notaport/x",
        ] {
            let err = bad.parse::<StoreArg>().unwrap_err();
            assert!(matches!(err, CliError::PostgresUrl(_)), "{bad}");
        }
    }

    #[test]
    fn parses_sqlite_with_its_durability() {
        let file = StoreArg::from_options("sqlite:loomfence-no-such.db", None).unwrap();
        assert_eq!(file.durability(), Some(Durability::Full));
        assert_eq!(file.to_string(), "sqlite:loomfence-no-such.db");
        assert_eq!(
            file.summary(),
            "sqlite:loomfence-no-such.db (durability full)"
        );
        let normal =
            StoreArg::from_options("sqlite:loomfence-no-such.db", Some(Durability::Normal))
                .unwrap();
        assert_eq!(normal.durability(), Some(Durability::Normal));
        let memory = StoreArg::from_options("sqlite::memory:", None).unwrap();
        assert_eq!(memory.summary(), "sqlite::memory:");
        assert!(!memory.is_postgres());
        assert_eq!(StoreArg::Memory.durability(), None);
    }

    #[test]
    fn existing_wants_the_file_to_be_there() {
        let here = std::env::current_exe().unwrap();
        let existing = StoreArg::existing(&format!("sqlite:{}", here.display())).unwrap();
        assert_eq!(existing.to_string(), format!("sqlite:{}", here.display()));
        assert!(matches!(
            StoreArg::existing("sqlite:/loomfence/no/such/x.db"),
            Err(CliError::SqliteMissing { .. })
        ));
        assert!(matches!(StoreArg::existing("memory"), Ok(StoreArg::Memory)));
        assert!(StoreArg::existing("postgres:postgres://u@h/db").is_ok());
        assert!(matches!(
            StoreArg::existing("nosuch"),
            Err(CliError::UnknownStore(_))
        ));
    }

    #[test]
    fn a_missing_store_is_an_option_error() {
        assert!(
            CliError::NoStore {
                schema: "app".to_owned()
            }
            .names_no_store()
        );
        assert!(
            CliError::SqliteMissing {
                path: "x".to_owned()
            }
            .names_no_store()
        );
        assert!(
            !CliError::DropSchema {
                schema: "app".to_owned(),
                reason: "gone".to_owned()
            }
            .names_no_store()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory_opens_as_a_new_empty_store() {
        let store = StoreArg::Memory.open_existing(None, 1).await.unwrap();
        assert!(
            store
                .events
                .list_executions(None, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn refuses_durability_elsewhere_and_paths_a_run_cannot_create() {
        assert!(matches!(
            StoreArg::from_options("memory", Some(Durability::Full)),
            Err(CliError::OnlyForStore {
                option: "sqlite-durability",
                store: "sqlite:PATH",
            })
        ));
        assert!(matches!(
            StoreArg::from_options("sqlite:/loomfence/no/such/dir/x.db", None),
            Err(CliError::SqliteNoDirectory { .. })
        ));
        let here = std::env::current_exe().unwrap();
        let existing = format!("sqlite:{}", here.display());
        assert!(matches!(
            StoreArg::from_options(&existing, None),
            Err(CliError::SqliteExists { .. })
        ));
    }
}
