//! The connections: one writer and a few readers, each used on tokio's
//! blocking pool so a slow disk never stalls the async executor.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use loomfence_store::{BackendError, StoreError};
use rusqlite::{Connection, OpenFlags};

use crate::error::OpenError;
use crate::options::SqliteOptions;
use crate::schema::{Migrated, SCHEMA_VERSION, migrate};

/// A connection shared between blocking tasks, one at a time.
type Shared = Arc<Mutex<Connection>>;

/// The database's connections.
#[derive(Debug)]
pub(crate) struct Db {
    /// The only connection that writes: SQLite has one writer at a time
    /// anyway, and one connection keeps its statement cache warm.
    writer: Shared,
    /// Read-only connections; empty for `:memory:`, where reads go through
    /// the writer (each `:memory:` connection is its own database).
    readers: Vec<Shared>,
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
        let mut writer = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
        )
        .map_err(fail)?;
        writer.busy_timeout(options.busy_timeout).map_err(fail)?;
        // Reads the header and the schema page: a foreign or damaged file
        // fails here, before anything is written.
        let found: i64 = writer
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(fail)?;
        writer
            .query_row("SELECT count(*) FROM sqlite_master", [], |row| {
                row.get::<_, i64>(0)
            })
            .map_err(fail)?;
        if found > SCHEMA_VERSION {
            return Err(newer(path, found));
        }
        if !memory {
            let mode: String = writer
                .query_row("PRAGMA journal_mode", [], |row| row.get(0))
                .map_err(fail)?;
            if !mode.eq_ignore_ascii_case("wal") {
                writer
                    .query_row("PRAGMA journal_mode = WAL", [], |row| {
                        row.get::<_, String>(0)
                    })
                    .map_err(fail)?;
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
            writer: Arc::new(Mutex::new(writer)),
            readers,
            next_reader: AtomicUsize::new(0),
        })
    }

    /// Runs `work` on the writer, on the blocking pool.
    pub(crate) async fn write<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        run(self.writer.clone(), work).await
    }

    /// Runs `work` on a reader (the writer for `:memory:`), on the blocking
    /// pool.
    pub(crate) async fn read<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
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

/// The refusal of a newer file.
fn newer(path: &Path, found: i64) -> OpenError {
    OpenError::NewerSchema {
        path: PathBuf::from(path),
        found,
        supported: SCHEMA_VERSION,
    }
}

/// Locks `connection` on a blocking thread and runs `work` with it. A panic
/// inside `work` drops its open transaction, which rolls back, so a
/// poisoned lock still guards a consistent connection.
async fn run<T, F>(connection: Shared, work: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let mut connection = connection.lock().unwrap_or_else(PoisonError::into_inner);
        work(&mut connection)
    })
    .await
    .map_err(|join| {
        StoreError::Backend(BackendError::permanent(format!(
            "the SQLite task failed: {join}"
        )))
    })?
}
