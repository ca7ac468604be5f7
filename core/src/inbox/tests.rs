//! The delivery machine pumped over the in-memory store, inbox and timer
//! table: a small host ([`Host`]), then one file per concern.

use serde_json::{Value, json};

use super::*;
use crate::capability::Capability;
use crate::drive;
use crate::event::{Envelope, NewEvent};
use crate::fire::TimerRow;
use crate::input::{ExecutionId, InputError};
use crate::kind::KernelKind;
use crate::memory::MemoryStore;
use crate::park::{Wait, park_payload};
use crate::redrive_policy::Draw;
use crate::resume_machine::{Action, Poll, ResumeError, ResumeMachine, Resumed, Stepped};
use crate::supervise::OnContention;
use crate::timer_table::TimerTable;

mod contract;
mod delivery;
mod park;

/// The time a listing is answered with (a delivery is stamped with it).
const NOW: i64 = 1_000;
/// The time a draw is answered with.
const LATER: i64 = 2_000;
/// When the messages of these tests were sent.
const SENT_AT: i64 = 500;

fn id(s: &str) -> ExecutionId {
    ExecutionId::new(s).expect("valid id")
}

/// A message for `execution` on `channel`.
fn message(execution: &str, channel: &str, message_id: &str, payload: Value) -> Message {
    Message {
        key: MessageKey::new(id(execution), channel, message_id).expect("a key"),
        payload,
        sent_at: SENT_AT,
    }
}

/// What the host does besides answering each action against its stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Nothing: every action is performed.
    None,
    /// A rival bumps the token before every conditional acquire, so every
    /// resume is contended.
    BumpBeforeAcquire,
    /// The host dies when the delivery asks to mark a message consumed
    /// after its resume landed: the flag is left stale.
    DieBeforeMark,
}

/// A host: the stores, a fault, and every action asked for.
struct Host {
    store: MemoryStore,
    inbox: InboxTable,
    timers: TimerTable,
    fault: Fault,
    trace: Vec<DeliverAction>,
}

impl Host {
    fn new() -> Self {
        Self {
            store: MemoryStore::new(),
            inbox: InboxTable::new(),
            timers: TimerTable::new(),
            fault: Fault::None,
            trace: Vec::new(),
        }
    }

    /// Starts `execution` (running, no park).
    fn start(&mut self, execution: &str) {
        self.store
            .append(
                &id(execution),
                NewEvent::kernel(KernelKind::ExecutionStarted, 0),
            )
            .expect("starts");
    }

    /// Appends a park on `waits`, as the execution's body does: under
    /// the token its resume took, if any.
    fn park(&mut self, execution: &str, waits: &[Wait]) -> u64 {
        let mut event =
            NewEvent::kernel(KernelKind::ExecutionSuspended, 1).with_payload(park_payload(waits));
        let token = self.store.current_fence(&id(execution));
        if token > 0 {
            event = event.with_fence(token);
        }
        self.store
            .append(&id(execution), event)
            .expect("parks")
            .sequence
    }

    /// Starts `execution` and parks it on `waits`.
    fn parked(&mut self, execution: &str, waits: &[Wait]) -> u64 {
        self.start(execution);
        self.park(execution, waits)
    }

    fn log(&self, execution: &str) -> Vec<Envelope> {
        self.store
            .read_range(&id(execution), 1, None)
            .expect("reads")
    }

    /// The `(channel, messageId)` of every `MESSAGE_CONSUMED`, in log order.
    fn consumed(&self, execution: &str) -> Vec<(String, String)> {
        self.log(execution)
            .iter()
            .filter(|event| event.kind == KernelKind::MessageConsumed.as_str())
            .map(|event| {
                let text = |name: &str| event.payload[name].as_str().expect("text").to_owned();
                (text("channel"), text("messageId"))
            })
            .collect()
    }

    /// Pumps `machine` to its end, or to the host's death (`None`).
    fn run(&mut self, machine: &mut DeliverMachine) -> Option<DeliverOutcome> {
        loop {
            let action = match machine.poll() {
                DeliverPoll::Done(outcome) => return Some(outcome),
                DeliverPoll::Act(action) => action,
            };
            self.trace.push(action.clone());
            if !self.act(machine, action) {
                return None;
            }
        }
    }

