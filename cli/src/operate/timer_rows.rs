//! A timer store's rows as an operator reads them, shared by
//! `loomfence timers` (every row) and `loomfence inspect` (one
//! execution's): paged reads, each row's state against now, and its line
//! and JSON.

use std::collections::BTreeSet;

use loomfence_core::ExecutionId;
use loomfence_core::timer::{
    ExhaustedQuery, ExhaustedRow, MAX_DUE_LIMIT, TimerEntry, TimerQuery, UnreadableRow,
};
use loomfence_store::{StoreError, TimerStore};
use serde_json::{Value, json};

use super::when;

/// Live rows read page by page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rows {
    /// The rows, in due order.
    pub(crate) entries: Vec<TimerEntry>,
    /// The rows of the listed range that did not read back, each once.
    pub(crate) unreadable: Vec<UnreadableRow>,
    /// Whether more rows matched than the limit let through.
    pub(crate) truncated: bool,
}

/// Reads the rows `query` names (its filters, its `after` moved page by
/// page), at most `limit` of them (all when `None`).
pub(crate) async fn list_rows(
    timers: &dyn TimerStore,
    query: TimerQuery,
    limit: Option<usize>,
) -> Result<Rows, StoreError> {
    list_rows_by(timers, query, limit, MAX_DUE_LIMIT).await
}

/// [`list_rows`] in pages of at most `page` rows.
async fn list_rows_by(
    timers: &dyn TimerStore,
    mut query: TimerQuery,
    limit: Option<usize>,
    page: usize,
) -> Result<Rows, StoreError> {
    let mut entries = Vec::new();
    let mut unreadable = BTreeSet::new();
    loop {
        // One more than the limit, to know whether it cut anything.
        let wanted = limit.map_or(page, |limit| (limit + 1).saturating_sub(entries.len()));
        query.limit = wanted.clamp(1, page);
        let page = timers.list(&query).await?;
        unreadable.extend(page.unreadable);
        let full = page.entries.len() == query.limit;
        if let Some(last) = page.entries.last() {
            query.after = Some((last.row.wake_at, last.row.execution_id.clone()));
        }
        entries.extend(page.entries);
        if !full || limit.is_some_and(|limit| entries.len() > limit) {
            break;
        }
    }
    let truncated = limit.is_some_and(|limit| entries.len() > limit);
    if let Some(limit) = limit {
        entries.truncate(limit);
    }
    Ok(Rows {
        entries,
        unreadable: unreadable.into_iter().collect(),
        truncated,
    })
}

/// Exhausted records read page by page: those of `execution` (all when
/// `None`) that `keep` admits, at most `limit` (all when `None`); and
/// whether the limit cut any.
pub(crate) async fn list_exhausted(
    timers: &dyn TimerStore,
    execution: Option<ExecutionId>,
    keep: impl Fn(&ExhaustedRow) -> bool,
    limit: Option<usize>,
) -> Result<(Vec<ExhaustedRow>, bool), StoreError> {
    list_exhausted_by(timers, execution, keep, limit, MAX_DUE_LIMIT).await
}

/// [`list_exhausted`] in pages of at most `page` records.
async fn list_exhausted_by(
    timers: &dyn TimerStore,
    execution: Option<ExecutionId>,
    keep: impl Fn(&ExhaustedRow) -> bool,
    limit: Option<usize>,
    page: usize,
) -> Result<(Vec<ExhaustedRow>, bool), StoreError> {
    let mut query = ExhaustedQuery {
        execution,
        after: None,
        limit: page,
    };
    let mut records = Vec::new();
    loop {
        let page = timers.exhausted(&query).await?;
        let full = page.len() == query.limit;
        if let Some(last) = page.last() {
            query.after = Some((last.row.execution_id.clone(), last.row.wake_at));
        }
        records.extend(page.into_iter().filter(|record| keep(record)));
        if !full || limit.is_some_and(|limit| records.len() > limit) {
            break;
        }
    }
    let truncated = limit.is_some_and(|limit| records.len() > limit);
    if let Some(limit) = limit {
        records.truncate(limit);
    }
    Ok((records, truncated))
}

/// Where a live row stands at `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowState {
    /// A node holds it: its lease ends after now.
    Claimed,
    /// Due (`wake_at <= now`) and nobody holds it (or the lease ended).
    Due,
    /// Not due yet.
    Pending,
}

impl RowState {
    /// Of `entry` at `now`.
    pub(crate) fn of(entry: &TimerEntry, now: i64) -> Self {
        if entry
            .held
            .as_ref()
            .is_some_and(|held| held.expires_at > now)
        {
            RowState::Claimed
        } else if entry.row.wake_at <= now {
            RowState::Due
        } else {
            RowState::Pending
        }
    }

