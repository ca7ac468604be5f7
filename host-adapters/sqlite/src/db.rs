//! The connections: one writer, on a thread of its own (see
//! [`crate::writer`]), and a few readers, used on tokio's blocking pool, so
//! a slow disk never stalls the async executor.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use loomfence_store::{BackendError, StoreError};
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::error::{OpenError, ReadOnlyStore};
use crate::options::SqliteOptions;
use crate::schema::{Migrated, SCHEMA_VERSION, migrate};
use crate::writer::Writer;

/// A connection shared between blocking tasks, one at a time.
type Shared = Arc<Mutex<Connection>>;

/// The database's connections.
#[derive(Debug)]
pub(crate) struct Db {
    /// Read-only connections; empty for `:memory:`, where reads go through
    /// the writer (each `:memory:` connection is its own database). They are
    /// declared before the writer so they close first: the last connection
    /// to close checkpoints the WAL into the file, which only a writer can.
    readers: Vec<Shared>,
    /// The only connection that writes: SQLite has one writer at a time
    /// anyway, one connection keeps its statement cache warm, and one queue
    /// lets concurrent writes share a commit. `None` for a database opened
    /// read-only (see [`crate::read_only`]): every write is then refused
    /// with [`ReadOnlyStore`] before it reaches SQLite.
    writer: Option<Writer>,
    /// The file, when opened read-only: what a refused write names.
    read_only: Option<PathBuf>,
    /// Round-robin over `readers`.
    next_reader: AtomicUsize,
    /// Woken after every append this process committed, for the change
    /// feed's waits. Appends by other processes writing the same file do
    /// not wake it: their followers' read interval covers them.
    appended: tokio::sync::Notify,
}

impl Db {
    /// [`Db::open`] on tokio's blocking pool, as both stores open their
    /// database.
    pub(crate) async fn open_off_thread(
        path: PathBuf,
        options: SqliteOptions,
    ) -> Result<Self, OpenError> {
        Self::off_thread(path, options, Self::open).await
    }

    /// [`crate::read_only::open`] on tokio's blocking pool.
    pub(crate) async fn open_read_only_off_thread(
        path: PathBuf,
        options: SqliteOptions,
    ) -> Result<Self, OpenError> {
        Self::off_thread(path, options, crate::read_only::open).await
    }

    /// Runs `open` on tokio's blocking pool.
    async fn off_thread(
        path: PathBuf,
        options: SqliteOptions,
        open: fn(&Path, &SqliteOptions) -> Result<Self, OpenError>,
    ) -> Result<Self, OpenError> {
        let opened = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || open(&path, &options)).await
        };
        match opened {
            Ok(db) => db,
            Err(join) => Err(OpenError::Interrupted {
                path,
                reason: join.to_string(),
            }),
        }
    }

    /// Opens (creating if needed) and migrates the database at `path`.
    ///
    /// Nothing is written to an existing file until it has been read as a
    /// valid SQLite database of a version this build may touch, so a
    /// foreign, damaged or newer file is refused unchanged.
    pub(crate) fn open(path: &Path, options: &SqliteOptions) -> Result<Self, OpenError> {
        let fail = |e| OpenError::from_sqlite(path.to_path_buf(), e);
        let memory = path == Path::new(":memory:");
        // NO_MUTEX: each connection is used by one thread at a time (Rust
        // enforces it), so SQLite's own per-call locking is pure cost.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut writer = Connection::open_with_flags(path, flags).map_err(fail)?;
        writer.busy_timeout(options.busy_timeout).map_err(fail)?;
        stable_plans(&writer).map_err(fail)?;
        // Reads the header and the schema page (a foreign or damaged file
        // fails here, before anything is written), in one statement so both
        // answers come from one snapshot: another process may be creating
        // the schema right now.
        let (found, objects): (i64, i64) = writer
            .query_row(
                "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(fail)?;
        if found > SCHEMA_VERSION {
            return Err(newer(path, found));
        }
        if found == 0 && objects > 0 {
            // Our tables and our version are written in one transaction, so
            // tables without a version are another application's.
            return Err(OpenError::Foreign {
                path: path.to_path_buf(),
            });
        }
        if !memory {
            let mode: String = writer
                .query_row("PRAGMA journal_mode", [], |row| row.get(0))
                .map_err(fail)?;
            if !mode.eq_ignore_ascii_case("wal") {
                set_wal(&writer, options.busy_timeout).map_err(fail)?;
            }
        }
        writer
            .pragma_update(None, "synchronous", options.durability.pragma())
            .map_err(fail)?;
        match migrate(&mut writer).map_err(fail)? {
            Migrated::Current => {}
            Migrated::Newer(found) => return Err(newer(path, found)),
            Migrated::ForeignTimers(missing) => {
                return Err(OpenError::ForeignTimers {
                    path: path.to_path_buf(),
                    missing,
                });
            }
            Migrated::ForeignInbox(missing) => {
                return Err(OpenError::ForeignInbox {
                    path: path.to_path_buf(),
                    missing,
                });
            }
        }
        let readers = if memory {
            Vec::new()
        } else {
            (0..options.readers)
                .map(|_| {
                    let reader = Connection::open_with_flags(
                        path,
                        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                    )
                    .map_err(fail)?;
                    reader.busy_timeout(options.busy_timeout).map_err(fail)?;
                    stable_plans(&reader).map_err(fail)?;
                    Ok(Arc::new(Mutex::new(reader)))
                })
                .collect::<Result<_, OpenError>>()?
        };
        let writer = Writer::spawn(writer).map_err(|e| OpenError::Interrupted {
            path: path.to_path_buf(),
            reason: format!("could not start the writer thread: {e}"),
        })?;
        Ok(Self {
            readers,
            writer: Some(writer),
            read_only: None,
            next_reader: AtomicUsize::new(0),
            appended: tokio::sync::Notify::new(),
        })
    }

    /// Queues a write for the writer thread and waits for its committed
    /// answer. `prepare` (CPU work such as encoding) runs on that thread
    /// before the group's transaction, `apply` inside it.
    pub(crate) async fn write<P, T>(
        &self,
        prepare: impl FnOnce() -> Result<P, StoreError> + Send + 'static,
        apply: impl FnOnce(&Connection, P) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError>
    where
        P: Send + 'static,
        T: Send + 'static,
    {
        match &self.writer {
            Some(writer) => writer.run(prepare, apply).await,
            None => Err(StoreError::Backend(BackendError::permanent(
                ReadOnlyStore {
                    path: self.read_only.clone().unwrap_or_default(),
                },
            ))),
        }
    }

    /// A database opened read-only: `readers` are its only connections,
    /// every one opened with `SQLITE_OPEN_READ_ONLY`, and there is no
    /// writer thread.
    pub(crate) fn read_only(path: &Path, readers: Vec<Connection>) -> Self {
        Self {
            readers: readers
                .into_iter()
                .map(|reader| Arc::new(Mutex::new(reader)))
                .collect(),
            writer: None,
            read_only: Some(path.to_path_buf()),
            next_reader: AtomicUsize::new(0),
            appended: tokio::sync::Notify::new(),
        }
    }

    /// What an append signals once committed and a feed wait awaits.
    pub(crate) fn appended(&self) -> &tokio::sync::Notify {
        &self.appended
    }

    /// The writer thread's handle, for tests that queue jobs beside the
    /// store's own.
    #[cfg(test)]
    pub(crate) fn writer(&self) -> &Writer {
        self.writer.as_ref().expect("a database opened read-write")
    }

    /// Runs `work` with a reader, on the blocking pool. For `:memory:`,
    /// whose only connection is the writer, it queues on the writer thread
    /// instead and is answered with the group it ran in.
    pub(crate) async fn read<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        if self.readers.is_empty() {
            return match &self.writer {
                Some(writer) => writer.read(work).await,
                // A read-only database always has a reader.
                None => Err(StoreError::Backend(BackendError::permanent(
                    "the read-only database has no connection",
                ))),
            };
        }
        let index = self.next_reader.fetch_add(1, Ordering::Relaxed) % self.readers.len();
        run(self.readers[index].clone(), work).await
    }
}

