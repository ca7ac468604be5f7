//! Opening a database read-only: for a report that must change nothing
//! (retention's dry run), on a file the process may not be allowed to
//! write.
//!
//! Every connection is opened with `SQLITE_OPEN_READ_ONLY`, so SQLite
//! itself refuses any write, and there is no writer thread: a write through
//! the store is refused before it reaches SQLite, with
//! [`ReadOnlyStore`](crate::error::ReadOnlyStore). Nothing is migrated:
//! a file whose schema is not this build's current one, or that lacks an
//! object this build adds on open (an index, the `timers` or `inbox`
//! table, a column), is refused with [`OpenError::NeedsMigration`]. What
//! "current" means is read off [`migrate`] itself, run on a scratch
//! in-memory database, so the check cannot drift from the migration.
//!
//! WAL: which way the file is read depends on whether a `-wal` file is
//! beside it.
//!
//! - No `-wal`: no connection has the database open in WAL mode (the last
//!   one to close removes it), so every committed change is in the database
//!   file itself, and it is opened `immutable=1`: SQLite reads that file
//!   alone, takes no lock and creates no `-wal` or `-shm`. This is what
//!   works in a directory this process may not write (a read-only
//!   connection cannot read a WAL-mode file there otherwise: the WAL index
//!   cannot be made), and what leaves the directory as it was where it
//!   may write (a read-only connection would create `-wal` and `-shm` and
//!   leave them, owned by this user, for the store's writer to trip on).
//!   What it cannot see is a writer that starts while it reads: its
//!   commits are not read, and a checkpoint that rewrites the file under
//!   a read may make that read fail as damaged. The file is never written
//!   either way.
//! - A `-wal`: a writer has the file open (or one crashed); the WAL holds
//!   commits the file does not, so the file is opened read-only with
//!   SQLite's locks and WAL index (`-shm`), and reads see every commit.
//!   SQLite (3.22 and later) reads an `-shm` it may not write; one it can
//!   neither open nor create fails the open (`SQLITE_CANTOPEN` or
//!   `SQLITE_READONLY`), which is reported, not worked around.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::db::{Db, newer, stable_plans};
use crate::error::OpenError;
use crate::options::SqliteOptions;
use crate::schema::{Migrated, SCHEMA_VERSION, migrate};

/// How the file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Read-only, with SQLite's locks and the WAL index.
    Shared,
    /// `immutable=1`: the database file alone, no locks, no WAL index.
    Immutable,
}

/// Opens `path` read-only (see the module's docs).
pub(crate) fn open(path: &Path, options: &SqliteOptions) -> Result<Db, OpenError> {
    let fail = |e| OpenError::from_sqlite(path.to_path_buf(), e);
    if path == Path::new(":memory:") {
        return Err(OpenError::NeedsMigration {
            path: path.to_path_buf(),
            found: 0,
            needs: "an in-memory database opened read-only is new and empty".to_owned(),
        });
    }
    let mode = if exists(&companion(path, "-wal")) {
        Mode::Shared
    } else {
        Mode::Immutable
    };
    let conn = connect(path, options, mode).map_err(fail)?;
    let (found, objects) = inspect(&conn).map_err(fail)?;
    if found > SCHEMA_VERSION {
        return Err(newer(path, found));
    }
    if found == 0 && objects > 0 {
        return Err(OpenError::Foreign {
            path: path.to_path_buf(),
        });
    }
    let needs = |needs: String| OpenError::NeedsMigration {
        path: path.to_path_buf(),
        found,
        needs,
    };
    if found == 0 {
        return Err(needs(
            "no loomfence schema yet: an empty database".to_owned(),
        ));
    }
    if found < SCHEMA_VERSION {
        return Err(needs(format!(
            "schema version {found}; this build reads {SCHEMA_VERSION}"
        )));
    }
    if let Some(missing) = missing(&conn).map_err(fail)? {
        return Err(needs(missing));
    }
    let mut readers = vec![conn];
    for _ in 1..options.readers.max(1) {
        readers.push(connect(path, options, mode).map_err(fail)?);
    }
    Ok(Db::read_only(path, readers))
}

