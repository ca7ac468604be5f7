//! Hostile and extreme input: ids that would break inlined SQL, `LIKE` or
//! glob patterns, or Unicode normalisation; NUL characters anywhere; a
//! 16 MB payload. Every backend stores the first verbatim, refuses the
//! second with a typed error before writing anything, and round-trips the
//! third. (A NUL in an id, or an id over 255 bytes, cannot become an
//! [`ExecutionId`] at all, so no store ever sees one: those are refused
//! where the id is built.)
//!
//! The set-up functions are public so that an adapter's own tests can run
//! them and then look at its storage directly (the table holds exactly
//! these ids; no row was written anywhere).

use loomfence_core::{ExecutionId, InputError, KernelKind, NewEvent, ParkExpectation};
use loomfence_store::{EventStore, StoreError};
use serde_json::json;

use crate::Store;
use crate::support::{AT, Witness, id, kernel, object, park};

/// Ids that must be stored and read back byte for byte, each its own
/// execution: SQL quoting and comments, placeholder spellings of every
/// driver, `LIKE` and glob wildcards, case, spaces, control characters,
/// composed and decomposed forms, and three 255-byte ids.
#[must_use]
pub fn awkward_ids() -> Vec<String> {
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
        "$1",
        "$$",
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

/// Starts and parks every one of [`awkward_ids`] (the start's payload names
/// its id), then reads each back: exactly its own two events, its own id
/// and payload. Returns the ids.
pub async fn write_awkward_ids(store: &dyn EventStore) -> Vec<String> {
    let ids = awkward_ids();
    for text in &ids {
        store
            .append_many(
                &id(text),
                vec![
                    kernel(KernelKind::ExecutionStarted)
                        .with_payload(object(json!({ "id": text }))),
                    kernel(KernelKind::ExecutionSuspended),
                ],
            )
            .await
            .unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }
    for text in &ids {
        let log = store.read_range(&id(text), 1, None).await.expect("reads");
        assert_eq!(log.len(), 2, "{text:?} has exactly its own two events");
        assert!(
            log.iter().all(|e| e.execution_id.as_str() == text),
            "{text:?}"
        );
        assert_eq!(log[0].payload["id"], json!(text), "{text:?}");
    }
    ids
}

/// Every awkward id round-trips verbatim, and none collides with another:
/// not `a%` with `ab`, not `a_` or `a*` with `ab`, not `é` with its
/// decomposed form, not `a` with `A` or `a `. Tokens and deletes stay per
/// id too. One byte more than the longest of them is not an id at all.
pub async fn awkward_ids_round_trip_verbatim_and_never_collide(store: Store) {
    let ids = write_awkward_ids(&*store).await;
    assert_eq!(
        ids.iter().collect::<std::collections::BTreeSet<_>>().len(),
        ids.len(),
        "distinct ids"
    );
    let capability = store.capability();
    if capability.fences() {
        assert_eq!(store.acquire_fence(&id("a%")).await.expect("acquires"), 1);
        assert_eq!(store.acquire_fence(&id("a*")).await.expect("acquires"), 1);
    }
    if capability.is_conditional() {
        let expect = ParkExpectation {
            fence: 0,
            park_seq: 2,
        };
        let outcome = store.acquire_fence_if(&id("a_"), expect).await;
        assert_eq!(outcome.expect("acquires").fence(), 1);
    }
    for untouched in ["ab", "a", "A", "e\u{301}", "*", "%", "_"] {
        assert_eq!(
            store.current_fence(&id(untouched)).await.expect("reads"),
            0,
            "{untouched:?} shares no token with a look-alike"
        );
    }
    for deleted in ["é", "a", "%"] {
        assert!(store.delete_execution(&id(deleted)).await.expect("deletes"));
    }
    for kept in ["e\u{301}", "A", "a ", " a", "ab", "a%", "a_"] {
        assert_eq!(
            store
                .read_range(&id(kept), 1, None)
                .await
                .expect("reads")
                .len(),
            2,
            "{kept:?} survives the deletes of its look-alikes"
        );
    }
    for longest in &ids[ids.len() - 3..] {
        assert_eq!(
            ExecutionId::new(format!("{longest}x")),
            Err(InputError::IdTooLong { len: 256 })
        );
    }
}

/// Checks that a NUL-bearing id cannot be built (so no operation can be
/// called with one), then tries every write with an event holding a NUL (in
/// a string, a key, deep in a payload, in metadata, in the kind) alone,
/// second in a batch, and conditionally on the park of `target` at
/// `park_seq`. Each must be a typed input error; the caller checks that
/// nothing was written.
pub async fn refuse_nul_everywhere(store: &dyn EventStore, target: &ExecutionId, park_seq: u64) {
    for bad_id in ["a\0b", "\0", "ab\0"] {
        let at = bad_id.find('\0').expect("has a NUL");
        assert_eq!(
            ExecutionId::new(bad_id),
            Err(InputError::IdNul { at }),
            "{bad_id:?}"
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
            matches!(
                conditional,
                Err(StoreError::Input(InputError::Event { index: 0, .. }))
            ),
            "event {index} conditionally: {conditional:?}"
        );
    }
}

/// A NUL in an id cannot be built into an [`ExecutionId`]; a NUL in a kind,
/// or any key or string of a payload or metadata, is refused with a typed
/// input error by every write, and nothing is written, even when only one
/// event of a batch has it. The witness `a` is what a backend that cut an
/// id at the NUL would hit.
pub async fn nul_is_refused_everywhere_and_nothing_is_written(store: Store) {
    let target = &id("nul-target");
    let truncated = &id("a");
    let park_seq = park(&*store, target).await;
    park(&*store, truncated).await;
    let before = [
        Witness::capture(&*store, target).await,
        Witness::capture(&*store, truncated).await,
    ];
    refuse_nul_everywhere(&*store, target, park_seq).await;
    for witness in &before {
        witness.assert_unchanged(&*store, "NUL refusals").await;
    }
}

/// A 16 MB payload, with quotes, backslashes, control characters and
/// non-ASCII throughout, round-trips byte for byte.
pub async fn a_16_mb_payload_round_trips_verbatim(store: Store) {
    let id = &id("sixteen-mb");
    park(&*store, id).await;
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
