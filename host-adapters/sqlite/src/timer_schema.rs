//! The `timers` table: created on a new file, brought up to date on an old
//! one.
//!
//! The older timer table kept `timers(execution_id,
//! wake_at)` alone; re-drive rows (`redrive`) and lease claims (`holder`,
//! `lease_until`, `claims`) came later. Opening adds whichever of those
//! columns the table lacks, so the rows already there survive as plain,
//! unclaimed wakes. It runs inside the schema's `BEGIN IMMEDIATE`
//! transaction (see [`crate::schema`]), so two processes opening one old
//! file queue on the write lock and the second finds the columns in place.
//!
//! Beside it, `exhausted_timers` keeps the rows whose tries ran out (the
//! core's `ExhaustedRow`: the row's key and re-drive flag as the `timers`
//! table held them, `attempts` and `at`), created on every open when it is
//! missing.
//!
//! Both tables are additive: an earlier build of this crate never reads
//! them, and a file that lacks one gains it on its next open, so neither
//! changes [`SCHEMA_VERSION`](crate::SCHEMA_VERSION). An earlier build
//! opening a file that has `exhausted_timers` ignores it (its fires never
//! record an exhaustion, as before).

use rusqlite::Connection;

/// The table as a new file gets it, and the index that keeps a due scan
/// (`wake_at <= now ORDER BY wake_at, execution_id LIMIT n`) a range read
/// that stops after `n` rows, whatever the table holds.
const DDL: &str = "
    CREATE TABLE IF NOT EXISTS timers (
        execution_id TEXT NOT NULL,
        wake_at INTEGER NOT NULL,
        redrive TEXT NULL,
        holder TEXT NULL,
        lease_until INTEGER NULL,
        claims INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (execution_id, wake_at)
    ) WITHOUT ROWID;
";

/// The exhausted records, keyed and ordered as an operator lists them
/// (`execution_id, wake_at`; ids compare as bytes, the column's `BINARY`
/// collation). `redrive` holds the retired row's flag exactly as the
/// `timers` table's column held it.
const EXHAUSTED_DDL: &str = "
    CREATE TABLE IF NOT EXISTS exhausted_timers (
        execution_id TEXT NOT NULL,
        wake_at INTEGER NOT NULL,
        redrive TEXT NULL,
        attempts INTEGER NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (execution_id, wake_at)
    ) WITHOUT ROWID;
";

/// The due index, created after the columns are in place. Ids compare as
/// bytes (`BINARY`) whatever collation an old table declared, as the due
/// statements order them, so the index serves their `ORDER BY`.
const INDEX: &str =
    "CREATE INDEX IF NOT EXISTS timers_due ON timers (wake_at, execution_id COLLATE BINARY)";

/// The columns every timer table has, the oldest shape
/// included: a `timers` table without one is some other table.
const KEY_COLUMNS: [&str; 2] = ["execution_id", "wake_at"];

/// The columns an old table may lack, with the definitions `ALTER TABLE`
/// adds them with: every one admits the rows already there (`NULL`, or a
/// default), which then read as plain wakes nobody has claimed.
const ADDED_COLUMNS: [(&str, &str); 4] = [
    ("redrive", "TEXT NULL"),
    ("holder", "TEXT NULL"),
    ("lease_until", "INTEGER NULL"),
    ("claims", "INTEGER NOT NULL DEFAULT 0"),
];

/// What the migration found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimersTable {
    /// The table is at its current shape (created, completed or already
    /// so).
    Ready,
    /// A `timers` table without this key column: another application's.
    /// Nothing was altered; the caller must not commit.
    Foreign {
        /// The column it lacks.
        missing: &'static str,
    },
}

/// Creates the table, or adds the columns an old one lacks, and the index.
/// `conn` must be inside a write transaction.
pub(crate) fn migrate(conn: &Connection) -> rusqlite::Result<TimersTable> {
    conn.execute_batch(DDL)?;
    let present = columns(conn)?;
    let has = |name: &str| {
        present
            .iter()
            .any(|column| column.eq_ignore_ascii_case(name))
    };
    if let Some(missing) = KEY_COLUMNS.into_iter().find(|key| !has(key)) {
        return Ok(TimersTable::Foreign { missing });
    }
    for (name, definition) in ADDED_COLUMNS {
        if !has(name) {
            add_column(conn, name, definition)?;
        }
    }
    conn.execute_batch(INDEX)?;
    conn.execute_batch(EXHAUSTED_DDL)?;
    Ok(TimersTable::Ready)
}

/// The names of the table's columns.
fn columns(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare("SELECT name FROM pragma_table_info('timers')")?;
    let names = statement.query_map([], |row| row.get(0))?;
    names.collect()
}

