//! The participants of a race and what each does in one scheduled step.
//!
//! One step is one store interaction, because that is the unit the store
//! makes atomic: a real node can be paused or killed between any two of
//! them, never inside one. An actor that is never scheduled again has
//! crashed at that point; [`Actor::crashed`] makes a crash explicit for the
//! random mode, where the scheduler decides it.

use loomfence_core::Error as CoreError;
use loomfence_core::backend::decide_acquire_if;
use loomfence_core::drive;
use loomfence_core::{
    AcquireOutcome, Action, AppendError, Capability, ContractError, ExecutionId, KernelKind,
    MemoryStore, NewEvent, ParkExpectation, Poll, ResumeError, ResumeMachine, ResumeRequest,
    StaleFenceError,
};
use serde_json::json;

use crate::error::SimError;
use crate::world::StoreMode;

/// The timestamp of every resume (the kernel reads no clock, so any fixed
/// value will do; fixed values keep worlds comparable).
const RESUME_AT: i64 = 10;
/// The timestamp of a body's append after its resume.
const BODY_AT: i64 = 11;
/// The timestamp of an audit append.
const AUDIT_AT: i64 = 20;

/// One participant: a label for schedules and reports, whether it crashed,
/// and its role with the role's progress.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Actor {
    /// How schedules name this actor (`"AAB"` is A, A, B).
    pub label: char,
    /// Set when the scheduler killed the actor: it is never stepped again,
    /// but its record stays so the invariants can still account for what it
    /// did (a crashed winner still holds the only resume).
    pub crashed: bool,
    /// What the actor does.
    pub role: Role,
}

/// The kinds of participant the design's races involve.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// A node resuming the park, then running the body it resumed.
    Resumer(Resumer),
    /// A supervisor that took a token and died before appending anything:
    /// the stranded token every later resume must get past.
    DeadAcquirer(DeadAcquirer),
    /// An unfenced audit (or application) append after the park, which must
    /// not block the resume.
    Auditor(Auditor),
    /// Retention deleting the execution's log (the store keeps a real
    /// token, by design), at whatever step the schedule puts it.
    Deleter(DeletePhase),
}

/// A resumer: a real [`ResumeMachine`] and, once it has won, the body that
/// runs under the token it won.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Resumer {
    /// The store capability the machine was built for: `Conditional` is the
    /// kernel under test, `FencingOnly` the documented residual (negative
    /// control).
    pub capability: Capability,
    /// Where the resumer is.
    pub phase: ResumerPhase,
}

/// A resume that landed: what the winner's body holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Landed {
    /// The token the body appends under; `None` when no token was taken.
    pub fence: Option<u64>,
    /// The sequence of the `EXECUTION_RESUMED` it wrote.
    pub sequence: u64,
    /// Acquisitions the resume took.
    pub attempts: u32,
}

/// Where a resumer is in its life.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ResumerPhase {
    /// The machine has a pending action; the next step performs it. Boxed:
    /// it is most of a world's size and only live resumers carry one.
    Resuming(Box<ResumeMachine>),
    /// The resume landed; the next step is the body's fenced append.
    Running(Landed),
    /// The body's append was stored: the body was not fenced out. Finished.
    Appended(Landed),
    /// The body's append was refused as stale: the body was fenced out,
    /// which is the bug the simulation looks for. Finished.
    FencedOut {
        /// The resume the body ran after.
        landed: Landed,
        /// The refusal, with the token that beat the body's.
        stale: StaleFenceError,
    },
    /// The resume ended without landing (refused, contended). Finished.
    Lost(ResumeError),
    /// The machine rejected the store's answer: the store broke its
    /// contract, or the machine has a bug. Reported as a breach (with the
    /// schedule that led here) rather than stopping the search. Finished.
    Rejected(ContractError),
}

/// A supervisor that acquires once and dies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeadAcquirer {
    /// How it acquires. `FencingOnly`: the unconditional `acquire_fence`
    /// (the design's dead acquirer). `Conditional`: a supervisor on a
    /// conditional store, which can only take a token with
    /// `acquire_fence_if`; it expects the token current at that very step,
    /// so it takes one whenever the park is still open. That is the
    /// strongest such rival: a supervisor that read the token earlier
    /// succeeds only in a subset of those cases (the token must also not have
    /// moved since), and a failed conditional acquire changes nothing.
    /// `NonFencing`: takes nothing.
    pub via: Capability,
    /// Where it is.
    pub phase: DeadPhase,
}

/// Progress of a dead acquirer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeadPhase {
    /// Nothing done yet.
    Ready,
    /// It acquired (or tried to) and is dead. Finished.
    Dead {
        /// The token it took, if it took one.
        took: Option<u64>,
    },
}

