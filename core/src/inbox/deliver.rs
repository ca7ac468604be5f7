//! A delivery as a sans-IO state machine: every rule of the inbox's notify,
//! park-time check and re-drive, for every host (the async runtime, the npm
//! package, the simulation) to pump.
//!
//! [`DeliverMachine::poll`] names the next [`DeliverAction`]; the host does
//! it and feeds the answer back through the matching `handle_*` method,
//! until `poll` gives [`DeliverPoll::Done`] with a [`DeliverOutcome`]. The
//! steps, and why:
//!
//! A park ([`DeliverMachine::park`]) takes three steps of its own first,
//! then goes on as a check from step 1:
//!
//! - **Read the token** ([`DeliverAction::ReadFence`]) and end
//!   [`DeliverOutcome::Fenced`], writing nothing, when the append guard
//!   would refuse the park (a body fenced out, a stale token given): a
//!   refused park leaves no row behind.
//! - **Write the park's intent row** ([`DeliverAction::WriteRow`]), when
//!   it waits on a channel: a message that arrived before the park has had
//!   its own intent row fire and find no park, so if the host dies between
//!   the park and its check, or the check is contended, this row is what
//!   finishes the delivery.
//! - **Append the park** ([`DeliverAction::AppendPark`]).
//!
//! 1. **Read the whole log** ([`DeliverAction::ReadLog`]). A notify is
//!    refused, with nothing stored, when the execution has no log
//!    ([`NotDeliverable::Unknown`]) or has ended
//!    ([`NotDeliverable::Ended`]): no park can ever consume such a
//!    message, so keeping it would only leak a row, and a sender that
//!    names an unknown execution has a bug it should hear about.
//! 2. **Store the message with its intent** ([`DeliverAction::Send`], a
//!    notify only): the message and a re-drive row (try 0, due
//!    `intent_delay_ms` later) in one atomic step of the inbox. If the
//!    sender dies before step 5, the row's re-driver finishes the delivery.
//!    A second send of the same key stores nothing and still goes on, so a
//!    sender that retries after a crash delivers at once.
//! 3. **Find the open park's MESSAGE waits.** None (not parked, parked on
//!    other things only, a wait this node cannot read): the message waits
//!    in the inbox ([`DeliverOutcome::Waiting`]) for a park that names its
//!    channel, which checks the inbox when it is written.
//! 4. **List the pending messages** of those channels in arrival order
//!    ([`DeliverAction::ReadPending`]) and drop those the log already
//!    records as consumed (`MESSAGE_CONSUMED`): the log is the truth, the
//!    inbox's flag a cache that a crash can leave behind. Such stale flags
//!    are repaired ([`DeliverAction::MarkConsumed`]) on the way. The first
//!    message left is the one to deliver, so each channel is consumed in
//!    the order it arrived.
//! 5. **Resume conditionally, consuming it** ([`DeliverAction::Resume`]):
//!    a [`ResumeRequest`] with [`ResumeRequest::consuming`], so the resume
//!    machine appends `[MESSAGE_CONSUMED, EXECUTION_RESUMED]` as ONE
//!    park-conditional batch under the acquired token. The answer is
//!    [`message_answer`](super::message_answer) for the wait it answers.
//!    At most one resume lands per park, whoever races it (a timer, a
//!    child's end, another sender, a re-driver), and a message consumed in
//!    the log for an earlier park precedes every later park in the log, so
//!    step 4 never offers it again: each message is delivered at most
//!    once.
//! 6. **Mark it consumed** in the inbox, and end
//!    [`DeliverOutcome::Delivered`].
//!
//! A refused resume (someone answered the park first) reads the log again
//! and decides again from step 3, at most three resumes in all: the park
//! may be a new one on the same channel. A contended resume ends
//! [`DeliverOutcome::Contended`], or, with [`OnContention::WriteRow`],
//! writes the chain's first re-drive row as the supervision does
//! ([`DeliverAction::Draw`], [`DeliverAction::WriteRow`]).
//!
//! A store error is not an answer: the host stops and drops the machine.
//! Whatever was stored stays, and the intent row finishes the work.

