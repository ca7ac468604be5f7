//! The timer fire decision as a sans-IO state machine: what to do with one
//! due timer row.
//!
//! A timer service claims due rows from its timer store and hands each to a
//! [`FireMachine`], with the current time, one random [`Draw`], the
//! [`RedrivePolicy`], this node's [`WakeBackoff`](crate::timer::WakeBackoff) entry
//! for the execution and how many re-drivers it has registered. The machine never touches a
//! store: [`FireMachine::poll`] names the next [`FireAction`], the host does
//! it and feeds the answer back through the matching `handle_*` method,
//! until `poll` gives [`FirePoll::Done`] with a [`FireOutcome`]. It is the
//! resume machine's vocabulary; a plain wake's [`FireAction::Resume`] is run
//! by a [`ResumeMachine`](crate::ResumeMachine), whose result is fed back.
//!
//! # The decision table
//!
//! "Retire" is [`FireAction::Complete`] of the fired row; "reschedule" is
//! [`FireAction::Reschedule`], which retires it and writes the next row in
//! one timer-store step under the claim; "left" means the
//! row is not touched (its claim is the host's to release or let expire).
//! `n` is the try a retry would be, from 0; `max` is
//! [`RedrivePolicy::max_attempts`].
//!
//! A **plain wake** (`redrive: None`) answers one TIMER wait:
//!
//! | when | the machine | outcome |
//! |---|---|---|
//! | this node's backoff entry for the execution has `now < next_try_at` | nothing at all: no read, no acquire | [`NotYet`](FireOutcome::NotYet), left |
//! | read of the whole log: no open park (empty log, running, answered, ended) | retire | [`Obsolete`](FireOutcome::Obsolete) |
//! | the open park has no TIMER wait with this `wake_at` (another park, other waits only, another time) | retire | [`Obsolete`](FireOutcome::Obsolete) |
//! | the open park's wait `i` is `TIMER` at this `wake_at` | resume that park: `fence_if_parked_at` = its sequence, answer `{"wait": i, "timer": {"wakeAt": wake_at}}`, `at` = now | |
//! | the resume landed | retire | [`Fired`](FireOutcome::Fired) |
//! | the resume was refused (not suspended) | read the log again and decide again from the second row (at most 3 resumes per fire) | |
//! | the resume was contended, or refused a third time; `n < max`, where `n` is the entry's `attempt + 1` if the entry is this row's, else 0 | write nothing; the outcome carries the entry `{ wake_at, attempt: n, next_try_at: now + delay(n) }` for this node's map | [`BackedOff`](FireOutcome::BackedOff), left |
//! | the same with `n >= max` | retire and record the exhaustion, one step | [`Exhausted`](FireOutcome::Exhausted) |
//!
//! A **re-drive row** (`redrive: Some({ attempt })`) is not judged by the
//! log at all: it is handed to the re-drivers, in the order they were
//! registered, and the first answer that is not [`Noop`](RedriveAnswer::Noop)
//! wins:
//!
//! | when | the machine | outcome |
//! |---|---|---|
//! | no re-driver is registered on this node | nothing | [`Left`](FireOutcome::Left), left |
//! | a re-driver answers done | retire | [`Redriven`](FireOutcome::Redriven) |
//! | every re-driver answers noop | retire | [`NothingToRedrive`](FireOutcome::NothingToRedrive) |
//! | a re-driver answers contended or failed; `n = attempt + 1 < max` | reschedule: retire and write row `n` at [`redrive_wake_at`]`(now, delay(n), wake_at)`, one step | [`Rescheduled`](FireOutcome::Rescheduled) |
//! | the same with `n >= max` (or no storable time follows `wake_at`) | retire and record the exhaustion, one step | [`Exhausted`](FireOutcome::Exhausted) |
//!
//! Why each rule:
//!
//! - **Its own wait, not the status.** A plain wake is pending only while the
//!   open park holds a TIMER wait at exactly this `wake_at`. "Suspended" is
//!   not enough: in a multi-wait park another wait may answer, and a newer
//!   park may wait on other things.
//!   The open park is the fold's ([`ExecutionView`]), so terminal is
//!   absorbing and a park after an end is not open. A wait this node cannot
//!   read (a newer node's shape) is not this timer.
//! - **The backoff gate comes first.** The design only requires
//!   that no acquire is made before the next try. Checking the gate before
//!   the read also spares a whole-log read per poll for every backed-off
//!   execution (up to the map's bound, every poll); the price is that an
//!   obsolete row waits at most one delay (at most `cap_ms`) to be retired.
//! - **A refusal re-reads before it retires.** The resume names the park
//!   read a moment earlier. If that park was answered and the execution
//!   parked again on a timer at the same `wake_at` (a deadline in a loop),
//!   the row's key `(execution_id, wake_at)` is the new wait's too; retiring
//!   it on the refusal would lose that wake. Re-reading finds the new park
//!   and resumes it.
//! - **A contended plain wake backs off in process**, never as a re-drive
//!   row: the re-drivers re-derive their own resumes and would answer noop
//!   for a timer wake, and a node with no re-driver never fires the row.
//!   Without the backoff, a contended row stays due and every poll of every
//!   node acquires again, which can keep invalidating a live holder's
//!   token. The machine does not hold the map: the outcome
//!   carries the entry, and
//!   [`WakeBackoff::apply`](crate::timer::WakeBackoff::apply) records it.
//! - **Write the next row and retire this one in one step, under the
//!   claim.** Two steps would fork the chain: a fire that outlives its
//!   lease (or crashes between them) has written its next row when another
//!   node fires the same row again and writes its own, so two branches run
//!   and each may report exhaustion. The timer store's reschedule does both
//!   only while the claim is current, else answers `NotHeld` and writes
//!   nothing; a crash leaves this row (fired again later: at-least-once),
//!   never none. The next row's time is after the fired row's, so the two
//!   keys differ: with a zero draw at `wake_at == now` they would be one
//!   row, and a store refuses a reschedule onto its own key.
//! - **No re-driver, no decision.** The timer store is shared; a node that
//!   cannot judge a re-drive row leaves it for one that can (retiring it
//!   here would be the silent loss the row exists to prevent). Such a node
//!   should ask its store for due rows without re-drive rows, filtered
//!   before the limit, so rows it cannot judge do not starve its plain
//!   wakes.
//! - **All noop retires.** A re-driver answers noop when there is nothing of
//!   its own to re-derive from the log (the park was answered meanwhile), so
//!   the row has no work left. Every node that fires re-drive rows must
//!   register the same re-drivers: a node whose re-drivers all answer noop
//!   retires a row that a re-driver only another node has would have
//!   wanted.
//! - **Exhaustion is recorded and reported once per chain**: the fire that
//!   gives up retires its row and records an
//!   [`ExhaustedRow`](crate::timer::ExhaustedRow) in one timer-store step
//!   under its claim ([`FireAction::Exhaust`]), so by exactly one fire, and
//!   a chain never forks (the rule above), so by one row of it. Its
//!   [`RedriveExhaustedError`] goes to the host's error handler; the record
//!   stays in the timer store until an operator recovers the execution
//!   (`loomfence recover`), and lists it meanwhile.
//!
//! # Failures of the host's store
//!
//! A store error is not an answer. The host stops driving the machine and
//! drops it, leaving the row to its claim's expiry; the next claimer decides
//! again from scratch. An outcome is only final once its
//! [`FireAction::Complete`] or [`FireAction::Reschedule`] succeeded: one
//! answered `NotHeld` because the claim was lost is such a failure (the
//! decision is void, nothing was written), so an exhaustion is not reported
//! by the node that lost the row.
//!
//! The retire is conditional on the claim, not on anything the machine
//! read: a row found obsolete can, in a narrow window, be the row a re-park
//! at the same `wake_at` has just scheduled again (the schedule is an
//! upsert on the same key). The timer store closes that window: a schedule
//! ends any claim on its row ([`TimerTable`](crate::timer::TimerTable)), so the
//! firing node's complete answers
//! [`Completed::NotHeld`](crate::timer::Completed::NotHeld), the decision is void,
//! and the row is due again for the next claimer.
//!
//! # Example: a plain wake fires over the in-memory store
//!
//! ```
//! use loomfence_core::{
//!     Action, Capability, ConditionalAppend, ExecutionId, KernelKind, MemoryStore, NewEvent, Poll,
//!     ResumeMachine, park::{Wait, park_payload}, redrive::Draw,
//!     timer::{FireAction, FireContext, FireMachine, FireOutcome, FirePoll, TimerRow},
//! };
//!
//! let id = ExecutionId::new("order-7")?;
//! let mut store = MemoryStore::new();
//! store.append_many(&id, vec![
//!     NewEvent::kernel(KernelKind::ExecutionStarted, 1_000),
//!     NewEvent::kernel(KernelKind::ExecutionSuspended, 1_001)
//!         .with_payload(park_payload(&[Wait::Timer { wake_at: 5_000 }])),
//! ])?;
//!
//! let row = TimerRow::wake(id.clone(), 5_000);
//! let context = FireContext::new(5_010, Draw::new(0.5)?);
//! let mut fire = FireMachine::new(row, context)?;
//! let outcome = loop {
//!     match fire.poll() {
//!         FirePoll::Done(outcome) => break outcome,
//!         FirePoll::Act(FireAction::ReadLog) => fire.handle_read(&store.read_range(&id, 1, None)?)?,
//!         FirePoll::Act(FireAction::Resume(request)) => {
//!             // The resume machine's own loop (see the crate docs), cut down
//!             // to the actions the in-memory store needs here.
//!             let mut resume = ResumeMachine::new(id.clone(), request, Capability::Conditional);
//!             let result = loop {
//!                 match resume.poll() {
//!                     Poll::Done(result) => break result,
//!                     Poll::Act(Action::ReadFrom { from_seq }) => {
//!                         resume.handle_read(store.read_range(&id, from_seq, None)?)?
//!                     }
//!                     Poll::Act(Action::AcquireFenceIf(expect)) => {
//!                         resume.handle_acquire_if(store.acquire_fence_if(&id, expect)?)?
//!                     }
//!                     Poll::Act(Action::AppendIfParked { park_seq, events }) => {
//!                         match store.append_if_parked(&id, park_seq, events)? {
//!                             ConditionalAppend::Appended(written) => resume.handle_appended(written)?,
//!                             ConditionalAppend::ParkAnswered => resume.handle_park_answered()?,
//!                         }
//!                     }
//!                     other => unimplemented!("{other:?}"),
//!                 }
//!             };
//!             fire.handle_resumed(result.as_ref())?;
//!         }
//!         // The timer store's complete would go here.
//!         FirePoll::Act(FireAction::Complete(_row)) => fire.handle_completed()?,
//!         other => unimplemented!("{other:?}"),
//!     }
//! };
//! assert_eq!(outcome, FireOutcome::Fired);
//! let log = store.read_range(&id, 1, None)?;
//! assert_eq!(log[2].payload["answer"], serde_json::json!({ "wait": 0, "timer": { "wakeAt": 5000 } }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::contract::ContractError;
use crate::event::Envelope;
use crate::fold::ExecutionView;
use crate::input::{ExecutionId, InputError};
use crate::json::JsonObject;
use crate::park::{Wait, waits_in};
use crate::redrive_policy::{
    BackoffEntry, Draw, MAX_TIMER_MS, RedriveExhaustedError, RedrivePolicy, redrive_wake_at,
};
use crate::resume_machine::{ResumeError, ResumeRequest, Resumed, check_id, check_run};
use crate::timer_records::Exhaustion;

