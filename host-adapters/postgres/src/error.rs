//! Turning driver and pool failures into typed, classified errors.

use deadpool_postgres::PoolError;
use loomfence_store::{BackendError, StoreError};
use tokio_postgres::error::SqlState;

/// Why the store could not be opened, configured or migrated.
///
/// Nothing half-done is left behind: a configuration error is found before
/// anything connects, and a migration runs in one transaction, so a boot
/// that fails here can be retried as it is when [`is_retryable`] says so.
///
/// [`is_retryable`]: OpenError::is_retryable
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The schema name is not a plain lowercase SQL identifier: it is the
    /// one piece of SQL text that is not a bound parameter.
    #[error("schema {name:?} must match [a-z_][a-z0-9_]* and be at most 63 bytes")]
    Schema {
        /// The name given.
        name: String,
    },
    /// The schema name is a key word PostgreSQL reserves (`select`,
    /// `table`, `user`, `order`…), which the server refuses as an
    /// unquoted name.
    #[error("schema {name:?} is a reserved SQL key word in PostgreSQL; choose another name")]
    ReservedSchema {
        /// The name given.
        name: String,
    },
    /// The schema name starts with `pg_`, which PostgreSQL reserves for its
    /// system schemas.
    #[error("schema {name:?} starts with \"pg_\", which PostgreSQL reserves for system schemas")]
    SystemSchema {
        /// The name given.
        name: String,
    },
    /// The connection URL does not parse, so nothing was connected.
    #[error("invalid PostgreSQL URL: {reason}")]
    Url {
        /// The parser's complaint (the URL itself is not repeated: it may
        /// hold a password).
        reason: String,
    },
    /// The TLS settings cannot be put to use (no root certificate to
    /// verify with, a configuration rustls refuses). Not retryable.
    #[error("TLS to PostgreSQL: {reason}")]
    Tls {
        /// What is wrong.
        reason: String,
    },
    /// `sslrootcert` names a file that cannot be read as PEM certificates.
    #[error("sslrootcert {path}: {reason}")]
    RootCert {
        /// The file, as the URL named it.
        path: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// The first connection failed: the server is unreachable, refused the
    /// login, or failed the TLS the URL asks for (a certificate not valid
    /// for the host, an unknown authority, no TLS offered).
    #[error("could not connect to PostgreSQL at {target}: {cause}")]
    Connect {
        /// `user@host:port/db`, never the password.
        target: String,
        /// Why, in words (a certificate refusal names the check it failed).
        cause: String,
        /// Whether connecting again may succeed (an unreachable server, not
        /// a refused certificate or login).
        retryable: bool,
    },
    /// The pool size is zero: the store could never run a statement.
    #[error("the pool needs at least one connection")]
    PoolSize,
    /// The connection pool could not be built from a valid configuration.
    #[error("could not build the connection pool: {0}")]
    Pool(String),
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
    /// A read-only connection
    /// ([`connect_read_only`](crate::PostgresEventStore::connect_read_only))
    /// found a schema it could only read after a migration, which it never
    /// makes: an older schema version, or no loomfence store at all.
    #[error(
        "schema {schema} would need a migration to be read ({needs}); a read-only connection never migrates: migrate it with a writer first"
    )]
    NeedsMigration {
        /// The schema.
        schema: String,
        /// The version its ledger records; `None` when there is no ledger
        /// (no loomfence store).
        found: Option<i64>,
        /// What was found.
        needs: String,
    },
    /// [`migrate`](crate::PostgresEventStore::migrate) on a store opened
    /// with [`connect_read_only`](crate::PostgresEventStore::connect_read_only):
    /// refused before anything was sent.
    #[error("schema {schema} was opened read-only; it is not migrated")]
    ReadOnly {
        /// The schema.
        schema: String,
    },
    /// The database failed: the first connection, or a statement of the
    /// migration. [`BackendError::retryable`] says whether to boot again.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

impl OpenError {
    /// Whether booting again, unchanged, may succeed: a lock that another
    /// session holds, or a backend failure classified as transient. A bad
    /// configuration or a newer schema fails the same way every time.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            OpenError::LockTimeout { .. } | OpenError::TableLocked { .. } => true,
            OpenError::Connect { retryable, .. } => *retryable,
            OpenError::Backend(backend) => backend.retryable,
            OpenError::Schema { .. }
            | OpenError::ReservedSchema { .. }
            | OpenError::SystemSchema { .. }
            | OpenError::Url { .. }
            | OpenError::Tls { .. }
            | OpenError::RootCert { .. }
            | OpenError::PoolSize
            | OpenError::Pool(_)
            | OpenError::NewerSchema { .. }
            | OpenError::NeedsMigration { .. }
            | OpenError::ReadOnly { .. } => false,
        }
    }
}

/// Classifies a driver error: connection losses, serialisation failures,
/// deadlocks, lock timeouts and a server shutting down are worth retrying;
/// everything else is not.
pub(crate) fn backend(error: tokio_postgres::Error) -> BackendError {
    if backend_retryable(&error) {
        BackendError::retryable(error)
    } else {
        BackendError::permanent(error)
    }
}

/// Whether a driver error is worth retrying (see [`backend`]).
fn backend_retryable(error: &tokio_postgres::Error) -> bool {
    let io = std::error::Error::source(error).is_some_and(|source| source.is::<std::io::Error>());
    error.is_closed() || io || error.code().is_some_and(is_transient)
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

/// The first connection's failure, naming the server (never the password)
/// and the cause; a refused certificate or a server without TLS is not
/// retryable, an unreachable server is.
pub(crate) fn connect(url: &crate::connect_url::ConnectUrl, error: PoolError) -> OpenError {
    let target = url.describe();
    let host = url.first_host();
    let (cause, retryable) = match error {
        PoolError::Backend(error) => {
            let retryable = !crate::tls::is_tls_refusal(&error) && backend_retryable(&error);
            (crate::tls::explain(&error, &host), retryable)
        }
        PoolError::Timeout(_) => ("timed out connecting".to_owned(), true),
        other => (other.to_string(), true),
    };
    OpenError::Connect {
        target,
        cause,
        retryable,
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
