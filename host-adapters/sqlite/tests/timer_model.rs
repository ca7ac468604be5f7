//! The SQLite timer store against the core's `TimerTable`, operation for
//! operation: thousands of mixed calls, the same on both, every answer and
//! the final table equal. The kit checks each rule alone; this checks their
//! interleavings (a schedule on a held row, a release then a takeover, a
//! stale claim after both).

mod common;

use common::TempDir;
use common::files::Rng;
use loomfence_core::{
    Claim, DueFilter, Lease, MAX_DUE_LIMIT, MAX_TIMER_MS, NodeId, TimerRow, TimerTable,
};
use loomfence_sqlite::{SqliteOptions, SqliteTimerStore};
use loomfence_store::TimerStore;

/// Calls per run.
const STEPS: usize = 2_000;

/// A value picked from `items`.
fn pick<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    items[usize::try_from(rng.between(0, items.len() as u64)).expect("small")]
}

/// A small time or count in `0..n`.
fn small(rng: &mut Rng, n: u64) -> i64 {
    i64::try_from(rng.between(0, n)).expect("small")
}

/// Runs [`STEPS`] random calls (seeded by `seed`) on `store` and on a
/// `TimerTable`, comparing every answer and, at the end, every row.
async fn agree(store: &SqliteTimerStore, seed: u64) {
    let mut table = TimerTable::new();
    let mut rng = Rng::new(seed);
    let ids = ["a", "B", "é", "a b", "z"];
    let holders = ["n1", "n2", "n3"];
    let mut claims: Vec<Claim> = Vec::new();
    for step in 0..STEPS {
        let filter = DueFilter {
            redrive: rng.between(0, 3) != 0,
        };
        match rng.between(0, 6) {
            0 | 1 => {
                let id = common::id(pick(&mut rng, &ids));
                let wake_at = small(&mut rng, 6) * 10;
                let row = if rng.between(0, 3) == 0 {
                    let attempt = u32::try_from(rng.between(0, 3)).expect("small");
                    TimerRow::redrive(id, wake_at, attempt)
                } else {
                    TimerRow::wake(id, wake_at)
                };
                table.schedule(&row).expect("valid");
                store.schedule(&row).await.expect("schedules");
            }
            2 => {
                let now = small(&mut rng, 70);
                let limit = 1 + usize::try_from(rng.between(0, 4)).expect("small");
                let expected = table.due(now, limit, filter).expect("valid");
                let got = store.due(now, limit, filter).await.expect("lists");
                assert_eq!(
                    got, expected,
                    "step {step}: due({now}, {limit}, {filter:?})"
                );
            }
            3 => {
                let lease = Lease {
                    holder: NodeId::new(pick(&mut rng, &holders)).expect("a node id"),
                    now: small(&mut rng, 80),
                    duration_ms: rng.between(1, 31),
                };
                let limit = 1 + usize::try_from(rng.between(0, 3)).expect("small");
                let expected = table.claim_due(&lease, limit, filter).expect("valid");
                let got = store
                    .claim_due(&lease, limit, filter)
                    .await
                    .expect("claims");
                assert_eq!(got, expected, "step {step}: claim_due({lease:?}, {limit})");
                claims.extend(got);
            }
            _ if !claims.is_empty() => {
                let index = usize::try_from(rng.between(0, claims.len() as u64)).expect("small");
                let claim = claims[index].clone();
                let (expected, got) = if rng.between(0, 2) == 0 {
                    (
                        table.complete(&claim).expect("valid"),
                        store.complete(&claim).await.expect("completes"),
                    )
                } else {
                    (
                        table.release(&claim).expect("valid"),
                        store.release(&claim).await.expect("releases"),
                    )
                };
                assert_eq!(got, expected, "step {step}: retire or release {claim:?}");
            }
            _ => {}
        }
    }
    let all = store
        .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
        .await
        .expect("lists");
    assert_eq!(all, table.rows(), "the final tables");
    assert!(
        claims.iter().any(|claim| claim.number > 1),
        "some row was claimed again (a lease taken over, or a release)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_the_store_agrees_with_the_timer_table_call_for_call() {
    let store = SqliteTimerStore::open_in_memory().await.expect("opens");
    agree(&store, 0x5EED).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_file_the_store_agrees_with_the_timer_table_call_for_call() {
    let dir = TempDir::new("timers-model");
    let store = SqliteTimerStore::open(dir.file("model.db"), SqliteOptions::default())
        .await
        .expect("opens");
    agree(&store, 0xF11E).await;
}