/// How many resumes one fire of a plain wake makes when each is refused
/// and each re-read still finds the timer pending (the execution keeps
/// re-parking on the same time). The last refusal counts as a contention.
const MAX_RESUMES: u32 = 3;

/// A re-drive row's flag: which try of its chain it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Redrive {
    /// The try, from 0 (the row written on the first contention).
    pub attempt: u32,
}

/// One row of a timer store, as the fire decision sees it: keyed by
/// `(execution_id, wake_at)`, a plain wake or a re-drive row.
///
/// On the wire: `{ "executionId": "…", "wakeAt": <ms>, "redrive": {
/// "attempt": <n> } }`, `redrive` absent for a plain wake.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TimerRow {
    /// The execution to wake.
    pub execution_id: ExecutionId,
    /// When the row is due, in ms since the epoch, `0..=MAX_TIMER_MS`.
    pub wake_at: i64,
    /// Present on a re-drive row: the resume is its re-drivers' to
    /// re-derive, not a TIMER wait's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redrive: Option<Redrive>,
}

impl TimerRow {
    /// A plain wake: the TIMER wait at `wake_at` of `execution_id`'s park.
    #[must_use]
    pub fn wake(execution_id: ExecutionId, wake_at: i64) -> Self {
        Self {
            execution_id,
            wake_at,
            redrive: None,
        }
    }

