//! The resume driver: the core's drive loop, against any [`EventStore`].

use loomfence_core::{
    Action, ConditionalAppend, Envelope, ExecutionId, Poll, ResumeError, ResumeMachine,
    ResumeRequest, Resumed, resume::Stepped,
};
use loomfence_store::{EventStore, StoreError};

use crate::counters;
use crate::error::RuntimeError;

/// Performs the machine's pending action against `store` and feeds the
/// answer back.
///
/// Expected races reach the machine as answers: a stale append, a park that
/// was answered or deleted under the resume, a write whose outcome the
/// store lost ([`StoreError::OutcomeUnknown`], which the machine settles by
/// reading). Everything else the store says is an error. A host that wants
/// to stop between steps (a crash test, a cancellation point) calls this in
/// its own loop instead of [`resume`](crate::resume).
pub async fn perform<S: EventStore + ?Sized>(
    store: &S,
    machine: &mut ResumeMachine,
) -> Result<Stepped, RuntimeError> {
    let action = match machine.poll() {
        Poll::Done(result) => return Ok(Stepped::Done(result)),
        Poll::Act(action) => action,
        other => return Err(RuntimeError::unsupported("resume", &other)),
    };
    let id = machine.execution_id().clone();
    tracing::trace!(execution_id = %id, ?action, "resume step");
    match action {
        Action::ReadFrom { from_seq } => machine.handle_read(
            store
                .read_range(&id, from_seq, None)
                .await
                .map_err(RuntimeError::Store)?,
        )?,
        Action::AcquireFenceIf(expect) => match store.acquire_fence_if(&id, expect).await {
            Ok(outcome) => machine.handle_acquire_if(outcome)?,
            Err(StoreError::Input(input)) if input.is_park_gone() => machine.handle_park_gone()?,
            Err(StoreError::OutcomeUnknown(lost)) => {
                tracing::debug!(execution_id = %id, error = %lost, "acquire outcome unknown; retrying");
                machine.handle_outcome_unknown()?
            }
            Err(other) => return Err(RuntimeError::Store(other)),
        },
        Action::AcquireFence => match store.acquire_fence(&id).await {
            Ok(token) => machine.handle_acquire(token)?,
            Err(StoreError::OutcomeUnknown(lost)) => {
                tracing::debug!(execution_id = %id, error = %lost, "acquire outcome unknown; retrying");
                machine.handle_outcome_unknown()?
            }
            Err(other) => return Err(RuntimeError::Store(other)),
        },
        Action::AppendIfParked { park_seq, events } => {
            match store.append_if_parked(&id, park_seq, events).await {
                Ok(ConditionalAppend::Appended(envelopes)) => machine.handle_appended(envelopes)?,
                Ok(ConditionalAppend::ParkAnswered) => machine.handle_park_answered()?,
                Err(StoreError::Input(input)) if input.is_park_gone() => {
                    machine.handle_park_gone()?
                }
                Err(StoreError::StaleFence(stale)) => machine.handle_stale(stale)?,
                Err(StoreError::OutcomeUnknown(lost)) => {
                    tracing::debug!(execution_id = %id, error = %lost, "append outcome unknown; settling");
                    machine.handle_outcome_unknown()?
                }
                Err(other) => return Err(RuntimeError::Store(other)),
            }
        }
        other => return Err(RuntimeError::unsupported("resume", &other)),
    }
    Ok(Stepped::Progressed)
}

/// Runs `machine` to the end.
pub async fn run<S: EventStore + ?Sized>(
    store: &S,
    machine: &mut ResumeMachine,
) -> Result<Resumed, RuntimeError> {
    loop {
        if let Stepped::Done(result) = perform(store, machine).await? {
            let result = result.map_err(RuntimeError::from);
            counters::resume_ended(&result);
            let resumed = result?;
            tracing::debug!(
                execution_id = %resumed.execution_id,
                fence = ?resumed.fence,
                attempts = resumed.attempts,
                "resumed"
            );
            return Ok(resumed);
        }
    }
}

/// Resumes the park at `request.fence_if_parked_at`, reading the log from
/// the store, on the path the store's capability allows.
pub async fn resume<S: EventStore + ?Sized>(
    store: &S,
    execution_id: &ExecutionId,
    request: ResumeRequest,
) -> Result<Resumed, RuntimeError> {
    resume_from(store, execution_id, request, &[]).await
}

/// [`resume_from`] for a machine that asked for the resume (a supervision,
/// a delivery, a tick): the protocol's answer (landed, refused, contended,
/// stale) is a value to feed back to it; only a failure underneath it (the
/// store, a broken contract) is an error.
pub(crate) async fn resume_answer<S: EventStore + ?Sized>(
    store: &S,
    execution_id: &ExecutionId,
    request: ResumeRequest,
    events: &[Envelope],
) -> Result<Result<Resumed, ResumeError>, RuntimeError> {
    match resume_from(store, execution_id, request, events).await {
        Ok(resumed) => Ok(Ok(resumed)),
        Err(RuntimeError::Resume(answer)) => Ok(Err(answer)),
        Err(failure) => Err(failure),
    }
}

/// Like [`resume`], starting from the log the caller already holds (from
/// sequence 1 through at least the park), which spares the log read.
pub async fn resume_from<S: EventStore + ?Sized>(
    store: &S,
    execution_id: &ExecutionId,
    request: ResumeRequest,
    events: &[Envelope],
) -> Result<Resumed, RuntimeError> {
    request.check()?;
    let mut machine =
        ResumeMachine::with_events(execution_id.clone(), request, store.capability(), events)?;
    run(store, &mut machine).await
}
