//! The resume protocol as a sans-IO state machine.
//!
//! A resume answers one park: it appends one `EXECUTION_RESUMED` under a fresh
//! token, or it reports why it did not. The machine never touches a store. It
//! says what to do next ([`ResumeMachine::poll`] gives a [`Poll::Act`] with an
//! [`Action`]); the host does it and feeds the store's answer back through the
//! matching `handle_*` method; eventually `poll` gives [`Poll::Done`].
//!
//! The order of steps is the protocol:
//!
//! 1. Find the park: in the log the caller already holds, or with one range
//!    read of the whole log. The whole log, because whether the execution
//!    has ended is a property of all of it: a park written after a terminal
//!    event is not open, whichever entry point is used. If the park is not
//!    the open park (gone, answered, superseded, after the end, not a park at
//!    all), the resume is refused ([`RefusalReason::NotSuspended`]) before
//!    any token is taken.
//! 2. Take the fence, as the last step before the append: a conditional
//!    acquire expecting the park's own token (0 if it has none), or, on a
//!    store without one, the unconditional acquire. A non-fencing store, or a
//!    caller that asks for [`Fencing::Unfenced`], takes no token.
//! 3. Under the acquired fence, read the tail once and check the park is
//!    still open. The view handed to the body is advanced by that tail.
//! 4. Append the resume with the park-conditional append, under the token
//!    if one was taken. Conditional even under a token: a delete that ran
//!    after the acquire (it keeps the token, by design) leaves no park, and a
//!    plain append would recreate the log as a one-event phantom.
//!
//! A stale answer (the token moved, or a rival's acquire landed between ours
//! and our append) re-reads the tail; if the same park is still open it
//! retries on the token the store reported, which is what gets past a dead
//! acquirer. After [`MAX_ATTEMPTS`] tries the resume gives up with
//! [`ResumeContendedError`], which is retryable and is not a refusal: the park
//! is still unanswered.
//!
//! A write whose outcome the store cannot know (the connection died after
//! the commit was sent) is settled, not guessed: an acquire is simply tried
//! again on the expected token (if it had landed, the retry is stale and the
//! next one passes it, as for any dead acquirer); an append is settled by
//! reading the tail. If the resume is there under this resume's token, it
//! landed; if the park is still open, the conditional append is tried
//! again; otherwise the park was answered and the resume is refused. A
//! tokenless resume cannot tell its own event from an identical rival's, so
//! it never claims one: it is refused, which at worst leaves a resumed
//! execution without a body, as a crash right after the append would.

use serde_json::Value;

use crate::capability::Capability;
use crate::contract::ContractError;
use crate::event::{Envelope, NewEvent};
use crate::fence::{AcquireOutcome, ParkExpectation, StaleFenceError};
use crate::fold::ExecutionView;
use crate::input::{ExecutionId, InputError};
use crate::kind::KernelKind;

/// How many times a resume takes (or tries to take) the fence, and how many
/// appends of unknown outcome it settles, before it reports contention.
pub const MAX_ATTEMPTS: u32 = 3;

/// Whether a resume takes a token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Fencing {
    /// Whatever the store's [`Capability`] allows: conditional acquire,
    /// unconditional acquire, or none.
    #[default]
    ByCapability,
    /// Take no token even on a fencing store. A supervisor's first try uses
    /// this so that resuming does not fence the parent for good; on an
    /// execution that is already fenced it ends in
    /// [`ResumeError::StaleFence`], the signal to retry with a fence.
    Unfenced,
}

/// What the caller asks for: answer the park at `fence_if_parked_at` with
/// `answer`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResumeRequest {
    /// The sequence of the park being answered, as [`crate::log::locate_park`] or
    /// [`ExecutionView::open_park`] supplied it.
    pub fence_if_parked_at: u64,
    /// What the park is answered with; stored as the resume's
    /// `payload.answer`.
    pub answer: Value,
    /// The resume's timestamp in ms since the epoch (the machine reads no
    /// clock).
    pub at: i64,
    /// Whether to take a token.
    pub fencing: Fencing,
    /// The inbox message this resume delivers, if any: its
    /// `MESSAGE_CONSUMED` is appended in the same batch, before the resume,
    /// so the two land together or not at all.
    pub consumes: Option<Consumed>,
}