    /// A re-drive row for try `attempt`.
    #[must_use]
    pub fn redrive(execution_id: ExecutionId, wake_at: i64, attempt: u32) -> Self {
        Self {
            execution_id,
            wake_at,
            redrive: Some(Redrive { attempt }),
        }
    }

    /// The first row of a re-drive chain, written by the caller whose
    /// resume was contended: try 0, due at
    /// [`redrive_wake_at`]`(now, policy.delay_ms(0, draw), now)`, so at
    /// least 1 ms after `now` like every later row of the chain. `None`
    /// when no storable time follows `now`.
    #[must_use]
    pub fn first_redrive(
        execution_id: ExecutionId,
        now: i64,
        policy: &RedrivePolicy,
        draw: Draw,
    ) -> Option<Self> {
        let wake_at = redrive_wake_at(now, policy.delay_ms(0, draw), now)?;
        Some(Self::redrive(execution_id, wake_at, 0))
    }

    /// The row's place in the order every timer store lists and claims
    /// rows in: by `wake_at`, then by id in byte order.
    #[must_use]
    pub fn due_key(&self) -> (i64, &ExecutionId) {
        (self.wake_at, &self.execution_id)
    }

    /// Whether this is a re-drive row.
    #[must_use]
    pub fn is_redrive(&self) -> bool {
        self.redrive.is_some()
    }

