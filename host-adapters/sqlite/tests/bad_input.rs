//! Hostile and extreme input against SQLite: ids that would break inlined
//! SQL or `LIKE` patterns are stored verbatim and never collide; NUL is
//! refused with a typed input error before anything is written; a 16 MB
//! payload round-trips.

mod common;

use std::collections::BTreeSet;

use common::files::{self, raw};
use common::{AT, TempDir, kernel, object};
use loomfence_core::{IdError, InputError, KernelKind, NewEvent, ParkExpectation};
use loomfence_sqlite::SqliteEventStore;
use loomfence_store::{EventStore, StoreError};
use serde_json::json;

/// Ids that must be stored and read back byte for byte, each its own
/// execution.
fn awkward_ids() -> Vec<String> {
    let mut ids: Vec<String> = [
        "it's",
        "''",
        "say \"hi\"",
        "\"",
        "back\\slash",
        "\\",
        "\\'",
        "a%",
        "ab",
        "a_",
        "a\\%",
        "%",
        "_",
        "*",
        "a*",
        "[a]",
        "?",
        "'; DROP TABLE events; --",
        "x'); DROP TABLE fences; --",
        "\" OR 1=1 --",
        "?1",
        ":id",
        "@id",
        "$id",
        "a",
        "A",
        "a ",
        " a",
        "tab\there",
        "line\nbreak",
        "\u{7f}",
        "日本語-🦀",
        "é",
        "e\u{301}",
        "ß",
        "ss",
        "\u{202e}rtl",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    ids.push("x".repeat(255));
    ids.push(format!("{}x", "é".repeat(127)));
    ids.push(format!("{}xyz", "🦀".repeat(63)));
    for id in &ids[ids.len() - 3..] {
        assert_eq!(id.len(), 255);
    }
    ids
}

/// A store on a fresh file, and the directory holding it.
async fn fresh(label: &str) -> (SqliteEventStore, TempDir) {
    let dir = TempDir::new(label);
    let store = common::open(&dir.file("store.db")).await;
    (store, dir)
}

/// Every awkward id round-trips verbatim, and none collides with another:
/// not `a%` with `ab`, not `a_` with `ab`, not `é` with its decomposed
/// form, not `a` with `A` or `a `. Tokens and deletes stay per id too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awkward_ids_round_trip_verbatim_and_never_collide() {
    let (store, dir) = fresh("ids").await;
    let ids = awkward_ids();
    assert_eq!(
        ids.iter().collect::<BTreeSet<_>>().len(),
        ids.len(),
        "distinct ids"
    );
    for id in &ids {
        store
            .append_many(
                id,
                vec![
                    kernel(KernelKind::ExecutionStarted).with_payload(object(json!({ "id": id }))),
                    kernel(KernelKind::ExecutionSuspended),
                ],
            )
            .await
            .unwrap_or_else(|e| panic!("{id:?}: {e}"));
    }
    for id in &ids {
        let log = store.read_range(id, 1, None).await.expect("reads");
        assert_eq!(log.len(), 2, "{id:?} has exactly its own two events");
        assert!(log.iter().all(|e| e.execution_id.as_str() == id), "{id:?}");
        assert_eq!(log[0].payload["id"], json!(id), "{id:?}");
    }
    let stored: BTreeSet<String> = {
        let conn = raw(&dir.file("store.db"));
        let mut statement = conn
            .prepare("SELECT DISTINCT execution_id FROM events")
            .expect("prepares");
        statement
            .query_map([], |row| row.get(0))
            .expect("queries")
            .collect::<Result<_, _>>()
            .expect("reads the table")
    };
    assert_eq!(
        stored,
        ids.iter().cloned().collect::<BTreeSet<_>>(),
        "the table holds exactly these ids, byte for byte"
    );
    let tables: i64 = raw(&dir.file("store.db"))
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('events', 'fences')",
            [],
            |row| row.get(0),
        )
        .expect("reads the catalog");
    assert_eq!(tables, 2, "no injected DROP ran");

    assert_eq!(store.acquire_fence("a%").await.expect("acquires"), 1);
    assert_eq!(
        store
            .acquire_fence_if(
                "a_",
                ParkExpectation {
                    fence: 0,
                    park_seq: 2
                }
            )
            .await
            .expect("acquires")
            .fence(),
        1
    );
    assert_eq!(store.acquire_fence("a*").await.expect("acquires"), 1);
    for untouched in ["ab", "a", "A", "e\u{301}", "*", "%", "_"] {
        assert_eq!(
            store.current_fence(untouched).await.expect("reads"),
            0,
            "{untouched:?} shares no token with a look-alike"
        );
    }
    assert!(store.delete_execution("é").await.expect("deletes"));
    assert!(store.delete_execution("a").await.expect("deletes"));
    assert!(store.delete_execution("%").await.expect("deletes"));
    for kept in ["e\u{301}", "A", "a ", " a", "ab", "a%", "a_"] {
        assert_eq!(
            store.read_range(kept, 1, None).await.expect("reads").len(),
            2,
            "{kept:?} survives the deletes of its look-alikes"
        );
    }
    let too_long = "x".repeat(256);
    assert!(matches!(
        store
            .append(&too_long, kernel(KernelKind::ExecutionStarted))
            .await,
        Err(StoreError::Input(InputError::Id(IdError::TooLong {
            len: 256
        })))
    ));
}