use crate::contract::ContractError;
use crate::error::Error;
use crate::event::{Envelope, NewEvent, fence_of};
use crate::fence::{BatchFacts, StaleFenceError, guard_append};
use crate::fire::{RedriveAnswer, TimerRow};
use crate::fold::ExecutionView;
use crate::input::{ExecutionId, InputError};
use crate::json::JsonObject;
use crate::kind::KernelKind;
use crate::park::{Wait, waits_in};
use crate::redrive_policy::{Draw, RedrivePolicy};
use crate::resume_machine::{
    Consumed, ResumeContendedError, ResumeError, ResumeRequest, Resumed, check_id, check_run,
};
use crate::supervise::OnContention;

use super::message::{
    DEFAULT_INTENT_DELAY_MS, Message, MessageKey, Sent, StoredMessage, consumed_in, message_answer,
};

/// How many pending messages one listing asks for.
pub const PENDING_PAGE: usize = 16;

/// How many resumes one delivery makes while each is refused and each
/// re-read finds a message to deliver.
const MAX_RESUMES: u32 = 3;

/// How many listings one delivery repairs stale flags from before it
/// leaves the rest to the next.
const MAX_REPAIR_ROUNDS: u32 = 4;

/// How a delivery behaves: the same for every delivery of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeliverOptions {
    /// How long after a send its intent row comes due, in ms (at least 1).
    pub intent_delay_ms: i64,
    /// The schedule of a contended delivery's first re-drive row: the
    /// timer services' policy, so that a chain follows one schedule.
    pub policy: RedrivePolicy,
    /// What a contended resume leads to.
    pub on_contention: OnContention,
}

impl Default for DeliverOptions {
    /// [`DEFAULT_INTENT_DELAY_MS`], the default policy, no re-drive row.
    fn default() -> Self {
        Self {
            intent_delay_ms: DEFAULT_INTENT_DELAY_MS,
            policy: RedrivePolicy::default(),
            on_contention: OnContention::Answer,
        }
    }
}

/// Why a notify stored nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotDeliverable {
    /// The execution has no log.
    Unknown,
    /// The execution has ended.
    Ended,
}

/// One thing for the host to do.
///
/// Non-exhaustive: a host that does not know an action must stop rather
/// than guess.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeliverAction {
    /// Read the execution's whole log, `read_range(id, 1, None)`; answer
    /// with [`DeliverMachine::handle_log`].
    ReadLog,
    /// Store the message and its intent row in one atomic step of the
    /// inbox; answer with [`DeliverMachine::handle_sent`].
    Send {
        /// The message.
        message: Message,
        /// Its intent row, a re-drive row of the execution.
        intent: TimerRow,
    },
    /// List up to `limit` messages of the execution on `channels` not
    /// marked consumed, in arrival order; answer with
    /// [`DeliverMachine::handle_pending`].
    ReadPending {
        /// The channels the open park waits on, in wait order, once each.
        channels: Vec<String>,
        /// At most this many.
        limit: usize,
    },
    /// Mark this message consumed in the inbox; answer with
    /// [`DeliverMachine::handle_marked`].
    MarkConsumed(MessageKey),
    /// Run a [`ResumeMachine`](crate::ResumeMachine),
    /// `ResumeMachine::with_events(id, request, capability, &log)`, to its
    /// end; answer with its result through
    /// [`DeliverMachine::handle_resumed`].
    Resume {
        /// The resume, consuming the message.
        request: ResumeRequest,
        /// The log as read, so the resume need not read it again.
        log: Vec<Envelope>,
    },
    /// Draw a number in `[0, 1)` for the re-drive row's jitter and read
    /// the clock; answer with [`DeliverMachine::handle_draw`].
    Draw,
    /// Write this re-drive row to the timer store (a park's intent row, or
    /// the first row of a contended delivery's chain); answer with
    /// [`DeliverMachine::handle_written`].
    WriteRow(TimerRow),
    /// Read the execution's current token, `current_fence(id)`; answer with
    /// [`DeliverMachine::handle_fence`].
    ReadFence,
    /// Append this park (`EXECUTION_SUSPENDED`, under the body's token if
    /// it holds one) with a plain append; answer with
    /// [`DeliverMachine::handle_parked`]. A stale fence is the body's
    /// answer, not the machine's: the host stops.
    AppendPark(NewEvent),
}

