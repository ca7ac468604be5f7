//! Two resumers race to resume one parked execution over the in-memory
//! store, on real threads, many times over. Exactly one wins each race; the
//! other is told "stale", re-reads, and finds the park already answered.
//! (This is the protocol by hand; `loomfence-runtime`'s `resume` does it,
//! with the re-reads and retries, against any store.)
//!
//! Run it with `cargo run -p loomfence-store --example race [ROUNDS]`.

use std::sync::Arc;

use loomfence_core::{
    AcquireOutcome, ConditionalAppend, ExecutionId, ExecutionView, KernelKind, NewEvent,
    ParkExpectation,
};
use loomfence_store::{EventStore, MemoryEventStore, StoreError};
use tokio::sync::Barrier;

/// What one resumer got out of one race.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Acquired the fence and its resume landed.
    Resumed { fence: u64 },
    /// Told stale; on re-reading, the park had been answered.
    Refused { stale_at: u64 },
}

/// One resumer: read the park, acquire conditionally, append the resume
/// under the new token (conditional on the park, so that a delete after the
/// acquire cannot make it recreate the log), or re-read after a stale
/// answer.
async fn resumer(
    store: Arc<MemoryEventStore>,
    id: ExecutionId,
    start: Arc<Barrier>,
) -> Result<Outcome, StoreError> {
    let view = ExecutionView::fold(&store.read_range(&id, 1, None).await?);
    let park = view.open_park.expect("the execution is parked");
    start.wait().await;
    let expect = ParkExpectation {
        fence: park.fence,
        park_seq: park.sequence,
    };
    match store.acquire_fence_if(&id, expect).await? {
        AcquireOutcome::Acquired { fence } => {
            let resume = NewEvent::kernel(KernelKind::ExecutionResumed, 0).with_fence(fence);
            let appended = store
                .append_if_parked(&id, park.sequence, vec![resume])
                .await?;
            assert!(
                matches!(appended, ConditionalAppend::Appended(_)),
                "the winner's park is still open: {appended:?}"
            );
            Ok(Outcome::Resumed { fence })
        }
        AcquireOutcome::Stale { fence } => {
            let again = ExecutionView::fold(&store.read_range(&id, 1, None).await?);
            assert_eq!(again.open_park, None, "stale only once the park is taken");
            Ok(Outcome::Refused { stale_at: fence })
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), StoreError> {
    let rounds: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000);
    let store = Arc::new(MemoryEventStore::new());
    let (mut a_wins, mut b_wins) = (0_u32, 0_u32);
    for round in 0..rounds {
        let id = ExecutionId::new(format!("order-{round}")).expect("a valid id");
        store
            .append_many(
                &id,
                vec![
                    NewEvent::kernel(KernelKind::ExecutionStarted, 0),
                    NewEvent::kernel(KernelKind::ExecutionSuspended, 1),
                ],
            )
            .await?;
        let start = Arc::new(Barrier::new(2));
        let a = tokio::spawn(resumer(store.clone(), id.clone(), start.clone()));
        let b = tokio::spawn(resumer(store.clone(), id.clone(), start));
        let (a, b) = (a.await.expect("resumer A")?, b.await.expect("resumer B")?);
        let resumes = store
            .read_range(&id, 1, None)
            .await?
            .iter()
            .filter(|e| e.kind == KernelKind::ExecutionResumed.as_str())
            .count();
        assert_eq!(resumes, 1, "round {round}: exactly one resume is recorded");
        match (a, b) {
            (Outcome::Resumed { .. }, Outcome::Refused { .. }) => a_wins += 1,
            (Outcome::Refused { .. }, Outcome::Resumed { .. }) => b_wins += 1,
            other => panic!("round {round}: both or neither resumed: {other:?}"),
        }
        if round == 0 {
            println!("round 0: A {a:?}, B {b:?}");
        }
    }
    println!(
        "{rounds} races over one parked execution each: A won {a_wins}, B won {b_wins}, double resumes 0"
    );
    Ok(())
}
