//! The conditional acquire: token and park conditions, retries, contention.

use std::sync::Arc;

use loomfence_core::{AcquireOutcome, InputError, KernelKind, ParkExpectation};
use loomfence_store::StoreError;
use tokio::sync::Barrier;

use crate::Store;
use crate::support::{Witness, acquire_if, append_ok, event, expect_input, id, kernel, park};

/// The matching token on an unanswered park acquires the next token.
pub async fn a_matching_expectation_acquires_the_next_token(store: Store) {
    let id = &id("if-match");
    let park_seq = park(&*store, id).await;
    assert_eq!(
        acquire_if(&store, id, 0, park_seq).await,
        AcquireOutcome::Acquired { fence: 1 }
    );
    assert_eq!(store.current_fence(id).await.expect("reads"), 1);
}

/// A moved token answers `{stale, current}` and changes nothing.
pub async fn a_moved_token_is_stale_and_changes_nothing(store: Store) {
    let id = &id("if-moved");
    let park_seq = park(&*store, id).await;
    let current = store.acquire_fence(id).await.expect("acquires");
    let before = Witness::capture(&*store, id).await;
    assert_eq!(
        acquire_if(&store, id, 0, park_seq).await,
        AcquireOutcome::Stale { fence: current }
    );
    assert_eq!(
        acquire_if(&store, id, current + 5, park_seq).await,
        AcquireOutcome::Stale { fence: current }
    );
    before
        .assert_unchanged(&*store, "a stale acquire_fence_if")
        .await;
}