    /// Checks the row's time is in `0..=MAX_TIMER_MS`, as a timer store
    /// checks it before it writes.
    pub fn check(&self) -> Result<(), InputError> {
        check_time("wakeAt", self.wake_at).map(drop)
    }
}

/// Checks a timer time is in `0..=MAX_TIMER_MS`.
fn check_time(what: &'static str, value: i64) -> Result<i64, InputError> {
    if (0..=MAX_TIMER_MS).contains(&value) {
        Ok(value)
    } else {
        Err(InputError::Time { what, value })
    }
}

/// Where a plain wake's TIMER wait is pending: the open park and the wait's
/// position in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PendingTimer {
    /// The open park's sequence: the resume's `fence_if_parked_at`.
    pub park_seq: u64,
    /// The index of the TIMER wait in the park's `waits` (the first, if
    /// several wait on the same time).
    pub wait: usize,
}

/// Whether the TIMER wait at `wake_at` is still pending in `events`, which
/// must be the execution's whole log from sequence 1: its open park (as
/// [`ExecutionView::fold`] sees it, so never after an end) holds a wait
/// `{"kind": "TIMER", "wakeAt": wake_at}`. A wait of the park that does not
/// read as one of the known shapes is skipped: it is not this timer.
#[must_use]
pub fn pending_timer(events: &[Envelope], wake_at: i64) -> Option<PendingTimer> {
    let open = ExecutionView::fold(events).open_park?;
    let park = events
        .iter()
        .find(|event| event.sequence == open.sequence)?;
    let Some(Value::Array(waits)) = park.payload.get("waits") else {
        return None;
    };
    let wait = waits.iter().position(|raw| {
        // One wait at a time, through the park module's own reader, so a
        // wait this node cannot read does not hide the others.
        let mut one = JsonObject::new();
        one.insert("waits".to_owned(), Value::Array(vec![raw.clone()]));
        matches!(waits_in(&one).as_deref(), Ok([Wait::Timer { wake_at: at }]) if *at == wake_at)
    })?;
    Some(PendingTimer {
        park_seq: open.sequence,
        wait,
    })
}

