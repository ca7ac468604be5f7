//! Helpers the timer cases share: rows, leases and the "nothing changed"
//! witness.

use loomfence_core::timer::{
    Claim, DueFilter, Lease, MAX_DUE_LIMIT, MAX_TIMER_MS, NodeId, TimerRow,
};

use loomfence_store::ClaimPage;

use super::Timers;
use crate::support::id;

/// The base time of the cases, in ms; any value in range would do.
pub const T0: i64 = 1_700_000_000_000;

/// The lease every case claims with unless it says otherwise.
pub const LEASE_MS: u64 = 30_000;

/// A plain wake of `execution` at `T0 + offset`.
#[must_use]
pub fn wake(execution: &str, offset: i64) -> TimerRow {
    TimerRow::wake(id(execution), T0 + offset)
}

/// A re-drive row of `execution` at `T0 + offset`, try `attempt`.
#[must_use]
pub fn redrive(execution: &str, offset: i64, attempt: u32) -> TimerRow {
    TimerRow::redrive(id(execution), T0 + offset, attempt)
}

/// The node id `name`; panics if invalid, which is a bug in the case.
#[must_use]
pub fn node(name: &str) -> NodeId {
    NodeId::new(name).unwrap_or_else(|e| panic!("{name:?} is not a valid node id: {e}"))
}

/// A lease for `holder` at `T0 + offset`, for [`LEASE_MS`].
#[must_use]
pub fn lease(holder: &str, offset: i64) -> Lease {
    Lease {
        holder: node(holder),
        now: T0 + offset,
        duration_ms: LEASE_MS,
    }
}

/// Schedules every row, in order; panics on a refusal.
pub async fn schedule_all(store: &Timers, rows: &[TimerRow]) {
    for row in rows {
        store
            .schedule(row)
            .await
            .unwrap_or_else(|e| panic!("scheduling {row:?}: {e}"));
    }
}

/// Every row of the store, earliest first: the witness a case compares
/// before and after a refused call.
pub async fn all_rows(store: &Timers) -> Vec<TimerRow> {
    store
        .due(MAX_TIMER_MS, MAX_DUE_LIMIT, DueFilter::default())
        .await
        .expect("listing every row")
}

/// Claims due rows under `lease` (every kind, up to 100); panics on an
/// error.
pub async fn claim(store: &Timers, lease: &Lease) -> Vec<Claim> {
    readable(
        store
            .claim_due(lease, 100, DueFilter::default())
            .await
            .unwrap_or_else(|e| panic!("claiming under {lease:?}: {e}")),
    )
}

/// The claims of a page from a store that holds only rows it wrote:
/// panics if the page reports any row unreadable.
#[must_use]
pub fn readable(page: ClaimPage) -> Vec<Claim> {
    assert_eq!(
        page.unreadable,
        [],
        "no row of a checked store is unreadable"
    );
    page.claims
}

/// Claims under `lease` and expects exactly the row `row`.
pub async fn claim_only(store: &Timers, lease: &Lease, row: &TimerRow) -> Claim {
    let mut claims = claim(store, lease).await;
    assert_eq!(
        claims.iter().map(|c| &c.row).collect::<Vec<_>>(),
        vec![row],
        "{} should claim exactly {row:?}",
        lease.holder
    );
    claims.remove(0)
}
