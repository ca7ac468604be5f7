//! Bad input: every refusal is a typed [`InputError`] and leaves the
//! store as it was.

use loomfence_core::InputError;
use loomfence_core::timer::{
    Claim, DueFilter, ExhaustedQuery, Exhaustion, Lease, MAX_DUE_LIMIT, MAX_LEASE_MS,
    MAX_REDRIVE_ATTEMPT, MAX_TIMER_MS, TimerQuery, TimerRow,
};
use loomfence_store::StoreError;

use super::Timers;
use super::support::{T0, all_rows, claim_only, lease, node, schedule_all, wake};
use crate::support::id;

/// The input error inside `result`; panics on anything else.
fn input_error<T: std::fmt::Debug>(result: Result<T, StoreError>) -> InputError {
    match result {
        Err(StoreError::Input(error)) => error,
        other => panic!("expected an InputError, got {other:?}"),
    }
}

/// Rows with a negative time, a time past 2^53-1, or an attempt past
/// `MAX_REDRIVE_ATTEMPT` are refused, and the rows already there are
/// untouched (a bad row on an existing key does not merge into it).
pub async fn bad_rows_are_refused_and_change_nothing(store: Timers) {
    schedule_all(&store, &[wake("p", 0)]).await;
    let before = all_rows(&store).await;
    let cases = [
        (
            TimerRow::wake(id("p"), -1),
            InputError::Time {
                what: "wakeAt",
                value: -1,
            },
        ),
        (
            TimerRow::wake(id("p"), MAX_TIMER_MS + 1),
            InputError::Time {
                what: "wakeAt",
                value: MAX_TIMER_MS + 1,
            },
        ),
        (
            TimerRow::redrive(id("p"), T0, MAX_REDRIVE_ATTEMPT + 1),
            InputError::Attempt {
                attempt: MAX_REDRIVE_ATTEMPT + 1,
            },
        ),
        (
            TimerRow::redrive(id("p"), T0, u32::MAX),
            InputError::Attempt { attempt: u32::MAX },
        ),
    ];
    for (row, expected) in cases {
        assert_eq!(input_error(store.schedule(&row).await), expected, "{row:?}");
    }
    assert_eq!(all_rows(&store).await, before);
}

/// A listing at a time out of range, or with a limit of 0 or above
/// `MAX_DUE_LIMIT`, is refused.
pub async fn bad_listings_are_refused(store: Timers) {
    schedule_all(&store, &[wake("p", 0)]).await;
    let all = DueFilter::default();
    assert_eq!(
        input_error(store.due(-1, 10, all).await),
        InputError::Time {
            what: "now",
            value: -1
        }
    );
    assert_eq!(
        input_error(store.due(i64::MAX, 10, all).await),
        InputError::Time {
            what: "now",
            value: i64::MAX
        }
    );
    for limit in [0, MAX_DUE_LIMIT + 1, usize::MAX] {
        assert_eq!(
            input_error(store.due(T0, limit, all).await),
            InputError::DueLimit { limit }
        );
    }
}

/// A claim with a lease of 0 ms, above `MAX_LEASE_MS`, ending past 2^53-1,
/// at a bad time or with a bad limit is refused and claims nothing: the row
/// is free for the next good claim.
pub async fn bad_leases_are_refused_and_claim_nothing(store: Timers) {
    schedule_all(&store, &[wake("p", 0)]).await;
    let all = DueFilter::default();
    let with = |now: i64, duration_ms: u64| Lease {
        holder: node("n1"),
        now,
        duration_ms,
    };
    for (now, duration_ms) in [(T0, 0), (T0, MAX_LEASE_MS + 1), (MAX_TIMER_MS - 10, 11)] {
        assert_eq!(
            input_error(store.claim_due(&with(now, duration_ms), 10, all).await),
            InputError::LeaseDuration { duration_ms, now },
        );
    }
    assert_eq!(
        input_error(store.claim_due(&with(-5, 1_000), 10, all).await),
        InputError::Time {
            what: "now",
            value: -5
        }
    );
    assert_eq!(
        input_error(store.claim_due(&with(T0, 1_000), 0, all).await),
        InputError::DueLimit { limit: 0 }
    );
    // The longest lease that ends exactly at 2^53-1 is accepted.
    let edge = store
        .claim_due(&with(MAX_TIMER_MS - 10, 10), 10, all)
        .await
        .expect("a lease ending at 2^53-1")
        .claims;
    assert_eq!(edge.len(), 1);
    assert_eq!(edge[0].expires_at, MAX_TIMER_MS);
}