/// A NUL in an id, a kind, or any key or string of a payload or metadata
/// is refused with a typed input error by every operation, and nothing is
/// written, even when only one event of a batch has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nul_is_refused_as_input_and_nothing_is_written() {
    let (store, dir) = fresh("nul").await;
    let target = "nul-target";
    let park_seq = common::park(&store, target).await;
    let before = common::witness(&store, target).await;
    let counts = files::row_counts(&dir.file("store.db"));

    let bad_id = "a\0b";
    let id_refusals = [
        store
            .append(bad_id, kernel(KernelKind::ExecutionStarted))
            .await
            .map(|_| ()),
        store
            .append_many(bad_id, vec![kernel(KernelKind::ExecutionStarted)])
            .await
            .map(|_| ()),
        store
            .append_if_parked(bad_id, 1, vec![kernel(KernelKind::ExecutionResumed)])
            .await
            .map(|_| ()),
        store.read_range(bad_id, 1, None).await.map(|_| ()),
        store.current_fence(bad_id).await.map(|_| ()),
        store.acquire_fence(bad_id).await.map(|_| ()),
        store
            .acquire_fence_if(
                bad_id,
                ParkExpectation {
                    fence: 0,
                    park_seq: 1,
                },
            )
            .await
            .map(|_| ()),
        store.delete_execution(bad_id).await.map(|_| ()),
    ];
    for (index, refused) in id_refusals.into_iter().enumerate() {
        assert!(
            matches!(
                refused,
                Err(StoreError::Input(InputError::Id(IdError::Nul { at: 1 })))
            ),
            "operation {index}: {refused:?}"
        );
    }

    let bad_events = [
        kernel(KernelKind::ExecutionResumed).with_payload(object(json!({ "s": "a\u{0}b" }))),
        kernel(KernelKind::ExecutionResumed).with_payload(object(json!({ "k\u{0}": 1 }))),
        kernel(KernelKind::ExecutionResumed)
            .with_payload(object(json!({ "deep": [{ "deeper": ["ok", "\u{0}"] }] }))),
        kernel(KernelKind::ExecutionResumed).with_meta("note", json!("\u{0}")),
        NewEvent::new("APP\u{0}KIND", AT),
    ];
    for (index, bad) in bad_events.into_iter().enumerate() {
        let alone = store.append(target, bad.clone()).await;
        assert!(
            matches!(
                alone,
                Err(StoreError::Input(InputError::Event { index: 0, .. }))
            ),
            "event {index} alone: {alone:?}"
        );
        let second = store
            .append_many(target, vec![kernel(KernelKind::StepStarted), bad.clone()])
            .await;
        assert!(
            matches!(
                second,
                Err(StoreError::Input(InputError::Event { index: 1, .. }))
            ),
            "event {index} second in a batch: {second:?}"
        );
        let conditional = store.append_if_parked(target, park_seq, vec![bad]).await;
        assert!(
            matches!(conditional, Err(StoreError::Input(_))),
            "event {index} conditionally: {conditional:?}"
        );
    }
    assert_eq!(common::witness(&store, target).await, before);
    assert_eq!(
        files::row_counts(&dir.file("store.db")),
        counts,
        "no row anywhere"
    );
}

/// A 16 MB payload, with quotes, backslashes, control characters and
/// non-ASCII throughout, round-trips byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_16_mb_payload_round_trips_verbatim() {
    let (store, _dir) = fresh("sixteen").await;
    let id = "sixteen-mb";
    common::park(&store, id).await;
    let unit = "quote\" back\\slash tab\t nl\n é 日本 🦀 \u{1} ";
    let blob = unit.repeat(16 * 1024 * 1024 / unit.len() + 1);
    assert!(blob.len() >= 16 * 1024 * 1024);
    let payload = object(json!({
        "blob": blob,
        "numbers": [0, -1, 9_007_199_254_740_991_u64, 1.5, -0.25],
        "nested": { "empty": {}, "list": [], "null": null, "bool": false },
    }));
    let written = store
        .append(
            id,
            kernel(KernelKind::ExecutionResumed).with_payload(payload.clone()),
        )
        .await
        .expect("appends 16 MB");
    assert_eq!(written.sequence, 3);
    let log = store.read_range(id, 3, Some(3)).await.expect("reads");
    assert_eq!(log.len(), 1);
    assert!(log[0].payload == payload, "the payload comes back verbatim");
}
