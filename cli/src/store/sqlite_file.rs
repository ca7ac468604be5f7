//! `--store sqlite:PATH`: the database a run creates, uses and removes.
//!
//! A run on SQLite gets a database of its own, as a run on PostgreSQL gets a
//! schema of its own. PATH names a file that must not exist yet: the run
//! creates it (exclusively, so two runs can never share one), and removes
//! it with its `-wal`, `-shm` and `-journal` companions when the run ends,
//! whether it finished, failed or was interrupted. An existing file is
//! refused before anything runs and never opened, so no run can change, or
//! delete, a database somebody else made.
//!
//! `sqlite::memory:` is a private in-memory database instead: nothing on
//! disk, nothing to remove, nothing fsynced.
//!
//! `loomfence retention` is the one command that works on somebody's real
//! database, so it has the opposite path: [`SqliteTarget::check_existing`]
//! and [`SqliteTarget::open_existing`] open a file that must already exist,
//! never create one, and never remove anything.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use loomfence_sqlite::{Durability, OpenError, SqliteEventStore, SqliteOptions};

use super::existing::Access;
use crate::error::CliError;

/// What follows `sqlite:` for an in-memory database.
const MEMORY: &str = ":memory:";

/// The files SQLite may keep beside a database, by suffix.
const COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// Where a run's SQLite database lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SqliteTarget {
    /// `sqlite::memory:`: a private in-memory database.
    Memory,
    /// `sqlite:PATH`: a new file, created for the run and removed after it.
    File(PathBuf),
}

impl SqliteTarget {
    /// Reads what follows `sqlite:`. Syntax only; [`SqliteTarget::check`]
    /// looks at the file system.
    pub(crate) fn parse(spec: &str) -> Result<Self, CliError> {
        match spec {
            "" => Err(CliError::SqliteNoPath),
            MEMORY => Ok(SqliteTarget::Memory),
            path => Ok(SqliteTarget::File(PathBuf::from(path))),
        }
    }

    /// Checks that the file can be created: its directory exists, and
    /// neither it nor a companion does.
    pub(crate) fn check(&self) -> Result<(), CliError> {
        let SqliteTarget::File(path) = self else {
            return Ok(());
        };
        let shown = path.display().to_string();
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        match std::fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(CliError::SqliteNotADirectory {
                    path: shown,
                    dir: dir.display().to_string(),
                });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(CliError::SqliteNoDirectory {
                    path: shown,
                    dir: dir.display().to_string(),
                });
            }
            Err(e) => return Err(unusable(&shown, &e)),
        }
        if exists(path).map_err(|e| unusable(&shown, &e))? {
            return Err(CliError::SqliteExists { path: shown });
        }
        for companion in companions(path) {
            if exists(&companion).map_err(|e| unusable(&shown, &e))? {
                return Err(CliError::SqliteLeftover {
                    path: shown,
                    companion: companion.display().to_string(),
                });
            }
        }
        Ok(())
    }

    /// `loomfence retention`'s check: the file exists and is a regular
    /// file (a symlink to one counts). Nothing is created or opened.
    pub(crate) fn check_existing(&self) -> Result<(), CliError> {
        let SqliteTarget::File(path) = self else {
            return Ok(());
        };
        let shown = path.display().to_string();
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() && meta.len() == 0 => {
                Err(CliError::SqliteEmpty { path: shown })
            }
            Ok(meta) if meta.is_file() => Ok(()),
            Ok(_) => Err(CliError::SqliteNotAFile { path: shown }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(CliError::SqliteMissing { path: shown })
            }
            Err(e) => Err(unusable(&shown, &e)),
        }
    }

    /// Opens an existing database for `loomfence retention` or `worker`.
    ///
    /// [`Access::ReadWrite`]: the adapter migrates it as it does on every
    /// open (an older loomfence schema is upgraded; a foreign, damaged or
    /// newer file is refused unchanged). [`Access::ReadOnly`] (a dry run):
    /// the adapter's read-only open, which migrates nothing and refuses a
    /// file that would need a migration ([`CliError::NeedsMigration`]);
    /// every connection is `SQLITE_OPEN_READ_ONLY`, so a file this process
    /// may not write (mode 0444, a read-only directory) is read, and left
    /// byte for byte as it was.
    ///
    /// Nothing is ever removed. [`check_existing`](Self::check_existing)
    /// is repeated right before the open so that a missing file is refused,
    /// not created; a file deleted in the instant between that check and a
    /// read-write open would still be created empty by SQLite, which the
    /// adapter gives no way to prevent (a read-only open never creates one).
    pub(crate) async fn open_existing(
        &self,
        durability: Durability,
        access: Access,
    ) -> Result<SqliteEventStore, CliError> {
        let options = SqliteOptions {
            durability,
            ..SqliteOptions::default()
        };
        let path = match self {
            // A database in memory is this process's own and new: there is
            // nothing to read-only about it.
            SqliteTarget::Memory => return Ok(SqliteEventStore::open(MEMORY, options).await?),
            SqliteTarget::File(path) => path,
        };
        self.check_existing()?;
        match access {
            Access::ReadWrite => Ok(SqliteEventStore::open(path, options).await?),
            Access::ReadOnly => SqliteEventStore::open_read_only(path, options)
                .await
                .map_err(|e| match e {
                    OpenError::NeedsMigration { .. } => CliError::NeedsMigration {
                        store: self.to_string(),
                        reason: e.to_string(),
                    },
                    other => other.into(),
                }),
        }
    }

    /// Creates the file (failing if it exists by now) and opens it; the
    /// file is removed again if opening fails. Returns the store and the
    /// file to remove at the end (none in memory).
    pub(crate) async fn open(
        &self,
        durability: Durability,
    ) -> Result<(SqliteEventStore, Option<PathBuf>), CliError> {
        let options = SqliteOptions {
            durability,
            ..SqliteOptions::default()
        };
        let path = match self {
            SqliteTarget::Memory => {
                return Ok((SqliteEventStore::open(MEMORY, options).await?, None));
            }
            SqliteTarget::File(path) => path,
        };
        // An empty file is an empty SQLite database; creating it here, and
        // only if it is new, is what makes the run's database its own.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(CliError::io(format!("could not create {}", path.display())))?;
        match SqliteEventStore::open(path, options).await {
            Ok(store) => Ok((store, Some(path.clone()))),
            Err(failure) => {
                // Best effort: the open failure is the one worth reporting.
                let _ = remove(path);
                Err(failure.into())
            }
        }
    }
}