/// A complete or release naming a row with a time or attempt out of range
/// is refused and retires nothing.
pub async fn bad_claims_are_refused_and_change_nothing(store: Timers) {
    schedule_all(&store, &[wake("p", 0)]).await;
    let held = claim_only(&store, &lease("owner", 0), &wake("p", 0)).await;
    let bad_time = Claim {
        row: TimerRow::wake(id("p"), -1),
        ..held.clone()
    };
    let bad_attempt = Claim {
        row: TimerRow::redrive(id("p"), T0, MAX_REDRIVE_ATTEMPT + 1),
        ..held.clone()
    };
    for bad in [&bad_time, &bad_attempt] {
        assert!(matches!(
            store.complete(bad).await,
            Err(StoreError::Input(_))
        ));
        assert!(matches!(
            store.release(bad).await,
            Err(StoreError::Input(_))
        ));
    }
    assert_eq!(all_rows(&store).await, vec![wake("p", 0)]);
    assert_eq!(
        store.complete(&held).await.expect("complete"),
        loomfence_core::timer::Completed::Done
    );
}

/// An exhaustion given up at a time out of range, or naming a row out of
/// range, is refused and records nothing: the row stays held and its claim
/// still exhausts it. An operator's listing with a limit above
/// `MAX_DUE_LIMIT` or a time out of range, and a clear at a time out of
/// range, are refused too and change nothing.
pub async fn bad_exhaustions_and_operator_queries_are_refused_and_change_nothing(store: Timers) {
    schedule_all(&store, &[wake("p", 0), wake("q", 5)]).await;
    let held = claim_only(&store, &lease("owner", 0), &wake("p", 0)).await;
    for at in [-1, MAX_TIMER_MS + 1, i64::MIN] {
        assert_eq!(
            input_error(store.exhaust(&held, &Exhaustion { attempts: 1, at }).await),
            InputError::Time {
                what: "at",
                value: at
            }
        );
    }
    let bad_row = Claim {
        row: TimerRow::wake(id("p"), -1),
        ..held.clone()
    };
    assert!(matches!(
        store
            .exhaust(
                &bad_row,
                &Exhaustion {
                    attempts: 1,
                    at: T0
                }
            )
            .await,
        Err(StoreError::Input(_))
    ));
    let none = ExhaustedQuery::default();
    assert_eq!(store.exhausted(&none).await.expect("lists"), []);
    assert_eq!(all_rows(&store).await, vec![wake("p", 0), wake("q", 5)]);
    for limit in [MAX_DUE_LIMIT + 1, usize::MAX] {
        assert_eq!(
            input_error(
                store
                    .list(&TimerQuery {
                        limit,
                        ..TimerQuery::default()
                    })
                    .await
            ),
            InputError::DueLimit { limit }
        );
        assert_eq!(
            input_error(
                store
                    .exhausted(&ExhaustedQuery {
                        limit,
                        ..ExhaustedQuery::default()
                    })
                    .await
            ),
            InputError::DueLimit { limit }
        );
    }
    for value in [-1, MAX_TIMER_MS + 1] {
        assert_eq!(
            input_error(
                store
                    .list(&TimerQuery {
                        due_by: Some(value),
                        ..TimerQuery::default()
                    })
                    .await
            ),
            InputError::Time {
                what: "dueBy",
                value
            }
        );
        assert_eq!(
            input_error(
                store
                    .list(&TimerQuery {
                        after: Some((value, id("p"))),
                        ..TimerQuery::default()
                    })
                    .await
            ),
            InputError::Time {
                what: "after",
                value
            }
        );
        assert_eq!(
            input_error(store.clear_exhausted(&id("p"), value).await),
            InputError::Time {
                what: "wakeAt",
                value
            }
        );
    }
    // Nothing changed: the claim is current and exhausts the row.
    assert_eq!(all_rows(&store).await, vec![wake("p", 0), wake("q", 5)]);
    assert_eq!(
        store
            .exhaust(
                &held,
                &Exhaustion {
                    attempts: 2,
                    at: T0
                }
            )
            .await
            .expect("exhausts"),
        loomfence_core::timer::Completed::Done
    );
    assert_eq!(store.exhausted(&none).await.expect("lists").len(), 1);
    assert!(store.clear_exhausted(&id("p"), T0).await.expect("clears"));
}
