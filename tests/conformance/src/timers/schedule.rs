//! Schedule: rows round-trip, and the upsert keeps or adds the re-drive
//! flag but never clears it.

use loomfence_core::{
    log::MAX_ID_BYTES,
    timer::{MAX_TIMER_MS, TimerRow},
};

use super::Timers;
use super::support::{T0, all_rows, redrive, schedule_all, wake};
use crate::support::id;

/// A plain wake and a re-drive row read back exactly as written, earliest
/// first.
pub async fn rows_round_trip_with_their_flag(store: Timers) {
    let rows = [redrive("b", 20, 3), wake("a", 10)];
    schedule_all(&store, &rows).await;
    assert_eq!(
        all_rows(&store).await,
        vec![wake("a", 10), redrive("b", 20, 3)]
    );
}

/// The earliest and latest storable times (0 and 2^53-1) are kept exactly,
/// with the largest attempt a row may carry.
pub async fn times_at_both_ends_of_the_range_round_trip(store: Timers) {
    let rows = [
        TimerRow::wake(id("zero"), 0),
        TimerRow::redrive(
            id("max"),
            MAX_TIMER_MS,
            loomfence_core::timer::MAX_REDRIVE_ATTEMPT,
        ),
    ];
    schedule_all(&store, &rows).await;
    assert_eq!(all_rows(&store).await, rows.to_vec());
}

/// Ids with quotes, SQL and JSON syntax, non-ASCII text and the longest
/// allowed length are keys like any other.
pub async fn awkward_ids_round_trip(store: Timers) {
    let long = "é".repeat(MAX_ID_BYTES / 2) + "x";
    let ids = [
        "it's \"quoted\"",
        "'); DROP TABLE timers; --",
        "{\"attempt\": 1}",
        "timer 🕰 ünïcode",
        long.as_str(),
    ];
    let rows: Vec<TimerRow> = ids
        .iter()
        .map(|text| TimerRow::wake(id(text), T0))
        .collect();
    schedule_all(&store, &rows).await;
    let mut expected = rows.clone();
    expected.sort();
    assert_eq!(all_rows(&store).await, expected);
}

/// A re-drive row landing on a plain row's key flags it: the row is one
/// row, now a re-drive row.
pub async fn a_redrive_schedule_flags_a_plain_row(store: Timers) {
    schedule_all(&store, &[wake("p", 0), redrive("p", 0, 0)]).await;
    assert_eq!(all_rows(&store).await, vec![redrive("p", 0, 0)]);
}

/// A plain schedule of a re-drive row's key keeps the flag and its attempt:
/// a flagged row is never downgraded.
pub async fn a_plain_schedule_never_clears_the_flag(store: Timers) {
    schedule_all(&store, &[redrive("p", 0, 2), wake("p", 0)]).await;
    assert_eq!(all_rows(&store).await, vec![redrive("p", 0, 2)]);
}

/// A re-drive schedule on a re-drive row's key carries its own attempt
/// (`coalesce(new, old)`: the new flag wins when there is one).
pub async fn a_later_redrive_schedule_carries_its_attempt(store: Timers) {
    schedule_all(&store, &[redrive("p", 0, 1), redrive("p", 0, 4)]).await;
    assert_eq!(all_rows(&store).await, vec![redrive("p", 0, 4)]);
}

/// Scheduling the same row twice keeps one row; other times of the same
/// execution are other rows.
pub async fn scheduling_twice_keeps_one_row(store: Timers) {
    schedule_all(&store, &[wake("p", 0), wake("p", 0), wake("p", 1)]).await;
    assert_eq!(all_rows(&store).await, vec![wake("p", 0), wake("p", 1)]);
}
