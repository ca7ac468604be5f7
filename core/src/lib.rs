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
//! - [`kind`]: which events answer a park ([`is_answering`]).
//! - [`event`]: events as written ([`NewEvent`]) and stored ([`Envelope`]).
//! - [`id`]: execution ids, validated once at the edge.
//! - [`fold`]: the status fold, the open park, [`locate_park`].
//! - [`fence`]: the append guard and the conditional-acquire decision.
//! - [`memory`]: the in-memory store as a plain value.
//! - [`resume`]: the resume protocol as a sans-IO machine.
//! - [`park`]: what a park waits for.
//! - [`supervise`]: when a parent parked on children is resumed, and with what.
//! - [`drive`]: stepping a machine against the in-memory store.
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
//! this loop over a different store; [`drive::step`] is it over
//! [`MemoryStore`]:
//!
//! ```
//! use loomfence_core::{
//!     Action, AppendError, Capability, ConditionalAppend, ExecutionId, KernelKind, MemoryStore,
//!     NewEvent, Poll, ResumeMachine, ResumeRequest,
//! };
//! use serde_json::json;
//!
//! let mut store = MemoryStore::new();
//! let written = store.append_many("order-7", vec![
//!     NewEvent::kernel(KernelKind::ExecutionStarted, 1_000),
//!     NewEvent::kernel(KernelKind::ExecutionSuspended, 1_001),
//! ])?;
//! let park_seq = written[1].sequence;
//!
//! let id = ExecutionId::new("order-7")?;
//! let request = ResumeRequest::new(park_seq, json!({ "paid": true }), 1_002);
//! let mut machine = ResumeMachine::new(id.clone(), request, Capability::Conditional);
//! let resumed = loop {
//!     let action = match machine.poll() {
//!         Poll::Done(result) => break result?,
//!         Poll::Act(action) => action,
//!     };
//!     match action {
//!         Action::ReadFrom { from_seq } => {
//!             machine.handle_read(store.read_range(id.as_str(), from_seq, None)?)?
//!         }
//!         Action::AcquireFenceIf(expect) => {
//!             machine.handle_acquire_if(store.acquire_fence_if(id.as_str(), expect)?)?
//!         }
//!         Action::AcquireFence => machine.handle_acquire(store.acquire_fence(id.as_str())?)?,
//!         Action::Append(event) => match store.append(id.as_str(), event) {
//!             Ok(envelope) => machine.handle_appended(vec![envelope])?,
//!             Err(AppendError::Stale(stale)) => machine.handle_stale(stale)?,
//!             Err(other) => return Err(other.into()),
//!         },
//!         Action::AppendIfParked { park_seq, event } => {
//!             match store.append_if_parked(id.as_str(), park_seq, vec![event]) {
//!                 Ok(ConditionalAppend::Appended(envelopes)) => machine.handle_appended(envelopes)?,
//!                 Ok(ConditionalAppend::ParkAnswered) => machine.handle_park_answered()?,
//!                 Err(AppendError::Stale(stale)) => machine.handle_stale(stale)?,
//!                 Err(other) => return Err(other.into()),
//!             }
//!         }
//!     }
//! };
//!
//! // The body now holds token 1 and continues after the resume.
//! assert_eq!(resumed.fence, Some(1));
//! assert_eq!(resumed.view.head, 3);
//! let step = NewEvent::kernel(KernelKind::StepStarted, 1_003).with_fence(1);
//! store.append("order-7", step)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Example: two resumers race one park
//!
//! The store alone, without the machine: the first conditional acquire wins,
//! the second is told it is stale.
//!
//! ```
//! use loomfence_core::{AcquireOutcome, ExecutionView, KernelKind, MemoryStore, NewEvent, ParkExpectation};
//!
//! let mut store = MemoryStore::new();
//! store.append_many("order-7", vec![
//!     NewEvent::kernel(KernelKind::ExecutionStarted, 1_000),
//!     NewEvent::kernel(KernelKind::ExecutionSuspended, 1_001),
//! ])?;
//! let view = ExecutionView::fold(&store.read_range("order-7", 1, None)?);
//! let park = view.open_park.expect("parked");
//! let expect = ParkExpectation { fence: park.fence, park_seq: park.sequence };
//! let a = store.acquire_fence_if("order-7", expect)?;
//! let b = store.acquire_fence_if("order-7", expect)?;
//! assert_eq!(a, AcquireOutcome::Acquired { fence: 1 });
//! assert_eq!(b, AcquireOutcome::Stale { fence: 1 });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod capability;
pub mod drive;
pub mod event;
pub mod fence;
pub mod fold;
pub mod id;
pub mod kind;
pub mod memory;
pub mod park;
pub mod resume;
pub mod supervise;

pub use capability::Capability;
pub use event::{Envelope, EventError, JsonObject, MAX_SAFE_INTEGER, NewEvent};
pub use fence::{AcquireOutcome, ConditionalAppend, InputError, ParkExpectation, StaleFenceError};
pub use fold::{ExecutionView, OpenPark, Status, Terminal, locate_park};
pub use id::{ExecutionId, IdError, MAX_ID_BYTES};
pub use kind::{KERNEL_EVENT_KINDS, KernelKind, KindClass, is_answering};
pub use memory::{AppendError, MemoryStore};
pub use park::{ParkError, Wait};
pub use resume::{
    Action, Fencing, MachineError, Poll, RefusalReason, ResumeContendedError, ResumeError,
    ResumeMachine, ResumeRefusedError, ResumeRequest, Resumed, Stepped,
};
