//! The child supervisor's supervision of one parent, one store interaction
//! per step: the supervisor's run on a child's end, and the same run as the
//! supervisor's re-driver inside a fire of a re-drive row.
//!
//! It follows `ChildSupervisor::supervise` and `resume_parent` of the
//! runtime (`host-adapters/drivers/src/supervisor.rs`) step for step:
//!
//! 1. read the parent's whole log; no open park with a child wait: not
//!    waiting on children;
//! 2. read each child named by the park's waits (sorted, once each) and
//!    fold its outcome ([`child_outcome`]);
//! 3. [`answer_for`] the waits; none: waiting;
//! 4. the unfenced try: the resume from the log already read
//!    ([`ResumeMachine::with_events`]) with [`ResumeRequest::unfenced`], a
//!    lone `append_if_parked`; landed: resumed; refused: already answered;
//!    a stale fence (someone acquired): go on;
//! 5. up to `conditional_tries` conditional resumes, each a fresh machine
//!    reading the log itself (the runtime's `resume`), while contended;
//! 6. every try contended: the supervisor writes the chain's first
//!    re-drive row, `TimerRow::redrive(parent, redrive_wake_at(now,
//!    delay_ms(0, draw), now), 0)` (the runtime with `features.redrive`
//!    on); the re-driver writes nothing and answers contended.
//!
//! The re-driver's answer is the brief's mapping: resumed is done; already
//! answered, not waiting on children and waiting are noop; contended is
//! contended; a machine that rejected a store answer is failed.

use std::collections::{BTreeMap, BTreeSet};

use loomfence_core::{
    ChildOutcome, Draw, Envelope, ExecutionId, ExecutionView, RedriveAnswer, ResumeError,
    ResumeMachine, ResumeRequest, TimerRow, Wait, answer_for, child_outcome, waits_of,
};
use rand::RngExt;

use super::actors::{Driven, Env, drive_one, land};
use super::config::Variant;
use super::error::RedriveSimError;
use super::ledger::{RowSource, RunEnd, RunId};

/// How a supervision ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Supervised {
    /// It resumed the parent.
    Resumed,
    /// Someone else answered the park first.
    AlreadyAnswered,
    /// The parent has no open park with a child wait.
    NotWaitingOnChildren,
    /// No child wait is satisfied yet.
    Waiting,
    /// Every conditional try was contended, and no row was written (the
    /// re-driver, or control (a)).
    Contended,
    /// Every conditional try was contended; the first re-drive row is
    /// written.
    RedriveScheduled,
    /// A machine rejected a store answer (a finding).
    Rejected,
}

impl Supervised {
    /// The re-driver's answer for this end.
    #[must_use]
    pub fn answer(self) -> RedriveAnswer {
        match self {
            Supervised::Resumed => RedriveAnswer::Done,
            Supervised::AlreadyAnswered
            | Supervised::NotWaitingOnChildren
            | Supervised::Waiting => RedriveAnswer::Noop,
            Supervised::Contended | Supervised::RedriveScheduled => RedriveAnswer::Contended,
            Supervised::Rejected => RedriveAnswer::Failed,
        }
    }
}

/// Where a supervision is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Read the parent's log.
    ReadParent,
    /// Read the next child in `remaining`.
    ReadChildren {
        /// The parent's log as read.
        events: Vec<Envelope>,
        /// The open park.
        park: u64,
        /// Its waits.
        waits: Vec<Wait>,
        /// Children not read yet (the runtime's sorted set, in order).
        remaining: Vec<ExecutionId>,
        /// Outcomes of those that ended.
        ended: BTreeMap<ExecutionId, ChildOutcome>,
    },
    /// The unfenced try.
    Unfenced {
        /// Its machine.
        machine: Box<ResumeMachine>,
        /// The request, for the conditional tries.
        request: ResumeRequest,
    },
    /// Conditional try number `tried`.
    Conditional {
        /// Its machine.
        machine: Box<ResumeMachine>,
        /// The request.
        request: ResumeRequest,
        /// Tries made, this one included.
        tried: u32,
    },
    /// Write the chain's first row.
    Schedule(TimerRow),
    /// Finished.
    Done(Supervised),
}

