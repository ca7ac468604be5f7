//! Stepping a resume machine yourself: [`perform`] one action at a time,
//! or [`run`] a machine you built to the end.
//!
//! You need it when [`resume`](crate::resume) is too coarse: a host that
//! stops between two steps (a crash test, a cancellation point), or one
//! that builds its [`ResumeMachine`](loomfence_core::ResumeMachine) with
//! options of its own. [`run`] keeps the runtime's
//! [`counters`](crate::counters); a host that loops over [`perform`]
//! counts its own.

pub use crate::driver::{perform, run};