/// The message a resume consumes: the `MESSAGE_CONSUMED` written in the
/// resume's own batch (see [`crate::inbox`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Consumed {
    /// The channel the message came on.
    pub channel: String,
    /// The sender's id for it.
    pub message_id: String,
}

impl ResumeRequest {
    /// A request to answer the park at `park_seq`, fenced as the store allows.
    #[must_use]
    pub fn new(park_seq: u64, answer: Value, at: i64) -> Self {
        Self {
            fence_if_parked_at: park_seq,
            answer,
            at,
            fencing: Fencing::ByCapability,
            consumes: None,
        }
    }

    /// The same request, delivering `message`: the append becomes the
    /// batch `[MESSAGE_CONSUMED, EXECUTION_RESUMED]`.
    #[must_use]
    pub fn consuming(mut self, message: Consumed) -> Self {
        self.consumes = Some(message);
        self
    }

    /// The same request, taking no token.
    #[must_use]
    pub fn unfenced(mut self) -> Self {
        self.fencing = Fencing::Unfenced;
        self
    }

    /// Checks the resume event this request would append as every store
    /// checks it (a NUL character in the answer, an `at` out of range), so
    /// a driver refuses it before the machine takes a token. Found only at
    /// the append, it would leave the execution fenced one higher with
    /// nothing appended: a dead acquirer of the caller's own making.
    pub fn check(&self) -> Result<(), InputError> {
        batch(&self.answer, self.at, self.consumes.as_ref(), None)
            .iter()
            .enumerate()
            .try_for_each(|(index, event)| {
                event.check().map(drop).map_err(|source| InputError::Event {
                    index,
                    source: Box::new(source),
                })
            })
    }
}

/// The one payload field of a resume event: the park's answer.
const ANSWER: &str = "answer";

/// The resume event answering a park with `answer` at `at`, without a token.
fn resume_event(answer: &Value, at: i64) -> NewEvent {
    let mut payload = crate::JsonObject::new();
    payload.insert(ANSWER.to_owned(), answer.clone());
    NewEvent::kernel(KernelKind::ExecutionResumed, at).with_payload(payload)
}

/// The batch a resume appends: the message it consumes (if any), then the
/// resume, each under `token` when one was taken.
fn batch(
    answer: &Value,
    at: i64,
    consumes: Option<&Consumed>,
    token: Option<u64>,
) -> Vec<NewEvent> {
    let fenced = |event: NewEvent| match token {
        Some(token) => event.with_fence(token),
        None => event,
    };
    let mut events = Vec::with_capacity(2);
    if let Some(message) = consumes {
        events.push(fenced(crate::inbox::consumed_event(
            &message.channel,
            &message.message_id,
            at,
        )));
    }
    events.push(fenced(resume_event(answer, at)));
    events
}

/// The first field in which `stored` is not `resume_event(answer, at)`
/// under `token` (`kind`, `payload`, `metadata` or `at`), or `None` when it
/// is that event. A store stores exactly what it was sent, so anything else
/// is the store breaking its contract. Compared in place rather than
/// against a rebuilt event: this runs on every resume, and the rebuild's
/// allocations were most of its cost (docs/decisions.md, "The npm
/// package"). `ack_tests` holds it to the event [`resume_event`] builds.
fn resume_differs(
    stored: &Envelope,
    answer: &Value,
    at: i64,
    token: Option<u64>,
) -> Option<&'static str> {
    let payload_sent = stored.payload.len() == 1 && stored.payload.get(ANSWER) == Some(answer);
    // The token alone, as sent: `fence` read as `Envelope::fence` reads it.
    let metadata_sent = stored.metadata.len() == usize::from(token.is_some())
        && matches!(stored.fence(), Ok(read) if read == token);
    if stored.kind != KernelKind::ExecutionResumed.as_str() {
        Some("kind")
    } else if !payload_sent {
        Some("payload")
    } else if !metadata_sent {
        Some("metadata")
    } else if stored.at != at {
        Some("at")
    } else {
        None
    }
}

