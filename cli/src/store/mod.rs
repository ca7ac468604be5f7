//! `--store`: which backend a command runs against.
//!
//! The race and the bench are meant to be run against every adapter, so the
//! flag names a backend rather than the CLI hard-wiring the memory store:
//!
//! - `memory`: the in-memory store, fresh for every run;
//! - `postgres:URL` (a `postgres://` URL or a `key=value` string): the
//!   PostgreSQL store, on a schema of its own that is created for the run
//!   and dropped (`DROP SCHEMA … CASCADE`) when the run ends, so runs never
//!   see each other's logs and leave nothing behind;
//! - `sqlite:PATH`: the SQLite store in a new file at PATH, created for the
//!   run and removed (with its `-wal` and `-shm`) when the run ends; an
//!   existing file is refused, never opened (see [`crate::store::sqlite_file`]);
//! - `sqlite::memory:`: the SQLite store in a private in-memory database.
//!
//! `--sqlite-durability full|normal` picks the SQLite store's
//! [`Durability`]; it is refused with any other store, where it would mean
//! nothing.
//!
//! `loomfence retention` reads the same `--store` syntax with the opposite
//! meaning: it works on a store somebody else made and keeps, so
//! [`StoreArg::existing`] and [`StoreArg::open_existing`] open it as it is
//! and never create, drop or remove anything (see their docs); a dry run
//! opens it read-only ([`StoreArg::open_existing_read_only`]).
//!
//! `loomfence init` is the one command that makes a store to keep
//! ([`StoreArg::lasting`] and [`StoreArg::init`]): it creates a missing
//! file or schema, migrates an existing loomfence store, and refuses
//! anything else, untouched.

use std::fmt;
use std::str::FromStr;

use loomfence_postgres::Schema;
use loomfence_sqlite::Durability;

use crate::error::CliError;
mod durability_arg;
mod existing;
mod lasting;
pub(crate) mod sqlite_file;
mod throwaway;

pub(crate) use self::durability_arg::DurabilityArg;
pub(crate) use self::existing::{ExistingStore, KeptStore};
pub(crate) use self::lasting::Initialized;
use self::sqlite_file::{SqliteTarget, durability_name};
pub(crate) use self::throwaway::{OpenOptions, OpenedStore, close_all};

/// A backend named on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StoreArg {
    /// The core's in-memory store behind a mutex: every operation is atomic,
    /// nothing persists past the process.
    Memory,
    /// A PostgreSQL server.
    Postgres {
        /// The connection string as given (it may hold a password, so it is
        /// never printed).
        url: String,
        /// What is printed instead: `user@host:port/db`, no password.
        shown: String,
    },
    /// The SQLite store, in a new file or in memory.
    Sqlite {
        /// Where.
        target: SqliteTarget,
        /// How commits reach the disk (`--sqlite-durability`).
        durability: Durability,
    },
}

impl StoreArg {
    /// `--schema` for this store: only PostgreSQL has one, and it must be
    /// a plain identifier. The one check every command makes of it.
    pub(crate) fn schema_option(&self, schema: Option<String>) -> Result<Option<Schema>, CliError> {
        match schema {
            None => Ok(None),
            Some(_) if !self.is_postgres() => Err(CliError::OnlyForStore {
                option: "schema",
                store: "postgres:URL",
            }),
            Some(name) => Schema::new(name)
                .map(Some)
                .map_err(|e| CliError::bad_value("schema", &e)),
        }
    }

    /// Whether this is a PostgreSQL server (where the acquire strategy is a
    /// choice worth measuring).
    pub(crate) fn is_postgres(&self) -> bool {
        matches!(self, StoreArg::Postgres { .. })
    }

    /// Whether the store lives in this process's memory (`memory`,
    /// `sqlite::memory:`), where no other process can reach it.
    pub(crate) fn is_in_memory(&self) -> bool {
        matches!(
            self,
            StoreArg::Memory
                | StoreArg::Sqlite {
                    target: SqliteTarget::Memory,
                    ..
                }
        )
    }

    /// The SQLite store's durability; `None` for the other stores.
    pub(crate) fn durability(&self) -> Option<Durability> {
        match self {
            StoreArg::Sqlite { durability, .. } => Some(*durability),
            _ => None,
        }
    }

    /// Reads `--store` and `--sqlite-durability` together and checks them
    /// against the file system: everything about the store that can be
    /// refused before a run starts (and so exits 2) is refused here.
    pub(crate) fn from_options(
        store: &str,
        durability: Option<Durability>,
    ) -> Result<Self, CliError> {
        let mut parsed: StoreArg = store.parse()?;
        match (&mut parsed, durability) {
            (StoreArg::Sqlite { durability, .. }, Some(given)) => *durability = given,
            (_, Some(_)) => {
                return Err(CliError::OnlyForStore {
                    option: "sqlite-durability",
                    store: "sqlite:PATH",
                });
            }
            (_, None) => {}
        }
        if let StoreArg::Sqlite { target, .. } = &parsed {
            target.check()?;
        }
        Ok(parsed)
    }

    /// How the store is named in a human summary: [`Display`](fmt::Display)
    /// plus the durability of an SQLite file.
    pub(crate) fn summary(&self) -> String {
        match self {
            StoreArg::Sqlite {
                target: SqliteTarget::File(_),
                durability,
            } => format!("{self} (durability {})", durability_name(*durability)),
            _ => self.to_string(),
        }
    }
}

impl fmt::Display for StoreArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreArg::Memory => f.write_str("memory"),
            StoreArg::Postgres { shown, .. } => write!(f, "postgres:{shown}"),
            StoreArg::Sqlite { target, .. } => target.fmt(f),
        }
    }
}

