//! Deterministic simulation of a notify that crashes midway: one execution
//! waiting on a channel, the in-memory event store, inbox and timer table
//! (the core's own values), and everyone who races to deliver to it.
//!
//! - **Senders** ([`actors::Sender`]): `S` sends `m1`; `R` sends `m1` again
//!   (a retry); `O` sends `m2` on the same channel. Each is a
//!   [`DeliverMachine::notify`](loomfence_core::inbox::DeliverMachine::notify)
//!   pumped one store interaction per step ([`pump`]), and may crash at a
//!   [`pump::CrashPoint`]: after storing the message with its intent row,
//!   holding a token it has not appended under, or after its append before
//!   its mark.
//! - **The timer wake** `T` of a park on `[MESSAGE, TIMER]`, a
//!   [`FireMachine`](loomfence_core::timer::FireMachine) of the plain row.
//! - **Dead acquirers** `P, Q, U, …`: each `acquire_fence_if`s the open park
//!   once and dies.
//! - **The body** `B`: after each resume it parks on the channel again (once
//!   per message, once more for the timer) and runs the park-time check; in
//!   [`world::Start::ParksLater`] its first park is a step too, so a message
//!   can arrive before it.
//! - **The re-driver** `X`: fires the timer table's rows (intent rows,
//!   contended deliveries' re-drive rows) with the core's `FireMachine`,
//!   answering each with a
//!   [`DeliverMachine::check`](loomfence_core::inbox::DeliverMachine::check),
//!   until the table is empty.
//!
//! [`check`] judges every world where nothing can act any more;
//! [`explore`] visits every interleaving of a small world, [`random`] runs
//! seeded random ones of bigger worlds. [`pump::Mode`] selects the design
//! or one of the two negative controls.

pub mod actors;
pub mod check;
pub mod error;
pub mod explore;
pub mod pump;
pub mod random;
pub mod world;

pub use check::Breach;
pub use error::InboxSimError;
pub use pump::{CrashPoint, Mode};
pub use world::{Cast, Drain, Move, Start, World};
