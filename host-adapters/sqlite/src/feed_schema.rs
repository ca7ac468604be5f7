//! The change feed's schema: the `feed` column of `events`, its index, the
//! mark deletes keep, and the open-parks index, created on a new file and
//! added to a file of schema version 1 on its first open by this build.
//!
//! Unlike the `timers` and `inbox` tables this change is not additive: a
//! build before the feed would append events without a position (they
//! would never reach a follower) and parks without an open-parks row (a
//! restarted follower would never watch them). So it raises
//! [`SCHEMA_VERSION`](crate::SCHEMA_VERSION), and such a build refuses the
//! migrated file instead of quietly breaking its feed.
//!
//! The feed starts at the migration: events already in the file keep a
//! `NULL` position and are never listed. A follower reaches what they left
//! open through the open-parks index, which the migration fills from the
//! logs once, so nothing parked before it is lost to the follower.

use loomfence_core::feed::{ParkChange, park_change};
use loomfence_core::{JsonObject, KernelKind, log::is_answering};
use rusqlite::{Connection, params};

/// What a new file gets, and an old one once its `events` table has the
/// column.
///
/// `events_feed` holds only the rows with a position, so the events from
/// before the migration cost the index nothing, and a feed read (`feed >
/// ?`, which implies `feed IS NOT NULL`) may use it. `feed_mark` is one
/// row: the highest position a delete has seen, so the head and the next
/// position never go back when the newest log is deleted. `open_parks`
/// names each execution whose last answering event is a park, with its
/// sequence, in id order (`BINARY`, the order the executions listing
/// pages in).
const DDL: &str = "
    CREATE INDEX IF NOT EXISTS events_feed ON events (feed) WHERE feed IS NOT NULL;
    CREATE TABLE IF NOT EXISTS feed_mark (
        one INTEGER PRIMARY KEY CHECK (one = 1),
        last INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS open_parks (
        execution_id TEXT PRIMARY KEY,
        park_seq INTEGER NOT NULL
    ) WITHOUT ROWID;
";

/// Brings a file of version 1 (or a new one) to the feed's shape: adds the
/// column if `events` lacks it, creates the rest, and fills `open_parks`
/// from the logs. `conn` must be inside the schema's write transaction,
/// which also raises the version: two processes opening one old file queue
/// on the write lock, and the second finds the version raised and never
/// gets here.
pub(crate) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    if !has_feed_column(conn)? {
        conn.execute_batch("ALTER TABLE events ADD COLUMN feed INTEGER NULL")?;
    }
    conn.execute_batch(DDL)?;
    backfill_open_parks(conn)
}

/// Whether `events` has the `feed` column.
fn has_feed_column(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM pragma_table_info('events') WHERE name = 'feed' COLLATE NOCASE",
        [],
        |row| row.get::<_, i64>(0),
    )
    .map(|found| found > 0)
}

/// Fills `open_parks` from every log, once: reads the answering events in
/// log order and asks the core's [`park_change`] what each log leaves
/// open, as if the log were one batch (so a park after an end stays
/// closed, which is exact).
///
/// Metadata is parsed only for kinds the kernel table does not know, as
/// the appends' answering test does. Metadata that does not parse is read
/// as none: the event then does not answer, so at worst the index lists a
/// park that is answered, which the contract allows, and never omits one.
fn backfill_open_parks(conn: &Connection) -> rusqlite::Result<()> {
    let mut rows = conn.prepare(
        "SELECT execution_id, sequence, kind, metadata FROM events \
         ORDER BY execution_id, sequence",
    )?;
    let mut insert = conn.prepare(
        "INSERT INTO open_parks (execution_id, park_seq) VALUES (?1, ?2) \
         ON CONFLICT (execution_id) DO UPDATE SET park_seq = excluded.park_seq",
    )?;
    let mut log = Log::default();
    let mut rows = rows.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        if log.id.as_deref() != Some(id.as_str()) {
            log.flush(&mut insert)?;
            log = Log {
                id: Some(id),
                answering: Vec::new(),
            };
        }
        let kind: String = row.get(2)?;
        let metadata = match KernelKind::from_name(&kind) {
            Some(_) => JsonObject::new(),
            None => row
                .get::<_, String>(3)
                .ok()
                .and_then(|text| serde_json::from_str(&text).ok())
                .unwrap_or_default(),
        };
        if is_answering(&kind, &metadata) {
            log.answering.push((row.get(1)?, kind, metadata));
        }
    }
    log.flush(&mut insert)
}

/// One log's answering events, gathered for [`backfill_open_parks`].
#[derive(Default)]
struct Log {
    /// The execution; `None` before the first row.
    id: Option<String>,
    /// Its answering events: sequence, kind, metadata.
    answering: Vec<(i64, String, JsonObject)>,
}

