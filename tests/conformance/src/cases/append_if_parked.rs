//! The park-conditional append: at most one unfenced resume per park.

use std::sync::Arc;

use loomfence_core::{ConditionalAppend, Envelope, ExecutionId, InputError, KernelKind, NewEvent};
use tokio::sync::Barrier;

use crate::Store;
use crate::support::{Witness, append_ok, assert_stale, event, expect_input, id, kernel, park};

/// Appends `events` conditionally and returns the stored envelopes, failing
/// the case if the park was reported answered.
async fn appended(
    store: &Store,
    id: &ExecutionId,
    park_seq: u64,
    events: Vec<NewEvent>,
) -> Vec<Envelope> {
    match store.append_if_parked(id, park_seq, events).await {
        Ok(ConditionalAppend::Appended(written)) => written,
        other => panic!("expected the park to be open, got {other:?}"),
    }
}

/// Ignorable events after the park leave it open: the conditional append
/// lands at the next sequence.
pub async fn lands_while_the_park_is_open(store: Store) {
    let id = &id("if-parked-open");
    let park_seq = park(&*store, id).await;
    append_ok(&store, id, kernel(KernelKind::ExecutionDenied)).await;
    append_ok(&store, id, event("app.output")).await;
    let written = appended(
        &store,
        id,
        park_seq,
        vec![kernel(KernelKind::ExecutionResumed)],
    )
    .await;
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].sequence, park_seq + 3);
}

/// Any answering event after the park (a resume, or an unknown kind stamped
/// `kernel: true`) makes the append a no-op that says so.
pub async fn is_refused_once_the_park_is_answered(store: Store) {
    for (n, answer) in [
        kernel(KernelKind::ExecutionResumed),
        event("EXECUTION_PAUSED").with_kernel_stamp(),
    ]
    .into_iter()
    .enumerate()
    {
        let id = id(&format!("if-parked-answered-{n}"));
        let park_seq = park(&*store, &id).await;
        append_ok(&store, &id, answer).await;
        let before = Witness::capture(&*store, &id).await;
        let second = store
            .append_if_parked(&id, park_seq, vec![kernel(KernelKind::ExecutionResumed)])
            .await
            .expect("a valid conditional append");
        assert_eq!(second, ConditionalAppend::ParkAnswered);
        before
            .assert_unchanged(&*store, "a conditional append on an answered park")
            .await;
    }
}

/// The condition adds to the guard, never replaces it: on a fenced
/// execution an unfenced answering batch is still refused, and the holder's
/// batch lands.
pub async fn still_applies_the_guard(store: Store) {
    let id = &id("if-parked-guard");
    let park_seq = park(&*store, id).await;
    let token = store.acquire_fence(id).await.expect("acquires");
    let before = Witness::capture(&*store, id).await;
    let unfenced = store
        .append_if_parked(id, park_seq, vec![kernel(KernelKind::ExecutionResumed)])
        .await;
    assert_stale(unfenced, None, token);
    before
        .assert_unchanged(
            &*store,
            "an unfenced conditional append on a fenced execution",
        )
        .await;
    let written = appended(
        &store,
        id,
        park_seq,
        vec![kernel(KernelKind::ExecutionResumed).with_fence(token)],
    )
    .await;
    assert_eq!(written[0].sequence, park_seq + 1);
}

/// Eight unfenced resumers started together: exactly one resume lands.
pub async fn eight_unfenced_resumers_one_lands(store: Store) {
    let id = &id("if-parked-eight");
    let park_seq = park(&*store, id).await;
    let start = Arc::new(Barrier::new(8));
    let resumers: Vec<_> = (0..8)
        .map(|_| {
            let (store, start, id) = (store.clone(), start.clone(), id.clone());
            tokio::spawn(async move {
                start.wait().await;
                store
                    .append_if_parked(&id, park_seq, vec![kernel(KernelKind::ExecutionResumed)])
                    .await
                    .expect("a valid conditional append")
            })
        })
        .collect();
    let mut landed = 0;
    for resumer in resumers {
        if let ConditionalAppend::Appended(_) = resumer.await.expect("resumer task") {
            landed += 1;
        }
    }
    assert_eq!(landed, 1);
    let log = store.read_range(id, 1, None).await.expect("reads");
    let resumes = log
        .iter()
        .filter(|e| e.kind == KernelKind::ExecutionResumed.as_str())
        .count();
    assert_eq!(resumes, 1);
}

/// A `parkSeq` inside the log whose event is not a park (the start before
/// it, an audit record or an application event after it) is refused with
/// `NotAPark`, naming the kind found there, before anything else is judged
/// (a resume already after the start does not make it "answered"), and
/// writes nothing; the real park still takes the resume.
pub async fn a_park_seq_naming_no_park_is_refused_and_writes_nothing(store: Store) {
    let id = &id("if-parked-not-a-park");
    let park_seq = park(&*store, id).await;
    append_ok(&store, id, kernel(KernelKind::ExecutionDenied)).await;
    append_ok(&store, id, event("app.output")).await;
    let before = Witness::capture(&*store, id).await;
    for (not_a_park, kind) in [
        (park_seq - 1, "EXECUTION_STARTED"),
        (park_seq + 1, "EXECUTION_DENIED"),
        (park_seq + 2, "app.output"),
    ] {
        let what = format!("append_if_parked({not_a_park}) on {kind}");
        let refused = store
            .append_if_parked(id, not_a_park, vec![kernel(KernelKind::ExecutionResumed)])
            .await;
        assert_eq!(
            expect_input(refused, &what),
            InputError::NotAPark {
                park_seq: not_a_park,
                kind: kind.to_owned()
            },
            "{what}"
        );
    }
    before
        .assert_unchanged(
            &*store,
            "conditional appends on sequences that are not a park",
        )
        .await;
    let written = appended(
        &store,
        id,
        park_seq,
        vec![kernel(KernelKind::ExecutionResumed)],
    )
    .await;
    assert_eq!(written[0].sequence, park_seq + 3);
    let before = Witness::capture(&*store, id).await;
    let refused = store
        .append_if_parked(id, park_seq - 1, vec![kernel(KernelKind::ExecutionResumed)])
        .await;
    assert_eq!(
        expect_input(refused, "append_if_parked on the start, answered after"),
        InputError::NotAPark {
            park_seq: park_seq - 1,
            kind: "EXECUTION_STARTED".to_owned()
        }
    );
    before
        .assert_unchanged(
            &*store,
            "a conditional append on the start of an answered log",
        )
        .await;
}
