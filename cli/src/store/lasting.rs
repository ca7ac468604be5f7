//! `loomfence init`'s path: make a lasting store, or bring an existing
//! loomfence store up to date, and touch nothing else.
//!
//! - `sqlite:PATH`: a missing file (its directory must exist, and no `-wal`,
//!   `-shm` or `-journal` may be left beside it) is created and migrated; an
//!   existing file is first opened read-only, which writes nothing: a
//!   loomfence store of this build's schema is left as it is ("up to
//!   date"), one that needs a migration is opened by the adapter's writer,
//!   which migrates it, and everything else is refused unchanged: an empty
//!   (0-byte) file, an SQLite database with no loomfence schema, another
//!   application's database, a damaged file, a text file, a newer store.
//! - `postgres:URL --schema S`: a missing schema, or one that exists and
//!   holds no table, view or sequence, is made a store (the adapter's
//!   `migrate`); a schema with loomfence's migrations ledger is migrated
//!   (idempotent; its data untouched); a schema holding anything else is
//!   refused, untouched.
//! - `memory`, `sqlite::memory:`: refused, nothing would last.

use std::io;
use std::path::Path;

use loomfence_postgres::{PostgresEventStore, PostgresOptions, Schema};
use loomfence_sqlite::{OpenError, SqliteEventStore, SqliteOptions};

use super::StoreArg;
use super::sqlite_file::SqliteTarget;
use crate::error::CliError;

/// What `init` found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Initialized {
    /// Whether there was no store before (a new file or schema, or an
    /// empty schema).
    pub(crate) created: bool,
    /// Whether the store's schema was changed: created, or brought from an
    /// older version (or, on SQLite, given an object this build adds).
    pub(crate) migrated: bool,
    /// The schema version now in place.
    pub(crate) version: i64,
}

impl StoreArg {
    /// Reads `--store` for `loomfence init`: a store in memory is refused
    /// (nothing would last); the rest is looked at by [`init`](Self::init).
    pub(crate) fn lasting(store: &str) -> Result<Self, CliError> {
        let parsed: StoreArg = store.parse()?;
        if parsed.is_in_memory() {
            return Err(CliError::Ephemeral {
                store: parsed.to_string(),
            });
        }
        Ok(parsed)
    }

    /// Creates and migrates a store, or migrates an existing loomfence
    /// store, as the module's docs say. `schema` is PostgreSQL's (the
    /// adapter's default when `None`).
    pub(crate) async fn init(&self, schema: Option<&Schema>) -> Result<Initialized, CliError> {
        match self {
            StoreArg::Memory => Err(CliError::Ephemeral {
                store: self.to_string(),
            }),
            StoreArg::Sqlite { target, .. } => match target {
                SqliteTarget::Memory => Err(CliError::Ephemeral {
                    store: self.to_string(),
                }),
                SqliteTarget::File(path) => init_sqlite(target, path).await,
            },
            StoreArg::Postgres { url, .. } => {
                init_postgres(self, url, schema.cloned().unwrap_or_default()).await
            }
        }
    }
}

/// `init` on an SQLite file.
async fn init_sqlite(target: &SqliteTarget, path: &Path) -> Result<Initialized, CliError> {
    let shown = path.display().to_string();
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // Exactly what a run's new file needs: the directory exists,
            // nothing is there, no companion is left to replay.
            target.check()?;
            let (store, created) = target.open(loomfence_sqlite::Durability::Full).await?;
            drop(store);
            debug_assert!(created.is_some());
            Ok(Initialized {
                created: true,
                migrated: true,
                version: loomfence_sqlite::SCHEMA_VERSION,
            })
        }
        Err(e) => Err(CliError::SqliteUnusable {
            path: shown,
            reason: e.to_string(),
        }),
        Ok(meta) if !meta.is_file() => Err(CliError::SqliteNotAFile { path: shown }),
        // An empty file is refused, not adopted: SQLite would read it as a
        // new database, but a store truncated to nothing, or a placeholder
        // another program made, looks the same (see docs/decisions.md).
        Ok(meta) if meta.len() == 0 => Err(CliError::SqliteEmpty { path: shown }),
        Ok(_) => {
            // Read-only first: it writes nothing, whatever the file is.
            match SqliteEventStore::open_read_only(path, SqliteOptions::default()).await {
                Ok(store) => {
                    drop(store);
                    Ok(Initialized {
                        created: false,
                        migrated: false,
                        version: loomfence_sqlite::SCHEMA_VERSION,
                    })
                }
                Err(OpenError::NeedsMigration {
                    found: 0, needs, ..
                }) => Err(CliError::NotAStore {
                    store: target.to_string(),
                    reason: format!("an SQLite database with {needs}"),
                }),
                Err(OpenError::NeedsMigration { .. }) => {
                    // A loomfence store of an older schema: the writer's
                    // open migrates it, or refuses it unchanged.
                    drop(SqliteEventStore::open(path, SqliteOptions::default()).await?);
                    Ok(Initialized {
                        created: false,
                        migrated: true,
                        version: loomfence_sqlite::SCHEMA_VERSION,
                    })
                }
                Err(other) => Err(other.into()),
            }
        }
    }
}

