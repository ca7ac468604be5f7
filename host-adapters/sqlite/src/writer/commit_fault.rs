//! How a group's `COMMIT` is run, and, in this crate's tests, the seam that
//! makes it fail on purpose (`CommitFault`). A WAL fsync error cannot be
//! provoked on demand, and its interesting case (a `COMMIT` that failed
//! after its frames reached the log) cannot be provoked at all.

use rusqlite::Connection;

/// Runs a group's `COMMIT`. Outside tests it is only that; in tests it can
/// be armed with one `CommitFault` for the next commit.
#[derive(Debug, Clone, Default)]
pub(super) struct CommitHook {
    /// The fault the next commit suffers, taken by it.
    #[cfg(test)]
    next: std::sync::Arc<std::sync::Mutex<Option<CommitFault>>>,
}

impl CommitHook {
    /// Commits the transaction open on `conn`.
    pub(super) fn commit(&self, conn: &Connection) -> rusqlite::Result<()> {
        #[cfg(test)]
        if let Some(fault) = self
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            return fault.commit(conn);
        }
        conn.execute_batch("COMMIT")
    }

    /// Makes the next group's commit suffer `fault`.
    #[cfg(test)]
    pub(super) fn arm(&self, fault: CommitFault) {
        *self
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(fault);
    }
}

/// A commit that fails on purpose, in one of the two ways SQLite can fail
/// one.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommitFault {
    /// `COMMIT` fails before it happens, leaving the transaction open, as
    /// `SQLITE_BUSY` does: nothing is written.
    Before,
    /// `COMMIT` happens, then the caller hears a disk I/O error: what a
    /// WAL fsync error looks like when the frames, commit marker included,
    /// were already written (SQLite closes the transaction, and recovery
    /// may find it committed).
    After,
}

#[cfg(test)]
impl CommitFault {
    /// Runs (or not) `COMMIT` on `conn`, then fails.
    fn commit(self, conn: &Connection) -> rusqlite::Result<()> {
        use rusqlite::ffi;

        let (code, message) = match self {
            CommitFault::Before => (ffi::SQLITE_BUSY, "database is locked (injected)"),
            CommitFault::After => {
                conn.execute_batch("COMMIT")?;
                (ffi::SQLITE_IOERR_FSYNC, "disk I/O error (injected)")
            }
        };
        Err(rusqlite::Error::SqliteFailure(
            ffi::Error::new(code),
            Some(message.to_owned()),
        ))
    }
}
