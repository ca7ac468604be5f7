//! The supervisor's cache of which parent waits on which child.

use std::collections::{BTreeMap, BTreeSet};

use loomfence_core::ExecutionId;

/// Which parent waits on which child, as last read from the parents' parks.
#[derive(Debug, Default)]
pub(super) struct Edges {
    /// Child → the parents parked on it.
    pub(super) parents_of: BTreeMap<ExecutionId, BTreeSet<ExecutionId>>,
    /// Parent → the children its open park names.
    children_of: BTreeMap<ExecutionId, BTreeSet<ExecutionId>>,
}

impl Edges {
    /// Records that `parent` waits on exactly `children`.
    fn set(&mut self, parent: &ExecutionId, children: BTreeSet<ExecutionId>) {
        self.forget(parent);
        for child in &children {
            self.parents_of
                .entry(child.clone())
                .or_default()
                .insert(parent.clone());
        }
        self.children_of.insert(parent.clone(), children);
    }

    /// Lists `parent` under `children` as the supervise machine's
    /// [`watching`](loomfence_core::supervise::SuperviseMachine::watching) says, or
    /// drops it (`None`).
    pub(super) fn sync(&mut self, parent: &ExecutionId, children: Option<&[ExecutionId]>) {
        match children {
            Some(children) => self.set(parent, children.iter().cloned().collect()),
            None => self.forget(parent),
        }
    }

    /// Drops every edge of `parent`.
    fn forget(&mut self, parent: &ExecutionId) {
        for child in self.children_of.remove(parent).unwrap_or_default() {
            if let Some(parents) = self.parents_of.get_mut(&child) {
                parents.remove(parent);
                if parents.is_empty() {
                    self.parents_of.remove(&child);
                }
            }
        }
    }
}