/// One read-only connection.
fn connect(path: &Path, options: &SqliteOptions, mode: Mode) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = match mode {
        Mode::Shared => Connection::open_with_flags(path, flags)?,
        Mode::Immutable => {
            Connection::open_with_flags(immutable_uri(path)?, flags | OpenFlags::SQLITE_OPEN_URI)?
        }
    };
    conn.busy_timeout(options.busy_timeout)?;
    stable_plans(&conn)?;
    Ok(conn)
}

/// The file's schema version and how many schema objects it holds, from
/// one snapshot: the first read, where a foreign or damaged file fails, and
/// where a WAL index that cannot be made does.
fn inspect(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    conn.query_row(
        "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
}

/// `path` with `suffix` appended to its file name.
fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether anything is at `path`; an answer other than "not found" (no
/// permission to look) counts as something, which picks the shared mode,
/// the one that never misses a commit.
fn exists(path: &Path) -> bool {
    !matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// `file:PATH?mode=ro&immutable=1`, with the characters a URI path cannot
/// hold as they are percent-encoded.
fn immutable_uri(path: &Path) -> rusqlite::Result<String> {
    let Some(text) = path.to_str() else {
        return Err(rusqlite::Error::InvalidPath(path.to_path_buf()));
    };
    // An absolute path gets an empty authority (`file:///…`), so a path
    // that starts with `//` is not read as a host.
    let mut uri = String::from(if text.starts_with('/') {
        "file://"
    } else {
        "file:"
    });
    for c in text.chars() {
        match c {
            '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", c as u32)),
            c => uri.push(c),
        }
    }
    uri.push_str("?mode=ro&immutable=1");
    Ok(uri)
}

/// The first object (table, index, column) this build's migration makes
/// that `conn`'s file lacks, named; `None` when it has them all. The
/// reference is [`migrate`] run on a scratch in-memory database.
fn missing(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let mut reference = Connection::open_in_memory()?;
    if migrate(&mut reference)? != Migrated::Current {
        return Err(rusqlite::Error::InvalidQuery);
    }
    let have = objects(conn)?;
    for (kind, name, columns) in objects(&reference)? {
        let Some((_, _, present)) = have
            .iter()
            .find(|(k, n, _)| *k == kind && n.eq_ignore_ascii_case(&name))
        else {
            return Ok(Some(format!("no {kind} {name}")));
        };
        if let Some(column) = columns
            .iter()
            .find(|c| !present.iter().any(|p| p.eq_ignore_ascii_case(c)))
        {
            return Ok(Some(format!("no column {name}.{column}")));
        }
    }
    Ok(None)
}

/// Every schema object's type and name, with a table's columns.
fn objects(conn: &Connection) -> rusqlite::Result<Vec<(String, String, Vec<String>)>> {
    let mut statement = conn.prepare(
        "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type, name",
    )?;
    let named: Vec<(String, String)> = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut columns = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    named
        .into_iter()
        .map(|(kind, name)| {
            let list = if kind == "table" {
                columns
                    .query_map([&name], |row| row.get(0))?
                    .collect::<rusqlite::Result<_>>()?
            } else {
                Vec::new()
            };
            Ok((kind, name, list))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uri_escapes_what_a_uri_path_cannot_hold() {
        assert_eq!(
            immutable_uri(Path::new("/tmp/a b%?#.db")).unwrap(),
            "file:///tmp/a b%25%3F%23.db?mode=ro&immutable=1"
        );
        assert_eq!(
            immutable_uri(Path::new("//tmp/x.db")).unwrap(),
            "file:////tmp/x.db?mode=ro&immutable=1"
        );
        assert_eq!(
            immutable_uri(Path::new("runs/x.db")).unwrap(),
            "file:runs/x.db?mode=ro&immutable=1"
        );
    }

    #[test]
    fn a_fresh_migration_misses_nothing_and_an_older_file_is_named() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), Migrated::Current);
        assert_eq!(missing(&conn).unwrap(), None);
        conn.execute_batch("DROP TABLE inbox").unwrap();
        let found = missing(&conn).unwrap().expect("the inbox is missing");
        assert!(
            found.starts_with("no ") && found.contains("inbox"),
            "{found}"
        );
    }
}