/// One supervision of one parent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SuperviseTask {
    /// The parent.
    pub parent: usize,
    /// Its run in the ledger.
    pub run: RunId,
    /// Whether this is the re-driver (writes no row on contention).
    pub redriver: bool,
    /// Where it is.
    phase: Phase,
}

impl SuperviseTask {
    /// A supervision of `parent` as `run`.
    #[must_use]
    pub fn new(parent: usize, run: RunId, redriver: bool) -> Self {
        Self {
            parent,
            run,
            redriver,
            phase: Phase::ReadParent,
        }
    }

    /// How it ended, once it has.
    #[must_use]
    pub fn outcome(&self) -> Option<Supervised> {
        match self.phase {
            Phase::Done(outcome) => Some(outcome),
            _ => None,
        }
    }

    /// The token its resume holds and has not appended under yet.
    #[must_use]
    pub fn holds_fence(&self) -> Option<u64> {
        match &self.phase {
            Phase::Unfenced { machine, .. } | Phase::Conditional { machine, .. } => {
                machine.holds_fence()
            }
            _ => None,
        }
    }

    /// One store interaction (a read, an acquire, an append, the row's
    /// schedule), and the decisions that follow it without one.
    pub fn step(&mut self, env: &mut Env<'_>) -> Result<(), RedriveSimError> {
        let parent = self.parent;
        let run = self.run;
        let phase = std::mem::replace(&mut self.phase, Phase::Done(Supervised::Rejected));
        self.phase = match phase {
            Phase::ReadParent => self.read_parent(env)?,
            Phase::ReadChildren {
                events,
                park,
                waits,
                mut remaining,
                mut ended,
            } => {
                let child = remaining.remove(0);
                let log = env.store.read_range(&child, 1, None)?;
                if let Some(outcome) = child_outcome(&log) {
                    ended.insert(child, outcome);
                }
                if remaining.is_empty() {
                    self.answer(env, &events, park, &waits, &ended)?
                } else {
                    Phase::ReadChildren {
                        events,
                        park,
                        waits,
                        remaining,
                        ended,
                    }
                }
            }
            Phase::Unfenced {
                mut machine,
                request,
            } => match drive_one(env, &mut machine, parent, run)? {
                Driven::Pending => Phase::Unfenced { machine, request },
                Driven::Rejected => Phase::Done(Supervised::Rejected),
                Driven::Done(Ok(resumed)) => {
                    land(env, parent, run, &resumed);
                    Phase::Done(Supervised::Resumed)
                }
                Driven::Done(Err(ResumeError::StaleFence(_))) => self.conditional(env, request, 1),
                Driven::Done(Err(ResumeError::Contended(_))) => self.contended(env)?,
                Driven::Done(Err(_)) => Phase::Done(Supervised::AlreadyAnswered),
            },
            Phase::Conditional {
                mut machine,
                request,
                tried,
            } => match drive_one(env, &mut machine, parent, run)? {
                Driven::Pending => Phase::Conditional {
                    machine,
                    request,
                    tried,
                },
                Driven::Rejected => Phase::Done(Supervised::Rejected),
                Driven::Done(Ok(resumed)) => {
                    land(env, parent, run, &resumed);
                    Phase::Done(Supervised::Resumed)
                }
                Driven::Done(Err(ResumeError::Contended(_)))
                    if tried < env.config.conditional_tries =>
                {
                    self.conditional(env, request, tried + 1)
                }
                Driven::Done(Err(ResumeError::Contended(_))) => self.contended(env)?,
                // A fenced resume is never answered with a stale fence; as
                // the runtime's `settle`, anything but a landing or a
                // contention is "someone else answered".
                Driven::Done(Err(_)) => Phase::Done(Supervised::AlreadyAnswered),
            },
            Phase::Schedule(row) => {
                env.timers.schedule(&row)?;
                let max = env.config.policy.max_attempts;
                env.ledger
                    .scheduled(&row, parent, RowSource::Supervisor(run), max);
                env.note(|| {
                    format!(
                        "  run {run}: re-drive row 0 for p{parent} at {}",
                        row.wake_at
                    )
                });
                Phase::Done(Supervised::RedriveScheduled)
            }
            done @ Phase::Done(_) => done,
        };
        if let Phase::Done(outcome) = self.phase {
            let end = match outcome {
                Supervised::Resumed => RunEnd::Resumed,
                Supervised::AlreadyAnswered | Supervised::NotWaitingOnChildren => RunEnd::Nothing,
                Supervised::Waiting => RunEnd::Waiting,
                Supervised::Contended | Supervised::RedriveScheduled => RunEnd::Contended,
                Supervised::Rejected => RunEnd::Rejected,
            };
            env.ledger.end_run(run, end);
        }
        Ok(())
    }

