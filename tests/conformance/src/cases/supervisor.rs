//! The child supervisor over each store, where its behaviour meets the
//! store's: what it keeps when the store fails under its resume. Its other
//! behaviour is the core's supervise machine (`core/src/supervise/machine`)
//! and the runtime's tests.

use std::sync::Arc;

use async_trait::async_trait;
use loomfence_core::{ConditionalAppend, ExecutionId, NewEvent, park::Wait};
use loomfence_runtime::{ChildSupervisor, RuntimeError, supervise::SupervisorOptions};
use loomfence_store::{BackendError, EventStore, StoreError};

use super::sweep::{finished_child, park_on, start};
use crate::Store;
use crate::support::{Around, id};
use loomfence_store::forwarding::Hooks;

/// A store whose park-conditional append fails for good (a disk error).
struct AppendFails;

#[async_trait]
impl Hooks for AppendFails {
    async fn append_if_parked(
        &self,
        _: &dyn EventStore,
        _: &ExecutionId,
        _: u64,
        _: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
        Err(BackendError::permanent("disk full").into())
    }
}

/// A resume the store failed leaves the park open, so the parent stays
/// listed under its children: the next notice of a child's end tries it
/// again, as after a contended resume.
pub async fn a_resume_the_store_failed_keeps_the_parent_listed(store: Store) {
    let (parent, child) = (id("failed-parent"), id("failed-child"));
    start(&*store, &parent).await;
    park_on(&*store, &parent, &[Wait::Child(child.clone())]).await;
    finished_child(&*store, &child, Some(&parent), 5).await;
    let failing = Arc::new(Around {
        inner: Arc::clone(&store),
        hooks: AppendFails,
    });
    let supervisor = ChildSupervisor::new(failing, SupervisorOptions::default());
    let result = supervisor.watch(&parent).await;
    assert!(matches!(result, Err(RuntimeError::Store(_))), "{result:?}");
    assert_eq!(
        supervisor.parents_waiting_on(&child),
        std::slice::from_ref(&parent),
        "still listed"
    );
    let again = supervisor.child_ended(&child).await;
    assert_eq!(again.len(), 1, "the notice tries it again: {again:?}");
}
