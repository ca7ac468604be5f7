//! The store against the core's [`TimerTable`], call for call: thousands of
//! mixed schedules, listings, claims, takeovers, completes, releases,
//! reschedules, exhaustions, operator listings and clears, the same on
//! both, every answer and the final tables (rows and exhausted records)
//! equal. The other
//! cases check each rule alone; this one checks their interleavings (a
//! schedule on a held row, a release then a takeover, a stale claim after
//! both).

use loomfence_core::timer::{
    Claim, DueFilter, ExhaustedQuery, Exhaustion, Lease, MAX_DUE_LIMIT, MAX_TIMER_MS, NodeId,
    TimerQuery, TimerRow, TimerTable,
};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::Timers;
use super::support::readable;
use crate::support::id;

/// Calls per run.
const STEPS: usize = 2_000;

/// The run's seed: `TIMER_KIT_SEED` if set, else a fixed one; printed so a
/// failure can be replayed.
fn seed() -> u64 {
    let seed = std::env::var("TIMER_KIT_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0x5EED_7153);
    println!("TIMER_KIT_SEED={seed}");
    seed
}

/// The call generator: a seeded `StdRng` and the few draws the calls need.
struct Rng(StdRng);

impl Rng {
    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n)
    }

    /// A small count or time in `0..n`.
    fn small(&mut self, n: u64) -> i64 {
        i64::try_from(self.below(n)).unwrap_or(0)
    }

    /// One of `items`.
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[usize::try_from(self.below(items.len() as u64)).unwrap_or(0)]
    }
}

/// Runs 2,000 seeded random calls on `store` and on a [`TimerTable`],
/// comparing every answer and, at the end, every row.
pub async fn agrees_with_the_reference_table_call_for_call(store: Timers) {
    let mut table = TimerTable::new();
    let mut rng = Rng(StdRng::seed_from_u64(seed()));
    let ids = ["a", "B", "é", "a b", "z"];
    let holders = ["n1", "n2", "n3"];
    let mut claims: Vec<Claim> = Vec::new();
    for step in 0..STEPS {
        let filter = DueFilter {
            redrive: rng.below(3) != 0,
        };
        match rng.below(8) {
            0 | 1 => {
                let execution = id(rng.pick(&ids));
                let wake_at = rng.small(6) * 10;
                let row = if rng.below(3) == 0 {
                    let attempt = u32::try_from(rng.below(3)).unwrap_or(0);
                    TimerRow::redrive(execution, wake_at, attempt)
                } else {
                    TimerRow::wake(execution, wake_at)
                };
                table.schedule(&row).expect("a valid row");
                store.schedule(&row).await.expect("schedules");
            }
            2 => {
                let now = rng.small(70);
                let limit = 1 + usize::try_from(rng.below(4)).unwrap_or(0);
                let expected = table.due(now, limit, filter).expect("a valid listing");
                let got = store.due(now, limit, filter).await.expect("lists");
                assert_eq!(
                    got, expected,
                    "step {step}: due({now}, {limit}, {filter:?})"
                );
            }
            3 => {
                let lease = Lease {
                    holder: NodeId::new(rng.pick(&holders)).expect("a node id"),
                    now: rng.small(80),
                    duration_ms: 1 + rng.below(30),
                };
                let limit = 1 + usize::try_from(rng.below(3)).unwrap_or(0);
                let expected = table
                    .claim_due(&lease, limit, filter)
                    .expect("a valid lease");
                let got = readable(
                    store
                        .claim_due(&lease, limit, filter)
                        .await
                        .expect("claims"),
                );
                assert_eq!(got, expected, "step {step}: claim_due({lease:?}, {limit})");
                claims.extend(got);
            }
            _ if !claims.is_empty() => {
                let index = usize::try_from(rng.below(claims.len() as u64)).unwrap_or(0);
                let claim = claims[index].clone();
                let (expected, got) = match rng.below(4) {
                    0 => (
                        table.complete(&claim).expect("a valid claim"),
                        store.complete(&claim).await.expect("completes"),
                    ),
                    1 => (
                        table.release(&claim).expect("a valid claim"),
                        store.release(&claim).await.expect("releases"),
                    ),
                    2 => {
                        let exhaustion = Exhaustion {
                            attempts: u32::try_from(rng.below(5)).unwrap_or(0),
                            at: rng.small(100),
                        };
                        (
                            table
                                .exhaust(&claim, &exhaustion)
                                .expect("a valid exhaustion"),
                            store.exhaust(&claim, &exhaustion).await.expect("exhausts"),
                        )
                    }
                    _ => {
                        // The next row: a later time of the same execution
                        // (sometimes a key that exists), a plain or a
                        // re-drive row.
                        let wake_at = claim.row.wake_at + 10 * (1 + rng.small(3));
                        let attempt = u32::try_from(rng.below(3)).unwrap_or(0);
                        let next = if rng.below(4) == 0 {
                            TimerRow::wake(claim.row.execution_id.clone(), wake_at)
                        } else {
                            TimerRow::redrive(claim.row.execution_id.clone(), wake_at, attempt)
                        };
                        (
                            table.reschedule(&claim, &next).expect("a valid reschedule"),
                            store.reschedule(&claim, &next).await.expect("reschedules"),
                        )
                    }
                };
                assert_eq!(
                    got, expected,
                    "step {step}: complete, release, exhaust or reschedule {claim:?}"
                );
            }
            6 => {
                let query = TimerQuery {
                    execution: (rng.below(3) == 0).then(|| id(rng.pick(&ids))),
                    due_by: (rng.below(3) == 0).then(|| rng.small(70)),
                    redrive_only: rng.below(3) == 0,
                    after: (rng.below(3) == 0).then(|| (rng.small(6) * 10, id(rng.pick(&ids)))),
                    limit: usize::try_from(rng.below(4)).unwrap_or(0),
                };
                let expected = table.list(&query).expect("a valid listing");
                let got = store.list(&query).await.expect("lists");
                assert_eq!(got.unreadable, [], "step {step}: list({query:?})");
                assert_eq!(got.entries, expected, "step {step}: list({query:?})");
                let records = ExhaustedQuery {
                    execution: (rng.below(3) == 0).then(|| id(rng.pick(&ids))),
                    after: (rng.below(3) == 0).then(|| (id(rng.pick(&ids)), rng.small(6) * 10)),
                    limit: usize::try_from(rng.below(4)).unwrap_or(0),
                };
                assert_eq!(
                    store.exhausted(&records).await.expect("lists the records"),
                    table.exhausted(&records).expect("a valid listing"),
                    "step {step}: exhausted({records:?})"
                );
            }
            7 => {
                let execution = id(rng.pick(&ids));
                let wake_at = rng.small(6) * 10;
                assert_eq!(
                    store
                        .clear_exhausted(&execution, wake_at)
                        .await
                        .expect("clears"),
                    table
                        .clear_exhausted(&execution, wake_at)
                        .expect("a valid clear"),
                    "step {step}: clear_exhausted({execution}, {wake_at})"
                );
            }
            _ => {}
        }
    }
    let all = store
        .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
        .await
        .expect("lists");
    assert_eq!(all, table.rows(), "the final tables");
    let records = store
        .exhausted(&ExhaustedQuery::default())
        .await
        .expect("lists the records");
    assert_eq!(records, table.exhausted_rows(), "the final records");
    assert!(!records.is_empty(), "some exhaustion was recorded and kept");
    assert!(
        claims.iter().any(|claim| claim.number > 1),
        "some row was claimed again (a lease taken over, or a release)"
    );
}