/// Locks a connection. A panic inside a holder drops its open transaction,
/// which rolls back, so a poisoned lock still guards a consistent
/// connection.
fn lock(connection: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    connection.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Switches `conn` to WAL. While another connection (another process
/// opening the same new file) holds a lock, SQLite answers this switch with
/// `SQLITE_BUSY` at once, without calling the busy handler: the switch
/// upgrades a read transaction, which SQLite never waits for. So this waits
/// as the busy handler would, up to `patience`.
fn set_wal(conn: &Connection, patience: Duration) -> rusqlite::Result<()> {
    let deadline = Instant::now() + patience;
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |row| {
            row.get::<_, String>(0)
        }) {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other.map(drop),
        }
    }
}

/// The refusal of a newer file.
pub(crate) fn newer(path: &Path, found: i64) -> OpenError {
    OpenError::NewerSchema {
        path: PathBuf::from(path),
        found,
        supported: SCHEMA_VERSION,
    }
}

/// Runs `work` with `connection` on a blocking thread.
async fn run<T, F>(connection: Shared, work: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
{
    tokio::task::spawn_blocking(move || work(&lock(&connection)))
        .await
        .map_err(|join| {
            StoreError::Backend(BackendError::permanent(format!(
                "the SQLite task failed: {join}"
            )))
        })?
}

/// Plans that do not depend on the values bound (SQLite's query planner
/// stability guarantee, `SQLITE_DBCONFIG_ENABLE_QPSG`), so a cached
/// statement is compiled once.
///
/// Without it, a partial index on `events` (the feed's, `WHERE feed IS NOT
/// NULL`) makes the planner look at the value bound to `execution_id = ?1`
/// to decide whether the index could serve, which marks the statement to be
/// compiled again whenever that value changes: every append's head read
/// was parsed and planned anew (measured: two fifths of the writer
/// thread's instructions). Every statement of this crate names what its
/// partial indexes need in its own text (`feed > ?1` implies `feed IS NOT
/// NULL`), so none loses an index by it.
pub(crate) fn stable_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;

    use super::*;
    use crate::{error, ops};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cached_statement_is_compiled_once_whatever_is_bound() {
        let path =
            std::env::temp_dir().join(format!("loomfence-sqlite-plans.{}.db", std::process::id()));
        let db = Db::open(&path, &SqliteOptions::default()).unwrap();
        let recompiled = db
            .write(
                || Ok(()),
                |conn, ()| {
                    for i in 0..10 {
                        ops::head(conn, &format!("execution-{i}"))?;
                    }
                    let statement = conn.prepare_cached(ops::HEAD).map_err(error::store)?;
                    Ok(statement.get_status(StatementStatus::RePrepare))
                },
            )
            .await
            .unwrap();
        drop(db);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        assert_eq!(recompiled, 0, "the head read is planned once, not per id");
    }
}