/// One thing for the host to do against the store.
///
/// Non-exhaustive: a later protocol may ask for more, and a host that does
/// not know an action must stop rather than guess.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Action {
    /// `read_range(id, from_seq, None)`; answer with
    /// [`ResumeMachine::handle_read`].
    ReadFrom {
        /// First sequence to read.
        from_seq: u64,
    },
    /// `acquire_fence_if(id, expect)`; answer with
    /// [`ResumeMachine::handle_acquire_if`].
    AcquireFenceIf(ParkExpectation),
    /// `acquire_fence(id)`; answer with [`ResumeMachine::handle_acquire`].
    AcquireFence,
    /// `append_if_parked(id, park_seq, events)`; answer with
    /// [`ResumeMachine::handle_appended`],
    /// [`ResumeMachine::handle_park_answered`],
    /// [`ResumeMachine::handle_park_gone`] or
    /// [`ResumeMachine::handle_stale`].
    AppendIfParked {
        /// The park the append is conditional on.
        park_seq: u64,
        /// The resume event, carrying the token when one was taken, after
        /// the `MESSAGE_CONSUMED` of the message it delivers, if any: one
        /// batch.
        events: Vec<NewEvent>,
    },
}

/// What [`ResumeMachine::poll`] says.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Poll {
    /// Do this, then feed the answer back.
    Act(Action),
    /// The resume is over.
    Done(Result<Resumed, ResumeError>),
}

/// What one step of a driver did: hosts that drive the machine a step at a
/// time (the simulation, crash tests) get this back from each step.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stepped {
    /// One action was performed and its answer handled.
    Progressed,
    /// The machine had already finished; nothing was performed.
    Done(Result<Resumed, ResumeError>),
}

/// A resume that landed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Resumed {
    /// The execution resumed.
    pub execution_id: ExecutionId,
    /// The token the body now holds; `None` when no token was taken.
    pub fence: Option<u64>,
    /// The stored `EXECUTION_RESUMED`.
    pub resumed: Envelope,
    /// The fold the body continues from: everything read, the tail under the
    /// fence, and the resume itself.
    pub view: ExecutionView,
    /// How many acquisitions it took (0 when no token was taken).
    pub attempts: u32,
}

/// Why a resume was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefusalReason {
    /// The park is gone, answered, superseded, follows the execution's end,
    /// or the sequence is not a park.
    NotSuspended,
}

/// A resume refused without appending anything: the park it named is not
/// the open park. Final for this park: retrying cannot help.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("resume of {execution_id:?} refused: not suspended at sequence {park_seq}")]
pub struct ResumeRefusedError {
    /// The execution.
    pub execution_id: ExecutionId,
    /// The park the caller named.
    pub park_seq: u64,
    /// Why.
    pub reason: RefusalReason,
}

/// A resume that gave up after [`MAX_ATTEMPTS`] tries while the park stayed
/// open: rivals kept moving the token, or the store kept losing the
/// outcome of the append. Not a refusal. Nothing of this resume was
/// appended, and trying again later is expected to work.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error(
    "resume of {execution_id:?} contended: the park is still open after {attempts} attempts; retry"
)]
pub struct ResumeContendedError {
    /// The execution.
    pub execution_id: ExecutionId,
    /// Acquisitions made.
    pub attempts: u32,
}

impl ResumeContendedError {
    /// Always `true`: contention is transient by definition.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        true
    }
}

