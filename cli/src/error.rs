//! The command line's one error: every reason a command stops before its
//! verdict, from a bad option to a store that failed.
//!
//! Each command prints it as one `error: …` line and exits with
//! [`CliError::exit_code`]: 2 for bad options (a store that is not there
//! included), 130 for Ctrl-C, 1 for everything else. The lower layers'
//! errors are wrapped, one variant each, with a short `during` saying what
//! the command was doing; their own messages follow it.
//!
//! Lost races are not errors: the race and the fleet count them and judge
//! them in their reports.

use std::io;
use std::process::ExitCode;

use loomfence_core::{ContractError, InputError};
use loomfence_runtime::RuntimeError;
use loomfence_store::StoreError;
use tokio::task::JoinError;

use crate::interrupt;

/// Why a command stopped before its verdict.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CliError {
    // Bad options: refused before anything runs (exit 2).
    /// A count, a probability or a duration out of its range: clap checks
    /// the type, this the value.
    #[error("--{option} {given}: must be {range}")]
    OutOfRange {
        /// The option, without its dashes.
        option: &'static str,
        /// The value as given.
        given: String,
        /// What it must be.
        range: &'static str,
    },
    /// An option that means something for another workload only.
    #[error("--{option}: only with {with}")]
    OnlyWith {
        /// The option, without its dashes.
        option: &'static str,
        /// What it needs.
        with: &'static str,
    },
    /// An option that means something for one kind of store only.
    #[error("--{option}: only for --store {store}")]
    OnlyForStore {
        /// The option, without its dashes.
        option: &'static str,
        /// The store it needs.
        store: &'static str,
    },
    /// A value the option's own parser refused (a schema name, a page
    /// limit, a node id, an archive file that cannot be opened).
    #[error("--{option}: {reason}")]
    BadValue {
        /// The option, without its dashes.
        option: &'static str,
        /// What is wrong with the value.
        reason: String,
    },
    /// `--older-than` is not a duration.
    #[error(
        "--older-than {given:?}: {reason}; give a duration such as 7d, 12h, 30m or 90s (units may be combined: 1d 12h)"
    )]
    OlderThan {
        /// As typed.
        given: String,
        /// The parser's complaint.
        reason: String,
    },
    /// An execution id given on the command line that is not a valid one
    /// (empty, longer than 255 bytes, with a NUL).
    #[error("execution id {given:?}: not a valid execution id: {reason}")]
    BadId {
        /// As given.
        given: String,
        /// The core's complaint.
        reason: String,
    },
    /// `--store` names no backend we have.
    #[error(
        "--store {0:?}: unknown store; expected `memory`, `postgres:URL`, `sqlite:PATH` or `sqlite::memory:`"
    )]
    UnknownStore(String),
    /// `postgres:` followed by something that is not a connection string.
    /// The value is not repeated: it may hold a password.
    #[error("--store postgres:…: not a PostgreSQL connection string: {0}")]
    PostgresUrl(String),
    /// A store in memory for processes that share one (a fleet's workers,
    /// a worker): no other process can reach it.
    #[error(
        "--store: a {command} shares its store with other processes: postgres:URL or sqlite:PATH, not a store in memory"
    )]
    InMemory {
        /// `fleet` or `worker`.
        command: &'static str,
    },
    /// `sqlite:` and nothing after it.
    #[error(
        "--store sqlite: names no file; use sqlite:PATH (a file that does not exist yet) or sqlite::memory:"
    )]
    SqliteNoPath,
    /// The new file's directory is missing.
    #[error("--store sqlite:{path}: directory {dir} does not exist")]
    SqliteNoDirectory {
        /// The path as given.
        path: String,
        /// Its directory.
        dir: String,
    },
    /// The new file's "directory" is something else.
    #[error("--store sqlite:{path}: {dir} is not a directory")]
    SqliteNotADirectory {
        /// The path as given.
        path: String,
        /// Its parent.
        dir: String,
    },
    /// The file a run would create exists (whatever it holds): a run never
    /// opens, or removes, a database somebody else made.
    #[error(
        "--store sqlite:{path}: the file already exists; a run creates its own database and removes it at the end, so it never opens an existing file: name one that does not exist"
    )]
    SqliteExists {
        /// The path as given.
        path: String,
    },
    /// A `-wal`, `-shm` or `-journal` file without its database: left by a
    /// run that was killed. SQLite would replay a stale WAL or journal into
    /// the new database, so it is not ignored.
    #[error(
        "--store sqlite:{path}: {companion} exists (left by a killed run?); remove it first, or SQLite would replay it into the new database"
    )]
    SqliteLeftover {
        /// The path as given.
        path: String,
        /// The companion found.
        companion: String,
    },
    /// An existing database is wanted (retention, a worker) and the file
    /// does not exist: creating an empty one would only hide a typo.
    #[error(
        "--store sqlite:{path}: no such file; this command opens an existing loomfence database and never creates one (race, bench and fleet make their own)"
    )]
    SqliteMissing {
        /// The path as given.
        path: String,
    },
    /// An existing database is wanted and the file is empty: SQLite would
    /// take it as a new database, and opening it would write loomfence's
    /// tables into a file that was never a store.
    #[error(
        "--store sqlite:{path}: an empty file, not a loomfence database; nothing was written to it (to make a new store there, remove it and run `loomfence init`)"
    )]
    SqliteEmpty {
        /// The path as given.
        path: String,
    },
    /// An existing database is wanted and something other than a file is
    /// there (a directory, a device).
    #[error("--store sqlite:{path}: not a regular file")]
    SqliteNotAFile {
        /// The path as given.
        path: String,
    },
    /// The file system would not say (permissions, a file as a directory
    /// along the path).
    #[error("--store sqlite:{path}: {reason}")]
    SqliteUnusable {
        /// The path as given.
        path: String,
        /// What the file system said.
        reason: String,
    },
    /// The schema holds no loomfence store (it, or its `events` table,
    /// does not exist): a command on an existing store creates nothing.
    #[error(
        "PostgreSQL: schema {schema} holds no loomfence store (no table {schema}.events); this command opens an existing store and creates nothing (name it with --schema)"
    )]
    NoStore {
        /// The schema looked in.
        schema: String,
    },
    /// `loomfence init` on a store in memory: nothing would last.
    #[error(
        "--store {store}: a store in memory lasts only as long as the process that opens it, so there is nothing to initialise; name a lasting store: sqlite:PATH or postgres:URL"
    )]
    Ephemeral {
        /// The store as given.
        store: String,
    },
    /// `loomfence init` found something there that is not a loomfence
    /// store, and left it untouched.
    #[error(
        "--store {store}: {reason}; init creates a store only where there is none and migrates only a loomfence store, so it left this untouched"
    )]
    NotAStore {
        /// The store as given (with `--schema` on PostgreSQL).
        store: String,
        /// What is there.
        reason: String,
    },
    /// A store opened read-only (a dry run) that could only be read after a
    /// migration, which a read-only open never makes: an older loomfence
    /// schema. Nothing was changed.
    #[error(
        "--store {store}: {reason}; run `loomfence init --store {store}` (or any loomfence writer, which migrates on open) first"
    )]
    NeedsMigration {
        /// The store as given (with `--schema` on PostgreSQL).
        store: String,
        /// The adapter's refusal.
        reason: String,
    },

    // Ctrl-C (exit 130).
    /// Ctrl-C stopped the command; its schema was dropped, its file
    /// removed. Inside a sweep, the error every store call fails with once
    /// a stop was requested, so the sweep returns what it did.
    #[error("interrupted")]
    Interrupted,

    // Failures (exit 1).
    /// A valid execution id with no log in the store.
    #[error("no execution with id {id} in {store}{left}")]
    UnknownExecution {
        /// The id.
        id: String,
        /// The store, as output names it.
        store: String,
        /// What the timer store and the inbox still hold for it (empty, or
        /// `; the store still holds …`).
        left: String,
    },
    /// A store call failed.
    #[error("{during}: {source}")]
    Store {
        /// What the command was doing (`store`, `timer store`, …).
        during: &'static str,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// An operator named an execution the store has no trace of: no log
    /// and no timer row or record.
    #[error("no execution with id {id:?} in {store}")]
    NoExecution {
        /// The id as given.
        id: String,
        /// The store, as printed.
        store: String,
    },
    /// The SQLite adapter refused to open the file (for an existing store:
    /// not a database, or another application's; see
    /// [`CliError::names_no_store`]).
    #[error("SQLite: {0}")]
    Sqlite(#[from] loomfence_sqlite::OpenError),
    /// Connecting to PostgreSQL, migrating, or naming the run's schema
    /// failed.
    #[error("{during}: {source}")]
    Postgres {
        /// What the command was doing.
        during: &'static str,
        /// The adapter's error.
        #[source]
        source: loomfence_postgres::OpenError,
    },
    /// A value the core refused: a generated execution id (a bug in the
    /// CLI).
    #[error("{during}: {source}")]
    Input {
        /// What it was.
        during: &'static str,
        /// The core's error.
        #[source]
        source: InputError,
    },
    /// The resume machine rejected the events it was started from.
    #[error("resume machine: {0}")]
    Contract(#[from] ContractError),
    /// The runtime failed: a resume step (the store refused the request
    /// or the machine rejected its answer) or a retention sweep (its
    /// partial report is in the error).
    #[error("{during}: {source}")]
    Runtime {
        /// What the command was doing.
        during: &'static str,
        /// The runtime's error.
        #[source]
        source: RuntimeError,
    },
    /// The resume machine asked for a step this CLI does not know (the
    /// core is newer); it will not guess how to count it.
    #[error("resume step: the resume machine asked for a step this driver does not know: {step}")]
    UnknownStep {
        /// The step, as debug-printed.
        step: String,
    },
    /// A task panicked or was cancelled.
    #[error("{during}: {source}")]
    Task {
        /// Which task.
        during: &'static str,
        /// Why it ended.
        #[source]
        source: JoinError,
    },
    /// A file or a process could not be created, written or removed.
    #[error("{what}: {source}")]
    Io {
        /// What was tried, on what.
        what: String,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// The run's PostgreSQL schema could not be dropped; it is left in the
    /// database.
    #[error("could not drop schema {schema} (drop it by hand): {reason}")]
    DropSchema {
        /// The schema left behind.
        schema: String,
        /// Why.
        reason: String,
    },
    /// The retention bench's archive file could not be made, opened or
    /// removed.
    #[error("archive file {path}: {reason}")]
    ArchiveFile {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A fleet's worker could not be signalled or waited for.
    #[error("stopping worker {index}: {reason}")]
    StopWorker {
        /// Which.
        index: usize,
        /// Why.
        reason: String,
    },
    /// No storable re-drive time follows now (the clock is far outside
    /// the timer store's range).
    #[error("re-drive row: no re-drive time follows {now} ms")]
    NoWakeTime {
        /// The time the row was written at.
        now: i64,
    },
    /// The race's timer service reported failures (a store, a re-driver);
    /// the first is shown.
    #[error("timer service: {count} failures, the first: {first}")]
    TimerService {
        /// How many.
        count: usize,
        /// The first one.
        first: String,
    },
    /// A retention bench sweep's counts are not the ones its shapes call
    /// for: a bug, not a measurement.
    #[error("the {variant} sweep reported {found}, expected {expected}")]
    Counts {
        /// Which sweep.
        variant: &'static str,
        /// What it reported.
        found: String,
        /// What the shapes call for.
        expected: String,
    },
}

impl CliError {
    /// The exit code: 2 for bad options (a store that is not there, or not
    /// a loomfence store, included), 130 for Ctrl-C, 1 otherwise.
    pub(crate) fn exit_code(&self) -> u8 {
        if matches!(self, CliError::Interrupted) {
            interrupt::EXIT_CODE
        } else if self.is_usage() || self.names_no_store() {
            2
        } else {
            1
        }
    }

    /// Prints the error the way every command does: a bad option as it is,
    /// Ctrl-C as `interrupted`, anything else after `failed` (`the race
    /// failed`). Answers the exit code.
    pub(crate) fn exit(&self, failed: &str) -> ExitCode {
        if matches!(self, CliError::Interrupted) {
            eprintln!("interrupted");
        } else if self.is_usage() {
            eprintln!("error: {self}");
        } else {
            eprintln!("error: {failed}: {self}");
        }
        ExitCode::from(self.exit_code())
    }

    /// Whether an option was refused before anything ran. Printed as it
    /// is, without what the command was doing.
    pub(crate) fn is_usage(&self) -> bool {
        matches!(
            self,
            CliError::OutOfRange { .. }
                | CliError::OnlyWith { .. }
                | CliError::OnlyForStore { .. }
                | CliError::BadValue { .. }
                | CliError::BadId { .. }
                | CliError::OlderThan { .. }
                | CliError::UnknownStore(_)
                | CliError::PostgresUrl(_)
                | CliError::InMemory { .. }
                | CliError::Ephemeral { .. }
                | CliError::SqliteNoPath
                | CliError::SqliteNoDirectory { .. }
                | CliError::SqliteNotADirectory { .. }
                | CliError::SqliteExists { .. }
                | CliError::SqliteLeftover { .. }
                | CliError::SqliteMissing { .. }
                | CliError::SqliteEmpty { .. }
                | CliError::SqliteNotAFile { .. }
                | CliError::SqliteUnusable { .. }
        )
    }

    /// Whether the store named is not one a command on an existing store
    /// can use (missing, empty, not a database, damaged, written by a newer
    /// loomfence, another application's):
    /// the options are wrong, not the store, so trying again is no use and
    /// the command exits 2 rather than 1.
    pub(crate) fn names_no_store(&self) -> bool {
        use loomfence_sqlite::OpenError as Sqlite;
        match self {
            CliError::NoStore { .. }
            | CliError::NeedsMigration { .. }
            | CliError::NotAStore { .. }
            | CliError::SqliteMissing { .. }
            | CliError::SqliteEmpty { .. }
            | CliError::SqliteNotAFile { .. }
            | CliError::SqliteUnusable { .. } => true,
            CliError::Sqlite(open) => matches!(
                open,
                Sqlite::NotADatabase { .. }
                    | Sqlite::Corrupt { .. }
                    | Sqlite::NewerSchema { .. }
                    | Sqlite::Foreign { .. }
                    | Sqlite::ForeignTimers { .. }
                    | Sqlite::ForeignInbox { .. }
            ),
            CliError::Postgres {
                source: loomfence_postgres::OpenError::NewerSchema { .. },
                ..
            } => true,
            _ => false,
        }
    }

    /// `--OPTION 0: must be at least 1`, for a count that cannot be zero.
    pub(crate) fn zero(option: &'static str) -> Self {
        CliError::OutOfRange {
            option,
            given: "0".to_owned(),
            range: "at least 1",
        }
    }

    /// `--OPTION: REASON`, for a value the option's own parser refused.
    pub(crate) fn bad_value(option: &'static str, reason: &dyn std::fmt::Display) -> Self {
        CliError::BadValue {
            option,
            reason: reason.to_string(),
        }
    }

    /// Wraps a store error met while `during`.
    pub(crate) fn store(during: &'static str) -> impl FnOnce(StoreError) -> Self {
        move |source| CliError::Store { during, source }
    }

    /// Wraps a PostgreSQL error (a schema name, a connection, a migration,
    /// a backend failure) met while `during`.
    pub(crate) fn postgres<E: Into<loomfence_postgres::OpenError>>(
        during: &'static str,
    ) -> impl FnOnce(E) -> Self {
        move |source| CliError::Postgres {
            during,
            source: source.into(),
        }
    }

    /// Wraps a value the core refused, named `during`.
    pub(crate) fn input<E: Into<InputError>>(during: &'static str) -> impl FnOnce(E) -> Self {
        move |source| CliError::Input {
            during,
            source: source.into(),
        }
    }

    /// Wraps a failed resume step or sweep met while `during`.
    pub(crate) fn runtime(during: &'static str) -> impl FnOnce(RuntimeError) -> Self {
        move |source| CliError::Runtime { during, source }
    }

    /// Wraps a task that panicked or was cancelled.
    pub(crate) fn task(during: &'static str) -> impl FnOnce(JoinError) -> Self {
        move |source| CliError::Task { during, source }
    }

    /// Wraps a file-system or process failure: `what` was tried.
    pub(crate) fn io(what: String) -> impl FnOnce(io::Error) -> Self {
        move |source| CliError::Io { what, source }
    }
}

/// A store call's error, met doing what stores do.
impl From<StoreError> for CliError {
    fn from(source: StoreError) -> Self {
        CliError::Store {
            during: "store",
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        let usage = CliError::OutOfRange {
            option: "parks",
            given: "0".to_owned(),
            range: "at least 1",
        };
        assert_eq!(usage.to_string(), "--parks 0: must be at least 1");
        assert_eq!(usage.exit_code(), 2);
        assert_eq!(CliError::Interrupted.exit_code(), 130);
        let no_store = CliError::NoStore {
            schema: "app".to_owned(),
        };
        assert!(no_store.names_no_store() && !no_store.is_usage());
        assert_eq!(no_store.exit_code(), 2);
        let dropped = CliError::DropSchema {
            schema: "race_1_0".to_owned(),
            reason: "gone".to_owned(),
        };
        assert!(!dropped.names_no_store());
        assert_eq!(dropped.exit_code(), 1);
        let store = CliError::store("timer store")(StoreError::Backend(
            loomfence_store::BackendError::permanent("down"),
        ));
        assert!(store.to_string().starts_with("timer store: "), "{store}");
        assert_eq!(store.exit_code(), 1);
    }
}
