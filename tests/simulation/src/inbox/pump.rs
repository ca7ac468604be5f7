//! One delivery, pumped one store interaction per step: a sender's notify,
//! a park-time check, or the re-driver's check of a fired row. Every
//! decision is the core's [`DeliverMachine`]'s; its resume is the real
//! [`ResumeMachine`] over the world's [`MemoryStore`], one store action per
//! step. What needs no store (building the resume, the draw of a re-drive
//! row) is folded into the step that follows it.
//!
//! The negative controls are the host's, as a real host's bug would be:
//! [`Mode::SplitBatch`] performs the resume's `[MESSAGE_CONSUMED,
//! EXECUTION_RESUMED]` as two park-conditional writes, one per step;
//! [`Mode::Blind`] performs the whole resume as one plain unfenced
//! `append_many` of the pair, with no acquire and no park condition.

use loomfence_core::{
    AppendError, Capability, ConditionalAppend, ContractError, Envelope, ExecutionView, JsonObject,
    KernelKind, MemoryStore, NewEvent, Poll, ResumeError, ResumeMachine, ResumeRequest, Resumed,
    drive,
    inbox::{
        DeliverAction, DeliverMachine, DeliverOutcome, DeliverPoll, InboxTable, consumed_event,
    },
    redrive::Draw,
    resume::ResumeContendedError,
    timer::TimerTable,
};

use super::error::InboxSimError;

/// How the hosts perform a delivery's resume: the design, or a control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The resume machine's own steps: conditional acquire, then the pair
    /// as one `append_if_parked` batch under the token.
    Faithful,
    /// Control (a): the pair as two writes, `append_if_parked` of the
    /// `MESSAGE_CONSUMED`, then of the `EXECUTION_RESUMED`, one step each.
    /// A crash or a rival between them leaves a consumed message with no
    /// resume after it, or a second delivery of it.
    SplitBatch,
    /// Control (b): no conditional acquire and no park condition: the pair
    /// appended blind, unfenced, with `append_many`.
    Blind,
}

/// What a step is given: the shared state and the clock.
#[derive(Debug)]
pub struct Env<'a> {
    /// Every log and token.
    pub store: &'a mut MemoryStore,
    /// Every message.
    pub inbox: &'a mut InboxTable,
    /// Every timer row.
    pub timers: &'a mut TimerTable,
    /// The virtual clock, ms.
    pub now: i64,
    /// How hosts perform resumes.
    pub mode: Mode,
}

/// Where a crash of a sender caught it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CrashPoint {
    /// The message is stored with its intent row; no resume holds a token.
    AfterStore,
    /// Its resume acquired a token and has not appended under it.
    HoldingToken,
    /// Its resume landed; the message is not marked consumed yet.
    AfterAppend,
    /// Control (a) only: the `MESSAGE_CONSUMED` is written, the resume not.
    BetweenWrites,
}

/// One delivery in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Deliverer {
    /// The core's machine.
    machine: DeliverMachine,
    /// The resume it asked for, in flight.
    resume: Option<Box<ResumeMachine>>,
    /// Control (a): the first write of the split pair, once it landed.
    written: Option<Envelope>,
    /// Whether its last resume landed (and the mark is pending).
    landed: bool,
    /// How it ended.
    outcome: Option<DeliverOutcome>,
    /// What a machine rejected, if one did (the delivery stops there).
    rejected: Option<ContractError>,
    /// Whether its park was refused as stale (the body was fenced out).
    stale_park: bool,
}

impl Deliverer {
    /// A delivery driven by `machine`.
    #[must_use]
    pub fn new(machine: DeliverMachine) -> Self {
        Self {
            machine,
            resume: None,
            written: None,
            landed: false,
            outcome: None,
            rejected: None,
            stale_park: false,
        }
    }

    /// Whether its park (a [`DeliverMachine::park`]) is written.
    #[must_use]
    pub fn parked(&self) -> bool {
        self.machine.parked().is_some()
    }

    /// Whether its park was refused as stale: the body holding it was
    /// fenced out, and the delivery stops.
    #[must_use]
    pub fn stale_park(&self) -> bool {
        self.stale_park || matches!(self.outcome, Some(DeliverOutcome::Fenced(_)))
    }

    /// Whether it is over (ended, or stopped on a rejection).
    #[must_use]
    pub fn finished(&self) -> bool {
        self.outcome.is_some() || self.rejected.is_some() || self.stale_park
    }

