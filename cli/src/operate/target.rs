//! `--store` and `--schema` of a command that only reads an existing store
//! (`loomfence inspect`, `loomfence timers`): checked once, opened as it is.

use loomfence_postgres::Schema;

use crate::error::CliError;
use crate::store::{ExistingStore, StoreArg};

/// PostgreSQL connections: a reading command makes one call at a time.
const POOL_SIZE: usize = 2;

/// The existing store a reading command works on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    /// The store; an SQLite file must exist (see [`StoreArg::existing`]).
    pub(crate) store: StoreArg,
    /// `--schema` (PostgreSQL only); `None` is the adapter's default.
    pub(crate) schema: Option<Schema>,
}

impl Target {
    /// Checks `--store` and `--schema` (bad options: exit 2).
    pub(crate) fn parse(store: &str, schema: Option<String>) -> Result<Self, CliError> {
        let store = StoreArg::existing(store)?;
        let schema = match schema {
            None => None,
            Some(_) if !store.is_postgres() => {
                return Err(CliError::OnlyForStore {
                    option: "schema",
                    store: "postgres:URL",
                });
            }
            Some(name) => Some(Schema::new(name).map_err(|e| CliError::bad_value("schema", &e))?),
        };
        Ok(Self { store, schema })
    }

    /// Opens the store as it is: nothing is created, dropped or removed (a
    /// store that is not a usable loomfence store exits 2).
    pub(crate) async fn open(&self) -> Result<ExistingStore, CliError> {
        self.store
            .open_existing(self.schema.as_ref(), POOL_SIZE)
            .await
    }

    /// The store as output names it: with its schema on PostgreSQL, never
    /// with a password.
    pub(crate) fn shown(&self) -> String {
        match (&self.store, &self.schema) {
            (StoreArg::Postgres { .. }, Some(schema)) => {
                format!("{} (schema {schema})", self.store)
            }
            (StoreArg::Postgres { .. }, None) => {
                format!("{} (schema {})", self.store, Schema::default())
            }
            _ => self.store.to_string(),
        }
    }

    /// A note for a store in memory, which is new and empty when opened
    /// from outside its process; `None` for the others.
    pub(crate) fn in_memory_note(&self) -> Option<String> {
        self.store.is_in_memory().then(|| {
            format!(
                "note: --store {} is a new, empty store (a store in memory cannot be reached from outside its process)",
                self.store
            )
        })
    }
}
