//! The first re-drive row of a contended resume.

use loomfence_core::{Draw, ExecutionId, TimerRow, redrive_wake_at};
use loomfence_store::TimerStore;

use super::{RedriveScheduleError, SupervisorOptions};

/// Writes the re-drive row of `parent`'s try 0 to `timers`, due at
/// [`redrive_wake_at`]`(now, policy.delay_ms(0, draw), now)`, and answers
/// its `wake_at`.
///
/// `now` as the fired time puts the row at least 1 ms after `now`, as the
/// timer service's own next rows are after the row they replace.
pub(super) async fn schedule_first_row(
    timers: &dyn TimerStore,
    options: &SupervisorOptions,
    parent: &ExecutionId,
) -> Result<i64, RedriveScheduleError> {
    let draw = Draw::new((options.random)())?;
    let now = (options.now)();
    let wake_at = redrive_wake_at(now, options.policy.delay_ms(0, draw), now)
        .ok_or(RedriveScheduleError::NoWakeTime { now })?;
    timers
        .schedule(&TimerRow::redrive(parent.clone(), wake_at, 0))
        .await?;
    Ok(wake_at)
}
