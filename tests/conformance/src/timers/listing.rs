//! The operator's listing of live rows: each row with its claim, in due
//! order, every filter applied before the limit, paged with `after`.

use loomfence_core::timer::{Held, TimerEntry, TimerQuery, TimerRow};
use loomfence_core::timer::{MAX_DUE_LIMIT, NodeId};

use super::Timers;
use super::support::{LEASE_MS, T0, claim, claim_only, lease, node, redrive, schedule_all, wake};
use crate::support::id;

/// The listing `query` answers, from a store that holds only rows it
/// wrote: panics if it reports any row unreadable.
pub async fn listed(store: &Timers, query: &TimerQuery) -> Vec<TimerEntry> {
    let listing = store
        .list(query)
        .await
        .unwrap_or_else(|e| panic!("listing {query:?}: {e}"));
    assert_eq!(
        listing.unreadable,
        [],
        "no row of a checked store is unreadable"
    );
    listing.entries
}

/// The rows of `entries`.
fn rows(entries: &[TimerEntry]) -> Vec<TimerRow> {
    entries.iter().map(|entry| entry.row.clone()).collect()
}

/// An unclaimed entry.
fn free(row: TimerRow) -> TimerEntry {
    TimerEntry { row, held: None }
}

/// An entry held by `holder` under claim `number` until `expires_at`.
fn held(row: TimerRow, holder: &str, number: u64, expires_at: i64) -> TimerEntry {
    TimerEntry {
        row,
        held: Some(Held {
            holder: node(holder),
            number,
            expires_at,
        }),
    }
}

/// The listing shows each row's claim (holder, number, when the lease
/// ends); a release or a schedule ends it; a later claim or a takeover
/// shows the higher number.
pub async fn a_listing_shows_each_row_with_its_claim(store: Timers) {
    schedule_all(&store, &[wake("a", 0), redrive("b", 5, 1), wake("c", 50)]).await;
    let everything = TimerQuery::default();
    assert_eq!(
        listed(&store, &everything).await,
        vec![
            free(wake("a", 0)),
            free(redrive("b", 5, 1)),
            free(wake("c", 50))
        ]
    );
    let claims = claim(&store, &lease("n1", 5)).await;
    assert_eq!(claims.len(), 2);
    let until = T0 + 5 + LEASE_MS as i64;
    assert_eq!(
        listed(&store, &everything).await,
        vec![
            held(wake("a", 0), "n1", 1, until),
            held(redrive("b", 5, 1), "n1", 1, until),
            free(wake("c", 50)),
        ]
    );
    // A release hands `a` back; a schedule on `b` ends its claim too.
    assert_eq!(
        store.release(&claims[0]).await.expect("releases"),
        loomfence_core::timer::Completed::Done
    );
    store.schedule(&wake("b", 5)).await.expect("schedules");
    assert_eq!(
        listed(&store, &everything).await,
        vec![
            free(wake("a", 0)),
            free(redrive("b", 5, 1)),
            free(wake("c", 50))
        ]
    );
    // Claimed again: the numbers go on from the count.
    let again = claim(&store, &lease("n2", 10)).await;
    assert_eq!(again.len(), 2);
    let until = T0 + 10 + LEASE_MS as i64;
    assert_eq!(
        listed(&store, &everything).await,
        vec![
            held(wake("a", 0), "n2", 2, until),
            held(redrive("b", 5, 1), "n2", 2, until),
            free(wake("c", 50)),
        ]
    );
    // A claim shows until the row is taken over (a listing has no clock:
    // the lease's end says whether it is over); a takeover shows the new
    // holder and a higher number.
    let past = claim_only(&store, &lease("n3", 50), &wake("c", 50)).await;
    let takeover_at = 50 + LEASE_MS as i64;
    assert_eq!(
        listed(
            &store,
            &TimerQuery {
                execution: Some(id("c")),
                ..TimerQuery::default()
            }
        )
        .await,
        vec![held(wake("c", 50), "n3", 1, past.expires_at)]
    );
    let taken = claim(&store, &lease("n4", takeover_at)).await;
    assert_eq!(taken.len(), 3, "every lease had ended");
    let until = T0 + takeover_at + LEASE_MS as i64;
    assert_eq!(
        listed(&store, &everything).await,
        vec![
            held(wake("a", 0), "n4", 3, until),
            held(redrive("b", 5, 1), "n4", 3, until),
            held(wake("c", 50), "n4", 2, until),
        ]
    );
}

/// Rows come earliest first, then by id in byte order, as the due
/// listing orders them; a limit of 0 reads as the most.
pub async fn a_listing_orders_by_time_then_id_in_byte_order(store: Timers) {
    let expected = vec![
        wake("z", -5),
        wake("B", 0),
        wake("a", 0),
        wake("a b", 0),
        redrive("b", 0, 0),
        wake("é", 0),
        wake("A", 1),
    ];
    let mut shuffled = expected.clone();
    shuffled.reverse();
    shuffled.swap(1, 4);
    schedule_all(&store, &shuffled).await;
    assert_eq!(
        rows(&listed(&store, &TimerQuery::default()).await),
        expected
    );
    let most = TimerQuery {
        limit: 0,
        ..TimerQuery::default()
    };
    assert_eq!(rows(&listed(&store, &most).await), expected);
    let max = TimerQuery {
        limit: MAX_DUE_LIMIT,
        ..TimerQuery::default()
    };
    assert_eq!(rows(&listed(&store, &max).await), expected);
}

