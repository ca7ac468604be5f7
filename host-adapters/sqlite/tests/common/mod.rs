//! Helpers the SQLite-specific tests share: temporary directories, events,
//! parks, raw looks at the file beside the store, and (in [`child`]) the
//! test binary re-run as a helper process.

#![allow(dead_code, unreachable_pub, unused_imports)]

pub mod child;
pub mod files;

use std::path::Path;

use loomfence_sqlite::{SqliteEventStore, SqliteOptions};

pub use files::TempDir;
pub use loomfence_conformance::support::{AT, Witness, id, kernel, object, park};

/// A runtime for a test that also does blocking work (child processes,
/// raw connections) between store calls.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Opens the store at `path` with the default options.
pub async fn open(path: &Path) -> SqliteEventStore {
    SqliteEventStore::open(path, SqliteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()))
}
