//! A file that is not an SQLite database, or is a damaged one, gets a typed
//! error and is left as it was: the store never "repairs" or initialises a
//! file it cannot read. Where the damage is past what opening reads, opening
//! may succeed; then the first read or write of a damaged page fails with a
//! permanent (not retryable) backend error.

mod common;

use std::path::Path;

use common::files::{Rng, bytes, side_files};
use common::{TempDir, kernel, object};
use loomfence_core::{KernelKind, ParkExpectation};
use loomfence_sqlite::{OpenError, SqliteEventStore, SqliteOptions};
use loomfence_store::{EventStore, StoreError};
use serde_json::json;

/// SQLite's default page size, which the store keeps.
const PAGE: usize = 4096;

/// Writes a real database with enough rows to fill many pages, closes it
/// (which checkpoints the WAL and removes the side files) and returns its
/// bytes.
async fn real_database(path: &Path) -> Vec<u8> {
    {
        let store = common::open(path).await;
        let filler = "x".repeat(1000);
        for execution in 0..40 {
            let id = common::id(&format!("real-{execution}"));
            common::park(&store, &id).await;
            let first = store
                .acquire_fence_if(
                    &id,
                    ParkExpectation {
                        fence: 0,
                        park_seq: 2,
                    },
                )
                .await
                .expect("acquires");
            assert!(first.is_acquired());
            for n in 0..4 {
                store
                    .append(
                        &id,
                        kernel(KernelKind::StepStarted)
                            .with_fence(1)
                            .with_payload(object(json!({ "n": n, "filler": filler }))),
                    )
                    .await
                    .expect("appends");
            }
        }
    }
    assert!(
        side_files(path).is_empty(),
        "closing the store removes its side files: {:?}",
        side_files(path)
    );
    let real = bytes(path);
    assert!(real.len() > 20 * PAGE, "many pages: {}", real.len());
    real
}

/// How one refused file fared.
struct Refusal {
    /// The case.
    case: &'static str,
    /// The error, for the report.
    error: String,
    /// The side files found after the refusal.
    side_files: Vec<(String, u64)>,
}

/// Writes `contents` to a fresh file, opens it, and checks the open is
/// refused with an error `expected` accepts, the file is byte for byte the
/// same, and no side file is left next to it.
async fn refused(
    dir: &TempDir,
    case: &'static str,
    contents: &[u8],
    expected: impl Fn(&OpenError) -> bool,
) -> Refusal {
    let path = dir.file(&format!("{case}.db"));
    std::fs::write(&path, contents).expect("writes the file");
    let error = match SqliteEventStore::open(&path, SqliteOptions::default()).await {
        Ok(_) => panic!("{case}: the store opened a file it must refuse"),
        Err(error) => error,
    };
    assert!(expected(&error), "{case}: unexpected error {error:?}");
    assert!(!error.is_retryable(), "{case}: {error:?} is not retryable");
    assert!(bytes(&path) == contents, "{case}: the refused file changed");
    let side_files = side_files(&path);
    assert_eq!(
        side_files,
        Vec::<(String, u64)>::new(),
        "{case}: side files left next to a refused file"
    );
    Refusal {
        case,
        error: format!("{error:?}"),
        side_files,
    }
}

/// Files that are not SQLite databases, or whose header is damaged, are
/// refused with a typed error and left untouched, with no side file next to
/// them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_and_truncated_files_are_refused_untouched() {
    let dir = TempDir::new("corrupt");
    let real = real_database(&dir.file("real.db")).await;
    let mut rng = Rng::new(0x5eed_1234);
    let not_a_database = |e: &OpenError| matches!(e, OpenError::NotADatabase { .. });

    let mut refusals = Vec::new();
    let text = "this is a plain text file, not a database\n".repeat(200);
    refusals.push(refused(&dir, "text", text.as_bytes(), not_a_database).await);

    let mut garbage = vec![0_u8; 16 * PAGE];
    rng.fill(&mut garbage);
    refusals.push(refused(&dir, "random-bytes", &garbage, not_a_database).await);

    // The magic string survives in 50 bytes; the rest of the header and
    // the schema page do not.
    refusals.push(
        refused(&dir, "truncated-header", &real[..50], |e| {
            matches!(
                e,
                OpenError::NotADatabase { .. } | OpenError::Corrupt { .. }
            )
        })
        .await,
    );

    let mut clobbered = real.clone();
    clobbered[..16].copy_from_slice(b"Not SQLite at 3\0");
    refusals.push(refused(&dir, "clobbered-magic", &clobbered, not_a_database).await);

    for refusal in &refusals {
        println!(
            "refused {}: {} (side files after: {:?}); bytes unchanged",
            refusal.case, refusal.error, refusal.side_files
        );
    }
}

