//! Helpers the SQLite-specific tests share: temporary directories, events,
//! parks, raw looks at the file beside the store, and (in [`child`]) the
//! test binary re-run as a helper process.

#![allow(dead_code, unreachable_pub)]

pub mod child;
pub mod files;

use std::path::Path;

use loomfence_core::{Envelope, JsonObject, KernelKind, NewEvent};
use loomfence_sqlite::{SqliteEventStore, SqliteOptions};
use loomfence_store::EventStore;
use serde_json::Value;

pub use files::TempDir;

/// The timestamp test events carry; the kernel never reads a clock.
pub const AT: i64 = 1_700_000_000_000;

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

/// An unfenced kernel event.
pub fn kernel(kind: KernelKind) -> NewEvent {
    NewEvent::kernel(kind, AT)
}

/// A JSON object from a `json!` literal.
pub fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Starts `id` and parks it, unfenced, in one batch; returns the park's
/// sequence.
pub async fn park(store: &impl EventStore, id: &str) -> u64 {
    let written = store
        .append_many(
            id,
            vec![
                kernel(KernelKind::ExecutionStarted),
                kernel(KernelKind::ExecutionSuspended),
            ],
        )
        .await
        .expect("starting and parking a fresh execution");
    written[1].sequence
}

/// Everything observable about one execution: its whole log and its token.
pub async fn witness(store: &impl EventStore, id: &str) -> (Vec<Envelope>, u64) {
    (
        store.read_range(id, 1, None).await.expect("reads the log"),
        store.current_fence(id).await.expect("reads the token"),
    )
}
