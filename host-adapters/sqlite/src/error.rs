//! Typed errors for opening the database and classifying SQLite failures.

use std::path::PathBuf;

use loomfence_store::{BackendError, StoreError};
use rusqlite::ErrorCode;

/// Why the database could not be opened. The file is left as it was.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The file exists but is not an SQLite database (or its header is
    /// damaged). Nothing was written to it.
    #[error("{} is not an SQLite database (or its header is damaged); it was left untouched", path.display())]
    NotADatabase {
        /// The file.
        path: PathBuf,
    },
    /// The database is damaged beyond its header.
    #[error("{} is a damaged SQLite database: {source}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What SQLite reported.
        #[source]
        source: rusqlite::Error,
    },
    /// The file is an SQLite database with tables but no loomfence schema
    /// version: another application's database, which must not be adopted.
    #[error("{} is another application's SQLite database (tables, but no loomfence schema version); it was left untouched", path.display())]
    Foreign {
        /// The file.
        path: PathBuf,
    },
    /// The database holds a `timers` table without a column every timer
    /// table has (`execution_id`, `wake_at`): another application's table
    /// of that name, which must not be altered. Nothing was written.
    #[error("{} has a timers table without the column {missing}: not a timer table loomfence can use; the file was left untouched", path.display())]
    ForeignTimers {
        /// The file.
        path: PathBuf,
        /// The key column it lacks.
        missing: &'static str,
    },
    /// The database holds an `inbox` table without a column loomfence's
    /// inbox has: another application's table of that name, which must not
    /// be altered. Nothing was written.
    #[error("{} has an inbox table without the column {missing}: not an inbox loomfence can use; the file was left untouched", path.display())]
    ForeignInbox {
        /// The file.
        path: PathBuf,
        /// The column it lacks.
        missing: &'static str,
    },
    /// The database was written by a newer version of loomfence, whose
    /// schema this version must not touch.
    #[error("{} has schema version {found}, newer than this build's {supported}; upgrade loomfence", path.display())]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The version found (`PRAGMA user_version`).
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The database was opened read-only and its schema is not this
    /// build's current one: reading it would need a migration, which a
    /// read-only open never makes. Open it read-write once (any loomfence
    /// writer migrates on open), then read-only. Nothing was written.
    #[error("{} would need a migration to be read ({needs}); a read-only open never migrates, and the file was left untouched: open it read-write once (a loomfence writer migrates on open) first", path.display())]
    NeedsMigration {
        /// The file.
        path: PathBuf,
        /// The schema version found (`PRAGMA user_version`): 0 for a
        /// database with no loomfence schema at all (an empty one).
        found: i64,
        /// What is missing: an older schema version, or an object this
        /// build adds on open.
        needs: String,
    },
    /// Another process held the database longer than the busy timeout.
    /// Retryable.
    #[error("{} stayed locked by another process past the busy timeout; retry", path.display())]
    Busy {
        /// The file.
        path: PathBuf,
    },
    /// The blocking task that opened the database died (it panicked, or the
    /// runtime is shutting down).
    #[error("opening {} was interrupted: {reason}", path.display())]
    Interrupted {
        /// The file.
        path: PathBuf,
        /// What stopped it.
        reason: String,
    },
    /// Any other failure (permissions, disk, a missing directory).
    #[error("could not open {}: {source}", path.display())]
    Other {
        /// The file.
        path: PathBuf,
        /// What SQLite reported.
        #[source]
        source: rusqlite::Error,
    },
}

/// A write through a store opened read-only
/// ([`SqliteEventStore::open_read_only`](crate::SqliteEventStore::open_read_only)):
/// refused before it reaches SQLite, so nothing was written. It comes
/// wrapped in a permanent [`BackendError`]; find it with
/// `downcast_ref::<ReadOnlyStore>()` on the error's source.
#[derive(Debug, thiserror::Error)]
#[error("{} was opened read-only; this store writes nothing", path.display())]
pub struct ReadOnlyStore {
    /// The file.
    pub path: PathBuf,
}

impl OpenError {
    /// Classifies a failure while opening `path`.
    pub(crate) fn from_sqlite(path: PathBuf, source: rusqlite::Error) -> Self {
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => OpenError::NotADatabase { path },
            Some(ErrorCode::DatabaseCorrupt) => OpenError::Corrupt { path, source },
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => OpenError::Busy { path },
            _ => OpenError::Other { path, source },
        }
    }

    /// Whether opening again may succeed.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(self, OpenError::Busy { .. })
    }
}

/// Classifies an SQLite failure during an operation: a busy or locked
/// database and transient I/O are worth retrying; corruption, a full disk
/// and everything else are not.
pub(crate) fn backend(error: rusqlite::Error) -> BackendError {
    match error.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked | ErrorCode::SystemIoFailure) => {
            BackendError::retryable(error)
        }
        _ => BackendError::permanent(error),
    }
}

/// [`backend`] as a store error.
pub(crate) fn store(error: rusqlite::Error) -> StoreError {
    StoreError::Backend(backend(error))
}

/// A stored row this store cannot have written.
pub(crate) fn corrupt(detail: impl Into<String>) -> StoreError {
    StoreError::Backend(BackendError::permanent(format!(
        "corrupt row: {}",
        detail.into()
    )))
}
