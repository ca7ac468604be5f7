//! Driving a [`ResumeMachine`] against the in-memory store, one step at a
//! time: what the deterministic simulation and the core's own tests use.
//! Behind the `drive` feature, outside the stable API: a host writes this
//! loop against its own store (the crate docs show it), and async hosts use
//! the driver in `loomfence-runtime`.

use crate::error::Error;
use crate::fence::ConditionalAppend;
use crate::memory::{AppendError, MemoryStore};
use crate::resume_machine::{Action, Poll, ResumeError, ResumeMachine, Resumed, Stepped};

/// Performs the machine's pending action against `store` and feeds the
/// answer back. Fails with [`Error::Input`] when the store refused the
/// action's arguments, [`Error::Contract`] when the machine rejected the
/// answer.
pub fn step(store: &mut MemoryStore, machine: &mut ResumeMachine) -> Result<Stepped, Error> {
    let action = match machine.poll() {
        Poll::Done(result) => return Ok(Stepped::Done(result)),
        Poll::Act(action) => action,
    };
    let id = machine.execution_id().clone();
    match action {
        Action::ReadFrom { from_seq } => {
            machine.handle_read(store.read_range(&id, from_seq, None)?)?
        }
        Action::AcquireFenceIf(expect) => match store.acquire_fence_if(&id, expect) {
            Ok(outcome) => machine.handle_acquire_if(outcome)?,
            Err(input) if input.is_park_gone() => machine.handle_park_gone()?,
            Err(input) => return Err(input.into()),
        },
        Action::AcquireFence => machine.handle_acquire(store.acquire_fence(&id))?,
        Action::AppendIfParked { park_seq, events } => {
            match store.append_if_parked(&id, park_seq, events) {
                Ok(ConditionalAppend::Appended(envelopes)) => machine.handle_appended(envelopes)?,
                Ok(ConditionalAppend::ParkAnswered) => machine.handle_park_answered()?,
                Err(AppendError::Input(input)) if input.is_park_gone() => {
                    machine.handle_park_gone()?
                }
                Err(AppendError::Stale(stale)) => machine.handle_stale(stale)?,
                Err(AppendError::Input(input)) => return Err(input.into()),
            }
        }
    }
    Ok(Stepped::Progressed)
}

/// Steps the machine until it finishes.
pub fn run(
    store: &mut MemoryStore,
    machine: &mut ResumeMachine,
) -> Result<Result<Resumed, ResumeError>, Error> {
    loop {
        if let Stepped::Done(result) = step(store, machine)? {
            return Ok(result);
        }
    }
}
