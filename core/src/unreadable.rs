//! Timer rows a store holds but cannot read, and the rules every host
//! shares for them.
//!
//! A row written behind a store's back (a hand edit, a buggy writer, an
//! older or foreign engine) can hold a value no checked write produces: a
//! re-drive flag that is not `{"attempt": n}`, an empty id, a negative
//! time. Such a row must not stop the fleet's timers: a claim leaves it
//! unclaimed, gives no page slot to it, and answers it beside the claims as
//! an [`UnreadableRow`], named by its key so an operator can find and
//! repair or delete it. A node reports each one once
//! ([`UnreadableReports`]), not on every tick.

use std::collections::VecDeque;

use serde::Serialize;

use crate::fire::Redrive;
use crate::input::MAX_REDRIVE_ATTEMPT;

/// How many unreadable rows a node remembers having reported.
pub const UNREADABLE_REPORTS_BOUND: usize = 1024;

/// The column of a timer row that did not read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum UnreadableField {
    /// The id is not a valid [`ExecutionId`](crate::ExecutionId) (or not
    /// text at all).
    ExecutionId,
    /// The time is not an integer in `0..=MAX_TIMER_MS`.
    WakeAt,
    /// The re-drive flag is neither absent nor `{"attempt": n}` with `n`
    /// in `0..=MAX_REDRIVE_ATTEMPT`.
    Redrive,
    /// The claim count is not a non-negative integer.
    Claims,
    /// The claim as a whole: a JavaScript host store's claim element that
    /// is malformed as a whole or in a field other than the row's (its
    /// `holder`, `number` or `expiresAt`), or a row a store's own claim
    /// check refused with no single column to blame.
    Claim,
}

/// A due row a claim could not read: not claimed, reported instead.
///
/// It names the row by its key as stored, so an operator can find it even
/// when the id itself is the damage.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreadableRow {
    /// The stored id, as text (lossily decoded if it is not UTF-8 text);
    /// it may not be a valid id.
    pub execution_id: String,
    /// The stored time, `None` when it is not an integer.
    pub wake_at: Option<i64>,
    /// Which column did not read back.
    pub field: UnreadableField,
    /// What was wrong with it, short, for the operator.
    pub detail: String,
}

/// Reads a stored re-drive flag, the JSON text `{"attempt": n}` with `n`
/// in `0..=MAX_REDRIVE_ATTEMPT` and no other field, as the reference
/// design stores it. Anything else (JSON `null`, another type, a missing,
/// fractional, negative or too large attempt, an extra field, text that is
/// not JSON) is refused with a short reason that reads after the value
/// ("is not a re-drive flag …"), never guessed at.
pub fn read_redrive_flag(json: &[u8]) -> Result<Redrive, String> {
    let refused =
        |e: &dyn std::fmt::Display| format!("is not a re-drive flag {{\"attempt\": n}}: {e}");
    let value: serde_json::Value = serde_json::from_slice(json).map_err(|e| refused(&e))?;
    // Serde would also read the array `[n]` as the struct.
    if !value.is_object() {
        return Err(refused(&"not a JSON object"));
    }
    let flag: Redrive = serde_json::from_value(value).map_err(|e| refused(&e))?;
    if flag.attempt > MAX_REDRIVE_ATTEMPT {
        return Err(format!(
            "holds attempt {}, above the limit {MAX_REDRIVE_ATTEMPT}",
            flag.attempt
        ));
    }
    Ok(flag)
}

/// The unreadable rows one node has reported, so that it reports each once
/// rather than on every tick.
///
/// Keyed by the row's key (id text, time). It holds at most `bound` keys;
/// beyond that the oldest is forgotten, so a row still unreadable after
/// `bound` newer ones were reported is reported once more. A row that is
/// repaired and later damaged again under the same key is not reported
/// again while its key is remembered.
///
/// A lookup scans the remembered keys: at most `bound` of them, once per
/// unreadable row a claim answers, which is rare; a set beside the queue
/// would cost the npm package's `.wasm` 8 KB for no time a node notices.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnreadableReports {
    /// Keys in the order they were first reported.
    order: VecDeque<(String, Option<i64>)>,
    /// How many keys it keeps.
    bound: usize,
}

impl Default for UnreadableReports {
    fn default() -> Self {
        Self::with_bound(UNREADABLE_REPORTS_BOUND)
    }
}

impl UnreadableReports {
    /// Empty, remembering up to [`UNREADABLE_REPORTS_BOUND`] rows.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty, remembering up to `bound` rows (at least one).
    #[must_use]
    pub fn with_bound(bound: usize) -> Self {
        Self {
            order: VecDeque::new(),
            bound: bound.max(1),
        }
    }

    /// Whether `row` is to be reported now: `true` the first time its key
    /// is seen (it is then remembered), `false` while it is remembered.
    pub fn first_report(&mut self, row: &UnreadableRow) -> bool {
        let seen = |(id, at): &(String, Option<i64>)| *id == row.execution_id && *at == row.wake_at;
        if self.order.iter().any(seen) {
            return false;
        }
        if self.order.len() >= self.bound {
            self.order.pop_front();
        }
        self.order
            .push_back((row.execution_id.clone(), row.wake_at));
        true
    }

    /// How many rows it remembers.
    #[must_use]
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether it remembers none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, wake_at: i64) -> UnreadableRow {
        UnreadableRow {
            execution_id: id.to_owned(),
            wake_at: Some(wake_at),
            field: UnreadableField::Redrive,
            detail: "bad".to_owned(),
        }
    }

    #[test]
    fn each_row_is_reported_once() {
        let mut reports = UnreadableReports::new();
        assert!(reports.first_report(&row("a", 1)));
        assert!(!reports.first_report(&row("a", 1)));
        assert!(reports.first_report(&row("a", 2)));
        assert_eq!(reports.len(), 2);
    }

    #[test]
    fn beyond_the_bound_the_oldest_is_forgotten() {
        let mut reports = UnreadableReports::with_bound(2);
        for n in 0..3 {
            assert!(reports.first_report(&row("a", n)));
        }
        assert_eq!(reports.len(), 2);
        assert!(!reports.first_report(&row("a", 2)));
        assert!(
            reports.first_report(&row("a", 0)),
            "forgotten, reported again"
        );
    }

    #[test]
    fn the_flag_reader_takes_only_the_stored_shape() {
        assert_eq!(
            read_redrive_flag(b"{\"attempt\":3}"),
            Ok(Redrive { attempt: 3 })
        );
        for bad in [
            "null",
            "{",
            "\"x\"",
            "[0]",
            "{}",
            "{\"attempt\":\"1\"}",
            "{\"attempt\":1.5}",
            "{\"attempt\":-1}",
            "{\"attempt\":2147483648}",
            "{\"attempt\":1,\"x\":2}",
        ] {
            assert!(read_redrive_flag(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
