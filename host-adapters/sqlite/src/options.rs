//! How the SQLite store opens its database.

use std::time::Duration;

/// How hard each commit tries to survive a power loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Durability {
    /// `synchronous = FULL`: every commit is on disk before it returns. A
    /// resume that returned is never lost, so a crash cannot make a second
    /// node resume a park whose body already ran.
    #[default]
    Full,
    /// `synchronous = NORMAL` (with WAL): commits survive a crash of the
    /// process, and the database stays consistent after a power loss, but
    /// the last commits before it may be gone. Faster; for stores whose loss
    /// of recent commits is acceptable.
    Normal,
}

impl Durability {
    /// The `synchronous` pragma's value.
    pub(crate) fn pragma(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        }
    }
}

/// Everything the store needs besides the path.
#[derive(Clone, Debug)]
pub struct SqliteOptions {
    /// How commits reach the disk.
    pub durability: Durability,
    /// How long a connection waits for another process's write lock before
    /// reporting the database busy (a retryable error).
    pub busy_timeout: Duration,
    /// Read-only connections beside the one writer; reads then never queue
    /// behind writes (WAL lets them run concurrently). Ignored for
    /// `:memory:`, which is one connection.
    pub readers: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            durability: Durability::default(),
            busy_timeout: Duration::from_secs(5),
            readers: 2,
        }
    }
}
