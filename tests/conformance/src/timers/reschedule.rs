//! Reschedule: a re-drive chain moves on in one step under the claim, so a
//! fire that outlived its lease cannot fork it.

use loomfence_core::InputError;
use loomfence_core::timer::Completed;
use loomfence_store::StoreError;

use super::Timers;
use super::support::{LEASE_MS, all_rows, claim_only, lease, redrive, schedule_all, wake};

pub use super::fork::a_fire_that_outlives_its_lease_does_not_fork_the_chain;

/// Under its current claim, a reschedule retires the claimed row and
/// writes the next one, unclaimed and due at its own time.
pub async fn a_reschedule_under_the_claim_retires_the_row_and_schedules_the_next(store: Timers) {
    schedule_all(&store, &[redrive("p", 0, 0), wake("other", 5)]).await;
    let held = claim_only(&store, &lease("n1", 0), &redrive("p", 0, 0)).await;
    let next = redrive("p", 200, 1);
    assert_eq!(
        store.reschedule(&held, &next).await.expect("reschedules"),
        Completed::Done
    );
    assert_eq!(all_rows(&store).await, vec![wake("other", 5), next.clone()]);
    assert_eq!(
        store.complete(&held).await.expect("completes"),
        Completed::NotHeld,
        "the claimed row is gone"
    );
    claim_only(&store, &lease("n2", 199), &wake("other", 5)).await;
    claim_only(&store, &lease("n3", 200), &next).await;
}

/// Once the lease ended and another node claimed the row, the first
/// claimer's reschedule answers `NotHeld` and writes nothing: no next row,
/// the row still the new claimer's.
pub async fn a_reschedule_after_the_lease_was_lost_writes_nothing(store: Timers) {
    schedule_all(&store, &[redrive("p", 0, 0)]).await;
    let stale = claim_only(&store, &lease("n1", 0), &redrive("p", 0, 0)).await;
    let current = claim_only(&store, &lease("n2", LEASE_MS as i64), &redrive("p", 0, 0)).await;
    assert_eq!(
        store
            .reschedule(&stale, &redrive("p", 200, 1))
            .await
            .expect("answers"),
        Completed::NotHeld
    );
    assert_eq!(all_rows(&store).await, vec![redrive("p", 0, 0)]);
    // A schedule on the row voids a claim too: its reschedule writes nothing.
    store
        .schedule(&redrive("p", 0, 0))
        .await
        .expect("schedules");
    assert_eq!(
        store
            .reschedule(&current, &redrive("p", 300, 1))
            .await
            .expect("answers"),
        Completed::NotHeld
    );
    assert_eq!(all_rows(&store).await, vec![redrive("p", 0, 0)]);
}

/// A next row with the claimed row's key is refused, typed, and changes
/// nothing: the claim still holds and can retire the row.
pub async fn a_next_row_on_the_claimed_key_is_refused(store: Timers) {
    schedule_all(&store, &[redrive("p", 0, 0)]).await;
    let held = claim_only(&store, &lease("n1", 0), &redrive("p", 0, 0)).await;
    match store.reschedule(&held, &redrive("p", 0, 1)).await {
        Err(StoreError::Input(InputError::SameKey {
            execution_id,
            wake_at,
        })) => assert_eq!(
            (execution_id, wake_at),
            (held.row.execution_id.clone(), held.row.wake_at)
        ),
        other => panic!("expected a SameKey refusal, got {other:?}"),
    }
    assert_eq!(all_rows(&store).await, vec![redrive("p", 0, 0)]);
    assert_eq!(
        store.complete(&held).await.expect("completes"),
        Completed::Done,
        "the claim still holds"
    );
}

/// A next row whose key is already there merges as a schedule does: the
/// flag is kept or added (the new attempt wins), any claim on it ends.
pub async fn a_next_row_that_exists_merges_like_a_schedule(store: Timers) {
    schedule_all(
        &store,
        &[
            redrive("p", 0, 0),
            wake("p", 200),
            redrive("q", 0, 0),
            redrive("q", 200, 5),
        ],
    )
    .await;
    let held = super::support::claim(&store, &lease("n1", 0)).await;
    let (p, q) = (&held[0], &held[1]);
    assert_eq!((&p.row, &q.row), (&redrive("p", 0, 0), &redrive("q", 0, 0)));
    // A plain row at the next key: flagged by the re-drive row that lands.
    assert_eq!(
        store
            .reschedule(p, &redrive("p", 200, 1))
            .await
            .expect("reschedules"),
        Completed::Done
    );
    // A re-drive row at the next key: the new attempt wins.
    assert_eq!(
        store
            .reschedule(q, &redrive("q", 200, 1))
            .await
            .expect("reschedules"),
        Completed::Done
    );
    assert_eq!(
        all_rows(&store).await,
        vec![redrive("p", 200, 1), redrive("q", 200, 1)]
    );
    // A claimed next row loses its claim to the merge.
    let next_claims = super::support::claim(&store, &lease("n2", 200)).await;
    assert_eq!(next_claims.len(), 2);
    schedule_all(&store, &[redrive("r", 0, 0)]).await;
    let r = claim_only(&store, &lease("n3", 200), &redrive("r", 0, 0)).await;
    assert_eq!(
        store
            .reschedule(&r, &wake("p", 200))
            .await
            .expect("reschedules"),
        Completed::Done
    );
    assert_eq!(
        store.complete(&next_claims[0]).await.expect("answers"),
        Completed::NotHeld,
        "the merge ended the claim on the next row"
    );
    assert_eq!(
        all_rows(&store).await,
        vec![redrive("p", 200, 1), redrive("q", 200, 1)],
        "a plain next row never clears the flag"
    );
}