/// The answer a fired TIMER wait resumes its park with: `{"wait": <index>,
/// "timer": {"wakeAt": <ms>}}`, shaped like the supervisor's child answer
/// (the index of the satisfied wait, then what satisfied it).
#[must_use]
pub fn timer_answer(wait: usize, wake_at: i64) -> Value {
    json!({ "wait": wait, "timer": { "wakeAt": wake_at } })
}

/// What a re-driver answers when it is handed a re-drive row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RedriveAnswer {
    /// It re-derived its resume from the log and the resume landed (or was
    /// no longer needed because it had landed).
    Done,
    /// Nothing of its own to re-derive: the next re-driver is asked.
    Noop,
    /// Its resume was contended again: the chain continues.
    Contended,
    /// It failed (threw): treated as contended, so the row is not lost.
    Failed,
}

/// One thing for the host to do.
///
/// Non-exhaustive: a host that does not know an action must stop rather
/// than guess.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FireAction {
    /// Read the execution's whole log, `read_range(id, 1, None)`; answer with
    /// [`FireMachine::handle_read`].
    ReadLog,
    /// Run a [`ResumeMachine`](crate::ResumeMachine) for the row's execution
    /// with this request, as given; answer with its result through
    /// [`FireMachine::handle_resumed`]. A host that kept the log it just
    /// read can start the resume from it
    /// ([`ResumeMachine::with_events`](crate::ResumeMachine::with_events)).
    Resume(ResumeRequest),
    /// Hand `row` to the host's re-driver number `redriver` (in registration
    /// order, from 0); answer with [`FireMachine::handle_redrive`].
    Redrive {
        /// Which re-driver.
        redriver: usize,
        /// The re-drive row.
        row: TimerRow,
    },
    /// Retire the fired row and write this next row, in one timer-store
    /// step under the host's claim (the store's reschedule); answer with
    /// [`FireMachine::handle_rescheduled`] once it answered done. A
    /// `NotHeld` answer voids the decision, as for a complete.
    Reschedule(TimerRow),
    /// Retire the fired row (the timer store's complete, under the host's
    /// claim); answer with [`FireMachine::handle_completed`].
    Complete(TimerRow),
    /// Retire the fired row and record its exhaustion, in one timer-store
    /// step under the host's claim (the store's exhaust); answer with
    /// [`FireMachine::handle_exhausted`] once it answered done. A
    /// `NotHeld` answer voids the decision, as for a complete.
    Exhaust(Exhaustion),
}

/// How a fire ended.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FireOutcome {
    /// Plain wake: the park was resumed with the timer's answer; the row is
    /// retired.
    Fired,
    /// Plain wake: its wait is no longer pending; the row is retired.
    Obsolete,
    /// Plain wake: this node's backoff holds the execution back until
    /// `next_try_at`; nothing was read or written.
    NotYet {
        /// When the execution may be tried again.
        next_try_at: i64,
    },
    /// Plain wake: the resume was contended; the row is left, and the host
    /// records this entry in its [`WakeBackoff`](crate::timer::WakeBackoff)
    /// ([`WakeBackoff::apply`](crate::timer::WakeBackoff::apply)).
    BackedOff(BackoffEntry),
    /// Re-drive row: a re-driver re-drove it; the row is retired.
    Redriven,
    /// Re-drive row: every re-driver answered noop; the row is retired.
    NothingToRedrive,
    /// Re-drive row: contended or failed; in one step under the claim, the
    /// fired row was retired and this row written for the next try.
    Rescheduled(TimerRow),
    /// Re-drive row: no re-driver is registered here; the row is left for a
    /// node that has one.
    Left,
    /// Either kind: the retries ran out; in one step under the claim, the
    /// row was retired and its exhaustion recorded beside the timers.
    /// Report the error once (this is the only fire that gets it); the
    /// execution waits for an operator's recovery.
    Exhausted(RedriveExhaustedError),
}

