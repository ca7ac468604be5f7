//! Runs loomfence's sans-IO machines against any
//! [`EventStore`](loomfence_store::EventStore).
//!
//! - the resume driver: [`resume`] and [`resume_from`] (and, in
//!   [`step`], the step-wise [`perform`](step::perform));
//! - [`Body`]: what a resumed body appends through, under its token;
//! - [`ChildSupervisor`]: resumes parents parked on their children (its
//!   options and answers in [`supervise`]);
//! - [`Follower`]: hands the supervisor its work from the store's change
//!   feed (its options, handle and rebuild report in [`follower`]), so a
//!   worker never lists the store;
//! - [`TimerService`]: fires due timer rows (timer wakes, re-drives) from a
//!   [`TimerStore`](loomfence_store::TimerStore) (its options, handle and
//!   report in [`timer`]), handing re-drive rows to each [`Redriver`];
//! - [`Inbox`]: messages, sent with a notify, waited for by a park, and
//!   re-driven when a sender dies (its answers and options in [`inbox`]);
//! - [`Sweep`]: retention that deletes (or archives, then deletes) finished
//!   executions, never a child its parent is parked on (its archives in
//!   [`retention`]);
//! - [`RuntimeError`]: the one error of all of them;
//! - [`clock`]: the time and randomness they are given, for tests;
//! - [`counters`]: what it counts through the `metrics` facade, for the
//!   host's exporter.
//!
//! A timer service and a supervisor's re-driver land resumes that no caller
//! receives; they hand them to the host's [`OnResumed`] hook, which starts
//! the bodies. [`Features`] switches on what a whole fleet must understand
//! first (re-drive).
//!
//! ```
//! use loomfence_core::{ExecutionId, KernelKind, NewEvent, ResumeRequest};
//! use loomfence_runtime::{Body, resume};
//! use loomfence_store::{EventStore, MemoryEventStore};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = MemoryEventStore::new();
//! let order = ExecutionId::new("order-7")?;
//! let parked = store
//!     .append_many(&order, vec![
//!         NewEvent::kernel(KernelKind::ExecutionStarted, 0),
//!         NewEvent::kernel(KernelKind::ExecutionSuspended, 1),
//!     ])
//!     .await?;
//!
//! let resumed = resume(&store, &order, ResumeRequest::new(parked[1].sequence, json!("paid"), 2)).await?;
//! let mut body = Body::new(&store, resumed);
//! body.append(NewEvent::kernel(KernelKind::StepCompleted, 3)).await?;
//! body.complete(json!({ "shipped": true }), 4).await?;
//! # Ok(())
//! # }
//! ```

mod body;
pub mod clock;
pub mod counters;
mod driver;
mod error;
mod features;
pub mod follower;
pub mod inbox;
pub mod recover;
mod redriver;
mod resumed_hook;
pub mod retention;
pub mod step;
mod stop_signal;
pub mod supervise;
mod supervisor;
mod sweep;
pub mod timer;
mod timer_service;
mod timer_service_options;

pub use body::Body;
pub use driver::{resume, resume_from};
pub use error::RuntimeError;
pub use features::Features;
pub use follower::Follower;
pub use inbox::Inbox;
pub use redriver::Redriver;
pub use resumed_hook::OnResumed;
pub use supervisor::ChildSupervisor;
pub use sweep::Sweep;
pub use timer_service::TimerService;

/// The README's examples, compiled and run as doctests so they cannot rot.
/// They live here because this is the crate that sees core, store and
/// runtime at once.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
