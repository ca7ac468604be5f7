//! What `loomfence recover` prints: a line per recovery and a count, or
//! one JSON object.

use loomfence_core::ExecutionId;
use loomfence_core::recover::RecoverOutcome;
use loomfence_core::timer::{ExhaustedRow, TimerRow};
use serde_json::{Value, json};

/// One recovery: of a record, or of an execution named without one.
pub(crate) struct Recovered {
    /// The execution.
    pub(crate) execution_id: ExecutionId,
    /// The record recovered, if any.
    pub(crate) record: Option<ExhaustedRow>,
    /// How it ended.
    pub(crate) outcome: RecoverOutcome,
}

/// The outcome's name, as the JSON says it.
fn outcome_name(outcome: &RecoverOutcome) -> &'static str {
    match outcome {
        RecoverOutcome::Resumed => "resumed",
        RecoverOutcome::NotParked => "notParked",
        RecoverOutcome::ContendedAgain { .. } => "contendedAgain",
        _ => "noRedriver",
    }
}

/// The row a contended recovery handed on, if any.
fn next_of(outcome: &RecoverOutcome) -> Option<&TimerRow> {
    match outcome {
        RecoverOutcome::ContendedAgain { next } => next.as_ref(),
        _ => None,
    }
}

/// One human line.
pub(crate) fn line(recovered: &Recovered) -> String {
    let what = match &recovered.record {
        Some(record) if record.row.is_redrive() => format!(
            "re-drive chain exhausted after {} tries at {}",
            record.attempts, record.at
        ),
        Some(record) => format!(
            "timer wake at {} exhausted after {} tries",
            record.row.wake_at, record.attempts
        ),
        None => "no exhausted record; re-driven".to_owned(),
    };
    let how = match &recovered.outcome {
        RecoverOutcome::Resumed => "resumed".to_owned(),
        RecoverOutcome::NotParked => "not parked (nothing waits on it any more)".to_owned(),
        RecoverOutcome::ContendedAgain { next: Some(next) } => format!(
            "contended again; the timer services carry on with a row due at {}{}",
            next.wake_at,
            next.redrive
                .map(|r| format!(" (re-drive try {})", r.attempt))
                .unwrap_or_default()
        ),
        RecoverOutcome::ContendedAgain { next: None } => {
            "contended again and given up at once; the record stays".to_owned()
        }
        _ => "no re-driver to try it".to_owned(),
    };
    format!("{}: {what}: {how}", recovered.execution_id.as_str())
}

/// How many ended each way: resumed, not parked, contended again.
pub(crate) fn counts(all: &[Recovered]) -> (usize, usize, usize) {
    let count = |name: &str| {
        all.iter()
            .filter(|r| outcome_name(&r.outcome) == name)
            .count()
    };
    (
        count("resumed"),
        count("notParked"),
        count("contendedAgain"),
    )
}

/// The summary line.
pub(crate) fn summary(all: &[Recovered]) -> String {
    let (resumed, not_parked, contended) = counts(all);
    let n = all.len();
    format!(
        "{n} {}: {resumed} resumed, {not_parked} not parked, {contended} contended again",
        if n == 1 { "recovery" } else { "recoveries" }
    )
}

/// The whole report as one JSON object.
pub(crate) fn to_json(store: &str, all: &[Recovered]) -> Value {
    let (resumed, not_parked, contended) = counts(all);
    let recovered: Vec<Value> = all
        .iter()
        .map(|r| {
            json!({
                "executionId": r.execution_id.as_str(),
                "wakeAt": r.record.as_ref().map(|record| record.row.wake_at),
                "redrive": r.record.as_ref().is_some_and(|record| record.row.is_redrive()),
                "outcome": outcome_name(&r.outcome),
                "next": next_of(&r.outcome),
            })
        })
        .collect();
    json!({
        "store": store,
        "recovered": recovered,
        "counts": { "resumed": resumed, "notParked": not_parked, "contendedAgain": contended },
    })
}