/// Each filter applies before the limit: rows it leaves out never take
/// the page's slots, whichever filter it is.
pub async fn every_filter_applies_before_the_limit(store: Timers) {
    schedule_all(
        &store,
        &[
            wake("p1", 0),
            wake("p2", 1),
            wake("p3", 2),
            redrive("r", 3, 2),
            wake("late", 1_000),
            wake("x", 2_000),
        ],
    )
    .await;
    let one = |query: TimerQuery| TimerQuery { limit: 1, ..query };
    let redrive_only = one(TimerQuery {
        redrive_only: true,
        ..TimerQuery::default()
    });
    assert_eq!(
        rows(&listed(&store, &redrive_only).await),
        vec![redrive("r", 3, 2)],
        "three plain rows first do not hide the re-drive row"
    );
    let of_x = one(TimerQuery {
        execution: Some(id("x")),
        ..TimerQuery::default()
    });
    assert_eq!(rows(&listed(&store, &of_x).await), vec![wake("x", 2_000)]);
    let after = one(TimerQuery {
        after: Some((T0 + 3, id("r"))),
        ..TimerQuery::default()
    });
    assert_eq!(
        rows(&listed(&store, &after).await),
        vec![wake("late", 1_000)]
    );
    let due_by = TimerQuery {
        due_by: Some(T0 + 1_000),
        ..TimerQuery::default()
    };
    assert_eq!(
        rows(&listed(&store, &due_by).await),
        vec![
            wake("p1", 0),
            wake("p2", 1),
            wake("p3", 2),
            redrive("r", 3, 2),
            wake("late", 1_000)
        ],
        "due_by includes its own time"
    );
    let late_and_due = TimerQuery {
        after: Some((T0 + 2, id("p3"))),
        due_by: Some(T0 + 1_000),
        limit: 5,
        ..TimerQuery::default()
    };
    assert_eq!(
        rows(&listed(&store, &late_and_due).await),
        vec![redrive("r", 3, 2), wake("late", 1_000)]
    );
    let nothing = TimerQuery {
        execution: Some(id("x")),
        due_by: Some(T0 + 1_999),
        ..TimerQuery::default()
    };
    assert_eq!(listed(&store, &nothing).await, []);
    let all_filters = TimerQuery {
        execution: Some(id("r")),
        due_by: Some(T0 + 3),
        redrive_only: true,
        after: Some((T0 + 2, id("zzz"))),
        limit: 1,
    };
    assert_eq!(
        rows(&listed(&store, &all_filters).await),
        vec![redrive("r", 3, 2)]
    );
}

/// Pages chained by `after` (the last entry's `(wake_at, execution_id)`)
/// cover every row once, alone and with a filter; an `after` between two
/// keys, or on one id at another time, pages just the same.
pub async fn a_listing_pages_with_after(store: Timers) {
    let expected = vec![
        wake("a", 0),
        redrive("b", 0, 1),
        wake("a", 10),
        wake("c", 10),
        redrive("a", 20, 0),
        wake("b", 30),
        redrive("c", 40, 3),
    ];
    schedule_all(&store, &expected).await;
    for redrive_only in [false, true] {
        let wanted: Vec<_> = expected
            .iter()
            .filter(|row| !redrive_only || row.is_redrive())
            .cloned()
            .collect();
        let mut query = TimerQuery {
            redrive_only,
            limit: 2,
            ..TimerQuery::default()
        };
        let mut paged = Vec::new();
        // Bounded: an `after` that admits its own key would page forever.
        for _ in 0..=wanted.len() {
            let page = listed(&store, &query).await;
            assert!(page.len() <= 2);
            let Some(last) = page.last() else { break };
            query.after = Some((last.row.wake_at, last.row.execution_id.clone()));
            paged.extend(rows(&page));
        }
        assert_eq!(paged, wanted, "redrive_only {redrive_only}");
    }
    let between = TimerQuery {
        after: Some((T0 + 5, id("zz"))),
        limit: 2,
        ..TimerQuery::default()
    };
    assert_eq!(
        rows(&listed(&store, &between).await),
        expected[2..4].to_vec()
    );
    let same_time = TimerQuery {
        after: Some((T0 + 10, id("b"))),
        limit: 1,
        ..TimerQuery::default()
    };
    assert_eq!(
        rows(&listed(&store, &same_time).await),
        vec![wake("c", 10)],
        "ids at one time compare after the time"
    );
    // A holder listed is the holder that claimed.
    let claims = claim(&store, &lease("only", 0)).await;
    assert_eq!(claims.len(), 2);
    let shown = listed(
        &store,
        &TimerQuery {
            limit: 1,
            ..TimerQuery::default()
        },
    )
    .await;
    assert_eq!(
        shown[0].held.as_ref().map(|h| h.holder.clone()),
        Some(NodeId::new("only").expect("a node id"))
    );
}
