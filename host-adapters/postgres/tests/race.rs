//! The kernel's promise under real concurrency, many times over: an
//! answering append races `acquire_fence_if` on the same park, and either
//! the append lands and the acquire is stale, or the acquire wins and the
//! append is refused with `StaleFence`; never both, never neither.
//!
//! Each trial uses a fresh execution; the two sides are spawned behind one
//! barrier on a multi-threaded runtime, and several trials run side by side
//! (lanes) so the server sees real contention. The counts of each order are
//! printed (`--nocapture`): both orders must occur, or the race proved
//! nothing.

mod common;

use std::sync::Arc;

use common::race::{self, Path, Tally};
use loomfence_postgres::{AcquireStrategy, PostgresOptions};

/// Trials per path.
const TRIALS: usize = 500;

/// Trials run side by side.
const LANES: usize = 4;

/// Runs `trials` races of `path` with `acquire`, asserts every one had
/// exactly one winner and that both orders occurred, and returns the counts.
async fn exclusive(path: Path, acquire: AcquireStrategy, trials: usize) -> Option<Tally> {
    let url = common::url()?;
    let store = Arc::new(
        common::store_with(
            &url,
            PostgresOptions {
                acquire,
                pool_size: 2 * LANES + 2,
                ..common::options()
            },
        )
        .await,
    );
    let tally = race::run(
        &store,
        race::fresh_trials(&format!("race-{path:?}"), path, trials),
        LANES,
        false,
    )
    .await;
    let label = format!("race {path:?} ({acquire:?} acquire)");
    println!("{label}: {tally}");
    tally.assert_exclusive(&label);
    assert_eq!(tally.trials, trials as u64);
    assert!(
        tally.append_won > 0 && tally.acquire_won > 0,
        "{label}: only one order occurred ({tally}); the race did not race"
    );
    Some(tally)
}

/// Window 2 on `append`: A's `EXECUTION_RESUMED` under its token against B's
/// `acquire_fence_if` on the re-read token.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn single_append_and_conditional_acquire_never_both_win() {
    exclusive(Path::Single, AcquireStrategy::Function, TRIALS).await;
}

/// The same with the pipelined acquire (fewer trials: the function is the
/// default and gets the full count).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn single_append_and_pipelined_acquire_never_both_win() {
    exclusive(Path::Single, AcquireStrategy::Pipelined, TRIALS / 2).await;
}

/// Window 2 on `append_many`: the inbox batch `[MESSAGE_CONSUMED,
/// EXECUTION_RESUMED]` under A's token.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batch_append_and_conditional_acquire_never_both_win() {
    exclusive(Path::Batch, AcquireStrategy::Function, TRIALS).await;
}

/// The park-conditional answer (unfenced, token 0) against
/// `acquire_fence_if({0, park})`: once the acquire wins, the unfenced
/// answering batch is refused for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn park_conditional_append_and_conditional_acquire_never_both_win() {
    exclusive(Path::IfParked, AcquireStrategy::Function, TRIALS).await;
}
