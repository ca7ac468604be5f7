//! What configures and answers a [`ChildSupervisor`](crate::ChildSupervisor):
//! its options, the error callback, and what it did for one parent.
//!
//! You need it to build a supervisor with anything but the defaults
//! ([`SupervisorOptions`], for re-drive or a virtual clock), or to branch
//! on what a supervision did ([`Supervised`]).

pub use crate::supervisor::{OnError, Supervised, SupervisorOptions};
