//! Turning driver and pool failures into typed, classified errors.

use deadpool_postgres::PoolError;
use loomfence_store::{BackendError, StoreError};
use tokio_postgres::error::SqlState;

use crate::config::ConfigError;

/// Why `migrate` failed. A failed migration changes nothing (it runs in one
/// transaction), so a boot that fails here can simply be retried.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// Another process held the migration lock for longer than the
    /// configured timeout. Retryable: that process is migrating right now.
    #[error(
        "timed out after {waited_ms} ms waiting for another process's migration; retry the boot"
    )]
    LockTimeout {
        /// How long it waited.
        waited_ms: u128,
    },
    /// A table the migration had to change (the `timers` table of an older
    /// version, which lacks columns, or `events`, which lacks the listing's
    /// index of terminal events) stayed locked by another session for
    /// longer than the configured timeout: some open transaction used the
    /// table. Retryable: nothing was changed (a concurrent index build cut
    /// short may leave an invalid index, which the planner never reads and
    /// the next boot replaces), and a boot after that transaction ends
    /// succeeds. A boot that finds nothing to change never waits for such a
    /// lock.
    #[error(
        "timed out after {waited_ms} ms waiting for a lock on {table} to {action} \
         (another session's open transaction holds it); nothing was changed, retry the boot"
    )]
    TableLocked {
        /// The table, schema-qualified.
        table: String,
        /// What the migration was about to do to it.
        action: String,
        /// How long it waited.
        waited_ms: u128,
    },
    /// The schema was written by a newer version of loomfence, which this
    /// version must not touch.
    #[error("schema version {found} is newer than this build's {supported}; upgrade loomfence")]
    NewerSchema {
        /// The version found in the database.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The database failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

impl MigrateError {
    /// Whether booting again may succeed.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            MigrateError::LockTimeout { .. } | MigrateError::TableLocked { .. } => true,
            MigrateError::NewerSchema { .. } => false,
            MigrateError::Backend(backend) => backend.retryable,
        }
    }
}

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The connection pool could not be built.
    #[error("could not build the connection pool: {0}")]
    Pool(String),
    /// The migration on connect failed.
    #[error(transparent)]
    Migrate(#[from] MigrateError),
    /// The first connection failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Classifies a driver error: connection losses, serialisation failures,
/// deadlocks, lock timeouts and a server shutting down are worth retrying;
/// everything else is not.
pub(crate) fn backend(error: tokio_postgres::Error) -> BackendError {
    let io = std::error::Error::source(&error).is_some_and(|source| source.is::<std::io::Error>());
    let retryable = error.is_closed() || io || error.code().is_some_and(is_transient);
    if retryable {
        BackendError::retryable(error)
    } else {
        BackendError::permanent(error)
    }
}

/// SQLSTATEs after which the same call may succeed.
fn is_transient(code: &SqlState) -> bool {
    code.code().starts_with("08")
        || [
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::LOCK_NOT_AVAILABLE,
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::QUERY_CANCELED,
        ]
        .contains(code)
}

/// A pool failure: timeouts and failed connects are retryable.
pub(crate) fn pool(error: PoolError) -> BackendError {
    match error {
        PoolError::Backend(error) => backend(error),
        PoolError::Timeout(_) => BackendError::retryable(error),
        other => BackendError::retryable(other.to_string()),
    }
}

/// A row that cannot be decoded into an envelope: the table holds data this
/// store did not write. Permanent.
pub(crate) fn corrupt(detail: impl Into<String>) -> StoreError {
    StoreError::Backend(BackendError::permanent(format!(
        "corrupt row: {}",
        detail.into()
    )))
}

/// A timer row that does not read back as one (a re-drive flag that is not
/// `{"attempt": n}`, a time or claim count out of range, an invalid id):
/// the table holds data this store did not write. Permanent.
pub(crate) fn corrupt_timer(detail: impl Into<String>) -> StoreError {
    StoreError::Backend(BackendError::permanent(format!(
        "corrupt timer row: {}",
        detail.into()
    )))
}

/// Shorthand for store operations.
pub(crate) fn store(error: tokio_postgres::Error) -> StoreError {
    StoreError::Backend(backend(error))
}

/// Whether `error` ended a request with no answer from the server: the
/// connection closed or failed (an I/O error) and no SQLSTATE came back.
/// For a write that was already handed to the connection, the server may
/// have committed it before the answer was lost.
pub(crate) fn answer_lost(error: &tokio_postgres::Error) -> bool {
    let io = std::error::Error::source(error).is_some_and(|source| source.is::<std::io::Error>());
    error.as_db_error().is_none() && (error.is_closed() || io)
}

/// Whether `error` is the primary-key collision of two appenders that
/// computed the same head: the loser retries.
pub(crate) fn is_sequence_collision(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&SqlState::UNIQUE_VIOLATION)
}
