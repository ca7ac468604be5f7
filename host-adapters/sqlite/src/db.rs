//! The connections: one writer and a few readers, each used on tokio's
//! blocking pool so a slow disk never stalls the async executor.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use loomfence_store::{BackendError, StoreError};
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::error::OpenError;
use crate::options::SqliteOptions;
use crate::schema::{Migrated, SCHEMA_VERSION, migrate};

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
    /// anyway, and one connection keeps its statement cache warm.
    writer: Shared,
    /// Round-robin over `readers`.
    next_reader: AtomicUsize,
}

impl Db {
    /// Opens (creating if needed) and migrates the database at `path`.
    ///
    /// Nothing is written to an existing file until it has been read as a
    /// valid SQLite database of a version this build may touch, so a
    /// foreign, damaged or newer file is refused unchanged.
    pub(crate) fn open(path: &Path, options: &SqliteOptions) -> Result<Self, OpenError> {
        let fail = |e| OpenError::from_sqlite(path.to_path_buf(), e);
        let memory = path == Path::new(":memory:");
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let mut writer = Connection::open_with_flags(path, flags).map_err(fail)?;
        writer.busy_timeout(options.busy_timeout).map_err(fail)?;
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
        if let Migrated::Newer(found) = migrate(&mut writer).map_err(fail)? {
            return Err(newer(path, found));
        }
        let readers = if memory {
            Vec::new()
        } else {
            (0..options.readers)
                .map(|_| {
                    let reader =
                        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
                            .map_err(fail)?;
                    reader.busy_timeout(options.busy_timeout).map_err(fail)?;
                    Ok(Arc::new(Mutex::new(reader)))
                })
                .collect::<Result<_, OpenError>>()?
        };
        Ok(Self {
            readers,
            writer: Arc::new(Mutex::new(writer)),
            next_reader: AtomicUsize::new(0),
        })
    }

    /// Runs `work` with the writer, on the blocking pool. `work` locks it
    /// (with [`lock`]) when it needs it, so CPU work such as encoding runs
    /// first, off the executor and without holding the writer.
    pub(crate) async fn write<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Mutex<Connection>) -> Result<T, StoreError> + Send + 'static,
    {
        run(self.writer.clone(), work).await
    }

    /// Runs `work` with a reader (the writer for `:memory:`), on the
    /// blocking pool; `work` locks it as [`Db::write`]'s does.
    pub(crate) async fn read<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Mutex<Connection>) -> Result<T, StoreError> + Send + 'static,
    {
        let connection = if self.readers.is_empty() {
            self.writer.clone()
        } else {
            let index = self.next_reader.fetch_add(1, Ordering::Relaxed) % self.readers.len();
            self.readers[index].clone()
        };
        run(connection, work).await
    }
}

/// Locks a connection. A panic inside a holder drops its open transaction,
/// which rolls back, so a poisoned lock still guards a consistent
/// connection.
pub(crate) fn lock(connection: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
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
fn newer(path: &Path, found: i64) -> OpenError {
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
    F: FnOnce(&Mutex<Connection>) -> Result<T, StoreError> + Send + 'static,
{
    tokio::task::spawn_blocking(move || work(&connection))
        .await
        .map_err(|join| {
            StoreError::Backend(BackendError::permanent(format!(
                "the SQLite task failed: {join}"
            )))
        })?
}
