//! Appends and reads: sequences, batches, ranges and verbatim storage.

use loomfence_core::Capability;
use loomfence_core::{KernelKind, ParkExpectation};
use loomfence_store::StoreError;
use serde_json::json;

use crate::Store;
use crate::support::{AT, event, id, kernel, object, park};

/// Single appends get 1, 2, 3 and the envelope echoes the event exactly.
pub async fn sequences_start_at_one_and_echo_the_event(store: Store) {
    let id = &id("append-echo");
    for expected in 1..=3_u64 {
        let written = event("app.output")
            .with_payload(object(json!({ "n": expected })))
            .with_meta("trace", json!("t-1"));
        let stored = store.append(id, written.clone()).await.expect("appends");
        assert_eq!(stored.sequence, expected);
        assert_eq!(&stored.execution_id, id);
        assert_eq!(
            (stored.kind, stored.payload, stored.metadata, stored.at),
            (written.kind, written.payload, written.metadata, written.at)
        );
    }
}

/// A batch takes the next contiguous sequences and reads back in order.
pub async fn batches_are_contiguous(store: Store) {
    let id = &id("append-batch");
    store.append(id, event("first")).await.expect("appends");
    let batch = store
        .append_many(id, vec![event("a"), event("b"), event("c")])
        .await
        .expect("appends a batch");
    let sequences: Vec<u64> = batch.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, [2, 3, 4]);
    let log = store.read_range(id, 1, None).await.expect("reads");
    let kinds: Vec<&str> = log.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["first", "a", "b", "c"]);
    assert_eq!(&log[1..], &batch[..]);
}

/// An empty batch is a no-op, not an error, and creates nothing.
pub async fn an_empty_batch_writes_nothing(store: Store) {
    let id = &id("append-empty");
    let written = store.append_many(id, Vec::new()).await.expect("accepts");
    assert!(written.is_empty());
    assert!(
        store
            .read_range(id, 1, None)
            .await
            .expect("reads")
            .is_empty()
    );
    let next = store.append(id, event("x")).await.expect("appends");
    assert_eq!(next.sequence, 1);
}

/// `read_range` is inclusive at both ends, clamps to the log, and reads an
/// unknown execution as empty.
pub async fn read_range_bounds_are_inclusive(store: Store) {
    let never = &id("append-never-written");
    let id = &id("append-range");
    let names = ["e1", "e2", "e3", "e4", "e5"];
    store
        .append_many(id, names.iter().map(|n| event(n)).collect())
        .await
        .expect("appends");
    let seqs = |events: Vec<loomfence_core::Envelope>| {
        events.iter().map(|e| e.sequence).collect::<Vec<_>>()
    };
    let read = |from, to| {
        let store = store.clone();
        let id = id.clone();
        async move { store.read_range(&id, from, to).await.expect("reads") }
    };
    assert_eq!(seqs(read(2, Some(4)).await), [2, 3, 4]);
    assert_eq!(seqs(read(4, None).await), [4, 5]);
    assert_eq!(seqs(read(0, Some(1)).await), [1]);
    assert_eq!(seqs(read(5, Some(99)).await), [5]);
    assert!(read(6, None).await.is_empty());
    assert!(read(3, Some(2)).await.is_empty());
    assert!(
        store
            .read_range(never, 1, None)
            .await
            .expect("reads")
            .is_empty()
    );
}

/// Payloads, metadata, kinds and ids come back exactly as written: quotes,
/// backslashes, unicode, nesting and extreme numbers included.
pub async fn payloads_round_trip_verbatim(store: Store) {
    let text = "append-verbatim 'quoted' \"double\" \\back\\ é 🦀 ; DROP TABLE events; --";
    let id = &id(text);
    let payload = object(json!({
        "text": "it's \"quoted\" \\ and \u{1F980} and \u{7f}",
        "nested": { "list": [1, -2, 3.5, true, null, [], {}], "empty": "" },
        "big": 18_446_744_073_709_551_615_u64,
        "small": -9_223_372_036_854_775_808_i64,
        "float": 1.5e300,
        "sql": "'); DELETE FROM fences; --",
    }));
    let written = event("kind with spaces & 'quotes'")
        .with_payload(payload)
        .with_meta("host", json!({ "node": "n-1", "attempt": 2 }));
    store.append(id, written.clone()).await.expect("appends");
    let read = store.read_range(id, 1, None).await.expect("reads");
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].execution_id.as_str(), text);
    assert_eq!(read[0].kind, written.kind);
    assert_eq!(read[0].payload, written.payload);
    assert_eq!(read[0].metadata, written.metadata);
    assert_eq!(read[0].at, AT);
}

/// A store refuses exactly the operations its capability leaves out, with
/// [`StoreError::Unsupported`], and its unsupported calls change nothing.
pub async fn capability_is_honest(store: Store) {
    let id = &id("append-capability");
    let park_seq = park(&*store, id).await;
    let capability = store.capability();
    let acquired = store.acquire_fence(id).await;
    match (capability.fences(), acquired) {
        (true, Ok(token)) => assert_eq!(token, 1),
        (
            false,
            Err(StoreError::Unsupported {
                operation,
                capability: c,
            }),
        ) => {
            assert_eq!((operation, c), ("acquire_fence", capability));
        }
        (fences, other) => {
            panic!("capability {capability:?} (fences: {fences}) but acquire_fence gave {other:?}")
        }
    }
    let expect = ParkExpectation {
        fence: store.current_fence(id).await.expect("reads"),
        park_seq,
    };
    let conditional = store.acquire_fence_if(id, expect).await;
    match (capability, conditional) {
        (Capability::Conditional, Ok(outcome)) => assert!(outcome.is_acquired(), "{outcome:?}"),
        (
            Capability::FencingOnly | Capability::NonFencing,
            Err(StoreError::Unsupported { operation, .. }),
        ) => {
            assert_eq!(operation, "acquire_fence_if");
        }
        (_, other) => panic!("capability {capability:?} but acquire_fence_if gave {other:?}"),
    }
    if !capability.fences() {
        assert_eq!(store.current_fence(id).await.expect("reads"), 0);
        // Without tokens nothing is ever stale: an unfenced resume lands.
        store
            .append(id, kernel(KernelKind::ExecutionResumed))
            .await
            .expect("a non-fencing store never refuses for staleness");
    }
}
