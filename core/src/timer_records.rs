//! What a timer store keeps for an operator besides its live rows: the rows
//! whose tries ran out, and the listing an operator reads the table
//! through.
//!
//! # Why exhaustion is a record beside the timers
//!
//! A fire that gives up (a re-drive chain, or a plain wake contended
//! `max_attempts` times) used to retire its row and write nothing: the
//! error went to one node's log, and nothing in the store said the
//! execution was stuck. So an operator could not list what to recover, and
//! a restart forgot it. The fire now retires the row and records its
//! exhaustion ([`ExhaustedRow`]) **in one timer-store step under its
//! claim** ([`TimerTable::exhaust`](crate::timer::TimerTable::exhaust)),
//! as a reschedule moves a chain on: a fire that lost its claim records
//! nothing, so an exhaustion is recorded once, by the fire that reported
//! it.
//!
//! The record lives in the timer store rather than as an event in the log
//! for three reasons:
//! - it is written under the claim, in the same step as the retire; an
//!   event would be a second write to a second store, with a window between
//!   the two;
//! - the log is the workflow's history, fenced by the body's token; a node
//!   that appends bookkeeping to it would move what readers fold, and an
//!   append must not race the live holder;
//! - "what is exhausted" is then one indexed listing, not a scan of every
//!   log.
//!
//! A record stays until an operator recovers the execution (which clears
//! it) or a later exhaustion of the same key replaces it. Deleting an
//! execution does not clear its records: recovering one whose execution is
//! gone answers "not parked" and clears it.

use serde::{Deserialize, Serialize};

use crate::fire::TimerRow;
use crate::input::{ExecutionId, InputError, MAX_DUE_LIMIT};
use crate::redrive_policy::MAX_TIMER_MS;
use crate::timer_table::{Claim, NodeId, check_claim};

/// What a fire records when it gives up on its row: how many tries were
/// made, and when it gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Exhaustion {
    /// The tries made, as the exhaustion error reports them.
    pub attempts: u32,
    /// When the fire gave up, ms since the epoch, `0..=MAX_TIMER_MS`.
    pub at: i64,
}

/// A row whose tries ran out, kept for an operator: the row as it was when
/// it was retired (its key, and for a re-drive row the try it was), and the
/// exhaustion. Keyed by the row's `(execution_id, wake_at)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExhaustedRow {
    /// The retired row.
    pub row: TimerRow,
    /// The tries made.
    pub attempts: u32,
    /// When the fire gave up.
    pub at: i64,
}

impl ExhaustedRow {
    /// The record of `row` given up on with `exhaustion`.
    #[must_use]
    pub fn new(row: TimerRow, exhaustion: Exhaustion) -> Self {
        Self {
            row,
            attempts: exhaustion.attempts,
            at: exhaustion.at,
        }
    }

    /// The exhaustion part.
    #[must_use]
    pub fn exhaustion(&self) -> Exhaustion {
        Exhaustion {
            attempts: self.attempts,
            at: self.at,
        }
    }
}

/// Checks an exhaustion before it is recorded under `claim`.
pub fn check_exhaust(claim: &Claim, exhaustion: &Exhaustion) -> Result<(), InputError> {
    check_claim(claim)?;
    check_at("at", exhaustion.at)
}

/// Which exhausted records a listing returns: those of one execution or
/// all, after a key, at most `limit`, in `(execution_id, wake_at)` order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ExhaustedQuery {
    /// Only this execution's records.
    pub execution: Option<ExecutionId>,
    /// Only records after this key, `(execution_id, wake_at)`: the last
    /// one of the previous page.
    pub after: Option<(ExecutionId, i64)>,
    /// At most this many, `1..=MAX_DUE_LIMIT`; 0 reads as
    /// [`MAX_DUE_LIMIT`].
    pub limit: usize,
}

impl ExhaustedQuery {
    /// The limit a store applies: `limit`, or [`MAX_DUE_LIMIT`] for 0.
    pub fn checked_limit(&self) -> Result<usize, InputError> {
        checked_limit(self.limit)
    }

    /// Whether `record` is in the listing (ignoring the limit).
    #[must_use]
    pub fn admits(&self, record: &ExhaustedRow) -> bool {
        let key = (&record.row.execution_id, record.row.wake_at);
        self.execution
            .as_ref()
            .is_none_or(|id| *id == record.row.execution_id)
            && self.after.as_ref().is_none_or(|(id, at)| key > (id, *at))
    }
}

/// A live row's claim, as an operator's listing shows it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Held {
    /// Who holds, or last held, the row.
    pub holder: NodeId,
    /// The claim's number.
    pub number: u64,
    /// When its lease ends (or ended): at or before the reader's now, the
    /// row is free to claim again.
    pub expires_at: i64,
}

/// One live row as an operator's listing shows it: the row and its
/// current claim, if any.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TimerEntry {
    /// The row.
    pub row: TimerRow,
    /// Its claim; `None` when nobody claimed it since it was (re)scheduled
    /// or its claim was handed back.
    pub held: Option<Held>,
}

/// Which live rows an operator's listing returns, in the due order
/// `(wake_at, execution_id)`, at most `limit`. Every filter is applied
/// before the limit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TimerQuery {
    /// Only this execution's rows.
    pub execution: Option<ExecutionId>,
    /// Only rows due at this time (`wake_at <= due_by`).
    pub due_by: Option<i64>,
    /// Only re-drive rows.
    pub redrive_only: bool,
    /// Only rows after this key, `(wake_at, execution_id)`: the last one
    /// of the previous page.
    pub after: Option<(i64, ExecutionId)>,
    /// At most this many, `1..=MAX_DUE_LIMIT`; 0 reads as
    /// [`MAX_DUE_LIMIT`].
    pub limit: usize,
}

impl TimerQuery {
    /// Checks the times and returns the limit a store applies.
    pub fn checked_limit(&self) -> Result<usize, InputError> {
        if let Some(due_by) = self.due_by {
            check_at("dueBy", due_by)?;
        }
        if let Some((wake_at, _)) = &self.after {
            check_at("after", *wake_at)?;
        }
        checked_limit(self.limit)
    }

    /// Whether `row` is in the listing (ignoring the limit).
    #[must_use]
    pub fn admits(&self, row: &TimerRow) -> bool {
        self.execution
            .as_ref()
            .is_none_or(|id| *id == row.execution_id)
            && self.due_by.is_none_or(|due_by| row.wake_at <= due_by)
            && (!self.redrive_only || row.is_redrive())
            && self
                .after
                .as_ref()
                .is_none_or(|(at, id)| row.due_key() > (*at, id))
    }
}

/// Checks the time of a key handed to an operator's clear.
pub fn check_clear(wake_at: i64) -> Result<(), InputError> {
    check_at("wakeAt", wake_at)
}

/// A limit of a listing: `1..=MAX_DUE_LIMIT`, 0 for the most.
fn checked_limit(limit: usize) -> Result<usize, InputError> {
    match limit {
        0 => Ok(MAX_DUE_LIMIT),
        1..=MAX_DUE_LIMIT => Ok(limit),
        _ => Err(InputError::DueLimit { limit }),
    }
}

/// Checks a time argument is in `0..=MAX_TIMER_MS`.
fn check_at(what: &'static str, value: i64) -> Result<(), InputError> {
    if (0..=MAX_TIMER_MS).contains(&value) {
        Ok(())
    } else {
        Err(InputError::Time { what, value })
    }
}