impl FireOutcome {
    /// Whether the fired row was retired.
    #[must_use]
    pub fn retired(&self) -> bool {
        match self {
            FireOutcome::Fired
            | FireOutcome::Obsolete
            | FireOutcome::Redriven
            | FireOutcome::NothingToRedrive
            | FireOutcome::Rescheduled(_)
            | FireOutcome::Exhausted(_) => true,
            FireOutcome::NotYet { .. } | FireOutcome::BackedOff(_) | FireOutcome::Left => false,
        }
    }

    /// The error to report, if the retries ran out.
    #[must_use]
    pub fn exhausted(&self) -> Option<&RedriveExhaustedError> {
        match self {
            FireOutcome::Exhausted(error) => Some(error),
            _ => None,
        }
    }
}

/// What [`FireMachine::poll`] says.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FirePoll {
    /// Do this, then feed the answer back.
    Act(FireAction),
    /// The fire is over.
    Done(FireOutcome),
}

/// What a fire is given besides its row: the time, the draw, the policy and
/// what this node knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FireContext {
    /// The current time, ms since the epoch; the row must be due by then.
    pub now: i64,
    /// The one random draw the fire may need (a delay).
    pub draw: Draw,
    /// The retry schedule.
    pub policy: RedrivePolicy,
    /// This node's [`WakeBackoff`](crate::timer::WakeBackoff) entry for the row's
    /// execution. Read for plain wakes only.
    pub backoff: Option<BackoffEntry>,
    /// How many re-drivers this node has registered. Read for re-drive rows
    /// only.
    pub redrivers: usize,
}

impl FireContext {
    /// At `now` with `draw`: the default policy, no backoff entry, no
    /// re-driver.
    #[must_use]
    pub fn new(now: i64, draw: Draw) -> Self {
        Self {
            now,
            draw,
            policy: RedrivePolicy::default(),
            backoff: None,
            redrivers: 0,
        }
    }

    /// With `policy`.
    #[must_use]
    pub fn with_policy(mut self, policy: RedrivePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// With this node's backoff entry for the execution
    /// ([`WakeBackoff::get`](crate::timer::WakeBackoff::get)).
    #[must_use]
    pub fn with_backoff(mut self, backoff: Option<BackoffEntry>) -> Self {
        self.backoff = backoff;
        self
    }

    /// With `redrivers` re-drivers registered.
    #[must_use]
    pub fn with_redrivers(mut self, redrivers: usize) -> Self {
        self.redrivers = redrivers;
        self
    }
}

/// Where the machine is. Each state but `Done` has exactly one pending
/// action.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum State {
    /// Read the whole log.
    ReadLog,
    /// Resume the park at `park_seq` with the answer of wait `wait`.
    Resume {
        /// The open park.
        park_seq: u64,
        /// The TIMER wait's index in it.
        wait: usize,
    },
    /// Hand the row to re-driver `redriver`.
    Ask {
        /// Which one.
        redriver: usize,
    },
    /// Retire the fired row and write the next re-drive row, one step.
    Reschedule(TimerRow),
    /// Retire the fired row, then end in the outcome.
    Complete(FireOutcome),
    /// Retire the fired row and record its exhaustion, one step.
    Exhaust(RedriveExhaustedError),
    /// Finished.
    Done(FireOutcome),
}

/// The fire of one due timer row, as a value: `Clone + Eq + Hash`, so a
/// simulation can snapshot it between any two steps.
///
/// [`FireMachine::new`] takes the row and a [`FireContext`]; then
/// [`poll`](FireMachine::poll) and the `handle_*` methods, as for the resume
/// machine. What it decides, row by row, is the decision table at the head
/// of `core/src/fire.rs`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FireMachine {
    /// The row being fired.
    row: TimerRow,
    /// What the fire was given.
    context: FireContext,
    /// Resumes refused so far.
    refusals: u32,
    /// The pending step.
    state: State,
}

