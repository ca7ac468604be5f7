//! The first re-drive row of a contended resume.

use loomfence_core::{Draw, ExecutionId, TimerRow};
use loomfence_store::TimerStore;

use super::{RedriveScheduleError, SupervisorOptions};
use crate::counters;

/// Writes `parent`'s first re-drive row ([`TimerRow::first_redrive`]) to
/// `timers` and answers its `wake_at`.
pub(super) async fn schedule_first_row(
    timers: &dyn TimerStore,
    options: &SupervisorOptions,
    parent: &ExecutionId,
) -> Result<i64, RedriveScheduleError> {
    let draw = Draw::new((options.random)())?;
    let now = (options.now)();
    let row = TimerRow::first_redrive(parent.clone(), now, &options.policy, draw)
        .ok_or(RedriveScheduleError::NoWakeTime { now })?;
    timers.schedule(&row).await?;
    counters::one(counters::REDRIVE_ROWS);
    Ok(row.wake_at)
}
