//! Concurrent appenders: sequences stay contiguous and unique.

use std::collections::BTreeMap;
use std::sync::Arc;

use loomfence_core::{Envelope, ExecutionId};
use serde_json::json;
use tokio::sync::Barrier;

use crate::Store;
use crate::support::{event, id, object};

/// Writers started together.
const WRITERS: usize = 8;

/// Runs `WRITERS` tasks that each call `write(store, id, writer, round)`
/// for `rounds` rounds, and returns every envelope they were handed back.
async fn race_writers<F, Fut>(
    store: &Store,
    id: &ExecutionId,
    rounds: u64,
    write: F,
) -> Vec<Envelope>
where
    F: Fn(Store, ExecutionId, u64, u64) -> Fut + Send + Sync + Copy + 'static,
    Fut: std::future::Future<Output = Vec<Envelope>> + Send,
{
    let start = Arc::new(Barrier::new(WRITERS));
    let tasks: Vec<_> = (0..WRITERS as u64)
        .map(|writer| {
            let (store, start, id) = (store.clone(), start.clone(), id.clone());
            tokio::spawn(async move {
                start.wait().await;
                let mut mine = Vec::new();
                for round in 0..rounds {
                    mine.extend(write(store.clone(), id.clone(), writer, round).await);
                }
                mine
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("writer task"));
    }
    all
}

/// Checks that the log is exactly `1..=n`, that every handed-back envelope is
/// in it at its sequence, and that no sequence was handed out twice.
async fn assert_log_matches(store: &Store, id: &ExecutionId, returned: &[Envelope]) {
    let log = store.read_range(id, 1, None).await.expect("reads");
    let n = log.len() as u64;
    assert_eq!(returned.len() as u64, n, "every append is in the log once");
    assert_eq!(
        log.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        (1..=n).collect::<Vec<_>>()
    );
    let mut by_sequence = BTreeMap::new();
    for envelope in returned {
        assert!(
            by_sequence.insert(envelope.sequence, envelope).is_none(),
            "sequence {} was handed out twice",
            envelope.sequence
        );
        assert_eq!(&log[(envelope.sequence - 1) as usize], envelope);
    }
}

/// Eight tasks append single events to one execution at once: the log ends
/// up 1..=200 with no gap and no duplicate.
pub async fn concurrent_appenders_get_contiguous_unique_sequences(store: Store) {
    let id = &id("concurrent-single");
    let returned = race_writers(&store, id, 25, |store, id, writer, round| async move {
        let written =
            event("app.tick").with_payload(object(json!({ "writer": writer, "round": round })));
        vec![
            store
                .append(&id, written)
                .await
                .expect("a concurrent append"),
        ]
    })
    .await;
    assert_log_matches(&store, id, &returned).await;
    assert_eq!(returned.len(), 200);
}

/// Eight tasks append four-event batches at once: each batch occupies four
/// consecutive sequences, never interleaved with another's.
pub async fn concurrent_batches_are_never_interleaved(store: Store) {
    let id = &id("concurrent-batch");
    let returned = race_writers(&store, id, 5, |store, id, writer, round| async move {
        let batch = (0..4)
            .map(|part| {
                event("app.part").with_payload(object(
                    json!({ "writer": writer, "round": round, "part": part }),
                ))
            })
            .collect();
        let written = store
            .append_many(&id, batch)
            .await
            .expect("a concurrent batch");
        let first = written[0].sequence;
        for (offset, envelope) in written.iter().enumerate() {
            assert_eq!(
                envelope.sequence,
                first + offset as u64,
                "batch is contiguous"
            );
            assert_eq!(
                envelope.payload["writer"],
                json!(writer),
                "batch is not interleaved"
            );
        }
        written
    })
    .await;
    assert_log_matches(&store, id, &returned).await;
    assert_eq!(returned.len(), 160);
}