    /// Pumps `machine` to its end, which it must reach.
    fn finish(&mut self, machine: &mut DeliverMachine) -> DeliverOutcome {
        self.run(machine).expect("the host lives")
    }

    /// Performs one action and feeds the answer back; `false` when the
    /// host died instead.
    fn act(&mut self, machine: &mut DeliverMachine, action: DeliverAction) -> bool {
        let execution = machine.execution_id().clone();
        match action {
            DeliverAction::ReadLog => {
                let log = self.store.read_range(&execution, 1, None).expect("reads");
                machine.handle_log(&log).expect("fits");
            }
            DeliverAction::Send { message, intent } => {
                let sent = self.inbox.send(&message).expect("a valid message");
                if matches!(sent, Sent::Stored { .. }) {
                    self.timers.schedule(&intent).expect("a valid row");
                }
                machine.handle_sent(sent).expect("fits");
            }
            DeliverAction::ReadPending { channels, limit } => {
                let pending = self
                    .inbox
                    .pending(&execution, &channels, limit)
                    .expect("a valid listing");
                machine.handle_pending(&pending, NOW).expect("fits");
            }
            DeliverAction::MarkConsumed(key) => {
                let delivered = self.fault == Fault::DieBeforeMark
                    && self
                        .trace
                        .iter()
                        .rev()
                        .nth(1)
                        .is_some_and(|before| matches!(before, DeliverAction::Resume { .. }));
                if delivered {
                    return false;
                }
                self.inbox.mark_consumed(&key).expect("a valid key");
                machine.handle_marked().expect("fits");
            }
            DeliverAction::Resume { request, log } => {
                let mut resume =
                    ResumeMachine::with_events(execution, request, Capability::Conditional, &log)
                        .expect("a log from 1");
                let result = self.resume(&mut resume);
                machine.handle_resumed(result.as_ref()).expect("fits");
            }
            DeliverAction::Draw => {
                machine
                    .handle_draw(Draw::new(0.5).expect("a draw"), LATER)
                    .expect("a time");
            }
            DeliverAction::WriteRow(row) => {
                self.timers.schedule(&row).expect("a valid row");
                machine.handle_written().expect("fits");
            }
            DeliverAction::ReadFence => {
                let current = self.store.current_fence(&execution);
                machine.handle_fence(current).expect("fits");
            }
            DeliverAction::AppendPark(event) => {
                let park = self.store.append(&execution, event).expect("parks");
                machine.handle_parked(&park).expect("fits");
            }
        }
        true
    }

    /// Runs a resume to its end, a rival bumping the token before each
    /// conditional acquire under [`Fault::BumpBeforeAcquire`].
    fn resume(&mut self, resume: &mut ResumeMachine) -> Result<Resumed, ResumeError> {
        loop {
            if self.fault == Fault::BumpBeforeAcquire
                && matches!(resume.poll(), Poll::Act(Action::AcquireFenceIf(_)))
            {
                self.store.acquire_fence(resume.execution_id());
            }
            if let Stepped::Done(result) = drive::step(&mut self.store, resume).expect("steps") {
                return result;
            }
        }
    }
}

/// The options of these tests: the default intent delay and policy, and
/// `on_contention`.
fn options(on_contention: OnContention) -> DeliverOptions {
    DeliverOptions {
        on_contention,
        ..DeliverOptions::default()
    }
}

/// A notify of `message` with the default options.
fn notify(message: Message) -> DeliverMachine {
    DeliverMachine::notify(message, DeliverOptions::default()).expect("a valid message")
}

/// A check of `execution` with the default options.
fn check(execution: &str) -> DeliverMachine {
    DeliverMachine::check(id(execution), DeliverOptions::default())
}

/// The one message wait on `channel`.
fn on(channel: &str) -> Wait {
    Wait::Message {
        channel: channel.to_owned(),
    }
}