/// Adds one column, tolerating "duplicate column name": the column is
/// there, which is all this wanted. The look at the table runs inside the
/// same immediate transaction and is re-prepared when another process
/// changed the schema, so two SQLite openers never get here; the tolerance
/// is for any other writer of the file (an older engine, a host's own
/// migration) that adds a column between the look and the `ALTER`, so two
/// processes opening one file at once both boot whoever they are.
fn add_column(conn: &Connection, name: &str, definition: &str) -> rusqlite::Result<()> {
    match conn.execute_batch(&format!(
        "ALTER TABLE timers ADD COLUMN {name} {definition}"
    )) {
        Err(rusqlite::Error::SqliteFailure(_, Some(message)))
            if message.contains("duplicate column name") =>
        {
            Ok(())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection holding an old-shape table with one row.
    fn old_shape() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE timers (execution_id TEXT, wake_at INTEGER, PRIMARY KEY (execution_id, wake_at));
             INSERT INTO timers VALUES ('old', 5);",
        )
        .unwrap();
        conn
    }

    #[test]
    fn an_old_table_gets_every_column_and_keeps_its_rows() {
        let conn = old_shape();
        assert_eq!(migrate(&conn).unwrap(), TimersTable::Ready);
        assert_eq!(
            columns(&conn).unwrap(),
            [
                "execution_id",
                "wake_at",
                "redrive",
                "holder",
                "lease_until",
                "claims"
            ]
        );
        let row: (
            String,
            i64,
            Option<String>,
            Option<String>,
            Option<i64>,
            i64,
        ) = conn
            .query_row("SELECT * FROM timers", [], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .unwrap();
        assert_eq!(row, ("old".to_owned(), 5, None, None, None, 0));
        // Again: nothing to do.
        migrate(&conn).unwrap();
        assert_eq!(columns(&conn).unwrap().len(), 6);
    }

    #[test]
    fn an_old_file_gains_the_exhausted_table() {
        let conn = old_shape();
        let tables = |conn: &Connection| -> i64 {
            conn.query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'exhausted_timers'",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!(tables(&conn), 0);
        assert_eq!(migrate(&conn).unwrap(), TimersTable::Ready);
        assert_eq!(tables(&conn), 1);
        conn.execute(
            "INSERT INTO exhausted_timers VALUES ('old', 5, NULL, 3, 9)",
            [],
        )
        .unwrap();
        // Again: the table and its record stay.
        migrate(&conn).unwrap();
        let kept: i64 = conn
            .query_row("SELECT count(*) FROM exhausted_timers", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, 1);
    }

    /// The race two processes opening one old file run, made deterministic:
    /// a connection that saw the old table before another migrated it
    /// migrates after, in its own immediate transaction, and finds the
    /// columns in place (its look at the table is not stale).
    #[test]
    fn a_connection_that_read_the_old_schema_migrates_after_another_did() {
        let path = std::env::temp_dir().join(format!(
            "loomfence-sqlite-timer-schema-{}-{:?}.db",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ignored = std::fs::remove_file(&path);
        let first = Connection::open(&path).unwrap();
        first
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE timers (execution_id TEXT, wake_at INTEGER, PRIMARY KEY (execution_id, wake_at));
                 INSERT INTO timers VALUES ('old', 5);",
            )
            .unwrap();
        let mut late = Connection::open(&path).unwrap();
        assert_eq!(columns(&late).unwrap(), ["execution_id", "wake_at"]);
        let mut early = Connection::open(&path).unwrap();
        let tx = early
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        migrate(&tx).unwrap();
        tx.commit().unwrap();
        let tx = late
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        migrate(&tx).unwrap();
        tx.commit().unwrap();
        assert_eq!(columns(&first).unwrap().len(), 6);
        drop((first, early, late));
        for suffix in ["", "-wal", "-shm"] {
            let mut name = path.clone().into_os_string();
            name.push(suffix);
            let _ignored = std::fs::remove_file(name);
        }
    }

    #[test]
    fn a_timers_table_without_a_key_column_is_foreign_and_not_altered() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE timers (id INTEGER PRIMARY KEY, wake_at INTEGER)")
            .unwrap();
        assert_eq!(
            migrate(&conn).unwrap(),
            TimersTable::Foreign {
                missing: "execution_id"
            }
        );
        assert_eq!(columns(&conn).unwrap(), ["id", "wake_at"]);
    }

    #[test]
    fn a_column_someone_else_added_is_not_an_error() {
        let conn = old_shape();
        conn.execute_batch("ALTER TABLE timers ADD COLUMN redrive TEXT NULL")
            .unwrap();
        add_column(&conn, "redrive", "TEXT NULL").unwrap();
        let other = add_column(&conn, "no such type (", "");
        assert!(other.is_err(), "other failures are still failures");
    }
}