    /// The name the JSON uses.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RowState::Claimed => "claimed",
            RowState::Due => "due",
            RowState::Pending => "pending",
        }
    }
}

/// `plain` or `re-drive (try N)`.
fn kind_of(redrive: Option<u32>) -> String {
    redrive.map_or_else(
        || "plain".to_owned(),
        |try_| format!("re-drive (try {try_})"),
    )
}

/// One row's line: `[EXECUTION ]WAKE (FROM NOW) KIND STATE`.
pub(crate) fn entry_line(entry: &TimerEntry, now: i64, with_execution: bool) -> String {
    let row = &entry.row;
    let state = match (RowState::of(entry, now), &entry.held) {
        (RowState::Claimed, Some(held)) => format!(
            "claimed by {} (claim {}) until {}",
            held.holder,
            held.number,
            when::at_from_now(held.expires_at, now)
        ),
        (state, Some(held)) => format!(
            "{} (the lease of {}, claim {}, ended {})",
            state.as_str(),
            held.holder,
            held.number,
            when::at_from_now(held.expires_at, now)
        ),
        (state, None) => state.as_str().to_owned(),
    };
    let execution = if with_execution {
        format!("{} ", row.execution_id)
    } else {
        String::new()
    };
    format!(
        "{execution}{}  {}  {state}",
        when::at_from_now(row.wake_at, now),
        kind_of(row.redrive.map(|r| r.attempt)),
    )
}

/// One row as JSON: `executionId`, `wakeAt` (ms), `dueInMs` (negative once
/// due), `redrive`, `attempt` (null for a plain row), `state` (`due`,
/// `pending`, `claimed`) and `claim` (`{holder, number, expiresAt,
/// current}`, null when nobody claimed it since it was scheduled; `current`
/// is whether the lease ends after now).
pub(crate) fn entry_json(entry: &TimerEntry, now: i64) -> Value {
    let row = &entry.row;
    json!({
        "executionId": row.execution_id.as_str(),
        "wakeAt": row.wake_at,
        "dueInMs": row.wake_at.saturating_sub(now),
        "redrive": row.is_redrive(),
        "attempt": row.redrive.map(|r| r.attempt),
        "state": RowState::of(entry, now).as_str(),
        "claim": entry.held.as_ref().map(|held| json!({
            "holder": held.holder.as_str(),
            "number": held.number,
            "expiresAt": held.expires_at,
            "current": held.expires_at > now,
        })),
    })
}

/// One exhausted record's line.
pub(crate) fn exhausted_line(record: &ExhaustedRow, now: i64, with_execution: bool) -> String {
    let execution = if with_execution {
        format!("{} ", record.row.execution_id)
    } else {
        String::new()
    };
    format!(
        "{execution}row of {}  {}  gave up after {} tries at {}",
        when::at(record.row.wake_at),
        kind_of(record.row.redrive.map(|r| r.attempt)),
        record.attempts,
        when::at_from_now(record.at, now),
    )
}

/// One exhausted record as JSON: `executionId`, `wakeAt` (the retired
/// row's), `redrive`, `attempt`, `attempts` (tries made), `at` (when it
/// gave up, ms).
pub(crate) fn exhausted_json(record: &ExhaustedRow) -> Value {
    json!({
        "executionId": record.row.execution_id.as_str(),
        "wakeAt": record.row.wake_at,
        "redrive": record.row.is_redrive(),
        "attempt": record.row.redrive.map(|r| r.attempt),
        "attempts": record.attempts,
        "at": record.at,
    })
}

/// One unreadable row's line: its key as stored, the column, what is
/// wrong.
pub(crate) fn unreadable_line(row: &UnreadableRow) -> String {
    let wake = row
        .wake_at
        .map_or_else(|| "(unreadable time)".to_owned(), when::at);
    format!(
        "{:?} at {wake}, column {}: {}",
        row.execution_id,
        unreadable_field(row),
        row.detail
    )
}

/// One unreadable row as JSON: `executionId` (as stored), `wakeAt` (null
/// when not an integer), `field`, `detail`.
pub(crate) fn unreadable_json(row: &UnreadableRow) -> Value {
    json!({
        "executionId": row.execution_id,
        "wakeAt": row.wake_at,
        "field": unreadable_field(row),
        "detail": row.detail,
    })
}

/// The column's name, as the core serializes it.
fn unreadable_field(row: &UnreadableRow) -> String {
    match serde_json::to_value(row.field) {
        Ok(Value::String(name)) => name,
        _ => format!("{:?}", row.field),
    }
}