/// How a delivery ended.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeliverOutcome {
    /// A notify stored nothing: no park can ever consume the message.
    Refused(NotDeliverable),
    /// This message was delivered: its `MESSAGE_CONSUMED` and the resume
    /// landed together. Under a notify it may be an older message of the
    /// same channel than the one sent, which goes first.
    Delivered {
        /// The message delivered.
        message: MessageKey,
        /// The resume, for the host to start the body.
        resumed: Box<Resumed>,
    },
    /// Nothing to deliver now: no open park waits on a channel that holds
    /// a pending message. What was sent waits in the inbox.
    Waiting,
    /// Rivals kept the token moving and no row was written
    /// ([`OnContention::Answer`]); the park is still open.
    Contended(ResumeContendedError),
    /// Rivals kept the token moving and this first re-drive row was
    /// written ([`OnContention::WriteRow`]).
    RedriveScheduled(TimerRow),
    /// A park's token is stale (the body was fenced out, or was given a
    /// wrong token): the append guard would refuse the park, so nothing was
    /// written, no intent row either.
    Fenced(StaleFenceError),
}

impl DeliverOutcome {
    /// What the inbox re-driver answers the timer service that fired a
    /// re-drive row: delivered is done; contended is contended; the rest
    /// is noop (nothing of the inbox's to finish, or a row already carries
    /// the chain on).
    #[must_use]
    pub fn redrive_answer(&self) -> RedriveAnswer {
        match self {
            DeliverOutcome::Delivered { .. } => RedriveAnswer::Done,
            DeliverOutcome::Contended(_) => RedriveAnswer::Contended,
            DeliverOutcome::Refused(_)
            | DeliverOutcome::Waiting
            | DeliverOutcome::RedriveScheduled(_)
            | DeliverOutcome::Fenced(_) => RedriveAnswer::Noop,
        }
    }
}

/// What [`DeliverMachine::poll`] says.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeliverPoll {
    /// Do this, then feed the answer back.
    Act(DeliverAction),
    /// The delivery is over.
    Done(DeliverOutcome),
}

/// What follows the repairs of stale flags.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum AfterRepair {
    /// List the pending messages again.
    List,
    /// Resume, delivering this message.
    Resume(Box<ResumeRequest>, MessageKey),
}

/// Where the machine is. Each state but `Done` has exactly one pending
/// action.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum State {
    /// Read the token a park's append will be judged against.
    ParkFence(TimerRow),
    /// Write a park's intent row, then the park.
    ParkIntent(TimerRow),
    /// Append the park.
    AppendPark(NewEvent),
    /// Read the log.
    ReadLog,
    /// Store the message.
    Send,
    /// List the pending messages.
    ReadPending,
    /// Mark `stale[0]` consumed, then the rest, then go on.
    Repair {
        /// Flags the log proves stale.
        stale: Vec<MessageKey>,
        /// What follows.
        then: AfterRepair,
    },
    /// Resume, delivering `message`.
    Resume {
        /// The request.
        request: Box<ResumeRequest>,
        /// The message it consumes.
        message: MessageKey,
    },
    /// Mark the delivered message consumed.
    MarkDelivered {
        /// The message.
        message: MessageKey,
        /// The resume that delivered it.
        resumed: Box<Resumed>,
    },
    /// Draw the first re-drive row's jitter.
    Draw,
    /// Write the first re-drive row.
    WriteRow(TimerRow),
    /// Finished.
    Done(DeliverOutcome),
}

/// One delivery, as a value: `Clone + Eq + Hash`, so a simulation can
/// snapshot it between any two steps. Its steps head
/// `core/src/inbox/deliver.rs`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeliverMachine {
    /// The execution.
    execution_id: ExecutionId,
    /// Behaviour.
    options: DeliverOptions,
    /// The message a notify sends, with its intent row.
    message: Option<(Message, TimerRow)>,
    /// What the send answered.
    sent: Option<Sent>,
    /// The park a park writes.
    park_event: Option<NewEvent>,
    /// The park a park wrote.
    parked: Option<Envelope>,
    /// The log as last read.
    log: Vec<Envelope>,
    /// The messages the log records as consumed, sorted.
    consumed: Vec<(String, String)>,
    /// The open park's sequence, once found.
    park: u64,
    /// The open park's MESSAGE waits: (wait index, channel), in wait order.
    waits: Vec<(usize, String)>,
    /// Resumes refused so far.
    refused: u32,
    /// Listings that found stale flags.
    repairs: u32,
    /// The pending step.
    state: State,
}

