//! Deterministic simulation (DST) of nodes racing to resume one parked
//! execution.
//!
//! The fence kernel's promise is about interleavings: when several nodes
//! resume the same park, exactly one resume lands, and the winner's running
//! body is never fenced out by a loser. A unit test shows one interleaving;
//! this crate shows all of them (up to a bound) and a large random sample
//! beyond it. It drives the real [`loomfence_core::ResumeMachine`] against
//! the real [`loomfence_core::MemoryStore`], one store interaction per step,
//! with no threads, no clock and no async, so every run is reproducible from
//! its schedule alone.
//!
//! Besides resumers, a world may hold dead acquirers (a supervisor that took
//! a token and died), auditors (unfenced appends after the park) and a
//! deleter (retention deleting the log at any step).
//! [`StoreMode::PlainFencedAppend`] is the delete race's negative control:
//! the store performs the resume's fenced append without the park check, as
//! the machine asked before that fix, and the searches find the phantom log.
//! [`StoreMode::NoParkKindCheck`] is the regrown log's: the store's
//! conditional operations take any event at `park_seq` for the park, as
//! they did before they checked its kind, and after a delete a log grown
//! back past the park (a body's step, an audit record) is resumed.
//!
//! - [`world`]: the simulated state (store plus actors), a plain value that
//!   can be cloned, compared and hashed so a search can deduplicate it.
//! - [`actor`]: what each kind of participant does in one step.
//! - [`check`]: the invariants, as predicates over a world.
//! - [`trace`]: one schedule run step by step, checked after every step.
//! - [`enumerate`]: every schedule of a given length (the design's `{A,B}^n`).
//! - [`explore`]: a breadth-first search over distinct worlds.
//! - [`random`]: seeded random worlds and schedules past the exhaustive
//!   bound, each a pure function of `(seed, index)`.
//! - [`redrive`]: live re-drive: supervisors, timer services,
//!   dead acquirers and crashes over the event store and the timer table
//!   under a virtual clock, seeded; its own world, checks and runner.
//! - [`inbox`]: a notify crashing midway: senders, a retry, a timer wake,
//!   dead acquirers and the inbox re-driver over the event store, the inbox
//!   and the timer table; every interleaving of small worlds, seeded random
//!   ones of bigger worlds, and two negative controls (`tests/inbox.rs`).
//! - [`error`]: why a simulation could not go on (never an invariant
//!   violation: those are results, see [`check::Violation`]).
//!
//! # Running it
//!
//! `cargo test -p loomfence-sim -- --nocapture` runs the design's sweep, its
//! named scenarios, a bounded and a full exhaustive search of the
//! three-resumer world, full searches of smaller worlds racing a delete, and
//! 100 000 random schedules (30 000 more racing a delete), printing what
//! each explored; and `tests/redrive.rs` runs 35 000 seeded worlds of live
//! re-drive and its three negative controls (there `SIM_SEED=<n>` names one
//! world, and `--test redrive` replays it alone). The random schedules of
//! `tests/random.rs` print `SIM_SEED=<n>`; setting `SIM_SEED` replays a run,
//! and `SIM_INDEX` one schedule of it. The full searches of
//! the fencing-only negative control and of the biggest delete world are
//! `#[ignore]`d for time:
//! `cargo test --release -p loomfence-sim -- --ignored --nocapture`.

pub mod actor;
pub mod check;
pub mod enumerate;
pub mod error;
pub mod explore;
pub mod inbox;
pub mod random;
pub mod redrive;
pub mod trace;
pub mod world;

pub use actor::{Actor, AuditEvent, DeletePhase, Landed, ResumerPhase, Role};
pub use check::{Breach, Move, Violation, breaches};
pub use error::SimError;
pub use world::{EXECUTION, StoreMode, World, execution_id};
