//! The race tests bite: with the `FOR SHARE` read of answering appends
//! switched off (`set_answering_lock(false)`, the `unsafe-test-hooks`
//! feature), the same race as `race.rs` must produce a double success (the
//! answer lands AND the conditional acquire wins) on both append paths, and
//! on the park-conditional path.
//!
//! Nothing is slowed down inside the store; the window is widened only by
//! running many trials side by side. Each test stops at the first double
//! success and fails if none shows up within the cap. Set
//! `LOOMFENCE_FAIL_FIRST_NO_STOP=1` to run the whole cap and print the hit
//! rate instead of stopping early.

mod common;

use std::sync::Arc;

use common::race::{self, Path};
use loomfence_postgres::PostgresOptions;

/// The most trials a path gets to show a double success.
const CAP: usize = 3000;

/// Trials run side by side, as in `race.rs`: the same race, minus the lock.
const LANES: usize = 4;

/// Races `path` with the answering lock off until a double success.
async fn unlocked_race_double_wins(path: Path) {
    let Some(url) = common::url() else { return };
    let store = Arc::new(
        common::store_with(
            &url,
            PostgresOptions {
                pool_size: 2 * LANES + 2,
                ..common::options()
            },
        )
        .await,
    );
    store.set_answering_lock(false);
    let no_stop = std::env::var("LOOMFENCE_FAIL_FIRST_NO_STOP").is_ok_and(|v| !v.is_empty());
    let tally = race::run(
        &store,
        race::fresh_trials(&format!("unlocked-{path:?}"), path, CAP),
        LANES,
        !no_stop,
    )
    .await;
    println!(
        "fail-first {path:?} without FOR SHARE: {tally} (hit rate {:.2}%)",
        100.0 * tally.both_won as f64 / tally.trials.max(1) as f64
    );
    assert!(
        tally.both_won > 0,
        "{path:?}: no double success in {} trials with the answering lock off: the race test would not catch its removal",
        tally.trials
    );
}

/// `append` of `EXECUTION_RESUMED` under A's token, lock off.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_the_answering_lock_single_append_and_acquire_both_win() {
    unlocked_race_double_wins(Path::Single).await;
}

/// `append_many([MESSAGE_CONSUMED, EXECUTION_RESUMED])` under A's token,
/// lock off.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_the_answering_lock_batch_append_and_acquire_both_win() {
    unlocked_race_double_wins(Path::Batch).await;
}

/// `append_if_parked(park, [EXECUTION_RESUMED])`, unfenced, against
/// `acquire_fence_if({0, park})`, lock off.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_the_answering_lock_park_conditional_append_and_acquire_both_win() {
    unlocked_race_double_wins(Path::IfParked).await;
}
