//! Bad input: every malformed id, token, event or argument gets a typed
//! error, and nothing changes.

use loomfence_core::{
    ExecutionId, InputError, KernelKind, NewEvent, ParkExpectation,
    log::{MAX_ID_BYTES, MAX_SAFE_INTEGER},
};
use serde_json::{Value, json};

use crate::Store;
use crate::support::{Witness, event, expect_input, id, kernel, object, park};

/// Sets up a parked, fenced witness execution `id` and captures it.
async fn witness(store: &Store, id: &ExecutionId) -> Witness {
    park(&**store, id).await;
    if store.capability().fences() {
        store.acquire_fence(id).await.expect("acquires");
    }
    Witness::capture(&**store, id).await
}

/// Empty, over-long and NUL-bearing ids cannot become an [`ExecutionId`]:
/// each is refused where it enters the program, by every way of building
/// one, with the id's own [`InputError`] variant (which a store call at an
/// edge reports too). A store only takes an `ExecutionId`, so it never
/// sees one of these ids; the JavaScript port checks the same refusals at
/// the JS store's edge. Lengths are bytes, not characters. The witness `a`
/// is what a backend that truncated at the NUL of `a\0b` would hit; it stays
/// untouched.
pub async fn bad_ids_are_refused_and_change_nothing(store: Store) {
    let before = witness(&store, &id("a")).await;
    let cases = [
        (String::new(), InputError::IdEmpty),
        (
            "x".repeat(MAX_ID_BYTES + 1),
            InputError::IdTooLong {
                len: MAX_ID_BYTES + 1,
            },
        ),
        (
            "é".repeat(MAX_ID_BYTES / 2 + 1),
            InputError::IdTooLong {
                len: MAX_ID_BYTES + 1,
            },
        ),
        ("a\0b".to_owned(), InputError::IdNul { at: 1 }),
        ("\0".to_owned(), InputError::IdNul { at: 0 }),
    ];
    for (text, error) in cases {
        assert_eq!(
            ExecutionId::new(text.clone()),
            Err(error.clone()),
            "{text:?}"
        );
        assert_eq!(
            ExecutionId::try_from(text.as_str()),
            Err(error.clone()),
            "{text:?}"
        );
        assert_eq!(text.parse::<ExecutionId>(), Err(error.clone()), "{text:?}");
        let parsed = serde_json::from_value::<ExecutionId>(Value::String(text.clone()));
        assert!(parsed.is_err(), "serde accepted {text:?}");
        assert!(error.is_id(), "{text:?}");
    }
    before
        .assert_unchanged(&*store, "refusing bad ids at the edge")
        .await;
}

/// An id of exactly 255 bytes (multi-byte characters included) is valid and
/// is stored and read back byte for byte.
pub async fn the_longest_id_is_stored_verbatim(store: Store) {
    let text = format!("{}{}", "é".repeat(127), "x");
    assert_eq!(text.len(), MAX_ID_BYTES);
    let stored = store
        .append(&id(&text), event("app.x"))
        .await
        .expect("appends");
    assert_eq!(stored.execution_id.as_str(), text);
    let read = store.read_range(&id(&text), 1, None).await.expect("reads");
    assert_eq!(read, [stored]);
    assert!(
        store
            .read_range(&id(&text[..MAX_ID_BYTES - 1]), 1, None)
            .await
            .expect("reads")
            .is_empty()
    );
}

/// `metadata.fence` must be an integer in `0..=2^53-1`: negative,
/// fractional, string, null and too-large tokens are refused on the single
/// and the batch path, naming the bad event, and nothing is written.
pub async fn bad_fences_are_refused_and_change_nothing(store: Store) {
    let id = &id("bad-fence");
    let before = witness(&store, id).await;
    let bad: [Value; 6] = [
        json!(-1),
        json!(1.5),
        json!(2.0),
        json!("1"),
        Value::Null,
        json!(MAX_SAFE_INTEGER + 1),
    ];
    for found in bad {
        let single = kernel(KernelKind::ExecutionResumed).with_meta("fence", found.clone());
        let want = InputError::Event {
            index: 0,
            source: Box::new(InputError::BadFence {
                found: found.clone(),
            }),
        };
        assert_eq!(
            expect_input(store.append(id, single.clone()).await, "append"),
            want
        );
        let batch = vec![kernel(KernelKind::StepStarted), single];
        let want = InputError::Event {
            index: 1,
            source: Box::new(InputError::BadFence { found }),
        };
        assert_eq!(
            expect_input(store.append_many(id, batch).await, "append_many"),
            want
        );
    }
    before
        .assert_unchanged(&*store, "appends with bad fences")
        .await;
}

