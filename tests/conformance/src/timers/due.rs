//! Due: which rows a listing returns, in what order, and how the re-drive
//! filter and the limit combine.

use loomfence_core::timer::{DueFilter, MAX_DUE_LIMIT};

use super::Timers;
use super::support::{T0, claim, lease, redrive, schedule_all, wake};

/// Only rows with `wake_at <= now` are due; `now` itself is included.
pub async fn only_rows_at_or_before_now_are_due(store: Timers) {
    schedule_all(
        &store,
        &[wake("early", -1), wake("now", 0), wake("late", 1)],
    )
    .await;
    let due = store
        .due(T0, MAX_DUE_LIMIT, DueFilter::default())
        .await
        .expect("listing");
    assert_eq!(due, vec![wake("early", -1), wake("now", 0)]);
}

/// Earliest first; rows of one time by id in byte order (an upper-case
/// letter before a lower-case one, whatever a database's collation would
/// say), so every store pages alike.
pub async fn due_rows_come_earliest_first_then_by_id_in_byte_order(store: Timers) {
    schedule_all(
        &store,
        &[
            wake("b", 5),
            wake("a", 5),
            wake("B", 5),
            wake("z", 1),
            wake("é", 5),
        ],
    )
    .await;
    let due = store
        .due(T0 + 5, MAX_DUE_LIMIT, DueFilter::default())
        .await
        .expect("listing");
    assert_eq!(
        due,
        vec![
            wake("z", 1),
            wake("B", 5),
            wake("a", 5),
            wake("b", 5),
            wake("é", 5)
        ]
    );
}

/// The limit keeps the earliest rows.
pub async fn the_limit_takes_the_earliest(store: Timers) {
    let rows: Vec<_> = (0..10).rev().map(|n| wake(&format!("e{n}"), n)).collect();
    schedule_all(&store, &rows).await;
    let due = store
        .due(T0 + 100, 3, DueFilter::default())
        .await
        .expect("listing");
    assert_eq!(due, vec![wake("e0", 0), wake("e1", 1), wake("e2", 2)]);
}

/// A node with no re-driver asks for plain wakes only: five earlier
/// re-drive rows must not fill its page of two and hide the plain wake
/// behind them.
pub async fn the_redrive_filter_applies_before_the_limit(store: Timers) {
    let mut rows: Vec<_> = (0..5).map(|n| redrive(&format!("r{n}"), n, 0)).collect();
    rows.push(wake("plain", 10));
    schedule_all(&store, &rows).await;
    let plain_only = DueFilter { redrive: false };
    let due = store.due(T0 + 10, 2, plain_only).await.expect("listing");
    assert_eq!(due, vec![wake("plain", 10)]);
    let every = store
        .due(T0 + 10, 2, DueFilter::default())
        .await
        .expect("listing");
    assert_eq!(every, vec![redrive("r0", 0, 0), redrive("r1", 1, 0)]);
}

/// A listing shows due rows whether or not someone holds them: it is for
/// inspection, not for firing.
pub async fn claimed_rows_are_still_listed(store: Timers) {
    schedule_all(&store, &[wake("held", 0), wake("free", 1)]).await;
    let held = claim(&store, &lease("n1", 0)).await;
    assert_eq!(held.len(), 1);
    let due = store
        .due(T0 + 1, MAX_DUE_LIMIT, DueFilter::default())
        .await
        .expect("listing");
    assert_eq!(due, vec![wake("held", 0), wake("free", 1)]);
}