impl DeliverMachine {
    /// A notify: send `message`, then deliver what its execution's open
    /// park can take. Checked first, so a malformed message is refused
    /// before anything is read.
    pub fn notify(message: Message, options: DeliverOptions) -> Result<Self, InputError> {
        message.check()?;
        let intent = message.intent(options.intent_delay_ms)?;
        let mut machine = Self::check(message.key.execution_id.clone(), options);
        machine.message = Some((message, intent));
        Ok(machine)
    }

    /// A check: deliver whatever the execution's open park can take from
    /// the inbox. What a park runs right after it is written (the park-time
    /// self-resume) and what the inbox re-driver runs for a due re-drive
    /// row.
    #[must_use]
    pub fn check(execution_id: ExecutionId, options: DeliverOptions) -> Self {
        Self {
            execution_id,
            options,
            message: None,
            sent: None,
            park_event: None,
            parked: None,
            log: Vec::new(),
            consumed: Vec::new(),
            park: 0,
            waits: Vec::new(),
            refused: 0,
            repairs: 0,
            state: State::ReadLog,
        }
    }

    /// A park: write `park` (an `EXECUTION_SUSPENDED` whose waits the core
    /// reads), after its intent row when it waits on a channel, then check
    /// the inbox as [`DeliverMachine::check`] does. `park.at` is the time
    /// the intent row is scheduled from. A park that is not one, or whose
    /// waits cannot be read, is refused before anything is written.
    pub fn park(
        execution_id: ExecutionId,
        park: NewEvent,
        options: DeliverOptions,
    ) -> Result<Self, InputError> {
        if park.kind != KernelKind::ExecutionSuspended.as_str() {
            return Err(InputError::NotParkEvent {
                sequence: 0,
                kind: park.kind,
            });
        }
        park.check()?;
        let waits = waits_in(&park.payload)?;
        let mut machine = Self::check(execution_id, options);
        machine.state = if waits
            .iter()
            .any(|wait| matches!(wait, Wait::Message { .. }))
        {
            State::ParkFence(intent_row(
                &machine.execution_id,
                park.at,
                options.intent_delay_ms,
            )?)
        } else {
            State::AppendPark(park.clone())
        };
        machine.park_event = Some(park);
        Ok(machine)
    }

    /// The park a [`DeliverMachine::park`] wrote, once it did.
    #[must_use]
    pub fn parked(&self) -> Option<&Envelope> {
        self.parked.as_ref()
    }

    /// The execution delivered to.
    #[must_use]
    pub fn execution_id(&self) -> &ExecutionId {
        &self.execution_id
    }

    /// What the notify's send answered, once it did.
    #[must_use]
    pub fn sent(&self) -> Option<Sent> {
        self.sent
    }

    /// What to do next, or the outcome. Asking twice without handling an
    /// answer gives the same action.
    pub fn poll(&self) -> DeliverPoll {
        let action = match &self.state {
            State::Done(outcome) => return DeliverPoll::Done(outcome.clone()),
            State::ParkFence(_) => DeliverAction::ReadFence,
            State::ParkIntent(row) => DeliverAction::WriteRow(row.clone()),
            State::AppendPark(event) => DeliverAction::AppendPark(event.clone()),
            State::ReadLog => DeliverAction::ReadLog,
            State::Send => match &self.message {
                Some((message, intent)) => DeliverAction::Send {
                    message: message.clone(),
                    intent: intent.clone(),
                },
                // Only a notify, which holds its message, ever sends.
                None => DeliverAction::ReadLog,
            },
            State::ReadPending => DeliverAction::ReadPending {
                channels: self.channels(),
                limit: PENDING_PAGE,
            },
            State::Repair { stale, .. } => DeliverAction::MarkConsumed(stale[0].clone()),
            State::Resume { request, .. } => DeliverAction::Resume {
                request: (**request).clone(),
                log: self.log.clone(),
            },
            State::MarkDelivered { message, .. } => DeliverAction::MarkConsumed(message.clone()),
            State::Draw => DeliverAction::Draw,
            State::WriteRow(row) => DeliverAction::WriteRow(row.clone()),
        };
        DeliverPoll::Act(action)
    }

