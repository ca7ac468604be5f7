//! The pure fence kernel of loomfence.
//!
//! A durable-workflow engine parks an execution while it waits, and later some
//! node resumes it. When several nodes race to do that, two must never both
//! win, and the loser must never fence out the winner's running body. This
//! crate holds the rules that make that race safe, with no IO at all: no
//! clock, no randomness, no threads, no async runtime. Time and everything
//! else from outside arrive as arguments, so the same code runs natively, in
//! WebAssembly, and inside a deterministic simulation.
//!
//! Everything a host needs is at the crate root: the event model
//! ([`NewEvent`], [`Envelope`], [`is_answering`]), execution ids
//! ([`ExecutionId`]), the status fold and [`locate_park`], the fence answers
//! ([`AcquireOutcome`], [`StaleFenceError`]), the in-memory store
//! ([`MemoryStore`]), the resume protocol ([`ResumeMachine`]), what a park
//! waits for ([`Wait`]), the supervisor's decision ([`answer_for`]) and its
//! loop over one parent ([`SuperviseMachine`], in the same `poll` /
//! `handle_*` vocabulary; its steps head `core/src/supervise/machine.rs`).
//! The rules a storage adapter applies inside its own atomic step (the
//! append guard, the conditional-acquire decision, the batch checks) are in
//! [`backend`], for adapter authors only.
//!
//! Timers are here too, as pure decisions: a timer store's row
//! ([`TimerRow`], a plain wake or a re-drive row), what to do with one due
//! row ([`FireMachine`], in the resume machine's vocabulary; its decision
//! table heads `core/src/timer.rs`), the retry schedule ([`RedrivePolicy`]:
//! the full-jitter [`RedrivePolicy::delay_ms`] over a checked random
//! [`Draw`], and [`redrive_wake_at`] for the next re-drive row), the bounded
//! in-process backoff of plain wakes ([`WakeBackoff`]) and the error a
//! chain that gives up reports once ([`RedriveExhaustedError`]), and the
//! timer store's rules ([`TimerTable`]: the flag-keeping upsert, due rows
//! filtered before the limit, numbered lease [`Claim`]s), which the
//! in-memory timer stores use as is and the SQL adapters restate. The timer
//! service's tick is a machine too ([`TickMachine`]: what to claim, what to
//! fire when, what to release and report; its rules and its drive loop head
//! `core/src/tick.rs`), so every host's timer service is a pump over it.
//!
//! Retention is here as pure decisions too: the child → parent edge a
//! child's start records ([`started_child`], [`parent_of`]), the pin
//! ([`pin_parked_children`]: a finished child stays while its parent is
//! parked on it), what a paged listing reports ([`ExecutionSummary`]), the
//! guarded delete that closes the window between the pin check and the
//! delete ([`DeleteGuard`], [`GuardedDelete`]), and the sweep that puts
//! them together ([`SweepMachine`], in the same `poll` / `handle_*`
//! vocabulary; its steps head `core/src/retention/sweep.rs`).
//!
//! Storage adapters (memory behind a mutex, SQLite, PostgreSQL) live in the
//! `host-adapters/` crates and apply the decisions here inside their own
//! atomic step; `loomfence-runtime` drives the machines against them.
//!
//! # The drive loop
//!
//! A machine never does IO. [`ResumeMachine::poll`] names the next
//! [`Action`]; the host performs it against its store and hands the answer
//! to the matching `handle_*` method, until `poll` says [`Poll::Done`]. Every
//! host (the async runtime, the WebAssembly bindings, the simulation) is
//! this loop over a different store. Here it is over [`MemoryStore`]:
//!
//! ```
//! use loomfence_core::{
//!     Action, AppendError, Capability, ConditionalAppend, ExecutionId, InputError, KernelKind,
//!     MemoryStore, NewEvent, Poll, ResumeMachine, ResumeRequest,
//! };
//! use serde_json::json;
//!
//! let id = ExecutionId::new("order-7")?;
//! let mut store = MemoryStore::new();
//! let written = store.append_many(&id, vec![
//!     NewEvent::kernel(KernelKind::ExecutionStarted, 1_000),
//!     NewEvent::kernel(KernelKind::ExecutionSuspended, 1_001),
//! ])?;
//! let park_seq = written[1].sequence;
//!
//! let request = ResumeRequest::new(park_seq, json!({ "paid": true }), 1_002);
//! let mut machine = ResumeMachine::new(id.clone(), request, Capability::Conditional);
//! let resumed = loop {
//!     let action = match machine.poll() {
//!         Poll::Done(result) => break result?,
//!         Poll::Act(action) => action,
//!         other => unimplemented!("{other:?}"),
//!     };
//!     match action {
//!         Action::ReadFrom { from_seq } => {
//!             machine.handle_read(store.read_range(&id, from_seq, None)?)?
//!         }
//!         Action::AcquireFenceIf(expect) => match store.acquire_fence_if(&id, expect) {
//!             Ok(outcome) => machine.handle_acquire_if(outcome)?,
//!             Err(input) if input.is_park_gone() => machine.handle_park_gone()?,
//!             Err(other) => return Err(other.into()),
//!         },
//!         Action::AcquireFence => machine.handle_acquire(store.acquire_fence(&id))?,
//!         Action::AppendIfParked { park_seq, event } => {
//!             match store.append_if_parked(&id, park_seq, vec![event]) {
//!                 Ok(ConditionalAppend::Appended(envelopes)) => machine.handle_appended(envelopes)?,
//!                 Ok(ConditionalAppend::ParkAnswered) => machine.handle_park_answered()?,
//!                 Err(AppendError::Stale(stale)) => machine.handle_stale(stale)?,
//!                 Err(AppendError::Input(input)) if input.is_park_gone() => {
//!                     machine.handle_park_gone()?
//!                 }
//!                 Err(other) => return Err(other.into()),
//!             }
//!         }
//!         // Actions are non-exhaustive: a host stops at one it does not know.
//!         other => unimplemented!("{other:?}"),
//!     }
//! };
//!
//! // The body now holds token 1 and continues after the resume.
//! assert_eq!(resumed.fence, Some(1));
//! assert_eq!(resumed.view.head, 3);
//! let step = NewEvent::kernel(KernelKind::StepStarted, 1_003).with_fence(1);
//! store.append(&id, step)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Example: two resumers race one park
//!
//! The store alone, without the machine: the first conditional acquire wins,
//! the second is told it is stale.
//!
//! ```
//! use loomfence_core::{
//!     AcquireOutcome, ExecutionId, ExecutionView, KernelKind, MemoryStore, NewEvent,
//!     ParkExpectation,
//! };
//!
//! let id = ExecutionId::new("order-7")?;
//! let mut store = MemoryStore::new();
//! store.append_many(&id, vec![
//!     NewEvent::kernel(KernelKind::ExecutionStarted, 1_000),
//!     NewEvent::kernel(KernelKind::ExecutionSuspended, 1_001),
//! ])?;
//! let view = ExecutionView::fold(&store.read_range(&id, 1, None)?);
//! let park = view.open_park.expect("parked");
//! let expect = ParkExpectation { fence: park.fence, park_seq: park.sequence };
//! let a = store.acquire_fence_if(&id, expect)?;
//! let b = store.acquire_fence_if(&id, expect)?;
//! assert_eq!(a, AcquireOutcome::Acquired { fence: 1 });
//! assert_eq!(b, AcquireOutcome::Stale { fence: 1 });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod backend;
mod capability;
#[cfg(any(test, feature = "drive"))]
pub mod drive;
mod event;
mod fence;
mod fold;
mod id;
mod json;
mod kind;
mod lineage;
mod memory;
mod park;
mod redrive;
mod resume;
mod retention;
mod status;
mod supervise;
mod tick;
mod timer;
mod timer_table;
mod unreadable;
mod wake_backoff;