/// Why a resume did not land: the protocol's own answers, which a caller
/// matches on. Failures of the parts underneath (the store, a driver) are
/// the host layer's to wrap around this.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The park is not the open park; final.
    #[error(transparent)]
    Refused(#[from] ResumeRefusedError),
    /// Rivals kept the token moving; retryable.
    #[error(transparent)]
    Contended(#[from] ResumeContendedError),
    /// An unfenced resume ([`Fencing::Unfenced`]) met a fenced execution.
    /// The caller retries with a fence.
    #[error(transparent)]
    StaleFence(#[from] StaleFenceError),
}

/// Where the machine is. Each state but `Done` has exactly one pending
/// action.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum State {
    /// Read the whole log.
    ReadLog,
    /// Acquire: conditionally expecting `expect`, or unconditionally.
    Acquire {
        /// The token a conditional acquire expects.
        expect: u64,
    },
    /// Holding `token`, read the tail and check the park again.
    Recheck {
        /// The token just acquired.
        token: u64,
    },
    /// Append the resume, park-conditionally, under `token` (`None`: no
    /// token was taken).
    Append {
        /// The token held, if any.
        token: Option<u64>,
    },
    /// The append's outcome is unknown: read the tail to see whether it
    /// landed.
    Settle {
        /// The token the append carried, if any.
        token: Option<u64>,
    },
    /// After a stale answer: read the tail; retry expecting `current` if the
    /// park is still open.
    Reread {
        /// The token the store reported.
        current: u64,
    },
    /// Finished.
    Done(Result<Resumed, ResumeError>),
}

/// The path a resume takes, fixed at the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Path {
    /// `acquire_fence_if`, then the conditional append under the token.
    Conditional,
    /// `acquire_fence`, then the conditional append under the token (the
    /// documented residual window: the acquire itself is blind).
    Unconditional,
    /// No token; the conditional append alone.
    Unfenced,
}

/// One resume of one park, as a value: `Clone + Eq + Hash`, so a simulation
/// can snapshot it between any two steps.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResumeMachine {
    /// The execution being resumed.
    execution_id: ExecutionId,
    /// The park being answered.
    park_seq: u64,
    /// The answer, stored in the resume's payload.
    answer: Value,
    /// The resume's timestamp.
    at: i64,
    /// The message the resume delivers, if any.
    consumes: Option<Consumed>,
    /// How the fence is taken.
    path: Path,
    /// Everything read so far, folded.
    view: ExecutionView,
    /// Acquisitions made.
    attempts: u32,
    /// Appends whose outcome the store could not tell.
    unsettled: u32,
    /// The pending step.
    state: State,
}

impl ResumeMachine {
    /// A resume that reads the park itself (one range read from `park_seq`).
    #[must_use]
    pub fn new(execution_id: ExecutionId, request: ResumeRequest, capability: Capability) -> Self {
        let path = match (request.fencing, capability) {
            (Fencing::Unfenced, _) | (_, Capability::NonFencing) => Path::Unfenced,
            (Fencing::ByCapability, Capability::Conditional) => Path::Conditional,
            (Fencing::ByCapability, Capability::FencingOnly) => Path::Unconditional,
        };
        Self {
            execution_id,
            park_seq: request.fence_if_parked_at,
            answer: request.answer,
            at: request.at,
            consumes: request.consumes,
            path,
            view: ExecutionView::default(),
            attempts: 0,
            unsettled: 0,
            state: State::ReadLog,
        }
    }

    /// A resume that starts from the log the caller already holds: the
    /// events from sequence 1, at least up to the park. Anything else (a
    /// run that starts later, or ends before the park) is not enough to
    /// know whether the execution ended, so the machine reads the whole log
    /// as [`ResumeMachine::new`] does.
    pub fn with_events(
        execution_id: ExecutionId,
        request: ResumeRequest,
        capability: Capability,
        events: &[Envelope],
    ) -> Result<Self, ContractError> {
        let mut machine = Self::new(execution_id, request, capability);
        let first = events.first().map_or(0, |e| e.sequence);
        let last = events.last().map_or(0, |e| e.sequence);
        if first == 1 && machine.park_seq <= last {
            machine.check_run(1, events)?;
            machine.view = ExecutionView::fold(events);
            machine.after_log_read();
        }
        Ok(machine)
    }

    /// The execution this machine resumes.
    #[must_use]
    pub fn execution_id(&self) -> &ExecutionId {
        &self.execution_id
    }

    /// Acquisitions made so far.
    #[must_use]
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The token this resume holds right now: acquired, and not yet used by
    /// an append or given up. A host that stops here leaves a dead acquirer
    /// behind, which is what crash tests want to know.
    #[must_use]
    pub fn holds_fence(&self) -> Option<u64> {
        match self.state {
            State::Recheck { token }
            | State::Append { token: Some(token) }
            | State::Settle { token: Some(token) } => Some(token),
            _ => None,
        }
    }