impl FromStr for StoreArg {
    type Err = CliError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "memory" {
            return Ok(StoreArg::Memory);
        }
        if let Some(path) = s.strip_prefix("sqlite:") {
            return Ok(StoreArg::Sqlite {
                target: SqliteTarget::parse(path)?,
                durability: Durability::default(),
            });
        }
        let Some(url) = s.strip_prefix("postgres:") else {
            return Err(CliError::UnknownStore(s.to_owned()));
        };
        if url.trim().is_empty() {
            return Err(CliError::PostgresUrl("it is empty".to_owned()));
        }
        // The adapter's parser: libpq's `sslmode` (verify-ca, verify-full
        // included) and `sslrootcert`, which tokio-postgres alone refuses.
        let parsed = loomfence_postgres::ConnectUrl::parse(url).map_err(|e| match e {
            loomfence_postgres::OpenError::Url { reason } => CliError::PostgresUrl(reason),
            other => CliError::PostgresUrl(other.to_string()),
        })?;
        Ok(StoreArg::Postgres {
            url: url.to_owned(),
            shown: parsed.describe(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_memory_and_refuses_the_rest() {
        assert!(matches!("memory".parse(), Ok(StoreArg::Memory)));
        assert_eq!(StoreArg::Memory.to_string(), "memory");
        assert!(matches!(
            "sqlite:".parse::<StoreArg>(),
            Err(CliError::SqliteNoPath)
        ));
        assert!(matches!(
            "Memory".parse::<StoreArg>(),
            Err(CliError::UnknownStore(_))
        ));
        assert!(matches!(
            "".parse::<StoreArg>(),
            Err(CliError::UnknownStore(_))
        ));
    }

    #[test]
    fn parses_postgres_urls_and_never_shows_the_password() {
        let arg: StoreArg = "postgres:postgres://app:s3cret@127.0.0.1:55432/db"
            .parse()
            .unwrap();
        assert!(arg.is_postgres());
        let shown = arg.to_string();
        assert_eq!(shown, "postgres:app@127.0.0.1:55432/db");
        assert!(!format!("{arg:?}").is_empty());
        let kv: StoreArg = "postgres:host=/tmp user=me password=pw dbname=x"
            .parse()
            .unwrap();
        assert_eq!(kv.to_string(), "postgres:me@/tmp/x");
        for bad in [
            "postgres:",
            "postgres:  ",
            "postgres:postgres://h:notaport/x",
        ] {
            let err = bad.parse::<StoreArg>().unwrap_err();
            assert!(matches!(err, CliError::PostgresUrl(_)), "{bad}");
        }
    }

    #[test]
    fn parses_sqlite_with_its_durability() {
        let file = StoreArg::from_options("sqlite:loomfence-no-such.db", None).unwrap();
        assert_eq!(file.durability(), Some(Durability::Full));
        assert_eq!(file.to_string(), "sqlite:loomfence-no-such.db");
        assert_eq!(
            file.summary(),
            "sqlite:loomfence-no-such.db (durability full)"
        );
        let normal =
            StoreArg::from_options("sqlite:loomfence-no-such.db", Some(Durability::Normal))
                .unwrap();
        assert_eq!(normal.durability(), Some(Durability::Normal));
        let memory = StoreArg::from_options("sqlite::memory:", None).unwrap();
        assert_eq!(memory.summary(), "sqlite::memory:");
        assert!(!memory.is_postgres());
        assert_eq!(StoreArg::Memory.durability(), None);
    }

    #[test]
    fn existing_wants_the_file_to_be_there() {
        let here = std::env::current_exe().unwrap();
        let existing = StoreArg::existing(&format!("sqlite:{}", here.display())).unwrap();
        assert_eq!(existing.to_string(), format!("sqlite:{}", here.display()));
        assert!(matches!(
            StoreArg::existing("sqlite:/loomfence/no/such/x.db"),
            Err(CliError::SqliteMissing { .. })
        ));
        assert!(matches!(StoreArg::existing("memory"), Ok(StoreArg::Memory)));
        assert!(StoreArg::existing("postgres:postgres://u@h/db").is_ok());
        assert!(matches!(
            StoreArg::existing("nosuch"),
            Err(CliError::UnknownStore(_))
        ));
    }

    #[test]
    fn a_missing_store_is_an_option_error() {
        assert!(
            CliError::NoStore {
                schema: "app".to_owned()
            }
            .names_no_store()
        );
        assert!(
            CliError::SqliteMissing {
                path: "x".to_owned()
            }
            .names_no_store()
        );
        assert!(
            !CliError::DropSchema {
                schema: "app".to_owned(),
                reason: "gone".to_owned()
            }
            .names_no_store()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory_opens_as_a_new_empty_store() {
        let store = StoreArg::Memory.open_existing(None, 1).await.unwrap();
        assert!(
            store
                .events
                .list_executions(None, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn refuses_durability_elsewhere_and_paths_a_run_cannot_create() {
        assert!(matches!(
            StoreArg::from_options("memory", Some(Durability::Full)),
            Err(CliError::OnlyForStore {
                option: "sqlite-durability",
                store: "sqlite:PATH",
            })
        ));
        assert!(matches!(
            StoreArg::from_options("sqlite:/loomfence/no/such/dir/x.db", None),
            Err(CliError::SqliteNoDirectory { .. })
        ));
        let here = std::env::current_exe().unwrap();
        let existing = format!("sqlite:{}", here.display());
        assert!(matches!(
            StoreArg::from_options(&existing, None),
            Err(CliError::SqliteExists { .. })
        ));
    }
}