pub use capability::Capability;
pub use event::{Envelope, EventError, MAX_KIND_BYTES, MAX_SAFE_INTEGER, NewEvent};
pub use fence::{AcquireOutcome, ConditionalAppend, InputError, ParkExpectation, StaleFenceError};
pub use fold::{ExecutionView, KindFacts, OpenPark, locate_park, open_park_index};
pub use id::{ExecutionId, IdError, MAX_ID_BYTES};
pub use json::JsonObject;
pub use kind::{KERNEL_EVENT_KINDS, KernelKind, KindClass, is_answering};
pub use lineage::{LineageError, PARENT_FIELD, parent_of, started_child};
pub use memory::{AppendError, MemoryStore};
pub use park::{ParkError, Wait, park_payload, waits_of};
pub use redrive::{
    BackoffEntry, Draw, DrawError, MAX_TIMER_MS, RedriveExhaustedError, RedrivePolicy,
    redrive_wake_at,
};
pub use resume::{
    Action, Fencing, MAX_ATTEMPTS, MachineError, Poll, RefusalReason, ResumeContendedError,
    ResumeError, ResumeMachine, ResumeRefusedError, ResumeRequest, Resumed, Stepped,
};
pub use retention::{
    DeleteGuard, Ended, ExecutionSummary, GuardedDelete, Kept, MAX_GUARD_PARENTS, MAX_PAGE_LIMIT,
    ParentMark, PinError, Pinned, SweepAction, SweepFailure, SweepFailureVerdict, SweepMachine,
    SweepMachineError, SweepOptions, SweepPoll, SweepRefused, SweepReport, Undecided,
    UndecidedReason, check_guard, check_page_limit, ended_of, parent_moved, pin_parked_children,
    summarize,
};
pub use status::{Status, Terminal};
pub use supervise::{
    ChildOutcome, OnContention, SuperviseAction, SuperviseError, SuperviseMachine,
    SuperviseOptions, SuperviseOutcome, SupervisePoll, answer_for, child_outcome,
};
pub use tick::{
    TickAction, TickConfig, TickEnd, TickError, TickEvent, TickMachine, TickPoll, TickReport,
    TickStage,
};
pub use timer::{
    FireAction, FireContext, FireError, FireMachine, FireOutcome, FirePoll, PendingTimer, Redrive,
    RedriveAnswer, TimeOutOfRange, TimerRow, pending_timer, timer_answer,
};
pub use timer_table::{
    Claim, Completed, DueFilter, Lease, MAX_DUE_LIMIT, MAX_LEASE_MS, MAX_REDRIVE_ATTEMPT, NodeId,
    TimerInputError, TimerTable, check_claim, check_due, check_lease, check_reschedule, check_row,
};
pub use unreadable::{
    UNREADABLE_REPORTS_BOUND, UnreadableField, UnreadableReports, UnreadableRow, read_redrive_flag,
};
pub use wake_backoff::{DEFAULT_BACKOFF_BOUND, WakeBackoff};