impl FireMachine {
    /// The fire of `row` in `context`. Refuses a time outside
    /// `0..=MAX_TIMER_MS` and a row that is not due yet.
    pub fn new(row: TimerRow, context: FireContext) -> Result<Self, InputError> {
        let now = check_time("now", context.now)?;
        row.check()?;
        if row.wake_at > now {
            return Err(InputError::NotDue {
                wake_at: row.wake_at,
                now,
            });
        }
        let state = match (row.redrive, context.backoff) {
            (None, Some(entry)) if now < entry.next_try_at => State::Done(FireOutcome::NotYet {
                next_try_at: entry.next_try_at,
            }),
            (None, _) => State::ReadLog,
            (Some(_), _) if context.redrivers == 0 => State::Done(FireOutcome::Left),
            (Some(_), _) => State::Ask { redriver: 0 },
        };
        Ok(Self {
            row,
            context,
            refusals: 0,
            state,
        })
    }

    /// The row being fired.
    #[must_use]
    pub fn row(&self) -> &TimerRow {
        &self.row
    }

    /// What to do next, or the outcome. Asking twice without handling an
    /// answer gives the same action.
    pub fn poll(&self) -> FirePoll {
        let action = match &self.state {
            State::Done(outcome) => return FirePoll::Done(outcome.clone()),
            State::ReadLog => FireAction::ReadLog,
            State::Resume { park_seq, wait } => FireAction::Resume(ResumeRequest::new(
                *park_seq,
                timer_answer(*wait, self.row.wake_at),
                self.context.now,
            )),
            State::Ask { redriver } => FireAction::Redrive {
                redriver: *redriver,
                row: self.row.clone(),
            },
            State::Reschedule(next) => FireAction::Reschedule(next.clone()),
            State::Complete(_) => FireAction::Complete(self.row.clone()),
            State::Exhaust(error) => FireAction::Exhaust(Exhaustion {
                attempts: error.attempts,
                at: self.context.now,
            }),
        };
        FirePoll::Act(action)
    }

    /// Feeds the answer to a [`FireAction::ReadLog`]: the whole log from
    /// sequence 1, possibly empty.
    pub fn handle_read(&mut self, events: &[Envelope]) -> Result<(), ContractError> {
        if self.state != State::ReadLog {
            return Err(self.unexpected("handle_read"));
        }
        check_run(&self.row.execution_id, 1, events)?;
        self.state = match pending_timer(events, self.row.wake_at) {
            Some(PendingTimer { park_seq, wait }) => State::Resume { park_seq, wait },
            None => State::Complete(FireOutcome::Obsolete),
        };
        Ok(())
    }

    /// Feeds the result of the [`FireAction::Resume`]: what the resume
    /// machine's [`Poll::Done`](crate::Poll::Done) held (`result.as_ref()`).
    ///
    /// A [`ResumeError::StaleFence`] cannot answer the request, which takes
    /// a fence when the store has one, and is refused as input.
    pub fn handle_resumed(
        &mut self,
        result: Result<&Resumed, &ResumeError>,
    ) -> Result<(), ContractError> {
        let State::Resume { park_seq, .. } = self.state else {
            return Err(self.unexpected("handle_resumed"));
        };
        self.state = match result {
            Ok(resumed) => {
                self.check_id(&resumed.execution_id)?;
                State::Complete(FireOutcome::Fired)
            }
            Err(ResumeError::Refused(refused)) => {
                self.check_id(&refused.execution_id)?;
                if refused.park_seq != park_seq {
                    return Err(ContractError::WrongPark {
                        expected: park_seq,
                        got: refused.park_seq,
                    });
                }
                self.refusals += 1;
                if self.refusals >= MAX_RESUMES {
                    self.back_off()
                } else {
                    State::ReadLog
                }
            }
            Err(ResumeError::Contended(contended)) => {
                self.check_id(&contended.execution_id)?;
                self.back_off()
            }
            Err(ResumeError::StaleFence(_)) => {
                return Err(ContractError::UnexpectedInput {
                    expected: "the result of the fenced resume requested",
                    got: "a stale-fence refusal, which only an unfenced resume gets",
                });
            }
        };
        Ok(())
    }

