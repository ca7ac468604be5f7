//! The `inbox` table: created with the timer table on a new file, and on
//! the first open of a file an earlier build made.
//!
//! It runs inside the schema's `BEGIN IMMEDIATE` transaction (see
//! [`crate::schema`]), like the timer table's migration, so two processes
//! opening one file without the table queue on the write lock and the
//! second finds it in place. The table is additive: an earlier build never
//! reads it, so adding it does not change
//! [`SCHEMA_VERSION`](crate::SCHEMA_VERSION).

use rusqlite::Connection;

/// The table. `arrival` is the rowid, handed out in the order the sends
/// commit (one writer at a time holds the file), and `AUTOINCREMENT` keeps
/// it from ever being handed out twice, even after a purge deleted the
/// highest: the core's "every stored message gets a higher number". The
/// key is unique, so a resend is found, not stored. `payload` is the
/// JSON text exactly as serialised; `consumed` is 0 or 1.
const DDL: &str = "
    CREATE TABLE IF NOT EXISTS inbox (
        arrival INTEGER PRIMARY KEY AUTOINCREMENT,
        execution_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        message_id TEXT NOT NULL,
        payload TEXT NOT NULL,
        sent_at INTEGER NOT NULL,
        consumed INTEGER NOT NULL DEFAULT 0,
        UNIQUE (execution_id, channel, message_id)
    );
";

/// The pending index: only unconsumed rows, keyed the way a listing asks
/// (one execution, a few channels, arrival order), so a listing reads the
/// rows it returns and no consumed ones. The unique key serves `messages`
/// and `purge` (execution first) and the send's and the mark's lookups.
const INDEX: &str = "CREATE INDEX IF NOT EXISTS inbox_pending \
     ON inbox (execution_id, channel, arrival) WHERE consumed = 0";

/// The columns the statements use: an `inbox` table without one of them
/// is another application's.
const COLUMNS: [&str; 7] = [
    "arrival",
    "execution_id",
    "channel",
    "message_id",
    "payload",
    "sent_at",
    "consumed",
];

/// What the migration found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InboxTable {
    /// The table and its index are in place.
    Ready,
    /// An `inbox` table without this column: another application's.
    /// Nothing was altered; the caller must not commit.
    Foreign {
        /// The column it lacks.
        missing: &'static str,
    },
}

/// Creates the table if it is missing, checks one that is there, and
/// creates the index. `conn` must be inside a write transaction.
pub(crate) fn migrate(conn: &Connection) -> rusqlite::Result<InboxTable> {
    conn.execute_batch(DDL)?;
    let present = columns(conn)?;
    if let Some(missing) = COLUMNS.into_iter().find(|name| {
        !present
            .iter()
            .any(|column| column.eq_ignore_ascii_case(name))
    }) {
        return Ok(InboxTable::Foreign { missing });
    }
    conn.execute_batch(INDEX)?;
    Ok(InboxTable::Ready)
}

/// The names of the table's columns.
fn columns(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare("SELECT name FROM pragma_table_info('inbox')")?;
    let names = statement.query_map([], |row| row.get(0))?;
    names.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_created_once_with_its_index() {
        let conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&conn).unwrap(), InboxTable::Ready);
        assert_eq!(columns(&conn).unwrap(), COLUMNS);
        conn.execute(
            "INSERT INTO inbox (execution_id, channel, message_id, payload, sent_at) \
             VALUES ('a', 'c', 'm', '1', 5)",
            [],
        )
        .unwrap();
        // Again: nothing to do, the row stays.
        assert_eq!(migrate(&conn).unwrap(), InboxTable::Ready);
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM inbox", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1);
        let index: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'inbox_pending'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(index, 1);
    }

    #[test]
    fn an_inbox_table_without_a_column_is_foreign_and_not_altered() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE inbox (id INTEGER PRIMARY KEY, body TEXT)")
            .unwrap();
        assert_eq!(
            migrate(&conn).unwrap(),
            InboxTable::Foreign { missing: "arrival" }
        );
        assert_eq!(columns(&conn).unwrap(), ["id", "body"]);
    }
}