/// A real database whose pages after the first are garbage: opening reads
/// only the header and the schema page, so it may succeed, but every read
/// and write that touches a damaged page fails with a permanent backend
/// error, and nothing is "repaired" into the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_pages_give_a_permanent_backend_error() {
    let dir = TempDir::new("damaged");
    let path = dir.file("damaged.db");
    let mut damaged = real_database(&path).await;
    let mut rng = Rng::new(0xbad_9a6e);
    rng.fill(&mut damaged[PAGE..]);
    std::fs::write(&path, &damaged).expect("damages the file");

    let store = match SqliteEventStore::open(&path, SqliteOptions::default()).await {
        Ok(store) => store,
        Err(error) => {
            assert!(
                matches!(
                    error,
                    OpenError::Corrupt { .. } | OpenError::NotADatabase { .. }
                ),
                "{error:?}"
            );
            assert!(bytes(&path) == damaged, "the refused file changed");
            assert!(side_files(&path).is_empty(), "{:?}", side_files(&path));
            println!("damaged pages: refused at open: {error:?}");
            return;
        }
    };
    let id = &common::id("real-3");
    let outcomes = [
        (
            "read_range",
            store.read_range(id, 1, None).await.map(|_| ()),
        ),
        ("current_fence", store.current_fence(id).await.map(|_| ())),
        (
            "append",
            store
                .append(id, kernel(KernelKind::StepStarted).with_fence(1))
                .await
                .map(|_| ()),
        ),
        (
            "acquire_fence_if",
            store
                .acquire_fence_if(
                    id,
                    ParkExpectation {
                        fence: 1,
                        park_seq: 2,
                    },
                )
                .await
                .map(|_| ()),
        ),
        ("acquire_fence", store.acquire_fence(id).await.map(|_| ())),
        (
            "delete_execution",
            store.delete_execution(id).await.map(|_| ()),
        ),
    ];
    for (operation, outcome) in outcomes {
        match outcome {
            Err(StoreError::Backend(backend)) => {
                assert!(
                    !backend.retryable,
                    "{operation}: damage is permanent: {backend}"
                );
                println!("damaged pages: {operation} -> {backend}");
            }
            other => {
                panic!("{operation} on a damaged page: expected a backend error, got {other:?}")
            }
        }
    }
    drop(store);
    // The store was opened, so its (empty) WAL and index may be left beside
    // the file; the main file itself must be as it was.
    println!(
        "damaged pages: opened; side files after close: {:?}",
        side_files(&path)
    );
    assert!(bytes(&path) == damaged, "the damaged file was written to");
}

/// Garbage in the last quarter of the pages only: every execution reads
/// back either exactly what was written or a permanent backend error, never
/// other rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damage_in_some_pages_never_returns_wrong_rows() {
    let dir = TempDir::new("partly");
    let path = dir.file("partly.db");
    let mut damaged = real_database(&path).await;
    let from = (damaged.len() / PAGE * 3 / 4) * PAGE;
    let mut rng = Rng::new(0x0dd_5eed);
    rng.fill(&mut damaged[from..]);
    std::fs::write(&path, &damaged).expect("damages the file");

    let store = common::open(&path).await;
    let (mut intact, mut failed) = (0, 0);
    for execution in 0..40 {
        let id = format!("real-{execution}");
        match store.read_range(&common::id(&id), 1, None).await {
            Ok(log) => {
                let steps: Vec<_> = log[2..].iter().map(|e| e.payload["n"].clone()).collect();
                assert_eq!(log.len(), 6, "{id}: all its rows or an error");
                assert!(log.iter().all(|e| e.execution_id.as_str() == id));
                assert_eq!(steps, [json!(0), json!(1), json!(2), json!(3)], "{id}");
                intact += 1;
            }
            Err(StoreError::Backend(backend)) if !backend.retryable => failed += 1,
            Err(other) => panic!("{id}: expected rows or a permanent backend error, got {other:?}"),
        }
    }
    println!(
        "damage in the last quarter of the pages: {intact} executions read back intact, {failed} failed permanently"
    );
    assert!(failed > 0, "the damage was found");
}
