//! An operator's recovery of one execution: the pump over the core's
//! [`RecoverMachine`], which fires one fresh row through the timer
//! services' own decision (see [`loomfence_core::recover`] for what is
//! fired and what is written).
//!
//! It is safe beside running timer services: its resume is conditional,
//! like theirs, so when both try the park the fence lets one land and the
//! other is refused or contended; a contended recovery hands the next try
//! to the services.

use std::sync::Arc;

use loomfence_core::recover::{RecoverAction, RecoverMachine, RecoverOutcome, RecoverPoll};
use loomfence_core::timer::{ExhaustedRow, FireAction, FireContext, RedriveAnswer};
use loomfence_core::{Envelope, ExecutionId};
use loomfence_store::{EventStore, TimerStore};

use crate::driver::resume_answer;
use crate::error::RuntimeError;
use crate::redriver::Redriver;
use crate::resumed_hook::OnResumed;

/// What a recovery is given besides the execution.
#[derive(Clone)]
pub struct Recovery {
    /// The time, the draw, the policy; its re-driver count is set from
    /// `redrivers`.
    pub context: FireContext,
    /// The re-drivers a timer service of this fleet registers, in the same
    /// order: a re-drive row is theirs to re-derive.
    pub redrivers: Vec<Arc<dyn Redriver>>,
    /// Called with a plain wake's landed resume (a re-driver calls its
    /// own hook): where the host starts the body.
    pub on_resumed: OnResumed,
}

/// Recovers `execution_id` from its exhausted `record` (or, with `None`,
/// re-drives it through the re-drivers), and answers how it ended. A store
/// failure stops it where it is: the record stays, so the recovery can be
/// run again.
pub async fn recover<E, T>(
    events: &E,
    timers: &T,
    execution_id: &ExecutionId,
    record: Option<ExhaustedRow>,
    recovery: &Recovery,
) -> Result<RecoverOutcome, RuntimeError>
where
    E: EventStore + ?Sized,
    T: TimerStore + ?Sized,
{
    let context = recovery.context.with_redrivers(recovery.redrivers.len());
    let mut machine = RecoverMachine::new(execution_id.clone(), record, context)?;
    let mut log: Vec<Envelope> = Vec::new();
    loop {
        let action = match machine.poll() {
            RecoverPoll::Done(outcome) => return Ok(outcome),
            RecoverPoll::Act(action) => action,
            other => return Err(RuntimeError::unsupported("recover", &other)),
        };
        match action {
            RecoverAction::Fire(FireAction::ReadLog) => {
                log = events
                    .read_range(execution_id, 1, None)
                    .await
                    .map_err(RuntimeError::Store)?;
                machine.handle_read(&log)?;
            }
            RecoverAction::Fire(FireAction::Resume(request)) => {
                let result = resume_answer(events, execution_id, request, &log).await?;
                machine.handle_resumed(result.as_ref())?;
                if let Ok(resumed) = result {
                    (recovery.on_resumed)(resumed);
                }
            }
            RecoverAction::Fire(FireAction::Redrive { redriver, .. }) => {
                let Some(redriver_at) = recovery.redrivers.get(redriver) else {
                    return Err(RuntimeError::Unsupported {
                        machine: "recover",
                        detail: format!("re-driver {redriver} of {}", recovery.redrivers.len()),
                    });
                };
                let answer = match redriver_at.redrive(execution_id).await {
                    Ok(answer) => answer,
                    // A re-driver that fails is contended, as for a fire:
                    // the chain is handed on, not lost.
                    Err(_) => RedriveAnswer::Failed,
                };
                machine.handle_redrive(answer)?;
            }
            RecoverAction::Schedule(row) => {
                timers.schedule(&row).await.map_err(RuntimeError::Timers)?;
                machine.handle_scheduled()?;
            }
            RecoverAction::ClearExhausted {
                execution_id,
                wake_at,
            } => {
                timers
                    .clear_exhausted(&execution_id, wake_at)
                    .await
                    .map_err(RuntimeError::Timers)?;
                machine.handle_cleared()?;
            }
            other => return Err(RuntimeError::unsupported("recover", &other)),
        }
    }
}