    /// Feeds the answer to [`DeliverAction::ReadLog`]: the execution's
    /// whole log from sequence 1, possibly empty.
    pub fn handle_log(&mut self, events: &[Envelope]) -> Result<(), ContractError> {
        if !matches!(self.state, State::ReadLog) {
            return Err(self.unexpected("handle_log"));
        }
        check_run(&self.execution_id, 1, events)?;
        let view = ExecutionView::fold(events);
        if self.message.is_some() && self.sent.is_none() {
            self.state = if events.is_empty() {
                State::Done(DeliverOutcome::Refused(NotDeliverable::Unknown))
            } else if view.status.is_terminal() {
                State::Done(DeliverOutcome::Refused(NotDeliverable::Ended))
            } else {
                State::Send
            };
        }
        self.log = events.to_vec();
        self.consumed = consumed_in(events);
        self.park = 0;
        self.waits.clear();
        if let Some(open) = view.open_park
            && let Some(park) = events.iter().find(|event| event.sequence == open.sequence)
        {
            self.park = open.sequence;
            self.waits = message_waits(&park.payload);
        }
        if matches!(self.state, State::ReadLog) {
            self.state = self.after_read();
        }
        Ok(())
    }

    /// Feeds the answer to [`DeliverAction::Send`].
    pub fn handle_sent(&mut self, sent: Sent) -> Result<(), ContractError> {
        if !matches!(self.state, State::Send) {
            return Err(self.unexpected("handle_sent"));
        }
        self.sent = Some(sent);
        self.state = self.after_read();
        Ok(())
    }

    /// Feeds the answer to [`DeliverAction::ReadPending`]: the messages
    /// listed, and the time now (a delivery is stamped with it). They must
    /// be the execution's, on the channels asked for, at most the limit,
    /// in increasing arrival order; anything else is the inbox breaking
    /// its contract and changes nothing.
    pub fn handle_pending(
        &mut self,
        messages: &[StoredMessage],
        now: i64,
    ) -> Result<(), ContractError> {
        if !matches!(self.state, State::ReadPending) {
            return Err(self.unexpected("handle_pending"));
        }
        let channels = self.channels();
        let mut last = 0;
        for stored in messages {
            let key = &stored.message.key;
            check_id(&self.execution_id, &key.execution_id)?;
            let reason = if !channels.contains(&key.channel) {
                Some("a message on a channel not asked for")
            } else if stored.arrival <= last {
                Some("messages out of arrival order")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(ContractError::InboxOutOfContract { reason });
            }
            last = stored.arrival;
        }
        if messages.len() > PENDING_PAGE {
            return Err(ContractError::InboxOutOfContract {
                reason: "more messages than the limit",
            });
        }
        let (stale, fresh): (Vec<&StoredMessage>, Vec<&StoredMessage>) =
            messages.iter().partition(|stored| {
                let key = &stored.message.key;
                self.consumed
                    .binary_search(&(key.channel.clone(), key.message_id.clone()))
                    .is_ok()
            });
        let stale: Vec<MessageKey> = stale.into_iter().map(|s| s.message.key.clone()).collect();
        let next = match fresh.first() {
            Some(stored) => {
                let message = &stored.message;
                let wait = self
                    .waits
                    .iter()
                    .find(|(_, channel)| *channel == message.key.channel)
                    .map_or(0, |(index, _)| *index);
                let request = ResumeRequest::new(self.park, message_answer(wait, message), now)
                    .consuming(Consumed {
                        channel: message.key.channel.clone(),
                        message_id: message.key.message_id.clone(),
                    });
                Some(AfterRepair::Resume(Box::new(request), message.key.clone()))
            }
            None if !stale.is_empty() && self.repairs < MAX_REPAIR_ROUNDS => {
                Some(AfterRepair::List)
            }
            None => None,
        };
        if !stale.is_empty() {
            self.repairs += 1;
        }
        self.state = match (next, stale.is_empty()) {
            (None, _) => State::Done(DeliverOutcome::Waiting),
            (Some(then), false) => State::Repair { stale, then },
            (Some(then), true) => after_repair(then),
        };
        Ok(())
    }