/// A batch is written under one token or none; a mix is refused.
pub async fn mixed_fences_in_a_batch_are_refused(store: Store) {
    let id = &id("bad-mixed");
    let before = witness(&store, id).await;
    let token = before.fence;
    let mixed = vec![
        kernel(KernelKind::MessageConsumed).with_fence(token),
        kernel(KernelKind::ExecutionResumed),
    ];
    let error = expect_input(store.append_many(id, mixed).await, "append_many");
    assert_eq!(
        error,
        InputError::MixedFences {
            index: 1,
            first: Some(token),
            found: None
        }
    );
    let mixed = vec![
        kernel(KernelKind::StepStarted).with_fence(token),
        kernel(KernelKind::StepCompleted).with_fence(token + 1),
    ];
    let error = expect_input(store.append_many(id, mixed).await, "append_many");
    assert_eq!(
        error,
        InputError::MixedFences {
            index: 1,
            first: Some(token),
            found: Some(token + 1)
        }
    );
    before
        .assert_unchanged(&*store, "mixed-token batches")
        .await;
}

/// Empty kinds, NUL characters and out-of-range timestamps are refused with
/// the event error that names them.
pub async fn malformed_events_are_refused_and_change_nothing(store: Store) {
    let id = &id("bad-event");
    let before = witness(&store, id).await;
    let too_late = MAX_SAFE_INTEGER as i64 + 1;
    let cases: [(NewEvent, InputError); 5] = [
        (event(""), InputError::KindEmpty),
        (
            event(&"k".repeat(256)),
            InputError::KindTooLong { len: 256 },
        ),
        (event("a\0b"), InputError::Nul { field: "kind" }),
        (
            event("app.x").with_payload(object(json!({ "text": "nul \u{0} inside" }))),
            InputError::Nul { field: "payload" },
        ),
        (
            NewEvent::new("app.x", too_late),
            InputError::AtOutOfRange { at: too_late },
        ),
    ];
    for (bad, source) in cases {
        let want = InputError::Event {
            index: 0,
            source: Box::new(source),
        };
        assert_eq!(expect_input(store.append(id, bad).await, "append"), want);
    }
    before.assert_unchanged(&*store, "malformed events").await;
}

/// A `parkSeq` of 0 or past the head, including on an unknown execution, is
/// refused by both conditional operations and takes no token.
pub async fn a_park_seq_outside_the_log_is_refused(store: Store) {
    let never = &id("bad-never-written");
    let id = &id("bad-park-seq");
    let before = witness(&store, id).await;
    let head = before.events.len() as u64;
    for park_seq in [0, head + 1, u64::from(u32::MAX)] {
        let expect = ParkExpectation {
            fence: before.fence,
            park_seq,
        };
        let error = expect_input(store.acquire_fence_if(id, expect).await, "acquire_fence_if");
        assert_eq!(error, InputError::ParkSeqOutOfRange { park_seq, head });
    }
    let unknown = ParkExpectation {
        fence: 0,
        park_seq: 1,
    };
    let error = expect_input(
        store.acquire_fence_if(never, unknown).await,
        "acquire_fence_if",
    );
    assert_eq!(
        error,
        InputError::ParkSeqOutOfRange {
            park_seq: 1,
            head: 0
        }
    );
    assert_eq!(store.current_fence(never).await.expect("reads"), 0);
    before
        .assert_unchanged(&*store, "acquires outside the log")
        .await;
}

/// Numbers past 2^53-1 (what a JavaScript number holds exactly) are refused
/// as arguments on every backend alike.
pub async fn out_of_range_numbers_are_refused(store: Store) {
    let id = &id("bad-range");
    let before = witness(&store, id).await;
    let huge = MAX_SAFE_INTEGER + 1;
    let error = expect_input(store.read_range(id, huge, None).await, "read_range from");
    assert_eq!(
        error,
        InputError::OutOfRange {
            what: "fromSeq",
            value: huge
        }
    );
    let error = expect_input(store.read_range(id, 1, Some(huge)).await, "read_range to");
    assert_eq!(
        error,
        InputError::OutOfRange {
            what: "toSeq",
            value: huge
        }
    );
    if store.capability().is_conditional() {
        let expect = ParkExpectation {
            fence: huge,
            park_seq: 2,
        };
        let error = expect_input(
            store.acquire_fence_if(id, expect).await,
            "acquire_fence_if fence",
        );
        assert_eq!(
            error,
            InputError::OutOfRange {
                what: "fence",
                value: huge
            }
        );
    }
    before
        .assert_unchanged(&*store, "out-of-range arguments")
        .await;
}
