//! Creating and checking the schema.
//!
//! The version lives in `PRAGMA user_version`. Creating the tables and
//! setting the version happen in one `BEGIN IMMEDIATE` transaction, so two
//! processes opening a new file at once queue on the write lock: the first
//! creates, the second finds everything in place. The `timers` and `inbox`
//! tables and the retention listing's index are brought up to date in the
//! same transaction, on every open (see [`crate::timer_schema`],
//! [`crate::inbox_schema`] and [`crate::retention_ops`]): all are
//! additive, so none changes the version. The change feed is not (see
//! [`crate::feed_schema`]): version 2 added it, and a file of version 1
//! gains it on its first open by this build, in the same transaction.

use rusqlite::{Connection, TransactionBehavior};

use crate::feed_schema;
use crate::inbox_schema::{self, InboxTable};
use crate::retention_ops;
use crate::timer_schema::{self, TimersTable};

/// The schema version this build writes and understands: 2 since the
/// change feed (1 had no feed; a file of 1 is brought up to 2 on open).
pub const SCHEMA_VERSION: i64 = 2;

/// The tables: the same logical shape as the PostgreSQL store's. Payload and
/// metadata are JSON text, stored exactly as serialised; `feed` is the
/// event's position in the change feed (`NULL` for events written before
/// the file had a feed).
const DDL: &str = "
    CREATE TABLE IF NOT EXISTS events (
        execution_id TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        metadata TEXT NOT NULL,
        at INTEGER NOT NULL,
        feed INTEGER NULL,
        PRIMARY KEY (execution_id, sequence)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS fences (
        execution_id TEXT PRIMARY KEY,
        token INTEGER NOT NULL
    ) WITHOUT ROWID;
";

/// What opening found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Migrated {
    /// The schema is at [`SCHEMA_VERSION`].
    Current,
    /// The file carries a newer version; nothing was changed.
    Newer(i64),
    /// The file's `timers` table lacks this key column: not ours to alter;
    /// nothing was changed.
    ForeignTimers(&'static str),
    /// The file's `inbox` table lacks this column: not ours to alter;
    /// nothing was changed.
    ForeignInbox(&'static str),
}

/// Brings the schema to [`SCHEMA_VERSION`], and the `timers` and `inbox`
/// tables to their current shape, unless the file is newer.
pub(crate) fn migrate(conn: &mut Connection) -> rusqlite::Result<Migrated> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if found > SCHEMA_VERSION {
        return Ok(Migrated::Newer(found));
    }
    if found < SCHEMA_VERSION {
        tx.execute_batch(DDL)?;
        feed_schema::migrate(&tx)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    // Whatever the version: a file of an earlier build has no index of
    // terminal events (building it reads `events` once, on the first open by
    // this build) and no `timers` table, and one shared with the reference
    // engine may hold its old one; one of a build before the inbox has no
    // `inbox` table.
    retention_ops::migrate(&tx)?;
    if let TimersTable::Foreign { missing } = timer_schema::migrate(&tx)? {
        // Dropping the transaction rolls back everything above.
        return Ok(Migrated::ForeignTimers(missing));
    }
    if let InboxTable::Foreign { missing } = inbox_schema::migrate(&tx)? {
        return Ok(Migrated::ForeignInbox(missing));
    }
    tx.commit()?;
    Ok(Migrated::Current)
}
