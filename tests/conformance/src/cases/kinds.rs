//! Which events after a park make a conditional acquire stale.

use loomfence_core::{AcquireOutcome, ExecutionId, KernelKind, NewEvent, log::KindClass};
use serde_json::{Value, json};

use crate::Store;
use crate::support::{Witness, acquire_if, append_ok, event, id, kernel, park};

/// Parks `id`, appends `after` (unfenced, at token 0), and returns what a
/// conditional acquire with the park's own expectation answers.
async fn acquire_after(store: &Store, id: &ExecutionId, after: NewEvent) -> AcquireOutcome {
    let park_seq = park(&**store, id).await;
    append_ok(store, id, after).await;
    let before = Witness::capture(&**store, id).await;
    let outcome = acquire_if(store, id, 0, park_seq).await;
    if !outcome.is_acquired() {
        before.assert_unchanged(&**store, "a stale acquire").await;
    }
    outcome
}

/// Every answering kernel kind after the park makes the acquire stale even
/// though the token matches.
pub async fn each_answering_kind_after_the_park_is_stale(store: Store) {
    let answering: Vec<KernelKind> = KernelKind::answering().collect();
    assert_eq!(answering.len(), 6, "the design's six answering kinds");
    for kind in answering {
        let id = id(&format!("kinds-answer-{}", kind.as_str()));
        let outcome = acquire_after(&store, &id, kernel(kind)).await;
        assert_eq!(
            outcome,
            AcquireOutcome::Stale { fence: 0 },
            "{kind:?} after the park"
        );
    }
}

/// Answering events at or before the park do not count; the same events do
/// make an older park's acquire stale.
pub async fn answering_events_at_or_before_the_park_are_not(store: Store) {
    let id = &id("kinds-before");
    let written = store
        .append_many(
            id,
            vec![
                kernel(KernelKind::ExecutionStarted),
                kernel(KernelKind::ExecutionSuspended),
                kernel(KernelKind::ExecutionResumed),
                kernel(KernelKind::ExecutionSuspended),
            ],
        )
        .await
        .expect("appends");
    let (old_park, park) = (written[1].sequence, written[3].sequence);
    assert_eq!(
        acquire_if(&store, id, 0, old_park).await,
        AcquireOutcome::Stale { fence: 0 }
    );
    assert_eq!(
        acquire_if(&store, id, 0, park).await,
        AcquireOutcome::Acquired { fence: 1 }
    );
}

/// The ignorable kernel kinds (audit records, step bookkeeping) after the
/// park leave the acquire free.
pub async fn ignorable_kinds_after_the_park_are_not(store: Store) {
    let listed = [
        KernelKind::ExecutionDenied,
        KernelKind::OutcomeRecorded,
        KernelKind::StepFailed,
        KernelKind::MessageConsumed,
        KernelKind::ExecutionMigrated,
        KernelKind::StepCompleted,
    ];
    let ignorable: Vec<KernelKind> = KernelKind::ALL
        .iter()
        .copied()
        .filter(|k| k.class() == KindClass::Ignorable)
        .collect();
    for kind in listed {
        assert!(ignorable.contains(&kind), "{kind:?} must be ignorable");
    }
    for kind in ignorable {
        let id = id(&format!("kinds-ignore-{}", kind.as_str()));
        let outcome = acquire_after(&store, &id, kernel(kind)).await;
        assert_eq!(
            outcome,
            AcquireOutcome::Acquired { fence: 1 },
            "{kind:?} after the park"
        );
    }
}

/// Application events after the park, however they are named, leave the
/// acquire free: a sibling that keeps emitting must not block the resume.
pub async fn application_events_after_the_park_are_not(store: Store) {
    for (n, kind) in [
        "app.emit",
        "order.shipped",
        "execution_resumed",
        "EXECUTION_RESUMED ",
    ]
    .into_iter()
    .enumerate()
    {
        let outcome = acquire_after(&store, &id(&format!("kinds-app-{n}")), event(kind)).await;
        assert_eq!(
            outcome,
            AcquireOutcome::Acquired { fence: 1 },
            "{kind:?} after the park"
        );
    }
}

/// An unknown kind stamped `kernel: true` is a kernel kind from a newer node:
/// answering, fail-closed.
pub async fn an_unknown_kind_stamped_kernel_is_stale(store: Store) {
    let newer = event("EXECUTION_PAUSED").with_kernel_stamp();
    let outcome = acquire_after(&store, &id("kinds-stamped"), newer).await;
    assert_eq!(outcome, AcquireOutcome::Stale { fence: 0 });
}

/// Only the boolean `true` is the stamp: unstamped, `"true"`, `1`, `false`
/// and `null` are application events.
pub async fn unknown_kinds_without_the_boolean_stamp_are_not(store: Store) {
    let stamps: [Option<Value>; 5] = [
        None,
        Some(json!("true")),
        Some(json!(1)),
        Some(json!(false)),
        Some(Value::Null),
    ];
    for (n, stamp) in stamps.into_iter().enumerate() {
        let mut newer = event("EXECUTION_PAUSED");
        if let Some(stamp) = stamp.clone() {
            newer = newer.with_meta("kernel", stamp);
        }
        let outcome = acquire_after(&store, &id(&format!("kinds-unstamped-{n}")), newer).await;
        assert_eq!(
            outcome,
            AcquireOutcome::Acquired { fence: 1 },
            "stamp {stamp:?}"
        );
    }
}

/// A known kernel kind is classified by the table; a stamp cannot promote an
/// ignorable one.
pub async fn a_stamp_does_not_reclassify_a_kernel_kind(store: Store) {
    let stamped_denial = kernel(KernelKind::ExecutionDenied).with_kernel_stamp();
    let outcome = acquire_after(&store, &id("kinds-stamped-denial"), stamped_denial).await;
    assert_eq!(outcome, AcquireOutcome::Acquired { fence: 1 });
}