/// Removes a run's database and its companions; a missing one is fine.
/// Every file is tried; the first failure is reported.
pub(crate) fn remove(path: &Path) -> Result<(), CliError> {
    let mut first = Ok(());
    for file in std::iter::once(path.to_path_buf()).chain(companions(path)) {
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != io::ErrorKind::NotFound && first.is_ok() => {
                first = Err(CliError::Io {
                    what: format!("could not remove {} (remove it by hand)", file.display()),
                    source: e,
                });
            }
            _ => {}
        }
    }
    first
}

/// `PATH-wal`, `PATH-shm`, `PATH-journal`.
fn companions(path: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    COMPANIONS.iter().map(move |suffix| {
        let mut name = OsString::from(path.as_os_str());
        name.push(suffix);
        PathBuf::from(name)
    })
}

/// Whether anything (a dangling symlink included) is at `path`.
fn exists(path: &Path) -> io::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// A file-system answer other than "not found".
fn unusable(path: &str, error: &io::Error) -> CliError {
    CliError::SqliteUnusable {
        path: path.to_owned(),
        reason: error.to_string(),
    }
}

impl fmt::Display for SqliteTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqliteTarget::Memory => write!(f, "sqlite:{MEMORY}"),
            SqliteTarget::File(path) => write!(f, "sqlite:{}", path.display()),
        }
    }
}

