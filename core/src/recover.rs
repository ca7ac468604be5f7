//! An operator's recovery of one execution as a sans-IO state machine: the
//! fire of a fresh row through the timer services' own decision, for an
//! execution whose tries ran out (or that an operator names).
//!
//! A chain that gave up leaves an [`ExhaustedRow`] beside the timers (see
//! [`crate::timer`]). Recovering it fires one row with the same
//! [`FireMachine`] a timer service uses, so the resume goes through the
//! same path (the re-drivers for a re-drive row, the TIMER wait's check for
//! a plain wake) and the fence settles any race with the services running
//! meanwhile. What is fired:
//!
//! | recovering | the row fired |
//! |---|---|
//! | a re-drive record | a re-drive row of the record's key at try 0: a fresh chain |
//! | a plain-wake record | the plain wake of the record's key |
//! | an execution with no record | a re-drive row at try 0, due now |
//!
//! The row is the machine's own, never in the timer store, so there is no
//! claim: a retire is nothing to write, and a row the fire hands on (the
//! next try of a contended re-drive, or a contended plain wake given back)
//! is [`schedule`d](RecoverAction::Schedule) for the timer services to
//! carry on. Then the record is cleared ([`RecoverAction::ClearExhausted`]),
//! except when the fire gave up again at once: the record stays, for the
//! next recovery.
//!
//! | the fire's outcome | writes | [`RecoverOutcome`] |
//! |---|---|---|
//! | fired, re-driven | clear | [`Resumed`](RecoverOutcome::Resumed) |
//! | obsolete, nothing to re-drive | clear | [`NotParked`](RecoverOutcome::NotParked) |
//! | rescheduled (re-drive contended again) | schedule the next try, clear | [`ContendedAgain`](RecoverOutcome::ContendedAgain) with the row |
//! | backed off (plain wake contended again) | schedule the wake again, clear | [`ContendedAgain`](RecoverOutcome::ContendedAgain) with the row |
//! | exhausted (a policy of at most one try) | nothing; the record stays | [`ContendedAgain`](RecoverOutcome::ContendedAgain) without a row |
//! | left (no re-driver) | nothing; the record stays | [`NoRedriver`](RecoverOutcome::NoRedriver) |

use crate::contract::ContractError;
use crate::event::Envelope;
use crate::fire::{
    FireAction, FireContext, FireMachine, FireOutcome, FirePoll, Redrive, RedriveAnswer, TimerRow,
};
use crate::input::{ExecutionId, InputError};
use crate::resume_machine::{ResumeError, Resumed};
use crate::timer_records::ExhaustedRow;

/// How a recovery ended.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecoverOutcome {
    /// The park was resumed (by this recovery; the resume's token is this
    /// host's).
    Resumed,
    /// Nothing waits any more: the execution is not parked on what the row
    /// stands for (answered meanwhile, ended, gone, or parked on something
    /// else).
    NotParked,
    /// The resume was contended again. `next` is the row scheduled for the
    /// timer services to carry on; `None` when the fire gave up at once and
    /// the record was kept.
    ContendedAgain {
        /// The row handed to the timer services.
        next: Option<TimerRow>,
    },
    /// A re-drive row with no re-driver given: nothing was tried.
    NoRedriver,
}

/// One thing for the host to do.
///
/// Non-exhaustive: a host that does not know an action must stop rather
/// than guess.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecoverAction {
    /// The fire's read, resume or re-drive, as a timer service does it;
    /// answer through [`RecoverMachine::handle_read`],
    /// [`handle_resumed`](RecoverMachine::handle_resumed) or
    /// [`handle_redrive`](RecoverMachine::handle_redrive).
    Fire(FireAction),
    /// The timer store's `schedule(row)`; answer with
    /// [`RecoverMachine::handle_scheduled`].
    Schedule(TimerRow),
    /// The timer store's `clear_exhausted(execution_id, wake_at)`; answer
    /// with [`RecoverMachine::handle_cleared`].
    ClearExhausted {
        /// The record's execution.
        execution_id: ExecutionId,
        /// The record's time.
        wake_at: i64,
    },
}