    /// How it ended, once it has.
    #[must_use]
    pub fn outcome(&self) -> Option<&DeliverOutcome> {
        self.outcome.as_ref()
    }

    /// What a machine rejected, if one did.
    #[must_use]
    pub fn rejected(&self) -> Option<&ContractError> {
        self.rejected.as_ref()
    }

    /// Where a crash now would catch it, if at one of the points the
    /// simulation crashes senders at.
    #[must_use]
    pub fn crash_point(&self) -> Option<CrashPoint> {
        if self.finished() {
            None
        } else if self.written.is_some() {
            Some(CrashPoint::BetweenWrites)
        } else if self.resume.as_ref().and_then(|r| r.holds_fence()).is_some() {
            Some(CrashPoint::HoldingToken)
        } else if self.landed {
            Some(CrashPoint::AfterAppend)
        } else if self.machine.sent().is_some() {
            Some(CrashPoint::AfterStore)
        } else {
            None
        }
    }

    /// One store interaction, and whatever needs none before it.
    pub fn step(&mut self, env: &mut Env<'_>) -> Result<(), InboxSimError> {
        if self.finished() {
            return Ok(());
        }
        match self.act(env) {
            Ok(()) => {
                // An end that needs no store is recorded with the step
                // that led to it, so a finished delivery takes no step.
                if let DeliverPoll::Done(outcome) = self.machine.poll() {
                    self.outcome = Some(outcome);
                }
                Ok(())
            }
            Err(Fault::Rejected(error)) => {
                self.rejected = Some(error);
                Ok(())
            }
            Err(Fault::Harness(error)) => Err(error),
        }
    }

    /// The loop behind [`Deliverer::step`].
    fn act(&mut self, env: &mut Env<'_>) -> Result<(), Fault> {
        loop {
            let action = match self.machine.poll() {
                DeliverPoll::Done(outcome) => {
                    self.outcome = Some(outcome);
                    return Ok(());
                }
                DeliverPoll::Act(action) => action,
                _ => {
                    return Err(Fault::Harness(InboxSimError::UnknownAction(
                        "a delivery's poll",
                    )));
                }
            };
            let id = self.machine.execution_id().clone();
            match action {
                DeliverAction::ReadLog => {
                    let log = env.store.read_range(&id, 1, None).map_err(harness)?;
                    self.machine.handle_log(&log)?;
                    return Ok(());
                }
                DeliverAction::Send { message, intent } => {
                    // The message and its intent row in one atomic step.
                    let sent = env.inbox.send(&message).map_err(harness)?;
                    if matches!(sent, loomfence_core::inbox::Sent::Stored { .. }) {
                        env.timers.schedule(&intent).map_err(harness)?;
                    }
                    self.machine.handle_sent(sent)?;
                    return Ok(());
                }
                DeliverAction::ReadPending { channels, limit } => {
                    let pending = env.inbox.pending(&id, &channels, limit).map_err(harness)?;
                    self.machine.handle_pending(&pending, env.now)?;
                    return Ok(());
                }
                DeliverAction::MarkConsumed(key) => {
                    env.inbox.mark_consumed(&key).map_err(harness)?;
                    self.machine.handle_marked()?;
                    self.landed = false;
                    return Ok(());
                }
                DeliverAction::Resume { request, log } => {
                    if env.mode == Mode::Blind {
                        return self.blind(env, request);
                    }
                    let mut resume = match self.resume.take() {
                        Some(resume) => resume,
                        None => Box::new(ResumeMachine::with_events(
                            id,
                            request,
                            Capability::Conditional,
                            &log,
                        )?),
                    };
                    let stepped = if matches!(resume.poll(), Poll::Done(_)) {
                        false
                    } else {
                        self.resume_step(env, &mut resume)?;
                        true
                    };
                    match resume.poll() {
                        Poll::Done(result) => {
                            self.landed = result.is_ok();
                            self.machine.handle_resumed(result.as_ref())?;
                        }
                        _ => self.resume = Some(resume),
                    }
                    if stepped {
                        return Ok(());
                    }
                }
                DeliverAction::Draw => {
                    let draw = Draw::new(0.5).map_err(harness)?;
                    self.machine
                        .handle_draw(draw, env.now)
                        .map_err(|error| match error {
                            loomfence_core::Error::Contract(error) => Fault::Rejected(error),
                            other => Fault::Harness(other.into()),
                        })?;
                }
                DeliverAction::WriteRow(row) => {
                    env.timers.schedule(&row).map_err(harness)?;
                    self.machine.handle_written()?;
                    return Ok(());
                }
                DeliverAction::ReadFence => {
                    let current = env.store.current_fence(&id);
                    self.machine.handle_fence(current)?;
                    return Ok(());
                }
                DeliverAction::AppendPark(park) => {
                    match env.store.append(&id, park) {
                        Ok(stored) => self.machine.handle_parked(&stored)?,
                        Err(AppendError::Stale(_)) => self.stale_park = true,
                        Err(other) => return Err(Fault::Harness(InboxSimError::Append(other))),
                    }
                    return Ok(());
                }
                _ => {
                    return Err(Fault::Harness(InboxSimError::UnknownAction(
                        "a delivery action",
                    )));
                }
            }
        }
    }

