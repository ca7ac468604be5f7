//! Retention on PostgreSQL beyond the kit: the guarded delete against a
//! park in flight (both orders, forced), crossed guarded deletes that must
//! not deadlock, the listing's plans and timings on 10,000 executions (and
//! in a database whose collation is not byte order), and the migration that
//! brings an older schema the index and the function.
//!
//! Forced interleavings hold one side inside an open transaction on an
//! admin session and find the other side's backend waiting in `pg_locks`
//! (by application name): no test depends on timing.

#[path = "../common/mod.rs"]
mod common;

mod collation;
mod deadlock;
mod interleave;
mod migration;
mod plan;

use loomfence_core::{
    ExecutionId, KernelKind, NewEvent,
    park::{Wait, park_payload},
};

use common::kernel;

pub use loomfence_conformance::cases::retention::family;

/// The parent's park on `child` (by its key).
pub fn park_on(child: &ExecutionId) -> NewEvent {
    kernel(KernelKind::ExecutionSuspended).with_payload(park_payload(&[Wait::Child(child.clone())]))
}

/// The wire names of the answering kernel kinds, as the store binds them.
pub fn answering_kinds() -> Vec<&'static str> {
    KernelKind::answering().map(KernelKind::as_str).collect()
}

/// The wire names of every kernel kind.
pub fn kernel_kinds() -> Vec<&'static str> {
    KernelKind::ALL.iter().map(|kind| kind.as_str()).collect()
}