/// What [`RecoverMachine::poll`] says.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecoverPoll {
    /// Do this, then feed the answer back.
    Act(RecoverAction),
    /// The recovery is over.
    Done(RecoverOutcome),
}

/// Where the machine is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum State {
    /// The fire is running.
    Firing,
    /// Schedule this row, then clear (or end).
    Schedule(TimerRow, RecoverOutcome),
    /// Clear the record, then end.
    Clear(RecoverOutcome),
    /// Finished.
    Done(RecoverOutcome),
}

/// The recovery of one execution, as a value (`Clone + Eq + Hash`, like
/// every machine of the core).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RecoverMachine {
    /// The record being recovered, if any.
    record: Option<ExhaustedRow>,
    /// The fire of the machine's own row.
    fire: FireMachine,
    /// The pending step.
    state: State,
}

impl RecoverMachine {
    /// The recovery of `execution_id`, from its exhausted `record` if it
    /// has one, in `context` (the time, a draw, the policy, the number of
    /// re-drivers; a backoff entry is ignored: this is not a node's retry).
    /// Refuses a record of another execution and times out of range.
    pub fn new(
        execution_id: ExecutionId,
        record: Option<ExhaustedRow>,
        context: FireContext,
    ) -> Result<Self, InputError> {
        let row = match &record {
            Some(record) if record.row.execution_id != execution_id => {
                return Err(InputError::RecordOfAnotherExecution {
                    expected: execution_id,
                    got: record.row.execution_id.clone(),
                });
            }
            Some(record) => TimerRow {
                execution_id,
                wake_at: record.row.wake_at.min(context.now),
                redrive: record.row.redrive.map(|_| Redrive { attempt: 0 }),
            },
            None => TimerRow::redrive(execution_id, context.now, 0),
        };
        let fire = FireMachine::new(row, context.with_backoff(None))?;
        let mut machine = Self {
            record,
            fire,
            state: State::Firing,
        };
        machine.advance();
        Ok(machine)
    }

    /// The row the recovery fires.
    #[must_use]
    pub fn row(&self) -> &TimerRow {
        self.fire.row()
    }

    /// What to do next, or the outcome.
    pub fn poll(&self) -> RecoverPoll {
        match &self.state {
            State::Firing => match self.fire.poll() {
                FirePoll::Act(action) => RecoverPoll::Act(RecoverAction::Fire(action)),
                // `advance` never leaves a finished fire in `Firing`.
                FirePoll::Done(_) => RecoverPoll::Done(RecoverOutcome::NoRedriver),
            },
            State::Schedule(row, _) => RecoverPoll::Act(RecoverAction::Schedule(row.clone())),
            State::Clear(_) => {
                let row = self.record.as_ref().map_or(self.fire.row(), |r| &r.row);
                RecoverPoll::Act(RecoverAction::ClearExhausted {
                    execution_id: row.execution_id.clone(),
                    wake_at: row.wake_at,
                })
            }
            State::Done(outcome) => RecoverPoll::Done(outcome.clone()),
        }
    }

    /// Feeds the read of the whole log.
    pub fn handle_read(&mut self, events: &[Envelope]) -> Result<(), ContractError> {
        self.firing("handle_read")?;
        self.fire.handle_read(events)?;
        self.advance();
        Ok(())
    }

    /// Feeds the resume's result.
    pub fn handle_resumed(
        &mut self,
        result: Result<&Resumed, &ResumeError>,
    ) -> Result<(), ContractError> {
        self.firing("handle_resumed")?;
        self.fire.handle_resumed(result)?;
        self.advance();
        Ok(())
    }

