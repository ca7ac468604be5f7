//! `loomfence timers`'s text and JSON.

use serde_json::{Value, json};

use super::gather::Listing;
use crate::operate::timer_rows::{self, RowState};

/// The text, ending in a newline: the rows, the exhausted records and the
/// unreadable rows, each section with its count.
pub(crate) fn human(listing: &Listing) -> String {
    let now = listing.now;
    let mut out = format!("timer store of {}\n", listing.store);
    let (due, pending, claimed) = states(listing);
    out.push_str(&format!(
        "rows ({}: {due} due, {pending} pending, {claimed} claimed){}:\n",
        listing.rows.entries.len(),
        if listing.rows.truncated {
            ", more past --limit"
        } else {
            ""
        }
    ));
    for entry in &listing.rows.entries {
        out.push_str(&format!("  {}\n", timer_rows::entry_line(entry, now, true)));
    }
    out.push_str(&format!(
        "exhausted records ({}){}:\n",
        listing.exhausted.len(),
        if listing.exhausted_truncated {
            ", more past --limit"
        } else {
            ""
        }
    ));
    for record in &listing.exhausted {
        out.push_str(&format!(
            "  {}\n",
            timer_rows::exhausted_line(record, now, true)
        ));
    }
    out.push_str(&format!(
        "unreadable rows ({}):\n",
        listing.rows.unreadable.len()
    ));
    for row in &listing.rows.unreadable {
        out.push_str(&format!("  {}\n", timer_rows::unreadable_line(row)));
    }
    out
}

/// The object (its fields are listed in `--json`'s help).
pub(crate) fn json(listing: &Listing) -> Value {
    let now = listing.now;
    let (due, pending, claimed) = states(listing);
    json!({
        "store": listing.store,
        "now": now,
        "filters": {
            "due": listing.filters.due,
            "redrive": listing.filters.redrive,
            "execution": listing.filters.execution.as_ref().map(|id| id.as_str()),
            "limit": listing.filters.limit,
        },
        "rows": listing.rows.entries.iter().map(|e| timer_rows::entry_json(e, now)).collect::<Vec<_>>(),
        "exhausted": listing.exhausted.iter().map(timer_rows::exhausted_json).collect::<Vec<_>>(),
        "unreadable": listing.rows.unreadable.iter().map(timer_rows::unreadable_json).collect::<Vec<_>>(),
        "counts": {
            "rows": listing.rows.entries.len(),
            "due": due,
            "pending": pending,
            "claimed": claimed,
            "exhausted": listing.exhausted.len(),
            "unreadable": listing.rows.unreadable.len(),
        },
        "truncated": {
            "rows": listing.rows.truncated,
            "exhausted": listing.exhausted_truncated,
        },
    })
}

/// How many rows are due, pending and claimed now.
fn states(listing: &Listing) -> (usize, usize, usize) {
    let count = |state| {
        listing
            .rows
            .entries
            .iter()
            .filter(|entry| RowState::of(entry, listing.now) == state)
            .count()
    };
    (
        count(RowState::Due),
        count(RowState::Pending),
        count(RowState::Claimed),
    )
}