#[cfg(test)]
mod tests {
    use loomfence_core::timer::{Held, NodeId, TimerRow};
    use loomfence_store::MemoryTimerStore;

    use super::*;

    fn id(name: &str) -> ExecutionId {
        ExecutionId::new(name).unwrap()
    }

    #[test]
    fn a_claim_counts_only_while_its_lease_runs() {
        let held = |expires_at| TimerEntry {
            row: TimerRow::wake(id("a"), 100),
            held: Some(Held {
                holder: NodeId::new("node-1").unwrap(),
                number: 2,
                expires_at,
            }),
        };
        assert_eq!(RowState::of(&held(500), 200), RowState::Claimed);
        assert_eq!(RowState::of(&held(200), 200), RowState::Due);
        let free = TimerEntry {
            row: TimerRow::wake(id("a"), 100),
            held: None,
        };
        assert_eq!(RowState::of(&free, 100), RowState::Due);
        assert_eq!(RowState::of(&free, 99), RowState::Pending);
        assert!(entry_line(&held(500), 200, false).contains("claimed by node-1 (claim 2) until"));
        assert!(entry_line(&held(150), 200, true).starts_with("a "));
        assert!(entry_line(&held(150), 200, true).contains("due (the lease of node-1"));
        assert_eq!(entry_json(&held(150), 200)["claim"]["current"], false);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn pages_until_done_and_says_when_the_limit_cut() {
        let store = MemoryTimerStore::new();
        for at in 1..=5 {
            store.schedule(&TimerRow::wake(id("a"), at)).await.unwrap();
            store
                .schedule(&TimerRow::redrive(id("b"), at, 0))
                .await
                .unwrap();
        }
        let all = list_rows(&store, TimerQuery::default(), None)
            .await
            .unwrap();
        assert_eq!((all.entries.len(), all.truncated), (10, false));
        let cut = list_rows(&store, TimerQuery::default(), Some(3))
            .await
            .unwrap();
        assert_eq!((cut.entries.len(), cut.truncated), (3, true));
        let exact = list_rows(
            &store,
            TimerQuery {
                redrive_only: true,
                ..TimerQuery::default()
            },
            Some(5),
        )
        .await
        .unwrap();
        assert_eq!((exact.entries.len(), exact.truncated), (5, false));
        assert!(exact.entries.iter().all(|e| e.row.is_redrive()));
        // In pages of 2: every row once, in due order, and the limit kept.
        for limit in [None, Some(3), Some(9), Some(10), Some(11)] {
            let paged = list_rows_by(&store, TimerQuery::default(), limit, 2)
                .await
                .unwrap();
            let whole = list_rows(&store, TimerQuery::default(), limit)
                .await
                .unwrap();
            assert_eq!(paged, whole, "{limit:?}");
            assert_eq!(whole.truncated, limit.is_some_and(|l| l < 10), "{limit:?}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn exhausted_records_page_and_filter_before_the_limit() {
        use loomfence_core::timer::{DueFilter, Exhaustion, Lease};
        let store = MemoryTimerStore::new();
        for at in 1..=6 {
            let row = if at % 2 == 0 {
                TimerRow::redrive(id("a"), at, 3)
            } else {
                TimerRow::wake(id("b"), at)
            };
            store.schedule(&row).await.unwrap();
        }
        let lease = Lease {
            holder: NodeId::new("n").unwrap(),
            now: 10,
            duration_ms: 1000,
        };
        let page = store
            .claim_due(&lease, 10, DueFilter::default())
            .await
            .unwrap();
        for claim in &page.claims {
            let gave_up = Exhaustion {
                attempts: 4,
                at: 10,
            };
            assert_eq!(
                store.exhaust(claim, &gave_up).await.unwrap(),
                loomfence_core::timer::Completed::Done
            );
        }
        let (all, cut) = list_exhausted_by(&store, None, |_| true, None, 2)
            .await
            .unwrap();
        assert_eq!((all.len(), cut), (6, false));
        let (redrive, cut) = list_exhausted_by(&store, None, |r| r.row.is_redrive(), Some(2), 2)
            .await
            .unwrap();
        assert_eq!((redrive.len(), cut), (2, true));
        assert!(redrive.iter().all(|r| r.row.is_redrive()));
        let (of_b, _) = list_exhausted_by(&store, Some(id("b")), |_| true, None, 2)
            .await
            .unwrap();
        assert_eq!(
            of_b.iter().map(|r| r.row.wake_at).collect::<Vec<_>>(),
            vec![1, 3, 5]
        );
    }
}
