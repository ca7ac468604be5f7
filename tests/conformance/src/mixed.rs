//! The mixed store a retention sweep is measured and counted on: the kit's
//! 10,000-execution case and `loomfence bench --workload retention` write
//! the same shapes, so the bench times exactly what the kit proves.

use loomfence_core::{
    ExecutionId, KernelKind, NewEvent,
    lineage::started_child,
    park::{Wait, park_payload},
};

/// What one execution of the mixed store is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A running parent, parked on its old child (the next execution).
    ParkedParent,
    /// An old child of a parked parent: pinned.
    PinnedChild,
    /// An old root: deleted, no parent read.
    OldRoot,
    /// An old child of the running parent: one parent read, deleted.
    FreeChild,
    /// Ended after the cutoff: skipped.
    Young,
    /// Still running: skipped.
    Running,
}

/// The shape of execution `n`: parents and their pinned children in pairs,
/// the rest spread over the other shapes.
#[must_use]
pub fn shape(n: u32) -> Shape {
    match n % 10 {
        0 => Shape::ParkedParent,
        1 => Shape::PinnedChild,
        2..=4 => Shape::OldRoot,
        5 | 6 => Shape::FreeChild,
        7 | 8 => Shape::Young,
        _ => Shape::Running,
    }
}

/// When the mixed store's executions ended, around a sweep's cutoff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mixed {
    /// When the old executions ended (before the cutoff).
    pub old: i64,
    /// When the young ones ended (after it).
    pub young: i64,
    /// The running parent of every [`Shape::FreeChild`], written first by
    /// whoever fills the store (with [`Mixed::running_parent_start`]).
    pub running_parent: ExecutionId,
}

/// The counts a correct sweep of the mixed store reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected {
    /// Listed: every execution and the running parent.
    pub examined: u64,
    /// Ended before the cutoff.
    pub eligible: u64,
    /// Deleted.
    pub deleted: u64,
    /// Pinned.
    pub pinned: u64,
    /// Parents read: each parent of an eligible child once per listing
    /// page (a pinned child's parent is its own; the free children share
    /// the running parent).
    pub parent_reads: u64,
}

impl Expected {
    /// What a sweep of `executions` executions (and the running parent)
    /// reports, listed `page_limit` at a time. The running parent's id
    /// must sort after every numbered one (it is listed last).
    #[must_use]
    pub fn of(executions: u32, page_limit: u32) -> Self {
        let count = |wanted: &[Shape]| {
            (0..executions)
                .filter(|&n| wanted.contains(&shape(n)))
                .count() as u64
        };
        Self {
            examined: u64::from(executions) + 1,
            eligible: count(&[Shape::PinnedChild, Shape::OldRoot, Shape::FreeChild]),
            deleted: count(&[Shape::OldRoot, Shape::FreeChild]),
            pinned: count(&[Shape::PinnedChild]),
            parent_reads: count(&[Shape::PinnedChild])
                + (0..executions)
                    .step_by(page_limit.max(1) as usize)
                    .filter(|&first| {
                        (first..executions.min(first.saturating_add(page_limit)))
                            .any(|n| shape(n) == Shape::FreeChild)
                    })
                    .count() as u64,
        }
    }
}

impl Mixed {
    /// The running parent's start, to append before the executions.
    #[must_use]
    pub fn running_parent_start(&self) -> NewEvent {
        NewEvent::kernel(KernelKind::ExecutionStarted, self.old)
    }

    /// Execution `n`'s whole log, written in one append; `name` gives
    /// every execution's id.
    pub fn events<E>(
        &self,
        n: u32,
        name: impl Fn(u32) -> Result<ExecutionId, E>,
    ) -> Result<Vec<NewEvent>, E> {
        let start = |at| NewEvent::kernel(KernelKind::ExecutionStarted, at);
        let end = |at| NewEvent::kernel(KernelKind::ExecutionCompleted, at);
        let (old, young) = (self.old, self.young);
        Ok(match shape(n) {
            Shape::ParkedParent => vec![
                start(old),
                NewEvent::kernel(KernelKind::ExecutionSuspended, old)
                    .with_payload(park_payload(&[Wait::Child(name(n + 1)?)])),
            ],
            Shape::PinnedChild => vec![started_child(&name(n - 1)?, old), end(old)],
            Shape::OldRoot => vec![start(old), end(old)],
            Shape::FreeChild => vec![started_child(&self.running_parent, old), end(old)],
            Shape::Young => vec![start(young), end(young)],
            Shape::Running => vec![start(young)],
        })
    }
}