impl Log {
    /// Writes the log's open park, if it leaves one.
    fn flush(&self, insert: &mut rusqlite::Statement<'_>) -> rusqlite::Result<()> {
        let Some(id) = &self.id else {
            return Ok(());
        };
        // Positions in `answering` stand in for sequences (the answering
        // events are not contiguous in the log), then map back.
        let change = park_change(
            0,
            self.answering
                .iter()
                .map(|(_, kind, metadata)| (kind.as_str(), metadata)),
        );
        if let ParkChange::Opens(index) = change {
            let sequence = usize::try_from(index)
                .ok()
                .and_then(|index| self.answering.get(index))
                .map(|(sequence, ..)| *sequence);
            if let Some(sequence) = sequence {
                insert.execute(params![id, sequence])?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version-1 `events` table with a few logs.
    fn old_file() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE events (
                execution_id TEXT NOT NULL, sequence INTEGER NOT NULL, kind TEXT NOT NULL,
                payload TEXT NOT NULL, metadata TEXT NOT NULL, at INTEGER NOT NULL,
                PRIMARY KEY (execution_id, sequence)) WITHOUT ROWID;",
        )
        .unwrap();
        let rows: &[(&str, i64, &str, &str)] = &[
            // Parked at 2.
            ("parked", 1, "EXECUTION_STARTED", "{}"),
            ("parked", 2, "EXECUTION_SUSPENDED", "{}"),
            ("parked", 3, "app.noise", "{}"),
            // Resumed.
            ("resumed", 1, "EXECUTION_SUSPENDED", "{}"),
            ("resumed", 2, "EXECUTION_RESUMED", "{}"),
            // Ended, then a stray park: stays closed.
            ("ended", 1, "EXECUTION_COMPLETED", "{}"),
            ("ended", 2, "EXECUTION_SUSPENDED", "{}"),
            // Parked again after a stamped unknown kind answered.
            ("again", 1, "EXECUTION_SUSPENDED", "{}"),
            ("again", 2, "x.answer", "{\"kernel\": true}"),
            ("again", 3, "EXECUTION_SUSPENDED", "{}"),
            ("again", 4, "x.bad", "not json"),
        ];
        for (id, sequence, kind, metadata) in rows {
            conn.execute(
                "INSERT INTO events VALUES (?1, ?2, ?3, '{}', ?4, 0)",
                params![id, sequence, kind, metadata],
            )
            .unwrap();
        }
        conn
    }

    fn open_parks(conn: &Connection) -> Vec<(String, i64)> {
        let mut statement = conn
            .prepare("SELECT execution_id, park_seq FROM open_parks ORDER BY execution_id")
            .unwrap();
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn the_migration_adds_the_column_and_indexes_the_open_parks() {
        let conn = old_file();
        migrate(&conn).unwrap();
        assert!(has_feed_column(&conn).unwrap());
        assert_eq!(
            open_parks(&conn),
            [("again".to_owned(), 3), ("parked".to_owned(), 2)]
        );
        let positions: i64 = conn
            .query_row("SELECT count(feed) FROM events", [], |row| row.get(0))
            .unwrap();
        assert_eq!(positions, 0, "the feed starts empty");
        // Again: nothing changes.
        migrate(&conn).unwrap();
        assert_eq!(open_parks(&conn).len(), 2);
    }

    /// The plan of `sql`, its rows joined.
    fn plan(conn: &Connection, sql: &str) -> String {
        let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let blanks = vec![rusqlite::types::Value::Null; statement.parameter_count()];
        let rows: Vec<String> = statement
            .query_map(rusqlite::params_from_iter(blanks), |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.join("; ")
    }

    /// The feed page and the head (every append reads it) are seeks on the
    /// partial index, and the open-parks page a walk of its key: none scans
    /// `events`.
    #[test]
    fn the_feed_statements_use_their_indexes() {
        let conn = old_file();
        migrate(&conn).unwrap();
        let page = plan(&conn, crate::feed_ops::PAGE);
        assert!(page.contains("USING INDEX events_feed"), "{page}");
        assert!(!page.contains("TEMP B-TREE"), "{page}");
        let head = plan(&conn, crate::feed_ops::HEAD);
        assert!(head.contains("events_feed"), "{head}");
        assert!(!head.contains("SCAN events"), "{head}");
        let parks = plan(&conn, crate::feed_ops::OPEN_PARKS);
        assert!(parks.contains("open_parks"), "{parks}");
        assert!(!parks.contains("TEMP B-TREE"), "{parks}");
        println!("page: {page}\nhead: {head}\nparks: {parks}");
    }
}
