//! `--store` and `--schema` of a command that only reads a kept store
//! (`loomfence inspect`, `loomfence timers`): checked once
//! ([`KeptStore`]), opened read-only.

use crate::error::CliError;
use crate::store::{ExistingStore, KeptStore};

/// PostgreSQL connections: a reading command makes one call at a time.
const POOL_SIZE: usize = 2;

/// The kept store a reading command works on.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// The store and its schema, checked.
    kept: KeptStore,
}

impl Target {
    /// Checks `--store` and `--schema` (bad options: exit 2).
    pub(crate) fn parse(store: &str, schema: Option<String>) -> Result<Self, CliError> {
        Ok(Self {
            kept: KeptStore::parse(store, schema)?,
        })
    }

    /// Opens the store read-only: nothing is created, migrated, dropped or
    /// removed, and every write would fail (a store that is not a usable
    /// loomfence store, or that needs a migration, exits 2).
    pub(crate) async fn open(&self) -> Result<ExistingStore, CliError> {
        self.kept.open_read_only(POOL_SIZE).await
    }

    /// The store as output names it (see [`KeptStore::shown`]).
    pub(crate) fn shown(&self) -> String {
        self.kept.shown()
    }

    /// A note for a store in memory, which is new and empty when opened
    /// from outside its process; `None` for the others.
    pub(crate) fn in_memory_note(&self) -> Option<String> {
        self.kept.store.is_in_memory().then(|| {
            format!(
                "note: --store {} is a new, empty store (a store in memory cannot be reached from outside its process)",
                self.kept.store
            )
        })
    }
}
