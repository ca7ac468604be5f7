//! The handle a resumed body writes through.

use loomfence_core::{
    Envelope, ExecutionId, ExecutionView, JsonObject, KernelKind, NewEvent, Resumed,
};
use loomfence_store::{EventStore, StoreError};
use serde_json::Value;

use crate::counters;

/// A resumed body's write access to its execution.
///
/// Every event it appends is stamped with the token the resume acquired (or
/// left unfenced when the resume took none), so the body never has to carry
/// the token itself and cannot append under a wrong one. If a rival takes the
/// execution, the next append fails with [`StoreError::StaleFence`]: the body
/// has been fenced out and must stop.
#[derive(Debug)]
pub struct Body<'s, S: EventStore + ?Sized> {
    /// Where the log lives.
    store: &'s S,
    /// The execution the body runs.
    execution_id: ExecutionId,
    /// The token the resume acquired.
    fence: Option<u64>,
    /// The fold the body has written up to.
    view: ExecutionView,
}

impl<'s, S: EventStore + ?Sized> Body<'s, S> {
    /// The body of a resume that landed.
    pub fn new(store: &'s S, resumed: Resumed) -> Self {
        Self {
            store,
            execution_id: resumed.execution_id,
            fence: resumed.fence,
            view: resumed.view,
        }
    }

    /// The execution.
    pub fn execution_id(&self) -> &ExecutionId {
        &self.execution_id
    }

    /// The token appends are stamped with.
    pub fn fence(&self) -> Option<u64> {
        self.fence
    }

    /// The fold as of the body's last append.
    pub fn view(&self) -> &ExecutionView {
        &self.view
    }

    /// Appends one event under the body's token.
    pub async fn append(&mut self, event: NewEvent) -> Result<Envelope, StoreError> {
        let mut written = self.append_many(vec![event]).await?;
        Ok(written.remove(0))
    }

    /// Appends a batch under the body's token, atomically.
    pub async fn append_many(
        &mut self,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, StoreError> {
        let events = events.into_iter().map(|event| self.stamp(event)).collect();
        let written = self
            .store
            .append_many(&self.execution_id, events)
            .await
            .inspect_err(|error| {
                if matches!(error, StoreError::StaleFence(_)) {
                    counters::one(counters::FENCED_OUT);
                }
            })?;
        self.view.extend(&written);
        Ok(written)
    }

    /// Ends the execution with `EXECUTION_COMPLETED { output }`.
    pub async fn complete(mut self, output: Value, at: i64) -> Result<Envelope, StoreError> {
        let mut payload = JsonObject::new();
        payload.insert("output".to_owned(), output);
        self.append(NewEvent::kernel(KernelKind::ExecutionCompleted, at).with_payload(payload))
            .await
    }

    /// Puts the body's token on `event`, replacing any the caller set.
    fn stamp(&self, mut event: NewEvent) -> NewEvent {
        event.metadata.remove("fence");
        match self.fence {
            Some(token) => event.with_fence(token),
            None => event,
        }
    }
}