/// The `--sqlite-durability` spelling of a durability.
pub(crate) fn durability_name(durability: Durability) -> &'static str {
    match durability {
        Durability::Full => "full",
        Durability::Normal => "normal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of its own under the system's temp dir.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "loomfence-cli-sqlite-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn parses_memory_files_and_an_empty_path() {
        assert!(matches!(
            SqliteTarget::parse(":memory:"),
            Ok(SqliteTarget::Memory)
        ));
        assert!(matches!(
            SqliteTarget::parse(""),
            Err(CliError::SqliteNoPath)
        ));
        let file = SqliteTarget::parse("runs/x.db").unwrap();
        assert_eq!(file, SqliteTarget::File(PathBuf::from("runs/x.db")));
        assert_eq!(file.to_string(), "sqlite:runs/x.db");
        assert_eq!(SqliteTarget::Memory.to_string(), "sqlite::memory:");
    }

    #[test]
    fn check_refuses_what_a_run_must_not_touch() {
        let dir = scratch("check");
        let new = SqliteTarget::File(dir.join("new.db"));
        assert!(new.check().is_ok());
        assert!(SqliteTarget::Memory.check().is_ok());
        // A bare file name lives in the working directory, which exists.
        assert!(
            SqliteTarget::File(PathBuf::from("loomfence-no-such-file.db"))
                .check()
                .is_ok()
        );

        let missing = SqliteTarget::File(dir.join("nosuch").join("x.db"));
        assert!(matches!(
            missing.check(),
            Err(CliError::SqliteNoDirectory { .. })
        ));
        std::fs::write(dir.join("plain"), "not a directory").unwrap();
        let under_file = SqliteTarget::File(dir.join("plain").join("x.db"));
        assert!(matches!(
            under_file.check(),
            Err(CliError::SqliteNotADirectory { .. })
        ));
        let existing = SqliteTarget::File(dir.join("plain"));
        assert!(matches!(
            existing.check(),
            Err(CliError::SqliteExists { .. })
        ));
        let as_dir = SqliteTarget::File(dir.clone());
        assert!(matches!(as_dir.check(), Err(CliError::SqliteExists { .. })));

        std::fs::write(dir.join("left.db-wal"), "").unwrap();
        let left = SqliteTarget::File(dir.join("left.db"));
        let err = left.check().unwrap_err();
        assert!(matches!(err, CliError::SqliteLeftover { .. }), "{err}");
        assert!(err.to_string().contains("left.db-wal"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_existing_database_is_opened_as_it_is_and_a_missing_one_never_made() {
        use loomfence_core::{ExecutionId, KernelKind, NewEvent};
        use loomfence_store::EventStore;

        let dir = scratch("existing");
        let path = dir.join("kept.db");
        let target = SqliteTarget::File(path.clone());
        assert!(matches!(
            target.check_existing(),
            Err(CliError::SqliteMissing { path: shown }) if shown == path.display().to_string()
        ));
        assert!(matches!(
            target
                .open_existing(Durability::Full, Access::ReadWrite)
                .await,
            Err(CliError::SqliteMissing { .. })
        ));
        assert!(!path.exists(), "a missing database is not created");
        assert!(matches!(
            SqliteTarget::File(dir.clone()).check_existing(),
            Err(CliError::SqliteNotAFile { .. })
        ));

        let x = ExecutionId::new("x").unwrap();
        {
            let store = SqliteEventStore::open(&path, SqliteOptions::default())
                .await
                .unwrap();
            store
                .append(&x, NewEvent::kernel(KernelKind::ExecutionStarted, 1))
                .await
                .unwrap();
        }
        assert!(target.check_existing().is_ok());
        let store = target
            .open_existing(Durability::Full, Access::ReadWrite)
            .await
            .unwrap();
        assert_eq!(store.read_range(&x, 1, None).await.unwrap().len(), 1);
        drop(store);
        assert!(path.exists(), "nothing removes it");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn open_creates_a_fresh_file_and_remove_leaves_nothing() {
        use loomfence_core::ExecutionId;
        use loomfence_store::EventStore;

        let dir = scratch("open");
        let path = dir.join("run.db");
        let target = SqliteTarget::File(path.clone());
        let (store, file) = target.open(Durability::Normal).await.unwrap();
        assert_eq!(file.as_deref(), Some(path.as_path()));
        let x = ExecutionId::new("x").unwrap();
        assert_eq!(store.acquire_fence(&x).await.unwrap(), 1);
        // Made by this run: a second open of the same target is refused.
        assert!(matches!(
            target.open(Durability::Full).await,
            Err(CliError::Io { .. })
        ));
        drop(store);
        remove(&path).unwrap();
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
        // Removing again is fine: nothing is there.
        remove(&path).unwrap();

        let (memory, none) = SqliteTarget::Memory.open(Durability::Full).await.unwrap();
        assert!(none.is_none());
        let y = ExecutionId::new("y").unwrap();
        assert_eq!(memory.acquire_fence(&y).await.unwrap(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
