//! The loomfence core for JavaScript hosts: the npm package `loomfence`.
//!
//! A thin layer. Every decision (the append guard, the conditional acquire,
//! the answering-kind table, the resume machine) is `loomfence-core`'s; this
//! crate converts values and errors at the boundary (events, envelopes and
//! JSON as JSON text, one crossing per value) and binds the machines that
//! the package's JavaScript steps against stores written in JavaScript.
//!
//! - Two modules: the crate builds the package's resume entry (feature
//!   `resume`: `MemoryEventStore`, `resume`'s machines, the kind table) and
//!   its services (feature `services`: the timers, retention, supervision,
//!   the follower and the inbox) as two `.wasm` files, so a host that only
//!   resumes never loads the rest. Both share the values, errors and the
//!   resume machine below; tests and lints build both at once.
//! - Numbers are JS numbers. A fence or sequence that is not a safe
//!   non-negative integer is a `RangeError` (a `TypeError` when it is not a
//!   number), thrown before any store is touched.
//! - Errors are real `Error` subclasses defined in `js/errors.js`:
//!   `StaleFenceError`, `ResumeRefusedError`, `ResumeContendedError`, and
//!   `InputError` (a `TypeError`) for other malformed input.
//! - `MemoryEventStore` settles every call synchronously, so concurrent
//!   calls never overlap inside it.
//! - `resume` runs in one call over the package's own `MemoryEventStore`
//!   (`resumeInMemory`), and over any other JavaScript object with
//!   `readRange` and `appendIfParked` (refused up front without them) as
//!   `ResumeMachine`, stepped by `npm/resume.js`, which checks every answer
//!   against the interface: one outside it is an `InputError` with code
//!   `STORE_CONTRACT`, and nothing more is written.
//! - Timers: `RedrivePolicy`, `redriveWakeAt` and `WakeBackoff` (the
//!   re-drive backoff), `FireMachine` (the fire decision, polled by the host
//!   like the core's machine, its actions and outcomes plain objects) and
//!   `MemoryTimerStore` (the core's `TimerTable`, settled synchronously like
//!   `MemoryEventStore`). Input the timer calls refuse is a
//!   `TimerInputError` with a `code`, before anything changes.
//!   `TickMachine` (the timer service's tick: claims, fires, releases,
//!   reports; not exported) is pumped by `npm/timer-service.js`; it reads a
//!   host store's `claimDue` answer claim by claim, a malformed claim
//!   becoming an unreadable row, reported once per node.
//! - Retention: `MemoryEventStore.listExecutions` and `deleteExecutionIf`
//!   (the paged listing and the guarded delete), `startedChild` and
//!   `parentOf` (the child → parent edge), `pinParkedChildren` (the pin),
//!   and `SweepMachine` (the sweep, polled like `FireMachine`), which the
//!   package's `sweep` (`npm/retention.js`) drives against any store and
//!   does not export. A child the sweep cannot judge is kept and listed in
//!   the report's `undecided`.
//! - Supervision: `SuperviseMachine` (one supervision of a parent parked on
//!   its children, polled like `FireMachine`; its resume is a
//!   `ResumeMachine` it builds over the host's store), which the package's
//!   `ChildSupervisor` (`npm/supervisor.js`) drives and does not export.
//! - The change feed: `MemoryEventStore.feed`, `feedHead`, `openParks`
//!   and `waitForFeed` (cursors as `{ epoch, position }`), and
//!   `FollowMachine` (the core's follower of a feed, polled like
//!   `FireMachine`), which the package's `Follower` (`npm/follower.js`)
//!   drives and does not export.
//! - Messages: `MemoryTimerStore`'s inbox methods (`send`, `pending`,
//!   `markConsumed`, `purge`, `messages`: the core's `InboxTable`, in the
//!   same step as the timers) and `DeliverMachine` (a notify, a park with
//!   its check, and the inbox's re-drive, polled like `FireMachine`), which
//!   `Inbox` (`npm/inbox.js`) drives and does not export.

// A build of one module leaves helpers only the other one calls unused.
#![cfg_attr(not(all(feature = "resume", feature = "services")), allow(unused))]

// Shared by both modules: values in and out, errors, envelopes, the host
// store's answers, the resume machine (which the supervision and the inbox
// also run) and the answers of the memory store's feed and retention calls.
mod events;
mod feed;
mod heap;
mod host_store;
mod js_errors;
mod json;
mod json_text;
mod out;
mod resume;
mod retention_values;
mod values;

// The resume entry's own.
#[cfg(feature = "resume")]
mod kinds;
#[cfg(feature = "resume")]
mod memory_store;

// The services module's own.
#[cfg(feature = "services")]
mod claim_page;
#[cfg(feature = "services")]
mod deliver;
#[cfg(feature = "services")]
mod fire;
#[cfg(feature = "services")]
mod follow;
#[cfg(feature = "services")]
mod inbox_values;
#[cfg(feature = "services")]
mod lineage;
#[cfg(feature = "services")]
mod redrive;
#[cfg(feature = "services")]
mod supervise;
#[cfg(feature = "services")]
mod sweep;
#[cfg(feature = "services")]
mod tick;
#[cfg(feature = "services")]
mod timer_store;
#[cfg(feature = "services")]
mod timer_values;
#[cfg(feature = "services")]
mod wake_backoff;

pub use js_errors::error_classes;
pub use resume::ResumeMachineJs;

#[cfg(feature = "resume")]
pub use kinds::{is_answering_kind, kernel_event_kinds, locate_park_js};
#[cfg(feature = "resume")]
pub use memory_store::MemoryEventStore;
#[cfg(feature = "resume")]
pub use resume::resume_in_memory;

#[cfg(feature = "services")]
pub use deliver::DeliverMachineJs;
#[cfg(feature = "services")]
pub use fire::FireMachineJs;
#[cfg(feature = "services")]
pub use follow::FollowMachineJs;
#[cfg(feature = "services")]
pub use lineage::{parent_of_js, pin_parked_children_js, started_child_js};
#[cfg(feature = "services")]
pub use redrive::{RedrivePolicyJs, redrive_wake_at_js};
#[cfg(feature = "services")]
pub use supervise::SuperviseMachineJs;
#[cfg(feature = "services")]
pub use sweep::SweepMachineJs;
#[cfg(feature = "services")]
pub use tick::TickMachineJs;
#[cfg(feature = "services")]
pub use timer_store::MemoryTimerStore;
#[cfg(feature = "services")]
pub use wake_backoff::WakeBackoffJs;