    /// What to do next, or the result. Asking twice without handling an
    /// answer gives the same action.
    pub fn poll(&self) -> Poll {
        let action = match &self.state {
            State::Done(result) => return Poll::Done(result.clone()),
            State::ReadLog => Action::ReadFrom { from_seq: 1 },
            State::Recheck { .. } | State::Reread { .. } | State::Settle { .. } => {
                Action::ReadFrom {
                    from_seq: self.view.head + 1,
                }
            }
            State::Acquire { expect } => match self.path {
                Path::Conditional => Action::AcquireFenceIf(ParkExpectation {
                    fence: *expect,
                    park_seq: self.park_seq,
                }),
                Path::Unconditional | Path::Unfenced => Action::AcquireFence,
            },
            State::Append { token } => Action::AppendIfParked {
                park_seq: self.park_seq,
                events: batch(&self.answer, self.at, self.consumes.as_ref(), *token),
            },
        };
        Poll::Act(action)
    }

    /// Feeds the answer to a [`Action::ReadFrom`]: the events from the
    /// requested sequence to the head, possibly none.
    pub fn handle_read(&mut self, events: Vec<Envelope>) -> Result<(), ContractError> {
        let from = match self.state {
            State::ReadLog => 1,
            State::Recheck { .. } | State::Reread { .. } | State::Settle { .. } => {
                self.view.head + 1
            }
            _ => return Err(self.unexpected("handle_read")),
        };
        self.check_run(from, &events)?;
        if let State::Settle { token } = self.state {
            self.settle(token, &events);
            return Ok(());
        }
        self.view.extend(&events);
        match self.state {
            State::ReadLog => self.after_log_read(),
            State::Recheck { token } => {
                self.state = if self.park_is_open() {
                    State::Append { token: Some(token) }
                } else {
                    self.refused()
                };
            }
            State::Reread { current } => {
                self.state = if self.park_is_open() {
                    State::Acquire { expect: current }
                } else {
                    self.refused()
                };
            }
            _ => {}
        }
        Ok(())
    }

    /// Feeds the answer to an [`Action::AcquireFenceIf`].
    pub fn handle_acquire_if(&mut self, outcome: AcquireOutcome) -> Result<(), ContractError> {
        if !(matches!(self.state, State::Acquire { .. }) && self.path == Path::Conditional) {
            return Err(self.unexpected("handle_acquire_if"));
        }
        self.attempts += 1;
        self.state = match outcome {
            AcquireOutcome::Acquired { fence } => State::Recheck { token: fence },
            AcquireOutcome::Stale { fence } => self.retry_or_give_up(fence),
        };
        Ok(())
    }

    /// Feeds the answer to an [`Action::AcquireFence`]: the new token.
    pub fn handle_acquire(&mut self, token: u64) -> Result<(), ContractError> {
        if !(matches!(self.state, State::Acquire { .. }) && self.path == Path::Unconditional) {
            return Err(self.unexpected("handle_acquire"));
        }
        self.attempts += 1;
        self.state = State::Recheck { token };
        Ok(())
    }

