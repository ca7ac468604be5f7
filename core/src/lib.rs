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
//! The root holds what every host uses:
//!
//! - **Ids and events:** [`ExecutionId`], [`NewEvent`], [`Envelope`],
//!   [`JsonObject`], [`KernelKind`].
//! - **The fold:** [`ExecutionView`], [`Status`], [`OpenPark`].
//! - **The fence:** [`ParkExpectation`], [`AcquireOutcome`],
//!   [`ConditionalAppend`], [`StaleFenceError`], [`Capability`].
//! - **The in-memory store:** [`MemoryStore`], [`AppendError`].
//! - **The resume machine:** [`ResumeMachine`], [`ResumeRequest`],
//!   [`Poll`], [`Action`], [`Resumed`], [`ResumeError`].
//! - **Faults:** [`InputError`] (bad input: an id, an event, a time, a
//!   draw, a row, a log's data), [`ContractError`] (a machine fed out of
//!   turn, or a store answering outside its contract), and [`Error`], one
//!   of the two, for the few calls that can meet both. Answers of the
//!   protocol (stale, refused, contended, exhausted) are values, not
//!   faults: [`StaleFenceError`], [`ResumeError`], and
//!   [`RedriveExhaustedError`](redrive::RedriveExhaustedError) in a fire's
//!   outcome.
//!
//! The rest is in modules named for what they hold:
//!
//! - [`log`]: the kind table, the fold's parts and the limits, when you read
//!   a log or check an event yourself;
//! - [`resume`]: the resume machine's answers in detail;
//! - [`park`] and [`lineage`]: what a park waits for, and a child's parent;
//! - [`timer`], [`redrive`] and [`tick`]: timer rows, the retry schedule and
//!   the timer service's tick, when you host a timer service;
//! - [`retention`]: the pin, the guarded delete and the sweep, when you
//!   delete finished executions;
//! - [`supervise`]: resuming a parent parked on its children;
//! - [`feed`]: the change feed's cursor and contract, and the follower
//!   that turns it into the supervisor's work;
//! - [`inbox`]: messages, and the delivery that resumes a park waiting on
//!   one;
//! - [`backend`]: the rules a storage adapter applies inside its own atomic
//!   step, for adapter authors only.
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
//!         Action::AppendIfParked { park_seq, events } => {
//!             match store.append_if_parked(&id, park_seq, events) {
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
mod contract;
#[cfg(any(test, feature = "drive"))]
pub mod drive;
mod error;
mod event;
pub mod feed;
mod fence;
mod fire;
mod fold;
pub mod inbox;
mod input;
mod json;
mod kind;
pub mod lineage;
mod memory;
pub mod park;
pub mod recover;
mod redrive_policy;
mod resume_machine;
pub mod retention;
mod status;
pub mod supervise;
pub mod tick;
mod timer_records;
mod timer_table;
mod unreadable;
mod wake_backoff;

pub use capability::Capability;
pub use contract::ContractError;
pub use error::Error;
pub use event::{Envelope, NewEvent};
pub use fence::{AcquireOutcome, ConditionalAppend, ParkExpectation, StaleFenceError};
pub use fold::{ExecutionView, OpenPark};
pub use input::{ExecutionId, InputError};
pub use json::JsonObject;
pub use kind::KernelKind;
pub use memory::{AppendError, MemoryStore};
pub use resume_machine::{Action, Poll, ResumeError, ResumeMachine, ResumeRequest, Resumed};
pub use status::Status;

pub mod log {
    //! An execution's log in detail: which kinds answer a park, the parts of
    //! the fold, and the limits every store checks before it writes.
    //!
    //! You need it when you read a log or check an event yourself (a host
    //! store, a CLI); the store trait and the resume machine apply these
    //! rules for you.

    pub use crate::event::MAX_SAFE_INTEGER;
    pub use crate::fold::{KindFacts, locate_park, open_park_index};
    pub use crate::input::{MAX_ID_BYTES, MAX_KIND_BYTES};
    pub use crate::kind::{KERNEL_EVENT_KINDS, KindClass, is_answering};
    pub use crate::status::Terminal;
}

pub mod resume {
    //! The resume machine's answers in detail: why a resume was refused or
    //! contended, how a body is fenced, and one step of the machine.
    //!
    //! You need it when you branch on a [`ResumeError`](crate::ResumeError)
    //! or step the machine yourself; the root has the machine and its loop.

    pub use crate::resume_machine::{
        Consumed, Fencing, MAX_ATTEMPTS, RefusalReason, ResumeContendedError, ResumeRefusedError,
        Stepped,
    };
}

pub mod timer {
    //! Timers as pure decisions: a timer store's row (a plain wake or a
    //! re-drive row), what to do with one due row ([`FireMachine`], its
    //! decision table heads `core/src/fire.rs`), the timer store's rules
    //! ([`TimerTable`]: the flag-keeping upsert, due rows filtered before the
    //! limit, numbered lease [`Claim`]s), the rows a store could not read, and
    //! the bounded in-process backoff of plain wakes ([`WakeBackoff`]), and
    //! what a store keeps for an operator: the [`ExhaustedRow`] a fire that
    //! gives up records beside the rows (in one step with the retire, under
    //! its claim: a record, not an event in the log, so it is written once
    //! and listed without reading every log), and the listing of live rows
    //! with their claims ([`TimerQuery`], [`TimerEntry`]).
    //!
    //! You need it when you write a timer store or fire a row yourself; the
    //! tick in [`tick`](crate::tick) drives all of it for a timer service.

    pub use crate::fire::{
        FireAction, FireContext, FireMachine, FireOutcome, FirePoll, PendingTimer, Redrive,
        RedriveAnswer, TimerRow, pending_timer, timer_answer,
    };
    pub use crate::input::{MAX_DUE_LIMIT, MAX_LEASE_MS, MAX_REDRIVE_ATTEMPT};
    pub use crate::redrive_policy::{BackoffEntry, MAX_TIMER_MS};
    pub use crate::timer_records::{
        ExhaustedQuery, ExhaustedRow, Exhaustion, Held, TimerEntry, TimerQuery, check_clear,
        check_exhaust,
    };
    pub use crate::timer_table::{
        Claim, Completed, DueFilter, Lease, NodeId, TimerTable, check_claim, check_due,
        check_lease, check_reschedule, check_row,
    };
    pub use crate::unreadable::{
        UNREADABLE_REPORTS_BOUND, UnreadableField, UnreadableReports, UnreadableRow,
        read_redrive_flag,
    };
    pub use crate::wake_backoff::{DEFAULT_BACKOFF_BOUND, WakeBackoff};
}

pub mod redrive {
    //! The retry schedule of contended wakes: the policy, its full-jitter
    //! delay over a checked random [`Draw`], the wake time of the next
    //! re-drive row, and the error a chain that gives up reports once.
    //!
    //! You need it to configure retries or to pass in the randomness the
    //! kernel never draws itself.

    pub use crate::redrive_policy::{Draw, RedriveExhaustedError, RedrivePolicy, redrive_wake_at};
}