/// Eight callers with the same expectation, started together: exactly one
/// wins, the rest are told the winner's token.
pub async fn eight_concurrent_callers_one_winner(store: Store) {
    let id = id("if-eight");
    let park_seq = park(&*store, &id).await;
    let start = Arc::new(Barrier::new(8));
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let (store, start, id) = (store.clone(), start.clone(), id.clone());
            tokio::spawn(async move {
                start.wait().await;
                acquire_if(&store, &id, 0, park_seq).await
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for caller in callers {
        outcomes.push(caller.await.expect("caller task"));
    }
    let winners = outcomes.iter().filter(|o| o.is_acquired()).count();
    assert_eq!(winners, 1, "outcomes: {outcomes:?}");
    assert!(
        outcomes.iter().all(|o| o.fence() == 1),
        "outcomes: {outcomes:?}"
    );
    assert_eq!(store.current_fence(&id).await.expect("reads"), 1);
}

/// A dead acquirer strands the park's token forever; a retry on the token
/// the store reports (not the envelope's) gets through.
pub async fn a_dead_acquirer_is_passed_by_retrying_on_the_current_token(store: Store) {
    let id = &id("if-dead");
    let park_seq = park(&*store, id).await;
    let dead = store.acquire_fence(id).await.expect("acquires and dies");
    let stale = acquire_if(&store, id, 0, park_seq).await;
    assert_eq!(stale, AcquireOutcome::Stale { fence: dead });
    assert_eq!(
        acquire_if(&store, id, stale.fence(), park_seq).await,
        AcquireOutcome::Acquired { fence: dead + 1 }
    );
}

/// Once a winner's resume has landed, a rival retrying on the re-read token
/// is stale even though the token matches: the resume does not move the
/// token, so only the park condition protects the running body.
pub async fn a_landed_resume_makes_a_retry_stale(store: Store) {
    let id = &id("if-landed");
    let park_seq = park(&*store, id).await;
    let winner = acquire_if(&store, id, 0, park_seq).await.fence();
    append_ok(
        &store,
        id,
        kernel(KernelKind::ExecutionResumed).with_fence(winner),
    )
    .await;
    let before = Witness::capture(&*store, id).await;
    assert_eq!(
        acquire_if(&store, id, winner, park_seq).await,
        AcquireOutcome::Stale { fence: winner }
    );
    before
        .assert_unchanged(&*store, "a rival's retry after the resume landed")
        .await;
    append_ok(
        &store,
        id,
        kernel(KernelKind::StepStarted).with_fence(winner),
    )
    .await;
}

/// A park written with no fence expects token 0; one written under token t
/// expects t.
pub async fn a_park_written_without_a_fence_expects_zero(store: Store) {
    let fenced = &id("if-zero-fenced");
    let id = &id("if-zero");
    let park_seq = park(&*store, id).await;
    assert_eq!(
        acquire_if(&store, id, 1, park_seq).await,
        AcquireOutcome::Stale { fence: 0 }
    );
    assert_eq!(
        acquire_if(&store, id, 0, park_seq).await,
        AcquireOutcome::Acquired { fence: 1 }
    );

    store
        .append(fenced, kernel(KernelKind::ExecutionStarted))
        .await
        .expect("starts");
    for _ in 0..3 {
        store.acquire_fence(fenced).await.expect("acquires");
    }
    let park = append_ok(
        &store,
        fenced,
        kernel(KernelKind::ExecutionSuspended).with_fence(3),
    )
    .await;
    assert_eq!(park.fence().expect("valid token"), Some(3));
    assert_eq!(
        acquire_if(&store, fenced, 3, park.sequence).await,
        AcquireOutcome::Acquired { fence: 4 }
    );
}

/// A winner's answering append races a rival's conditional acquire on the
/// re-read token, many times over: the append lands and the acquire is
/// stale, or the acquire wins and the append is refused; never both.
pub async fn answering_appends_race_the_acquire_never_both(store: Store) {
    for trial in 0..25 {
        let id = id(&format!("if-race-{trial}"));
        let park_seq = park(&*store, &id).await;
        let token = acquire_if(&store, &id, 0, park_seq).await.fence();
        let start = Arc::new(Barrier::new(2));
        let append = {
            let (store, start, id) = (store.clone(), start.clone(), id.clone());
            tokio::spawn(async move {
                start.wait().await;
                store
                    .append(&id, kernel(KernelKind::ExecutionResumed).with_fence(token))
                    .await
            })
        };
        let acquire = {
            let (store, start, id) = (store.clone(), start.clone(), id.clone());
            tokio::spawn(async move {
                start.wait().await;
                acquire_if(&store, &id, token, park_seq).await
            })
        };
        let appended = append.await.expect("append task");
        let acquired = acquire.await.expect("acquire task");
        match (&appended, acquired) {
            (Ok(_), AcquireOutcome::Stale { fence }) => assert_eq!(fence, token),
            (Err(StoreError::StaleFence(stale)), AcquireOutcome::Acquired { fence }) => {
                assert_eq!((stale.presented, stale.current), (Some(token), fence));
            }
            (appended, acquired) => panic!(
                "trial {trial}: the append gave {appended:?} and the acquire gave {acquired:?}; exactly one may win"
            ),
        }
        let resumes = store
            .read_range(&id, 1, None)
            .await
            .expect("reads")
            .iter()
            .filter(|e| e.kind == KernelKind::ExecutionResumed.as_str())
            .count();
        assert_eq!(resumes, usize::from(appended.is_ok()), "trial {trial}");
    }
}

/// A `parkSeq` inside the log whose event is not a park (the start before
/// it, an audit record or an application event after it) is refused with
/// `NotAPark`, naming the kind found there, whatever the expected token,
/// and takes no token; the real park still acquires.
pub async fn a_park_seq_naming_no_park_is_refused_and_changes_nothing(store: Store) {
    let id = &id("if-not-a-park");
    let park_seq = park(&*store, id).await;
    append_ok(&store, id, kernel(KernelKind::ExecutionDenied)).await;
    append_ok(&store, id, event("app.output")).await;
    let before = Witness::capture(&*store, id).await;
    for (not_a_park, kind) in [
        (park_seq - 1, "EXECUTION_STARTED"),
        (park_seq + 1, "EXECUTION_DENIED"),
        (park_seq + 2, "app.output"),
    ] {
        for fence in [0, 7] {
            let expect = ParkExpectation {
                fence,
                park_seq: not_a_park,
            };
            let what = format!("acquire_fence_if({{{fence}, {not_a_park}}}) on {kind}");
            assert_eq!(
                expect_input(store.acquire_fence_if(id, expect).await, &what),
                InputError::NotAPark {
                    park_seq: not_a_park,
                    kind: kind.to_owned()
                },
                "{what}"
            );
        }
    }
    before
        .assert_unchanged(&*store, "acquires of sequences that are not a park")
        .await;
    assert_eq!(
        acquire_if(&store, id, 0, park_seq).await,
        AcquireOutcome::Acquired { fence: 1 }
    );
}