    /// One store action of the resume in flight; control (a) splits its
    /// append of a pair into two.
    fn resume_step(&mut self, env: &mut Env<'_>, resume: &mut ResumeMachine) -> Result<(), Fault> {
        let split = match resume.poll() {
            Poll::Act(loomfence_core::Action::AppendIfParked { park_seq, events })
                if env.mode == Mode::SplitBatch && events.len() == 2 =>
            {
                Some((park_seq, events))
            }
            _ => None,
        };
        let Some((park_seq, mut events)) = split else {
            return match drive::step(env.store, resume) {
                Ok(_) => Ok(()),
                Err(loomfence_core::Error::Contract(error)) => Err(Fault::Rejected(error)),
                Err(other) => Err(Fault::Harness(other.into())),
            };
        };
        let id = resume.execution_id().clone();
        let (event, first) = match self.written.take() {
            None => (events.remove(0), None),
            Some(first) => (events.remove(1), Some(first)),
        };
        match env.store.append_if_parked(&id, park_seq, vec![event]) {
            Ok(ConditionalAppend::Appended(mut stored)) => match first {
                None => self.written = stored.pop(),
                Some(first) => {
                    stored.insert(0, first);
                    resume.handle_appended(stored)?;
                }
            },
            Ok(ConditionalAppend::ParkAnswered) => resume.handle_park_answered()?,
            Err(AppendError::Stale(stale)) => resume.handle_stale(stale)?,
            Err(AppendError::Input(input)) if input.is_park_gone() => resume.handle_park_gone()?,
            Err(other) => return Err(Fault::Harness(InboxSimError::Append(other))),
        }
        Ok(())
    }

    /// Control (b): the pair appended blind, unfenced, in one step.
    fn blind(&mut self, env: &mut Env<'_>, request: ResumeRequest) -> Result<(), Fault> {
        let id = self.machine.execution_id().clone();
        let mut events = Vec::with_capacity(2);
        if let Some(message) = &request.consumes {
            events.push(consumed_event(
                &message.channel,
                &message.message_id,
                request.at,
            ));
        }
        let mut payload = JsonObject::new();
        payload.insert("answer".to_owned(), request.answer.clone());
        events
            .push(NewEvent::kernel(KernelKind::ExecutionResumed, request.at).with_payload(payload));
        match env.store.append_many(&id, events) {
            Ok(stored) => {
                let log = env.store.read_range(&id, 1, None).map_err(harness)?;
                let resumed = Resumed {
                    execution_id: id,
                    fence: None,
                    resumed: stored.last().cloned().ok_or(Fault::Harness(
                        InboxSimError::UnknownAction("an empty append"),
                    ))?,
                    view: ExecutionView::fold(&log),
                    attempts: 0,
                };
                self.landed = true;
                self.machine.handle_resumed(Ok(&resumed))?;
            }
            Err(AppendError::Stale(_)) => {
                let contended = ResumeError::Contended(ResumeContendedError {
                    execution_id: id,
                    attempts: 1,
                });
                self.machine.handle_resumed(Err(&contended))?;
            }
            Err(other) => return Err(Fault::Harness(InboxSimError::Append(other))),
        }
        Ok(())
    }
}

/// Why a step stopped: a machine rejected an answer (a finding), or the
/// harness failed.
enum Fault {
    /// A machine rejected a store's answer.
    Rejected(ContractError),
    /// A harness failure.
    Harness(InboxSimError),
}

impl From<ContractError> for Fault {
    fn from(error: ContractError) -> Self {
        Fault::Rejected(error)
    }
}

/// A harness failure from anything the harness error takes.
fn harness(error: impl Into<InboxSimError>) -> Fault {
    Fault::Harness(error.into())
}