/// Progress of a deleter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeletePhase {
    /// Not deleted yet.
    Ready,
    /// Deleted. Finished.
    Deleted {
        /// Whether there was a log to delete.
        existed: bool,
    },
}

/// What an auditor appends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AuditEvent {
    /// An unfenced `EXECUTION_DENIED`, as the runtime records a denial.
    Denied,
    /// An unfenced application event (`app.emit`), as a sibling that keeps
    /// emitting after the park writes.
    AppEmit,
}

impl AuditEvent {
    /// The unfenced event this audit appends.
    #[must_use]
    pub fn event(self) -> NewEvent {
        match self {
            AuditEvent::Denied => NewEvent::kernel(KernelKind::ExecutionDenied, AUDIT_AT),
            AuditEvent::AppEmit => NewEvent::new("app.emit", AUDIT_AT),
        }
    }
}

/// An unfenced appender.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Auditor {
    /// What it appends.
    pub event: AuditEvent,
    /// Where it is.
    pub phase: AuditPhase,
}

/// Progress of an auditor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AuditPhase {
    /// Not appended yet.
    Ready,
    /// Appended at this sequence. Finished.
    Appended {
        /// Where it landed.
        sequence: u64,
    },
    /// Refused, which the guard must never do to an unfenced ignorable
    /// append (checked as an invariant). Finished.
    Refused(StaleFenceError),
}

impl Actor {
    /// A resumer answering the park at `park_seq`. Its answer names its
    /// label, so a log shows who won.
    #[must_use]
    pub fn resumer(
        label: char,
        execution: ExecutionId,
        park_seq: u64,
        capability: Capability,
    ) -> Self {
        let answer = json!({ "by": label.to_string() });
        let request = ResumeRequest::new(park_seq, answer, RESUME_AT);
        let machine = ResumeMachine::new(execution, request, capability);
        Self::new(
            label,
            Role::Resumer(Resumer {
                capability,
                phase: ResumerPhase::Resuming(Box::new(machine)),
            }),
        )
    }

    /// A supervisor that will acquire once (as `via` allows) and die.
    #[must_use]
    pub fn dead_acquirer(label: char, via: Capability) -> Self {
        Self::new(
            label,
            Role::DeadAcquirer(DeadAcquirer {
                via,
                phase: DeadPhase::Ready,
            }),
        )
    }

    /// An unfenced appender of `event`.
    #[must_use]
    pub fn auditor(label: char, event: AuditEvent) -> Self {
        Self::new(
            label,
            Role::Auditor(Auditor {
                event,
                phase: AuditPhase::Ready,
            }),
        )
    }

    /// Retention, deleting the execution's log once.
    #[must_use]
    pub fn deleter(label: char) -> Self {
        Self::new(label, Role::Deleter(DeletePhase::Ready))
    }

    /// An actor that has not acted.
    fn new(label: char, role: Role) -> Self {
        Self {
            label,
            crashed: false,
            role,
        }
    }

    /// Whether the actor has nothing left to do (apart from crashing).
    #[must_use]
    pub fn is_finished(&self) -> bool {
        match &self.role {
            Role::Resumer(resumer) => !matches!(
                resumer.phase,
                ResumerPhase::Resuming(_) | ResumerPhase::Running(_)
            ),
            Role::DeadAcquirer(dead) => matches!(dead.phase, DeadPhase::Dead { .. }),
            Role::Auditor(auditor) => auditor.phase != AuditPhase::Ready,
            Role::Deleter(phase) => *phase != DeletePhase::Ready,
        }
    }