    /// Acknowledges [`DeliverAction::MarkConsumed`] (whether the flag was
    /// unset does not matter: a rival may have set it).
    pub fn handle_marked(&mut self) -> Result<(), ContractError> {
        self.state = match std::mem::replace(&mut self.state, State::ReadLog) {
            State::Repair { mut stale, then } => {
                stale.remove(0);
                if stale.is_empty() {
                    after_repair(then)
                } else {
                    State::Repair { stale, then }
                }
            }
            State::MarkDelivered { message, resumed } => {
                State::Done(DeliverOutcome::Delivered { message, resumed })
            }
            other => {
                self.state = other;
                return Err(self.unexpected("handle_marked"));
            }
        };
        Ok(())
    }

    /// Feeds the result of the [`DeliverAction::Resume`]: what the resume
    /// machine's [`Poll::Done`](crate::Poll::Done) held (`result.as_ref()`).
    pub fn handle_resumed(
        &mut self,
        result: Result<&Resumed, &ResumeError>,
    ) -> Result<(), ContractError> {
        let State::Resume { message, .. } = &self.state else {
            return Err(self.unexpected("handle_resumed"));
        };
        let next = match result {
            Ok(resumed) => {
                check_id(&self.execution_id, &resumed.execution_id)?;
                State::MarkDelivered {
                    message: message.clone(),
                    resumed: Box::new(resumed.clone()),
                }
            }
            Err(ResumeError::Refused(refused)) => {
                check_id(&self.execution_id, &refused.execution_id)?;
                if refused.park_seq != self.park {
                    return Err(ContractError::WrongPark {
                        expected: self.park,
                        got: refused.park_seq,
                    });
                }
                self.refused += 1;
                if self.refused < MAX_RESUMES {
                    State::ReadLog
                } else {
                    self.on_contention(ResumeContendedError {
                        execution_id: self.execution_id.clone(),
                        attempts: self.refused,
                    })
                }
            }
            Err(ResumeError::Contended(contended)) => {
                check_id(&self.execution_id, &contended.execution_id)?;
                self.on_contention(contended.clone())
            }
            Err(ResumeError::StaleFence(_)) => {
                return Err(ContractError::UnexpectedInput {
                    expected: "the result of the fenced resume requested",
                    got: "a stale-fence refusal, which only an unfenced resume gets",
                });
            }
        };
        self.state = next;
        Ok(())
    }

    /// Feeds the answer to [`DeliverAction::Draw`]: a checked draw and the
    /// time now, from which the first re-drive row is due
    /// ([`TimerRow::first_redrive`]).
    pub fn handle_draw(&mut self, draw: Draw, now: i64) -> Result<(), Error> {
        if !matches!(self.state, State::Draw) {
            return Err(self.unexpected("handle_draw").into());
        }
        let row =
            TimerRow::first_redrive(self.execution_id.clone(), now, &self.options.policy, draw)
                .ok_or(InputError::NoWakeTime { now })?;
        self.state = State::WriteRow(row);
        Ok(())
    }

    /// Acknowledges [`DeliverAction::WriteRow`]: the row is stored.
    pub fn handle_written(&mut self) -> Result<(), ContractError> {
        self.state = match &self.state {
            State::WriteRow(row) => State::Done(DeliverOutcome::RedriveScheduled(row.clone())),
            State::ParkIntent(_) => match &self.park_event {
                Some(park) => State::AppendPark(park.clone()),
                None => return Err(self.unexpected("handle_written")),
            },
            _ => return Err(self.unexpected("handle_written")),
        };
        Ok(())
    }

    /// Feeds the answer to [`DeliverAction::ReadFence`]: the execution's
    /// current token. The park goes on while the append guard would take
    /// it; otherwise the delivery ends [`DeliverOutcome::Fenced`] with
    /// nothing written. (A rival that acquires after this read is a race
    /// the store's own guard settles: the park is refused then, and its
    /// intent row, already written, only finds nothing to do.)
    pub fn handle_fence(&mut self, current: u64) -> Result<(), ContractError> {
        let (State::ParkFence(row), Some(park)) = (&self.state, &self.park_event) else {
            return Err(self.unexpected("handle_fence"));
        };
        let facts = BatchFacts {
            fence: fence_of(&park.metadata).ok().flatten(),
            answering: true,
        };
        self.state = match guard_append(&self.execution_id, current, facts) {
            Ok(()) => State::ParkIntent(row.clone()),
            Err(stale) => State::Done(DeliverOutcome::Fenced(stale)),
        };
        Ok(())
    }