    /// Feeds the answer to an [`Action::AppendIfParked`] that landed: the
    /// stored envelopes. They must be the batch sent, field by field (kind,
    /// payload, metadata with the token, `at`), after the head read so far;
    /// anything else is refused ([`ContractError::WrongAppend`],
    /// [`ContractError::ForgedAppend`]) and the machine is unchanged.
    pub fn handle_appended(&mut self, envelopes: Vec<Envelope>) -> Result<(), ContractError> {
        let State::Append { token } = self.state else {
            return Err(self.unexpected("handle_appended"));
        };
        let sent = batch(&self.answer, self.at, self.consumes.as_ref(), token);
        let wrong = || ContractError::WrongAppend {
            count: envelopes.len(),
            kind: envelopes
                .first()
                .map_or_else(|| "none".to_owned(), |e| e.kind.clone()),
        };
        let (Some(resumed), true) = (envelopes.last(), envelopes.len() == sent.len()) else {
            return Err(wrong());
        };
        let first = envelopes[0].sequence;
        for ((envelope, expected), offset) in envelopes.iter().zip(&sent).zip(0u64..) {
            self.check_id(&envelope.execution_id)?;
            // After everything read so far, one batch at contiguous
            // sequences (ignorable events of others may sit in between).
            if first <= self.view.head
                || envelope.sequence != first + offset
                || envelope.kind != expected.kind
            {
                return Err(wrong());
            }
        }
        if let Some(field) = resume_differs(resumed, &self.answer, self.at, token) {
            return Err(ContractError::ForgedAppend { field });
        }
        if let Some(consumed) = envelopes.first().filter(|_| envelopes.len() == 2) {
            let expected = &sent[0];
            let field = if consumed.payload != expected.payload {
                Some("payload")
            } else if consumed.metadata != expected.metadata {
                Some("metadata")
            } else if consumed.at != expected.at {
                Some("at")
            } else {
                None
            };
            if let Some(field) = field {
                return Err(ContractError::ForgedAppend { field });
            }
        }
        for envelope in &envelopes {
            self.view.apply(envelope);
        }
        self.state = State::Done(Ok(Resumed {
            execution_id: self.execution_id.clone(),
            fence: token,
            resumed: resumed.clone(),
            view: self.view,
            attempts: self.attempts,
        }));
        Ok(())
    }

    /// Feeds a stale-fence refusal of the resume's append.
    pub fn handle_stale(&mut self, stale: StaleFenceError) -> Result<(), ContractError> {
        let State::Append { token } = self.state else {
            return Err(self.unexpected("handle_stale"));
        };
        self.check_id(&stale.execution_id)?;
        self.state = match token {
            None => State::Done(Err(ResumeError::StaleFence(stale))),
            Some(_) => self.retry_or_give_up(stale.current),
        };
        Ok(())
    }

    /// Feeds [`ConditionalAppend::ParkAnswered`](crate::ConditionalAppend)
    /// for an [`Action::AppendIfParked`].
    pub fn handle_park_answered(&mut self) -> Result<(), ContractError> {
        if !matches!(self.state, State::Append { .. }) {
            return Err(self.unexpected("handle_park_answered"));
        }
        self.state = self.refused();
        Ok(())
    }

    /// Feeds a store's report that the park's sequence is no longer in the
    /// log (the execution was deleted under the resume), in answer to an
    /// [`Action::AcquireFenceIf`] or [`Action::AppendIfParked`]. The park is
    /// gone, so the resume is refused, and nothing was written: a token
    /// this resume took dies with it, as a delete intends.
    pub fn handle_park_gone(&mut self) -> Result<(), ContractError> {
        let conditional_acquire =
            matches!(self.state, State::Acquire { .. }) && self.path == Path::Conditional;
        if !(conditional_acquire || matches!(self.state, State::Append { .. })) {
            return Err(self.unexpected("handle_park_gone"));
        }
        self.state = self.refused();
        Ok(())
    }

    /// Feeds a store's report that it cannot tell whether the pending write
    /// ([`Action::AcquireFenceIf`], [`Action::AcquireFence`] or
    /// [`Action::AppendIfParked`]) happened: the connection died after the
    /// commit was sent.
    ///
    /// An acquire counts as a try and is retried on the same expectation:
    /// if it had landed, it is one more dead acquirer, which the retry
    /// passes. An append is settled by reading the tail (see the module
    /// docs).
    pub fn handle_outcome_unknown(&mut self) -> Result<(), ContractError> {
        self.state = match self.state {
            State::Acquire { expect } => {
                self.attempts += 1;
                self.retry_or_give_up(expect)
            }
            State::Append { token } => {
                self.unsettled += 1;
                State::Settle { token }
            }
            _ => return Err(self.unexpected("handle_outcome_unknown")),
        };
        Ok(())
    }

