//! A resumed body as the CLI's commands run it: steps, then the
//! completion, under the resume's token.

use loomfence_core::{JsonObject, KernelKind, NewEvent, Resumed};
use loomfence_runtime::Body;
use loomfence_store::{EventStore, StoreError};
use serde_json::{Value, json};
use tokio::task::yield_now;

use crate::clock::now_ms;

/// How a body ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyEnd {
    /// Every step and the completion were appended.
    Completed,
    /// An append was refused as stale: a rival acquired after the resume.
    FencedOut,
}

/// A resumed body: `steps` step events, then the completion with output
/// `{"by": by}`, all under the resume's token, yielding between appends so
/// rivals can interleave. A stale refusal of one of its appends is the end
/// [`BodyEnd::FencedOut`]; any other store failure is the error.
pub(crate) async fn run_body(
    store: &dyn EventStore,
    resumed: Resumed,
    steps: u32,
    by: Value,
) -> Result<BodyEnd, StoreError> {
    let mut body = Body::new(store, resumed);
    for step in 0..steps {
        yield_now().await;
        let mut payload = JsonObject::new();
        payload.insert("step".to_owned(), Value::from(step));
        let event = NewEvent::kernel(KernelKind::StepCompleted, now_ms()).with_payload(payload);
        match body.append(event).await {
            Ok(_) => {}
            Err(StoreError::StaleFence(_)) => return Ok(BodyEnd::FencedOut),
            Err(other) => return Err(other),
        }
    }
    yield_now().await;
    match body.complete(json!({ "by": by }), now_ms()).await {
        Ok(_) => Ok(BodyEnd::Completed),
        Err(StoreError::StaleFence(_)) => Ok(BodyEnd::FencedOut),
        Err(other) => Err(other),
    }
}
