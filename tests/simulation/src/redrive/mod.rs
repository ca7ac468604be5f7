//! Deterministic simulation of live re-drive: child
//! supervisors, timer services, dead acquirers and crashes over the pure
//! in-memory event store and timer table, under a virtual clock, from one
//! seed.
//!
//! Everything is a value. A [`world::World`] holds a [`MemoryStore`]
//! (events and tokens) and a [`TimerTable`] (timer rows and lease claims),
//! both the core's own types, a clock in ms that only the scheduler
//! advances, and the participants:
//!
//! - **parents**, each `EXECUTION_STARTED` then an `EXECUTION_SUSPENDED`
//!   whose payload is `park_payload(&waits)`: its children as separate
//!   `CHILD_DONE` waits (alternatives) or as one group, sometimes with a
//!   `TIMER` wait too (a plain wake row is then in the table);
//! - **children**, which append `EXECUTION_COMPLETED` at a drawn time and
//!   notify one supervisor (the runtime's `child_ended`);
//! - **supervisor nodes** ([`supervisor`]), each a pump over the core's
//!   [`SuperviseMachine`](loomfence_core::supervise::SuperviseMachine), the same
//!   machine the runtime's supervisor pumps ([`supervise`]): read the
//!   parent and its children, the unfenced `append_if_parked` try, then up
//!   to `conditional_tries` conditional resumes with the real
//!   [`ResumeMachine`](loomfence_core::ResumeMachine), and, when every try
//!   was contended, the chain's first re-drive row;
//! - **timer service nodes** ([`service`]), each with its own node id and
//!   [`WakeBackoff`](loomfence_core::timer::WakeBackoff): `claim_due` under a
//!   lease, then the real [`FireMachine`](loomfence_core::timer::FireMachine), one
//!   action per step, whose `Redrive` runs the supervisor's re-driver;
//! - **dead acquirers** ([`actors`]), each bumping one parent's token once
//!   (reading the current token and `acquire_fence_if`-ing it in one step,
//!   a worst case) and dying, eagerly from a drawn time or lurking for a
//!   live resume's window (it holds the current token and has not appended
//!   under it yet);
//! - **bodies**: a parent resumed under a token appends a step and its
//!   completion under it;
//! - **crashes** of supervisor and timer service nodes at any step, each
//!   followed by a restart (a supervisor rebuilds; a timer service comes
//!   back with a new node id and an empty backoff map).
//!
//! Every step is one store or timer-table interaction, the unit the stores
//! make atomic. The invariants ([`check`]) are checked after every step and
//! liveness at quiescence; [`run`] is the seeded scheduler and the sweep.
//! [`config::Variant`] selects the design or one of four negative
//! controls.
//!
//! What the model leaves out: store errors and writes of unknown outcome
//! (the resume simulation covers the machine's side of those), bodies dying
//! with their node (a body runs to its end once its resume landed), and a
//! child shared by two parents.
//!
//! [`MemoryStore`]: loomfence_core::MemoryStore
//! [`TimerTable`]: loomfence_core::timer::TimerTable

pub mod actors;
pub mod check;
pub mod config;
pub mod error;
pub mod ledger;
pub mod run;
pub mod service;
pub mod supervise;
pub mod supervisor;
pub mod world;

/// The generator behind every world: a named algorithm (as in
/// [`crate::random`]), so a printed seed replays after a dependency
/// upgrade.
pub type Rng64 = rand::rngs::Xoshiro256PlusPlus;

pub use check::Breach;
pub use config::{Config, Shape, Variant};
pub use error::RedriveSimError;
pub use run::{SeedRun, Summary, Violation, run_many, run_seed, seed_of};