    /// Feeds a re-driver's answer.
    pub fn handle_redrive(&mut self, answer: RedriveAnswer) -> Result<(), ContractError> {
        self.firing("handle_redrive")?;
        self.fire.handle_redrive(answer)?;
        self.advance();
        Ok(())
    }

    /// Acknowledges a [`RecoverAction::Schedule`].
    pub fn handle_scheduled(&mut self) -> Result<(), ContractError> {
        let State::Schedule(_, outcome) = &self.state else {
            return Err(self.unexpected("handle_scheduled"));
        };
        let outcome = outcome.clone();
        if matches!(self.fire.poll(), FirePoll::Act(FireAction::Reschedule(_))) {
            self.fire.handle_rescheduled()?;
        }
        self.state = self.clear_then(outcome);
        Ok(())
    }

    /// Acknowledges a [`RecoverAction::ClearExhausted`] (whether or not a
    /// record was there: another recovery may have cleared it).
    pub fn handle_cleared(&mut self) -> Result<(), ContractError> {
        let State::Clear(outcome) = &self.state else {
            return Err(self.unexpected("handle_cleared"));
        };
        self.state = State::Done(outcome.clone());
        Ok(())
    }

    /// Runs the fire's steps that write nothing here, and maps its end.
    fn advance(&mut self) {
        loop {
            match self.fire.poll() {
                // The row is the machine's own: retiring it writes nothing.
                FirePoll::Act(FireAction::Complete(_)) => {
                    if self.fire.handle_completed().is_err() {
                        return;
                    }
                }
                FirePoll::Act(FireAction::Exhaust(_)) => {
                    if self.fire.handle_exhausted().is_err() {
                        return;
                    }
                }
                FirePoll::Act(FireAction::Reschedule(next)) => {
                    let outcome = RecoverOutcome::ContendedAgain {
                        next: Some(next.clone()),
                    };
                    self.state = State::Schedule(next, outcome);
                    return;
                }
                FirePoll::Act(_) => {
                    self.state = State::Firing;
                    return;
                }
                FirePoll::Done(outcome) => {
                    self.state = self.end(&outcome);
                    return;
                }
            }
        }
    }

    /// The step after the fire's final outcome.
    fn end(&self, outcome: &FireOutcome) -> State {
        match outcome {
            FireOutcome::Fired | FireOutcome::Redriven => self.clear_then(RecoverOutcome::Resumed),
            FireOutcome::Obsolete | FireOutcome::NothingToRedrive => {
                self.clear_then(RecoverOutcome::NotParked)
            }
            FireOutcome::BackedOff(_) => {
                let row = self.fire.row().clone();
                let outcome = RecoverOutcome::ContendedAgain {
                    next: Some(row.clone()),
                };
                State::Schedule(row, outcome)
            }
            FireOutcome::Rescheduled(next) => self.clear_then(RecoverOutcome::ContendedAgain {
                next: Some(next.clone()),
            }),
            FireOutcome::Exhausted(_) => State::Done(RecoverOutcome::ContendedAgain { next: None }),
            _ => State::Done(RecoverOutcome::NoRedriver),
        }
    }

    /// Clear the record, if there is one, before ending in `outcome`.
    fn clear_then(&self, outcome: RecoverOutcome) -> State {
        if self.record.is_some() {
            State::Clear(outcome)
        } else {
            State::Done(outcome)
        }
    }

    /// Checks the fire is what is pending.
    fn firing(&self, got: &'static str) -> Result<(), ContractError> {
        if self.state == State::Firing {
            Ok(())
        } else {
            Err(self.unexpected(got))
        }
    }

    /// The error for an input that does not answer the pending action.
    fn unexpected(&self, got: &'static str) -> ContractError {
        let expected = match &self.state {
            State::Firing => "the fire's answer",
            State::Schedule(..) => "handle_scheduled",
            State::Clear(_) => "handle_cleared",
            State::Done(_) => "nothing: the recovery is over",
        };
        ContractError::UnexpectedInput { expected, got }
    }
}

#[cfg(test)]
mod tests;