    /// Feeds a re-driver's answer to a [`FireAction::Redrive`].
    pub fn handle_redrive(&mut self, answer: RedriveAnswer) -> Result<(), ContractError> {
        let State::Ask { redriver } = self.state else {
            return Err(self.unexpected("handle_redrive"));
        };
        self.state = match answer {
            RedriveAnswer::Done => State::Complete(FireOutcome::Redriven),
            RedriveAnswer::Noop if redriver + 1 < self.context.redrivers => State::Ask {
                redriver: redriver + 1,
            },
            RedriveAnswer::Noop => State::Complete(FireOutcome::NothingToRedrive),
            RedriveAnswer::Contended | RedriveAnswer::Failed => self.reschedule(),
        };
        Ok(())
    }

    /// Feeds the acknowledgement of a [`FireAction::Reschedule`]: the fired
    /// row is retired and the next one stored, under the claim.
    pub fn handle_rescheduled(&mut self) -> Result<(), ContractError> {
        let State::Reschedule(next) = &self.state else {
            return Err(self.unexpected("handle_rescheduled"));
        };
        self.state = State::Done(FireOutcome::Rescheduled(next.clone()));
        Ok(())
    }

    /// Feeds the acknowledgement of a [`FireAction::Complete`]: the fired
    /// row is retired (or was already gone).
    pub fn handle_completed(&mut self) -> Result<(), ContractError> {
        let State::Complete(outcome) = &self.state else {
            return Err(self.unexpected("handle_completed"));
        };
        self.state = State::Done(outcome.clone());
        Ok(())
    }

    /// Feeds the acknowledgement of a [`FireAction::Exhaust`]: the fired
    /// row is retired and its exhaustion recorded, under the claim.
    pub fn handle_exhausted(&mut self) -> Result<(), ContractError> {
        let State::Exhaust(error) = &self.state else {
            return Err(self.unexpected("handle_exhausted"));
        };
        self.state = State::Done(FireOutcome::Exhausted(error.clone()));
        Ok(())
    }

    /// A contended plain wake: back off in process, or give up.
    fn back_off(&self) -> State {
        let attempt = match self.context.backoff {
            Some(entry) if entry.wake_at == self.row.wake_at => entry.attempt.saturating_add(1),
            _ => 0,
        };
        if attempt >= self.context.policy.max_attempts {
            return self.exhausted(attempt);
        }
        let delay = self.context.policy.delay_ms(attempt, self.context.draw);
        State::Done(FireOutcome::BackedOff(BackoffEntry {
            wake_at: self.row.wake_at,
            attempt,
            next_try_at: self.context.now.saturating_add_unsigned(delay),
        }))
    }

    /// A contended or failed re-drive: write the next row, or give up.
    fn reschedule(&self) -> State {
        let attempt = self
            .row
            .redrive
            .map_or(0, |redrive| redrive.attempt)
            .saturating_add(1);
        if attempt >= self.context.policy.max_attempts {
            return self.exhausted(attempt);
        }
        let delay = self.context.policy.delay_ms(attempt, self.context.draw);
        match redrive_wake_at(self.context.now, delay, self.row.wake_at) {
            Some(wake_at) => State::Reschedule(TimerRow::redrive(
                self.row.execution_id.clone(),
                wake_at,
                attempt,
            )),
            None => self.exhausted(attempt),
        }
    }

    /// Giving up: retire the row, record it and report once.
    fn exhausted(&self, attempts: u32) -> State {
        State::Exhaust(RedriveExhaustedError {
            execution_id: self.row.execution_id.clone(),
            wake_at: self.row.wake_at,
            attempts,
        })
    }

    /// Checks an answer is about the row's execution.
    fn check_id(&self, id: &ExecutionId) -> Result<(), ContractError> {
        check_id(&self.row.execution_id, id)
    }

    /// The error for an input that does not answer the pending action.
    fn unexpected(&self, got: &'static str) -> ContractError {
        let expected = match &self.state {
            State::Done(_) => "nothing: the fire is over",
            State::ReadLog => "handle_read",
            State::Resume { .. } => "handle_resumed",
            State::Ask { .. } => "handle_redrive",
            State::Reschedule(_) => "handle_rescheduled",
            State::Complete(_) => "handle_completed",
            State::Exhaust(_) => "handle_exhausted",
        };
        ContractError::UnexpectedInput { expected, got }
    }
}

#[cfg(test)]
mod tests;