/// What a PostgreSQL schema holds, as `init` judges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// No schema, or one with no table, view or sequence.
    Nothing,
    /// loomfence's migrations ledger, at this version.
    Store(i64),
    /// This many tables, views or sequences, and no loomfence ledger.
    Foreign(i64),
}

/// `init` on a PostgreSQL schema.
async fn init_postgres(arg: &StoreArg, url: &str, schema: Schema) -> Result<Initialized, CliError> {
    let store = PostgresEventStore::connect(
        url,
        PostgresOptions {
            schema: schema.clone(),
            pool_size: 2,
            // Looked at first: migrating would adopt whatever is there.
            migrate_on_connect: false,
            ..PostgresOptions::default()
        },
    )
    .await
    .map_err(CliError::postgres("PostgreSQL"))?;
    let found = look(&store).await?;
    let created = match found {
        Found::Foreign(relations) => {
            return Err(CliError::NotAStore {
                store: format!("{arg} --schema {schema}"),
                reason: format!(
                    "schema {schema} exists and holds {relations} tables, views or sequences but no loomfence migrations ledger: another application's"
                ),
            });
        }
        Found::Nothing => true,
        Found::Store(_) => false,
    };
    let report = store
        .migrate()
        .await
        .map_err(CliError::postgres("PostgreSQL"))?;
    let migrated = match found {
        Found::Store(version) => version < report.version,
        _ => true,
    };
    Ok(Initialized {
        created,
        migrated,
        version: report.version,
    })
}

/// What the store's schema holds, from the catalog and the ledger.
async fn look(store: &PostgresEventStore) -> Result<Found, CliError> {
    let failed = |e: &dyn std::fmt::Display| {
        CliError::postgres("PostgreSQL")(loomfence_store::BackendError::permanent(format!(
            "looking at schema {}: {e}",
            store.schema()
        )))
    };
    let schema = store.schema().as_str();
    let client = store.pool().get().await.map_err(|e| failed(&e))?;
    let row = client
        .query_one(
            "SELECT \
               (SELECT count(*) FROM pg_catalog.pg_class c \
                  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')), \
               (SELECT count(*) FROM pg_catalog.pg_attribute a \
                  JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
                  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relname = 'migrations' AND c.relkind = 'r' \
                   AND a.attname IN ('name', 'detail') AND NOT a.attisdropped)",
            &[&schema],
        )
        .await
        .map_err(|e| failed(&e))?;
    let relations: i64 = row.get(0);
    let ledger_columns: i64 = row.get(1);
    if relations == 0 {
        return Ok(Found::Nothing);
    }
    if ledger_columns < 2 {
        return Ok(Found::Foreign(relations));
    }
    let version = client
        .query_opt(
            &format!("SELECT detail::text FROM {schema}.migrations WHERE name = 'schema-version'"),
            &[],
        )
        .await
        .map_err(|e| failed(&e))?
        .and_then(|row| row.get::<_, Option<String>>(0))
        .and_then(|detail| detail.parse::<i64>().ok());
    Ok(match version {
        Some(version) => Found::Store(version),
        None => Found::Foreign(relations),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_in_memory_are_refused() {
        for store in ["memory", "sqlite::memory:"] {
            assert!(
                matches!(StoreArg::lasting(store), Err(CliError::Ephemeral { .. })),
                "{store}"
            );
        }
        assert!(StoreArg::lasting("sqlite:x.db").is_ok());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_file_is_created_then_found_up_to_date() {
        let dir = std::env::temp_dir().join(format!("loomfence-cli-init-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let arg = StoreArg::lasting(&format!("sqlite:{}", dir.join("s.db").display())).unwrap();
        let first = arg.init(None).await.unwrap();
        assert!(first.created && first.migrated);
        let again = arg.init(None).await.unwrap();
        assert!(!again.created && !again.migrated);
        assert_eq!(again.version, loomfence_sqlite::SCHEMA_VERSION);
        super::super::sqlite_file::remove(&dir.join("s.db")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