    /// Step 1: the parent's log, its open child park, the children to read.
    fn read_parent(&self, env: &mut Env<'_>) -> Result<Phase, RedriveSimError> {
        let id = &env.parents[self.parent].id;
        let events = env.store.read_range(id, 1, None)?;
        let view = ExecutionView::fold(&events);
        let Some(open) = view.open_park else {
            return Ok(Phase::Done(Supervised::NotWaitingOnChildren));
        };
        let Some(park) = events.iter().find(|event| event.sequence == open.sequence) else {
            return Ok(Phase::Done(Supervised::NotWaitingOnChildren));
        };
        let waits = waits_of(park)?;
        let children: BTreeSet<ExecutionId> = waits
            .iter()
            .flat_map(|wait| wait.children().iter().cloned())
            .collect();
        if children.is_empty() {
            return Ok(Phase::Done(Supervised::NotWaitingOnChildren));
        }
        Ok(Phase::ReadChildren {
            park: open.sequence,
            events,
            waits,
            remaining: children.into_iter().collect(),
            ended: BTreeMap::new(),
        })
    }

    /// Step 3, and the unfenced try's machine (which starts from the log
    /// read in step 1, so its first action is the append).
    fn answer(
        &self,
        env: &mut Env<'_>,
        events: &[Envelope],
        park: u64,
        waits: &[Wait],
        ended: &BTreeMap<ExecutionId, ChildOutcome>,
    ) -> Result<Phase, RedriveSimError> {
        let Some(answer) = answer_for(waits, ended) else {
            return Ok(Phase::Done(Supervised::Waiting));
        };
        let request = ResumeRequest::new(park, answer, env.now);
        let id = env.parents[self.parent].id.clone();
        let machine = ResumeMachine::with_events(
            id,
            request.clone().unfenced(),
            env.config.capability(),
            events,
        )?;
        Ok(Phase::Unfenced {
            machine: Box::new(machine),
            request,
        })
    }

    /// Conditional try number `tried`: a fresh machine that reads the log.
    fn conditional(&self, env: &Env<'_>, request: ResumeRequest, tried: u32) -> Phase {
        if tried > env.config.conditional_tries {
            return Phase::Done(Supervised::Contended);
        }
        let id = env.parents[self.parent].id.clone();
        let machine = ResumeMachine::new(id, request.clone(), env.config.capability());
        Phase::Conditional {
            machine: Box::new(machine),
            request,
            tried,
        }
    }

    /// Every try contended: the re-driver answers so; the supervisor writes
    /// the first row (unless control (a) leaves it out).
    fn contended(&self, env: &mut Env<'_>) -> Result<Phase, RedriveSimError> {
        if self.redriver {
            return Ok(Phase::Done(Supervised::Contended));
        }
        env.ledger.counts.contended_supervisors += 1;
        if env.config.variant == Variant::NoRedriveRow {
            return Ok(Phase::Done(Supervised::Contended));
        }
        let draw = Draw::new(env.rng.random::<f64>())?;
        let id = env.parents[self.parent].id.clone();
        let row = TimerRow::first_redrive(id, env.now, &env.config.policy, draw)
            .ok_or(RedriveSimError::Ledger("no storable re-drive time"))?;
        Ok(Phase::Schedule(row))
    }
}
