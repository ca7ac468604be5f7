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
//!
//! Storage adapters (memory behind a mutex, SQLite, PostgreSQL) live in the
//! `host-adapters/` crates and apply the decisions here inside their own
//! atomic step.
//!
//! # Example: two resumers race one park
//!
//! ```
//! use loomfence_core::{AcquireOutcome, ExecutionView, KernelKind, MemoryStore, NewEvent, ParkExpectation};
//!
//! let mut store = MemoryStore::new();
//! store.append_many("order-7", vec![
//!     NewEvent::kernel(KernelKind::ExecutionStarted, 1_000),
//!     NewEvent::kernel(KernelKind::ExecutionSuspended, 1_001),
//! ])?;
//!
//! // Both resumers read the same park.
//! let view = ExecutionView::fold(&store.read_range("order-7", 1, None)?);
//! let park = view.open_park.expect("parked");
//! let expect = ParkExpectation { fence: park.fence, park_seq: park.sequence };
//!
//! // The first conditional acquire wins; the second is told it is stale.
//! let a = store.acquire_fence_if("order-7", expect)?;
//! let b = store.acquire_fence_if("order-7", expect)?;
//! assert_eq!(a, AcquireOutcome::Acquired { fence: 1 });
//! assert_eq!(b, AcquireOutcome::Stale { fence: 1 });
//!
//! // Only the winner's resume lands.
//! let resumed = NewEvent::kernel(KernelKind::ExecutionResumed, 1_002).with_fence(a.fence());
//! store.append("order-7", resumed)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod capability;
pub mod event;
pub mod fence;
pub mod fold;
pub mod id;
pub mod kind;
pub mod memory;

pub use capability::Capability;
pub use event::{Envelope, EventError, JsonObject, MAX_SAFE_INTEGER, NewEvent};
pub use fence::{AcquireOutcome, ConditionalAppend, InputError, ParkExpectation, StaleFenceError};
pub use fold::{ExecutionView, OpenPark, Status, Terminal, locate_park};
pub use id::{ExecutionId, IdError, MAX_ID_BYTES};
pub use kind::{KERNEL_EVENT_KINDS, KernelKind, KindClass, is_answering};
pub use memory::{AppendError, MemoryStore};

/// The README's examples, compiled and run as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
