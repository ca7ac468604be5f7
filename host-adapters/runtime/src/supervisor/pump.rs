//! The supervisor's pump: runs the core's [`SuperviseMachine`] for one
//! parent against the event store (and the timer store, for a re-drive
//! row), keeping the edge cache as the machine says. Every branch here is
//! the machine's answer; this file only does the IO it names.

use loomfence_core::{
    ExecutionId,
    redrive::Draw,
    supervise::{
        OnContention, SuperviseAction, SuperviseMachine, SuperviseOptions, SuperviseOutcome,
        SupervisePoll,
    },
};
use loomfence_store::EventStore;

use super::{ChildSupervisor, Supervised};
use crate::counters;
use crate::driver::resume_answer;
use crate::error::RuntimeError;

impl<S: EventStore + ?Sized> ChildSupervisor<S> {
    /// A supervision started by this supervisor (`watch`, `child_ended`,
    /// `rebuild`): it writes the first re-drive row on contention when
    /// re-drive is on.
    pub(super) async fn supervise_watched(
        &self,
        parent: &ExecutionId,
    ) -> Result<Supervised, RuntimeError> {
        let on_contention = if self.options.schedules_redrive() {
            OnContention::WriteRow
        } else {
            OnContention::Answer
        };
        supervised(self.supervise(parent, on_contention).await?)
    }

    /// Runs the machine of `parent` to its end; a store error stops it.
    pub(super) async fn supervise(
        &self,
        parent: &ExecutionId,
        on_contention: OnContention,
    ) -> Result<SuperviseOutcome, RuntimeError> {
        let mut machine = SuperviseMachine::new(
            parent.clone(),
            SuperviseOptions {
                conditional_tries: self.options.conditional_tries,
                policy: self.options.policy,
                on_contention,
            },
        );
        loop {
            let action = match machine.poll() {
                SupervisePoll::Done(outcome) => return Ok(outcome),
                SupervisePoll::Act(action) => action,
                other => return Err(unsupported(&other)),
            };
            tracing::trace!(%parent, ?action, "supervision step");
            let fed = match action {
                SuperviseAction::ReadParent => {
                    let log = self
                        .store
                        .read_range(parent, 1, None)
                        .await
                        .map_err(RuntimeError::Store)?;
                    machine.handle_parent(&log)
                }
                SuperviseAction::ReadChild(child) => {
                    let log = self
                        .store
                        .read_range(&child, 1, None)
                        .await
                        .map_err(RuntimeError::Store)?;
                    machine
                        .handle_child(&log, (self.options.now)())
                        .map_err(loomfence_core::Error::from)
                }
                SuperviseAction::Resume { request, log } => {
                    let result = resume_answer(&*self.store, parent, request, &log).await?;
                    if let Err(loomfence_core::ResumeError::StaleFence(stale)) = &result {
                        tracing::debug!(%parent, current = stale.current, "parent is fenced");
                    }
                    machine
                        .handle_resumed(result.as_ref())
                        .map_err(loomfence_core::Error::from)
                }
                SuperviseAction::Draw => {
                    let draw = Draw::new((self.options.random)())
                        .map_err(|error| redrive(parent, error.into()))?;
                    machine.handle_draw(draw, (self.options.now)())
                }
                SuperviseAction::WriteRow(row) => {
                    let Some(timers) = &self.options.redrive else {
                        return Err(unsupported(&"a re-drive row with no timer store"));
                    };
                    timers
                        .schedule(&row)
                        .await
                        .map_err(|error| redrive(parent, RuntimeError::Timers(error)))?;
                    counters::one(counters::REDRIVE_ROWS);
                    machine
                        .handle_written()
                        .map_err(loomfence_core::Error::from)
                }
                other => return Err(unsupported(&other)),
            };
            fed.map_err(|error| refused(parent, error))?;
            self.edges().sync(parent, machine.watching());
        }
    }
}

/// The public answer of a supervision this supervisor started: a contended
/// end (and a fenced one) is an error, which `on_error` receives.
pub(super) fn supervised(outcome: SuperviseOutcome) -> Result<Supervised, RuntimeError> {
    use loomfence_core::ResumeError;
    let failed = |error: ResumeError| Err(RuntimeError::Resume(error));
    match outcome {
        SuperviseOutcome::Resumed(resumed) => Ok(Supervised::Resumed(resumed)),
        SuperviseOutcome::AlreadyAnswered => Ok(Supervised::AlreadyAnswered),
        SuperviseOutcome::Waiting => Ok(Supervised::Waiting),
        SuperviseOutcome::NotWaitingOnChildren => Ok(Supervised::NotWaitingOnChildren),
        SuperviseOutcome::RedriveScheduled(row) => Ok(Supervised::RedriveScheduled {
            wake_at: row.wake_at,
        }),
        SuperviseOutcome::Contended(contended) => failed(ResumeError::Contended(contended)),
        SuperviseOutcome::Fenced(stale) => failed(ResumeError::StaleFence(stale)),
        other => Err(unsupported(&other)),
    }
}

/// A machine refusal as the supervisor reports it: an answer that does not
/// fit is the store's broken contract, a clock with no re-drive time
/// follows is a re-drive row that was not written.
fn refused(parent: &ExecutionId, error: loomfence_core::Error) -> RuntimeError {
    use loomfence_core::{Error, InputError};
    match error {
        Error::Input(no_time @ InputError::NoWakeTime { .. }) => redrive(parent, no_time.into()),
        Error::Input(input) => RuntimeError::Input(input),
        Error::Contract(contract) => RuntimeError::Contract(contract),
        other => unsupported(&other),
    }
}

/// A re-drive row that was not written.
fn redrive(parent: &ExecutionId, source: RuntimeError) -> RuntimeError {
    RuntimeError::Redrive {
        parent: parent.clone(),
        source: Box::new(source),
    }
}

/// Something of a newer core than this pump knows.
fn unsupported(what: &dyn std::fmt::Debug) -> RuntimeError {
    RuntimeError::unsupported("supervise", what)
}