    /// Settles an append of unknown outcome from the tail read after it.
    fn settle(&mut self, token: Option<u64>, tail: &[Envelope]) {
        let ours = resume_event(&self.answer, self.at);
        for event in tail {
            self.view.apply(event);
            // Only this resume ever writes under its token, and its batch
            // holds one resume (a consumed message lands with it, in the
            // same atomic batch, or not at all); a tokenless resume cannot tell its event from a
            // rival's, so it never claims one.
            let landed =
                token.is_some() && event.kind == ours.kind && event.fence().ok().flatten() == token;
            if landed {
                self.state = State::Done(Ok(Resumed {
                    execution_id: self.execution_id.clone(),
                    fence: token,
                    resumed: event.clone(),
                    view: self.view,
                    attempts: self.attempts,
                }));
                return;
            }
        }
        self.state = if !self.park_is_open() {
            self.refused()
        } else if self.unsettled >= MAX_ATTEMPTS {
            self.contended()
        } else {
            State::Append { token }
        };
    }

    /// After the log has been read: refuse, or move to the fence.
    fn after_log_read(&mut self) {
        self.state = match (self.park_is_open(), self.path) {
            (false, _) => self.refused(),
            (true, Path::Unfenced) => State::Append { token: None },
            (true, Path::Conditional | Path::Unconditional) => State::Acquire {
                expect: self.view.open_park.map_or(0, |park| park.fence),
            },
        };
    }

    /// After a stale answer: retry on the store's token, or give up.
    fn retry_or_give_up(&self, current: u64) -> State {
        if self.attempts >= MAX_ATTEMPTS {
            self.contended()
        } else {
            State::Reread { current }
        }
    }

    /// Giving up while the park is still open.
    fn contended(&self) -> State {
        State::Done(Err(ResumeError::Contended(ResumeContendedError {
            execution_id: self.execution_id.clone(),
            attempts: self.attempts,
        })))
    }

    /// Whether the view's open park is the one this resume answers (the
    /// fold closes every park once the execution has ended).
    fn park_is_open(&self) -> bool {
        self.view.open_park.map(|park| park.sequence) == Some(self.park_seq)
    }

    /// The final refusal.
    fn refused(&self) -> State {
        State::Done(Err(ResumeError::Refused(ResumeRefusedError {
            execution_id: self.execution_id.clone(),
            park_seq: self.park_seq,
            reason: RefusalReason::NotSuspended,
        })))
    }

    /// Checks that `events` are this execution's, contiguous from `from`.
    fn check_run(&self, from: u64, events: &[Envelope]) -> Result<(), ContractError> {
        check_run(&self.execution_id, from, events)
    }

    /// Checks an answer is about this execution.
    fn check_id(&self, id: &ExecutionId) -> Result<(), ContractError> {
        check_id(&self.execution_id, id)
    }

    /// The error for an input that does not answer the pending action.
    fn unexpected(&self, got: &'static str) -> ContractError {
        let expected = match (&self.state, self.path) {
            (State::Done(_), _) => "nothing: the resume is over",
            (
                State::ReadLog
                | State::Recheck { .. }
                | State::Reread { .. }
                | State::Settle { .. },
                _,
            ) => "handle_read",
            (State::Acquire { .. }, Path::Conditional) => {
                "handle_acquire_if, handle_park_gone or handle_outcome_unknown"
            }
            (State::Acquire { .. }, _) => "handle_acquire or handle_outcome_unknown",
            (State::Append { .. }, _) => {
                "handle_appended, handle_park_answered, handle_park_gone, handle_stale or handle_outcome_unknown"
            }
        };
        ContractError::UnexpectedInput { expected, got }
    }
}

/// Checks that `events` are `execution_id`'s, contiguous from `from`: the
/// answer to a range read, for every machine that reads.
pub(crate) fn check_run(
    execution_id: &ExecutionId,
    from: u64,
    events: &[Envelope],
) -> Result<(), ContractError> {
    for (expected, event) in (from..).zip(events) {
        check_id(execution_id, &event.execution_id)?;
        if event.sequence != expected {
            return Err(ContractError::Gap {
                expected,
                got: event.sequence,
            });
        }
    }
    Ok(())
}

/// Checks an answer is about `expected`, the machine's execution.
pub(crate) fn check_id(expected: &ExecutionId, got: &ExecutionId) -> Result<(), ContractError> {
    if got == expected {
        Ok(())
    } else {
        Err(ContractError::WrongExecution {
            expected: expected.clone(),
            got: got.clone(),
        })
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod ack_tests;