    /// Whether a scheduler may step it: alive and not finished.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        !self.crashed && !self.is_finished()
    }

    /// The resume this actor landed, if it is a resumer that won (whether
    /// its body has appended yet, was fenced out, or crashed).
    #[must_use]
    pub fn landed(&self) -> Option<Landed> {
        match &self.role {
            Role::Resumer(Resumer {
                phase:
                    ResumerPhase::Running(landed)
                    | ResumerPhase::Appended(landed)
                    | ResumerPhase::FencedOut { landed, .. },
                ..
            }) => Some(*landed),
            _ => None,
        }
    }

    /// The resume machine's pending action, so a scenario can check what
    /// the next step of this actor will send to the store.
    #[must_use]
    pub fn pending_action(&self) -> Option<Action> {
        match &self.role {
            Role::Resumer(Resumer {
                phase: ResumerPhase::Resuming(machine),
                ..
            }) => match machine.poll() {
                Poll::Act(action) => Some(action),
                _ => None,
            },
            _ => None,
        }
    }

    /// The token a resumer holds mid-resume: acquired, not yet used by its
    /// append (see [`ResumeMachine::holds_fence`]).
    #[must_use]
    pub fn holds_fence(&self) -> Option<u64> {
        match &self.role {
            Role::Resumer(Resumer {
                phase: ResumerPhase::Resuming(machine),
                ..
            }) => machine.holds_fence(),
            _ => None,
        }
    }

    /// Whether this is a deleter that has not deleted yet.
    #[must_use]
    pub fn is_pending_deleter(&self) -> bool {
        self.role == Role::Deleter(DeletePhase::Ready)
    }

    /// How the resume ended, for a resumer whose machine has finished
    /// (`Ok` with the landed resume, or the error).
    #[must_use]
    pub fn resume_result(&self) -> Option<Result<Landed, ResumeError>> {
        match &self.role {
            Role::Resumer(Resumer {
                phase: ResumerPhase::Lost(error),
                ..
            }) => Some(Err(error.clone())),
            _ => self.landed().map(Ok),
        }
    }

    /// Performs one step against `store` if the actor is enabled; returns
    /// whether it acted. `park_seq` is the park the world is about; `mode`
    /// how the store answers a resume's append.
    pub fn step(
        &mut self,
        store: &mut MemoryStore,
        execution: &ExecutionId,
        park_seq: u64,
        mode: StoreMode,
    ) -> Result<bool, SimError> {
        if !self.is_enabled() {
            return Ok(false);
        }
        match &mut self.role {
            Role::Resumer(resumer) => resumer.step(store, execution, mode)?,
            Role::DeadAcquirer(dead) => dead.step(store, execution, park_seq, mode)?,
            Role::Auditor(auditor) => auditor.step(store, execution)?,
            Role::Deleter(phase) => {
                *phase = DeletePhase::Deleted {
                    existed: store.delete_execution(execution),
                };
            }
        }
        Ok(true)
    }
}

impl Resumer {
    /// One machine step, or the body's one append.
    fn step(
        &mut self,
        store: &mut MemoryStore,
        execution: &ExecutionId,
        mode: StoreMode,
    ) -> Result<(), SimError> {
        match &mut self.phase {
            ResumerPhase::Resuming(machine) => {
                // A finished machine is turned into the next phase below, so
                // a step always has an action to perform.
                if let Some(rejected) = machine_step(store, machine, mode)? {
                    self.phase = ResumerPhase::Rejected(rejected);
                    return Ok(());
                }
                if let Poll::Done(result) = machine.poll() {
                    self.phase = match result {
                        Ok(resumed) => ResumerPhase::Running(Landed {
                            fence: resumed.fence,
                            sequence: resumed.resumed.sequence,
                            attempts: resumed.attempts,
                        }),
                        Err(error) => ResumerPhase::Lost(error),
                    };
                }
            }
            ResumerPhase::Running(landed) => {
                let landed = *landed;
                let mut event = NewEvent::kernel(KernelKind::StepCompleted, BODY_AT);
                if let Some(token) = landed.fence {
                    event = event.with_fence(token);
                }
                self.phase = match store.append(execution, event) {
                    Ok(_) => ResumerPhase::Appended(landed),
                    Err(AppendError::Stale(stale)) => ResumerPhase::FencedOut { landed, stale },
                    Err(AppendError::Input(input)) => return Err(input.into()),
                    Err(other) => return Err(SimError::Setup(other)),
                };
            }
            ResumerPhase::Appended(_)
            | ResumerPhase::FencedOut { .. }
            | ResumerPhase::Lost(_)
            | ResumerPhase::Rejected(_) => {}
        }
        Ok(())
    }
}