    /// Feeds the answer to [`DeliverAction::AppendPark`]: the stored park.
    /// It must be the event sent, of this execution; anything else is the
    /// store breaking its contract and changes nothing.
    pub fn handle_parked(&mut self, park: &Envelope) -> Result<(), ContractError> {
        let State::AppendPark(sent) = &self.state else {
            return Err(self.unexpected("handle_parked"));
        };
        check_id(&self.execution_id, &park.execution_id)?;
        if park.kind != sent.kind || park.payload != sent.payload || park.at != sent.at {
            return Err(ContractError::WrongAppend {
                count: 1,
                kind: park.kind.clone(),
            });
        }
        self.parked = Some(park.clone());
        self.state = State::ReadLog;
        Ok(())
    }

    /// After the log (and a notify's send): list, or nothing to do.
    fn after_read(&self) -> State {
        if self.waits.is_empty() {
            State::Done(DeliverOutcome::Waiting)
        } else {
            State::ReadPending
        }
    }

    /// The end of a contended delivery, as the options say.
    fn on_contention(&self, contended: ResumeContendedError) -> State {
        match self.options.on_contention {
            OnContention::Answer => State::Done(DeliverOutcome::Contended(contended)),
            OnContention::WriteRow => State::Draw,
        }
    }

    /// The channels of the open park's MESSAGE waits, in wait order, once
    /// each.
    fn channels(&self) -> Vec<String> {
        let mut channels: Vec<String> = Vec::new();
        for (_, channel) in &self.waits {
            if !channels.contains(channel) {
                channels.push(channel.clone());
            }
        }
        channels
    }

    /// The error for an input that does not answer the pending action.
    fn unexpected(&self, got: &'static str) -> ContractError {
        let expected = match &self.state {
            State::Done(_) => "nothing: the delivery is over",
            State::ParkFence(_) => "handle_fence",
            State::ParkIntent(_) => "handle_written",
            State::AppendPark(_) => "handle_parked",
            State::ReadLog => "handle_log",
            State::Send => "handle_sent",
            State::ReadPending => "handle_pending",
            State::Repair { .. } | State::MarkDelivered { .. } => "handle_marked",
            State::Resume { .. } => "handle_resumed",
            State::Draw => "handle_draw",
            State::WriteRow(_) => "handle_written",
        };
        ContractError::UnexpectedInput { expected, got }
    }
}

/// A re-drive row (try 0) of `execution_id` due `delay_ms` (at least 1)
/// after `from`: the intent row of a send or of a park.
pub(crate) fn intent_row(
    execution_id: &ExecutionId,
    from: i64,
    delay_ms: i64,
) -> Result<TimerRow, InputError> {
    let wake_at = from.saturating_add(delay_ms.max(1));
    if !(0..=crate::redrive_policy::MAX_TIMER_MS).contains(&wake_at) || from < 0 {
        return Err(InputError::NoWakeTime { now: from });
    }
    Ok(TimerRow::redrive(execution_id.clone(), wake_at, 0))
}

/// The state that follows the repairs.
fn after_repair(then: AfterRepair) -> State {
    match then {
        AfterRepair::List => State::ReadPending,
        AfterRepair::Resume(request, message) => State::Resume { request, message },
    }
}

/// The MESSAGE waits of a park's payload, as (index, channel), read one
/// wait at a time so that a wait this node cannot read (a newer node's
/// shape) does not hide the others.
fn message_waits(payload: &JsonObject) -> Vec<(usize, String)> {
    let Some(serde_json::Value::Array(waits)) = payload.get("waits") else {
        return Vec::new();
    };
    waits
        .iter()
        .enumerate()
        .filter_map(|(index, raw)| {
            let mut one = JsonObject::new();
            one.insert(
                "waits".to_owned(),
                serde_json::Value::Array(vec![raw.clone()]),
            );
            match waits_in(&one) {
                Ok(mut read) => match read.pop() {
                    Some(Wait::Message { channel }) => Some((index, channel)),
                    _ => None,
                },
                Err(_) => None,
            }
        })
        .collect()
}
