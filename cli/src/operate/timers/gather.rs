//! The rows `loomfence timers` lists, read from the timer store (reads
//! only) with the filters in the store's query.

use loomfence_core::ExecutionId;
use loomfence_core::timer::{ExhaustedRow, TimerQuery};

use crate::error::CliError;
use crate::operate::timer_rows::{self, Rows};
use crate::store::ExistingStore;

/// What to list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Filters {
    /// Only rows due now.
    pub(crate) due: bool,
    /// Only re-drive rows and records.
    pub(crate) redrive: bool,
    /// Only this execution's.
    pub(crate) execution: Option<ExecutionId>,
    /// At most this many rows and this many records.
    pub(crate) limit: Option<usize>,
}

/// The listing.
#[derive(Debug)]
pub(crate) struct Listing {
    /// The store, as output names it.
    pub(crate) store: String,
    /// When it was read (ms): what "due" and "claimed" are judged against.
    pub(crate) now: i64,
    /// The filters.
    pub(crate) filters: Filters,
    /// The live rows (and the unreadable ones of their range).
    pub(crate) rows: Rows,
    /// The exhausted records.
    pub(crate) exhausted: Vec<ExhaustedRow>,
    /// Whether --limit cut the records.
    pub(crate) exhausted_truncated: bool,
}

/// Reads the listing.
pub(crate) async fn gather(
    store: &ExistingStore,
    shown: String,
    filters: Filters,
    now: i64,
) -> Result<Listing, CliError> {
    let query = TimerQuery {
        execution: filters.execution.clone(),
        due_by: filters.due.then_some(now),
        redrive_only: filters.redrive,
        after: None,
        limit: 0,
    };
    let rows = timer_rows::list_rows(&*store.timers, query, filters.limit)
        .await
        .map_err(CliError::store("listing the timer rows"))?;
    let redrive_only = filters.redrive;
    let (exhausted, exhausted_truncated) = timer_rows::list_exhausted(
        &*store.timers,
        filters.execution.clone(),
        |record| !redrive_only || record.row.is_redrive(),
        filters.limit,
    )
    .await
    .map_err(CliError::store("listing the exhausted records"))?;
    Ok(Listing {
        store: shown,
        now,
        filters,
        rows,
        exhausted,
        exhausted_truncated,
    })
}