/// Performs the machine's pending action as the store in `mode` would.
/// Returns the machine's rejection of the store's answer, if it rejected
/// it (a finding, recorded by the caller); an error is a request the store
/// refused as malformed, which stops the simulation.
fn machine_step(
    store: &mut MemoryStore,
    machine: &mut ResumeMachine,
    mode: StoreMode,
) -> Result<Option<ContractError>, SimError> {
    if mode == StoreMode::PlainFencedAppend
        && let Poll::Act(Action::AppendIfParked { events, .. }) = machine.poll()
        && events
            .first()
            .is_some_and(|event| event.check().is_ok_and(|facts| facts.fence.is_some()))
    {
        let id = machine.execution_id().clone();
        let answered = match store.append_many(&id, events) {
            Ok(envelopes) => machine.handle_appended(envelopes),
            Err(AppendError::Stale(stale)) => machine.handle_stale(stale),
            Err(AppendError::Input(input)) => return Err(input.into()),
            Err(other) => return Err(SimError::Setup(other)),
        };
        return Ok(answered.err());
    }
    if mode == StoreMode::NoParkKindCheck
        && let Poll::Act(action) = machine.poll()
    {
        let id = machine.execution_id().clone();
        match action {
            Action::AcquireFenceIf(expect) => {
                if let Some(outcome) = acquire_over_a_non_park(store, &id, expect)? {
                    return Ok(machine.handle_acquire_if(outcome).err());
                }
            }
            Action::AppendIfParked { park_seq, events } => {
                if let Some(answered) = answered_after_a_non_park(store, &id, park_seq)? {
                    let fed = if answered {
                        machine.handle_park_answered()
                    } else {
                        match store.append_many(&id, events) {
                            Ok(envelopes) => machine.handle_appended(envelopes),
                            Err(AppendError::Stale(stale)) => machine.handle_stale(stale),
                            Err(AppendError::Input(input)) => return Err(input.into()),
                            Err(other) => return Err(SimError::Setup(other)),
                        }
                    };
                    return Ok(fed.err());
                }
            }
            _ => {}
        }
    }
    match drive::step(store, machine) {
        Ok(_) => Ok(None),
        Err(CoreError::Contract(rejected)) => Ok(Some(rejected)),
        Err(other) => Err(other.into()),
    }
}

/// For [`StoreMode::NoParkKindCheck`]: whether an answering event follows
/// `park_seq`, when `park_seq` names an event of the log that is not a park;
/// `None` otherwise (a park, or outside the log), where the store's own
/// answer stands.
fn answered_after_a_non_park(
    store: &MemoryStore,
    execution: &ExecutionId,
    park_seq: u64,
) -> Result<Option<bool>, SimError> {
    let log = store.read_range(execution, park_seq, None)?;
    match log.split_first() {
        Some((at, after))
            if at.sequence == park_seq
                && at.kernel_kind() != Some(KernelKind::ExecutionSuspended) =>
        {
            Ok(Some(
                after.iter().any(loomfence_core::Envelope::is_answering),
            ))
        }
        _ => Ok(None),
    }
}

/// For [`StoreMode::NoParkKindCheck`]: the conditional acquire over a
/// `park_seq` that names an event of the log that is not a park, decided
/// as the stores decided before they checked the kind there; `None` when
/// the store's own answer stands.
fn acquire_over_a_non_park(
    store: &mut MemoryStore,
    execution: &ExecutionId,
    expect: ParkExpectation,
) -> Result<Option<AcquireOutcome>, SimError> {
    let Some(answered) = answered_after_a_non_park(store, execution, expect.park_seq)? else {
        return Ok(None);
    };
    let outcome = decide_acquire_if(store.current_fence(execution), expect, answered);
    if outcome.is_acquired() {
        store.acquire_fence(execution);
    }
    Ok(Some(outcome))
}

impl DeadAcquirer {
    /// The one acquire, and death.
    fn step(
        &mut self,
        store: &mut MemoryStore,
        execution: &ExecutionId,
        park_seq: u64,
        mode: StoreMode,
    ) -> Result<(), SimError> {
        let took = match self.via {
            Capability::FencingOnly => Some(store.acquire_fence(execution)),
            Capability::Conditional => {
                let expect = ParkExpectation {
                    fence: store.current_fence(execution),
                    park_seq,
                };
                let emulated = if mode == StoreMode::NoParkKindCheck {
                    acquire_over_a_non_park(store, execution, expect)?
                } else {
                    None
                };
                let outcome = match emulated {
                    Some(outcome) => Ok(outcome),
                    None => store.acquire_fence_if(execution, expect),
                };
                match outcome {
                    Ok(AcquireOutcome::Acquired { fence }) => Some(fence),
                    // Stale, or the park is gone (deleted, or deleted and
                    // grown over): nothing taken.
                    Ok(AcquireOutcome::Stale { .. }) => None,
                    Err(input) if input.is_park_gone() => None,
                    Err(input) => return Err(input.into()),
                }
            }
            Capability::NonFencing => None,
        };
        self.phase = DeadPhase::Dead { took };
        Ok(())
    }
}

impl Auditor {
    /// The one unfenced append.
    fn step(&mut self, store: &mut MemoryStore, execution: &ExecutionId) -> Result<(), SimError> {
        self.phase = match store.append(execution, self.event.event()) {
            Ok(envelope) => AuditPhase::Appended {
                sequence: envelope.sequence,
            },
            Err(AppendError::Stale(stale)) => AuditPhase::Refused(stale),
            Err(AppendError::Input(input)) => return Err(input.into()),
            Err(other) => return Err(SimError::Setup(other)),
        };
        Ok(())
    }
}
