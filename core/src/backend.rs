//! The rules a storage adapter applies inside its own atomic step.
//!
//! A store owns the atomicity (a mutex, a `BEGIN IMMEDIATE`, a row lock);
//! these functions own the decisions, so the memory store, SQLite,
//! PostgreSQL and a JavaScript host cannot disagree on what an append or an
//! acquire may do. Only adapter authors need them: a host that drives the
//! protocol uses the crate root.

pub use crate::event::{EventFacts, fence_of};
pub use crate::fence::{
    BatchFacts, check_batch, check_is_park, check_park_seq, check_safe, decide_acquire_if,
    guard_append, next_token,
};
pub use crate::kind::classify;
